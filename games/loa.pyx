"""Lines of Action (Claude Soucie), Computer Olympiad rules, on 8x8 (default) or 6x6.

Start: black (``x``, player 0) on the top and bottom rows without the corners (b1-g1 and b8-g8 on
8x8), white (``o``, player 1) on the left and right columns without the corners (a2-a7, h2-h7).
Black moves first. (On 6x6: b1-e1, b6-e6 against a2-a5, f2-f5.)

Rules implemented:
- A piece moves in a straight line (horizontally, vertically or diagonally) exactly as many squares
  as there are pieces of both colours on that whole line (the moving piece included).
- It may jump over its own pieces but not over enemy pieces; it may land on an enemy piece, which is
  captured (removed), but not on an own piece.
- A player whose pieces all form one group (8-connected: orthogonal and diagonal neighbours) wins.
  A player reduced to a single piece is connected. After a move, if both players are connected (a
  capture can connect the opponent), the game is a draw (Olympiad rule); if only one is, that one
  wins, even the opponent of the mover.
- A player without a legal move must pass: ``pass`` is then the only legal action, and it is a ply.
- Threefold repetition: the same position (pieces and side to move) for the third time is a draw.
  Only positions played in this state's history count (a position set from text starts a new
  history), and only positions since the last capture can repeat. A win on the move takes
  precedence over a repetition.
- Ply cap: 500 plies, a draw.

Terminal evaluation: additive depth over the 500-ply cap.

Actions: ``square * 8 + direction`` with ``square = r * n + c`` (row 0 at the top) and directions
0 N (up), 1 NE, 2 E, 3 SE, 4 S, 5 SW, 6 W, 7 NW; the distance is given by the position. ``pass`` is
``n * n * 8``. So ``num_actions = n * n * 8 + 1``; ``max_legal`` is 8 moves for each of the (at most
12, on 6x6 8) pieces of the mover.

Notation: from-square, separator, to-square: ``b1-b3``, ``c1xa3`` (a1 is the bottom-left square;
the same strings as OpenSpiel's), and ``pass``. Parsing accepts either separator (``-``, ``x``) or
none, and refuses a destination that is not where that piece would land in this position.

Position text: ``BOARD SIDE PLY``, rows top to bottom, ``x``/``o``/``.``/digit runs, e.g. the 6x6
start ``1xxxx1/o4o/o4o/o4o/o4o/1xxxx1 x 0`` (the ply may be omitted on input: then 0). Parsing
refuses a side without pieces, more pieces per side than at the start, and a ply past the cap; a
position where a player is connected is terminal (both: a draw).

Encoding: (n, n, 2) planes [mover's pieces, opponent's pieces], board as it stands (LOA is not
directional). Symmetries: identity, rotation by 180 degrees, mirror columns, mirror rows: the
dihedral maps that keep each colour's start squares (the quarter turns and transposes swap them).

Hash: Zobrist of the pieces and side to move, plus a key for the ply: a repetition is a different
state (it brings the draw nearer, and the additive-depth score depends on the ply), and the same
pieces at different plies must not share a hash. The repetition test uses the key without the ply.
The history key (``history_key``; the searches use ``search_key = zobrist_hash ^ history_key``) is the
multiset of the positions since the last capture (the positions that can still recur).

Engine: one 64-bit bitboard per player; the line counts are popcounts of precomputed line masks;
connection is tested by a bitboard flood fill (a 3x3 dilation is a vertical dilation of a
horizontal one).

Other engines: OpenSpiel's ``lines_of_action`` (8x8 only) has the same moves, but: a move that
connects the mover wins even if it connects the opponent too; a position whose board (whatever the
side to move) occurred before is an immediate draw; a player without moves loses; its cap is 1000.
"""
import re

from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from games._state cimport State, SCORE_ADDITIVE_DEPTH, RESULT_FIRST_WINS, RESULT_SECOND_WINS, RESULT_DRAW
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t, popcount64, mix64

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

from games import boardtext as bt
from games import validate
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError
from games.symmetry import map_square

cdef enum:
    REASON_NONE = 0
    REASON_CONNECTED = 1
    REASON_BOTH = 2
    REASON_REPETITION = 3
    REASON_CAP = 4
    MAX_PLIES = 500

_REASONS = {REASON_BOTH: "simultaneous connection", REASON_REPETITION: "threefold repetition"}

SYMBOLS = "xo"
_DIRS = ((-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1))
_MOVE = re.compile(r"^([a-z]\d{1,2})\s*([-x]?)\s*([a-z]\d{1,2})$")

# ---- tables (index 0: 6x6, 1: 8x8) ---------------------------------------------------------------
cdef uint64_t LINE[2][64][4]           # the whole line through a square: 0 vertical, 1 NE-SW,
                                       # 2 horizontal, 3 NW-SE (= direction & 3)
cdef signed char DEST[2][64][8][8]     # [sq][dir][dist - 1]: the square reached, or -1 off the board
cdef uint64_t BETW[2][64][64]          # squares strictly between two aligned squares
cdef uint64_t FULL[2], NOT_LEFT[2], NOT_RIGHT[2]

cdef hash_t ZP[2][64]
cdef hash_t ZSIDE
cdef hash_t ZPLY[512]


def _init_tables():
    cdef int sz, n, r, c, d, k, rr, cc, t, sq
    cdef uint64_t m
    cdef uint64_t seed = 0x10A5EED
    for sz, n in ((0, 6), (1, 8)):
        FULL[sz] = ((<uint64_t>1) << (n * n)) - 1
        NOT_LEFT[sz] = NOT_RIGHT[sz] = 0
        for sq in range(64):
            for d in range(8):
                for k in range(8):
                    DEST[sz][sq][d][k] = -1
            for t in range(64):
                BETW[sz][sq][t] = 0
            for d in range(4):
                LINE[sz][sq][d] = 0
        for r in range(n):
            for c in range(n):
                sq = r * n + c
                if c > 0:
                    NOT_LEFT[sz] |= (<uint64_t>1) << sq
                if c < n - 1:
                    NOT_RIGHT[sz] |= (<uint64_t>1) << sq
                for d in range(8):
                    dr, dc = _DIRS[d]
                    m = 0
                    rr, cc, k = r + dr, c + dc, 0
                    while 0 <= rr < n and 0 <= cc < n:
                        t = rr * n + cc
                        DEST[sz][sq][d][k] = t
                        BETW[sz][sq][t] = m           # the squares passed before t
                        m |= (<uint64_t>1) << t
                        rr += dr
                        cc += dc
                        k += 1
                    LINE[sz][sq][d & 3] |= m
                for d in range(4):
                    LINE[sz][sq][d] |= (<uint64_t>1) << sq
    for k in range(2):
        for sq in range(64):
            ZP[k][sq] = splitmix64(&seed)
    global ZSIDE
    ZSIDE = splitmix64(&seed)
    for k in range(512):
        ZPLY[k] = splitmix64(&seed)


_init_tables()


def _max_pieces(n):
    return 2 * (n - 2)


def facts(params: dict) -> dict:
    n = params.get("board", 8)
    return dict(players=("x", "o"), num_actions=n * n * 8 + 1, max_plies=MAX_PLIES,
                planes_shape=(n, n, 2), symmetries=(0, 2, 4, 5), score_kind=SCORE_ADDITIVE_DEPTH,
                max_legal=8 * _max_pieces(n), extra={"history_dependent": True})


cdef inline int _popc(uint64_t x) noexcept nogil:
    return popcount64(x)


cdef class LinesOfActionState(State):
    """A Lines of Action position (see the module docstring)."""

    def __cinit__(self):
        self._undo = NULL

    def __init__(self, info):
        self._init_base(info)
        cdef int n = info.params.get("board", 8)
        if n != 6 and n != 8:
            raise ValueError(f"lines_of_action: board {n} is not supported (6 or 8)")
        if self.max_plies >= 512:
            raise ValueError("lines_of_action: ply cap too large for the ply keys")
        self.n = n
        self.sz = 1 if n == 8 else 0
        self.pass_action = n * n * 8
        self.full = FULL[self.sz]
        self._undo_cap = self.max_plies + 1
        self._undo = <LoaUndo*>malloc(sizeof(LoaUndo) * self._undo_cap)
        if self._undo == NULL:
            raise MemoryError()
        self._nundo = 0
        self._irrev = 0
        cdef int i
        self.pcs[0] = self.pcs[1] = 0
        for i in range(1, n - 1):
            self.pcs[0] |= ((<uint64_t>1) << i) | ((<uint64_t>1) << ((n - 1) * n + i))
            self.pcs[1] |= ((<uint64_t>1) << (i * n)) | ((<uint64_t>1) << (i * n + n - 1))
        self.reason = REASON_NONE
        self._rebuild()

    def __dealloc__(self):
        free(self._undo)
        self._undo = NULL

    # ---- internals ----------------------------------------------------------------------------------
    cdef void _rebuild(self) noexcept nogil:
        cdef uint64_t x
        cdef int k, b
        cdef hash_t h = 0
        for k in range(2):
            x = self.pcs[k]
            while x:
                b = __builtin_ctzll(x)
                x &= x - 1
                h ^= ZP[k][b]
        if self._player:
            h ^= ZSIDE
        self.rkey = h
        self._hash = h ^ ZPLY[self._ply]
        self._hist_key = mix64(h)

    cdef bint _connected(self, uint64_t x) noexcept nogil:
        """Whether the pieces x form one 8-connected group (at most one piece: yes)."""
        if (x & (x - 1)) == 0:
            return True
        cdef int n = self.n
        cdef uint64_t nl = NOT_LEFT[self.sz], nr = NOT_RIGHT[self.sz]
        cdef uint64_t g = x & (~x + 1)
        cdef uint64_t h, prev = 0
        while g != prev:
            prev = g
            h = g | ((g & nr) << 1) | ((g & nl) >> 1)
            g = (h | (h << n) | (h >> n)) & x
        return g == x

    cdef void _settle_connection(self, bint check_mover, bint check_other) noexcept nogil:
        """The win / draw by connection after a move of the player not to move now (or a position
        set: both checked), then the repetition and ply-cap draws."""
        cdef int mover = 1 - self._player
        cdef bint mc = check_mover and self._connected(self.pcs[mover])
        cdef bint oc = check_other and self._connected(self.pcs[self._player])
        cdef int k, count
        self._terminal = True
        if mc and oc:
            self._result = RESULT_DRAW
            self.reason = REASON_BOTH
            return
        if mc or oc:
            self.reason = REASON_CONNECTED
            self._result = RESULT_FIRST_WINS if (mover == 0) == mc else RESULT_SECOND_WINS
            return
        self._result = RESULT_DRAW
        count = 0
        k = 2
        while self._nundo - k >= self._irrev:
            if self._undo[self._nundo - k].rkey == self.rkey:
                count += 1
                if count >= 2:
                    self.reason = REASON_REPETITION
                    return
            k += 2
        if self._ply >= self.max_plies:
            self.reason = REASON_CAP
            return
        self._terminal = False
        self.reason = REASON_NONE

    # ---- hooks --------------------------------------------------------------------------------------
    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        cdef int p = self._player
        cdef uint64_t mine = self.pcs[p]
        cdef uint64_t opp = self.pcs[1 - p]
        cdef uint64_t occ = mine | opp
        cdef uint64_t x = mine
        cdef int sz = self.sz
        cdef int sq, d, t, n = 0
        cdef int cnt[4]
        while x:
            sq = __builtin_ctzll(x)
            x &= x - 1
            cnt[0] = _popc(occ & LINE[sz][sq][0])
            cnt[1] = _popc(occ & LINE[sz][sq][1])
            cnt[2] = _popc(occ & LINE[sz][sq][2])
            cnt[3] = _popc(occ & LINE[sz][sq][3])
            for d in range(8):
                t = DEST[sz][sq][d][cnt[d & 3] - 1]
                if t < 0 or (mine >> t) & 1 or (opp & BETW[sz][sq][t]):
                    continue
                out[n] = sq * 8 + d
                n += 1
        if n == 0:
            out[0] = self.pass_action
            return 1
        return n

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int p = self._player
        cdef int q = 1 - p
        cdef LoaUndo* u = &self._undo[self._nundo]
        u.pcs0 = self.pcs[0]
        u.pcs1 = self.pcs[1]
        u.rkey = self.rkey
        u.irrev = self._irrev
        u.reason = self.reason
        self._nundo += 1
        cdef hash_t rk = self.rkey ^ ZSIDE
        cdef int sq, d, to
        cdef uint64_t bto
        cdef bint moved = a != self.pass_action
        cdef bint captured = False
        if moved:
            sq = a >> 3
            d = a & 7
            to = DEST[self.sz][sq][d][_popc((self.pcs[0] | self.pcs[1]) & LINE[self.sz][sq][d & 3]) - 1]
            bto = (<uint64_t>1) << to
            self.pcs[p] ^= ((<uint64_t>1) << sq) | bto
            rk ^= ZP[p][sq] ^ ZP[p][to]
            if self.pcs[q] & bto:
                self.pcs[q] ^= bto
                rk ^= ZP[q][to]
                captured = True
                self._irrev = self._nundo
        self.rkey = rk
        self._player = q
        self._hash = rk ^ ZPLY[self._ply]
        # history key: the multiset of the positions since the last capture (those that can recur)
        if captured:
            self._hist_key = mix64(rk)
        else:
            self._hist_key = self._hist_key + mix64(rk)
        # Without a capture the opponent's pieces did not change: they were not connected before.
        self._settle_connection(moved, captured)

    cdef void _do_undo(self, action_t a) noexcept nogil:
        self._nundo -= 1
        cdef LoaUndo* u = &self._undo[self._nundo]
        self.pcs[0] = u.pcs0
        self.pcs[1] = u.pcs1
        self.rkey = u.rkey
        self._irrev = u.irrev
        self.reason = u.reason

    cdef void encode(self, float* out) noexcept nogil:
        cdef int nn = self.n * self.n
        cdef uint64_t me = self.pcs[self._player]
        cdef uint64_t opp = self.pcs[1 - self._player]
        cdef int i
        for i in range(nn):
            out[2 * i] = 1.0 if (me >> i) & 1 else 0.0
            out[2 * i + 1] = 1.0 if (opp >> i) & 1 else 0.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef LinesOfActionState d = <LinesOfActionState>dst
        d.pcs = self.pcs
        d.rkey = self.rkey
        d._irrev = self._irrev
        d.reason = self.reason
        memcpy(d._undo, self._undo, sizeof(LoaUndo) * self._nundo)
        d._nundo = self._nundo

    # ---- Python helpers -----------------------------------------------------------------------------
    def _grid(self):
        n = self.n
        grid = []
        for r in range(n):
            row = []
            for c in range(n):
                i = r * n + c
                row.append(0 if (self.pcs[0] >> i) & 1 else (1 if (self.pcs[1] >> i) & 1 else -1))
            grid.append(row)
        return grid

    def piece_counts(self) -> tuple:
        """(pieces of x, pieces of o)."""
        return _popc(self.pcs[0]), _popc(self.pcs[1])

    def is_connected(self, player) -> bool:
        """Whether all of ``player``'s pieces form one group (``player``: 0 or 1)."""
        return self._connected(self.pcs[<int>validate.integer(player, "lines_of_action: player", 0, 1)])

    def _termination_reason(self):
        return _REASONS.get(self.reason)

    def _destination(self, int action):
        """The square index an action's piece would land on here (-1 off the board)."""
        sq, d = divmod(action, 8)
        cdef uint64_t occ = self.pcs[0] | self.pcs[1]
        occ |= (<uint64_t>1) << sq                   # no piece on sq: as if there were one
        cdef int cnt = _popc(occ & LINE[self.sz][sq][d & 3])
        return DEST[self.sz][sq][d][cnt - 1]

    # ---- text ---------------------------------------------------------------------------------------
    def _parse_move_text(self, str text) -> int:
        name = self.game.spec
        low = text.lower()
        if low == "pass":
            return self.pass_action
        m = _MOVE.match(low)
        if not m:
            raise InvalidMoveError(
                f"{name}: malformed move {text!r} (expected from and to squares, e.g. 'b1-b3' or "
                f"'c1xa3', or 'pass')")
        n = self.n
        try:
            fr, fc = bt.parse_square(m.group(1), n, n, "from-square")
            tr, tc = bt.parse_square(m.group(3), n, n, "to-square")
        except InvalidMoveError as err:
            raise InvalidMoveError(f"{name}: move {text!r}: {err}") from None
        dr, dc = tr - fr, tc - fc
        if (dr == 0 and dc == 0) or not (dr == 0 or dc == 0 or abs(dr) == abs(dc)):
            raise InvalidMoveError(
                f"{name}: {text!r} is not a move along a line (row, column or diagonal)")
        step = ((dr > 0) - (dr < 0), (dc > 0) - (dc < 0))
        action = (fr * n + fc) * 8 + _DIRS.index(step)
        if self._destination(action) != tr * n + tc:
            raise IllegalMoveError(
                f"illegal move {text!r} in position {self.position()!r}: a piece on "
                f"{m.group(1)} moves as many squares as there are pieces on its line")
        return action

    def _move_text(self, int action) -> str:
        if action == self.pass_action:
            return "pass"
        n = self.n
        sq, d = divmod(action, 8)
        t = self._destination(action)
        if t < 0:
            raise InvalidMoveError(
                f"{self.game.spec}: action {action} leads off the board (from "
                f"{bt.square_name(sq // n, sq % n, n)}, direction {d})")
        mover = self._player
        if (self.pcs[mover] >> sq) & 1 == 0 and (self.pcs[1 - mover] >> sq) & 1:
            mover = 1 - mover
        sep = "x" if (self.pcs[1 - mover] >> t) & 1 else "-"
        return bt.square_name(sq // n, sq % n, n) + sep + bt.square_name(t // n, t % n, n)

    def _position_text(self) -> str:
        return f"{bt.format_board(self._grid(), SYMBOLS)} {SYMBOLS[self._player]} {self._ply}"

    def _set_position_text(self, str text) -> None:
        name = self.game.spec
        n = self.n
        board, side, ply = bt.split_position(text, name, SYMBOLS)
        grid = bt.parse_board(board, n, n, SYMBOLS, name)
        flat = [v for row in grid for v in row]
        if ply is None:
            ply = 0
        if ply > self.max_plies:
            raise InvalidPositionError(f"{name}: ply {ply} in {text!r} exceeds the ply cap {self.max_plies}")
        counts = (flat.count(0), flat.count(1))
        for p in (0, 1):
            if counts[p] == 0:
                raise InvalidPositionError(f"{name}: {SYMBOLS[p]} has no pieces in {text!r}")
            if counts[p] > _max_pieces(n):
                raise InvalidPositionError(
                    f"{name}: {SYMBOLS[p]} has {counts[p]} pieces in {text!r} (at most {_max_pieces(n)})")
        cdef uint64_t b0 = 0, b1 = 0
        cdef int i
        for i in range(n * n):
            if flat[i] == 0:
                b0 |= (<uint64_t>1) << i
            elif flat[i] == 1:
                b1 |= (<uint64_t>1) << i
        self.pcs[0] = b0
        self.pcs[1] = b1
        self._player = side
        self._ply = ply
        self._nundo = 0
        self._irrev = 0
        self._rebuild()
        self._settle_connection(True, True)

    def _drawing(self) -> str:
        if self._terminal:
            reason = self._termination_reason()
            footer = f"game over: {self.result()}" + (f" ({reason})" if reason else "")
        else:
            footer = f"{SYMBOLS[self._player]} to move"
        footer += f" (ply {self._ply})"
        return bt.draw_grid(self._grid(), SYMBOLS, self.n, self.n, footer)

    def _transform_action(self, int sym, int action) -> int:
        if not 0 <= action < self.num_actions:
            raise InvalidMoveError(f"action id {action} is out of range [0, {self.num_actions})")
        if action == self.pass_action:
            return action
        n = self.n
        sq, d = divmod(action, 8)
        r, c = divmod(sq, n)
        dr, dc = _DIRS[d]
        r0, c0 = map_square(sym, r, c, n, n)
        r1, c1 = map_square(sym, r + dr, c + dc, n, n)
        return (r0 * n + c0) * 8 + _DIRS.index((r1 - r0, c1 - c0))
