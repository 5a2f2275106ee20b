# The base class of every game state: bookkeeping in C, python-chess-style verbs for Python.
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from libc.math cimport pow

import numbers

import numpy as np
cimport numpy as cnp

from games.errors import GameError, IllegalMoveError, InvalidMoveError, InvalidPositionError, WrongGameError
from games import validate
from games._typedefs cimport rng_below, uint64_t

cnp.import_array()

# Longest move text accepted (the longest real one, a draughts capture chain, is far shorter).
cdef int MAX_MOVE_TEXT = 256

# Floor of the natural-score terminal evaluation (docs/ALGORITHMS.md section 2, "our choice").
cdef double SCORE_FLOOR = 0.05


cdef class State:
    """A position of a game, with the history of the moves played to reach it.

    Moves are small integers (actions). Use ``parse_move`` / ``move_to_str`` to convert from and to
    the game's notation. ``push`` checks legality (and raises ``IllegalMoveError``); the compiled
    search uses the unchecked ``apply``.
    """

    def __dealloc__(self):
        if self._history != NULL:
            free(self._history)
            self._history = NULL
        if self._frames != NULL:
            free(self._frames)
            self._frames = NULL

    cdef int _alloc_history(self, int capacity) except -1:
        if self._history != NULL:
            free(self._history)
        if self._frames != NULL:
            free(self._frames)
        self._history = <action_t*>malloc(sizeof(action_t) * (capacity + 1))
        self._frames = <Frame*>malloc(sizeof(Frame) * (capacity + 1))
        if self._history == NULL or self._frames == NULL:
            raise MemoryError()
        self._hist_cap = capacity + 1
        self._nhist = 0
        return 0

    cdef int _init_base(self, object info) except -1:
        """Set the static facts from the game's ``GameInfo`` and reset to an empty history."""
        self.game = info
        self.num_actions = info.num_actions
        self.max_legal = info.branching
        self.max_plies = info.max_plies
        self.planes_h, self.planes_w, self.planes_c = info.planes_shape
        self.score_kind = info.score_kind
        self._alloc_history(info.max_plies)
        self._player = 0
        self._ply = 0
        self._terminal = False
        self._result = 0
        self._hash = 0
        self._hist_key = 0
        return 0

    # ---- hooks (overridden by every game) ----------------------------------------------------------
    cdef int legal_actions(self, action_t* out) noexcept nogil:
        return 0

    cdef int count_legal_actions(self, action_t* scratch) noexcept nogil:
        return self.legal_actions(scratch)

    cdef void _do_apply(self, action_t a) noexcept nogil:
        pass

    cdef void _do_undo(self, action_t a) noexcept nogil:
        pass

    cdef double natural_score(self) noexcept nogil:
        return 0.0

    cdef void encode(self, float* out) noexcept nogil:
        pass

    cdef void _copy_to(self, State dst) noexcept:
        pass

    # ---- provided -----------------------------------------------------------------------------------
    cdef void apply(self, action_t a) noexcept nogil:
        # The bookkeeping of the move: remember what undo restores, count the ply, then the rules.
        cdef Frame* f = &self._frames[self._nhist]
        f.hash = self._hash
        f.hist_key = self._hist_key
        f.player = self._player
        self._history[self._nhist] = a
        self._nhist += 1
        self._ply += 1
        self._do_apply(a)

    cdef action_t undo(self) noexcept nogil:
        # Restore the bookkeeping of before the move (a move is only ever played in a position
        # that is not terminal), then let the game take back its rules' changes.
        self._nhist -= 1
        cdef action_t a = self._history[self._nhist]
        cdef Frame* f = &self._frames[self._nhist]
        self._hash = f.hash
        self._hist_key = f.hist_key
        self._player = f.player
        self._ply -= 1
        self._terminal = False
        self._result = RESULT_DRAW
        self._do_undo(a)
        return a

    cdef bint is_legal_action(self, action_t a) noexcept nogil:
        if a < 0 or a >= self.num_actions or self._terminal:
            return False
        cdef action_t* buf = <action_t*>malloc(sizeof(action_t) * self.max_legal)
        if buf == NULL:
            return False
        cdef int i, n = self.legal_actions(buf)
        cdef bint found = False
        for i in range(n):
            if buf[i] == a:
                found = True
                break
        free(buf)
        return found

    cdef double terminal_value(self) noexcept nogil:
        """f_t of a terminal state, from the first player's point of view (0 for draws)."""
        cdef double b = self._result
        cdef double P = self.max_plies
        cdef double m
        if self._result == RESULT_DRAW:
            return 0.0
        if self.score_kind == SCORE_ADDITIVE_DEPTH:
            return b * (P - self._ply + 1.0) / P
        if self.score_kind == SCORE_MULTIPLICATIVE_DEPTH:
            return b * pow(P, -self._ply / P)
        m = self.natural_score() * b           # the winner's margin
        if m > 1.0:
            m = 1.0
        elif m < -1.0:
            m = -1.0
        return b * (SCORE_FLOOR + (1.0 - SCORE_FLOOR) * (1.0 + m) / 2.0)

    cdef State clone(self):
        cdef State dst = self.game.new_state()
        self._copy_to(dst)
        dst._player = self._player
        dst._ply = self._ply
        dst._terminal = self._terminal
        dst._result = self._result
        dst._hash = self._hash
        dst._hist_key = self._hist_key
        memcpy(dst._history, self._history, sizeof(action_t) * self._nhist)
        memcpy(dst._frames, self._frames, sizeof(Frame) * self._nhist)
        dst._nhist = self._nhist
        return dst

    # ---- Python API ---------------------------------------------------------------------------------
    @property
    def to_move(self) -> int:
        """The player to move: 0 (first player) or 1."""
        return self._player

    @property
    def ply(self) -> int:
        """Plies played since the start of the game."""
        return self._ply

    @property
    def zobrist_hash(self) -> int:
        """64-bit Zobrist hash of the position, including the side to move."""
        return self._hash

    @property
    def history_key(self) -> int:
        """64-bit key of the repetition-relevant history (0 in games whose outcome depends on the
        position alone): the earlier positions that can still recur, and the ply where the ply cap
        is not already in ``zobrist_hash``."""
        return self._hist_key

    @property
    def search_key(self) -> int:
        """The key the searches use for their tables: ``zobrist_hash ^ history_key``. Two states
        with the same key have the same future (legal moves, outcomes, repetitions)."""
        return self._hash ^ self._hist_key

    @property
    def move_stack(self) -> list:
        """Actions pushed since the state was created or its position set."""
        return [self._history[i] for i in range(self._nhist)]

    def legal_actions_list(self) -> list:
        """The legal actions, sorted ascending (empty when the game is over)."""
        cdef action_t* buf = <action_t*>malloc(sizeof(action_t) * self.max_legal)
        if buf == NULL:
            raise MemoryError()
        cdef int n = self.legal_actions(buf)
        out = [buf[i] for i in range(n)]
        free(buf)
        return out

    @property
    def legal_moves(self) -> "LegalMoves":
        """A lazy view of the legal actions: iterate, ``in``, ``len``, ``count()``."""
        return LegalMoves(self)

    def is_legal(self, action) -> bool:
        """Whether ``action`` (an action id, or a move in the game's notation) is legal here; False
        for anything that is neither an action id of this game nor a move text that parses."""
        if isinstance(action, str):
            try:
                self.parse_move(action)
            except GameError:
                return False
            return True
        if isinstance(action, bool) or not isinstance(action, numbers.Integral):
            return False
        if not 0 <= action < self.num_actions:
            return False
        return self.is_legal_action(action)

    def is_game_over(self) -> bool:
        return self._terminal

    def push(self, action) -> None:
        """Play ``action`` (an int, or a move in the game's notation). Raises ``InvalidMoveError``
        for something that is not a move (a float, ``None``, an id out of range) and
        ``IllegalMoveError`` for a move that is not legal here."""
        cdef int a
        if isinstance(action, str):
            a = self.parse_move(action)
        else:
            a = validate.action(action, self.num_actions, f"{self.game.spec}: move",
                                range_error=IllegalMoveError)
            if not self.is_legal_action(a):
                raise IllegalMoveError(
                    f"illegal move {action!r} in position {self.position()!r}")
        self.apply(a)

    def pop(self) -> int:
        """Take back the last pushed action and return it."""
        if self._nhist == 0:
            raise IndexError("pop from a state with an empty move stack")
        return self.undo()

    def peek(self) -> int:
        """The last pushed action."""
        if self._nhist == 0:
            raise IndexError("peek at a state with an empty move stack")
        return self._history[self._nhist - 1]

    def copy(self) -> "State":
        """An independent copy (with its move stack)."""
        return self.clone()

    def __copy__(self):
        return self.clone()

    def parse_move(self, text) -> int:
        """Parse a move in the game's notation and check that it is legal here."""
        validate.text(text, f"{self.game.spec}: move", InvalidMoveError, max_len=MAX_MOVE_TEXT, empty=True)
        a = validate.action(self._parse_move_text(text.strip()), self.num_actions,
                            f"{self.game.spec}: move {text!r}")
        if not self.is_legal_action(a):
            raise IllegalMoveError(
                f"illegal move {text!r} in position {self.position()!r}")
        return a

    def move_to_str(self, action) -> str:
        """The game's notation of ``action`` (legal or not, as long as it is a valid action id)."""
        return self._move_text(validate.action(action, self.num_actions, f"{self.game.spec}: action id"))

    def position(self) -> str:
        """The position in the game's documented text format (see the game's docstring)."""
        return self._position_text()

    def set_position(self, text) -> None:
        """Set the position from text; raises ``InvalidPositionError`` and leaves the state unchanged
        when the text is malformed (not ASCII, empty, longer than 4096 characters included). Clears
        the move stack."""
        validate.text(text, f"{self.game.spec}: position", InvalidPositionError, empty=True)
        self._set_position_text(text.strip())
        self._nhist = 0

    def outcome(self):
        """The game's ``Outcome`` when it is over, else ``None``."""
        from games.outcome import Outcome
        if not self._terminal:
            return None
        o = Outcome.from_result(self._result, self.terminal_value(), self.game.players,
                                self._ply >= self.max_plies and self._result == 0)
        reason = self._termination_reason()
        if reason:
            from dataclasses import replace
            o = replace(o, termination=reason)
        return o

    def _termination_reason(self):
        """Why the game ended, in words (e.g. 'checkmate', 'threefold repetition'); games may
        override it. None: the default ('win', 'draw' or 'ply cap')."""
        return None

    def result(self) -> str:
        """'1-0', '0-1', '1/2-1/2', or '*' while the game goes on."""
        if not self._terminal:
            return "*"
        return {1: "1-0", 0: "1/2-1/2", -1: "0-1"}[self._result]

    def encode_planes(self):
        """The network input (H, W, C) float32, from the point of view of the player to move."""
        out = np.zeros((self.planes_h, self.planes_w, self.planes_c), dtype=np.float32)
        cdef float[:, :, ::1] view = out
        self.encode(&view[0, 0, 0])
        return out

    def __str__(self) -> str:
        return self._drawing()

    def __repr__(self) -> str:
        return f"<{self.game.spec} {self.position()!r}>"

    def __eq__(self, other):
        if not isinstance(other, State):
            return NotImplemented
        return self.game.spec == other.game.spec and self.position() == other.position()

    def __hash__(self):
        return hash(self._hash)

    # Python-level hooks every game provides.
    def _parse_move_text(self, str text) -> int:
        raise NotImplementedError

    def _move_text(self, int action) -> str:
        raise NotImplementedError

    def _position_text(self) -> str:
        raise NotImplementedError

    def _set_position_text(self, str text) -> None:
        raise NotImplementedError

    def _drawing(self) -> str:
        return self._position_text()

    def transform_action(self, sym, action) -> int:
        """The image of ``action`` under the symmetry ``sym`` (see games.symmetry): ``GameError``
        for a symmetry that is not an integer in [0, 8) or not one of this game's,
        ``InvalidMoveError`` for an action that is not an action id of the game (checked here, with
        any Python integer, before the game's typed ``_transform_action``)."""
        if type(sym) is int and type(action) is int and 0 <= sym < 8 and 0 <= action < self.num_actions:
            return self._transform_action(sym, action)          # the common case, checked
        cdef int s = validate.integer(sym, f"{self.game.spec}: symmetry", 0, 7)
        cdef int a = validate.action(action, self.num_actions, f"{self.game.spec}: action id")
        return self._transform_action(s, a)

    def _transform_action(self, int sym, int action) -> int:
        raise NotImplementedError


class LegalMoves:
    """Lazy view of a state's legal actions (python-chess style)."""

    def __init__(self, state):
        self._state = state

    def __iter__(self):
        return iter(self._state.legal_actions_list())

    def __contains__(self, action) -> bool:
        return self._state.is_legal(action)

    def __len__(self) -> int:
        return len(self._state.legal_actions_list())

    def count(self) -> int:
        return len(self)

    def __bool__(self) -> bool:
        return not self._state.is_game_over()

    def __repr__(self) -> str:
        s = self._state
        return "<LegalMoves: " + ", ".join(s.move_to_str(a) for a in self) + ">"


# ---- compiled whole-tree walks ------------------------------------------------------------------------

cdef unsigned long long c_perft(State s, int depth, action_t* buf) noexcept nogil:
    """Leaf count of the game tree of depth `depth` (terminal states before it count 0).

    `buf` must hold depth * max_legal actions.
    """
    if depth == 1:
        return s.count_legal_actions(buf)
    cdef int n = s.legal_actions(buf)
    cdef int i
    cdef unsigned long long total = 0
    for i in range(n):
        s.apply(buf[i])
        total += c_perft(s, depth - 1, buf + s.max_legal)
        s.undo()
    return total


cdef unsigned long long c_count_games(State s, action_t* buf) noexcept nogil:
    """Number of distinct complete games (move sequences to a terminal state) from `s`."""
    if s._terminal:
        return 1
    cdef int n = s.legal_actions(buf)
    cdef int i
    cdef unsigned long long total = 0
    for i in range(n):
        s.apply(buf[i])
        total += c_count_games(s, buf + s.max_legal)
        s.undo()
    return total


cdef int c_random_playout(State s, uint64_t* rng, action_t* buf) noexcept nogil:
    """Play uniformly random moves until the game ends; return the number of plies played.

    The state is left at the terminal position (undo the returned number of plies to go back).
    """
    cdef int plies = 0
    cdef int n
    while not s._terminal:
        n = s.legal_actions(buf)
        s.apply(buf[rng_below(rng, n)])
        plies += 1
    return plies


cdef State _a_state(object state, str what):
    """``state`` as a ``State`` (checked here: a typed ``State`` argument would raise ``TypeError``
    for anything else, and take ``None``)."""
    if not isinstance(state, State):
        raise WrongGameError(validate.one_line(f"{what}: expected a game state, got {state!r:.60}"))
    return <State>state


def perft(state, depth) -> int:
    """Number of legal move sequences of length ``depth`` (0 to 64) from ``state`` (compiled, GIL
    released)."""
    cdef State st = _a_state(state, "perft")
    cdef int d = validate.integer(depth, "perft depth", 0, 64)
    if d == 0:
        return 1
    cdef State s = st.clone()
    cdef action_t* buf = <action_t*>malloc(sizeof(action_t) * s.max_legal * d)
    if buf == NULL:
        raise MemoryError()
    cdef unsigned long long total
    with nogil:
        total = c_perft(s, d, buf)
    free(buf)
    return total


def count_games(state) -> int:
    """Number of complete games from ``state`` (the full tree; only for small games)."""
    cdef State s = _a_state(state, "count_games").clone()
    cdef action_t* buf = <action_t*>malloc(sizeof(action_t) * s.max_legal * (s.max_plies + 1))
    if buf == NULL:
        raise MemoryError()
    cdef unsigned long long total
    with nogil:
        total = c_count_games(s, buf)
    free(buf)
    return total


def random_games(state, n_games, seed):
    """Play ``n_games`` uniformly random games from ``state``.

    Returns ``(results, plies)``: int8 array of b_t (first player's view) and int32 array of lengths.
    Deterministic for a given seed.
    """
    cdef State st = _a_state(state, "random_games")
    cdef long ng = validate.integer(n_games, "number of games", 0, validate.MAX_COUNT)
    cdef uint64_t rng = validate.integer(seed, "seed", 0, 2 ** 64 - 1)
    cdef State s = st.clone()
    cdef action_t* buf = <action_t*>malloc(sizeof(action_t) * s.max_legal)
    if buf == NULL:
        raise MemoryError()
    results = np.zeros(ng, dtype=np.int8)
    lengths = np.zeros(ng, dtype=np.int32)
    cdef signed char[::1] res = results
    cdef int[::1] lens = lengths
    cdef long g
    cdef int _k, p
    with nogil:
        for g in range(ng):
            p = c_random_playout(s, &rng, buf)
            res[g] = <signed char>s._result
            lens[g] = p
            for _k in range(p):
                s.undo()
    free(buf)
    return results, lengths
