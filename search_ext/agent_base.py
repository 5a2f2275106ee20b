"""What every agent shares: the ``Agent`` base class, ``AgentSpecError`` and the leaf evaluator an
agent's options ask for (``leaf_evaluator``). ``search_ext.agents`` (the spec notation and most
algorithms) and ``search_ext.predictive_agents`` (seed 002's agents) both build on it, so neither
imports the other's internals.

A value network (``net=PATH``) is loaded by the layer above the search, which knows TensorFlow:
whoever builds the agent passes that loader explicitly (``descent.make_agent(spec, game)`` does;
``search_ext.agents.make_agent(spec, game, network_loader=...)`` takes one), and it travels in the
agent's options. Nothing is installed globally, so no import order matters.
"""
from __future__ import annotations

import functools

from games import validate
from games.errors import GameError
from search_ext.evaluators import PlayoutEvaluator, ZeroEvaluator

# the option under which ``make_agent`` stores the network loader it was given
NETWORK_LOADER = "_network_loader"


def check_values(values, what: str) -> list[float]:
    """A non-empty list of finite numbers (the values an agent's helper picks among)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise AgentSpecError(validate.one_line(f"{what}: must be a list of numbers, got {values!r:.60}"))
    if not values:
        raise AgentSpecError(f"{what}: is empty")
    return [validate.real(v, f"{what}[{i}]", error=AgentSpecError) for i, v in enumerate(values)]


class AgentSpecError(GameError):
    """A malformed agent spec, an unknown algorithm or key, or a bad value (and ``net=PATH`` given
    to an agent built without a network loader)."""


def leaf_evaluator(opts: dict, seed: int, game=None):
    """The evaluator of an agent's leaves: the value network of ``net=PATH`` through the loader in
    ``opts`` (``loader(opts, game) -> Evaluator``), else random playouts (``eval=playout``), else
    zero."""
    if opts.get("net"):
        loader = opts.get(NETWORK_LOADER)
        if loader is None:
            raise AgentSpecError(
                f"net={opts['net']}: an agent with a network is built by descent.make_agent(spec, "
                f"game) (search_ext.agents.make_agent needs network_loader= for net=PATH)")
        return loader(opts, game)
    if opts.get("eval", "zero") == "playout":
        return PlayoutEvaluator(opts["playouts"], opts["playout_cap"], False, seed)
    return ZeroEvaluator()


def _checked(fn, playable: bool):
    """``fn(self, state)`` preceded by the state check: a state of the agent's own game (and, for
    ``choose``, one where the game goes on); see ``games.validate.state_for``."""

    @functools.wraps(fn)
    def method(self, state, *args, **kwargs):
        validate.state_for(state, self.game, f"agent {self.spec!r}", playable=playable)
        return fn(self, state, *args, **kwargs)
    method._state_checked = True        # type: ignore[attr-defined]  # (mypy: no attributes on functions)
    return method


class Agent:
    """Base class: ``choose(state) -> action``, ``analyse(state)``, ``reset(seed)``.

    Every subclass's ``choose`` and ``analyse`` first check the state they are given: a state of
    another game (or other parameters), or not a state, is a ``WrongGameError``; ``choose`` in a
    finished game a ``GameOverError``."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, playable in (("choose", True), ("analyse", False)):
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, "_state_checked", False):
                setattr(cls, name, _checked(fn, playable))

    def __init__(self, game, spec: str, opts: dict):
        self.game = game
        self.spec = spec
        self.opts = opts
        self.seed = opts.get("seed", 0)

    def reset(self, seed: int | None = None) -> None:
        """Start a new game (forget the tree); optionally reseed (``seed``: an integer in
        [0, 2**63 - 1])."""
        if seed is not None:
            self.seed = validate.integer(seed, f"agent {self.spec!r}: reset seed", 0, 2 ** 63 - 1,
                                         AgentSpecError)

    def choose(self, state) -> int:
        raise NotImplementedError

    def analyse(self, state) -> list:
        raise NotImplementedError

    # How the last move was searched (read by descent.match): ``iterations`` run, ``asked``
    # (the iteration budget, None for a time budget), ``cut_short`` (the search stopped before its
    # budget because its table was full) and ``memory_full`` (the table reached its cap).
    last_move: dict | None = None

    def _note_search(self, search, asked=None) -> None:
        self.last_move = {"iterations": search.last_iterations, "asked": asked,
                          "cut_short": bool(getattr(search, "last_cut_short", False)),
                          "memory_full": bool(search.memory_full)}

    @staticmethod
    def _check_not_over(state) -> None:
        if state.is_game_over():
            raise GameError(f"no move to choose: the game is over ({state.position()!r})")

    def _budget(self, default_time: float = 1.0) -> dict:
        t, it = self.opts.get("time"), self.opts.get("iterations")
        if t is None and it is None:
            t = default_time
        return {"seconds": t or 0.0, "iterations": it or 0}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec!r}>"
