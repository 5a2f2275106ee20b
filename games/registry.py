"""The registry of games: names, parameters, facts, and the ``NAME(key=value,...)`` spec syntax.

Every command that takes a game takes a spec such as ``reversi``, ``reversi(size=6)`` or
``breakthrough(rows=6, cols=6)``. ``load(spec)`` returns a ``GameInfo``: the facts record that
algorithms check (players, action-space size, ply cap, encoding shape, symmetries, terminal
evaluation) and a factory of initial states.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from games import validate
from games.errors import GameError, InvalidGameSpecError, UnknownGameError

if TYPE_CHECKING:       # a type only: the registry imports an engine when a game is loaded
    from games._state import State

SCORE_KINDS = {0: "additive depth", 1: "multiplicative depth", 2: "natural margin"}


@dataclass(frozen=True)
class Param:
    """A game parameter: its type, default and the values allowed."""

    name: str
    type: type[Any]
    default: Any
    help: str
    choices: tuple | None = None
    min: int | None = None
    max: int | None = None

    def check(self, value: Any, game: str) -> Any:
        if self.type is int and isinstance(value, bool) or not isinstance(value, self.type):
            raise InvalidGameSpecError(
                f"{game}: parameter {self.name!r} must be {self.type.__name__}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            allowed = ", ".join(map(str, self.choices))
            raise InvalidGameSpecError(
                f"{game}: {self.name}={value!r} is not allowed (allowed: {allowed})")
        if self.type in (int, float) and not (
                (self.min is None or value >= self.min) and (self.max is None or value <= self.max)
                and (self.type is int or validate.math.isfinite(value))):
            raise InvalidGameSpecError(
                f"{game}: {self.name}={value!r} is out of range [{self.min}, {self.max}]")
        return value

    def describe(self) -> str:
        if self.choices is not None:
            allowed = "|".join(map(str, self.choices))
        elif self.min is not None or self.max is not None:
            allowed = f"{self.min}..{self.max}"
        else:
            allowed = self.type.__name__
        return f"{self.name}={self.default} ({allowed}): {self.help}"


@dataclass(frozen=True)
class GameDef:
    """A registered game: where its engine lives and what it accepts."""

    name: str
    module: str                      # import path of the compiled engine
    state_class: str                 # the State subclass in it
    summary: str
    params: tuple[Param, ...] = ()
    version: int = 1                 # changes only when the game's behaviour changes
    check: Callable[[dict], None] | None = None   # cross-parameter validation
    game_class: Any = None           # a game written in Python (games.protocol, games.plugins)
    facts: Callable[[dict], dict] | None = None   # its facts at given parameters (else the module's)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params) or "none"
        raise InvalidGameSpecError(
            f"{self.name}: unknown parameter {name!r} (known parameters: {known})")


@dataclass
class GameInfo:
    """Facts of one game instance (a game and its parameter values) and a factory of its states."""

    definition: GameDef
    params: dict
    spec: str
    players: tuple[str, str] = ("first", "second")
    num_actions: int = 0
    max_plies: int = 0
    planes_shape: tuple[int, int, int] = (0, 0, 0)
    symmetries: tuple[int, ...] = (0,)
    score_kind: int = 0
    max_legal: int = 0               # most legal actions in any state (0: num_actions)
    extra: dict = field(default_factory=dict)
    # the engine's State subclass (set by ``load`` or ``games.tree_game.make_tree``)
    _cls: Callable[[GameInfo], State] = field(init=False, repr=False, compare=False)

    @property
    def branching(self) -> int:
        """An upper bound on the number of legal actions of a state (buffer sizes)."""
        return self.max_legal or self.num_actions

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def version(self) -> int:
        return self.definition.version

    def new_state(self) -> State:
        """A new state at the game's initial position."""
        return self._cls(self)

    def facts(self) -> dict:
        """The facts record as a plain dict (for listings and checkpoint metadata)."""
        return {
            "game": self.name, "spec": self.spec, "version": self.version, "params": dict(self.params),
            "players": list(self.players), "num_actions": self.num_actions,
            "max_plies": self.max_plies, "planes_shape": list(self.planes_shape),
            "symmetries": list(self.symmetries), "terminal_evaluation": SCORE_KINDS[self.score_kind],
            **self.extra,
        }


_GAMES: dict[str, GameDef] = {}


def register(definition: GameDef) -> GameDef:
    if definition.name in _GAMES:
        raise ValueError(f"game {definition.name!r} registered twice")
    _GAMES[definition.name] = definition
    return definition


# Where a name that is not a built-in game is looked up: ``games.plugins`` adds the finder of the
# games written in Python (``module:Class``, ``descent.games`` entry points) when ``games`` is imported.
_FINDERS: list[Callable[[str], GameDef | None]] = []


def add_finder(finder: Callable[[str], GameDef | None]) -> None:
    """Look up names that are not built-in games with ``finder`` (None: not its name)."""
    if not callable(finder):
        raise GameError(f"a game finder must be callable, got {finder!r:.60}")
    if finder not in _FINDERS:
        _FINDERS.append(finder)


def names() -> list[str]:
    """The registered game names, sorted."""
    return sorted(_GAMES)


def definition(name: str) -> GameDef:
    """The definition of a built-in game, else of a game written in Python (``module:Class`` or an
    entry point of the ``descent.games`` group: ``games.plugins``)."""
    try:
        return _GAMES[name]
    except (KeyError, TypeError):       # TypeError: an unhashable name (a list)
        pass
    if isinstance(name, str):
        for finder in _FINDERS:
            found = finder(name)
            if found is not None:
                return found
    raise UnknownGameError(
        f"unknown game {name!r} (known games: {', '.join(names())}; or a game written in Python: "
        f"module:Class, or a descent.games entry point)") from None


# NAME, or module:Class of a game written in Python (games.plugins)
_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*(?:(?:\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*)?)"
                   r"\s*(?:\((.*)\))?\s*$", re.S)
_ITEM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([^=]+?)\s*$")


def _parse_value(text: str, where: str = "game parameter") -> Any:
    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if validate.INT_TEXT.fullmatch(text):
        return validate.parse_int(text, where, error=InvalidGameSpecError)
    if validate.REAL_TEXT.fullmatch(text):
        return validate.parse_real(text, where, error=InvalidGameSpecError)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def parse_spec(spec: str) -> tuple[str, dict]:
    """Split ``NAME(key=value,...)`` into the name and a dict of raw parameter values."""
    validate.text(spec, "game spec", InvalidGameSpecError, max_len=256)
    m = _SPEC.match(spec)
    if not m:
        raise InvalidGameSpecError(
            f"malformed game spec {spec!r} (expected NAME or NAME(key=value,...))")
    name, body = m.group(1), m.group(2)
    params: dict = {}
    if body is not None and body.strip():
        for item in body.split(","):
            im = _ITEM.match(item)
            if not im:
                raise InvalidGameSpecError(
                    f"malformed parameter {item.strip()!r} in game spec {spec!r} (expected key=value)")
            key = im.group(1)
            value = _parse_value(im.group(2), f"game spec {spec!r}: {key}")
            if key in params:
                raise InvalidGameSpecError(f"parameter {key!r} given twice in game spec {spec!r}")
            params[key] = value
    return name, params


_CACHE: dict[str, GameInfo] = {}


# The terminal evaluation f_t of a game scored by depth can be chosen in its spec, for every such
# game: ``ft=additive`` (b * (P - p + 1) / P) or ``ft=multiplicative`` (b * P^(-p/P)), p the ply of
# the end and P the game's longest length (ALGORITHMS.md, "Terminal evaluation"). Without it a game
# keeps its own (havannah, connect6 and gomoku multiplicative, the others additive); a game scored
# by its own margin (chess, reversi, ...) refuses it.
FT_PARAM = "ft"
FT_KINDS = {"additive": 0, "multiplicative": 1}


def load(spec: str) -> GameInfo:
    """The ``GameInfo`` of a game spec such as ``"reversi(size=6)"`` (or ``"havannah(base=4,
    ft=additive)"``: ``FT_PARAM``, the terminal evaluation of a depth-scored game).

    Raises ``UnknownGameError`` for an unknown name and ``InvalidGameSpecError`` for a malformed spec
    or a bad parameter.
    """
    if isinstance(spec, GameInfo):
        return spec
    name, raw = parse_spec(spec)
    gdef = definition(name)
    ft = raw.pop(FT_PARAM, None)
    if ft is not None and ft not in FT_KINDS:
        raise InvalidGameSpecError(f"{name}: {FT_PARAM}={ft!r}: the terminal evaluation is one of "
                                   f"{', '.join(FT_KINDS)}")
    params = {p.name: p.default for p in gdef.params}
    for key, value in raw.items():
        p = gdef.param(key)
        if p.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        params[key] = p.check(value, name)
    if gdef.check is not None:
        gdef.check(params)
    non_default = [f"{p.name}={params[p.name]}" for p in gdef.params if params[p.name] != p.default]
    base_spec = f"{name}({','.join(non_default)})" if non_default else name
    if ft is not None:
        own = load(base_spec).score_kind
        if own not in FT_KINDS.values():
            raise InvalidGameSpecError(f"{name}: {FT_PARAM}={ft}: its terminal evaluation is the "
                                       f"game's own margin ({SCORE_KINDS[own]}); {FT_PARAM} chooses "
                                       f"between depth evaluations")
        if FT_KINDS[ft] != own:
            non_default.append(f"{FT_PARAM}={ft}")
    canonical = f"{name}({','.join(non_default)})" if non_default else name
    if canonical in _CACHE:
        return _CACHE[canonical]
    try:
        module = importlib.import_module(gdef.module)
    except ImportError as exc:
        raise GameError(
            f"{name}: the compiled engine {gdef.module} cannot be imported ({exc}); build it with "
            f"`pip install -e .` in the repository") from None
    cls = getattr(module, gdef.state_class)
    if gdef.facts is not None:          # a game written in Python: its facts are its instance's
        facts = gdef.facts(params)
    else:
        # A module holding several games gives each its own ``facts_<StateClass>``.
        facts_fn = getattr(module, f"facts_{gdef.state_class}", None) or module.facts
        facts = facts_fn(params)
    if ft is not None:
        facts["score_kind"] = FT_KINDS[ft]
    info = GameInfo(definition=gdef, params=params, spec=canonical, **facts)
    info._cls = cls
    _CACHE[canonical] = info
    return info


def own_score_kind(game: GameInfo | str) -> int:
    """The terminal evaluation a game (a ``GameInfo`` or a spec) has without ``ft`` (``FT_PARAM``)
    in its spec. ``GameError`` as ``load`` raises it for a bad spec."""
    info = game if isinstance(game, GameInfo) else load(game) if isinstance(game, str) else None
    if info is None:
        raise InvalidGameSpecError(f"a game spec or GameInfo, not {type(game).__name__}")
    name, raw = parse_spec(info.spec)
    raw.pop(FT_PARAM, None)
    return load(f"{name}({','.join(f'{k}={v}' for k, v in raw.items())})" if raw else name).score_kind


def new_state(spec: str) -> State:
    """Shortcut: the initial state of the game ``spec``."""
    return load(spec).new_state()
