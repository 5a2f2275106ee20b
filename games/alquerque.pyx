"""Alquerque (LoBoGames, seed 003; Ludii's "Alquerque" for ``rules=ludii``).

Board: the 5x5 points ``a1`` (bottom-left) .. ``e5``, joined orthogonally everywhere and diagonally
through the points with an even coordinate sum (the corners and the centre: the standard alternating
pattern); internally point ``r * 5 + c`` with row 0 at the *top*::

    5  o---o---o---o---o
       | \\ | / | \\ | / |
    4  o---o---o---o---o
       | / | \\ | / | \\ |
    3  o---o---.---x---x
       | \\ | / | \\ | / |
    2  x---x---x---x---x
       | / | \\ | / | \\ |
    1  x---x---x---x---x
       a   b   c   d   e

Start: ``x`` (player 0, moves first) on rows 1-2 and d3, e3 (the two rightmost points of the middle row
from its side); ``o`` on rows 4-5 and a3, b3; the centre empty (text ``ooooo/ooooo/oo1xx/xxxxx/xxxxx x
0``).

Rules. A **step** moves a piece to an adjacent empty point along a line, forward (straight or diagonal)
or sideways, never backward (``x`` moves up, ``o`` down): the seed paper only says "move your pieces to
adjacent connected positions"; **our choice** follows the standard rules (R. C. Bell's reading of the
Alfonso manuscript, which Ludii's Alquerque follows as far as we know: its source was not checked
here) and applies to both variants. A **capture** jumps over an
adjacent enemy piece along a line to the empty point just beyond, in any direction (backward too), and
removes the enemy piece at once (so a later jump of the same sequence may land on or pass through the
squares freed, but a piece is never jumped twice).

* ``rules=lobogames`` (default; the paper: "Multiple captures in a single turn are allowed. It is
  required to do a capture when possible."): when any capture exists the mover must capture, and a
  capturing piece must keep jumping while it can: a move is a whole capture sequence that cannot be
  extended. **Our choice**: any such complete sequence may be chosen (not only the longest; the paper
  states no majority rule). Sequences with the same start, end and set of captured pieces are one move.
* ``rules=ludii`` (the paper's description of Ludii's version): captures are optional and single (one
  jump per move).

A player that has no legal move on its turn (in particular one without pieces) loses; the ply cap (200)
is a draw. There is no repetition rule (docs/GAMES.md). Terminal evaluation: additive depth over the cap.

Actions. ``0..111``: the 112 directed steps (adjacent point pairs) sorted by (from, to). ``112 + i``:
the i-th entry of the **capture table**, every (from, to, set of captured points) that some sequence of
at most 12 jumps along the lines can produce on an empty board (each point jumped over at most once),
sorted by (from, to, captured set as a bit mask over the points): 93,074 entries, built at import, so
``num_actions`` = 93,186. Ids do not depend on the position and a single capture (the only kind under
``rules=ludii``) is its own table entry. ``max_legal``: **our exhaustive count** over every arrangement
of up to 12 enemy pieces and blockers on the 3x3 sublattice of points with even coordinates (a
capturing piece never leaves the sublattice of its start point; the other sublattices allow at most 23
sequences per piece) gives at most 260 distinct capture moves for one piece, so at most 12 x 260 = 3120
legal moves under ``rules=lobogames`` (steps are at most 12 x 5); at most 12 x 8 = 96 under
``rules=ludii``. Positions set from text are therefore limited to 12 pieces a side.

Notation: a step ``b2-b3`` (or ``b2b3``); a capture as its full path ``b2xd4`` or ``b2xd4xb4xd2`` (the
move is identified by its start, end and the pieces jumped, so any path with the same ones is accepted
for it). ``from`` x ``to`` alone names a longer sequence too when exactly one legal capture goes from
``from`` to ``to``. ``move_to_str`` writes a path playable in the current position when the move is
legal there.

Position text: ``BOARD SIDE PLY`` with the rows top to bottom, FEN-like (``x``, ``o``, ``.`` or digit
runs). Parsing accepts at most 12 pieces a side and not both sides empty, ``x`` to move at even plies
and ``o`` at odd plies (the ply may be omitted: then 0 or 1); a side without pieces, or the side to move
without a legal move, has lost.

Hash: board, side to move and **ply** (positions repeat, and the text carries the ply; this also keeps
the search graph acyclic).

Encoding: ``(5, 5, 2)`` planes [mover's pieces, opponent's pieces] from the mover's point of view: the
board is rotated 180 degrees when ``o`` is to move (its start then looks like ``x``'s). The start is
not mirror-symmetric (the middle row), so the game has no symmetry but the identity.
"""
import re

from libc.stdlib cimport malloc, free, qsort

from games._state cimport State, SCORE_ADDITIVE_DEPTH, RESULT_FIRST_WINS, RESULT_SECOND_WINS, RESULT_DRAW
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t, uint32_t

from games import boardtext as bt
from games import validate
from games.errors import GameError, InvalidMoveError, InvalidPositionError

cdef extern from *:
    int __builtin_ctz(unsigned int) nogil

cdef enum:
    ALQ_ONGOING = 0
    ALQ_CAPTURED_ALL = 1
    ALQ_NO_MOVE = 2
    ALQ_CAP = 3
    ALQ_MAX_PLIES = 200
    ALQ_NSTEPS = 112
    ALQ_MAX_JUMPS = 12             # a sequence captures at most the opponent's 12 pieces
    ALQ_PER_PIECE = 260            # most capture moves of one piece (see the module docstring)
    ALQ_HASH_CAP = 1 << 18         # open-addressing set used to build the capture table

REASONS = {ALQ_CAPTURED_ALL: "all pieces captured", ALQ_NO_MOVE: "no legal move", ALQ_CAP: "ply cap"}
SYMBOLS = "xo"
MAX_PLIES = ALQ_MAX_PLIES
PIECES = 12
START = "ooooo/ooooo/oo1xx/xxxxx/xxxxx"

# ---- geometry ---------------------------------------------------------------------------------------
_DIRS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


def _directions(p):
    r, c = divmod(p, 5)
    return [(dr, dc) for dr, dc in _DIRS if (dr == 0 or dc == 0 or (r + c) % 2 == 0)]


def _on(r, c):
    return 0 <= r < 5 and 0 <= c < 5


STEPS = sorted((f, (f // 5 + dr) * 5 + f % 5 + dc) for f in range(25) for dr, dc in _directions(f)
               if _on(f // 5 + dr, f % 5 + dc))
STEP_ID = {s: k for k, s in enumerate(STEPS)}
# JUMPS[f]: (to, jumped point) sorted by the landing point
JUMPS = [sorted(((f // 5 + 2 * dr) * 5 + f % 5 + 2 * dc, (f // 5 + dr) * 5 + f % 5 + dc)
                for dr, dc in _directions(f) if _on(f // 5 + 2 * dr, f % 5 + 2 * dc)) for f in range(25)]
JUMP_MID = {(f, t): m for f in range(25) for t, m in JUMPS[f]}
assert len(STEPS) == ALQ_NSTEPS

cdef int SFROM[ALQ_NSTEPS]
cdef int STO[ALQ_NSTEPS]
cdef int PSTEPS[2][ALQ_NSTEPS]     # the steps each player may make (not backward), ascending
cdef int NPSTEPS[2]
cdef int JN[25]
cdef int JTO[25][8]
cdef int JMID[25][8]
cdef int JSINGLE[25][8]            # action id of the single capture f -> JTO[f][j]

# the capture table (see the module docstring)
cdef int NCAP = 0
cdef unsigned char* CFROM = NULL
cdef unsigned char* CTO = NULL
cdef uint32_t* CMASK = NULL
cdef int OFF[626]                  # table entries of (from, to) are OFF[f*25+t] .. OFF[f*25+t+1]-1

cdef hash_t ZOB[25][2]
cdef hash_t ZSIDE
cdef hash_t ZPLY[ALQ_MAX_PLIES + 1]

cdef uint64_t* _SET = NULL


cdef void _set_add(uint64_t key) noexcept nogil:
    cdef uint64_t h = (key * <uint64_t>0x9E3779B97F4A7C15ULL) >> 46     # 18 bits
    while _SET[h] != 0:
        if _SET[h] == key:
            return
        h = (h + 1) & (ALQ_HASH_CAP - 1)
    _SET[h] = key


cdef void _trails(int start, int cur, uint32_t mask, int depth) noexcept nogil:
    """Add every (start, end, jumped set) of the jump sequences from `start` on an empty board."""
    cdef int j, m
    if mask:
        _set_add(((<uint64_t>(start * 25 + cur)) << 25) | mask)
    if depth == ALQ_MAX_JUMPS:
        return
    for j in range(JN[cur]):
        m = JMID[cur][j]
        if not (mask >> m) & 1:
            _trails(start, JTO[cur][j], mask | (1u << m), depth + 1)


cdef int _cmp_u64(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t*>a)[0]
    cdef uint64_t y = (<const uint64_t*>b)[0]
    return (x > y) - (x < y)


cdef int _lookup(int f, int t, uint32_t mask) noexcept nogil:
    """Action id of the capture (f, t, mask), or -1 when it is not in the table."""
    cdef int lo = OFF[f * 25 + t], hi = OFF[f * 25 + t + 1] - 1, mid
    while lo <= hi:
        mid = (lo + hi) >> 1
        if CMASK[mid] < mask:
            lo = mid + 1
        elif CMASK[mid] > mask:
            hi = mid - 1
        else:
            return ALQ_NSTEPS + mid
    return -1


cdef int _build_tables() except -1:
    global NCAP, CFROM, CTO, CMASK, _SET, ZSIDE
    cdef int i, j, k, p, f, t, n
    cdef uint64_t seed = 0xA1C0E12E
    cdef uint64_t key
    for k, (f, t) in enumerate(STEPS):
        SFROM[k], STO[k] = f, t
    for p in range(2):
        n = 0
        for k, (f, t) in enumerate(STEPS):
            if (t // 5 - f // 5) != (1 if p == 0 else -1):     # not backward
                PSTEPS[p][n] = k
                n += 1
        NPSTEPS[p] = n
    for f in range(25):
        JN[f] = len(JUMPS[f])
        for j, (t, m) in enumerate(JUMPS[f]):
            JTO[f][j], JMID[f][j] = t, m
    _SET = <uint64_t*>malloc(sizeof(uint64_t) * ALQ_HASH_CAP)
    if _SET == NULL:
        raise MemoryError()
    for i in range(ALQ_HASH_CAP):
        _SET[i] = 0
    with nogil:
        for f in range(25):
            _trails(f, f, 0, 0)
        n = 0
        for i in range(ALQ_HASH_CAP):
            if _SET[i]:
                _SET[n] = _SET[i]
                n += 1
        qsort(_SET, n, sizeof(uint64_t), _cmp_u64)
    NCAP = n
    CFROM = <unsigned char*>malloc(n)
    CTO = <unsigned char*>malloc(n)
    CMASK = <uint32_t*>malloc(sizeof(uint32_t) * n)
    if CFROM == NULL or CTO == NULL or CMASK == NULL:
        raise MemoryError()
    for i in range(626):
        OFF[i] = n
    for i in range(n - 1, -1, -1):
        key = _SET[i]
        k = <int>(key >> 25)
        CFROM[i] = k // 25
        CTO[i] = k % 25
        CMASK[i] = <uint32_t>(key & ((1u << 25) - 1))
        OFF[k] = i
    for i in range(624, -1, -1):           # pairs without an entry start where the next one does
        if OFF[i] > OFF[i + 1]:
            OFF[i] = OFF[i + 1]
    free(_SET)
    _SET = NULL
    for f in range(25):
        for j in range(JN[f]):
            JSINGLE[f][j] = _lookup(f, JTO[f][j], 1u << JMID[f][j])
    for i in range(25):
        ZOB[i][0] = splitmix64(&seed)
        ZOB[i][1] = splitmix64(&seed)
    ZSIDE = splitmix64(&seed)
    for i in range(ALQ_MAX_PLIES + 1):
        ZPLY[i] = splitmix64(&seed)
    return 0


_build_tables()
NUM_CAPTURES = NCAP

_STEP = re.compile(r"^([a-z]\d{1,2})\s*-?\s*([a-z]\d{1,2})$")
_CAPTURE = re.compile(r"^[a-z]\d{1,2}(?:\s*[x*:]\s*[a-z]\d{1,2})+$")


def facts(params: dict) -> dict:
    multi = params["rules"] == "lobogames"
    return dict(players=("x", "o"), num_actions=ALQ_NSTEPS + NCAP, max_plies=MAX_PLIES,
                planes_shape=(5, 5, 2), symmetries=(0,), score_kind=SCORE_ADDITIVE_DEPTH,
                max_legal=PIECES * ALQ_PER_PIECE if multi else PIECES * 8)


def _lookup_py(int f, int t, uint32_t mask):
    return _lookup(f, t, mask)


def capture_entry(index):
    """(from, to, captured points) of the capture table's entry ``index`` (for tests and tools)."""
    index = validate.integer(index, "alquerque: capture table index", 0, NCAP - 1)
    m = CMASK[index]
    return CFROM[index], CTO[index], tuple(q for q in range(25) if (m >> q) & 1)


def capture_id(f, t, captured) -> int:
    """The action id of the capture (f, t, captured points), or -1 when no jump sequence makes it."""
    cdef int fi = validate.integer(f, "alquerque: capture_id from-point", 0, 24)
    cdef int ti = validate.integer(t, "alquerque: capture_id to-point", 0, 24)
    if isinstance(captured, (str, bytes)) or not hasattr(captured, "__iter__"):
        raise GameError(f"alquerque: capture_id captured points: must be a sequence of points, "
                        f"got {captured!r:.60}")
    cdef uint32_t m = 0
    for q in captured:
        m |= 1u << <int>validate.integer(q, "alquerque: capture_id captured point", 0, 24)
    if m == 0:
        return -1
    return _lookup(fi, ti, m)


def _name(p):
    return bt.square_name(p // 5, p % 5, 5)


def _path(f, t, mask, board=None):
    """A jump path (list of points) from f to t jumping exactly the points of `mask`, each once; with
    `board` (the cells, piece lifted from f), every landing point must be empty."""
    def rec(cur, used, path):
        if used == mask and cur == t:
            return path
        for to, mid in JUMPS[cur]:
            bit = 1 << mid
            if mask & bit and not used & bit and (board is None or board[to] < 0):
                found = rec(to, used | bit, path + [to])
                if found:
                    return found
        return None
    return rec(f, 0, [f])


cdef class AlquerqueState(State):
    def __init__(self, info):
        self._init_base(info)
        self.multi = info.params["rules"] == "lobogames"
        flat = [v for row in bt.parse_board(START, 5, 5, SYMBOLS, "alquerque") for v in row]
        cdef int i
        for i in range(25):
            self.board[i] = flat[i]
        self.reason = ALQ_ONGOING
        self._rebuild()

    cdef void _rebuild(self) noexcept:
        cdef int i, v
        cdef hash_t k = 0
        self.count[0] = self.count[1] = 0
        for i in range(25):
            v = self.board[i]
            if v >= 0:
                k ^= ZOB[i][v]
                self.count[v] += 1
        if self._player:
            k ^= ZSIDE
        self.key = k
        self._hash = k ^ ZPLY[self._ply]

    # ---- hooks ----------------------------------------------------------------------------------
    cdef int _captures_from(self, int start, int cur, uint32_t mask, action_t* out, int lo, int n) noexcept nogil:
        """Append to out[lo:n] (kept sorted and unique) the complete capture sequences of the piece
        that started on `start`, now on `cur` after jumping the points of `mask`; return the new n.
        The board is changed during the walk and restored."""
        cdef signed char p = <signed char>self._player
        cdef signed char q = 1 - p
        cdef signed char* b = self.board
        cdef int j, m, t, a, pos, k
        cdef bint extended = False
        for j in range(JN[cur]):
            m = JMID[cur][j]
            t = JTO[cur][j]
            if b[m] == q and b[t] < 0:
                extended = True
                b[m] = -1
                b[cur] = -1
                b[t] = p
                n = self._captures_from(start, t, mask | (1u << m), out, lo, n)
                b[t] = -1
                b[cur] = p
                b[m] = q
        if not extended and mask:
            a = _lookup(start, cur, mask)
            pos = n
            while pos > lo and out[pos - 1] > a:
                pos -= 1
            if pos > lo and out[pos - 1] == a:
                return n
            k = n
            while k > pos:
                out[k] = out[k - 1]
                k -= 1
            out[pos] = a
            n += 1
        return n

    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        cdef int p = self._player
        cdef int q = 1 - p
        cdef signed char* b = self.board
        cdef int f, j, k, n = 0
        if self.multi:
            for f in range(25):
                if b[f] == p:
                    n = self._captures_from(f, f, 0, out, n, n)
            if n:
                return n
        for j in range(NPSTEPS[p]):
            k = PSTEPS[p][j]
            if b[SFROM[k]] == p and b[STO[k]] < 0:
                out[n] = k
                n += 1
        if not self.multi:
            for f in range(25):
                if b[f] == p:
                    for j in range(JN[f]):
                        if b[JMID[f][j]] == q and b[JTO[f][j]] < 0:
                            out[n] = JSINGLE[f][j]
                            n += 1
        return n

    cdef bint _has_move(self, int p) noexcept nogil:
        cdef int q = 1 - p
        cdef signed char* b = self.board
        cdef int f, j, k
        for j in range(NPSTEPS[p]):
            k = PSTEPS[p][j]
            if b[SFROM[k]] == p and b[STO[k]] < 0:
                return True
        for f in range(25):
            if b[f] == p:
                for j in range(JN[f]):
                    if b[JMID[f][j]] == q and b[JTO[f][j]] < 0:
                        return True
        return False

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int p = self._player
        cdef int q = 1 - p
        cdef int f, t, i
        cdef uint32_t mask
        if a < ALQ_NSTEPS:
            f = SFROM[a]
            t = STO[a]
        else:
            i = a - ALQ_NSTEPS
            f = CFROM[i]
            t = CTO[i]
            mask = CMASK[i]
            while mask:
                i = __builtin_ctz(mask)
                mask &= mask - 1
                self.board[i] = -1
                self.key ^= ZOB[i][q]
                self.count[q] -= 1
        self.board[f] = -1
        self.board[t] = <signed char>p
        self.key ^= ZOB[f][p] ^ ZOB[t][p] ^ ZSIDE
        self._player = q
        self._hash = self.key ^ ZPLY[self._ply]
        if self.count[q] == 0:
            self._terminal = True
            self._result = RESULT_FIRST_WINS if p == 0 else RESULT_SECOND_WINS
            self.reason = ALQ_CAPTURED_ALL
        elif not self._has_move(q):
            self._terminal = True
            self._result = RESULT_FIRST_WINS if p == 0 else RESULT_SECOND_WINS
            self.reason = ALQ_NO_MOVE
        elif self._ply >= self.max_plies:
            self._terminal = True
            self._result = RESULT_DRAW
            self.reason = ALQ_CAP

    cdef void _do_undo(self, action_t a) noexcept nogil:
        cdef int p = self._player              # the mover of `a`
        cdef int q = 1 - p
        cdef int f, t, i
        cdef uint32_t mask
        if a < ALQ_NSTEPS:
            f = SFROM[a]
            t = STO[a]
        else:
            i = a - ALQ_NSTEPS
            f = CFROM[i]
            t = CTO[i]
            mask = CMASK[i]
        self.board[t] = -1
        self.board[f] = <signed char>p
        if a >= ALQ_NSTEPS:
            while mask:
                i = __builtin_ctz(mask)
                mask &= mask - 1
                self.board[i] = <signed char>q
                self.key ^= ZOB[i][q]
                self.count[q] += 1
        self.key ^= ZOB[f][p] ^ ZOB[t][p] ^ ZSIDE
        self.reason = ALQ_ONGOING

    cdef void encode(self, float* out) noexcept nogil:
        cdef int i, v, j
        cdef int p = self._player
        for i in range(25):
            j = 2 * (i if p == 0 else 24 - i)
            v = self.board[i]
            out[j] = 1.0 if v == p else 0.0
            out[j + 1] = 1.0 if (v >= 0 and v != p) else 0.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef AlquerqueState d = <AlquerqueState>dst
        d.board = self.board
        d.count = self.count
        d.multi = self.multi
        d.reason = self.reason
        d.key = self.key

    # ---- text ---------------------------------------------------------------------------------------
    def _grid(self):
        return [[self.board[r * 5 + c] for c in range(5)] for r in range(5)]

    def _parse_move_text(self, str text) -> int:
        low = text.lower()
        try:
            m = _STEP.match(low)
            if m:
                f = self._point(m.group(1))
                t = self._point(m.group(2))
                if (f, t) not in STEP_ID:
                    raise InvalidMoveError(f"{m.group(1)} and {m.group(2)} are not adjacent along a line"
                                           f" (captures are written with 'x', e.g. 'b2xd4')")
                return STEP_ID[f, t]
            if _CAPTURE.match(low):
                pts = [self._point(s.strip()) for s in re.split(r"[x*:]", low)]
                return self._capture_of_path(pts)
        except InvalidMoveError as err:
            raise InvalidMoveError(f"alquerque: move {text!r}: {err}") from None
        raise InvalidMoveError(
            f"alquerque: malformed move {text!r} (expected a step such as 'b2-b3' or a capture path "
            f"such as 'b2xd4' or 'b2xd4xb4')")

    def _point(self, s):
        r, c = bt.parse_square(s, 5, 5, "point")
        return r * 5 + c

    def _capture_of_path(self, list pts):
        """The capture action named by a path of points (see the module docstring)."""
        if len(pts) == 2 and (pts[0], pts[1]) not in JUMP_MID:
            return self._capture_between(pts[0], pts[1])
        mask = 0
        for i in range(len(pts) - 1):
            hop = (pts[i], pts[i + 1])
            if hop not in JUMP_MID:
                raise InvalidMoveError(f"{_name(hop[0])} to {_name(hop[1])} is not a jump along a line")
            bit = 1 << JUMP_MID[hop]
            if mask & bit:
                raise InvalidMoveError(f"the path jumps over {_name(JUMP_MID[hop])} twice")
            mask |= bit
        aid = _lookup_py(pts[0], pts[len(pts) - 1], mask)
        if aid < 0:
            raise InvalidMoveError("the path is longer than 12 jumps")
        return aid

    def _capture_between(self, f, t):
        """The legal capture from f to t, when there is exactly one."""
        found = []
        for x in self.legal_actions_list():
            if x >= ALQ_NSTEPS and capture_entry(x - ALQ_NSTEPS)[:2] == (f, t):
                found.append(x)
        if len(found) == 1:
            return found[0]
        if not found:
            raise InvalidMoveError(f"no legal capture sequence goes from {_name(f)} to {_name(t)}")
        names = [self._move_text(x) for x in found]
        raise InvalidMoveError(f"several capture sequences go from {_name(f)} to {_name(t)}; give the "
                               f"path: {', '.join(names)}")

    def _move_text(self, int action) -> str:
        if action < ALQ_NSTEPS:
            f, t = STEPS[action]
            return f"{_name(f)}-{_name(t)}"
        i = action - ALQ_NSTEPS
        f, t, mask = CFROM[i], CTO[i], CMASK[i]
        path = None
        if self.is_legal_action(action):
            cells = [self.board[q] for q in range(25)]
            cells[f] = -1
            path = _path(f, t, mask, cells)
        if path is None:
            path = _path(f, t, mask)
        return "x".join(_name(q) for q in path)

    def _position_text(self) -> str:
        return f"{bt.format_board(self._grid(), SYMBOLS)} {SYMBOLS[self._player]} {self._ply}"

    def _set_position_text(self, str text) -> None:
        name = self.game.spec
        board, side, ply = bt.split_position(text, name, SYMBOLS)
        grid = bt.parse_board(board, 5, 5, SYMBOLS, name)
        flat = [v for row in grid for v in row]
        nx, no = flat.count(0), flat.count(1)
        if nx > PIECES or no > PIECES:
            raise InvalidPositionError(
                f"{name}: position {text!r} has {nx} x and {no} o (at most {PIECES} each)")
        if nx == 0 and no == 0:
            raise InvalidPositionError(f"{name}: position {text!r} has no pieces")
        if ply is None:
            ply = side
        if ply % 2 != side:
            raise InvalidPositionError(
                f"{name}: ply {ply} in {text!r} is impossible with {SYMBOLS[side]} to move "
                f"(x moves at even plies)")
        if ply > self.max_plies:
            raise InvalidPositionError(f"{name}: ply {ply} in {text!r} exceeds the ply cap {self.max_plies}")
        # Validation done: set the state.
        cdef int i
        for i in range(25):
            self.board[i] = flat[i]
        self._player = side
        self._ply = ply
        self._rebuild()
        self._terminal, self._result, self.reason = False, RESULT_DRAW, ALQ_ONGOING
        loser = 0 if nx == 0 else 1 if no == 0 else None
        if loser is not None:
            self._terminal, self.reason = True, ALQ_CAPTURED_ALL
        elif not self._has_move(side):
            self._terminal, self.reason, loser = True, ALQ_NO_MOVE, side
        elif ply >= self.max_plies:
            self._terminal, self.reason = True, ALQ_CAP
        if loser is not None:
            self._result = RESULT_SECOND_WINS if loser == 0 else RESULT_FIRST_WINS

    def _termination_reason(self):
        return REASONS.get(self.reason) if self._terminal else None

    def _drawing(self) -> str:
        sym = [["." if v < 0 else SYMBOLS[v] for v in row] for row in self._grid()]
        links = ["| \\ | / | \\ | / |", "| / | \\ | / | \\ |"]
        rows = []
        for r in range(5):
            rows.append(f"{5 - r}  " + "---".join(sym[r]))
            if r < 4:
                rows.append("   " + links[r % 2])
        rows.append("   a   b   c   d   e")
        if self._terminal:
            rows.append(f"game over: {self.result()} ({REASONS[self.reason]}, ply {self._ply})")
        else:
            rows.append(f"{SYMBOLS[self._player]} to move (ply {self._ply}; {self.count[0]} x, "
                        f"{self.count[1]} o)")
        return "\n".join(rows)

    def _transform_action(self, int sym, int action) -> int:
        if not 0 <= action < self.num_actions:
            raise InvalidMoveError(f"action id {action} is out of range [0, {self.num_actions})")
        if sym != 0:
            raise GameError(f"alquerque: symmetry {sym} is not a symmetry of the game (allowed: 0)")
        return action
