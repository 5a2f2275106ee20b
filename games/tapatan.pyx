"""Tapatan (the Philippines; LoBoGames, seed 003): three in a row on a 3x3 board of points.

Board. The 9 points of a 3x3 grid, joined by the rows, the columns and the two long diagonals (the
diagonals pass through the centre; the edge midpoints have no diagonal)::

    3  .---.---.
       | \\ | / |
    2  .---.---.
       | / | \\ |
    1  .---.---.
       a   b   c

Points are named ``a1`` (bottom-left) .. ``c3`` (top-right); internally point ``r * 3 + c`` with row 0
at the *top* (as in the position text and the planes).

Rules (the shared engine ``games._align`` documents them in full). ``x`` (player 0) moves first.
``start=placement`` (default; Ludii's and the traditional rules): the board starts empty and each
player drops its 3 pieces in turn on empty points, then moves one piece per turn one step along a line
to an adjacent empty point. ``start=preset``: the LoBoGames app starts with all 6 pieces on the board
(seed 003, section 6.1.1: "the game defined start position") but the paper does not show that
position. The usual fallback, each side's 3 pieces on its own home row, is degenerate here (both sides
would start with three in a row), so **our choice** is the home rows with the two middle pieces
exchanged: ``x`` on a1, c1 and b3, ``o`` on a3, c3 and b1 (text ``oxo/3/xox x 0``); the game starts in
the movement phase. In both variants: three of the mover's pieces on a row, a column or a long diagonal
win at once (in either phase); a player with no legal move loses (it never happens: an exhaustive check
of the movement-phase positions, in the tests, finds the side to move always has a move); the third
occurrence of the same position (board and side to move) is a draw; the ply cap (100) is a
draw. Terminal evaluation: additive depth over the cap.

Actions: ``0..8`` drop on point ``r * 3 + c``; ``9 + k`` the k-th of the 32 directed steps sorted by
(from point, to point). Notation: ``b2`` for a drop, ``a1-b2`` (or ``a1b2``) for a step.

Position text: ``BOARD SIDE PLY`` with the rows top to bottom, FEN-like (``x``, ``o``, ``.`` or digit
runs), e.g. ``x1o/1x1/2o o 3``. The ply may be omitted (then the smallest ply consistent with the pieces
and the side to move). Parsing checks: at most 3 pieces each; in the drop phase the side to move and
the ply must match the pieces dropped (``x`` drops first); ``x`` moves at even plies; at most one player
has three in a row (that player has won). The history of a position set from text is empty (repetitions
count from there).

Encoding: ``(3, 3, 2)`` planes [mover's pieces, opponent's pieces]. The rules have no direction, so
the symmetries are all eight of the square for ``start=placement``, and the left-right mirror (4) for
the preset start (which is only mirror-symmetric).
"""
import re

from games._align cimport AlignState, AlignGraph, build_graph
from games._state cimport SCORE_ADDITIVE_DEPTH

from games import boardtext as bt
from games.errors import GameError, InvalidMoveError
from games.symmetry import map_square

SYMBOLS = "xo"
MAX_PLIES = 100
PRESET = "oxo/3/xox"          # x on a1, c1, b3; o on a3, c3, b1

_ADJ = {}
for _p in range(9):
    _r, _c = divmod(_p, 3)
    _ADJ[_p] = [_q for _q in range(9) if (abs(_q // 3 - _r) + abs(_q % 3 - _c) == 1)
                or (4 in (_p, _q) and _p != _q and abs(_q // 3 - _r) == 1 and abs(_q % 3 - _c) == 1)]
MOVES = sorted((_p, _q, -1) for _p in range(9) for _q in _ADJ[_p])
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
MOVE_ID = {(f, t): k for k, (f, t, _) in enumerate(MOVES)}

cdef AlignGraph GRAPH
build_graph(&GRAPH, 9, MOVES, LINES, list(range(9)), 9, 2, 0x7A9A7A9)

_DROP = re.compile(r"^([a-z]\d{1,2})$")
_STEP = re.compile(r"^([a-z]\d{1,2})\s*-?\s*([a-z]\d{1,2})$")


def facts(params: dict) -> dict:
    syms = tuple(range(8)) if params["start"] == "placement" else (0, 4)
    return dict(players=("x", "o"), num_actions=9 + len(MOVES), max_plies=MAX_PLIES,
                planes_shape=(3, 3, 2), symmetries=syms, score_kind=SCORE_ADDITIVE_DEPTH,
                extra={"history_dependent": True})


def _point(text):
    r, c = bt.parse_square(text, 3, 3, "point")
    return r * 3 + c


def _name(p):
    return bt.square_name(p // 3, p % 3, 3)


cdef class TapatanState(AlignState):
    def __init__(self, info):
        self._init_base(info)
        self.placement = info.params["start"] == "placement"
        self._set_graph(&GRAPH)
        cdef int i
        if not self.placement:
            for i, ch in enumerate(PRESET.replace("/", "").replace("3", "...")):
                self.cells[i] = SYMBOLS.find(ch)
            self.count[0] = self.count[1] = 3
            self._rebuild()

    # ---- text ---------------------------------------------------------------------------------------
    def _grid(self):
        cells = self._cells_list()
        return [cells[r * 3: r * 3 + 3] for r in range(3)]

    def _parse_move_text(self, str text) -> int:
        low = text.lower()
        try:
            m = _DROP.match(low)
            if m:
                return _point(m.group(1))
            m = _STEP.match(low)
            if m:
                f, t = _point(m.group(1)), _point(m.group(2))
                if (f, t) not in MOVE_ID:
                    raise InvalidMoveError(
                        f"{m.group(1)} and {m.group(2)} are not adjacent points on a line")
                return 9 + MOVE_ID[f, t]
        except InvalidMoveError as err:
            raise InvalidMoveError(f"tapatan: move {text!r}: {err}") from None
        raise InvalidMoveError(
            f"tapatan: malformed move {text!r} (expected a point to drop on, e.g. 'b2', or a step "
            f"between adjacent points, e.g. 'a1-b2')")

    def _move_text(self, int action) -> str:
        if action < 9:
            return _name(action)
        f, t, _ = MOVES[action - 9]
        return f"{_name(f)}-{_name(t)}"

    def _position_text(self) -> str:
        return f"{bt.format_board(self._grid(), SYMBOLS)} {SYMBOLS[self._player]} {self._ply}"

    def _set_position_text(self, str text) -> None:
        name = self.game.spec
        board, side, ply = bt.split_position(text, name, SYMBOLS)
        grid = bt.parse_board(board, 3, 3, SYMBOLS, name)
        self._load([v for row in grid for v in row], side, ply, text)

    def _drawing(self) -> str:
        sym = [["." if v < 0 else SYMBOLS[v] for v in row] for row in self._grid()]
        rows = []
        links = ["| \\ | / |", "| / | \\ |"]
        for r in range(3):
            rows.append(f"{3 - r}  " + "---".join(sym[r]))
            if r < 2:
                rows.append("   " + links[r])
        rows.append("   a   b   c")
        rows.append(self._status())
        return "\n".join(rows)

    def _transform_action(self, int sym, int action) -> int:
        if not 0 <= action < self.num_actions:
            raise InvalidMoveError(f"action id {action} is out of range [0, {self.num_actions})")
        if sym not in self.game.symmetries:
            raise GameError(f"tapatan: symmetry {sym} is not a symmetry of {self.game.spec} "
                            f"(allowed: {', '.join(map(str, self.game.symmetries))})")

        def image(p):
            r, c = map_square(sym, p // 3, p % 3, 3, 3)
            return r * 3 + c

        if action < 9:
            return image(action)
        f, t, _ = MOVES[action - 9]
        return 9 + MOVE_ID[image(f), image(t)]
