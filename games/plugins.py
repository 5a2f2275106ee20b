"""Games written in Python (``games.protocol``), found by name: ``module:Class`` or an entry point.

A spec whose name is ``module:Class`` (``examples.connect_four:ConnectFour``, with parameters
``examples.connect_four:ConnectFour(rows=5)``) imports the class (the current directory is on the
import path, as for ``python -m``); any other name that is not a built-in game is looked up in the
entry point group ``descent.games`` of the installed packages (the entry point's name is the game's
name, its value ``module:Class``). The class is checked once (``check_class``), and its facts read
from an instance (``plugin_facts``); a problem is one ``PluginError`` line naming the plugin.
``games.registry`` calls ``find`` for a name it does not know (this module adds it as a finder when
``games`` is imported); ``installed`` lists the entry points for ``descent games``.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import numbers
import os
import re
import sys
from functools import partial
from typing import Any

import numpy as np

from games import openspiel, validate
from games.errors import GameError, PluginError
from games._state import State
from games.protocol import REQUIRED_METHODS, TERMINAL_EVALUATIONS, Game
from games.registry import GameDef, Param, add_finder

GROUP = "descent.games"
ADAPTER_MODULE, ADAPTER_CLASS = "games.python_game", "PythonGameState"
TARGET = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$", re.ASCII)

_FOUND: dict[str, GameDef] = {}
# ``module:Class`` names that may be imported, or None (any: the Python API, whose caller chose the
# name). The command line sets it to the names its own arguments hold (``restrict_ad_hoc``), so a
# spec read from a file (a checkpoint's metadata, a results database, a request to the page) never
# imports a module: loading files never executes code. Entry points (installed packages) are
# always found.
_AD_HOC: set[str] | None = None


def restrict_ad_hoc(allowed) -> None:
    """Import ``module:Class`` games only for the names in ``allowed`` (None: any)."""
    global _AD_HOC
    _AD_HOC = None if allowed is None else {str(a) for a in allowed}


def ad_hoc_allowed() -> set[str] | None:
    """The ``module:Class`` names that may be imported now (None: any)."""
    return None if _AD_HOC is None else set(_AD_HOC)


def ad_hoc_names(args) -> set[str]:
    """The ``module:Class`` names that the texts ``args`` (command-line arguments) hold."""
    return {m.group(0) for a in args if isinstance(a, str)
            for m in re.finditer(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*", a)}


def is_target(name: str) -> bool:
    """Whether ``name`` is a ``module:Class`` reference."""
    return isinstance(name, str) and TARGET.fullmatch(name) is not None


def entry_points() -> dict[str, str]:
    """The ``descent.games`` entry points of the installed packages: name -> ``module:Class``."""
    out: dict[str, str] = {}
    for ep in importlib.metadata.entry_points(group=GROUP):
        out.setdefault(ep.name, ep.value)
    return out


def _import(target: str, label: str) -> type:
    module_name, _, attr = target.partition(":")
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)            # `module:Class` names a module of the current directory
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:             # an ImportError, or an error of the module's own code
        raise PluginError(validate.one_line(
            f"{label}: cannot import {module_name} ({type(exc).__name__}: {exc})")) from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise PluginError(f"{label}: module {module_name} has no {attr!r}")
    if not inspect.isclass(cls):
        raise PluginError(f"{label}: {target} is not a class")
    return cls


def _params(cls: type, label: str) -> tuple[Param, ...]:
    raw = getattr(cls, "params", {}) or {}
    if isinstance(raw, dict):
        out = []
        for name, value in raw.items():
            default, help_text = value if isinstance(value, tuple) and len(value) == 2 else (value, "")
            if (not (isinstance(name, str) and name.isidentifier()) or not isinstance(help_text, str)
                    or not isinstance(default, (bool, int, float, str))):
                raise PluginError(f"{label}: params must map names to int, float, bool or str defaults "
                                  f"(or (default, help) pairs), got {name!r}: {value!r:.40}")
            out.append(Param(name, type(default), default, help_text or "a parameter of the game"))
        return tuple(out)
    if isinstance(raw, (tuple, list)) and all(isinstance(p, Param) for p in raw):
        return tuple(raw)
    raise PluginError(f"{label}: params must be a dict {{name: default}} or a tuple of games.registry.Param")


def check_class(cls: type, label: str) -> None:
    """Refuse a class that lacks a method of the protocol (``PluginError``)."""
    missing = [m for m in REQUIRED_METHODS
               if not callable(getattr(cls, m, None)) or getattr(cls, m) is getattr(Game, m, None)]
    if missing:
        raise PluginError(f"{label}: missing method{'s' if len(missing) > 1 else ''} "
                          f"{', '.join(missing)} (games.protocol.Game)")


def definition_for(name: str) -> GameDef:
    """The ``GameDef`` of the plugin game ``name`` (``module:Class`` or an entry point's name):
    ``PluginError`` when it cannot be used, ``KeyError`` when it is neither."""
    if name in _FOUND:
        return _FOUND[name]
    if openspiel.is_openspiel(name):      # OpenSpiel's games: no module of the user's is imported
        return openspiel.definition_for(name, plugin_facts)
    if is_target(name):
        target, label = name, name
        if _AD_HOC is not None and name not in _AD_HOC:
            raise PluginError(f"{name}: a game module named by a file or a request is not imported "
                              f"(name it on the command line, or install it as a {GROUP} entry point)")
    else:
        eps = entry_points()
        if name not in eps:
            raise KeyError(name)
        target, label = eps[name], f"plugin {name} ({eps[name]})"
        if not name.isidentifier() or not name.isascii():
            raise PluginError(f"{label}: the entry point's name must be an identifier (letters, digits, _)")
        if not is_target(target):
            raise PluginError(f"{label}: the entry point must be module:Class")
    cls = _import(target, label)
    if issubclass(cls, State):           # a compiled plugin: a State subclass of its own engine
        return _compiled(name, target, label, cls)
    check_class(cls, label)
    summary, version = _summary_and_version(cls, label, f"a game written in Python ({target})")
    gdef = GameDef(name=name, module=ADAPTER_MODULE, state_class=ADAPTER_CLASS, summary=summary,
                   params=_params(cls, label), version=version, game_class=cls,
                   facts=partial(plugin_facts, name, cls))
    _FOUND[name] = gdef
    return gdef


def _summary_and_version(cls: type, label: str, fallback: str) -> tuple[str, int]:
    """A plugin class's summary (its docstring's first paragraph, Cython's embedded signature line
    left out) and its checked ``version``."""
    doc = (inspect.getdoc(cls) or "").strip()
    if doc.startswith(f"{cls.__name__}("):            # Cython's embedded signature line
        doc = doc.partition("\n")[2].strip()
    summary = validate.one_line(doc.split("\n\n", 1)[0]) if doc else fallback
    version = getattr(cls, "version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise PluginError(f"{label}: version must be a positive int, got {version!r:.40}")
    return summary, version


def _compiled(name: str, target: str, label: str, cls: type) -> GameDef:
    """The ``GameDef`` of a compiled plugin: ``cls`` subclasses ``games._state.State`` (a Cython
    engine written as the built-in ones are, docs/GAMES.md), and its module gives the facts as the
    built-in engines' do (``facts_<Class>(params)`` or ``facts(params)``); ``params`` on the class
    as for a Python game."""
    module = sys.modules[cls.__module__]
    if not callable(getattr(module, f"facts_{cls.__name__}", None) or getattr(module, "facts", None)):
        raise PluginError(f"{label}: a compiled game's module {cls.__module__} must define "
                          f"facts(params) (or facts_{cls.__name__}), as the built-in engines do")
    summary, version = _summary_and_version(cls, label, f"a compiled game ({target})")
    gdef = GameDef(name=name, module=cls.__module__, state_class=cls.__name__, summary=summary,
                   params=_params(cls, label), version=version)
    _FOUND[name] = gdef
    return gdef


def find(name: str) -> GameDef | None:
    """The plugin game ``name``, or None when no plugin has that name (``PluginError`` for one that
    is broken)."""
    try:
        return definition_for(name)
    except KeyError:
        return None


def _int_fact(g: Any, fact: str, label: str, lo: int, hi: int, default: int | None = None) -> int:
    v = getattr(g, fact, default)
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not lo <= int(v) <= hi:
        raise PluginError(f"{label}: {fact} must be an int in [{lo}, {hi}], got {v!r:.40}")
    return int(v)


def plugin_facts(name: str, cls: type, params: dict) -> dict:
    """The facts of the plugin game ``name`` (class ``cls``) at ``params``, read from its initial
    position and checked."""
    label = name
    try:
        g = cls(**params)
    except Exception as exc:
        raise PluginError(validate.one_line(
            f"{label}: creating the initial position raised {type(exc).__name__}: {exc}")) from None
    num_actions = _int_fact(g, "num_actions", label, 1, 2 ** 31 - 1)
    max_plies = _int_fact(g, "max_plies", label, 1, 10 ** 6)
    max_legal = _int_fact(g, "max_legal", label, 0, num_actions, 0)
    shape = getattr(g, "planes_shape", None)
    if (not isinstance(shape, (tuple, list)) or len(shape) != 3
            or not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 4096 for x in shape)):
        raise PluginError(f"{label}: planes_shape must be (H, W, C), three positive ints, got {shape!r:.60}")
    players = getattr(g, "players", ("first", "second"))
    if (not isinstance(players, (tuple, list)) or len(players) != 2 or not all(isinstance(p, str) and p
                                                                             for p in players)
            or players[0] == players[1]):
        raise PluginError(f"{label}: players must be two different names, got {players!r:.60}")
    syms = getattr(g, "symmetries", (0,))
    if (not isinstance(syms, (tuple, list)) or 0 not in syms or len(set(syms)) != len(syms)
            or not all(type(s) is int and 0 <= s < 8 for s in syms)):
        raise PluginError(f"{label}: symmetries must be distinct ids of games.symmetry (0..7) with 0, "
                          f"got {syms!r:.60}")
    if len(syms) > 1 and not callable(getattr(g, "transform_action", None)):
        raise PluginError(f"{label}: symmetries {tuple(syms)} need a transform_action method")
    if shape[0] != shape[1] and any(s in (1, 3, 6, 7) for s in syms):
        raise PluginError(f"{label}: symmetries {tuple(syms)}: 1, 3, 6 and 7 need square planes, not {tuple(shape)}")
    kind = getattr(g, "terminal_evaluation", "additive")
    if kind not in TERMINAL_EVALUATIONS:
        raise PluginError(f"{label}: terminal_evaluation must be one of {', '.join(TERMINAL_EVALUATIONS)}, "
                          f"got {kind!r:.40}")
    try:
        x = np.asarray(g.encode())
    except Exception as exc:
        raise PluginError(validate.one_line(f"{label}: encode() raised {type(exc).__name__}: {exc}")) from None
    if x.shape != tuple(shape):
        raise PluginError(f"{label}: encode() gives planes shaped {x.shape}, not planes_shape {tuple(shape)}")
    return dict(players=tuple(players), num_actions=num_actions, max_plies=max_plies,
                planes_shape=tuple(shape), symmetries=tuple(syms), score_kind=TERMINAL_EVALUATIONS[kind],
                max_legal=max_legal, extra={"plugin": name if is_target(name) else entry_points().get(name, name)})


def installed() -> list[tuple[str, str, GameError | None]]:
    """(name, ``module:Class``, the error or None) of each ``descent.games`` entry point, sorted; a
    broken one is listed with its error, never raised."""
    out: list[tuple[str, str, GameError | None]] = []
    for name, target in sorted(entry_points().items()):
        try:
            definition_for(name)
            err = None
        except GameError as exc:
            err = exc
        out.append((name, target, err))
    return out


add_finder(find)
