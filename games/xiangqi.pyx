"""Xiangqi (Chinese chess), standard rules with a simplified repetition rule; red (player 0) moves first.

Rules. A 9 x 10 board; red starts on ranks 0-4 ("below the river"), black on ranks 5-9. The general
(K) steps one point orthogonally and the advisors (A) one point diagonally, both inside their palace
(files d-f, ranks 0-2 for red, 7-9 for black). An elephant (B) moves exactly two points diagonally,
never across the river, and is blocked by a piece on the point between ("the eye"). A horse (N) moves
one point orthogonally then one diagonally outwards, and is blocked by a piece on the first point
("the leg"). A chariot (R) moves like a rook. A cannon (C) moves like a rook without capturing and
captures by jumping exactly one piece (the screen) of either colour. A soldier (P) steps one point
forward, and also one point sideways once it has crossed the river; it never moves back. A move that
leaves the mover's general attacked, or leaves the two generals facing each other on a file with no
piece between them (the flying-general ban), is illegal. The player to move with no legal move loses:
checkmate **and stalemate** lose.

Draws (simplified, docs/GAMES.md): the third occurrence of the same position (board and side to move)
is a draw (no perpetual-check or chasing rules); 60 moves each (120 plies) without a capture is a draw;
the ply cap (1000 plies) is a draw. A move that leaves the opponent without a legal move wins even
when it also completes a repetition or the 120th quiet ply. Positions set from text have no history:
repetitions are counted from there, the no-capture clock is taken from the text.

Terminal evaluation: natural score (summed piece values: chariot 9, cannon 4.5, horse 4, elephant 2,
advisor 2, soldier 1 on its own side of the river and 2 after crossing it, general 0); the margin is
(red material - black material) / 53, 53 being the largest material one side can have (all five
soldiers across the river), so it never needs clipping.

Actions: ``from * 90 + to`` with squares ``rank * 9 + file`` (rank 0 = red's back rank, file 0 = file
a, on red's left), so ``num_actions = 8100``; at most 116 moves are ever legal (``max_legal = 128``).
Notation: ICCS, file letter and rank digit from red's side, e.g. ``h2e2`` (red's right cannon to the
centre); ``H2-E2`` (the ICCS original, upper case with a dash) is accepted too.

Position text: the xiangqi FEN of Fairy-Stockfish / the World Xiangqi Federation, ranks 9 to 0 from
black's side, red upper case (``K A B N R C P``; ``E`` and ``H`` accepted for elephant and horse),
then the side to move (``w`` or ``r`` for red, ``b`` for black), two ``-`` fields (no castling or en
passant), the no-capture clock in plies and the move number, e.g. the start position
``rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1``. The last four fields may be
omitted (then ``- - 0 1``); the ply is ``2 * (move - 1)`` (+1 if black is to move). Validation: one
general of each colour in its palace, at most 2 advisors, elephants, horses, chariots and cannons and
5 soldiers per side, advisors and elephants on their points, soldiers never behind their starting rank
and, before crossing the river, only on their five starting files; the side that has just moved may
not be in check (nor its general facing the other); the clock is at most 120, the ply at most the cap.

Hash: Zobrist over the board and the side to move, xor a key for the no-capture clock (which changes
the outcome): two move orders reaching the same position with the same clock hash alike. The history
key (``history_key``; the searches use ``search_key = zobrist_hash ^ history_key``) adds the multiset
of the positions since the last capture (those that can recur) and the ply (the ply cap).

Encoding: (10, 9, 14) planes from the mover's point of view: for red the rows are ranks 9..0 from the
top, for black the board is turned 180 degrees (so the mover always plays up the planes); planes 0-6
are the mover's general, advisors, elephants, horses, chariots, cannons, soldiers, planes 7-13 the
opponent's. Symmetries: 0 and 4 (mirroring the files is an exact symmetry of xiangqi).
"""
import re

from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from games._state cimport State, SCORE_NATURAL, RESULT_FIRST_WINS, RESULT_SECOND_WINS, RESULT_DRAW
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t, mix64, ply_key

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

from games import validate
from games.errors import GameError, InvalidMoveError, InvalidPositionError

# ---- board geometry ---------------------------------------------------------------------------------
# Padded mailbox: square (rank, file) is at (rank + 2) * 11 + file + 2. Two rows of off-board cells above
# and below and two columns (11 - 9) between rows stop every ray and every horse/elephant jump.
cdef enum:
    W = 11
    DN = 11         # one rank up (towards black)
    DS = -11
    DE = 1
    DW = -1

cdef enum:
    EMPTY = 0
    KING = 1
    ADVISOR = 2
    ELEPHANT = 3
    HORSE = 4
    CHARIOT = 5
    CANNON = 6
    SOLDIER = 7
    BLACK = 8

cdef enum:
    MODE_COUNT = 0
    MODE_LIST = 1
    MODE_ANY = 2

cdef enum:
    WHY_NONE = 0
    WHY_NOMOVES = 1
    WHY_REPETITION = 2
    WHY_CLOCK = 3
    WHY_CAP = 4

cdef enum:
    CLOCK_LIMIT = 120     # 60 moves each without a capture
    MAX_PLIES = 1000
cdef double MAX_MATERIAL = 53.0

cdef int PAD[90]            # square rank * 9 + file -> padded index
cdef int SQ[XQ_PAD]         # padded index -> square, -1 off the board
cdef int RANK[XQ_PAD]
cdef int FILE[XQ_PAD]
cdef unsigned char PALACE[2][XQ_PAD]
cdef unsigned char OWN_HALF[2][XQ_PAD]
cdef int ORTH[4]
cdef int DIAG[4]
ORTH[:] = [DN, DS, DE, DW]
DIAG[:] = [DN + DE, DN + DW, DS + DE, DS + DW]
# the two orthogonal components of each diagonal (for horse legs seen from the general)
cdef int DIAG_V[4]
cdef int DIAG_H[4]
DIAG_V[:] = [DN, DN, DS, DS]
DIAG_H[:] = [DE, DW, DE, DW]

cdef hash_t ZOB[16][90]
cdef hash_t ZOB_SIDE
cdef hash_t ZOB_CLOCK[128]


cdef void _init_tables():
    cdef int i, r, f, p, s
    for i in range(XQ_PAD):
        SQ[i] = -1
        RANK[i] = -100
        FILE[i] = -100
        PALACE[0][i] = PALACE[1][i] = 0
        OWN_HALF[0][i] = OWN_HALF[1][i] = 0
    for r in range(10):
        for f in range(9):
            s = r * 9 + f
            i = (r + 2) * W + f + 2
            PAD[s] = i
            SQ[i] = s
            RANK[i] = r
            FILE[i] = f
            if 3 <= f <= 5:
                PALACE[0][i] = r <= 2
                PALACE[1][i] = r >= 7
            OWN_HALF[0][i] = r <= 4
            OWN_HALF[1][i] = r >= 5
    cdef uint64_t seed = 0x81A9601
    for p in range(16):
        for s in range(90):
            ZOB[p][s] = splitmix64(&seed)
    global ZOB_SIDE
    ZOB_SIDE = splitmix64(&seed)
    ZOB_CLOCK[0] = 0
    for i in range(1, 128):
        ZOB_CLOCK[i] = splitmix64(&seed)


_init_tables()

PIECE_LETTERS = ".KABNRCP"          # index = piece type
_LETTER_TYPE = {"k": KING, "a": ADVISOR, "b": ELEPHANT, "e": ELEPHANT, "n": HORSE, "h": HORSE,
                "r": CHARIOT, "c": CANNON, "p": SOLDIER}
_TYPE_NAMES = {KING: "general", ADVISOR: "advisor", ELEPHANT: "elephant", HORSE: "horse",
               CHARIOT: "chariot", CANNON: "cannon", SOLDIER: "soldier"}
_MAX_COUNT = {KING: 1, ADVISOR: 2, ELEPHANT: 2, HORSE: 2, CHARIOT: 2, CANNON: 2, SOLDIER: 5}
FILES = "abcdefghi"
START_FEN = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1"
_MOVE = re.compile(r"^([a-i])([0-9])-?([a-i])([0-9])$")
SIDES = ("red", "black")


def facts(params: dict) -> dict:
    return dict(players=("red", "black"), num_actions=8100, max_plies=MAX_PLIES,
                planes_shape=(10, 9, 14), symmetries=(0, 4), score_kind=SCORE_NATURAL, max_legal=128,
                extra={"history_dependent": True})


def _legal_square(int ptype, int side, int rank, int file) -> bool:
    """Whether a piece of this type and side may ever stand on (rank, file) (red's view for red)."""
    r = rank if side == 0 else 9 - rank          # rank from the piece owner's side
    if ptype == KING:
        return 3 <= file <= 5 and r <= 2
    if ptype == ADVISOR:
        return (r, file) in ((0, 3), (0, 5), (1, 4), (2, 3), (2, 5))
    if ptype == ELEPHANT:
        return (r, file) in ((0, 2), (0, 6), (2, 0), (2, 4), (2, 8), (4, 2), (4, 6))
    if ptype == SOLDIER:
        return r >= 5 or (r in (3, 4) and file % 2 == 0)
    return True


cdef inline void _isort(int* a, int n) noexcept nogil:
    cdef int i, j, x
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


cdef inline bint _on_line(int t, int kr, int kf, int lines) noexcept nogil:
    """Whether point t lies on a ray from the general (at kr, kf) flagged in `lines` (bits in ORTH
    order: up, down, right, left)."""
    cdef int dr = RANK[t] - kr
    cdef int df = FILE[t] - kf
    if df == 0:
        return (lines >> (0 if dr > 0 else 1)) & 1
    if dr == 0:
        return (lines >> (2 if df > 0 else 3)) & 1
    return False


cdef inline bint _touches(int f, int kr, int kf, int lines, int legs) noexcept nogil:
    """Whether a piece leaving point f can expose the general: f is on a flagged ray, or is a
    diagonal neighbour (a horse leg) flagged in `legs` (bits in DIAG order)."""
    cdef int dr = RANK[f] - kr
    cdef int df = FILE[f] - kf
    if (dr == 1 or dr == -1) and (df == 1 or df == -1):
        return (legs >> ((0 if dr > 0 else 2) + (0 if df > 0 else 1))) & 1
    return _on_line(f, kr, kf, lines)


cdef class XiangqiState(State):
    def __cinit__(self):
        self._u_cap = NULL
        self._u_clock = NULL
        self._u_pos = NULL

    def __init__(self, info):
        self._init_base(info)
        self._undo_cap = self.max_plies + 2
        self._u_cap = <signed char*>malloc(self._undo_cap * sizeof(signed char))
        self._u_clock = <short*>malloc(self._undo_cap * sizeof(short))
        self._u_pos = <hash_t*>malloc(self._undo_cap * sizeof(hash_t))
        if self._u_cap == NULL or self._u_clock == NULL or self._u_pos == NULL:
            raise MemoryError()
        self._load(*self._parse_fen(START_FEN))

    def __dealloc__(self):
        free(self._u_cap)
        free(self._u_clock)
        free(self._u_pos)
        self._u_cap = NULL
        self._u_clock = NULL
        self._u_pos = NULL

    # ---- core -----------------------------------------------------------------------------------
    cdef void _rebuild(self) noexcept nogil:
        """Derive the piece sets, general squares and hashes from `brd`, `_player` and `clock`."""
        cdef int s, i, v
        cdef hash_t h = 0
        self.occ[0][0] = self.occ[0][1] = self.occ[1][0] = self.occ[1][1] = 0
        for s in range(90):
            i = PAD[s]
            v = self.brd[i]
            if v == EMPTY:
                continue
            h ^= ZOB[v][s]
            self.occ[v >> 3][s >> 6] |= (<uint64_t>1) << (s & 63)
            if (v & 7) == KING:
                self.ksq[v >> 3] = i
        if self._player:
            h ^= ZOB_SIDE
        self.bhash = h
        self._hash = h ^ ZOB_CLOCK[self.clock]
        self._hist_key = mix64(h) + ply_key(self._ply)

    cdef bint _attacked(self, int k, int side) noexcept nogil:
        """Whether the general of `side` standing on padded square `k` is attacked on the current
        board (the enemy general on the same open file counts: the flying-general ban)."""
        cdef signed char* b = self.brd
        cdef int e = (1 - side) << 3
        cdef int eR = CHARIOT | e, eC = CANNON | e, eK = KING | e, eN = HORSE | e, eP = SOLDIER | e
        cdef int i, d, t, v
        for i in range(4):
            d = ORTH[i]
            t = k + d
            while b[t] == EMPTY:
                t += d
            v = b[t]
            if v == XQ_OFF:
                continue
            if v == eR or v == eK:
                return True
            t += d
            while b[t] == EMPTY:
                t += d
            if b[t] == eC:
                return True
        for i in range(4):
            d = DIAG[i]
            if b[k + d] == EMPTY:
                if b[k + d + DIAG_V[i]] == eN or b[k + d + DIAG_H[i]] == eN:
                    return True
        # enemy soldiers step onto k from the front, or sideways (the general's palace is across the
        # river for them, so sideways steps are allowed there)
        if b[k + (DN if side == 0 else DS)] == eP or b[k + DE] == eP or b[k + DW] == eP:
            return True
        return False

    cdef int _gen(self, action_t* out, int mode) noexcept nogil:
        """Legal moves of the side to move: count them (MODE_COUNT), list them sorted (MODE_LIST), or
        return 1 as soon as one is found (MODE_ANY)."""
        cdef signed char* b = self.brd
        cdef int s = self._player
        cdef int o = 1 - s
        cdef int k = self.ksq[s]
        cdef bint incheck = self._attacked(k, s)
        cdef int kr = RANK[k], kf = FILE[k]
        cdef int fwd = DN if s == 0 else DS
        cdef int tg[24]
        cdef int nt, n = 0
        cdef int w, bit, sq, f, pt, i, j, d, t, v, leg, kk
        cdef uint64_t m
        cdef bint risky, legal
        cdef signed char saved
        # Which lines through the general could carry an attack if a piece left or entered them:
        # bit i of `lines` is set when an enemy chariot, cannon or general stands somewhere on the ray
        # ORTH[i] from the general; bit i of `legs` when an enemy horse stands behind the diagonal
        # neighbour DIAG[i] (its leg). Moves touching no such line or leg need no trial.
        cdef int e = o << 3
        cdef int lines = 0, legs = 0
        for i in range(4):
            d = ORTH[i]
            t = k + d
            while b[t] != XQ_OFF:
                v = b[t]
                if v == (CHARIOT | e) or v == (CANNON | e) or v == (KING | e):
                    lines |= 1 << i
                    break
                t += d
            d = DIAG[i]
            if b[k + d + DIAG_V[i]] == (HORSE | e) or b[k + d + DIAG_H[i]] == (HORSE | e):
                legs |= 1 << i
        for w in range(2):
            m = self.occ[s][w]
            while m:
                bit = __builtin_ctzll(m)
                m &= m - 1
                sq = (w << 6) + bit
                f = PAD[sq]
                pt = b[f] & 7
                nt = 0
                # ---- pseudo-legal targets ----
                if pt == CHARIOT or pt == CANNON:
                    for i in range(4):
                        d = ORTH[i]
                        t = f + d
                        while b[t] == EMPTY:
                            tg[nt] = t
                            nt += 1
                            t += d
                        if b[t] == XQ_OFF:
                            continue
                        if pt == CANNON:
                            t += d
                            while b[t] == EMPTY:
                                t += d
                        v = b[t]
                        if v != XQ_OFF and (v >> 3) == o:
                            tg[nt] = t
                            nt += 1
                elif pt == HORSE:
                    for i in range(4):
                        d = ORTH[i]
                        leg = f + d
                        if b[leg] != EMPTY:
                            continue
                        for j in range(2):
                            if d == DN or d == DS:
                                t = leg + d + (DE if j == 0 else DW)
                            else:
                                t = leg + d + (DN if j == 0 else DS)
                            v = b[t]
                            if v == EMPTY or (v >> 3) == o:
                                tg[nt] = t
                                nt += 1
                elif pt == SOLDIER:
                    t = f + fwd
                    v = b[t]
                    if v == EMPTY or (v >> 3) == o:
                        tg[nt] = t
                        nt += 1
                    if not OWN_HALF[s][f]:
                        for j in range(2):
                            t = f + (DE if j == 0 else DW)
                            v = b[t]
                            if v == EMPTY or (v >> 3) == o:
                                tg[nt] = t
                                nt += 1
                elif pt == ELEPHANT:
                    for i in range(4):
                        d = DIAG[i]
                        t = f + 2 * d
                        if b[f + d] == EMPTY and OWN_HALF[s][t]:
                            v = b[t]
                            if v == EMPTY or (v >> 3) == o:
                                tg[nt] = t
                                nt += 1
                elif pt == ADVISOR:
                    for i in range(4):
                        t = f + DIAG[i]
                        if PALACE[s][t]:
                            v = b[t]
                            if v == EMPTY or (v >> 3) == o:
                                tg[nt] = t
                                nt += 1
                else:   # KING
                    for i in range(4):
                        t = f + ORTH[i]
                        if PALACE[s][t]:
                            v = b[t]
                            if v == EMPTY or (v >> 3) == o:
                                tg[nt] = t
                                nt += 1
                if nt == 0:
                    continue
                if mode == MODE_LIST:
                    _isort(tg, nt)
                # ---- legality ----
                # Not in check, a move other than the general's can only expose the general by
                # leaving one of its lines (opening a chariot line, a cannon's screen, the generals'
                # file), leaving a horse leg next to it, or landing on one of its lines (a new cannon
                # screen), and only where an enemy piece that attacks that way is there. Every other
                # move is legal without trying it.
                risky = incheck or pt == KING or _touches(f, kr, kf, lines, legs)
                for j in range(nt):
                    t = tg[j]
                    if risky or _on_line(tg[j], kr, kf, lines):
                        saved = b[t]
                        b[t] = b[f]
                        b[f] = EMPTY
                        kk = t if pt == KING else k
                        legal = not self._attacked(kk, s)
                        b[f] = b[t]
                        b[t] = saved
                        if not legal:
                            continue
                    if mode == MODE_ANY:
                        return 1
                    if mode == MODE_LIST:
                        out[n] = sq * 90 + SQ[t]
                    n += 1
        return n

    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        return self._gen(out, MODE_LIST)

    cdef int count_legal_actions(self, action_t* scratch) noexcept nogil:
        if self._terminal:
            return 0
        return self._gen(scratch, MODE_COUNT)

    cdef void _set_terminal(self) noexcept nogil:
        """Terminal status of the current position (after a move or a position set from text)."""
        cdef int k = self._nundo
        cdef int j, count, lo
        self._terminal = True
        if self._gen(NULL, MODE_ANY) == 0:
            # the player to move has no legal move and loses (checkmate or stalemate)
            self._result = RESULT_SECOND_WINS if self._player == 0 else RESULT_FIRST_WINS
            self._why = WHY_NOMOVES
            return
        self._result = RESULT_DRAW
        # positions since the last capture with the same side to move: k-2, k-4, ... (the stack only
        # holds positions since the position was set)
        count = 1
        lo = k - self.clock
        if lo < 0:
            lo = 0
        j = k - 2
        while j >= lo:
            if self._u_pos[j] == self.bhash:
                count += 1
                if count >= 3:
                    self._why = WHY_REPETITION
                    return
            j -= 2
        if self.clock >= CLOCK_LIMIT:
            self._why = WHY_CLOCK
            return
        if self._ply >= self.max_plies:
            self._why = WHY_CAP
            return
        self._terminal = False
        self._why = WHY_NONE

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int s = self._player
        cdef int fs = a // 90
        cdef int ts = a - 90 * fs
        cdef int f = PAD[fs], t = PAD[ts]
        cdef int pc = self.brd[f]
        cdef int cap = self.brd[t]
        cdef int k = self._nundo
        self._u_cap[k] = <signed char>cap
        self._u_clock[k] = <short>self.clock
        self.brd[t] = <signed char>pc
        self.brd[f] = EMPTY
        self.occ[s][fs >> 6] ^= (<uint64_t>1) << (fs & 63)
        self.occ[s][ts >> 6] ^= (<uint64_t>1) << (ts & 63)
        self.bhash ^= ZOB[pc][fs] ^ ZOB[pc][ts] ^ ZOB_SIDE
        if cap != EMPTY:
            self.occ[1 - s][ts >> 6] ^= (<uint64_t>1) << (ts & 63)
            self.bhash ^= ZOB[cap][ts]
            self.clock = 0
        else:
            self.clock += 1
        if (pc & 7) == KING:
            self.ksq[s] = t
        self._nundo = k + 1
        self._u_pos[k + 1] = self.bhash
        self._hash = self.bhash ^ ZOB_CLOCK[self.clock]
        # history key: the multiset of the positions since the last capture, plus the ply
        if cap != EMPTY:
            self._hist_key = mix64(self.bhash) + ply_key(self._ply)
        else:
            self._hist_key = (self._hist_key - ply_key(self._ply - 1) + mix64(self.bhash)
                              + ply_key(self._ply))
        self._player = 1 - s
        self._set_terminal()

    cdef void _do_undo(self, action_t a) noexcept nogil:
        cdef int s = self._player              # the player who made the move
        cdef int fs = a // 90
        cdef int ts = a - 90 * fs
        cdef int f = PAD[fs], t = PAD[ts]
        self._nundo -= 1
        cdef int k = self._nundo
        cdef int cap = self._u_cap[k]
        cdef int pc = self.brd[t]
        self.brd[f] = <signed char>pc
        self.brd[t] = <signed char>cap
        self.occ[s][fs >> 6] ^= (<uint64_t>1) << (fs & 63)
        self.occ[s][ts >> 6] ^= (<uint64_t>1) << (ts & 63)
        self.bhash ^= ZOB[pc][fs] ^ ZOB[pc][ts] ^ ZOB_SIDE
        if cap != EMPTY:
            self.occ[1 - s][ts >> 6] ^= (<uint64_t>1) << (ts & 63)
            self.bhash ^= ZOB[cap][ts]
        if (pc & 7) == KING:
            self.ksq[s] = f
        self.clock = self._u_clock[k]
        self._why = WHY_NONE

    cdef double natural_score(self) noexcept nogil:
        cdef double mat[2]
        cdef int s, v, pt, side
        cdef double val
        mat[0] = mat[1] = 0.0
        for s in range(90):
            v = self.brd[PAD[s]]
            if v == EMPTY:
                continue
            pt = v & 7
            side = v >> 3
            if pt == CHARIOT:
                val = 9.0
            elif pt == CANNON:
                val = 4.5
            elif pt == HORSE:
                val = 4.0
            elif pt == ELEPHANT or pt == ADVISOR:
                val = 2.0
            elif pt == SOLDIER:
                val = 1.0 if OWN_HALF[side][PAD[s]] else 2.0
            else:
                val = 0.0
            mat[side] += val
        val = (mat[0] - mat[1]) / MAX_MATERIAL
        if val > 1.0:
            return 1.0
        if val < -1.0:
            return -1.0
        return val

    cdef void encode(self, float* out) noexcept nogil:
        cdef int p = self._player
        cdef int i, s, r, c, v, plane
        for i in range(10 * 9 * 14):
            out[i] = 0.0
        for s in range(90):
            v = self.brd[PAD[s]]
            if v == EMPTY:
                continue
            if p == 0:
                r = 9 - s // 9
                c = s % 9
            else:
                r = s // 9
                c = 8 - s % 9
            plane = (v & 7) - 1 + (0 if (v >> 3) == p else 7)
            out[(r * 9 + c) * 14 + plane] = 1.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef XiangqiState d = <XiangqiState>dst
        d.brd = self.brd
        d.occ = self.occ
        d.ksq = self.ksq
        d.clock = self.clock
        d._why = self._why
        d.bhash = self.bhash
        memcpy(d._u_cap, self._u_cap, self._nundo * sizeof(signed char))
        memcpy(d._u_clock, self._u_clock, self._nundo * sizeof(short))
        memcpy(d._u_pos, self._u_pos, (self._nundo + 1) * sizeof(hash_t))
        d._nundo = self._nundo

    # ---- text -------------------------------------------------------------------------------------
    def _parse_fen(self, str text):
        """Parse and validate a FEN; return (board as 90 piece codes, side, clock, ply)."""
        parts = text.split()
        if not 2 <= len(parts) <= 6:
            raise InvalidPositionError(
                f"xiangqi: position {text!r} must be a FEN 'BOARD SIDE [- - CLOCK MOVE]', e.g. "
                f"{START_FEN!r}")
        rows = parts[0].split("/")
        if len(rows) != 10:
            raise InvalidPositionError(
                f"xiangqi: board {parts[0]!r} in {text!r} has {len(rows)} ranks, expected 10")
        board = [0] * 90
        for i, row in enumerate(rows):
            rank = 9 - i
            file = 0
            for ch in row:
                if ch.isdigit():
                    if ch == "0":
                        raise InvalidPositionError(
                            f"xiangqi: empty run '0' in rank {rank} ({row!r}) of {text!r}")
                    file += int(ch)
                    continue
                ptype = _LETTER_TYPE.get(ch.lower())
                if ptype is None or not ch.isascii():
                    raise InvalidPositionError(
                        f"xiangqi: unexpected character {ch!r} in rank {rank} ({row!r}) of {text!r} "
                        f"(pieces KABNRCP, red upper case, black lower case; digits for empty points)")
                if file < 9:
                    board[rank * 9 + file] = ptype | (0 if ch.isupper() else BLACK)
                file += 1
            if file != 9:
                raise InvalidPositionError(
                    f"xiangqi: rank {rank} ({row!r}) of {text!r} has {file} points, expected 9")
        side_text = parts[1]
        if side_text not in ("w", "r", "b"):
            raise InvalidPositionError(
                f"xiangqi: side to move {side_text!r} in {text!r} must be 'w' (or 'r') for red or 'b' "
                f"for black")
        side = 1 if side_text == "b" else 0
        for j, field in enumerate(parts[2:4]):
            if field != "-":
                raise InvalidPositionError(
                    f"xiangqi: field {field!r} in {text!r} must be '-' (xiangqi has no "
                    f"{'castling' if j == 0 else 'en passant'})")
        clock, move = 0, 1
        if len(parts) >= 5:
            if not parts[4].isdigit() or not parts[4].isascii() or len(parts[4]) > 9:
                raise InvalidPositionError(
                    f"xiangqi: no-capture clock {parts[4]!r} in {text!r} is not a number")
            clock = int(parts[4])
            if clock > CLOCK_LIMIT:
                raise InvalidPositionError(
                    f"xiangqi: no-capture clock {clock} in {text!r} exceeds {CLOCK_LIMIT} plies "
                    f"(the game ends in a draw there)")
        if len(parts) == 6:
            if not parts[5].isdigit() or not parts[5].isascii() or len(parts[5]) > 9 or int(parts[5]) < 1:
                raise InvalidPositionError(
                    f"xiangqi: move number {parts[5]!r} in {text!r} is not a number >= 1")
            move = int(parts[5])
        ply = 2 * (move - 1) + side
        if ply > MAX_PLIES:
            raise InvalidPositionError(
                f"xiangqi: move number {move} in {text!r} exceeds the ply cap {MAX_PLIES}")
        counts = [[0] * 8 for _ in range(2)]
        for sq, v in enumerate(board):
            if v == 0:
                continue
            pside, ptype = v >> 3, v & 7
            counts[pside][ptype] += 1
            rank, file = divmod(sq, 9)
            if not _legal_square(ptype, pside, rank, file):
                raise InvalidPositionError(
                    f"xiangqi: {SIDES[pside]} {_TYPE_NAMES[ptype]} on {FILES[file]}{rank} cannot stand "
                    f"there, in {text!r}")
        for pside in range(2):
            for ptype, most in _MAX_COUNT.items():
                c = counts[pside][ptype]
                if c > most or (ptype == KING and c != 1):
                    raise InvalidPositionError(
                        f"xiangqi: {c} {SIDES[pside]} {_TYPE_NAMES[ptype]}s in {text!r} (expected "
                        f"{'exactly 1' if ptype == KING else f'at most {most}'})")
        return board, side, clock, ply

    def _load(self, board, int side, int clock, int ply):
        cdef int s
        for s in range(XQ_PAD):
            self.brd[s] = XQ_OFF
        for s in range(90):
            self.brd[PAD[s]] = board[s]
        self._player = side
        self.clock = clock
        self._ply = ply
        self._rebuild()
        self._nundo = 0
        self._u_pos[0] = self.bhash
        self._why = WHY_NONE
        self._set_terminal()

    def _set_position_text(self, str text) -> None:
        board, side, clock, ply = self._parse_fen(text)
        cdef XiangqiState tmp = self.game.new_state()
        tmp._load(board, side, clock, ply)
        if tmp._attacked(tmp.ksq[1 - side], 1 - side):
            raise InvalidPositionError(
                f"xiangqi: {SIDES[1 - side]} (not to move) is in check or its general faces the other "
                f"in {text!r}")
        self._load(board, side, clock, ply)

    def _position_text(self) -> str:
        rows = []
        cdef int rank, file, v, run
        for rank in range(9, -1, -1):
            row, run = [], 0
            for file in range(9):
                v = self.brd[PAD[rank * 9 + file]]
                if v == EMPTY:
                    run += 1
                    continue
                if run:
                    row.append(str(run))
                    run = 0
                ch = PIECE_LETTERS[v & 7]
                row.append(ch if v < BLACK else ch.lower())
            if run:
                row.append(str(run))
            rows.append("".join(row))
        return (f"{'/'.join(rows)} {'b' if self._player else 'w'} - - {self.clock} "
                f"{self._ply // 2 + 1}")

    def _parse_move_text(self, str text) -> int:
        m = _MOVE.match(text.lower())
        if not m:
            raise InvalidMoveError(
                f"xiangqi: malformed move {text!r} (expected ICCS from and to points, files a-i and "
                f"ranks 0-9 from red's side, e.g. 'h2e2' or 'H2-E2')")
        fs = int(m.group(2)) * 9 + FILES.index(m.group(1))
        ts = int(m.group(4)) * 9 + FILES.index(m.group(3))
        return fs * 90 + ts

    def _move_text(self, int action) -> str:
        fs, ts = divmod(action, 90)
        return f"{FILES[fs % 9]}{fs // 9}{FILES[ts % 9]}{ts // 9}"

    def piece_at(self, square):
        """The FEN letter of the piece on ``square`` (rank * 9 + file; red upper case), or None."""
        cdef int sq = validate.integer(square, "xiangqi: square", 0, 89)
        cdef int v = self.brd[PAD[sq]]
        if v == EMPTY:
            return None
        ch = PIECE_LETTERS[v & 7]
        return ch if v < BLACK else ch.lower()

    def in_check(self) -> bool:
        """Whether the general of the player to move is attacked."""
        return self._attacked(self.ksq[self._player], self._player)

    def _termination_reason(self):
        if not self._terminal:
            return None
        if self._why == WHY_NOMOVES:
            return "checkmate" if self.in_check() else "stalemate"
        if self._why == WHY_REPETITION:
            return "threefold repetition"
        if self._why == WHY_CLOCK:
            return "sixty-move rule"
        return None

    def _drawing(self) -> str:
        lines = ["  " + " ".join(FILES)]
        cdef int rank, file, v
        for rank in range(9, -1, -1):
            cells = []
            for file in range(9):
                v = self.brd[PAD[rank * 9 + file]]
                ch = "." if v == EMPTY else PIECE_LETTERS[v & 7]
                cells.append(ch if v < BLACK else ch.lower())
            lines.append(f"{rank} {' '.join(cells)} {rank}")
            if rank == 5:
                lines.append("  ~~~~~ river ~~~~~")
        lines.append("  " + " ".join(FILES))
        if self._terminal:
            reason = self.outcome().termination
            lines.append(f"game over: {self.result()} ({reason}, ply {self._ply})")
        else:
            lines.append(f"{SIDES[self._player]} to move (ply {self._ply}, no-capture clock "
                         f"{self.clock})")
        return "\n".join(lines)

    def _transform_action(self, int sym, int action) -> int:
        if not 0 <= action < self.num_actions:
            raise InvalidMoveError(f"action id {action} is out of range [0, {self.num_actions})")
        if sym == 0:
            return action
        if sym == 4:
            fs, ts = divmod(action, 90)
            return (fs - 2 * (fs % 9) + 8) * 90 + ts - 2 * (ts % 9) + 8
        raise GameError(f"xiangqi: symmetry {sym} is not a symmetry of the game (allowed: 0, 4)")
