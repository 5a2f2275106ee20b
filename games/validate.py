"""The validation layer: every value that comes from outside (a spec, a position, a move, a config
key, a command option, a file) is checked here before it is used.

It is the lowest layer (it imports nothing of the project but ``games.errors``), so that ``games``,
``search_ext``, ``training`` and ``descent`` share one set of rules:

* numbers: of the right kind (``bool`` is not a number, ``1.5`` is not an integer), finite (NaN and
  infinity fail every range check: ``nan < lo`` is false, so ranges are tested as ``lo <= x <= hi``),
  in range, and bounded (a depth, count or size that could allocate or run forever is refused);
* text: a ``str``, bounded in length *before* any work proportional to it, and ASCII where the
  notation is ASCII (``'²'.isdigit()`` is true but ``int('²')`` fails: digits are tested with
  ``is_digits``, never ``str.isdigit``);
* records read from files (JSON, HDF5 attributes): checked against a small schema (``Int``, ``Real``,
  ``Str``, ``List``, ``Record`` ...), with the path of the offending entry in the message;
* files that are only read are opened read-only (``open_sqlite_readonly``).

Every check takes ``what``, a short description of the input and where it came from (``"agent
'mcts:c=nan': c"``, ``"--budget"``, ``"checkpoint run/latest.h5: meta.counters.games"``), and the
error class to raise (a ``games.errors.GameError`` subclass, documented in the README). Messages
are one line (``one_line``).
"""
from __future__ import annotations

import json
import math
import numbers
import operator
import re
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

import numpy as np

from games.errors import GameError, GameOverError, InvalidMoveError, WrongGameError

MAX_TEXT = 4096          # characters of one position, spec, move or option value
MAX_COUNT = 10 ** 9      # iterations, nodes, games: more would run for days
MAX_SECONDS = 7 * 86400  # one week: a time budget beyond it is a typo (and inf would hang)
MAX_DIGITS = 19          # an integer written with more digits does not fit in 64 bits
# The blanks a number or word may carry around it: ASCII whitespace only. ``str.strip()`` also strips
# the control characters U+001C..U+001F and Unicode spaces, which ``int`` and ``float`` refuse.
ASCII_SPACE = " \t\n\r\x0b\x0c"


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of blanks squashed into single spaces."""
    return " ".join(str(text).split())


def _fail(error, what: str, message: str) -> NoReturn:
    raise error(one_line(f"{what}: {message}" if what else message))


def _show(value) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


# ---- numbers -----------------------------------------------------------------------------------------

def integer(value, what: str, lo: float | None = None, hi: float | None = None,
            error=GameError) -> int:
    """An integer (``int`` or a numpy integer, never ``bool``, never a float) in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        _fail(error, what, f"must be an integer, got {_show(value)}")
    v = operator.index(value)
    if lo is not None and v < lo or hi is not None and v > hi:
        _fail(error, what, f"{_show(value)} is out of range {_range(lo, hi)}")
    return v


def real(value, what: str, lo: float | None = None, hi: float | None = None, error=GameError,
         lo_open: bool = False, hi_open: bool = False) -> float:
    """A finite real number (``int`` or ``float``, never ``bool``) in the range (closed unless
    ``lo_open``/``hi_open``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        _fail(error, what, f"must be a number, got {_show(value)}")
    try:
        v = float(value)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v):
        _fail(error, what, f"must be a finite number, got {_show(value)}")
    ok_lo = lo is None or (v > lo if lo_open else v >= lo)
    ok_hi = hi is None or (v < hi if hi_open else v <= hi)
    if not (ok_lo and ok_hi):
        _fail(error, what, f"{_show(value)} is out of range {_range(lo, hi, lo_open, hi_open)}")
    return v


def seconds(value, what: str, error=GameError, allow_zero: bool = False) -> float:
    """A time budget in seconds: finite, positive (or zero when ``allow_zero``), at most a week."""
    return real(value, what, 0.0, MAX_SECONDS, error, lo_open=not allow_zero)


def count(value, what: str, lo: int = 1, hi: int = MAX_COUNT, error=GameError) -> int:
    """A count (iterations, nodes, games ...): an integer in ``[lo, hi]``."""
    return integer(value, what, lo, hi, error)


def _range(lo, hi, lo_open=False, hi_open=False) -> str:
    return (f"{'(' if lo_open else '['}{'-inf' if lo is None else lo}, "
            f"{'inf' if hi is None else hi}{')' if hi_open else ']'}")


# ---- text --------------------------------------------------------------------------------------------

_DIGITS = re.compile(r"[0-9]+")
# The text of an ASCII integer and of an ASCII real number (no '1_000', no fullwidth digits, no nan)
INT_TEXT = re.compile(r"[+-]?[0-9]+")
REAL_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def text(value, what: str, error=GameError, max_len: int = MAX_TEXT, ascii: bool = True,
         empty: bool = False) -> str:
    """A ``str`` of at most ``max_len`` characters, ASCII unless ``ascii=False``, not blank unless
    ``empty``."""
    if not isinstance(value, str):
        _fail(error, what, f"must be text, got {_show(value)}")
    if len(value) > max_len:
        _fail(error, what, f"is {len(value)} characters long (at most {max_len})")
    if ascii and not value.isascii():
        bad = next(ch for ch in value if not ch.isascii())
        _fail(error, what, f"{_show(value)} has the non-ASCII character {bad!r} (U+{ord(bad):04X})")
    if not empty and not value.strip():
        _fail(error, what, "is empty")
    return value


def file_path(value, what: str, error=GameError) -> Path:
    """A file path: text (any script) of at most 4096 characters, without NUL."""
    if isinstance(value, Path):
        value = str(value)
    s = text(value, what, error, ascii=False)
    if "\x00" in s:
        _fail(error, what, f"{_show(s)} contains a NUL character")
    return Path(s)


def is_digits(s: str) -> bool:
    """True when ``s`` is one or more ASCII digits (``str.isdigit`` also accepts '²', '٣' ...)."""
    return _DIGITS.fullmatch(s) is not None


def parse_int(s, what: str, lo: float | None = None, hi: float | None = None, error=GameError,
              max_digits: int = MAX_DIGITS) -> int:
    """Integer text (ASCII digits with an optional sign, at most ``max_digits`` digits, blanks around
    it ASCII whitespace only) in range."""
    s = text(s, what, error, max_len=max_digits + 24).strip(ASCII_SPACE)
    if INT_TEXT.fullmatch(s) is None:
        _fail(error, what, f"{_show(s)} is not an integer")
    if len(s.lstrip("+-").lstrip("0")) > max_digits:
        _fail(error, what, f"{_show(s)} has more than {max_digits} digits"
                           + (f" (range {_range(lo, hi)})" if lo is not None or hi is not None else ""))
    return integer(int(s), what, lo, hi, error)


def parse_real(s, what: str, lo: float | None = None, hi: float | None = None, error=GameError,
               lo_open: bool = False, hi_open: bool = False) -> float:
    """Decimal number text (ASCII, no ``nan``/``inf``), finite and in range."""
    s = text(s, what, error, max_len=64).strip(ASCII_SPACE)
    if REAL_TEXT.fullmatch(s) is None:
        _fail(error, what, f"{_show(s)} is not a number")
    return real(float(s), what, lo, hi, error, lo_open, hi_open)


def parse_bool(s, what: str, error=GameError) -> bool:
    low = text(s, what, error, max_len=16).strip(ASCII_SPACE).lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    _fail(error, what, f"{_show(s)} is not a boolean (true/false)")


def split_list(s, what: str, error=GameError, max_items: int = 256) -> list[str]:
    """Comma-separated items, stripped; an empty list or an empty item is an error."""
    s = text(s, what, error)
    items = [x.strip() for x in s.split(",")]
    if any(not x for x in items):
        _fail(error, what, f"{_show(s)} has an empty item (expected a comma-separated list)")
    if len(items) > max_items:
        _fail(error, what, f"has {len(items)} items (at most {max_items})")
    return items


# ---- game objects ------------------------------------------------------------------------------------

def action(value, num_actions: int, what: str = "action id", error=None, range_error=None) -> int:
    """An action id: an integer (never ``bool`` or a float) in ``[0, num_actions)``; ``error``
    (default ``InvalidMoveError``) for anything else, ``range_error`` (default ``error``) for an
    integer out of range."""
    error = error or InvalidMoveError
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        _fail(error, what, f"{_show(value)} is not an action id (an integer) or a move string")
    v = operator.index(value)
    if not 0 <= v < num_actions:
        _fail(range_error or error, what, f"{v if abs(v) < 10 ** 12 else _show(value)} is out of range "
                           f"[0, {num_actions})")
    return v


def state_for(state, game, what: str = "state", playable: bool = False) -> None:
    """Check that ``state`` is a state of the game instance ``game`` (a ``GameInfo``), and when
    ``playable`` that the game is not over: the searches call it (with the GIL held) before they run
    without it, as an agent built for one game must refuse another game's state, or the same game
    with other parameters (``WrongGameError``, ``GameOverError``)."""
    # no import of games._state (which imports this module): a State exists only once the module
    # defining it has been imported, so an object is a State iff that module is loaded and says so
    engine = sys.modules.get("games._state")
    if engine is None or not isinstance(state, engine.State):
        _fail(WrongGameError, what, f"expected a game state, got {_show(state)}")
    if state.game is not game and state.game.spec != getattr(game, "spec", game):
        _fail(WrongGameError, what,
              f"a {state.game.spec} state given to a search or agent built for "
              f"{getattr(game, 'spec', game)}")
    if playable and state.is_game_over():
        _fail(GameOverError, what, f"the game is over in {state.position()!r}: there is no move to choose")


def state_arg(state, game, what: str = "state"):
    """``state`` when it is a state of ``game`` (``state_for``), for a compiled method's
    Python-visible wrapper to check before calling its typed implementation (a typed ``State``
    argument would raise ``TypeError`` for an int, and take ``None``)."""
    state_for(state, game, what)
    return state


def rng_arg(value, what: str = "rng_state"):
    """A one-element ``uint64`` numpy array (a random generator's state, advanced in place)."""
    if not (isinstance(value, np.ndarray) and value.dtype == np.uint64 and value.shape == (1,)
            and value.flags.c_contiguous and value.flags.writeable):
        _fail(GameError, what, f"must be a writable one-element uint64 numpy array, got {_show(value)}")
    return value


def search_call(state, game, seconds: float = 0.0, what: str = "search") -> None:
    """The check at a compiled search's entry point, made with the GIL held before it runs
    without it: ``state`` belongs to ``game`` and the time budget is finite (``inf`` would never
    stop, ``nan`` never compares)."""
    state_for(state, game, what)
    if seconds != 0.0:
        real(seconds, f"{what}: seconds", 0.0, MAX_SECONDS)


# ---- records (JSON files, HDF5 attributes) ----------------------------------------------------------

class Check:
    """A schema node: ``check(value, where, error)`` returns the checked value or raises."""

    def __call__(self, value, where: str, error):
        raise NotImplementedError


class Int(Check):
    def __init__(self, lo=None, hi=None):
        self.lo, self.hi = lo, hi

    def __call__(self, value, where, error):
        return integer(value, where, self.lo, self.hi, error)


class Real(Check):
    def __init__(self, lo=None, hi=None):
        self.lo, self.hi = lo, hi

    def __call__(self, value, where, error):
        return real(value, where, self.lo, self.hi, error)


class Bool(Check):
    def __call__(self, value, where, error):
        if not isinstance(value, bool):
            _fail(error, where, f"must be true or false, got {_show(value)}")
        return value


class Str(Check):
    def __init__(self, max_len=MAX_TEXT, choices=None, empty=True):
        self.max_len, self.choices, self.empty = max_len, choices, empty

    def __call__(self, value, where, error):
        v = text(value, where, error, self.max_len, ascii=False, empty=self.empty)
        if self.choices is not None and v not in self.choices:
            _fail(error, where, f"{_show(v)} is not one of {', '.join(map(str, self.choices))}")
        return v


class Opt(Check):
    """``None`` or the inner check."""

    def __init__(self, inner: Check):
        self.inner = inner

    def __call__(self, value, where, error):
        return None if value is None else self.inner(value, where, error)


class List(Check):
    def __init__(self, item: Check, min_len=0, max_len=1_000_000):
        self.item, self.min_len, self.max_len = item, min_len, max_len

    def __call__(self, value, where, error):
        if not isinstance(value, list):
            _fail(error, where, f"must be a list, got {_show(value)}")
        if not self.min_len <= len(value) <= self.max_len:
            _fail(error, where, f"has {len(value)} entries (expected {self.min_len} to {self.max_len})")
        return [self.item(v, f"{where}[{i}]", error) for i, v in enumerate(value)]


class Map(Check):
    """A dict with string keys, every value checked by ``item``."""

    def __init__(self, item: Check):
        self.item = item

    def __call__(self, value, where, error):
        if not isinstance(value, dict):
            _fail(error, where, f"must be a record (a JSON object), got {_show(value)}")
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                _fail(error, where, f"has a non-text key {_show(k)}")
            out[k] = self.item(v, f"{where}.{k}", error)
        return out


class Any_(Check):
    def __call__(self, value, where, error):
        return value


class Record(Check):
    """A dict with the ``required`` keys (and the ``optional`` ones when present); other keys are
    kept as they are (files written by a later version may carry more)."""

    def __init__(self, required: dict[str, Check], optional: dict[str, Check] | None = None):
        self.required, self.optional = required, optional or {}

    def __call__(self, value, where, error):
        if not isinstance(value, dict):
            _fail(error, where, f"must be a record (a JSON object), got {_show(value)}")
        out = dict(value)
        for k, check in self.required.items():
            if k not in value:
                _fail(error, where, f"has no {k!r} entry")
            out[k] = check(value[k], f"{where}.{k}", error)
        for k, check in self.optional.items():
            if k in value:
                out[k] = check(value[k], f"{where}.{k}", error)
        return out


class Where(Check):
    """A custom test: ``fn(value) -> message or None``."""

    def __init__(self, inner: Check, fn: Callable[[Any], str | None]):
        self.inner, self.fn = inner, fn

    def __call__(self, value, where, error):
        v = self.inner(value, where, error)
        msg = self.fn(v)
        if msg:
            _fail(error, where, msg)
        return v


MAX_JSON_BYTES = 64 * 1024 * 1024


def load_json(path, schema: Check, error=GameError, what: str | None = None):
    """Read a JSON file (at most 64 MiB; NaN/Infinity literals refused) and check it against
    ``schema``; any failure is ``error`` naming the file and the entry."""
    path = file_path(path, what or "JSON file", error)
    name = what or str(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_JSON_BYTES + 1)
    except FileNotFoundError:
        _fail(error, name, "file not found")
    except (OSError, ValueError) as exc:
        _fail(error, name, f"cannot read ({exc})")
    if len(data) > MAX_JSON_BYTES:
        _fail(error, name, f"is larger than {MAX_JSON_BYTES} bytes")
    return parse_json(data, schema, error, name)


def _no_constant(name):
    raise ValueError(f"the non-standard constant {name}")


def parse_json(data, schema: Check, error, name: str):
    """Parse JSON text or bytes and check it against ``schema``."""
    try:
        obj = json.loads(data, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:     # JSONDecodeError and UnicodeDecodeError too
        _fail(error, name, f"is not valid JSON ({exc})")
    return schema(obj, name, error)


# ---- read-only files ---------------------------------------------------------------------------------

def open_sqlite_readonly(path, error=GameError, tables: tuple[str, ...] = (), what: str | None = None):
    """Open an SQLite database that is only read: ``mode=ro`` (nothing is ever written: no journal
    mode switch, no table created), refusing a missing, empty or foreign file (one without
    ``tables``)."""
    path = file_path(path, what or "database", error)
    name = what or str(path)
    if not path.is_file():
        _fail(error, name, "no such database file")
    if path.stat().st_size == 0:
        _fail(error, name, "is an empty file, not a results database")
    # A WAL-mode database without a live -wal file is read as immutable: a read-only connection
    # would otherwise leave new -wal/-shm files beside it. With a -wal file (a writer is active, or
    # was killed), the plain read-only mode sees its last commits.
    live_wal = Path(f"{path}-wal").exists()
    uri = f"file:{quote(str(path.resolve()))}?mode=ro" + ("" if live_wal else "&immutable=1")
    try:
        con = sqlite3.connect(uri, uri=True)
        have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as exc:
        _fail(error, name, f"is not an SQLite database ({exc})")
    missing = [t for t in tables if t not in have]
    if missing:
        con.close()
        _fail(error, name, f"is not a results database (no table {', '.join(missing)})")
    return con
