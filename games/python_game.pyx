"""Games written in Python (``games.protocol``) behind the compiled ``State`` contract.

``PythonGameState`` is a ``State`` whose ``cdef ... noexcept nogil`` hooks take the GIL and call the
game object's methods, so the searches, self-play and matches reach a Python game through the same
vtable calls as a compiled engine: no algorithm has a second code path.

* The bookkeeping is the base class's (ply, player, hash, history, undo of those); the adapter adds
  the ply cap (a game reaching ``max_plies`` ends in a draw) and the hash: the game's ``key()``
  hashed with the side to move, or, for a game without one, the move history.
* Without ``undo`` the adapter keeps the position before each move: ``apply`` copies the position and
  plays on the copy, so a position, once left, is never changed again and copies of the state share
  it safely.
* A hook cannot raise: an exception of the game's code, or an answer that breaks the protocol
  (unsorted or out-of-range actions, planes of another shape, a player other than 0 or 1), is kept
  as a one-line ``PluginError`` naming the game, the method and the moves played, and the state is
  made a finished draw so that the search winds down. The next Python call on a state of a Python
  game (``push``, ``pop``, ``legal_actions_list``, ``copy``, ``encode_planes``, ``outcome`` ...), or
  the next new state (self-play's next game, a search's copy of its root), raises it;
  ``raise_pending()`` does so explicitly.
* Position text: ``start`` followed by the moves from the initial position in the game's notation
  (``start d d e``); ``set_position`` replays them.
"""
from libc.string cimport memcpy, memset

import copy as _copymod
import hashlib
import numbers

import numpy as np

from games._state cimport State
from games._typedefs cimport action_t, splitmix64, uint64_t

from games.errors import GameError, IllegalMoveError, InvalidMoveError, InvalidPositionError, PluginError
from games import validate

cdef uint64_t SIDE_KEY = 0x5D1E5D1E5D1E5D1EULL
cdef uint64_t MOVE_KEY = 0x9E3779B97F4A7C15ULL

# The first error a game raised inside a compiled hook, until a Python call raises it.
_PENDING = []


def raise_pending() -> None:
    """Raise (and forget) the error a Python game's code raised inside the compiled search, if any."""
    if _PENDING:
        err = _PENDING[0]
        _PENDING.clear()
        raise err


def _digest(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def _key_hash(key, int player) -> int:
    """64-bit hash of a game's ``key()`` (bytes as they are, anything else by its ``repr``, which is
    the same in every process, unlike Python's ``hash`` of text) and the player to move."""
    data = key if isinstance(key, bytes) else repr(key).encode()
    return _digest(data) ^ (SIDE_KEY if player else 0)


class _Violation(Exception):
    """An answer of the game's code that breaks the protocol (the message says how)."""


def _copy_game(g):
    fn = getattr(g, "copy", None)
    return fn() if callable(fn) else _copymod.deepcopy(g)


cdef class PythonGameState(State):
    """A position of a game written in Python (``games.protocol``); see the module docstring."""

    def __init__(self, info):
        # a new state (a new self-play game, a search's copy of its root) is made with the GIL in
        # code that passes exceptions on: the place where a pending error reaches self-play
        raise_pending()
        self._init_base(info)
        self.label = info.spec
        self.snapshots = []
        self.moves = []
        try:
            self.g = info.definition.game_class(**info.params)
        except Exception as exc:
            raise PluginError(validate.one_line(
                f"{self.label}: creating the initial position raised {type(exc).__name__}: {exc}")) from None
        self.has_undo = callable(getattr(self.g, "undo", None))
        key = getattr(self.g, "key", None)
        try:
            self.keyed = callable(key) and key() is not None
        except Exception as exc:
            raise PluginError(validate.one_line(
                f"{self.label}: key() raised {type(exc).__name__}: {exc}")) from None
        self._hash = _digest(self.label.encode())
        try:
            self._sync(0, False)
        except Exception as exc:
            raise PluginError(validate.one_line(f"{self.label}: the initial position: {exc}")) from None

    # ---- errors -------------------------------------------------------------------------------------
    cdef void _fail(self, str where, object exc) noexcept:
        """Keep the first error for the next Python call and end the game here (a draw)."""
        self._terminal = True
        self._result = 0
        try:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                err = exc
            else:
                # a violation's message names the method; an exception is named with the call
                why = str(exc) if isinstance(exc, _Violation) else f"{where} raised {type(exc).__name__}: {exc}"
                moves = " ".join(map(str, self.moves)) or "none"
                err = PluginError(validate.one_line(f"{self.label}: {why} (after the actions {moves})"))
            if not _PENDING:
                _PENDING.append(err)
        except BaseException:
            pass

    # ---- the position after a move ------------------------------------------------------------------
    cdef int _sync(self, action_t a, bint moved) except -1:
        """Read the player to move and the outcome from the game; set the hash."""
        cdef uint64_t seed
        p = self.g.to_move()
        if isinstance(p, bool) or not isinstance(p, numbers.Integral) or p not in (0, 1):
            raise _Violation(f"to_move() returned {p!r}, not 0 or 1")
        self._player = p
        if self.g.is_terminal():
            r = self.g.result()
            if isinstance(r, bool) or not isinstance(r, numbers.Integral) or r not in (-1, 0, 1):
                raise _Violation(f"result() returned {r!r}, not +1, 0 or -1")
            self._terminal = True
            self._result = r
        elif self._ply >= self.max_plies:
            self._terminal = True          # the ply cap: a draw
            self._result = 0
        else:
            self._terminal = False
            self._result = 0
        if self.keyed:
            self._hash = _key_hash(self.g.key(), p)
        elif moved:
            seed = self._hash ^ (<uint64_t>(a + 1) * MOVE_KEY)
            self._hash = splitmix64(&seed)
        return 0

    # ---- hooks --------------------------------------------------------------------------------------
    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        cdef int n
        with gil:
            n = self._legal_py(out)
        return n

    cdef int _legal_py(self, action_t* out) noexcept:
        cdef int i, n, prev = -1
        cdef long v
        try:
            acts = self.g.legal_actions()
            n = len(acts)
            if n > self.max_legal:
                raise _Violation(f"legal_actions() returned {n} actions, more than max_legal "
                                 f"{self.max_legal}")
            if n == 0:
                raise _Violation("legal_actions() is empty in a position that is not over")
            for i in range(n):
                x = acts[i]
                if isinstance(x, bool) or not isinstance(x, numbers.Integral):
                    raise _Violation(f"legal_actions() holds {x!r}, not an action id")
                v = x
                if v < 0 or v >= self.num_actions:
                    raise _Violation(f"legal_actions() holds {v}, out of range [0, {self.num_actions})")
                if v <= prev:
                    raise _Violation(f"legal_actions() is not sorted ascending without repeats: {list(acts)!r:.200}")
                out[i] = <action_t>v
                prev = v
            return n
        except BaseException as exc:
            self._fail("legal_actions()", exc)
            return 0

    cdef void _do_apply(self, action_t a) noexcept nogil:
        with gil:
            self._apply_py(a)

    cdef void _apply_py(self, action_t a) noexcept:
        try:
            self.moves.append(a)
            if self.has_undo:
                self.g.apply(a)
            else:
                self.snapshots.append(self.g)
                self.g = _copy_game(self.g)
                self.g.apply(a)
            self._sync(a, True)
        except BaseException as exc:
            self._fail(f"apply({a})", exc)

    cdef void _do_undo(self, action_t a) noexcept nogil:
        with gil:
            self._undo_py(a)

    cdef void _undo_py(self, action_t a) noexcept:
        try:
            if self.moves:
                self.moves.pop()
            if self.has_undo:
                self.g.undo(a)
            elif self.snapshots:
                self.g = self.snapshots.pop()
        except BaseException as exc:
            self._fail(f"undo({a})", exc)

    cdef void encode(self, float* out) noexcept nogil:
        with gil:
            self._encode_py(out)

    cdef void _encode_py(self, float* out) noexcept:
        cdef int n = self.planes_h * self.planes_w * self.planes_c
        cdef float[::1] flat
        try:
            x = np.asarray(self.g.encode(), dtype=np.float32)
            shape = (self.planes_h, self.planes_w, self.planes_c)
            if x.shape != shape:
                raise _Violation(f"encode() gave planes shaped {x.shape}, not planes_shape {shape}")
            flat = np.ascontiguousarray(x).reshape(-1)
            memcpy(out, &flat[0], n * sizeof(float))
        except BaseException as exc:
            memset(out, 0, n * sizeof(float))
            self._fail("encode()", exc)

    cdef double natural_score(self) noexcept nogil:
        cdef double m
        with gil:
            m = self._margin_py()
        return m

    cdef double _margin_py(self) noexcept:
        try:
            return float(self.g.margin())
        except BaseException as exc:
            self._fail("margin()", exc)
            return 0.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef PythonGameState d = <PythonGameState>dst
        try:
            d.moves = list(self.moves)
            if self.has_undo:
                d.g = _copy_game(self.g)
            else:            # positions left behind are never changed: share them
                d.g = self.g
                d.snapshots = list(self.snapshots)
        except BaseException as exc:
            self._fail("copy()", exc)

    # ---- Python API: a pending error of the compiled hooks is raised here ----------------------------
    @property
    def game_object(self):
        """The game object (``games.protocol.Game``) of the current position: read it, don't change it."""
        return self.g

    def push(self, action) -> None:
        raise_pending()
        try:
            State.push(self, action)
        except GameError:
            raise_pending()            # the game's own error first (an illegal move may follow from it)
            raise
        raise_pending()

    def parse_move(self, text) -> int:
        raise_pending()
        try:
            a = State.parse_move(self, text)
        except GameError:
            raise_pending()
            raise
        raise_pending()
        return a

    def move_to_str(self, action) -> str:
        raise_pending()
        try:
            t = State.move_to_str(self, action)
        except GameError:
            raise_pending()
            raise
        return t

    def position(self) -> str:
        raise_pending()
        return State.position(self)

    def is_legal(self, action) -> bool:
        raise_pending()
        ok = State.is_legal(self, action)
        raise_pending()
        return ok

    def pop(self) -> int:
        raise_pending()
        a = State.pop(self)
        raise_pending()
        return a

    def legal_actions_list(self) -> list:
        raise_pending()
        out = State.legal_actions_list(self)
        raise_pending()
        return out

    def is_game_over(self) -> bool:
        raise_pending()
        return self._terminal

    def copy(self):
        raise_pending()
        c = self.clone()
        raise_pending()
        return c

    def encode_planes(self):
        raise_pending()
        x = State.encode_planes(self)
        raise_pending()
        return x

    def outcome(self):
        raise_pending()
        o = State.outcome(self)
        raise_pending()
        return o

    # ---- text ----------------------------------------------------------------------------------------
    def _parse_move_text(self, str text) -> int:
        try:
            a = self.g.text_to_action(text)
        except GameError:
            raise
        except Exception as exc:
            raise InvalidMoveError(validate.one_line(f"{self.label}: move {text!r}: {exc}")) from None
        if isinstance(a, bool) or not isinstance(a, numbers.Integral):
            raise InvalidMoveError(f"{self.label}: move {text!r}: text_to_action() returned {a!r:.60}, "
                                   f"not an action id")
        return int(a)

    def _move_text(self, int action) -> str:
        try:
            t = self.g.action_to_text(action)
        except Exception as exc:
            raise PluginError(validate.one_line(
                f"{self.label}: action_to_text({action}) raised {type(exc).__name__}: {exc}")) from None
        if not isinstance(t, str) or not t.strip() or " " in t.strip():
            raise PluginError(f"{self.label}: action_to_text({action}) returned {t!r:.60}, not a "
                              f"non-empty text without spaces")
        return t.strip()

    def _position_text(self) -> str:
        return " ".join(["start"] + [self._move_text(a) for a in self.moves])

    def _set_position_text(self, str text) -> None:
        words = text.split()
        if not words or words[0] != "start":
            raise InvalidPositionError(f"{self.label}: position {text!r} must be 'start' followed by "
                                       f"the moves played from the initial position")
        cdef PythonGameState t = self.game.new_state()
        for w in words[1:]:
            try:
                t.push(w)
            except (InvalidMoveError, IllegalMoveError) as exc:
                raise InvalidPositionError(validate.one_line(f"{self.label}: position {text!r}: {exc}")) from None
        raise_pending()
        t._copy_to(self)
        self.snapshots = []
        self._player, self._ply, self._hash = t._player, t._ply, t._hash
        self._hist_key, self._terminal, self._result = t._hist_key, t._terminal, t._result

    def _drawing(self) -> str:
        if type(self.g).__str__ is object.__str__:
            return self._position_text()
        return str(self.g)

    def _termination_reason(self):
        if self._terminal and self._ply >= self.max_plies and self._result == 0:
            try:
                if not self.g.is_terminal():
                    return None            # the ply cap (the base class names it)
            except Exception:
                return None
        fn = getattr(self.g, "termination", None)
        if not callable(fn):
            return None
        try:
            reason = fn()
        except Exception as exc:
            raise PluginError(validate.one_line(
                f"{self.label}: termination() raised {type(exc).__name__}: {exc}")) from None
        return str(reason) if reason else None

    def _transform_action(self, int sym, int action) -> int:
        if sym == 0:
            return action
        if sym not in self.game.symmetries:
            raise GameError(f"{self.label}: symmetry {sym} is not one of the game's {self.game.symmetries}")
        try:
            b = self.g.transform_action(sym, action)
        except Exception as exc:
            raise PluginError(validate.one_line(
                f"{self.label}: transform_action({sym}, {action}) raised {type(exc).__name__}: {exc}")) from None
        if isinstance(b, bool) or not isinstance(b, numbers.Integral) or not 0 <= b < self.num_actions:
            raise PluginError(f"{self.label}: transform_action({sym}, {action}) returned {b!r:.60}, not an "
                              f"action id in [0, {self.num_actions})")
        return int(b)
