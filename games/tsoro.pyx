"""Tsoro Yematatu (Zimbabwe; LoBoGames, seed 003): three in a row on a 7-point triangle.

Board. Seven points: the apex (1), a middle row of three (2, 3, 4, left to right) and a base row of
three (5, 6, 7), joined by the three lines from the apex (1-2-5, 1-3-6, 1-4-7) and the two rows
(2-3-4, 5-6-7)::

            1
           /|\\
          / | \\
         2--3--4
        /   |   \\
       /    |    \\
      5-----6-----7

Rules (the shared engine ``games._align`` documents them in full; docs/GAMES.md's decision). ``x``
(player 0) moves first. The board starts empty; each player drops its 3 pieces in turn on empty points
(the drop phase), then moves one piece per turn to the empty point: a step to an adjacent point along
a line, or a jump along a line over the middle point of that line, whichever piece (either colour)
stands there; nothing is captured. Three of the mover's pieces on one of the five lines win at once (in
either phase). The third occurrence of the same position (board and side to move) is a draw, and so is
the ply cap (100). A player with no legal move loses; it cannot happen (in the movement phase the one
empty point always has at least four points that can move to it, and the opponent holds only three).
Terminal evaluation: additive depth over the cap. Note: the paper's summary of the LoBoGames version
says "position 4 pieces ... align the 4 pieces", which no line of this board (3 points each) allows; we
follow docs/GAMES.md (3 pieces each).

Actions: ``0..6`` drop on point 1..7; ``7 + k`` the k-th of the 30 directed moves (20 steps, 10 jumps)
sorted by (from point, to point). Notation: the point number for a drop (``3``), ``from-to`` for a move
(``2-3`` a step, ``1-6`` a jump over 3); ``1x6`` and ``16`` are accepted too.

Position text: ``BOARD SIDE PLY`` where BOARD lists the 7 points in the order 1..7, the apex, the
middle row and the base row separated by ``/`` (``x``, ``o``, ``.`` or digit runs), e.g. ``x/oo1/oxx x
6`` (x on 1, 6 and 7; o on 2, 3 and 5); the empty board is ``1/3/3 x 0``.
Seven cells without the slashes are accepted too. The ply may be omitted (then the smallest ply
consistent with the pieces and the side to move); the checks are tapatan's.

Encoding: ``(3, 3, 3)`` planes [mover's pieces, opponent's pieces, the points of the board] with the
apex at (row 0, column 1), the middle row on row 1 and the base on row 2 (the corners (0, 0) and (0, 2)
are not points). The left-right mirror (symmetry 4: 2<->4, 5<->7) is the only symmetry.
"""
import re

from games._align cimport AlignState, AlignGraph, build_graph
from games._state cimport SCORE_ADDITIVE_DEPTH

from games import boardtext as bt
from games.errors import GameError, InvalidMoveError, InvalidPositionError

SYMBOLS = "xo"
MAX_PLIES = 100
ROWS = (1, 3, 3)                          # points per row: apex, middle, base
CELLS = [1, 3, 4, 5, 6, 7, 8]             # plane index row * 3 + column of each point
LINES = [(0, 1, 4), (0, 2, 5), (0, 3, 6), (1, 2, 3), (4, 5, 6)]
MIRROR = [0, 3, 2, 1, 6, 5, 4]            # symmetry 4


def _moves():
    out = []
    for a, b, c in LINES:
        out += [(a, b, -1), (b, a, -1), (b, c, -1), (c, b, -1), (a, c, b), (c, a, b)]
    return sorted(out)


MOVES = _moves()
MOVE_ID = {(f, t): k for k, (f, t, _) in enumerate(MOVES)}

cdef AlignGraph GRAPH
build_graph(&GRAPH, 7, MOVES, LINES, CELLS, 9, 3, 0x750B0)

_DROP = re.compile(r"^([1-7])$")
_MOVE = re.compile(r"^([1-7])\s*[-x]?\s*([1-7])$")


def facts(params: dict) -> dict:
    return dict(players=("x", "o"), num_actions=7 + len(MOVES), max_plies=MAX_PLIES,
                planes_shape=(3, 3, 3), symmetries=(0, 4), score_kind=SCORE_ADDITIVE_DEPTH,
                extra={"history_dependent": True})


cdef class TsoroYematatuState(AlignState):
    def __init__(self, info):
        self._init_base(info)
        self.placement = True
        self._set_graph(&GRAPH)

    # ---- text ---------------------------------------------------------------------------------------
    def _parse_move_text(self, str text) -> int:
        low = text.lower()
        m = _DROP.match(low)
        if m:
            return int(m.group(1)) - 1
        m = _MOVE.match(low)
        if m:
            f, t = int(m.group(1)) - 1, int(m.group(2)) - 1
            if (f, t) not in MOVE_ID:
                raise InvalidMoveError(
                    f"tsoro_yematatu: move {text!r}: points {f + 1} and {t + 1} are neither adjacent on "
                    f"a line nor the two ends of a line")
            return 7 + MOVE_ID[f, t]
        raise InvalidMoveError(
            f"tsoro_yematatu: malformed move {text!r} (expected a point 1-7 to drop on, e.g. '3', or "
            f"from-to points, e.g. '2-3' or '1-6')")

    def _move_text(self, int action) -> str:
        if action < 7:
            return str(action + 1)
        f, t, _ = MOVES[action - 7]
        return f"{f + 1}-{t + 1}"

    def _position_text(self) -> str:
        cells = self._cells_list()
        rows, i = [], 0
        for w in ROWS:
            rows.append(cells[i:i + w])
            i += w
        return f"{'/'.join(bt.format_board([r], SYMBOLS) for r in rows)} {SYMBOLS[self._player]} {self._ply}"

    def _set_position_text(self, str text) -> None:
        name = self.game.spec
        board, side, ply = bt.split_position(text, name, SYMBOLS)
        parts = board.split("/")
        if len(parts) == 1:
            cells = bt.parse_board(board, 1, 7, SYMBOLS, name)[0]
        elif len(parts) == 3:
            cells = []
            for i, (part, w) in enumerate(zip(parts, ROWS)):
                try:
                    cells += bt.parse_board(part, 1, w, SYMBOLS, name)[0]
                except InvalidPositionError as err:
                    raise InvalidPositionError(
                        f"{name}: row {i + 1} ({part!r}) of board {board!r} in {text!r} must have {w} "
                        f"point{'s' if w > 1 else ''}: {err}") from None
        else:
            raise InvalidPositionError(
                f"{name}: board {board!r} in {text!r} must list the 7 points as apex/middle/base "
                f"(e.g. '1/3/3' for the empty board)")
        self._load(cells, side, ply, text)

    def _drawing(self) -> str:
        s = ["." if v < 0 else SYMBOLS[v] for v in self._cells_list()]
        lines = [
            f"        {s[0]}            1",
            "       /|\\",
            "      / | \\",
            f"     {s[1]}--{s[2]}--{s[3]}        2 3 4",
            "    /   |   \\",
            "   /    |    \\",
            f"  {s[4]}-----{s[5]}-----{s[6]}     5 6 7",
            self._status(),
        ]
        return "\n".join(lines)

    def _transform_action(self, int sym, int action) -> int:
        if not 0 <= action < self.num_actions:
            raise InvalidMoveError(f"action id {action} is out of range [0, {self.num_actions})")
        if sym == 0:
            return action
        if sym != 4:
            raise GameError(f"tsoro_yematatu: symmetry {sym} is not a symmetry of the game (allowed: 0, 4)")
        if action < 7:
            return MIRROR[action]
        f, t, _ = MOVES[action - 7]
        return 7 + MOVE_ID[MIRROR[f], MIRROR[t]]
