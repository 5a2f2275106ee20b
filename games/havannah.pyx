"""Havannah (Christian Freeling, 1979) on a hexagonal board of ``base`` cells per side, with the swap
(pie) rule; white (player 0) moves first.

Rules. The board has ``3 * base * (base - 1) + 1`` cells. The players alternately place one stone of
their colour on an empty cell. A player wins by completing, with a chain of their own stones
(neighbouring cells connected):

* a **ring**: a loop of stones around at least one cell; the enclosed cells may be empty or hold
  stones of either colour (a "filled" ring such as six stones around a seventh of the same colour
  counts);
* a **bridge**: a chain touching two of the six corner cells;
* a **fork**: a chain touching three of the six edges; corner cells belong to no edge.

A full board is a draw. Swap rule (``swap=true``, the default): as the second player's first move,
black may play the special action ``swap`` instead of a stone: white's first stone becomes black's
(it stays on its cell and changes colour) and white moves next, so the game goes on with the colours'
roles exchanged (black has the one stone, white is to move). This is OpenSpiel's ``havannah(swap=true)``
rule, where the swap is played by choosing the occupied cell. The swap is a ply: ``max_plies`` is the
number of cells, plus one with the swap rule. Terminal evaluation: multiplicative depth.

Coordinates. Axial coordinates ``(x, y)`` in ``0 .. D-1`` with ``D = 2 * base - 1``; the cells are those
with ``|x - y| <= base - 1``; the six neighbours of ``(x, y)`` are ``(x +- 1, y)``, ``(x, y +- 1)``,
``(x + 1, y + 1)`` and ``(x - 1, y - 1)``. Drawn with row ``y`` shifted left by half a cell per row (as in
OpenSpiel, whose coordinates these are), the corners are ``(0, 0)``, ``(base-1, 0)``, ``(D-1, base-1)``,
``(D-1, D-1)``, ``(base-1, D-1)`` and ``(0, base-1)``. Notation: the letter of ``x`` and the number
``y + 1`` (HavannahGUI / Little Golem style: letters for one axis, numbers for the other), e.g. ``a1``
(a corner), ``e5`` (the centre of base 5), and ``swap``; case-insensitive.

Actions: ``y * D + x`` (OpenSpiel's ids; the ids of off-board squares are never legal) and
``D * D`` for the swap when the swap rule is on: ``num_actions = D * D (+ 1)``.

Position text: ``ROWS SIDE [FLAG]``: the rows ``y = 0 .. D-1`` separated by ``/``, each listing its cells
in increasing ``x`` (``base`` to ``D`` cells) with ``w`` (white), ``b`` (black), ``.`` or digit runs for
empty cells; the side to move ``w`` or ``b``; ``swapped`` if the swap was played, ``-`` (the default)
if not. E.g. base 4 after ``d4``: ``4/5/6/3w3/6/5/4 b -``. The ply is the number of stones plus one if
the swap was played. Validation: the stone counts must fit the side to move and the flag (white has as
many stones as black, or one more; after a swap black has as many, or one more); ``swapped`` needs
the swap rule; the player to move may not already have a winning chain; a winning chain of the other
player ends the game.

Win detection is incremental: union-find over the stones (union by size, no path compression, so
undo pops the unions of the last move) with per-group masks of the corners and edges touched (bridge:
two corner bits, fork: three edge bits). A ring through the new stone ``c`` is detected in O(1), with no
flood fill: (a) the own stones among ``c``'s six neighbours form two or more separate runs (around
``c``) of which two were already in the same group: the loop through ``c`` then has a non-own neighbour
of ``c`` on its inner side, an enclosed cell; or (b) some neighbour of ``c`` now has all six of its
neighbours own (a loop around that cell). Any new ring is one of these: if its inside holds a non-own
cell, that cell was cut off from the outside by ``c``, which needs (a); if its inside is all own stones,
the inside cell next to ``c`` has six own neighbours, which is (b).

Encoding: ``(D, D, C)`` planes, row ``y``, column ``x``: [mover's stones, opponent's stones, cells of
the board] and, with the swap rule, a fourth plane of ones when the swap is legal. Symmetries: the
12 symmetries of the hexagon include four that map the axial square onto itself: identity (0),
rotation by 180 degrees (2), transposition ``x <-> y`` (6) and anti-transposition (7).
"""
import re

from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from games._state cimport (State, SCORE_MULTIPLICATIVE_DEPTH, RESULT_FIRST_WINS, RESULT_SECOND_WINS,
                           RESULT_DRAW)
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t

cdef extern from *:
    int __builtin_popcount(unsigned int) nogil

from games import boardtext as bt
from games import validate
from games.errors import GameError, InvalidMoveError, InvalidPositionError
from games.symmetry import map_square

cdef enum:
    EMPTY = -1
    OFF = 2
    SWAP_MARK = 255
    WIN_RING = 1
    WIN_BRIDGE = 2
    WIN_FORK = 4
    CORNER_BITS = 0x3F

cdef hash_t ZOB[HV_MAX_PAD][2]
cdef hash_t ZOB_SIDE


cdef void _init_zobrist():
    cdef uint64_t seed = 0x4A7A44A4
    cdef int i
    for i in range(HV_MAX_PAD):
        ZOB[i][0] = splitmix64(&seed)
        ZOB[i][1] = splitmix64(&seed)
    global ZOB_SIDE
    ZOB_SIDE = splitmix64(&seed)


_init_zobrist()

LETTERS = "abcdefghijklmnopqrs"
SYMBOLS = "wb"
PLAYERS = ("white", "black")
_CELL = re.compile(r"^([a-s])(\d{1,2})$")


def facts(params: dict) -> dict:
    b = params["base"]
    swap = params["swap"]
    d = 2 * b - 1
    n = 3 * b * (b - 1) + 1
    return dict(players=PLAYERS, num_actions=d * d + (1 if swap else 0), max_plies=n + (1 if swap else 0),
                planes_shape=(d, d, 4 if swap else 3), symmetries=(0, 2, 6, 7),
                score_kind=SCORE_MULTIPLICATIVE_DEPTH, max_legal=n + (1 if swap else 0))


def _win_names(int wins):
    return [name for bit, name in ((WIN_RING, "ring"), (WIN_BRIDGE, "bridge"), (WIN_FORK, "fork"))
            if wins & bit]


cdef class HavannahState(State):
    def __cinit__(self):
        self._u_cell = NULL
        self._u_nun = NULL
        self._ul_child = NULL
        self._ul_root = NULL
        self._ul_mask = NULL

    def __init__(self, info):
        self._init_base(info)
        cdef int b = info.params["base"]
        if not 2 <= b <= HV_MAX_BASE:
            raise ValueError(f"havannah: base {b} is out of range [2, {HV_MAX_BASE}]")
        self.base = b
        self.D = 2 * b - 1
        self.W = self.D + 2
        self.swap_on = info.params["swap"]
        self.swap_id = self.D * self.D
        cdef int cap = self.max_plies + 1
        self._u_cell = <short*>malloc(cap * sizeof(short))
        self._u_nun = <unsigned char*>malloc(cap)
        self._ul_child = <short*>malloc(3 * cap * sizeof(short))
        self._ul_root = <short*>malloc(3 * cap * sizeof(short))
        self._ul_mask = <unsigned short*>malloc(3 * cap * sizeof(unsigned short))
        if (self._u_cell == NULL or self._u_nun == NULL or self._ul_child == NULL
                or self._ul_root == NULL or self._ul_mask == NULL):
            raise MemoryError()
        cdef int Wd = self.W
        # neighbours in circular order: E, SE, S(W), W, NW, N(E) in the drawing
        self.nb[0] = 1
        self.nb[1] = Wd + 1
        self.nb[2] = Wd
        self.nb[3] = -1
        self.nb[4] = -Wd - 1
        self.nb[5] = -Wd
        cdef int x, y, i, n = 0, D = self.D
        corners = [(0, 0), (b - 1, 0), (D - 1, b - 1), (D - 1, D - 1), (b - 1, D - 1), (0, b - 1)]
        for i in range(HV_MAX_PAD):
            self.pad2act[i] = -1
            self.cmask[i] = 0
        for y in range(D):
            for x in range(D):
                if abs(x - y) > b - 1:
                    continue
                i = (y + 1) * Wd + x + 1
                self.cells[n] = i
                self.cellact[n] = y * D + x
                n += 1
                self.pad2act[i] = y * D + x
                if (x, y) in corners:
                    self.cmask[i] = 1 << corners.index((x, y))
                else:
                    for k, on_edge in enumerate((y == 0, x - y == b - 1, x == D - 1, y == D - 1,
                                                 y - x == b - 1, x == 0)):
                        if on_edge:
                            self.cmask[i] = 1 << (6 + k)
        self.ncells = n
        self._clear()

    def __dealloc__(self):
        free(self._u_cell)
        free(self._u_nun)
        free(self._ul_child)
        free(self._ul_root)
        free(self._ul_mask)
        self._u_cell = NULL
        self._u_nun = NULL
        self._ul_child = NULL
        self._ul_root = NULL
        self._ul_mask = NULL

    cdef void _clear(self) noexcept:
        cdef int i
        for i in range(HV_MAX_PAD):
            self.cell[i] = OFF
            self.nbc[0][i] = self.nbc[1][i] = 0
            self.parent[i] = i
            self.gsize[i] = 1
            self.gmask[i] = 0
        for i in range(self.ncells):
            self.cell[self.cells[i]] = EMPTY
        self.filled = 0
        self.swapped = False
        self.first_pad = -1
        self._wins = 0
        self._nundo = 0
        self._nul = 0
        self._player = 0
        self._ply = 0
        self._hash = 0
        self._terminal = False
        self._result = RESULT_DRAW

    # ---- core -----------------------------------------------------------------------------------
    cdef int _find(self, int c) noexcept nogil:
        while self.parent[c] != c:
            c = self.parent[c]
        return c

    cdef int _place(self, int c, int p) noexcept nogil:
        """Put a stone of `p` on the empty cell `c`: update the groups (logging the unions for undo)
        and the neighbour counts; return the WIN_* bits of the structures the stone completes."""
        cdef int i, j, n, r, rc, pat = 0, starts, wins = 0
        cdef int roots[6]
        cdef int arc_roots[6]
        cdef int narcs = 0
        cdef unsigned short m
        for i in range(6):
            n = c + self.nb[i]
            if self.cell[n] == p:
                pat |= 1 << i
                roots[i] = self._find(n)
        # runs of own neighbours around c: a run starts at i when i is own and i - 1 is not
        starts = pat & ~(((pat << 1) | (pat >> 5)) & 63)
        for i in range(6):
            if (starts >> i) & 1:
                r = roots[i]
                for j in range(narcs):
                    if arc_roots[j] == r:
                        wins = WIN_RING          # (a): two runs already joined
                        break
                else:
                    arc_roots[narcs] = r         # the distinct groups around c
                    narcs += 1
        for i in range(6):
            n = c + self.nb[i]
            self.nbc[p][n] += 1
            if self.nbc[p][n] == 6 and self.cell[n] != OFF:
                wins = WIN_RING                  # (b): a cell with six own neighbours
        # the stone and its unions (one per distinct neighbouring group)
        self.cell[c] = <signed char>p
        self.parent[c] = <short>c
        self.gsize[c] = 1
        self.gmask[c] = self.cmask[c]
        rc = c
        cdef int nun = 0
        for i in range(narcs):
            r = arc_roots[i]
            if r == rc:
                continue
            # attach the smaller group's root to the larger one's
            if self.gsize[r] > self.gsize[rc]:
                r, rc = rc, r
            self._ul_child[self._nul] = <short>r
            self._ul_root[self._nul] = <short>rc
            self._ul_mask[self._nul] = self.gmask[rc]
            self._nul += 1
            nun += 1
            self.parent[r] = <short>rc
            self.gsize[rc] += self.gsize[r]
            self.gmask[rc] |= self.gmask[r]
        self._u_nun[self._nundo] = <unsigned char>nun
        m = self.gmask[rc]
        if __builtin_popcount(m & CORNER_BITS) >= 2:
            wins |= WIN_BRIDGE
        if __builtin_popcount(m >> 6) >= 3:
            wins |= WIN_FORK
        if self.filled == 0:
            self.first_pad = c
        self.filled += 1
        return wins

    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        cdef int i, n = 0
        for i in range(self.ncells):
            # branchless: about half the cells are empty, a branch would mispredict half the time
            out[n] = self.cellact[i]
            n += self.cell[self.cells[i]] == EMPTY
        if self.swap_on and self._ply == 1 and not self.swapped:
            out[n] = self.swap_id
            n += 1
        return n

    cdef int count_legal_actions(self, action_t* scratch) noexcept nogil:
        if self._terminal:
            return 0
        return self.ncells - self.filled + (1 if (self.swap_on and self._ply == 1 and not self.swapped)
                                            else 0)

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int p = self._player
        cdef int c, i, n, wins
        if a == self.swap_id:
            # the first stone (white's) becomes black's; white moves next
            c = self.first_pad
            self.cell[c] = 1
            for i in range(6):
                n = c + self.nb[i]
                self.nbc[0][n] -= 1
                self.nbc[1][n] += 1
            self._hash ^= ZOB[c][0] ^ ZOB[c][1] ^ ZOB_SIDE
            self._u_cell[self._nundo] = <short>c
            self._u_nun[self._nundo] = SWAP_MARK
            self._nundo += 1
            self.swapped = True
            self._player = 0
            return
        c = (a // self.D + 1) * self.W + a % self.D + 1
        self._u_cell[self._nundo] = <short>c
        wins = self._place(c, p)
        self._nundo += 1
        self._hash ^= ZOB[c][p] ^ ZOB_SIDE
        self._player = 1 - p
        if wins:
            self._terminal = True
            self._result = RESULT_FIRST_WINS if p == 0 else RESULT_SECOND_WINS
            self._wins = wins
        elif self.filled == self.ncells or self._ply >= self.max_plies:
            self._terminal = True
            self._result = RESULT_DRAW

    cdef void _do_undo(self, action_t a) noexcept nogil:
        self._nundo -= 1
        cdef int k = self._nundo
        cdef int c = self._u_cell[k]
        cdef int nun = self._u_nun[k]
        cdef int i, _j, n, r, rc
        cdef int p = self._player              # the mover of `a`
        self._wins = 0
        if nun == SWAP_MARK:
            self.cell[c] = 0
            for i in range(6):
                n = c + self.nb[i]
                self.nbc[1][n] -= 1
                self.nbc[0][n] += 1
            self.swapped = False
            return
        for _j in range(nun):
            self._nul -= 1
            r = self._ul_child[self._nul]
            rc = self._ul_root[self._nul]
            self.parent[r] = <short>r
            self.gsize[rc] -= self.gsize[r]
            self.gmask[rc] = self._ul_mask[self._nul]
        self.cell[c] = EMPTY
        for i in range(6):
            self.nbc[p][c + self.nb[i]] -= 1
        self.filled -= 1

    cdef void encode(self, float* out) noexcept nogil:
        cdef int D = self.D, C = self.planes_c
        cdef int p = self._player
        cdef int x, y, c, v, o
        cdef float swap_plane = 1.0 if (self.swap_on and not self._terminal and self._ply == 1
                                        and not self.swapped) else 0.0
        for y in range(D):
            for x in range(D):
                o = (y * D + x) * C
                c = (y + 1) * self.W + x + 1
                v = self.cell[c]
                out[o] = 1.0 if v == p else 0.0
                out[o + 1] = 1.0 if v == 1 - p else 0.0
                out[o + 2] = 0.0 if v == OFF else 1.0
                if C == 4:
                    out[o + 3] = swap_plane

    cdef void _copy_to(self, State dst) noexcept:
        cdef HavannahState d = <HavannahState>dst
        d.cell = self.cell
        d.nbc = self.nbc
        d.parent = self.parent
        d.gsize = self.gsize
        d.gmask = self.gmask
        d.filled = self.filled
        d.swapped = self.swapped
        d.first_pad = self.first_pad
        d._wins = self._wins
        memcpy(d._u_cell, self._u_cell, self._nundo * sizeof(short))
        memcpy(d._u_nun, self._u_nun, self._nundo)
        memcpy(d._ul_child, self._ul_child, self._nul * sizeof(short))
        memcpy(d._ul_root, self._ul_root, self._nul * sizeof(short))
        memcpy(d._ul_mask, self._ul_mask, self._nul * sizeof(unsigned short))
        d._nundo = self._nundo
        d._nul = self._nul

    # ---- text -------------------------------------------------------------------------------------
    def _row_span(self, int y):
        """The x range of row y."""
        return max(0, y - self.base + 1), min(self.D - 1, y + self.base - 1)

    def _cell_name(self, int x, int y) -> str:
        return f"{LETTERS[x]}{y + 1}"

    def _parse_move_text(self, str text) -> int:
        low = text.lower()
        if low == "swap":
            if not self.swap_on:
                raise InvalidMoveError(f"{self.game.spec}: move {text!r}: the swap rule is off")
            return self.swap_id
        m = _CELL.match(low)
        if not m:
            raise InvalidMoveError(
                f"{self.game.spec}: malformed move {text!r} (expected a cell such as 'a1': a letter "
                f"for x and a number for y, or 'swap')")
        x = LETTERS.index(m.group(1))
        y = int(m.group(2)) - 1
        if not (0 <= x < self.D and 0 <= y < self.D and abs(x - y) <= self.base - 1):
            raise InvalidMoveError(f"{self.game.spec}: cell {text!r} is off the board")
        return y * self.D + x

    def _move_text(self, int action) -> str:
        if action == self.swap_id and self.swap_on:
            return "swap"
        y, x = divmod(action, self.D)
        if abs(x - y) > self.base - 1:
            raise InvalidMoveError(f"{self.game.spec}: action {action} is not a cell of the board")
        return self._cell_name(x, y)

    def _grid(self):
        """Rows y = 0..D-1 of cell values (-1 empty, 0 white, 1 black), each row over its x range."""
        rows = []
        for y in range(self.D):
            x0, x1 = self._row_span(y)
            rows.append([self.cell[(y + 1) * self.W + x + 1] for x in range(x0, x1 + 1)])
        return rows

    def _position_text(self) -> str:
        board = bt.format_board(self._grid(), SYMBOLS)
        return f"{board} {SYMBOLS[self._player]} {'swapped' if self.swapped else '-'}"

    def _parse_position(self, str text):
        name = self.game.spec
        parts = text.split()
        if not 2 <= len(parts) <= 3:
            raise InvalidPositionError(
                f"{name}: position {text!r} must be 'ROWS SIDE [swapped|-]' (e.g. "
                f"{empty_position(self.base)!r})")
        rows = parts[0].split("/")
        if len(rows) != self.D:
            raise InvalidPositionError(
                f"{name}: board {parts[0]!r} in {text!r} has {len(rows)} rows, expected {self.D}")
        stones = []                       # (x, y, player)
        for y, row in enumerate(rows):
            x0, x1 = self._row_span(y)
            width = x1 - x0 + 1
            j, x = 0, 0
            while j < len(row):
                ch = row[j]
                if ch.isdigit() and ch.isascii():
                    k = j
                    while k < len(row) and row[k].isdigit() and row[k].isascii():
                        k += 1
                    n = int(row[j:k])
                    if n == 0:
                        raise InvalidPositionError(f"{name}: row {y + 1} of {text!r} has an empty run '0'")
                    x += n
                    j = k
                    continue
                if ch in SYMBOLS:
                    stones.append((x0 + x, y, SYMBOLS.index(ch)))
                elif ch != ".":
                    raise InvalidPositionError(
                        f"{name}: unexpected character {ch!r} in row {y + 1} of {text!r} (allowed: "
                        f"'w', 'b', '.', digits)")
                x += 1
                j += 1
            if x != width:
                raise InvalidPositionError(
                    f"{name}: row {y + 1} of {text!r} has {x} cells, expected {width}")
        if len(parts[1]) != 1 or parts[1] not in SYMBOLS:
            raise InvalidPositionError(
                f"{name}: side to move {parts[1]!r} in {text!r} must be 'w' or 'b'")
        side = SYMBOLS.index(parts[1])
        flag = parts[2] if len(parts) == 3 else "-"
        if flag not in ("-", "swapped"):
            raise InvalidPositionError(
                f"{name}: flag {flag!r} in {text!r} must be 'swapped' or '-'")
        swapped = flag == "swapped"
        nw = sum(1 for s in stones if s[2] == 0)
        nbk = len(stones) - nw
        if swapped:
            if not self.swap_on:
                raise InvalidPositionError(f"{name}: {text!r} says the swap was played, but the swap rule is off")
            ok = (side == 0 and nbk == nw + 1) or (side == 1 and nbk == nw and nw >= 1)
        else:
            ok = (side == 0 and nw == nbk) or (side == 1 and nw == nbk + 1)
        if not ok:
            raise InvalidPositionError(
                f"{name}: position {text!r} is unreachable ({nw} white and {nbk} black stones, "
                f"{PLAYERS[side]} to move{', after a swap' if swapped else ''})")
        return stones, side, swapped

    def _load(self, stones, int side, bint swapped):
        """Set the position; return the WIN_* bits of each player's structures."""
        self._clear()
        wins = [0, 0]
        cdef int c, p
        for x, y, p in stones:
            c = (y + 1) * self.W + x + 1
            wins[p] |= self._place(c, p)
            self._hash ^= ZOB[c][p]
        self._nul = 0
        self.swapped = swapped
        self._player = side
        if side:
            self._hash ^= ZOB_SIDE
        self._ply = self.filled + (1 if swapped else 0)
        last = 1 - side
        if wins[last]:
            self._terminal = True
            self._result = RESULT_FIRST_WINS if last == 0 else RESULT_SECOND_WINS
            self._wins = wins[last]
        elif self.filled == self.ncells or self._ply >= self.max_plies:
            self._terminal = True
            self._result = RESULT_DRAW
        return wins

    def _set_position_text(self, str text) -> None:
        stones, side, swapped = self._parse_position(text)
        cdef HavannahState tmp = self.game.new_state()
        wins = tmp._load(stones, side, swapped)
        if wins[side]:
            raise InvalidPositionError(
                f"{self.game.spec}: {PLAYERS[side]} (to move) already has a "
                f"{' and a '.join(_win_names(wins[side]))} in {text!r}")
        self._load(stones, side, swapped)

    def _termination_reason(self):
        """'ring', 'bridge', 'fork' (joined by 'and' when one stone completes several), or
        'full board' for a draw (the ply cap is only reached on a full board)."""
        if not self._terminal:
            return None
        if self._wins:
            return " and ".join(_win_names(self._wins))
        return "full board"

    def _drawing(self) -> str:
        b = self.base
        lines = [" " * (b + 2) + " ".join(LETTERS[:b])]
        for y, row in enumerate(self._grid()):
            x0, x1 = self._row_span(y)
            indent = 2 * x0 - y + b - 1
            cells = " ".join("." if v < 0 else SYMBOLS[v] for v in row)
            tail = f" {LETTERS[x1 + 1]}" if y < b - 1 else ""   # the column starting below
            lines.append(" " * indent + f"{y + 1:>2} " + cells + tail)
        if self._terminal:
            reason = self._termination_reason()
            lines.append(f"game over: {self.result()} ({reason}, ply {self._ply})")
        else:
            swap = ", swap available" if (self.swap_on and self._ply == 1 and not self.swapped) else ""
            lines.append(f"{PLAYERS[self._player]} ({SYMBOLS[self._player]}) to move (ply {self._ply}{swap})")
        return "\n".join(lines)

    def _transform_action(self, int sym, int action) -> int:
        if not 0 <= action < self.num_actions:
            raise InvalidMoveError(f"action id {action} is out of range [0, {self.num_actions})")
        if sym not in (0, 2, 6, 7):
            raise GameError(f"havannah: symmetry {sym} is not a symmetry of the game (allowed: 0, 2, 6, 7)")
        if action == self.swap_id:
            return action
        r, c = map_square(sym, action // self.D, action % self.D, self.D, self.D)
        return r * self.D + c


def empty_position(base) -> str:
    """The empty board's position text."""
    base = validate.integer(base, "havannah: base", 2, 64)
    d = 2 * base - 1
    rows = [str(d - abs(y - (base - 1))) for y in range(d)]
    return "/".join(rows) + " w -"
