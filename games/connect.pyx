"""k-in-a-row stone placement games: outer-open gomoku and connect6, on an N x N board.

``outer_open_gomoku(size=N)`` (N in 7..19, default 15): ``x`` (black, player 0) moves first, one
stone per ply; five **or more** in a row (horizontal, vertical or diagonal) wins; black's first stone
must lie on the two outermost lines of the board (row or column index 0, 1, N-2 or N-1); a full
board is a draw.

``connect6(size=N)`` (N in 7..25, default 19): ``x`` places one stone at ply 0, then each side places
two stones per turn. **Each stone is its own ply** (one action = one stone), so the player to move
is ``x, o, o, x, x, o, o, ...``; six **or more** in a row wins for the player who completes it, on
the first or the second stone of a pair; a full board is a draw.

Both: ply cap N*N (the board is full), terminal evaluation multiplicative depth, all eight dihedral
symmetries (the outer-open rule is invariant under them).

Actions: the square index ``row * N + col`` with row 0 at the *top* (as in OpenSpiel's gomoku).
Notation: square names ``a1`` (bottom-left) .. e.g. ``o15`` (top-right of 15x15), case-insensitive.
Position text: ``BOARD SIDE [PLY]``, rows top to bottom with FEN-like digit runs, e.g.
``7/7/7/3x3/7/7/7 o`` (the ply defaults to the number of stones and, if given, must equal it).
A position is accepted only if it is reachable as far as counts go: the number of stones of each
colour and the side to move must match the turn structure; for gomoku some ``x`` stone must lie on
the outer lines; at most one player may have a winning line, and only the player who placed the
last stone. A winning line or a full board makes the position terminal.

Encoding (N, N, C), from the mover's point of view: plane 0 the mover's stones, plane 1 the
opponent's; connect6 adds plane 2, all ones when the mover is placing the first stone of a
two-stone turn (another stone of the same colour follows).
"""
from libc.string cimport memcpy

from games._state cimport State, SCORE_MULTIPLICATIVE_DEPTH
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t

from games import boardtext as bt
from games.errors import InvalidGameSpecError, InvalidPositionError
from games.symmetry import map_square

cdef hash_t ZOBRIST[625][2]
cdef hash_t ZOBRIST_SIDE

# The four line directions (dr, dc); each is also walked backwards.
cdef int DR[4]
cdef int DC[4]
DR[:] = [0, 1, 1, 1]
DC[:] = [1, 0, 1, -1]


cdef void _init_zobrist():
    cdef uint64_t seed = 0xC0AAEC7
    cdef int i
    for i in range(STONE_MAX_CELLS):
        ZOBRIST[i][0] = splitmix64(&seed)
        ZOBRIST[i][1] = splitmix64(&seed)
    global ZOBRIST_SIDE
    ZOBRIST_SIDE = splitmix64(&seed)


_init_zobrist()

SYMBOLS = "xo"


def _side(params: dict, game: str) -> int:
    n = params.get("size")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= STONE_MAX_SIDE:
        raise InvalidGameSpecError(f"{game}: size={n!r} must be an int in [1, {STONE_MAX_SIDE}]")
    return n


def facts_OuterOpenGomokuState(params: dict) -> dict:
    n = _side(params, "outer_open_gomoku")
    return dict(players=("x", "o"), num_actions=n * n, max_plies=n * n, planes_shape=(n, n, 2),
                symmetries=tuple(range(8)), score_kind=SCORE_MULTIPLICATIVE_DEPTH)


def facts_Connect6State(params: dict) -> dict:
    n = _side(params, "connect6")
    return dict(players=("x", "o"), num_actions=n * n, max_plies=n * n, planes_shape=(n, n, 3),
                symmetries=tuple(range(8)), score_kind=SCORE_MULTIPLICATIVE_DEPTH)


gomoku_facts = facts_OuterOpenGomokuState
connect6_facts = facts_Connect6State


def facts(params: dict) -> dict:
    raise TypeError("games.connect holds two games: use facts_OuterOpenGomokuState or "
                    "facts_Connect6State (the registry picks facts_<StateClass>)")


cdef class StoneGameState(State):
    """Shared engine of the k-in-a-row placement games (not registered itself)."""

    cdef int _init_stone(self, object info, int k, int stones_per_turn, bint outer_open) except -1:
        self._init_base(info)
        n = info.params["size"]
        if not 1 <= n <= STONE_MAX_SIDE:
            raise InvalidGameSpecError(f"{info.name}: size={n} exceeds the engine's {STONE_MAX_SIDE}")
        self.n = n
        self.ncells = n * n
        self.k = k
        self.stones_per_turn = stones_per_turn
        self.outer_open = outer_open
        cdef int i
        for i in range(STONE_MAX_CELLS):
            self.cells[i] = -1
        return 0

    cdef int mover_at(self, int ply) noexcept nogil:
        """The player who places the stone of ply ``ply`` (x, o, x, ... or x, o, o, x, x, ...)."""
        if self.stones_per_turn == 1:
            return ply & 1
        if ply == 0:
            return 0
        return 1 - (((ply - 1) >> 1) & 1)

    cdef bint completes_line(self, int a, int p) noexcept nogil:
        """Whether the stone of ``p`` on ``a`` lies on a line of ``k`` or more stones of ``p``."""
        cdef int n = self.n
        cdef int r = a // n
        cdef int c = a - r * n
        cdef int d, dr, dc, rr, cc, cnt
        for d in range(4):
            dr = DR[d]
            dc = DC[d]
            cnt = 1
            rr = r + dr
            cc = c + dc
            while (<unsigned int>rr < <unsigned int>n and <unsigned int>cc < <unsigned int>n
                   and self.cells[rr * n + cc] == p):
                cnt += 1
                rr += dr
                cc += dc
            rr = r - dr
            cc = c - dc
            while (<unsigned int>rr < <unsigned int>n and <unsigned int>cc < <unsigned int>n
                   and self.cells[rr * n + cc] == p):
                cnt += 1
                rr -= dr
                cc -= dc
            if cnt >= self.k:
                return True
        return False

    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        cdef int i, r, c, n = self.n, m = 0
        if self._ply == 0 and self.outer_open:
            # Black's first stone: the board is empty; only the two outermost lines.
            for i in range(self.ncells):
                r = i // n
                c = i - r * n
                if r < 2 or r >= n - 2 or c < 2 or c >= n - 2:
                    out[m] = i
                    m += 1
            return m
        for i in range(self.ncells):        # branchless: write always, advance on empty squares
            out[m] = i
            m += self.cells[i] < 0
        return m

    cdef int count_legal_actions(self, action_t* scratch) noexcept nogil:
        # every stone is one ply (positions set from text are checked for it): empty = cells - ply
        if self._terminal:
            return 0
        if self._ply == 0 and self.outer_open:
            return self.legal_actions(scratch)
        return self.ncells - self._ply

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int p = self._player
        cdef int q
        self.cells[a] = p
        self._hash ^= ZOBRIST[a][p]
        q = self.mover_at(self._ply)
        if q != p:
            self._hash ^= ZOBRIST_SIDE
        self._player = q
        if self.completes_line(a, p):
            self._terminal = True
            self._result = 1 if p == 0 else -1
        elif self._ply >= self.max_plies:
            self._terminal = True
            self._result = 0

    cdef void _do_undo(self, action_t a) noexcept nogil:
        self.cells[a] = -1

    cdef void encode(self, float* out) noexcept nogil:
        cdef int i, v, ch = self.planes_c
        cdef int me = self._player
        cdef float flag = 1.0 if (self.stones_per_turn == 2 and (self._ply & 1)) else 0.0
        for i in range(self.ncells):
            v = self.cells[i]
            out[ch * i] = 1.0 if v == me else 0.0
            out[ch * i + 1] = 1.0 if (v >= 0 and v != me) else 0.0
            if ch == 3:
                out[ch * i + 2] = flag

    cdef void _copy_to(self, State dst) noexcept:
        cdef StoneGameState d = <StoneGameState>dst
        memcpy(d.cells, self.cells, sizeof(signed char) * self.ncells)

    # ---- Python helpers --------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """The board side N."""
        return self.n

    @property
    def stones_left_in_turn(self) -> int:
        """Stones the player to move places before the opponent moves (1, or 2 in connect6)."""
        return 2 if (self.stones_per_turn == 2 and (self._ply & 1)) else 1

    def board(self) -> list:
        """The board as rows top to bottom of -1 (empty), 0 (x) or 1 (o)."""
        return self._grid()

    # ---- text ---------------------------------------------------------------------------------------
    def _grid(self):
        n = self.n
        return [[self.cells[r * n + c] for c in range(n)] for r in range(n)]

    def _parse_move_text(self, str text) -> int:
        r, c = bt.parse_square(text, self.n, self.n)
        return r * self.n + c

    def _move_text(self, int action) -> str:
        return bt.square_name(action // self.n, action % self.n, self.n)

    def _position_text(self) -> str:
        return f"{bt.format_board(self._grid(), SYMBOLS)} {SYMBOLS[self._player]}"

    def _winners(self, flat) -> set:
        """The players owning a line of k or more stones in ``flat`` (a row-major list)."""
        n, k = self.n, self.k
        found = set()
        for i, p in enumerate(flat):
            if p < 0 or p in found:
                continue
            r, c = divmod(i, n)
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                pr, pc = r - dr, c - dc
                if 0 <= pr < n and 0 <= pc < n and flat[pr * n + pc] == p:
                    continue            # not the start of its run
                cnt, rr, cc = 0, r, c
                while 0 <= rr < n and 0 <= cc < n and flat[rr * n + cc] == p:
                    cnt += 1
                    rr += dr
                    cc += dc
                if cnt >= k:
                    found.add(p)
                    break
        return found

    def _set_position_text(self, str text) -> None:
        game = self.game.name
        n = self.n
        board, side, ply = bt.split_position(text, game, SYMBOLS)
        grid = bt.parse_board(board, n, n, SYMBOLS, game)
        flat = [v for row in grid for v in row]
        nx, no = flat.count(0), flat.count(1)
        total = nx + no
        if ply is not None and ply != total:
            raise InvalidPositionError(
                f"{game}: ply {ply} in {text!r} does not match the {total} stones on the board")
        want_x = sum(1 for p in range(total) if self.mover_at(p) == 0)
        if nx != want_x or side != self.mover_at(total):
            raise InvalidPositionError(
                f"{game}: position {text!r} is unreachable ({nx} x, {no} o, {SYMBOLS[side]} to move; "
                f"after {total} stones there are {want_x} x, {total - want_x} o and "
                f"{SYMBOLS[self.mover_at(total)]} is to move)")
        if self.outer_open and nx > 0:
            outer = [i for i, v in enumerate(flat) if v == 0 and (
                i // n < 2 or i // n >= n - 2 or i % n < 2 or i % n >= n - 2)]
            if not outer:
                raise InvalidPositionError(
                    f"{game}: position {text!r} is unreachable (no x stone on the two outermost "
                    f"lines, where x's first stone must be)")
        wins = self._winners(flat)
        if len(wins) > 1:
            raise InvalidPositionError(
                f"{game}: both players have {self.k} in a row in {text!r}")
        if wins:
            winner = next(iter(wins))
            if winner != self.mover_at(total - 1):
                raise InvalidPositionError(
                    f"{game}: position {text!r} is unreachable ({SYMBOLS[winner]} has {self.k} in a "
                    f"row but {SYMBOLS[self.mover_at(total - 1)]} placed the last stone)")
        # Validated: only now write the state.
        cdef int i
        cdef hash_t h = 0
        for i in range(self.ncells):
            self.cells[i] = flat[i]
            if flat[i] >= 0:
                h ^= ZOBRIST[i][flat[i]]
        self._player = side
        if side:
            h ^= ZOBRIST_SIDE
        self._hash = h
        self._ply = total
        self._terminal = bool(wins) or total >= self.max_plies
        self._result = 0 if not wins else (1 if 0 in wins else -1)

    def _drawing(self) -> str:
        if self._terminal:
            footer = "game over: " + self.result()
        elif self.stones_per_turn == 2 and self._ply > 0:
            footer = (f"{SYMBOLS[self._player]} to move "
                      f"(stone {2 - (self._ply & 1)} of 2)")
        else:
            footer = f"{SYMBOLS[self._player]} to move"
        return bt.draw_grid(self._grid(), SYMBOLS, self.n, self.n, footer)

    def _transform_action(self, int sym, int action) -> int:
        if action < 0 or action >= self.num_actions:
            raise ValueError(f"action id {action} is out of range [0, {self.num_actions})")
        r, c = map_square(sym, action // self.n, action % self.n, self.n, self.n)
        return r * self.n + c


cdef class OuterOpenGomokuState(StoneGameState):
    """Outer-open gomoku: five or more in a row wins; black's first stone on the outer two lines."""

    def __init__(self, info):
        self._init_stone(info, 5, 1, True)


cdef class Connect6State(StoneGameState):
    """Connect6: one stone, then two per turn (one ply each); six or more in a row wins."""

    def __init__(self, info):
        self._init_stone(info, 6, 2, False)
