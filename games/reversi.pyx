"""Reversi (Othello rules) on a 6x6, 8x8 (default) or 10x10 board; ``x`` (black, player 0) moves first.

Rules: a move places a disc so that it flanks, in at least one of the eight directions, a contiguous
line of opponent discs ending on one of the mover's discs; every such line flips. A player without
such a move must pass: then ``pass`` is the only legal action, and it is a ply (the player to move
changes, the ply count grows). The game ends when neither player can move (full board, or both
blocked); more discs wins, equal counts draw.

Start: the four centre squares, in OpenSpiel's orientation: with row 0 at the top, the top-left
centre square and the bottom-right one are ``o``, the other two ``x``. In this project's notation
(``a1`` is the *bottom*-left square) that is, on 8x8, ``o`` on d5 and e4, ``x`` on d4 and e5.

Actions: the square index ``row * n + col`` with row 0 at the top (the same ids as OpenSpiel's
``othello`` on 8x8), and ``pass`` = ``n * n``. Notation: square names (``a1`` bottom-left ..) and
``pass``, case-insensitive. Position text: ``BOARD SIDE [PLY]``, rows top to bottom separated by
``/``, ``x``/``o``/``.``/digit runs, e.g. ``8/8/8/3ox3/3xo3/8/8/8 x``; the ply defaults to the
number of discs minus 4 (it is written only when it differs from that).

Terminal evaluation: the natural margin, (discs of x - discs of o) / (n * n). Ply cap: 2 * (n*n - 4)
plies (never reached: a placement is followed by at most one pass). Symmetries: identity, rotation
by 180 degrees, transpose and anti-transpose (the dihedral maps that fix the start position).

Engine: one 128-bit bitboard per player; move generation by directional shift-fills, flips by
precomputed rays; undo restores a saved copy of the boards, so it is exact and O(1).
"""
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from games._state cimport State, SCORE_NATURAL, RESULT_FIRST_WINS, RESULT_SECOND_WINS, RESULT_DRAW
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t

from games import boardtext as bt
from games.errors import InvalidPositionError
from games.symmetry import map_square

cdef enum:
    MAXSQ = 100          # squares of the largest board (10x10)

cdef hash_t ZOBRIST[MAXSQ][2]
cdef hash_t ZFLIP[MAXSQ]          # ZOBRIST[i][0] ^ ZOBRIST[i][1]: a disc on i changing colour
cdef hash_t ZOBRIST_SIDE

# Ray tables for the three sizes. Directions 0-3 increase the square index (E, S, SE, SW),
# directions 4-7 decrease it (W, N, NW, NE).
cdef bits_t RAYS6[36 * 8]
cdef bits_t RAYS8[64 * 8]
cdef bits_t RAYS10[100 * 8]
cdef int DR[8]
cdef int DC[8]
_DIRS = ((0, 1), (1, 0), (1, 1), (1, -1), (0, -1), (-1, 0), (-1, -1), (-1, 1))
for _k, (_dr, _dc) in enumerate(_DIRS):
    DR[_k] = _dr
    DC[_k] = _dc


cdef void _init_tables():
    cdef uint64_t seed = 0x0DE110
    cdef int i
    for i in range(MAXSQ):
        ZOBRIST[i][0] = splitmix64(&seed)
        ZOBRIST[i][1] = splitmix64(&seed)
        ZFLIP[i] = ZOBRIST[i][0] ^ ZOBRIST[i][1]
    global ZOBRIST_SIDE
    ZOBRIST_SIDE = splitmix64(&seed)
    _init_rays(RAYS6, 6)
    _init_rays(RAYS8, 8)
    _init_rays(RAYS10, 10)


cdef void _init_rays(bits_t* rays, int n):
    cdef int r, c, d, rr, cc
    cdef bits_t m
    for r in range(n):
        for c in range(n):
            for d in range(8):
                m = 0
                rr = r + DR[d]
                cc = c + DC[d]
                while 0 <= rr < n and 0 <= cc < n:
                    m |= (<bits_t>1) << (rr * n + cc)
                    rr += DR[d]
                    cc += DC[d]
                rays[(r * n + c) * 8 + d] = m


_init_tables()

SYMBOLS = "xo"


def facts(params: dict) -> dict:
    n = params.get("size", 8)
    return dict(players=("x", "o"), num_actions=n * n + 1, max_plies=2 * (n * n - 4),
                planes_shape=(n, n, 2), symmetries=(0, 2, 6, 7), score_kind=SCORE_NATURAL)


# ---- bitboard kernels ------------------------------------------------------------------------------

# The kernels are written once for a machine word (boards up to 8x8) and for the 128-bit type
# (10x10); the 64-bit versions run about twice as fast on 6x6 and 8x8.
ctypedef fused word_t:
    word64_t
    bits_t


cdef inline int _highest(word_t x) noexcept nogil:
    """Index of the highest set bit of x (x != 0)."""
    if word_t is word64_t:
        return 63 - rv_clz64(x)
    else:
        return rv_highest(x)


cdef inline word_t _mobility(word_t me, word_t opp, word_t full, word_t inner, int n) noexcept nogil:
    """The empty squares where the owner of `me` may place a disc (shift-fill in 8 directions)."""
    cdef word_t oi = opp & inner          # horizontal and diagonal lines never wrap across columns
    cdef word_t moves = 0
    cdef word_t t
    cdef int _k, steps = n - 3              # a flanked line has at most n - 2 discs
    cdef int s
    # East / west (shift 1).
    t = (me << 1) & oi
    for _k in range(steps):
        t |= (t << 1) & oi
    moves |= t << 1
    t = (me >> 1) & oi
    for _k in range(steps):
        t |= (t >> 1) & oi
    moves |= t >> 1
    # South / north (shift n): bits pushed past the board meet no disc and no empty square.
    s = n
    t = (me << s) & opp
    for _k in range(steps):
        t |= (t << s) & opp
    moves |= t << s
    t = (me >> s) & opp
    for _k in range(steps):
        t |= (t >> s) & opp
    moves |= t >> s
    # South-east / north-west (shift n + 1).
    s = n + 1
    t = (me << s) & oi
    for _k in range(steps):
        t |= (t << s) & oi
    moves |= t << s
    t = (me >> s) & oi
    for _k in range(steps):
        t |= (t >> s) & oi
    moves |= t >> s
    # South-west / north-east (shift n - 1).
    s = n - 1
    t = (me << s) & oi
    for _k in range(steps):
        t |= (t << s) & oi
    moves |= t << s
    t = (me >> s) & oi
    for _k in range(steps):
        t |= (t >> s) & oi
    moves |= t >> s
    return moves & full & ~(me | opp)


cdef inline word_t _flips(const bits_t* rays, int sq, word_t me, word_t opp) noexcept nogil:
    """The opponent discs flipped by a disc of `me` placed on `sq`."""
    cdef word_t f = 0
    cdef word_t r, x, b
    cdef int d, h
    cdef const bits_t* ray = rays + sq * 8
    for d in range(4):                     # towards higher indices: the nearest square is the lowest bit
        r = <word_t>ray[d]
        x = r & ~opp
        if x:
            b = x & (~x + 1)
            if b & me:
                f |= r & (b - 1)
    for d in range(4, 8):                  # towards lower indices: the nearest square is the highest bit
        r = <word_t>ray[d]
        x = r & ~opp
        if x:
            h = _highest[word_t](x)
            if (me >> h) & 1:
                f |= r & ~(((<word_t>2) << h) - 1)
    return f


cdef inline bits_t _mobility_n(bits_t me, bits_t opp, bits_t full, bits_t inner, int n) noexcept nogil:
    # Constant sizes let the compiler unroll the fill loops of the inlined kernel.
    if n == 8:
        return _mobility[word64_t](rv_lo(me), rv_lo(opp), rv_lo(full), rv_lo(inner), 8)
    if n == 6:
        return _mobility[word64_t](rv_lo(me), rv_lo(opp), rv_lo(full), rv_lo(inner), 6)
    return _mobility[bits_t](me, opp, full, inner, 10)


cdef inline bits_t _flips_n(const bits_t* rays, int sq, bits_t me, bits_t opp, int n) noexcept nogil:
    if n <= 8:
        return _flips[word64_t](rays, sq, rv_lo(me), rv_lo(opp))
    return _flips[bits_t](rays, sq, me, opp)


cdef inline void _settle(ReversiState s) noexcept nogil:
    """After a placement (or a position set): moves of the player to move, pass, or game over."""
    cdef int p = s._player
    cdef bits_t m = _mobility_n(s.discs[p], s.discs[1 - p], s._full, s._inner, s.n)
    cdef int d
    s._mob = m
    s._mob_next = 0
    s._terminal = False
    s._result = RESULT_DRAW
    if m:
        return
    m = _mobility_n(s.discs[1 - p], s.discs[p], s._full, s._inner, s.n)
    s._mob_next = m
    if m:
        return
    s._terminal = True
    d = rv_popcount(s.discs[0]) - rv_popcount(s.discs[1])
    s._result = RESULT_FIRST_WINS if d > 0 else (RESULT_SECOND_WINS if d < 0 else RESULT_DRAW)


cdef inline void _rehash(ReversiState s) noexcept nogil:
    """The Zobrist hash from scratch."""
    cdef int i
    cdef hash_t h = 0
    for i in range(s.nn):
        if (s.discs[0] >> i) & 1:
            h ^= ZOBRIST[i][0]
        elif (s.discs[1] >> i) & 1:
            h ^= ZOBRIST[i][1]
    if s._player:
        h ^= ZOBRIST_SIDE
    s._hash = h


cdef class ReversiState(State):
    def __init__(self, info):
        self._init_base(info)
        cdef int n = info.params.get("size", 8)
        if n != 6 and n != 8 and n != 10:
            raise ValueError(f"reversi: board size {n} is not supported (6, 8 or 10)")
        self.n = n
        self.nn = n * n
        if n == 6:
            self._rays = &RAYS6[0]
        elif n == 8:
            self._rays = &RAYS8[0]
        else:
            self._rays = &RAYS10[0]
        cdef int r, c
        self._full = 0
        self._inner = 0
        for r in range(n):
            for c in range(n):
                self._full |= (<bits_t>1) << (r * n + c)
                if 0 < c < n - 1:
                    self._inner |= (<bits_t>1) << (r * n + c)
        if self._undo == NULL:
            self._undo_cap = self.max_plies + 1
            self._undo = <ReversiUndo*>malloc(sizeof(ReversiUndo) * self._undo_cap)
            if self._undo == NULL:
                raise MemoryError()
        self._sp = 0
        cdef int a = n // 2 - 1, b = n // 2
        self.discs[0] = ((<bits_t>1) << (a * n + b)) | ((<bits_t>1) << (b * n + a))
        self.discs[1] = ((<bits_t>1) << (a * n + a)) | ((<bits_t>1) << (b * n + b))
        _rehash(self)
        _settle(self)

    def __dealloc__(self):
        if self._undo != NULL:
            free(self._undo)
            self._undo = NULL

    # ---- hooks ---------------------------------------------------------------------------------------
    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        if self._mob == 0:
            out[0] = self.nn
            return 1
        cdef uint64_t w = <uint64_t>rv_lo(self._mob)
        cdef int n = 0
        while w:
            out[n] = rv_ctz64(w)
            n += 1
            w &= w - 1
        w = rv_hi(self._mob)
        while w:
            out[n] = 64 + rv_ctz64(w)
            n += 1
            w &= w - 1
        return n

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int p = self._player
        cdef ReversiUndo* u = &self._undo[self._sp]
        u.discs0 = self.discs[0]
        u.discs1 = self.discs[1]
        u.mob = self._mob
        u.mob_next = self._mob_next
        self._sp += 1
        self._player = 1 - p
        if a == self.nn:                   # pass: the other player's moves are already known
            self._hash ^= ZOBRIST_SIDE
            self._mob = self._mob_next
            self._mob_next = 0
            return
        cdef bits_t f = _flips_n(self._rays, a, self.discs[p], self.discs[1 - p], self.n)
        self.discs[p] |= f | ((<bits_t>1) << a)
        self.discs[1 - p] &= ~f
        cdef hash_t h = self._hash ^ ZOBRIST[a][p] ^ ZOBRIST_SIDE
        cdef uint64_t w = <uint64_t>rv_lo(f)
        while w:
            h ^= ZFLIP[rv_ctz64(w)]
            w &= w - 1
        w = rv_hi(f)
        while w:
            h ^= ZFLIP[64 + rv_ctz64(w)]
            w &= w - 1
        self._hash = h
        _settle(self)

    cdef void _do_undo(self, action_t a) noexcept nogil:
        self._sp -= 1
        cdef ReversiUndo* u = &self._undo[self._sp]
        self.discs[0] = u.discs0
        self.discs[1] = u.discs1
        self._mob = u.mob
        self._mob_next = u.mob_next

    cdef double natural_score(self) noexcept nogil:
        return <double>(rv_popcount(self.discs[0]) - rv_popcount(self.discs[1])) / self.nn

    cdef void encode(self, float* out) noexcept nogil:
        cdef int i
        cdef bits_t me = self.discs[self._player]
        cdef bits_t opp = self.discs[1 - self._player]
        for i in range(self.nn):
            out[2 * i] = 1.0 if (me >> i) & 1 else 0.0
            out[2 * i + 1] = 1.0 if (opp >> i) & 1 else 0.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef ReversiState d = <ReversiState>dst
        d.discs[0] = self.discs[0]
        d.discs[1] = self.discs[1]
        d._mob = self._mob
        d._mob_next = self._mob_next
        memcpy(d._undo, self._undo, sizeof(ReversiUndo) * self._sp)
        d._sp = self._sp

    # ---- text ----------------------------------------------------------------------------------------
    def _grid(self):
        cdef int r, c, i
        grid = []
        for r in range(self.n):
            row = []
            for c in range(self.n):
                i = r * self.n + c
                row.append(0 if (self.discs[0] >> i) & 1 else (1 if (self.discs[1] >> i) & 1 else -1))
            grid.append(row)
        return grid

    def disc_counts(self) -> tuple:
        """(discs of x, discs of o)."""
        return rv_popcount(self.discs[0]), rv_popcount(self.discs[1])

    def _parse_move_text(self, str text) -> int:
        if text.strip().lower() == "pass":
            return self.nn
        r, c = bt.parse_square(text, self.n, self.n)
        return r * self.n + c

    def _move_text(self, int action) -> str:
        if action == self.nn:
            return "pass"
        return bt.square_name(action // self.n, action % self.n, self.n)

    def _position_text(self) -> str:
        text = f"{bt.format_board(self._grid(), SYMBOLS)} {SYMBOLS[self._player]}"
        nx, no = self.disc_counts()
        if self._ply != nx + no - 4:
            text += f" {self._ply}"
        return text

    def _set_position_text(self, str text) -> None:
        cdef int n = self.n
        name = "reversi" if n == 8 else f"reversi(size={n})"
        board, side, ply = bt.split_position(text, name, SYMBOLS)
        grid = bt.parse_board(board, n, n, SYMBOLS, name)
        flat = [v for row in grid for v in row]
        nx, no = flat.count(0), flat.count(1)
        a, b = n // 2 - 1, n // 2
        centre = [a * n + a, a * n + b, b * n + a, b * n + b]
        empty_centre = [bt.square_name(i // n, i % n, n) for i in centre if flat[i] < 0]
        if empty_centre:
            raise InvalidPositionError(
                f"{name}: position {text!r} is unreachable: the centre square(s) "
                f"{', '.join(empty_centre)} must hold discs")
        discs = nx + no
        if ply is None:
            ply = discs - 4
        elif not discs - 4 <= ply <= 2 * (discs - 4):
            raise InvalidPositionError(
                f"{name}: ply {ply} in {text!r} does not match the {discs} discs on the board "
                f"(expected {discs - 4} to {2 * (discs - 4)})")
        elif ply % 2 != side:
            raise InvalidPositionError(
                f"{name}: ply {ply} in {text!r} has {SYMBOLS[ply % 2]} to move, not {SYMBOLS[side]}")
        # Validation done: set the state.
        cdef int i
        cdef bits_t d0 = 0, d1 = 0
        for i in range(n * n):
            if flat[i] == 0:
                d0 |= (<bits_t>1) << i
            elif flat[i] == 1:
                d1 |= (<bits_t>1) << i
        self.discs[0] = d0
        self.discs[1] = d1
        self._player = side
        self._ply = ply
        self._sp = 0
        _rehash(self)
        _settle(self)

    def _drawing(self) -> str:
        nx, no = self.disc_counts()
        counts = f"(x {nx}, o {no})"
        if self._terminal:
            footer = f"game over: {self.result()} {counts}"
        elif self._mob == 0:
            footer = f"{SYMBOLS[self._player]} to move: must pass {counts}"
        else:
            footer = f"{SYMBOLS[self._player]} to move {counts}"
        return bt.draw_grid(self._grid(), SYMBOLS, self.n, self.n, footer)

    def _transform_action(self, int sym, int action) -> int:
        if action == self.nn:
            return action
        r, c = map_square(sym, action // self.n, action % self.n, self.n, self.n)
        return r * self.n + c
