"""International draughts (FMJD rules) on 10x10, and the same rules on 8x8 ("Brazilian").

Board and numbering. The dark squares are numbered in PDN order: 1 is the leftmost dark square of
the top row (b10 on 10x10, b8 on 8x8), numbering runs left to right and top to bottom, and the
bottom-left corner a1 is dark (46 on 10x10, 29 on 8x8). White (player 0) starts on the bottom rows
(31-50 on 10x10, 21-32 on 8x8), moves up (towards square 1) and moves first; black (player 1)
starts on 1-20 (1-12).

Rules implemented (FMJD Official Rules, Annex 1, articles 3-6):
- A man steps one square diagonally forward onto an empty square. A king ("flying king") moves any
  distance along a diagonal over empty squares.
- Capturing is compulsory, forwards and backwards, for men and kings. A man jumps an adjacent enemy
  piece onto the empty square just beyond; a king jumps an enemy piece at any distance along a
  diagonal (only empty squares between) and lands on any empty square beyond it. A capture goes on
  while another capture is possible from the landing square.
- Maximal capture: the player must play a sequence that captures the most pieces; kings and men
  count the same (one each). Among the maximal sequences the choice is free.
- Captured pieces are removed only when the sequence ends; until then they stay on the board: a
  piece is never jumped twice and a captured piece blocks (it may not be jumped again, landed on or
  flown over). The square the capturing piece started from counts as empty during its sequence.
- A man promotes to king only when its move ENDS on the far row; a man passing through the far row
  during a capture and leaving it again stays a man.
- A player who cannot move (no pieces, or all blocked) loses.
- A move is the triple (from, to, set of captured squares): sequences that differ only in their
  path (order of captures, intermediate landing squares) are ONE move.

Draw rules (checked after every move, after the win test: a move that leaves the opponent without
a legal move wins even when it also completes a draw condition):
- threefold repetition: the same position (pieces and side to move) for the third time. Only
  positions since the last man move or capture can repeat, and only positions played in this
  state's history count (a position set from text starts a new history).
- 25-move rule (art. 6.3): 25 moves each (50 plies) in which only kings moved and nothing was
  captured. Counter ``H`` (plies) resets on every man move and every capture.
- 16-move rule (art. 6.4): as soon as one side has a lone king and the other side three pieces of
  which at least one is a king (3 kings, 2 kings + 1 man, 1 king + 2 men against 1 king), a clock
  starts; the game is drawn when 16 moves each (32 plies) have been played since then. Counter
  ``S`` (plies since the configuration arose).
- 5-move rule (art. 6.4 end): likewise for a lone king against one or two pieces of which at least
  one is a king (2 kings, king + man, or a king against a king): drawn after 5 moves each
  (10 plies). Counter ``V``.
  Once started, each of the two clocks runs to the end of the game: a capture during the 16 moves
  does not reset or stop the 16-move clock ("the maximum of 16 moves remains valid"), and when the
  material falls to a 5-move configuration, the 5-move clock starts as well; whichever expires
  first draws. (py-draughts implements the same reading.)
- ply cap: 1000 plies, a draw (never reached in practice: the rules above end every game long
  before; it bounds buffers).
The 8x8 board uses exactly the same rules, including the 25/16/5-move rules (the Brazilian
federation's own draw rules differ; this engine does not implement them).

Hash: Zobrist of the pieces and side to move, xor keys of the 25-, 16- and 5-move counters. The history
key (``history_key``; the searches use ``search_key = zobrist_hash ^ history_key``) adds the multiset of
the positions since the last man move or capture (those that can recur) and the ply (the ply cap).

Actions. A move with from-square f and to-square t (PDN numbers minus 1, N = 50 or 32 squares) has
the id ``f * N + t``. Two different moves with the same (f, t) exist only for captures that take
different sets of pieces; then the move with the smallest captured set (sets compared as bit masks
with bit i for square i + 1, i.e. the set lacking the highest-numbered square where they differ
comes first) gets ``f * N + t`` and the others get the "extra" ids ``N*N + j``, j = 0, 1, ..., in the
order (f, t, captured set) over the whole position. Extra ids are thus only meaningful within their
position (like every id, they are only valid there). ``num_actions = N*N + 512`` and
``max_legal = 512``; a position with more than 512 legal moves is refused when set from text (no
such position is known to arise in play).

Notation (PDN): ``32-28`` for a move, ``28x19`` for a capture. When two captures share from- and
to-squares, ``move_to_str`` writes the full path of landing squares, ``28x17x8x19`` (one path of the
move), which names the captured pieces. Parsing accepts ``f-t``, ``fxt`` (either separator for
either kind of move; an ambiguous capture given by its ends is refused with the candidate paths in
the message) and full paths ``fxaxbx...xt`` (the pieces jumped on each leg determine the move).

Position text: PDN FEN as written by lidraughts and py-draughts, ``SIDE:W<white>:B<black>`` with
comma-separated square numbers, kings prefixed ``K``, e.g. ``W:W31,32,K46:B1,2``; ranges (``31-50``,
``K1-3``) and the ``[FEN "..."]`` wrapper are accepted on input. Trailing fields: ``H<n>`` the
25-move counter (plies), ``F<n>`` the full-move number (ply = 2 * (F - 1) + 1 if black is to move
else 2 * (F - 1)), and, only while they run, ``S<n>`` and ``V<n>`` the 16- and 5-move clocks
(plies). Written as ``W:W31,...,50:B1,...,20:H0:F1``. Parsing refuses: squares off the board or
given twice, a man on its own promotion row, more pieces per side than at the start, a position
where the side that just moved has no pieces, counters out of range or inconsistent with the
material.

Terminal evaluation: summed piece values (man 1, king 3): natural score = (white material - black
material) / (20 on 10x10, 12 on 8x8), clipped to [-1, 1].

Encoding: (n, n, 4) planes [mover's men, mover's kings, opponent's men, opponent's kings] on the full
board (light squares always 0), row 0 at the top; when black is to move the board is rotated by 180
degrees so that the mover always advances towards row 0. Symmetries: identity only (mirroring moves
the dark squares; the 180-degree rotation is already used by the mover's view).

Engine: four 64-bit bitboards in a ghost-square layout (PDN square i is bit i + i // n), so that the
diagonal steps are shifts by w, w + 1 (down) and -w, -(w + 1) (up), w = n / 2; a step off the board
lands on a bit outside the board. Quiet moves and the capture test are whole-board shifts; captures
are found by depth-first search with the captured pieces left on the board, pruned by the number of
enemy pieces left. Undo restores a saved copy of the boards.
"""
import re

from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy, memset

from games._state cimport State, SCORE_NATURAL, RESULT_FIRST_WINS, RESULT_SECOND_WINS, RESULT_DRAW
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t, popcount64, mix64, ply_key

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

from games import boardtext as bt
from games.errors import GameError, IllegalMoveError, InvalidMoveError, InvalidPositionError

# Why the game ended.
cdef enum:
    REASON_NONE = 0
    REASON_NO_MOVE = 1
    REASON_REPETITION = 2
    REASON_25 = 3
    REASON_16 = 4
    REASON_5 = 5
    REASON_CAP = 6

_REASONS = {REASON_REPETITION: "threefold repetition", REASON_25: "25-move rule",
            REASON_16: "16-move rule", REASON_5: "5-move rule"}

cdef enum:
    H_DRAW = 50          # plies of king moves without capture: 25 moves each
    S_DRAW = 32          # 16 moves each
    V_DRAW = 10          # 5 moves each
    MAX_PLIES = 1000

# ---- geometry tables (index 0: 8x8, 1: 10x10) -----------------------------------------------------
cdef signed char NB[2][256]      # NB[sz][b * 4 + d]: the diagonal neighbour of ghost square b, or -1
cdef signed char G2P[2][64]      # ghost bit -> PDN index (0-based), -1 for ghost bits
cdef signed char P2G[2][64]      # PDN index -> ghost bit
cdef short G2RC[2][64]           # ghost bit -> r * n + c on the full board (row 0 at the top)
cdef uint64_t VALID[2]           # the playable squares
cdef uint64_t PROMO[2][2]        # [sz][player]: the row where that player's men promote
cdef int SHIFT[2][4]             # directions: 0 up-left, 1 up-right, 2 down-left, 3 down-right

# Zobrist keys: pieces (kind = 2 * player + is_king) on ghost bits, side, and the draw counters
# (index 0 of each counter table is 0, so a counter at rest adds nothing).
cdef hash_t ZP[4][64]
cdef hash_t ZSIDE
cdef hash_t ZH[64]
cdef hash_t ZS[40]
cdef hash_t ZV[16]


cdef inline uint64_t _shift(uint64_t x, int s) noexcept nogil:
    return (x << s) if s > 0 else (x >> (-s))


cdef inline int _popc(uint64_t x) noexcept nogil:
    return popcount64(x)


def _init_tables():
    cdef int sz, n, w, i, b, r, k, c, d, r2, c2, i2
    cdef uint64_t seed = 0xD2A0647
    for sz, n in ((0, 8), (1, 10)):
        w = n // 2
        VALID[sz] = 0
        PROMO[sz][0] = PROMO[sz][1] = 0
        for b in range(64):
            G2P[sz][b] = -1
            G2RC[sz][b] = -1
            for d in range(4):
                NB[sz][b * 4 + d] = -1
        SHIFT[sz][0] = -(w + 1)
        SHIFT[sz][1] = -w
        SHIFT[sz][2] = w
        SHIFT[sz][3] = w + 1
        for i in range(n * w):
            b = i + i // n
            r, k = divmod(i, w)
            c = 2 * k + 1 if r % 2 == 0 else 2 * k
            P2G[sz][i] = b
            G2P[sz][b] = i
            G2RC[sz][b] = r * n + c
            VALID[sz] |= (<uint64_t>1) << b
            if r == 0:
                PROMO[sz][0] |= (<uint64_t>1) << b
            if r == n - 1:
                PROMO[sz][1] |= (<uint64_t>1) << b
        for i in range(n * w):
            b = i + i // n
            r, k = divmod(i, w)
            c = 2 * k + 1 if r % 2 == 0 else 2 * k
            for d, (dr, dc) in enumerate(((-1, -1), (-1, 1), (1, -1), (1, 1))):
                r2, c2 = r + dr, c + dc
                if 0 <= r2 < n and 0 <= c2 < n:
                    i2 = r2 * w + c2 // 2
                    NB[sz][b * 4 + d] = P2G[sz][i2]
        # The layout's promise: a step is a shift, and a step off the board leaves the board.
        for i in range(n * w):
            b = P2G[sz][i]
            for d in range(4):
                t = b + SHIFT[sz][d]
                if NB[sz][b * 4 + d] >= 0:
                    assert t == NB[sz][b * 4 + d]
                else:
                    assert t < 0 or t >= 64 or not (VALID[sz] >> t) & 1
    for k in range(4):
        for b in range(64):
            ZP[k][b] = splitmix64(&seed)
    global ZSIDE
    ZSIDE = splitmix64(&seed)
    ZH[0] = ZS[0] = ZV[0] = 0
    for i in range(1, 64):
        ZH[i] = splitmix64(&seed)
    for i in range(1, 40):
        ZS[i] = splitmix64(&seed)
    for i in range(1, 16):
        ZV[i] = splitmix64(&seed)


_init_tables()


def facts(params: dict) -> dict:
    n = params.get("board", 10)
    nsq = n * n // 2
    return dict(players=("white", "black"), num_actions=nsq * nsq + DR_MAXMOVES, max_plies=MAX_PLIES,
                planes_shape=(n, n, 4), symmetries=(0,), score_kind=SCORE_NATURAL,
                max_legal=DR_MAXMOVES, extra={"history_dependent": True})


# ---- capture search ------------------------------------------------------------------------------

ctypedef struct DrGen:
    uint64_t opp                  # enemy pieces (captured ones included: they stay until the end)
    uint64_t empty                # empty squares, the mover's origin included
    const signed char* nb
    DrCap* out
    signed char* paths
    int n                         # moves recorded
    int best                      # captures of the recorded moves (the most found so far)
    int frm
    bint want_paths
    bint overflow
    signed char path[DR_MAXPATH]


cdef void _record(DrGen* g, int to, uint64_t cap, int ncap) noexcept nogil:
    cdef int i
    if ncap < g.best:
        return
    if ncap > g.best:
        g.best = ncap
        g.n = 0
        g.overflow = False
    for i in range(g.n):
        if g.out[i].cap == cap and g.out[i].to == to and g.out[i].frm == g.frm:
            return                # the same move by another path
    if g.n >= DR_MAXMOVES:
        g.overflow = True
        return
    cdef DrCap* e = &g.out[g.n]
    e.cap = cap
    e.frm = <signed char>g.frm
    e.to = <signed char>to
    e.pidx = <short>g.n
    if g.want_paths:
        memcpy(&g.paths[g.n * DR_MAXPATH], g.path, DR_MAXPATH)
    g.n += 1


cdef void _man_dfs(DrGen* g, int b, uint64_t cap, int depth) noexcept nogil:
    cdef uint64_t live = g.opp & ~cap
    if depth + _popc(live) < g.best:
        return                    # cannot reach the longest sequence found
    cdef int d, m, l
    cdef bint more = False
    for d in range(4):
        m = g.nb[b * 4 + d]
        if m < 0 or not ((live >> m) & 1):
            continue
        l = g.nb[m * 4 + d]
        if l < 0 or not ((g.empty >> l) & 1):
            continue
        more = True
        if depth + 1 < DR_MAXPATH:
            g.path[depth + 1] = <signed char>l
        _man_dfs(g, l, cap | ((<uint64_t>1) << m), depth + 1)
    if not more and depth > 0:
        _record(g, b, cap, depth)


cdef void _king_dfs(DrGen* g, int b, uint64_t cap, int depth) noexcept nogil:
    cdef uint64_t live = g.opp & ~cap
    if depth + _popc(live) < g.best:
        return
    cdef int d, t, l
    cdef bint more = False
    for d in range(4):
        t = g.nb[b * 4 + d]
        while t >= 0 and (g.empty >> t) & 1:
            t = g.nb[t * 4 + d]
        if t < 0 or not ((live >> t) & 1):
            continue              # the edge, an own piece or a piece already captured
        l = g.nb[t * 4 + d]
        while l >= 0 and (g.empty >> l) & 1:
            more = True
            if depth + 1 < DR_MAXPATH:
                g.path[depth + 1] = <signed char>l
            _king_dfs(g, l, cap | ((<uint64_t>1) << t), depth + 1)
            l = g.nb[l * 4 + d]
    if not more and depth > 0:
        _record(g, b, cap, depth)


cdef inline bint _cap_less(DrCap* a, DrCap* b) noexcept nogil:
    if a.frm != b.frm:
        return a.frm < b.frm
    if a.to != b.to:
        return a.to < b.to
    return a.cap < b.cap


def _square_rc(int i, int w):
    """PDN index (0-based) -> (row from the top, column) on a board with w dark squares per row."""
    cdef int r = i // w
    cdef int k = i % w
    return r, (2 * k + 1 if r % 2 == 0 else 2 * k)


cdef class DraughtsState(State):
    """A draughts position (see the module docstring for rules, ids and text formats)."""

    def __cinit__(self):
        self._undo = NULL
        self._quiet_tag = NULL
        self._cc = NULL
        self._cc_ids = NULL
        self._cc_paths = NULL

    def __init__(self, info):
        self._init_base(info)
        cdef int n = info.params.get("board", 10)
        if n != 8 and n != 10:
            raise ValueError(f"international_draughts: board {n} is not supported (8 or 10)")
        self.n = n
        self.sz = 1 if n == 10 else 0
        self.nsq = n * n // 2
        self.nn = self.nsq * self.nsq
        self.max_material = 20 if n == 10 else 12
        self._undo_cap = self.max_plies + 1
        self._undo = <DrUndo*>malloc(sizeof(DrUndo) * self._undo_cap)
        self._quiet_tag = <hash_t*>calloc(self._undo_cap + 1, sizeof(hash_t))
        self._cc = <DrCap*>malloc(sizeof(DrCap) * DR_MAXMOVES)
        self._cc_ids = <action_t*>malloc(sizeof(action_t) * DR_MAXMOVES)
        self._cc_paths = <signed char*>malloc(DR_MAXMOVES * DR_MAXPATH)
        if (self._undo == NULL or self._quiet_tag == NULL or self._cc == NULL or self._cc_ids == NULL
                or self._cc_paths == NULL):
            raise MemoryError()
        self._nundo = 0
        cdef int per_side = (n - 2) // 2 * (n // 2)     # 4 rows of 5 on 10x10, 3 rows of 4 on 8x8
        cdef int i
        self.men[0] = self.men[1] = self.kings[0] = self.kings[1] = 0
        for i in range(per_side):
            self.men[1] |= (<uint64_t>1) << P2G[self.sz][i]
            self.men[0] |= (<uint64_t>1) << P2G[self.sz][self.nsq - 1 - i]
        self.hclock = 0
        self.s16 = -1
        self.v5 = -1
        self.reason = REASON_NONE
        self._rebuild()
        self._settle()

    def __dealloc__(self):
        free(self._undo)
        free(self._quiet_tag)
        free(self._cc)
        free(self._cc_ids)
        free(self._cc_paths)
        self._undo = NULL
        self._quiet_tag = NULL
        self._cc = NULL
        self._cc_ids = NULL
        self._cc_paths = NULL

    # ---- internals ----------------------------------------------------------------------------------
    cdef void _rebuild(self) noexcept nogil:
        """The repetition key and hash from scratch (boards, side, counters)."""
        cdef uint64_t x
        cdef int k, b
        cdef hash_t h = 0
        for k in range(4):
            x = self.kings[k >> 1] if (k & 1) else self.men[k >> 1]
            while x:
                b = __builtin_ctzll(x)
                x &= x - 1
                h ^= ZP[k][b]
        if self._player:
            h ^= ZSIDE
        self.rkey = h
        self._hash = h ^ ZH[self.hclock] ^ ZS[self.s16 + 1] ^ ZV[self.v5 + 1]
        self._hist_key = mix64(h) + ply_key(self._ply)
        self._cc_ok = False

    cdef bint _has_capture(self, int p) noexcept nogil:
        """Whether player p has a capture (whole-board shifts)."""
        cdef int q = 1 - p
        cdef uint64_t opp = self.men[q] | self.kings[q]
        cdef uint64_t empty = VALID[self.sz] & ~(opp | self.men[p] | self.kings[p])
        cdef uint64_t M = self.men[p]
        cdef uint64_t K = self.kings[p]
        cdef uint64_t reach, r
        cdef int d, s
        for d in range(4):
            s = SHIFT[self.sz][d]
            if _shift(_shift(M, s) & opp, s) & empty:
                return True
            if K:
                reach = K
                r = K
                while r:
                    r = _shift(r, s) & empty
                    reach |= r
                if _shift(_shift(reach, s) & opp, s) & empty:
                    return True
        return False

    cdef bint _has_move(self, int p) noexcept nogil:
        cdef uint64_t empty = VALID[self.sz] & ~(self.men[0] | self.men[1] | self.kings[0] | self.kings[1])
        cdef int d0 = 0 if p == 0 else 2
        cdef int d
        if (_shift(self.men[p], SHIFT[self.sz][d0]) | _shift(self.men[p], SHIFT[self.sz][d0 + 1])) & empty:
            return True
        if self.kings[p]:
            for d in range(4):
                if _shift(self.kings[p], SHIFT[self.sz][d]) & empty:
                    return True
        return self._has_capture(p)

    cdef int _gen_captures(self, int p, bint paths, int only_from) noexcept nogil:
        """All maximal captures of player p (of the piece on ghost square `only_from` if >= 0), into
        `_cc` sorted by (from, to, captured set), with their ids in `_cc_ids`; returns how many.

        A full list (only_from < 0) becomes the capture cache of the position."""
        cdef DrGen g
        cdef int q = 1 - p
        cdef uint64_t occ = self.men[0] | self.men[1] | self.kings[0] | self.kings[1]
        cdef uint64_t base_empty = VALID[self.sz] & ~occ
        cdef uint64_t pieces = self.men[p] | self.kings[p]
        cdef int b, i, j, N = self.nsq
        cdef DrCap t
        g.opp = self.men[q] | self.kings[q]
        g.nb = &NB[self.sz][0]
        g.out = self._cc
        g.paths = self._cc_paths
        g.n = 0
        g.best = 1
        g.want_paths = paths
        g.overflow = False
        if only_from >= 0:
            pieces &= (<uint64_t>1) << only_from
        # Men start a capture only next to an enemy piece with an empty square behind it.
        cdef uint64_t starts = 0
        cdef int d, s
        for d in range(4):
            s = SHIFT[self.sz][d]
            starts |= _shift(g.opp & _shift(base_empty, -s), -s)
        pieces &= starts | self.kings[p]
        while pieces:
            b = __builtin_ctzll(pieces)
            pieces &= pieces - 1
            g.frm = b
            g.empty = base_empty | ((<uint64_t>1) << b)
            g.path[0] = <signed char>b
            if (self.kings[p] >> b) & 1:
                _king_dfs(&g, b, 0, 0)
            else:
                _man_dfs(&g, b, 0, 0)
        # insertion sort by (from, to, captured set)
        for i in range(1, g.n):
            t = self._cc[i]
            j = i - 1
            while j >= 0 and _cap_less(&t, &self._cc[j]):
                self._cc[j + 1] = self._cc[j]
                j -= 1
            self._cc[j + 1] = t
        j = 0
        for i in range(g.n):
            if i > 0 and self._cc[i].frm == self._cc[i - 1].frm and self._cc[i].to == self._cc[i - 1].to:
                self._cc_ids[i] = self.nn + j
                j += 1
            else:
                self._cc_ids[i] = G2P[self.sz][self._cc[i].frm] * N + G2P[self.sz][self._cc[i].to]
        self._cc_n = g.n
        self._cc_overflow = g.overflow
        self._cc_ok = only_from < 0
        self._cc_hash = self._hash
        self._cc_ply = self._ply
        return g.n

    cdef int _quiet_actions(self, action_t* out) noexcept nogil:
        """The moves of the player to move when it has no capture, sorted ascending."""
        cdef int p = self._player
        cdef int sz = self.sz, N = self.nsq
        cdef uint64_t empty = VALID[sz] & ~(self.men[0] | self.men[1] | self.kings[0] | self.kings[1])
        cdef uint64_t pieces = self.men[p] | self.kings[p]
        cdef uint64_t tm
        cdef const signed char* nb = &NB[sz][0]
        cdef int b, d, t, f, n = 0
        cdef int d0 = 0 if p == 0 else 2
        while pieces:
            b = __builtin_ctzll(pieces)
            pieces &= pieces - 1
            f = G2P[sz][b] * N
            if (self.kings[p] >> b) & 1:
                tm = 0
                for d in range(4):
                    t = nb[b * 4 + d]
                    while t >= 0 and (empty >> t) & 1:
                        tm |= (<uint64_t>1) << t
                        t = nb[t * 4 + d]
                while tm:
                    t = __builtin_ctzll(tm)
                    tm &= tm - 1
                    out[n] = f + G2P[sz][t]
                    n += 1
            else:
                # forward targets in ascending order: up-left < up-right, down-left < down-right
                for d in range(d0, d0 + 2):
                    t = nb[b * 4 + d]
                    if t >= 0 and (empty >> t) & 1:
                        out[n] = f + G2P[sz][t]
                        n += 1
        return n

    cdef int _count_quiet(self) noexcept nogil:
        cdef int p = self._player
        cdef int sz = self.sz
        cdef uint64_t empty = VALID[sz] & ~(self.men[0] | self.men[1] | self.kings[0] | self.kings[1])
        cdef int d0 = 0 if p == 0 else 2
        cdef int d, s, n
        cdef uint64_t x
        n = (_popc(_shift(self.men[p], SHIFT[sz][d0]) & empty)
             + _popc(_shift(self.men[p], SHIFT[sz][d0 + 1]) & empty))
        if self.kings[p]:
            # rays of different kings in one direction never share a square
            for d in range(4):
                s = SHIFT[sz][d]
                x = _shift(self.kings[p], s) & empty
                while x:
                    n += _popc(x)
                    x = _shift(x, s) & empty
        return n

    cdef void _start_clocks(self) noexcept nogil:
        """Start the 16- and 5-move clocks when their material configuration holds."""
        cdef uint64_t occ = self.men[0] | self.men[1] | self.kings[0] | self.kings[1]
        if _popc(occ) > 4:
            return
        cdef int x, y, t
        for x in range(2):
            y = 1 - x
            if self.men[x] == 0 and _popc(self.kings[x]) == 1 and self.kings[y]:
                t = _popc(self.men[y] | self.kings[y])
                if t == 3:
                    if self.s16 < 0:
                        self.s16 = 0
                elif t <= 2:
                    if self.v5 < 0:
                        self.v5 = 0

    cdef void _settle(self) noexcept nogil:
        """Terminal status of the current position (after a move or a position set)."""
        cdef int k, count
        self._terminal = True
        self._result = RESULT_DRAW
        if not self._has_move(self._player):
            self.reason = REASON_NO_MOVE
            self._result = RESULT_SECOND_WINS if self._player == 0 else RESULT_FIRST_WINS
            return
        if self.hclock >= 4:
            count = 0
            k = 2
            while k <= self.hclock and k <= self._nundo:
                if self._undo[self._nundo - k].rkey == self.rkey:
                    count += 1
                    if count >= 2:
                        self.reason = REASON_REPETITION
                        return
                k += 2
        if self.hclock >= H_DRAW:
            self.reason = REASON_25
        elif self.s16 >= S_DRAW:
            self.reason = REASON_16
        elif self.v5 >= V_DRAW:
            self.reason = REASON_5
        elif self._ply >= self.max_plies:
            self.reason = REASON_CAP
        else:
            self._terminal = False
            self.reason = REASON_NONE

    # ---- hooks --------------------------------------------------------------------------------------
    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        cdef int i, n, k = 0
        if not self._has_capture(self._player):
            self._quiet_tag[self._nundo] = self._hash     # remembered for _do_apply
            return self._quiet_actions(out)
        n = self._gen_captures(self._player, False, -1)
        for i in range(n):                       # plain ids first (ascending), then extra ids
            if self._cc_ids[i] < self.nn:
                out[k] = self._cc_ids[i]
                k += 1
        for i in range(n):
            if self._cc_ids[i] >= self.nn:
                out[k] = self._cc_ids[i]
                k += 1
        return k

    cdef int count_legal_actions(self, action_t* scratch) noexcept nogil:
        if self._terminal:
            return 0
        if not self._has_capture(self._player):
            return self._count_quiet()
        return self._gen_captures(self._player, False, -1)

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int p = self._player
        cdef int q = 1 - p
        cdef int sz = self.sz, N = self.nsq
        cdef int i, n, frm = -1, to = -1, b, kf, kt
        cdef uint64_t cap = 0, cm, ck, bf, bto
        cdef DrUndo* u = &self._undo[self._nundo]
        u.men0 = self.men[0]
        u.men1 = self.men[1]
        u.kings0 = self.kings[0]
        u.kings1 = self.kings[1]
        u.rkey = self.rkey
        u.hclock = <short>self.hclock
        u.s16 = <short>self.s16
        u.v5 = <short>self.v5
        u.reason = <short>self.reason
        self._nundo += 1
        # Resolve the action into (from, to, captured). The position's capture status and list are
        # usually known from the legal_actions call that produced `a`.
        if self._quiet_tag[self._nundo - 1] == self._hash and a < self.nn:
            n = 0
            frm = P2G[sz][a // N]
            to = P2G[sz][a % N]
        elif self._cc_ok and self._cc_hash == self._hash and self._cc_ply == self._ply - 1:
            n = self._cc_n
        elif a < self.nn and not self._has_capture(p):
            n = 0
            frm = P2G[sz][a // N]
            to = P2G[sz][a % N]
        else:
            n = self._gen_captures(p, False, P2G[sz][a // N] if a < self.nn else -1)
        for i in range(n):
            if self._cc_ids[i] == a:
                frm = self._cc[i].frm
                to = self._cc[i].to
                cap = self._cc[i].cap
                break
        if frm < 0:                              # not a legal action: decode it as a plain move
            frm = P2G[sz][(a // N) % N]
            to = P2G[sz][a % N]
        # Move the piece (from == to is possible: a capture that comes back to its square).
        bf = (<uint64_t>1) << frm
        bto = (<uint64_t>1) << to
        cdef bint was_king = (self.kings[p] >> frm) & 1
        kf = 2 * p + was_king
        if was_king:
            self.kings[p] = (self.kings[p] & ~bf) | bto
            kt = kf
        else:
            self.men[p] &= ~bf
            if PROMO[sz][p] & bto:
                self.kings[p] |= bto
                kt = 2 * p + 1
            else:
                self.men[p] |= bto
                kt = 2 * p
        cdef hash_t rk = self.rkey ^ ZP[kf][frm] ^ ZP[kt][to] ^ ZSIDE
        if cap:
            cm = cap & self.men[q]
            ck = cap & self.kings[q]
            self.men[q] &= ~cm
            self.kings[q] &= ~ck
            while cm:
                b = __builtin_ctzll(cm)
                cm &= cm - 1
                rk ^= ZP[2 * q][b]
            while ck:
                b = __builtin_ctzll(ck)
                ck &= ck - 1
                rk ^= ZP[2 * q + 1][b]
        self.rkey = rk
        self.hclock = self.hclock + 1 if (was_king and cap == 0) else 0
        if self.s16 >= 0:
            self.s16 += 1
        if self.v5 >= 0:
            self.v5 += 1
        self._start_clocks()                     # the material may have changed (capture, promotion)
        self._hash = rk ^ ZH[self.hclock] ^ ZS[self.s16 + 1] ^ ZV[self.v5 + 1]
        # history key: the multiset of the positions since the last man move or capture, plus the ply
        if self.hclock == 0:
            self._hist_key = mix64(rk) + ply_key(self._ply)
        else:
            self._hist_key = self._hist_key - ply_key(self._ply - 1) + mix64(rk) + ply_key(self._ply)
        self._player = q
        self._cc_ok = False
        self._settle()

    cdef void _do_undo(self, action_t a) noexcept nogil:
        self._nundo -= 1
        cdef DrUndo* u = &self._undo[self._nundo]
        self.men[0] = u.men0
        self.men[1] = u.men1
        self.kings[0] = u.kings0
        self.kings[1] = u.kings1
        self.rkey = u.rkey
        self.hclock = u.hclock
        self.s16 = u.s16
        self.v5 = u.v5
        self.reason = u.reason

    cdef double natural_score(self) noexcept nogil:
        cdef double m = (_popc(self.men[0]) + 3 * _popc(self.kings[0])
                         - _popc(self.men[1]) - 3 * _popc(self.kings[1]))
        m /= self.max_material
        return 1.0 if m > 1.0 else (-1.0 if m < -1.0 else m)

    cdef void encode(self, float* out) noexcept nogil:
        cdef int nsq2 = self.n * self.n
        cdef int p = self._player
        cdef int k, b, rc
        cdef uint64_t x
        memset(out, 0, sizeof(float) * nsq2 * 4)
        for k in range(4):
            # channel: 0 mover's men, 1 mover's kings, 2 opponent's men, 3 opponent's kings
            x = self.kings[(p + (k >> 1)) & 1] if (k & 1) else self.men[(p + (k >> 1)) & 1]
            while x:
                b = __builtin_ctzll(x)
                x &= x - 1
                rc = G2RC[self.sz][b]
                if p:
                    rc = nsq2 - 1 - rc
                out[rc * 4 + k] = 1.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef DraughtsState d = <DraughtsState>dst
        d.men = self.men
        d.kings = self.kings
        d.hclock = self.hclock
        d.s16 = self.s16
        d.v5 = self.v5
        d.reason = self.reason
        d.rkey = self.rkey
        memcpy(d._undo, self._undo, sizeof(DrUndo) * self._nundo)
        d._nundo = self._nundo
        d._cc_ok = False

    # ---- Python helpers -----------------------------------------------------------------------------
    def _piece_grid(self):
        """PDN index -> piece kind (0 white man, 1 white king, 2 black man, 3 black king) or -1."""
        cells = [-1] * self.nsq
        cdef int i, b
        for i in range(self.nsq):
            b = P2G[self.sz][i]
            for k in range(4):
                x = self.kings[k >> 1] if (k & 1) else self.men[k >> 1]
                if (x >> b) & 1:
                    cells[i] = k
        return cells

    def _captures(self):
        """The maximal captures of the player to move: a list of (action, from, to, captured, path)
        with PDN square numbers (1-based), `captured` a frozenset and `path` a tuple of landing
        squares starting with `from`. Empty when the player has no capture."""
        cdef int n, i, k, b, ncap
        cdef DrCap e
        cdef uint64_t x
        if not self._has_capture(self._player):
            return []
        with nogil:
            n = self._gen_captures(self._player, True, -1)
        out = []
        for i in range(n):
            e = self._cc[i]
            caps = []
            x = e.cap
            while x:
                b = __builtin_ctzll(x)
                x &= x - 1
                caps.append(G2P[self.sz][b] + 1)
            ncap = len(caps)
            path = []
            for k in range(min(ncap + 1, DR_MAXPATH)):
                path.append(G2P[self.sz][self._cc_paths[e.pidx * DR_MAXPATH + k]] + 1)
            path = tuple(path)
            out.append((self._cc_ids[i], G2P[self.sz][e.frm] + 1, G2P[self.sz][e.to] + 1,
                        frozenset(caps), path))
        return out

    def move_details(self) -> list:
        """The legal moves as (action, from, to, captured squares, path), PDN numbers (1-based),
        sorted by action; a quiet move has an empty frozenset and the path (from, to)."""
        if self._terminal:
            return []
        caps = self._captures()
        if caps:
            return sorted(caps)
        N = self.nsq
        return [(a, a // N + 1, a % N + 1, frozenset(), (a // N + 1, a % N + 1))
                for a in self.legal_actions_list()]

    def clocks(self) -> dict:
        """The draw counters: 'H' plies of the 25-move rule, 'S' and 'V' the 16- and 5-move clocks
        (plies since their configuration arose; None when not started)."""
        return {"H": self.hclock, "S": self.s16 if self.s16 >= 0 else None,
                "V": self.v5 if self.v5 >= 0 else None}

    def material(self) -> tuple:
        """((white men, white kings), (black men, black kings))."""
        return ((_popc(self.men[0]), _popc(self.kings[0])), (_popc(self.men[1]), _popc(self.kings[1])))

    def _termination_reason(self):
        return _REASONS.get(self.reason)

    # ---- text ---------------------------------------------------------------------------------------
    def _name(self):
        return self.game.spec

    def _parse_move_text(self, str text) -> int:
        name = self._name()
        m = re.fullmatch(r"(\d{1,2})((?:\s*[-x]\s*\d{1,2})+)", text.lower())
        if not m:
            raise InvalidMoveError(
                f"{name}: malformed move {text!r} (expected PDN such as '32-28', '28x19' or "
                f"'28x19x10')")
        squares = [int(m.group(1))] + [int(s) for s in re.findall(r"\d{1,2}", m.group(2))]
        for s in squares:
            if not 1 <= s <= self.nsq:
                raise InvalidMoveError(
                    f"{name}: square {s} in {text!r} is off the board (squares 1-{self.nsq})")
        N = self.nsq
        f = squares[0]
        t = squares[len(squares) - 1]
        caps = []
        for c in self._captures():
            if c[1] == f and c[2] == t:
                caps.append(c)
        if len(squares) == 2:
            if len(caps) == 1:
                return caps[0][0]
            if len(caps) > 1:
                paths = ", ".join(["x".join([str(x) for x in c[4]]) for c in caps])
                raise InvalidMoveError(
                    f"{name}: {text!r} is ambiguous: several captures go from {f} to {t} "
                    f"(give the path: {paths})")
            return (f - 1) * N + t - 1
        taken = self._path_captures(squares, text)
        for c in caps:
            if c[3] == taken:
                return c[0]
        raise IllegalMoveError(f"illegal move {text!r} in position {self.position()!r}")

    def _path_captures(self, squares, text):
        """The pieces jumped along a path of landing squares (each leg along one diagonal)."""
        n = self.n
        w = n // 2
        grid = self._piece_grid()
        start = squares[0] - 1
        taken = set()
        for j in range(len(squares) - 1):
            a = squares[j]
            b = squares[j + 1]
            r1, c1 = _square_rc(a - 1, w)
            r2, c2 = _square_rc(b - 1, w)
            if abs(r2 - r1) != abs(c2 - c1) or r1 == r2:
                raise IllegalMoveError(
                    f"illegal move {text!r}: {a} to {b} is not along a diagonal "
                    f"(position {self.position()!r})")
            dr = 1 if r2 > r1 else -1
            dc = 1 if c2 > c1 else -1
            r, c = r1 + dr, c1 + dc
            jumped = []
            while (r, c) != (r2, c2):
                i = r * w + c // 2
                if grid[i] >= 0 and i != start:
                    jumped.append(i + 1)
                r += dr
                c += dc
            if len(jumped) != 1:
                raise IllegalMoveError(
                    f"illegal move {text!r}: the leg {a}x{b} jumps {len(jumped)} pieces, not one "
                    f"(position {self.position()!r})")
            taken.add(jumped[0])
        return frozenset(taken)

    def _move_text(self, int action) -> str:
        N = self.nsq
        caps = self._captures()
        if action >= self.nn:
            for c in caps:
                if c[0] == action:
                    return "x".join(map(str, c[4]))
            raise InvalidMoveError(
                f"{self._name()}: action {action} is not a move of position {self.position()!r} "
                f"(ids from {self.nn} up name the extra captures of a position)")
        f, t = action // N + 1, action % N + 1
        same = [c for c in caps if c[1] == f and c[2] == t]
        if not same:
            return f"{f}-{t}"
        if len(same) == 1:
            return f"{f}x{t}"
        for c in same:
            if c[0] == action:
                return "x".join(map(str, c[4]))
        return f"{f}x{t}"

    def _position_text(self) -> str:
        grid = self._piece_grid()
        white = ",".join([("K" if v == 1 else "") + str(j + 1) for j, v in enumerate(grid) if v in (0, 1)])
        black = ",".join([("K" if v == 3 else "") + str(j + 1) for j, v in enumerate(grid) if v in (2, 3)])
        text = f"{'WB'[self._player]}:W{white}:B{black}:H{self.hclock}"
        if self.s16 >= 0:
            text += f":S{self.s16}"
        if self.v5 >= 0:
            text += f":V{self.v5}"
        return text + f":F{(self._ply - self._player) // 2 + 1}"

    def _set_position_text(self, str text) -> None:
        name = self._name()
        N = self.nsq
        w = self.n // 2
        body = text.strip()
        m = re.fullmatch(r'\[\s*FEN\s*"([^"]*)"\s*\]', body, re.I)
        if m:
            body = m.group(1).strip()
        if not body:
            raise InvalidPositionError(f"{name}: empty position text {text!r} (expected e.g. "
                                       f"'W:W31-50:B1-20')")
        fields = [f.strip() for f in body.upper().split(":")]
        if fields[0] not in ("W", "B"):
            raise InvalidPositionError(
                f"{name}: position {text!r} must start with the side to move 'W' or 'B' "
                f"(e.g. 'W:W31-50:B1-20')")
        side = 0 if fields[0] == "W" else 1
        lists = {}
        counters = {}
        for f in fields[1:]:
            if f[:1] in ("W", "B"):
                if f[0] in lists:
                    raise InvalidPositionError(f"{name}: piece list {f[0]!r} given twice in {text!r}")
                lists[f[0]] = f[1:]
            elif f[:1] in ("H", "F", "S", "V") and f[1:].isdigit() and len(f) <= 6:
                if f[0] in counters:
                    raise InvalidPositionError(f"{name}: field {f[0]!r} given twice in {text!r}")
                counters[f[0]] = int(f[1:])
            else:
                raise InvalidPositionError(
                    f"{name}: unexpected field {f!r} in {text!r} (expected W<pieces>, B<pieces>, "
                    f"H<n>, F<n>, S<n> or V<n>)")
        if "W" not in lists or "B" not in lists:
            raise InvalidPositionError(
                f"{name}: position {text!r} needs both piece lists, W... and B... (may be empty)")
        cells = [-1] * N
        for colour, p in (("W", 0), ("B", 1)):
            body = lists[colour]
            if not body:
                continue
            for tok in body.split(","):
                tm = re.fullmatch(r"(K?)(\d{1,2})(?:-(\d{1,2}))?", tok.strip())
                if not tm:
                    raise InvalidPositionError(
                        f"{name}: bad square {tok!r} in {text!r} (expected e.g. 31, K46 or 31-35)")
                lo = int(tm.group(2))
                hi = int(tm.group(3)) if tm.group(3) else lo
                if not (1 <= lo <= hi <= N):
                    raise InvalidPositionError(
                        f"{name}: square {tok!r} in {text!r} is off the board (squares 1-{N})")
                king = tm.group(1) == "K"
                for s in range(lo, hi + 1):
                    if cells[s - 1] >= 0:
                        raise InvalidPositionError(f"{name}: square {s} given twice in {text!r}")
                    row = (s - 1) // w
                    if not king and row == (0 if p == 0 else self.n - 1):
                        raise InvalidPositionError(
                            f"{name}: a {'white' if p == 0 else 'black'} man on square {s} (its "
                            f"promotion row) in {text!r}: only a king can stand there")
                    cells[s - 1] = 2 * p + king
        counts = [len([v for v in cells if v in (0, 1)]), len([v for v in cells if v in (2, 3)])]
        limit = self.max_material
        for p in (0, 1):
            if counts[p] > limit:
                raise InvalidPositionError(
                    f"{name}: {('white', 'black')[p]} has {counts[p]} pieces in {text!r} "
                    f"(at most {limit})")
        if counts[1 - side] == 0:
            raise InvalidPositionError(
                f"{name}: {('white', 'black')[1 - side]} (who just moved) has no pieces in {text!r}")
        hclock = counters.get("H", 0)
        if hclock > H_DRAW:
            raise InvalidPositionError(f"{name}: H{hclock} in {text!r} exceeds {H_DRAW}")
        full = counters.get("F", 1)
        if full < 1:
            raise InvalidPositionError(f"{name}: full-move number F{full} in {text!r} must be >= 1")
        ply = 2 * (full - 1) + side
        if ply > self.max_plies:
            raise InvalidPositionError(
                f"{name}: F{full} in {text!r} is past the ply cap {self.max_plies}")
        # the clocks may only run with a lone king against 1-3 (16-move) or 1-2 (5-move) pieces
        men = [cells.count(0), cells.count(2)]
        kings = [cells.count(1), cells.count(3)]
        lone = [men[0] == 0 and kings[0] == 1, men[1] == 0 and kings[1] == 1]
        for key, top, most in (("S", S_DRAW, 3), ("V", V_DRAW, 2)):
            if key in counters:
                if counters[key] > top:
                    raise InvalidPositionError(f"{name}: {key}{counters[key]} in {text!r} exceeds {top}")
                if not ((lone[0] and 1 <= counts[1] <= most) or (lone[1] and 1 <= counts[0] <= most)):
                    raise InvalidPositionError(
                        f"{name}: {key}{counters[key]} in {text!r}: that clock cannot run with this "
                        f"material (a lone king against 1-{most} pieces)")
        # Validation of the text done; set the state (and check the move count) on a copy first.
        cdef uint64_t bb[4]
        cdef int i, k
        for k in range(4):
            bb[k] = 0
        for i in range(N):
            if cells[i] >= 0:
                bb[cells[i]] |= (<uint64_t>1) << P2G[self.sz][i]
        saved = (self.men[0], self.men[1], self.kings[0], self.kings[1], self._player, self._ply,
                 self.hclock, self.s16, self.v5)
        self.men[0], self.kings[0], self.men[1], self.kings[1] = bb[0], bb[1], bb[2], bb[3]
        self._player = side
        if self._has_capture(side):
            self._gen_captures(side, False, -1)
            if self._cc_overflow:
                (self.men[0], self.men[1], self.kings[0], self.kings[1], self._player, self._ply,
                 self.hclock, self.s16, self.v5) = saved
                hist_key = self._hist_key
                self._rebuild()
                self._hist_key = hist_key
                raise InvalidPositionError(
                    f"{name}: position {text!r} has more than {DR_MAXMOVES} legal moves")
        self._ply = ply
        self.hclock = hclock
        self.s16 = counters.get("S", -1)
        self.v5 = counters.get("V", -1)
        self._nundo = 0
        self._start_clocks()
        self._rebuild()
        self._settle()

    def _drawing(self) -> str:
        n = self.n
        w = n // 2
        grid = [[-1] * n for _ in range(n)]
        for i, v in enumerate(self._piece_grid()):
            r, k = divmod(i, w)
            grid[r][2 * k + 1 if r % 2 == 0 else 2 * k] = v
        if self._terminal:
            reason = self._termination_reason()
            footer = f"game over: {self.result()}" + (f" ({reason})" if reason else "")
        else:
            footer = f"{('white', 'black')[self._player]} to move"
        footer += f"; ply {self._ply}; {self.position()}"
        return bt.draw_grid(grid, "wWbB", n, n, footer)

    def _transform_action(self, int sym, int action) -> int:
        if not 0 <= action < self.num_actions:
            raise InvalidMoveError(f"action id {action} is out of range [0, {self.num_actions})")
        if sym == 0:
            return action
        raise GameError(f"{self._name()}: symmetry {sym} is not a symmetry of the game (allowed: 0)")
