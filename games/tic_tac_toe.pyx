"""Tic-tac-toe: standard rules on a 3x3 board; ``x`` (player 0) moves first.

Actions: the square index ``row * 3 + col`` with row 0 at the top (as in OpenSpiel). Notation:
``a1`` (bottom-left) .. ``c3`` (top-right). Position text: ``BOARD SIDE [PLY]``, rows top to bottom,
e.g. ``x.o/.x./..o o`` (the ply defaults to the number of stones). Terminal evaluation: additive
depth over the 9-ply cap. Symmetries: all eight of the square.
"""
from games._state cimport State, SCORE_ADDITIVE_DEPTH
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t

from games import boardtext as bt
from games.errors import InvalidPositionError
from games.symmetry import map_square

cdef hash_t ZOBRIST[9][2]
cdef hash_t ZOBRIST_SIDE

_LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
cdef int LINES[8][3]
for _k, _line in enumerate(_LINES):
    for _j in range(3):
        LINES[_k][_j] = _line[_j]


cdef void _init_zobrist():
    cdef uint64_t seed = 0x7C7A11
    cdef int i
    for i in range(9):
        ZOBRIST[i][0] = splitmix64(&seed)
        ZOBRIST[i][1] = splitmix64(&seed)
    global ZOBRIST_SIDE
    ZOBRIST_SIDE = splitmix64(&seed)


_init_zobrist()

SYMBOLS = "xo"


def facts(params: dict) -> dict:
    return dict(players=("x", "o"), num_actions=9, max_plies=9, planes_shape=(3, 3, 2),
                symmetries=tuple(range(8)), score_kind=SCORE_ADDITIVE_DEPTH)


cdef class TicTacToeState(State):
    def __init__(self, info):
        self._init_base(info)
        cdef int i
        for i in range(9):
            self.cells[i] = -1

    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        cdef int i, n = 0
        for i in range(9):
            if self.cells[i] < 0:
                out[n] = i
                n += 1
        return n

    cdef int count_legal_actions(self, action_t* scratch) noexcept nogil:
        return 0 if self._terminal else 9 - self._ply

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int p = self._player
        cdef int k
        self.cells[a] = p
        self._hash ^= ZOBRIST[a][p] ^ ZOBRIST_SIDE
        self._player = 1 - p
        for k in range(8):
            if (self.cells[LINES[k][0]] == p and self.cells[LINES[k][1]] == p
                    and self.cells[LINES[k][2]] == p):
                self._terminal = True
                self._result = 1 if p == 0 else -1
                return
        if self._ply >= self.max_plies:
            self._terminal = True
            self._result = 0

    cdef void _do_undo(self, action_t a) noexcept nogil:
        self.cells[a] = -1

    cdef void encode(self, float* out) noexcept nogil:
        cdef int i, v
        for i in range(9):
            v = self.cells[i]
            out[2 * i] = 1.0 if v == self._player else 0.0
            out[2 * i + 1] = 1.0 if (v >= 0 and v != self._player) else 0.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef TicTacToeState d = <TicTacToeState>dst
        d.cells = self.cells

    # ---- text ---------------------------------------------------------------------------------------
    def _grid(self):
        return [[self.cells[r * 3 + c] for c in range(3)] for r in range(3)]

    def _parse_move_text(self, str text) -> int:
        r, c = bt.parse_square(text, 3, 3)
        return r * 3 + c

    def _move_text(self, int action) -> str:
        return bt.square_name(action // 3, action % 3, 3)

    def _position_text(self) -> str:
        return f"{bt.format_board(self._grid(), SYMBOLS)} {SYMBOLS[self._player]}"

    def _set_position_text(self, str text) -> None:
        board, side, ply = bt.split_position(text, "tic_tac_toe", SYMBOLS)
        grid = bt.parse_board(board, 3, 3, SYMBOLS, "tic_tac_toe")
        flat = [v for row in grid for v in row]
        nx, no = flat.count(0), flat.count(1)
        if not (nx == no or nx == no + 1) or side != (nx - no):
            raise InvalidPositionError(
                f"tic_tac_toe: position {text!r} is unreachable ({nx} x, {no} o, {SYMBOLS[side]} to move)")
        if ply is not None and ply != nx + no:
            raise InvalidPositionError(
                f"tic_tac_toe: ply {ply} in {text!r} does not match the {nx + no} stones on the board")
        wins = [p for p in (0, 1) for line in _LINES if all(flat[s] == p for s in line)]
        if len(set(wins)) > 1:
            raise InvalidPositionError(f"tic_tac_toe: both players have three in a row in {text!r}")
        cdef int i
        self._hash = 0
        for i in range(9):
            self.cells[i] = flat[i]
            if flat[i] >= 0:
                self._hash ^= ZOBRIST[i][flat[i]]
        self._player = side
        if side:
            self._hash ^= ZOBRIST_SIDE
        self._ply = nx + no
        self._terminal = bool(wins) or self._ply >= 9
        self._result = 0 if not wins else (1 if wins[0] == 0 else -1)

    def _drawing(self) -> str:
        footer = "game over: " + self.result() if self._terminal else f"{SYMBOLS[self._player]} to move"
        return bt.draw_grid(self._grid(), SYMBOLS, 3, 3, footer)

    def _transform_action(self, int sym, int action) -> int:
        r, c = map_square(sym, action // 3, action % 3, 3, 3)
        return r * 3 + c
