"""Agents: an algorithm, an evaluator and a budget behind ``choose(state)`` and ``analyse(state)``.

An agent is written ``ALGORITHM[:key=value,...]``, for example ``minibal_plus:time=0.5``,
``mcts:iterations=2000`` or ``gaussian:level=easy,base=alphabeta,depth=3``. ``describe_algorithms()``
lists every algorithm and its keys. Budgets: ``time`` (seconds per move) or ``iterations``
(``depth``/``nodes`` for alpha-beta); with an iteration budget and a seed, play is reproducible.

``analyse`` returns one dict per legal action with ``action``, ``value`` (the mover's point of
view, in [-1, 1]), ``completion``, ``resolved`` and ``count``, best first.

``net=PATH`` (a value network as leaf evaluator) needs a network loader, which the search layer does
not have (it knows no TensorFlow): build such an agent with ``descent.make_agent(spec, game)``, or
pass ``network_loader=`` here. Without one, ``make_agent`` refuses ``net=`` (``AgentSpecError``).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import games
from games import validate
from search_ext.agent_base import NETWORK_LOADER, Agent, AgentSpecError, check_values, leaf_evaluator
from search_ext.alphabeta import AlphaBeta
from search_ext.bestfirst import BestFirstSearch
from search_ext.engine_spec import ENGINE_KINDS, describe, is_engine_spec, parse_engine_spec
from search_ext.evaluators import CallableEvaluator, PlayoutEvaluator, estimate_scale
from search_ext.mcts import MCTS
from search_ext.predictive_agents import make_star_agent

__all__ = ["ALGORITHMS", "Agent", "AgentSpecError", "Key", "describe_algorithms", "make_agent",
           "parse_agent"]


@dataclass(frozen=True)
class Key:
    """An agent key: its type, default, meaning, and the values allowed (``choices``, or the range
    ``[lo, hi]``, open at ``lo`` when ``lo_open``). Every value goes through ``games.validate``:
    numbers are ASCII, finite and in range, integers integral."""
    type: type
    default: Any
    help: str
    choices: tuple | None = None
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False


MAX_NODES = 2 ** 31 - 1
MAX_MB = 1e6            # a table of at most a terabyte
MAX_DEPTH = 1000
MAX_SEED = 2 ** 63 - 1

_BUDGET = {
    "time": Key(float, None, "seconds per move", lo=0.0, hi=validate.MAX_SECONDS, lo_open=True),
    "iterations": Key(int, None, "iterations per move (reproducible with a seed)", lo=1,
                      hi=validate.MAX_COUNT),
    "seed": Key(int, 0, "random seed", lo=0, hi=MAX_SEED),
}
_EVAL = {
    "eval": Key(str, "zero", "leaf evaluator (net=PATH overrides it)", ("zero", "playout")),
    "net": Key(str, None, "value network checkpoint (.weights.h5 or latest.h5) as leaf evaluator"),
    "playouts": Key(int, 15, "random playouts per leaf (eval=playout)", lo=1, hi=10 ** 6),
    "playout_cap": Key(int, 100, "ply cap of a playout (a capped playout counts as a draw)", lo=1,
                       hi=10 ** 6),
}
_UBFM = {**_BUDGET, **_EVAL,
         "decision": Key(str, "best", "final move: best action or the safe decision", ("best", "safe")),
         "max_mb": Key(float, 1024.0, "memory cap of the search table in megabytes (about "
                                      "80 bytes a state); when full, the least visited parts are cut back",
                       lo=0.0, hi=MAX_MB, lo_open=True),
         "max_nodes": Key(int, None, "optional cap on the number of states in the table", lo=16,
                          hi=MAX_NODES)}
_MINIBAL = {**_UBFM,
            "proven_wins": Key(bool, False, "always play a resolved winning action when one exists"),
            "proven_depth": Key(int, -1, "only wins resolved within this many plies (-1: any)", lo=-1,
                                hi=10 ** 6)}
_DEPTH = Key(int, None, "maximum depth", lo=1, hi=MAX_DEPTH)
_NODES = Key(int, None, "node budget per move (reproducible)", lo=1, hi=validate.MAX_COUNT)
_AB = {"time": _BUDGET["time"], "depth": _DEPTH, "nodes": _NODES, "seed": _BUDGET["seed"], **_EVAL}
# seed 002: predictive *-minimax and the noise-based imperfect player (search_ext/predictive_agents.py)
_STAR = {"depth": Key(int, None, "search depth in plies (2 when no budget is given)", lo=1, hi=MAX_DEPTH),
         "time": _BUDGET["time"], "nodes": _NODES, "seed": _BUDGET["seed"], **_EVAL}

ALGORITHMS: dict[str, tuple[str, dict[str, Key]]] = {
    "minimax": ("Unbounded Minimax with completion (UBFM)", _UBFM),
    "minibal_n": ("Unbounded Minibal_n: smallest |value|", _MINIBAL),
    "minibal_plus": ("Unbounded Minibal_+: smallest non-negative value, else largest negative", _MINIBAL),
    "minibal_swing": ("Minibal swing (descent's own): Minibal_+ until it has proven the position won, "
                      "then its mirror, giving the win back", _MINIBAL),
    "descent": ("Descent Minimax: best-first down to terminal states each iteration", _UBFM),
    "mcts": ("MCTS / UCT without evaluation (random playouts)",
             {**_BUDGET, "c": Key(float, math.sqrt(2), "UCB1 exploration constant", lo=0.0, hi=1e6),
              "max_mb": Key(float, 1024.0, "memory cap of the tree in megabytes (40 bytes a node); "
                                           "when full, leaves are played out without expanding",
                            lo=0.0, hi=MAX_MB, lo_open=True),
              "max_nodes": Key(int, None, "optional cap on the number of nodes", lo=1, hi=MAX_NODES)}),
    "alphabeta": ("alpha-beta, iterative deepening, transposition table, move ordering", _AB),
    "hybrid": ("Hybrid Minimax-MCTS: alpha-beta valuing leaves by k random playouts",
               {**{k: v for k, v in _AB.items() if k != "net"},
                "eval": Key(str, "playout", "leaf evaluator", ("playout",))}),
    "predictive": ("predictive *-minimax (seed 002): opponent nodes = PS-weighted mean of sorted children",
                   {"ps": Key(float, 0.5, "predicted opponent strength in [0, 1] (1: minimax)", lo=0.0,
                              hi=1.0),
                    "star": Key(str, "first", "opponent nodes averaged: first turn or all", ("first", "all")),
                    **_STAR}),
    "noisy": ("noise-based imperfect player (seed 002): minimax value / scale + uniform [0, noise]",
              {"noise": Key(float, 0.5, "noise range S (0: minimax)", lo=0.0, hi=1e6),
               "scale": Key(float, 2.0, "divide the values by this before adding noise", lo=0.0, hi=1e6,
                            lo_open=True), **_STAR}),
    "random": ("uniformly random legal moves", {"seed": _BUDGET["seed"]}),
    "alphadda": ("AlphaDDA-1-style: Unbounded Minimax whose iterations per move follow the mean of its "
                 "recent root values, min(max_iterations, ceil(10^(a (v + b))))",
                 {**{k: v for k, v in _UBFM.items() if k not in ("time", "iterations")},
                  "a": Key(float, -1.5, "slope A of the budget in the mean value", lo=-100.0, hi=100.0),
                  "b": Key(float, -1.5, "offset B of the budget", lo=-100.0, hi=100.0),
                  "history": Key(int, 5, "N_h: recent root values averaged", lo=1, hi=10 ** 4),
                  "max_iterations": Key(int, 2000, "N_max: the budget's cap", lo=1,
                                        hi=validate.MAX_COUNT),
                  "iterations": Key(int, None, "the same as max_iterations (so that an iteration "
                                    "budget sets AlphaDDA's cap)", lo=1, hi=validate.MAX_COUNT)}),
    "gaussian": ("Gaussian difficulty selection over a base algorithm's root values (seed 003)",
                 {"level": Key(str, "medium", "preset (mu, sigma)", ("easy", "medium", "hard", "custom")),
                  "mu": Key(float, None, "mean of the target value in [0, 1] (level=custom)", lo=0.0,
                            hi=1.0),
                  "sigma": Key(float, None, "spread of the target value (level=custom)", lo=0.0, hi=10.0,
                               lo_open=True),
                  "base": Key(str, "alphabeta", "algorithm giving the root action values"),
                  "seed": _BUDGET["seed"]}),
}

# seed 003, Table 1: easy mu=0.4, medium mu=0.6, hard mu=1.0, all sigma=0.3
GAUSSIAN_LEVELS = {"easy": (0.4, 0.3), "medium": (0.6, 0.3), "hard": (1.0, 0.3)}


def _convert(name: str, key: str, raw: str, spec: Key, text: str):
    what = f"agent {text!r}: {key}"
    if spec.type is bool:
        return validate.parse_bool(raw, what, AgentSpecError)
    if spec.type is int:
        return validate.parse_int(raw, what, spec.lo, spec.hi, AgentSpecError)
    if spec.type is float:
        return validate.parse_real(raw, what, spec.lo, spec.hi, AgentSpecError, lo_open=spec.lo_open)
    if spec.choices is not None and raw not in spec.choices:
        raise AgentSpecError(f"agent {text!r}: {key}={raw!r} is not one of {', '.join(spec.choices)}")
    return validate.text(raw, what, AgentSpecError, ascii=spec.choices is not None)


def parse_agent(text: str) -> tuple[str, dict]:
    """``'ALGORITHM[:key=value,...]'`` -> (algorithm, options); options of a Gaussian agent that are
    not its own go to its base algorithm."""
    if not isinstance(text, str) or not text.strip():
        raise AgentSpecError(f"empty agent spec {text!r} (expected ALGORITHM[:key=value,...])")
    validate.text(text, "agent spec", AgentSpecError, ascii=False)
    if is_engine_spec(text):                  # an outside UCI/GTP engine (search_ext/engine_spec.py)
        return parse_engine_spec(text)
    # the notation is ASCII (only a net=PATH value may hold other characters): a non-ASCII blank,
    # digit or separator is refused, not stripped or read as a number
    raw_name, _, raw_rest = text.partition(":")
    validate.text(raw_name, f"agent {text!r}: algorithm", AgentSpecError)
    for item in raw_rest.split(","):
        if not item.lstrip().startswith("net="):
            validate.text(item, f"agent {text!r}: option", AgentSpecError, empty=True)
    name, _, rest = text.strip().partition(":")
    name = name.strip()
    if name not in ALGORITHMS:
        raise AgentSpecError(f"unknown algorithm {name!r} in agent {text!r} "
                             f"(known: {', '.join(ALGORITHMS)})")
    keys = ALGORITHMS[name][1]
    base_keys = ALGORITHMS.get(_raw_base(rest), (None, {}))[1] if name == "gaussian" else {}
    opts: dict = {}
    base_opts: dict = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        k, eq, v = item.partition("=")
        k, v = k.strip(), v.strip()
        if not eq or not k or not v:
            raise AgentSpecError(f"agent {text!r}: malformed option {item!r} (expected key=value)")
        if k in keys:
            target, spec = opts, keys[k]
        elif k in base_keys:
            target, spec = base_opts, base_keys[k]
        else:
            known = ", ".join(list(keys) + [x for x in base_keys if x not in keys])
            raise AgentSpecError(f"agent {text!r}: unknown key {k!r} for {name} (known: {known})")
        if k in target:
            raise AgentSpecError(f"agent {text!r}: key {k!r} given twice")
        target[k] = _convert(name, k, v, spec, text)
    if name == "alphadda" and "iterations" in opts:
        if "max_iterations" in opts:
            raise AgentSpecError(f"agent {text!r}: give iterations or max_iterations (the same cap), "
                                 f"not both")
        opts["max_iterations"] = opts["iterations"]
    for k, spec in keys.items():
        opts.setdefault(k, spec.default)
    if name == "alphadda":
        del opts["iterations"]                   # now in max_iterations
    if name == "gaussian":
        base = opts["base"]
        if base not in ALGORITHMS or base in ("gaussian", "random"):
            raise AgentSpecError(f"agent {text!r}: base={base!r} must be an algorithm giving values "
                                 f"(e.g. alphabeta, minimax, mcts)")
        if opts["level"] == "custom":
            if opts["mu"] is None or opts["sigma"] is None:
                raise AgentSpecError(f"agent {text!r}: level=custom needs mu and sigma")
        elif opts["mu"] is not None or opts["sigma"] is not None:
            raise AgentSpecError(f"agent {text!r}: mu and sigma need level=custom")
        opts["base_options"] = base_opts
    return name, opts


def _raw_base(rest: str) -> str:
    for item in rest.split(","):
        k, _, v = item.partition("=")
        if k.strip() == "base":
            return v.strip()
    return "alphabeta"


def make_agent(text: str, game, network_loader=None) -> Agent:
    """Build an agent from its spec for a game (a ``GameInfo`` or a game spec).

    ``network_loader(opts, game) -> Evaluator`` loads the value network of ``net=PATH``; the search
    layer has none of its own, so a spec with ``net=`` and no loader is an ``AgentSpecError``: use
    ``descent.make_agent(spec, game)``, which passes the loader of ``descent.networks``."""
    info = games.load(game)
    name, opts = parse_agent(text)
    if name in ENGINE_KINDS:
        raise AgentSpecError(f"agent {text!r}: an outside engine is built by descent.make_agent(spec, game)")
    if network_loader is not None:
        opts[NETWORK_LOADER] = network_loader     # a Gaussian agent hands it to its base
    if name == "random":
        return RandomAgent(info, text, opts)
    if name == "gaussian":
        return GaussianAgent(info, text, opts)
    if name == "mcts":
        return MCTSAgent(info, text, opts)
    if name in ("alphabeta", "hybrid"):
        return AlphaBetaAgent(info, text, opts)
    if name in ("predictive", "noisy"):
        return make_star_agent(name, info, text, opts)
    if name == "alphadda":
        return AlphaDDAAgent(info, text, opts)
    return BestFirstAgent(info, text, opts, name)


class RandomAgent(Agent):
    def reset(self, seed=None):
        super().reset(seed)
        self.rng = random.Random(self.seed)

    def __init__(self, game, spec, opts):
        super().__init__(game, spec, opts)
        self.reset()

    def choose(self, state) -> int:
        self._check_not_over(state)
        return self.rng.choice(state.legal_actions_list())

    def analyse(self, state) -> list:
        return [{"action": a, "value": 0.0, "completion": 0, "resolved": False, "count": 0}
                for a in state.legal_actions_list()]


class _TreeSearchAgent(Agent):
    """An agent over one tree search (``self.search``: best-first or MCTS): ``choose`` searches
    the state within the budget and plays the search's best action, ``analyse`` searches it and
    returns the search's root rows; both note how the move was searched."""

    search: Any             # BestFirstSearch or MCTS, made by the subclass's reset()

    def _search_budget(self) -> tuple[dict, int | None]:
        """The keyword budget for ``search.search`` and the iteration budget asked (None for time)."""
        budget = self._budget()
        return budget, budget["iterations"] or None

    def _searched(self, state) -> None:
        budget, asked = self._search_budget()
        self.search.search(state, **budget)
        self._note_search(self.search, asked)

    def choose(self, state) -> int:
        self._check_not_over(state)
        self._searched(state)
        return self.search.best_action(state)

    def analyse(self, state) -> list:
        if state.is_game_over():
            return []
        self._searched(state)
        return self.search.analyse(state)


class BestFirstAgent(_TreeSearchAgent):
    """Unbounded Minimax / Minibal_n / Minibal_+ / Descent over one engine."""

    def __init__(self, game, spec, opts, name):
        super().__init__(game, spec, opts)
        self.name = name
        self.reset()

    def reset(self, seed=None):
        super().reset(seed)
        rule = self.name if self.name in ("minibal_n", "minibal_plus", "minibal_swing") else "minimax"
        self.search = BestFirstSearch(
            self.game, rule=rule, descent=self.name == "descent",
            evaluator=leaf_evaluator(self.opts, self.seed, self.game), decision=self.opts["decision"],
            take_proven_wins=self.opts.get("proven_wins", False),
            proven_win_depth=self.opts.get("proven_depth", -1), max_nodes=self.opts["max_nodes"],
            max_mb=self.opts["max_mb"])
        self._asked: int | None = None

    @property
    def values(self):
        """The evaluator contract of the agent's network, ``values(planes) -> values`` (its batch
        function), or None without a network: what a driver calls for many games at once
        (``search_ext.batcher``)."""
        ev = self.search.evaluator
        return ev.fn if isinstance(ev, CallableEvaluator) else None

    def begin_search(self, state) -> bool:
        """Begin the move's search, stepped by a driver (``search.step`` / ``search.supply``)
        instead of valued at once; False when there is nothing to search (then ``end_search``)."""
        budget, self._asked = self._search_budget()
        return self.search.search_begin(state, **budget)

    def end_search(self, state) -> int:
        """The move of the search begun by ``begin_search`` (noted as ``choose`` notes its own)."""
        action = self.search.best_action(state)
        self._note_search(self.search, self._asked)
        return action


class AlphaDDAAgent(_TreeSearchAgent):
    """The Minibal paper's section 2.7, AlphaDDA1 adapted to Unbounded Minimax: the search budget
    follows the mean v of the last ``history`` root values (the agent's point of view),
    N(v) = min(N_max, ceil(10^(a (v + b)))), so it searches less when it is ahead."""

    def __init__(self, game, spec, opts):
        super().__init__(game, spec, opts)
        if opts["history"] < 1 or opts["max_iterations"] < 1:
            raise AgentSpecError(f"agent {spec!r}: history and max_iterations must be >= 1")
        self.reset()

    def reset(self, seed=None):
        super().reset(seed)
        self.values: list[float] = []
        self.search = BestFirstSearch(
            self.game, rule="minimax", evaluator=leaf_evaluator(self.opts, self.seed, self.game),
            decision=self.opts["decision"], max_nodes=self.opts["max_nodes"], max_mb=self.opts["max_mb"])

    def budget(self) -> int:
        recent = self.values[-self.opts["history"]:]
        v = sum(recent) / len(recent) if recent else 0.0
        n = math.ceil(10 ** (self.opts["a"] * (v + self.opts["b"])))
        return int(max(1, min(self.opts["max_iterations"], n)))

    def _search_budget(self) -> tuple[dict, int | None]:
        n = self.budget()
        return {"iterations": n}, n

    def choose(self, state) -> int:
        self._check_not_over(state)
        self._searched(state)
        self.values.append(self.search.root_info(state)["value"])
        return self.search.best_action(state)


class MCTSAgent(_TreeSearchAgent):
    def __init__(self, game, spec, opts):
        super().__init__(game, spec, opts)
        self.reset()

    def reset(self, seed=None):
        super().reset(seed)
        self.search = MCTS(self.game, c=self.opts["c"], seed=self.seed, max_nodes=self.opts["max_nodes"],
                           max_mb=self.opts["max_mb"])


class AlphaBetaAgent(Agent):
    def __init__(self, game, spec, opts):
        super().__init__(game, spec, opts)
        self.reset()

    def reset(self, seed=None):
        super().reset(seed)
        self.search = AlphaBeta(self.game, leaf_evaluator(self.opts, self.seed, self.game))

    def _ab_budget(self) -> dict:
        t, d, n = self.opts.get("time"), self.opts.get("depth"), self.opts.get("nodes")
        if t is None and d is None and n is None:
            t = 1.0
        return {"seconds": t or 0.0, "max_depth": d or 0, "nodes": n or 0}

    def choose(self, state) -> int:
        action, _, _ = self.search.search(state, **self._ab_budget())
        return action

    def analyse(self, state) -> list:
        b = self._ab_budget()
        _, _, depth = self.search.search(state, **b)
        return self.search.analyse(state, depth=max(1, depth))


class GaussianAgent(Agent):
    """Gaussian difficulty selection (seed 003, section 5): map the base algorithm's root action
    values to [0, 1] (0 loss, 0.5 draw, 1 win), draw x ~ N(mu, sigma) clipped to [0, 1], and play the
    action whose value is closest to x.

    The map respects what is proven: a proven win is 1, a proven loss 0 and a proven draw 0.5,
    whatever its f_t (a win by one disc, f_t = 0.05, is still a win), and an estimate lies strictly
    inside, ``0.5 + 0.49 e`` with e in [-1, 1] (a bounded evaluator's scaled playout means are put
    back on [-1, 1] first), so no estimate ever looks like a proven result."""

    ESTIMATE_SPAN = 0.49

    def __init__(self, game, spec, opts):
        super().__init__(game, spec, opts)
        if opts["level"] == "custom":
            self.mu, self.sigma = opts["mu"], opts["sigma"]
        else:
            self.mu, self.sigma = GAUSSIAN_LEVELS[opts["level"]]
        base_opts = ",".join(f"{k}={v}" for k, v in opts["base_options"].items())
        self.base = make_agent(opts["base"] + (":" + base_opts if base_opts else ""), game,
                               opts.get(NETWORK_LOADER))
        self.reset()

    def reset(self, seed=None):
        super().reset(seed)
        self.rng = random.Random(self.seed)
        self.base.reset(None if seed is None else seed + 1)

    def select(self, values: list[float]) -> int:
        """Index of the chosen value among ``values`` (already in [0, 1])."""
        values = check_values(values, f"agent {self.spec!r}: select values")
        x = min(1.0, max(0.0, self.rng.gauss(self.mu, self.sigma)))
        best = min(abs(v - x) for v in values)
        ties = [i for i, v in enumerate(values) if abs(v - x) == best]
        return ties[0] if len(ties) == 1 else self.rng.choice(ties)

    def _estimate_scale(self) -> float:
        evaluator = getattr(getattr(self.base, "search", None), "evaluator", None)
        if isinstance(evaluator, PlayoutEvaluator):
            return estimate_scale(self.game)
        return 1.0

    def level_values(self, rows: list) -> list[float]:
        """The base's root rows mapped to [0, 1] (see the class docstring)."""
        if (not isinstance(rows, list) or not all(isinstance(r, dict) and "value" in r for r in rows)
                or not rows):
            raise AgentSpecError(validate.one_line(
                f"agent {self.spec!r}: level_values rows: must be a non-empty list of analyse() rows, "
                f"got {rows!r:.60}"))
        check_values([r["value"] for r in rows], f"agent {self.spec!r}: level_values rows' values")
        scale = self._estimate_scale()
        out = []
        for r in rows:
            v = r["value"]
            if r.get("proven", r.get("resolved", False)):
                out.append(1.0 if v > 0 else 0.0 if v < 0 else 0.5)
            else:
                e = max(-1.0, min(1.0, v / scale))
                out.append(0.5 + self.ESTIMATE_SPAN * e)
        return out

    def choose(self, state) -> int:
        rows = self.base.analyse(state)
        if not rows:
            return self.base.choose(state)
        self.last_move = self.base.last_move
        return rows[self.select(self.level_values(rows))]["action"]

    def analyse(self, state) -> list:
        return self.base.analyse(state)


def describe_algorithms() -> str:
    lines = []
    for name, (summary, keys) in ALGORITHMS.items():
        lines.append(f"{name}: {summary}")
        for k, spec in keys.items():
            choices = f" ({'|'.join(spec.choices)})" if spec.choices else ""
            lines.append(f"    {k}={spec.default}{choices}: {spec.help}")
    lines.append(describe())
    return "\n".join(lines)
