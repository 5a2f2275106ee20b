"""OpenSpiel's games by name: ``openspiel:connect_four``, ``openspiel:breakthrough(rows=6,columns=6)``.

Every OpenSpiel game that is two-player, zero-sum, deterministic, perfect-information and sequential,
with terminal rewards and an observation tensor, is a game of descent written to ``games.protocol``:
``OpenSpielGame`` wraps a ``pyspiel`` state, so the searches, self-play, matches and the page reach
it through the same compiled ``State`` adapter as any Python game (``games.python_game``). Anything
else is refused with the reason, as is a name OpenSpiel does not know.

* **Parameters**: the game's own (``pyspiel`` parameter specification), with its defaults; a spec
  gives any of them (``openspiel:connect_four(rows=5)``).
* **Planes**: the observation tensor for the player to move, ``[C, H, W]`` made ``(H, W, C)`` (a
  ``[C, N]`` tensor one row of ``N`` cells, a flat ``[N]`` one ``(1, 1, N)``), plus one plane that is 1 when the
  second player is to move (many OpenSpiel observations do not say whose turn it is).
* **Outcome**: the sign of the first player's return. **Moves**: OpenSpiel's action strings where
  they depend on the action alone (``ACTION_TEXT_GAMES``: breakthrough's ``a5a4``, hex's ``c3``);
  elsewhere (connect four's ``x3``/``o3``, chess's SAN) the action id, since a move's text may not
  depend on the position. Either game reads a move as its id or as OpenSpiel's string there.
* **Positions** are told apart by their move history (OpenSpiel states have no general hash), and
  copied with ``clone()``.

``pip install -e '.[openspiel]'`` (or the test extra) installs ``open_spiel``. ``available()`` lists
the names accepted here.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from games import validate
from games.errors import PluginError
from games.protocol import Game
from games.registry import GameDef, Param

PREFIX = "openspiel:"
NAME = re.compile(r"^openspiel:([A-Za-z_][A-Za-z0-9_]*)$", re.ASCII)
ADAPTER_MODULE, ADAPTER_CLASS = "games.python_game", "PythonGameState"
INSTALL = "pip install -e '.[openspiel]'"

_FOUND: dict[str, GameDef] = {}
_LOADED: dict[tuple, Any] = {}      # (name, sorted params) -> pyspiel.Game
_TEXTS: dict[int, dict] = {}        # id(pyspiel.Game) -> {action: text}
_STARTS: dict[int, Any] = {}
_DEFAULTS: dict[str, dict] = {}     # OpenSpiel name -> its parameters' defaults        # id(pyspiel.Game) -> its initial state
# The games whose OpenSpiel action strings depend on the action alone (not on the position or the
# player), so that they are move texts as the protocol defines them (tests/test_openspiel.py checks
# it over random games); the others' moves are written as action ids and read as either.
ACTION_TEXT_GAMES = frozenset({
    "breakthrough", "checkers", "clobber", "cursor_go", "gomoku", "havannah", "hex", "hive",
    "lines_of_action", "mancala", "nim", "nine_mens_morris", "othello", "pentago", "y"})


def _pyspiel():
    try:
        import pyspiel  # lazy: open_spiel (optional; only for openspiel: games)
    except ImportError:
        raise PluginError(f"OpenSpiel is not installed (it brings the openspiel: games): {INSTALL}") from None
    return pyspiel


def is_openspiel(name: str) -> bool:
    """Whether ``name`` names an OpenSpiel game (``openspiel:NAME``)."""
    return isinstance(name, str) and name.startswith(PREFIX)


def refusal(game_type) -> str | None:
    """Why descent cannot play an OpenSpiel game of type ``game_type``, or None when it can."""
    ps = _pyspiel()
    gt = ps.GameType
    checks = (
        (game_type.min_num_players <= 2 <= game_type.max_num_players, "it is not a two-player game"),
        (game_type.utility == gt.Utility.ZERO_SUM, "it is not zero-sum"),
        (game_type.chance_mode == gt.ChanceMode.DETERMINISTIC, "it has chance events"),
        (game_type.dynamics == gt.Dynamics.SEQUENTIAL, "its moves are simultaneous"),
        (game_type.information == gt.Information.PERFECT_INFORMATION, "it has hidden information"),
        (game_type.reward_model == gt.RewardModel.TERMINAL, "it gives rewards before the end"),
        (game_type.provides_observation_tensor, "it has no observation tensor"),
    )
    for ok, why in checks:
        if not ok:
            return why
    return None


def available() -> list[str]:
    """The ``openspiel:NAME`` names accepted (sorted); empty when OpenSpiel is not installed."""
    try:
        ps = _pyspiel()
    except PluginError:
        return []
    return sorted(PREFIX + t.short_name for t in ps.registered_games() if refusal(t) is None)


def _param_value(value: Any) -> Any:
    return value if isinstance(value, (bool, int, float, str)) else str(value)


def _load(name: str, params: dict):
    key = (name, tuple(sorted(params.items())))
    game = _LOADED.get(key)
    if game is None:
        ps = _pyspiel()
        try:
            game = ps.load_game(name, dict(params))
        except Exception as exc:            # pyspiel.SpielError: bad parameter values
            raise PluginError(validate.one_line(f"{PREFIX}{name}: OpenSpiel refused the parameters "
                                                f"{params}: {exc}")) from None
        if game.num_players() != 2:
            raise PluginError(f"{PREFIX}{name}: {game.num_players()} players with these parameters, not 2")
        _LOADED[key] = game
    return game


class OpenSpielGame(Game):
    """A position of an OpenSpiel game (the class made for each name by ``definition_for`` sets
    ``spiel_name``)."""

    spiel_name = ""

    def __init__(self, **params):
        # the parameters given other than their OpenSpiel defaults (a default such as go's
        # max_game_length=0 means "derived from the others", so it is not passed)
        defaults = _DEFAULTS.get(self.spiel_name, {})
        game = _load(self.spiel_name, {k: v for k, v in params.items() if defaults.get(k, object()) != v})
        self._game = game
        self._state = game.new_initial_state()
        shape = tuple(game.observation_tensor_shape())
        if len(shape) == 3:
            c, h, w = shape
        elif len(shape) == 2:              # [channels, cells] (gomoku's): a row of cells
            (c, w), h = shape, 1
        else:
            h, w, c = 1, 1, int(np.prod(shape))
        self._obs_shape = shape
        self.num_actions = game.num_distinct_actions()
        self.max_plies = game.max_game_length()
        self.planes_shape = (h, w, c + 1)
        self.max_legal = 0

    def to_move(self) -> int:
        p = self._state.current_player()
        return p if p in (0, 1) else 0

    def legal_actions(self):
        # OpenSpiel's own contract: ascending, and empty in a terminal state (the adapter checks both)
        return self._state.legal_actions()

    def apply(self, action: int) -> None:
        self._state.apply_action(int(action))

    def is_terminal(self) -> bool:
        return bool(self._state.is_terminal())

    def result(self) -> int:
        r = self._state.returns()[0]
        return (r > 0) - (r < 0)

    def encode(self) -> np.ndarray:
        h, w, c1 = self.planes_shape
        obs = np.asarray(self._state.observation_tensor(self.to_move()), dtype=np.float32)
        if len(self._obs_shape) == 3:
            planes = obs.reshape(self._obs_shape).transpose(1, 2, 0)
        elif len(self._obs_shape) == 2:
            planes = obs.reshape(self._obs_shape).T.reshape(h, w, c1 - 1)
        else:
            planes = obs.reshape(h, w, c1 - 1)
        side = np.full((h, w, 1), float(self.to_move()), dtype=np.float32)
        return np.concatenate([planes, side], axis=2)

    def action_to_text(self, action: int) -> str:
        a = int(action)
        if self.spiel_name not in ACTION_TEXT_GAMES:
            return str(a)
        table = _TEXTS.setdefault(id(self._game), {})
        t = table.get(a)
        if t is None:
            t = table[a] = str(self._start().action_to_string(0, a)).replace(" ", "_") or str(a)
        return t

    def text_to_action(self, text: str) -> int:
        text = text.strip()
        if text.isdigit() and int(text) < self.num_actions:
            return int(text)
        player = self.to_move()
        for a in self.legal_actions():        # OpenSpiel's string of a move here ("o3", "e4")
            if text in (self.action_to_text(a), str(self._state.action_to_string(player, a))):
                return a
        if self.spiel_name in ACTION_TEXT_GAMES:
            for a in range(self.num_actions):
                if self.action_to_text(a) == text:
                    return a
        raise ValueError(f"not a move of {PREFIX}{self.spiel_name}: {text!r}")

    def _start(self):
        start = _STARTS.get(id(self._game))
        if start is None:
            start = _STARTS[id(self._game)] = self._game.new_initial_state()
        return start

    def copy(self) -> OpenSpielGame:
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other._state = self._state.clone()
        return other

    def __str__(self) -> str:
        return str(self._state)


def definition_for(name: str, checked_facts: Callable[[str, type, dict], dict]) -> GameDef:
    """The ``GameDef`` of ``openspiel:NAME``: ``PluginError`` when OpenSpiel is missing, does not know
    the game, or it is not a game descent can play (the reason). ``checked_facts(name, cls,
    params)`` reads and checks a Python game's facts (``games.plugins.plugin_facts``, which passes
    itself: this module imports nothing of games.plugins)."""
    if name in _FOUND:
        return _FOUND[name]
    m = NAME.fullmatch(name)
    if m is None:
        raise PluginError(f"{name}: an OpenSpiel game is openspiel:NAME (a name of pyspiel.registered_games())")
    short = m.group(1)
    ps = _pyspiel()
    types = {t.short_name: t for t in ps.registered_games()}
    if short not in types:
        raise PluginError(f"{name}: OpenSpiel has no game {short!r} (`descent games --openspiel` lists them)")
    why = refusal(types[short])
    if why is not None:
        raise PluginError(f"{name}: not playable by descent: {why} (descent plays two-player, zero-sum, "
                          "deterministic, perfect-information, sequential games)")
    gt = types[short]
    _DEFAULTS[short] = {k: _param_value(v) for k, v in gt.parameter_specification.items()}
    params = tuple(Param(k, type(_param_value(v)), _param_value(v), f"OpenSpiel's parameter {k}")
                   for k, v in sorted(gt.parameter_specification.items()))
    cls = type(f"OpenSpiel_{short}", (OpenSpielGame,), {"spiel_name": short, "__module__": __name__})
    gdef = GameDef(name=name, module=ADAPTER_MODULE, state_class=ADAPTER_CLASS,
                   summary=validate.one_line(f"{gt.long_name} from OpenSpiel"),
                   params=params, version=1, game_class=cls, facts=partial(_facts, checked_facts, name, cls))
    _FOUND[name] = gdef
    return gdef


def _facts(checked_facts, name: str, cls: type, params: dict) -> dict:
    facts = checked_facts(name, cls, params)
    facts["extra"] = {"openspiel": name[len(PREFIX):]}
    return facts
