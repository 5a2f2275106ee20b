"""Breakthrough on a ``rows`` x ``cols`` board (Dan Troyka, 2000); ``x`` (player 0) moves first.

Rules. ``x`` fills the two bottom rows (rows 1-2 in notation) and moves *up*; ``o`` fills the two top
rows and moves down. A piece steps one square straight forward or diagonally forward onto an empty
square, or captures an opponent's piece diagonally forward (never straight). A player wins by moving
a piece onto the opponent's home (far) row or by capturing all the opponent's pieces.

No-move rule: a player with no legal move loses. With pieces on the board and at least 2 columns this
cannot happen: the mover's most advanced piece (not on its goal row, or the game would be over) has no
own piece diagonally in front of it, and at least one of its two diagonal squares is on the board, so
it can step or capture there. The rule is therefore only checked (defensively) when a position is set
from text.

Ply cap. Every move advances one piece by one row towards its goal row, and a move onto the goal row
wins. A piece starting on its home row is rows-1 rows from its goal, so it makes at most rows-2
non-winning moves; one starting on the second row at most rows-3. With ``cols`` pieces on each of these
rows per side, a game from the initial position has at most ``2 * cols * (2 * rows - 5)`` non-winning
moves plus one winning move::

    max_plies = 2 * cols * (2 * rows - 5) + 1        (177 on 8x8, 85 on 6x6, 71 on 6x5)

From the initial position every game is decided by a win at or before the cap (the bound is reached
exactly on 5x2, by exhaustive search); the cap only bites in positions set from text (which may hold
more pieces). Reaching it is a draw (a win on the same move takes precedence). Terminal evaluation:
additive depth over ``max_plies``.

Other engines: OpenSpiel's ``breakthrough`` agrees (its first player starts on the top rows) from 6 rows
up; below 6 rows it gives each side a single home row, while this engine always uses two.

Actions: ``from_square * 3 + d`` with ``from_square = r * cols + c`` (row 0 at the *top*) and ``d`` = 0
for the diagonal towards column ``c - 1``, 1 straight, 2 the diagonal towards ``c + 1``. The target row
is given by the side to move (up for ``x``, down for ``o``), so ``num_actions = rows * cols * 3``; ids
whose target is off the board are never legal (``move_to_str`` raises ``InvalidMoveError`` for them).

Notation: from-square then to-square, ``a2a3`` (``a1`` is the bottom-left square); ``a2-a3``, ``a2xb3``
and ``a2*b3`` are accepted too (the separator is not checked against the move being a capture). Text
that is not a one-step forward move *for the side to move* raises ``InvalidMoveError``.

Position text: ``BOARD SIDE PLY`` with the rows top to bottom, FEN-like (``x``, ``o``, ``.`` or digit
runs), e.g. the 6x6 start ``oooooo/oooooo/6/6/xxxxxx/xxxxxx x 0``; the ply may be omitted (then 0) and
is written always. Parsing accepts any piece counts; it rejects a board where both sides stand on their
goal rows or neither side has a piece, and a ply above ``max_plies``. A piece already standing on its
goal row makes the position terminal, won by that piece's owner (whoever is to move); a side with no
pieces has lost. Side to move and ply parity are not cross-checked.

Encoding: ``(rows, cols, 2)`` planes [mover's pieces, opponent's pieces] from the mover's point of view:
the rows are flipped when ``o`` is to move, so the mover always advances towards row 0 of the planes.
Columns are never flipped, so the symmetries are 0 (identity) and 4 (mirror columns); mirroring an
action swaps its diagonal directions.
"""
import re

from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from games._state cimport State, SCORE_ADDITIVE_DEPTH, RESULT_FIRST_WINS, RESULT_SECOND_WINS, RESULT_DRAW
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

from games import boardtext as bt
from games import validate
from games.errors import GameError, InvalidMoveError, InvalidPositionError

cdef hash_t ZOBRIST[BT_MAX_SQUARES][2]
cdef hash_t ZOBRIST_SIDE


cdef void _init_zobrist():
    cdef uint64_t seed = 0xB4EA7740
    cdef int i
    for i in range(BT_MAX_SQUARES):
        ZOBRIST[i][0] = splitmix64(&seed)
        ZOBRIST[i][1] = splitmix64(&seed)
    global ZOBRIST_SIDE
    ZOBRIST_SIDE = splitmix64(&seed)


_init_zobrist()

SYMBOLS = "xo"
_MOVE = re.compile(r"^([a-z]\d{1,2})([-x*]?)([a-z]\d{1,2})$")


def max_plies_bound(rows, cols) -> int:
    """The longest possible game from the initial position (see the module docstring)."""
    rows = validate.integer(rows, "breakthrough: rows", 3, 26)
    cols = validate.integer(cols, "breakthrough: cols", 2, 26)
    return 2 * cols * (2 * rows - 5) + 1


def facts(params: dict) -> dict:
    rows, cols = params["rows"], params["cols"]
    return dict(players=("x", "o"), num_actions=rows * cols * 3, max_plies=max_plies_bound(rows, cols),
                planes_shape=(rows, cols, 2), symmetries=(0, 4), score_kind=SCORE_ADDITIVE_DEPTH)


cdef class BreakthroughState(State):
    def __cinit__(self):
        self._captured = NULL

    def __init__(self, info):
        self._init_base(info)
        self.rows = info.params["rows"]
        self.cols = info.params["cols"]
        self.nsq = self.rows * self.cols
        if self.nsq > BT_MAX_SQUARES:
            raise ValueError(f"breakthrough: a {self.rows}x{self.cols} board exceeds {BT_MAX_SQUARES} squares")
        self._undo_cap = self.max_plies + 1
        self._captured = <unsigned char*>malloc(self._undo_cap)
        if self._captured == NULL:
            raise MemoryError()
        self._nundo = 0
        self.nwords = (self.nsq + 63) // 64
        cdef int sq, c
        for sq in range(self.nsq):
            c = sq % self.cols
            self.edge[sq] = (1 if c > 0 else 0) | (2 if c < self.cols - 1 else 0)
            if sq < 64:
                if c > 0:
                    self.not_left |= (<uint64_t>1) << sq
                if c < self.cols - 1:
                    self.not_right |= (<uint64_t>1) << sq
            if sq < 2 * self.cols:
                self.board[sq] = 1
            elif sq >= self.nsq - 2 * self.cols:
                self.board[sq] = 0
            else:
                self.board[sq] = -1
        self._rebuild()

    def __dealloc__(self):
        if self._captured != NULL:
            free(self._captured)
            self._captured = NULL

    cdef void _rebuild(self) noexcept nogil:
        """Derive the piece counts, bit sets and hash from `board` and `_player`."""
        cdef int sq, v, w
        cdef hash_t h = 0
        self.count[0] = self.count[1] = 0
        for w in range(4):
            self.bits[0][w] = self.bits[1][w] = 0
        for sq in range(self.nsq):
            v = self.board[sq]
            if v >= 0:
                h ^= ZOBRIST[sq][v]
                self.count[v] += 1
                self.bits[v][sq >> 6] |= (<uint64_t>1) << (sq & 63)
        if self._player:
            h ^= ZOBRIST_SIDE
        self._hash = h

    # ---- hooks ----------------------------------------------------------------------------------
    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        cdef signed char* b = self.board
        cdef signed char p = <signed char>self._player
        cdef int step = self.cols if p else -self.cols
        cdef int w, sq, t, l, r, n = 0
        cdef uint64_t m
        if self.nwords == 1:
            return self._legal_actions_64(out)
        # The mover's pieces in ascending square order give sorted actions. No piece of the mover
        # stands on its goal row in a non-terminal state, so the target row is always on the board.
        for w in range(self.nwords):
            m = self.bits[p][w]
            while m:
                sq = (w << 6) + __builtin_ctzll(m)
                m &= m - 1
                t = sq + step
                # Branchless: write each candidate, keep it by advancing n. A diagonal off the board
                # (edge bit 0) reads b[t] instead of a square outside the board, and is dropped.
                l = self.edge[sq] & 1
                r = self.edge[sq] >> 1
                out[n] = 3 * sq
                n += l & (b[t - l] != p)
                out[n] = 3 * sq + 1
                n += b[t] < 0
                out[n] = 3 * sq + 2
                n += r & (b[t + r] != p)
        return n

    cdef inline int _legal_actions_64(self, action_t* out) noexcept nogil:
        """`legal_actions` for boards of at most 64 squares: one word per player, whole-board shifts.

        Bit sq of a shifted set tells about the square one row ahead of sq (and one column aside). The
        mover has no piece on its goal row, so the squares looked at are always on the board.
        """
        cdef int p = self._player
        cdef int cols = self.cols
        cdef uint64_t mine = self.bits[p][0]
        cdef uint64_t empty = ~(mine | self.bits[1 - p][0])
        cdef uint64_t free_ = ~mine               # empty or the opponent's: a diagonal may go there
        cdef uint64_t S, L, R, A
        if p == 0:                                 # x moves up: sq -> sq - cols (+ d - 1)
            S = mine & (empty << cols)
            L = mine & self.not_left & (free_ << (cols + 1))
            R = mine & self.not_right & (free_ << (cols - 1))
        else:                                      # o moves down: sq -> sq + cols (+ d - 1)
            S = mine & (empty >> cols)
            L = mine & self.not_left & (free_ >> (cols - 1))
            R = mine & self.not_right & (free_ >> (cols + 1))
        A = S | L | R
        cdef int sq, n = 0
        while A:
            sq = __builtin_ctzll(A)
            A &= A - 1
            out[n] = 3 * sq
            n += <int>((L >> sq) & 1)
            out[n] = 3 * sq + 1
            n += <int>((S >> sq) & 1)
            out[n] = 3 * sq + 2
            n += <int>((R >> sq) & 1)
        return n

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int p = self._player
        cdef int q = 1 - p
        cdef int sq = a // 3
        cdef int t = sq + (a - 3 * sq) - 1 + (self.cols if p else -self.cols)
        cdef bint cap = self.board[t] == q
        self._captured[self._nundo] = cap
        self._nundo += 1
        self._hash ^= ZOBRIST[sq][p] ^ ZOBRIST[t][p] ^ ZOBRIST_SIDE
        self.bits[p][sq >> 6] ^= (<uint64_t>1) << (sq & 63)
        self.bits[p][t >> 6] ^= (<uint64_t>1) << (t & 63)
        if cap:
            self._hash ^= ZOBRIST[t][q]
            self.count[q] -= 1
            self.bits[q][t >> 6] ^= (<uint64_t>1) << (t & 63)
        self.board[sq] = -1
        self.board[t] = <signed char>p
        self._player = q
        if (t < self.cols if p == 0 else t >= self.nsq - self.cols) or self.count[q] == 0:
            self._terminal = True
            self._result = RESULT_FIRST_WINS if p == 0 else RESULT_SECOND_WINS
        elif self._ply >= self.max_plies:
            self._terminal = True
            self._result = RESULT_DRAW

    cdef void _do_undo(self, action_t a) noexcept nogil:
        cdef int p = self._player              # the mover of `a`
        cdef int q = 1 - p
        cdef int sq = a // 3
        cdef int t = sq + (a - 3 * sq) - 1 + (self.cols if p else -self.cols)
        self._nundo -= 1
        cdef bint cap = self._captured[self._nundo]
        self.board[sq] = <signed char>p
        self.bits[p][sq >> 6] ^= (<uint64_t>1) << (sq & 63)
        self.bits[p][t >> 6] ^= (<uint64_t>1) << (t & 63)
        if cap:
            self.count[q] += 1
            self.bits[q][t >> 6] ^= (<uint64_t>1) << (t & 63)
            self.board[t] = <signed char>q
        else:
            self.board[t] = -1

    cdef void encode(self, float* out) noexcept nogil:
        cdef int r, c, er, v, i
        cdef int p = self._player
        for r in range(self.rows):
            er = r if p == 0 else self.rows - 1 - r
            for c in range(self.cols):
                v = self.board[r * self.cols + c]
                i = 2 * (er * self.cols + c)
                out[i] = 1.0 if v == p else 0.0
                out[i + 1] = 1.0 if (v >= 0 and v != p) else 0.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef BreakthroughState d = <BreakthroughState>dst
        memcpy(d.board, self.board, self.nsq)
        d.count[0] = self.count[0]
        d.count[1] = self.count[1]
        d.bits = self.bits
        memcpy(d._captured, self._captured, self._nundo)
        d._nundo = self._nundo

    # ---- text ---------------------------------------------------------------------------------------
    def _grid(self):
        return [[self.board[r * self.cols + c] for c in range(self.cols)] for r in range(self.rows)]

    def _parse_move_text(self, str text) -> int:
        m = _MOVE.match(text.lower())
        if not m:
            raise InvalidMoveError(
                f"breakthrough: malformed move {text!r} (expected from and to squares, e.g. 'a2a3', "
                f"'a2-a3', 'a2xb3' or 'a2*b3')")
        try:
            fr, fc = bt.parse_square(m.group(1), self.rows, self.cols, "from-square")
            tr, tc = bt.parse_square(m.group(3), self.rows, self.cols, "to-square")
        except InvalidMoveError as err:
            raise InvalidMoveError(f"breakthrough: move {text!r}: {err}") from None
        forward = -1 if self._player == 0 else 1
        if tr - fr != forward or abs(tc - fc) > 1:
            raise InvalidMoveError(
                f"breakthrough: {text!r} is not a one-step forward move for {SYMBOLS[self._player]} "
                f"(to move; {SYMBOLS[self._player]} moves {'up' if self._player == 0 else 'down'})")
        return (fr * self.cols + fc) * 3 + (tc - fc + 1)

    def _move_text(self, int action) -> str:
        sq, d = divmod(action, 3)
        r, c = divmod(sq, self.cols)
        tr, tc = r + (-1 if self._player == 0 else 1), c + d - 1
        if not (0 <= tr < self.rows and 0 <= tc < self.cols):
            raise InvalidMoveError(
                f"breakthrough: action {action} leads off the board for {SYMBOLS[self._player]} "
                f"(from {bt.square_name(r, c, self.rows)})")
        return bt.square_name(r, c, self.rows) + bt.square_name(tr, tc, self.rows)

    def _position_text(self) -> str:
        return f"{bt.format_board(self._grid(), SYMBOLS)} {SYMBOLS[self._player]} {self._ply}"

    def _set_position_text(self, str text) -> None:
        name = self.game.spec
        board, side, ply = bt.split_position(text, name, SYMBOLS)
        grid = bt.parse_board(board, self.rows, self.cols, SYMBOLS, name)
        flat = [v for row in grid for v in row]
        if ply is None:
            ply = 0
        if ply > self.max_plies:
            raise InvalidPositionError(
                f"{name}: ply {ply} in {text!r} exceeds the ply cap {self.max_plies}")
        nx, no = flat.count(0), flat.count(1)
        if nx == 0 and no == 0:
            raise InvalidPositionError(f"{name}: position {text!r} has no pieces")
        x_home = 0 in flat[:self.cols]                 # x on its goal row (the top row)
        o_home = 1 in flat[self.nsq - self.cols:]      # o on its goal row (the bottom row)
        if x_home and o_home:
            raise InvalidPositionError(
                f"{name}: both players stand on their goal rows in {text!r}")
        # Validation done: set the state.
        cdef int sq
        for sq in range(self.nsq):
            self.board[sq] = flat[sq]
        self._player = side
        self._ply = ply
        self._nundo = 0
        self._rebuild()
        self._terminal, self._result = True, RESULT_DRAW
        if x_home or no == 0:
            self._result = RESULT_FIRST_WINS
        elif o_home or nx == 0:
            self._result = RESULT_SECOND_WINS
        elif ply >= self.max_plies:
            pass
        else:
            self._terminal = False
            if not self.legal_actions_list():     # cannot happen (see the module docstring)
                self._terminal = True
                self._result = RESULT_SECOND_WINS if side == 0 else RESULT_FIRST_WINS

    def _drawing(self) -> str:
        if self._terminal:
            footer = f"game over: {self.result()} (ply {self._ply})"
        else:
            footer = f"{SYMBOLS[self._player]} to move (ply {self._ply})"
        return bt.draw_grid(self._grid(), SYMBOLS, self.rows, self.cols, footer)

    def _transform_action(self, int sym, int action) -> int:
        if not 0 <= action < self.num_actions:
            raise InvalidMoveError(f"action id {action} is out of range [0, {self.num_actions})")
        if sym == 0:
            return action
        if sym == 4:
            sq, d = divmod(action, 3)
            r, c = divmod(sq, self.cols)
            return (r * self.cols + self.cols - 1 - c) * 3 + 2 - d
        raise GameError(f"breakthrough: symmetry {sym} is not a symmetry of the game (allowed: 0, 4)")
