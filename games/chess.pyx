"""Chess: FIDE rules with automatic draws; white (player 0) moves first.

Rules. Standard FIDE chess (castling, en passant, promotion to N/B/R/Q). A game ends, in this order of
precedence, by

1. checkmate (the side to move is in check and has no legal move): the other side wins;
2. insufficient material: neither side can ever mate, decided on material alone exactly as
   python-chess's ``is_insufficient_material``: no pawns, rooks or queens, and either one knight and
   no bishop on the whole board (K+N v K), or no knight and every bishop on squares of one colour
   (K v K, K+B v K, K+B v K+B with same-coloured bishops, ...);
3. stalemate (not in check, no legal move);
4. the fifty-move rule, automatic: 100 plies without a capture or a pawn move;
5. threefold repetition, automatic: the same position (pieces, side to move, castling rights and
   en-passant right) for the third time since the game started or its position was set from text
   (positions before a FEN are unknown);
6. the ply cap ``max_plies = 1000``.

All but checkmate are draws. Terminal evaluation: summed piece values (P 1, N 3, B 3, R 5, Q 9),
``natural_score() = (white material - black material) / 39`` clipped to [-1, 1] (the base class turns
the winner's margin into f_t).

Actions. Squares are numbered as in python-chess: a1 = 0, b1 = 1, ..., h8 = 63 (``rank * 8 + file``).
A move is ``from * 64 + to`` (in [0, 4096)): castling is the king's move (e1g1), en passant the pawn's,
and a promotion to a queen is the plain pawn move. Under-promotions have ids from 4096::

    4096 + ((side * 8 + from_file) * 3 + (to_file - from_file + 1)) * 3 + k     k: 0 knight, 1 bishop, 2 rook

(side 0: white, from rank 7 to rank 8; side 1: black, from rank 2 to rank 1), so ``num_actions =
4096 + 144 = 4240``; at most 256 moves are legal in any position (``max_legal``; the known maximum is
218). Legal actions are listed in ascending order (all plain moves by from-square then to-square,
then the under-promotions).

Notation: UCI both ways (``e2e4``, ``e7e8q``, ``e1g1`` for castling). A pawn move to the last rank
needs its promotion letter; ``0000`` (the null move) is refused.

Position text: FEN with all six fields (``rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1``);
when reading, the last two (halfmove clock, fullmove number) may be omitted (then ``0 1``). The ply is
``2 * (fullmove - 1) + (1 if black to move)``. Reading is strict: eight rows of eight squares, no two
digits in a row, exactly one king per side, no pawn on the first or last rank, at most 8 pawns and 16
pieces per side, castling rights among ``KQkq`` (no repeats) with the king and rook on their home
squares, an en-passant square on the sixth (white to move) or third rank behind a pawn that just made
a double step, the side not to move not in check, at most two checkers, a halfmove clock of at most
100, and a ply of at most ``max_plies``. The en-passant square is kept (and written) only when an en
passant capture is legal, as python-chess's ``fen()`` does, so equal positions have equal text.

Hash. ``_hash`` is the Zobrist key of (pieces, side, castling rights, legal en-passant square) xor a
key of the halfmove clock: the clock decides the fifty-move draw, so positions that differ only in it
are different states. The clock-free key is kept on the undo stack for the repetition rule. The
history key (``history_key``; the searches use ``search_key = zobrist_hash ^ history_key``) adds what
the outcome also depends on: the multiset of the positions since the last pawn move, capture or change
of castling rights (the positions that can still recur), and the ply (the ply cap).

Encoding: (8, 8, 19) planes from the point of view of the player to move (ranks flipped and colours
swapped when black moves; files never flipped; row 0 is the mover's far rank): 0-5 the mover's
P, N, B, R, Q, K; 6-11 the opponent's; 12-15 castling rights (mover's king side, mover's queen side,
opponent's king side, opponent's queen side; whole planes of ones); 16 the en-passant target square;
17 the fifty-move counter as a thermometer (the first ``halfmove * 64 // 100`` squares, in row-major
order, are 1: the plane's mean is the counter scaled to [0, 1], and every value stays 0 or 1);
18 ones when the current position has already occurred (one more repetition draws). Castling and
pawn direction break every board symmetry: ``symmetries = (0,)``.
"""
import re

from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from games._state cimport State, SCORE_NATURAL, RESULT_FIRST_WINS, RESULT_SECOND_WINS, RESULT_DRAW
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t, mix64, ply_key

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil
    int __builtin_popcountll(unsigned long long) nogil
    unsigned long long __builtin_bswap64(unsigned long long) nogil

from games import boardtext as bt
from games import validate
from games.errors import GameError, IllegalMoveError, InvalidMoveError, InvalidPositionError
from games.validate import is_digits

# ---- constants ------------------------------------------------------------------------------------

cdef enum:
    PAWN = 1
    KNIGHT = 2
    BISHOP = 3
    ROOK = 4
    QUEEN = 5
    KING = 6

cdef enum:
    MODE_LIST = 0
    MODE_COUNT = 1
    MODE_ANY = 2

cdef enum:
    MF_EP = 1
    MF_CASTLE = 2
    MF_PROMO = 4

cdef enum:
    REASON_NONE = 0
    REASON_CHECKMATE = 1
    REASON_STALEMATE = 2
    REASON_INSUFFICIENT = 3
    REASON_FIFTY = 4
    REASON_THREEFOLD = 5
    REASON_PLY_CAP = 6

cdef enum:
    NUM_ACTIONS = 4240
    UNDERPROMO_BASE = 4096
    MAX_PLIES = 1000
    MAX_LEGAL = 256
    NUM_PLANES = 19

REASONS = (None, "checkmate", "stalemate", "insufficient material", "fifty-move rule",
           "threefold repetition", "ply cap")

START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
PIECE_LETTERS = "PNBRQK"          # index type - 1 (white upper case, black lower case)
SYMBOLS = "PNBRQKpnbrqk"          # drawing symbols: (type - 1) + 6 * colour
FILES = "abcdefgh"
CASTLE_LETTERS = "KQkq"           # bits 1, 2, 4, 8

cdef int VALUE[7]
for _i, _v in enumerate((0, 1, 3, 3, 5, 9, 0)):
    VALUE[_i] = _v

# ---- tables -----------------------------------------------------------------------------------------

cdef uint64_t KNIGHT_ATT[64]
cdef uint64_t KING_ATT[64]
cdef uint64_t PAWN_ATT[2][64]       # squares a pawn of that colour on the square attacks
cdef uint64_t FILE_MASK[64]         # the square's file without the square
cdef uint64_t DIAG_MASK[64]         # its a1-h8 diagonal without the square
cdef uint64_t ANTI_MASK[64]         # its h1-a8 anti-diagonal without the square
cdef unsigned char RANK_ATT[8][64]  # rank attacks of a slider on file f, inner occupancy (files b-g)
cdef uint64_t BETWEEN[64][64]       # squares strictly between two aligned squares, else 0
cdef uint64_t LINE[64][64]          # the whole line through two aligned squares, else 0
cdef uint64_t ROOK_EMPTY[64]
cdef uint64_t BISHOP_EMPTY[64]
cdef int CASTLE_KEEP[64]            # castling rights kept when a move starts or ends on the square
cdef int UP_FROM[144]
cdef int UP_TO[144]
cdef int UP_TYPE[144]
cdef uint64_t DARK_SQUARES

cdef hash_t Z_PIECE[16][64]
cdef hash_t Z_SIDE
cdef hash_t Z_CASTLE[16]
cdef hash_t Z_EP[64]
cdef hash_t Z_HALF[101]


cdef inline uint64_t bit(int sq) noexcept nogil:
    return (<uint64_t>1) << sq


cdef inline int ctz(uint64_t b) noexcept nogil:
    return __builtin_ctzll(b)


cdef inline int popcount(uint64_t b) noexcept nogil:
    return __builtin_popcountll(b)


cdef inline uint64_t line_att(uint64_t occ, int sq, uint64_t mask) noexcept nogil:
    """Slider attacks along a line with one square per rank (file or diagonal): the o^(o-2r) trick
    in both directions, the reverse one through a byte swap (hyperbola quintessence)."""
    cdef uint64_t s = bit(sq)
    cdef uint64_t f = occ & mask
    cdef uint64_t r = __builtin_bswap64(f)
    f -= s
    r -= __builtin_bswap64(s)
    f ^= __builtin_bswap64(r)
    return f & mask


cdef inline uint64_t rank_att(int sq, uint64_t occ) noexcept nogil:
    cdef int sh = sq & 56
    return (<uint64_t>RANK_ATT[sq & 7][(occ >> (sh + 1)) & 63]) << sh


cdef inline uint64_t bishop_att(int sq, uint64_t occ) noexcept nogil:
    return line_att(occ, sq, DIAG_MASK[sq]) | line_att(occ, sq, ANTI_MASK[sq])


cdef inline uint64_t rook_att(int sq, uint64_t occ) noexcept nogil:
    return line_att(occ, sq, FILE_MASK[sq]) | rank_att(sq, occ)


cdef inline bint attacked(const uint64_t* bb, uint64_t opp, int sq, int us, uint64_t occ) noexcept nogil:
    """Whether a piece in `opp` attacks `sq` (occupancy `occ`); `us` is the attacked side."""
    if (KNIGHT_ATT[sq] & bb[KNIGHT] & opp) or (PAWN_ATT[us][sq] & bb[PAWN] & opp) \
            or (KING_ATT[sq] & bb[KING] & opp):
        return True
    cdef uint64_t s = (bb[BISHOP] | bb[QUEEN]) & opp
    if s and (bishop_att(sq, occ) & s):
        return True
    s = (bb[ROOK] | bb[QUEEN]) & opp
    return s != 0 and (rook_att(sq, occ) & s) != 0


def _build_tables():
    cdef int sq, f, r, df, dr, ff, rr, occ6, a, b, k, side, d, idx
    cdef uint64_t m
    global DARK_SQUARES
    DARK_SQUARES = 0
    for sq in range(64):
        f, r = sq & 7, sq >> 3
        if (f + r) % 2 == 0:
            DARK_SQUARES |= bit(sq)
        KNIGHT_ATT[sq] = KING_ATT[sq] = 0
        for df, dr in ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)):
            if 0 <= f + df < 8 and 0 <= r + dr < 8:
                KNIGHT_ATT[sq] |= bit((r + dr) * 8 + f + df)
        for df in (-1, 0, 1):
            for dr in (-1, 0, 1):
                if (df or dr) and 0 <= f + df < 8 and 0 <= r + dr < 8:
                    KING_ATT[sq] |= bit((r + dr) * 8 + f + df)
        PAWN_ATT[0][sq] = PAWN_ATT[1][sq] = 0
        for df in (-1, 1):
            if 0 <= f + df < 8:
                if r < 7:
                    PAWN_ATT[0][sq] |= bit((r + 1) * 8 + f + df)
                if r > 0:
                    PAWN_ATT[1][sq] |= bit((r - 1) * 8 + f + df)
        FILE_MASK[sq] = DIAG_MASK[sq] = ANTI_MASK[sq] = 0
        for k in range(-7, 8):
            if k == 0:
                continue
            if 0 <= r + k < 8:
                FILE_MASK[sq] |= bit((r + k) * 8 + f)
            if 0 <= r + k < 8 and 0 <= f + k < 8:
                DIAG_MASK[sq] |= bit((r + k) * 8 + f + k)
            if 0 <= r + k < 8 and 0 <= f - k < 8:
                ANTI_MASK[sq] |= bit((r + k) * 8 + f - k)
        CASTLE_KEEP[sq] = 15
    CASTLE_KEEP[0] = 15 & ~2
    CASTLE_KEEP[7] = 15 & ~1
    CASTLE_KEEP[4] = 15 & ~3
    CASTLE_KEEP[56] = 15 & ~8
    CASTLE_KEEP[63] = 15 & ~4
    CASTLE_KEEP[60] = 15 & ~12
    for f in range(8):
        for occ6 in range(64):
            m = 0
            for d in (-1, 1):
                ff = f + d
                while 0 <= ff < 8:
                    m |= bit(ff)
                    if 1 <= ff <= 6 and (occ6 >> (ff - 1)) & 1:
                        break
                    ff += d
            RANK_ATT[f][occ6] = <unsigned char>m
    dirs = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1), (1, -1), (-1, 1))
    for a in range(64):
        ROOK_EMPTY[a] = BISHOP_EMPTY[a] = 0
        for b in range(64):
            BETWEEN[a][b] = LINE[a][b] = 0
        for df, dr in dirs:
            # walk from a in direction (df, dr): each square reached is aligned with a
            ff, rr = (a & 7) + df, (a >> 3) + dr
            m = 0
            while 0 <= ff < 8 and 0 <= rr < 8:
                b = rr * 8 + ff
                BETWEEN[a][b] = m
                if df == 0 or dr == 0:
                    ROOK_EMPTY[a] |= bit(b)
                else:
                    BISHOP_EMPTY[a] |= bit(b)
                m |= bit(b)
                ff += df
                rr += dr
            # the full line through a in this direction and its opposite
        for df, dr in dirs[::2]:
            m = bit(a)
            for s in (1, -1):
                ff, rr = (a & 7) + s * df, (a >> 3) + s * dr
                while 0 <= ff < 8 and 0 <= rr < 8:
                    m |= bit(rr * 8 + ff)
                    ff += s * df
                    rr += s * dr
            for s in (1, -1):
                ff, rr = (a & 7) + s * df, (a >> 3) + s * dr
                while 0 <= ff < 8 and 0 <= rr < 8:
                    LINE[a][rr * 8 + ff] = m
                    ff += s * df
                    rr += s * dr
    for side in range(2):
        for ff in range(8):
            for d in range(3):
                df = d - 1
                if not 0 <= ff + df < 8:
                    continue
                for k in range(3):
                    idx = ((side * 8 + ff) * 3 + d) * 3 + k
                    UP_FROM[idx] = (48 + ff) if side == 0 else (8 + ff)
                    UP_TO[idx] = (56 + ff + df) if side == 0 else (ff + df)
                    UP_TYPE[idx] = KNIGHT + k
    for idx in range(144):          # ids leading off the board: mark as impossible
        side = idx // 72
        d = (idx // 3) % 3
        ff = (idx // 9) % 8
        if not 0 <= ff + d - 1 < 8:
            UP_FROM[idx] = UP_TO[idx] = -1
            UP_TYPE[idx] = 0


cdef void _init_zobrist():
    cdef uint64_t seed = 0xC4E55B0A2D
    cdef int i, j
    for i in range(16):
        for j in range(64):
            Z_PIECE[i][j] = splitmix64(&seed)
    global Z_SIDE
    Z_SIDE = splitmix64(&seed)
    Z_CASTLE[0] = 0
    for i in range(1, 16):
        Z_CASTLE[i] = splitmix64(&seed)
    for i in range(64):
        Z_EP[i] = splitmix64(&seed)
    Z_HALF[0] = 0
    for i in range(1, 101):
        Z_HALF[i] = splitmix64(&seed)


_build_tables()
_init_zobrist()


def facts(params: dict) -> dict:
    return dict(players=("white", "black"), num_actions=NUM_ACTIONS, max_plies=MAX_PLIES,
                planes_shape=(8, 8, NUM_PLANES), symmetries=(0,), score_kind=SCORE_NATURAL,
                max_legal=MAX_LEGAL, extra={"history_dependent": True})


def square_name(sq) -> str:
    """The name of square ``sq`` (a1 = 0 .. h8 = 63)."""
    if type(sq) is not int or not 0 <= sq < 64:
        sq = validate.integer(sq, "chess: square", 0, 63)
    return FILES[sq & 7] + str((sq >> 3) + 1)


_SQUARE = re.compile(r"^[a-h][1-8]$")
_UCI = re.compile(r"^([a-h][1-8])([a-h][1-8])([qrbn]?)$")


def _parse_sq(str s) -> int:
    return (ord(s[1]) - ord("1")) * 8 + ord(s[0]) - ord("a")


# ---- the state ----------------------------------------------------------------------------------------

cdef class ChessState(State):
    def __cinit__(self):
        self._undo = NULL

    def __init__(self, info):
        self._init_base(info)
        self._undo_cap = self.max_plies + 1
        self._undo = <ChessUndo*>malloc(sizeof(ChessUndo) * self._undo_cap)
        if self._undo == NULL:
            raise MemoryError()
        self._nundo = 0
        self._load(_START[0], 0, 15, -1, 0, 0)

    def __dealloc__(self):
        if self._undo != NULL:
            free(self._undo)
            self._undo = NULL

    # ---- internal helpers ---------------------------------------------------------------------------
    def _load(self, list pieces, int side, int castling, int ep, int halfmove, int ply):
        """Set the position from already validated parts (`pieces`: 64 piece codes, a1 first)."""
        cdef int sq, pc
        for sq in range(8):
            self.bb[sq] = 0
        self.color[0] = self.color[1] = 0
        for sq in range(64):
            pc = pieces[sq]
            self.board[sq] = pc
            if pc:
                self.bb[pc & 7] |= bit(sq)
                self.color[pc >> 3] |= bit(sq)
        self._player = side
        self._ply = ply
        self.castling = castling
        self.halfmove = halfmove
        self._nundo = 0
        self.ep = -1
        cdef uint64_t cand
        if ep >= 0:
            cand = PAWN_ATT[side ^ 1][ep] & self.bb[PAWN] & self.color[side]
            while cand:
                if self._ep_legal(ctz(cand), ep):
                    self.ep = ep
                    break
                cand &= cand - 1
        self._rehash()
        self._set_terminal()

    cdef void _rehash(self) noexcept nogil:
        cdef int sq
        cdef hash_t k = 0
        for sq in range(64):
            if self.board[sq]:
                k ^= Z_PIECE[self.board[sq]][sq]
        if self._player:
            k ^= Z_SIDE
        k ^= Z_CASTLE[self.castling]
        if self.ep >= 0:
            k ^= Z_EP[self.ep]
        self.key = k
        self._hash = k ^ Z_HALF[self.halfmove]
        self._hist_key = mix64(k) + ply_key(self._ply)

    cdef uint64_t _checkers(self) noexcept nogil:
        cdef int us = self._player
        cdef uint64_t opp = self.color[us ^ 1]
        cdef uint64_t occ = opp | self.color[us]
        cdef uint64_t* bb = self.bb
        cdef int ksq = ctz(bb[KING] & self.color[us])
        return ((KNIGHT_ATT[ksq] & bb[KNIGHT]) | (PAWN_ATT[us][ksq] & bb[PAWN])
                | (bishop_att(ksq, occ) & (bb[BISHOP] | bb[QUEEN]))
                | (rook_att(ksq, occ) & (bb[ROOK] | bb[QUEEN]))) & opp

    cdef bint _ep_legal(self, int from_sq, int ep) noexcept nogil:
        """Whether the side to move's pawn on `from_sq` may capture en passant on `ep` (the full
        test: the king is not attacked once both pawns have left their squares)."""
        cdef int us = self._player
        cdef int cap = ep - 8 if us == 0 else ep + 8
        cdef uint64_t* bb = self.bb
        cdef uint64_t opp = self.color[us ^ 1] ^ bit(cap)
        cdef uint64_t occ = ((opp | self.color[us]) ^ bit(from_sq)) | bit(ep)
        cdef int ksq = ctz(bb[KING] & self.color[us])
        return not attacked(bb, opp, ksq, us, occ)

    cdef int _gen(self, action_t* out, int mode) noexcept nogil:
        """Legal moves of the side to move: listed in ascending order (MODE_LIST), counted
        (MODE_COUNT), or 1 as soon as one is found (MODE_ANY)."""
        cdef int us = self._player
        cdef int them = us ^ 1
        cdef uint64_t* bb = self.bb
        cdef signed char* board = self.board
        cdef uint64_t own = self.color[us]
        cdef uint64_t opp = self.color[them]
        cdef uint64_t occ = own | opp
        cdef uint64_t empty = ~occ
        cdef uint64_t kbit = bb[KING] & own
        cdef int ksq = ctz(kbit)
        cdef uint64_t opp_rq = (bb[ROOK] | bb[QUEEN]) & opp
        cdef uint64_t opp_bq = (bb[BISHOP] | bb[QUEEN]) & opp
        cdef uint64_t checkers = ((KNIGHT_ATT[ksq] & bb[KNIGHT]) | (PAWN_ATT[us][ksq] & bb[PAWN])) & opp
        if opp_bq:
            checkers |= bishop_att(ksq, occ) & opp_bq
        if opp_rq:
            checkers |= rook_att(ksq, occ) & opp_rq
        # pinned pieces: a single own piece between the king and an enemy slider on its line
        cdef uint64_t pinned = 0
        cdef uint64_t snipers = (ROOK_EMPTY[ksq] & opp_rq) | (BISHOP_EMPTY[ksq] & opp_bq)
        cdef uint64_t b
        cdef int s
        while snipers:
            s = ctz(snipers)
            snipers &= snipers - 1
            b = BETWEEN[ksq][s] & occ
            if b and (b & (b - 1)) == 0 and (b & own):
                pinned |= b
        cdef uint64_t target = ~own
        cdef uint64_t pieces = own
        if checkers:
            if checkers & (checkers - 1):
                pieces = kbit              # double check: only the king moves
            else:
                target = BETWEEN[ksq][ctz(checkers)] | checkers
        cdef uint64_t occ_nk = occ ^ kbit
        cdef int ep = self.ep
        cdef int promo_rank = 6 if us == 0 else 1
        cdef int n = 0, nup = 0, sq, t, to, k, base
        cdef uint64_t m, cand
        cdef bint promo
        cdef action_t up[80]
        while pieces:
            sq = ctz(pieces)
            pieces &= pieces - 1
            t = board[sq] & 7
            promo = False
            if t == PAWN:
                if us == 0:
                    m = (bit(sq) << 8) & empty
                    if m and (sq >> 3) == 1:
                        m |= (m << 8) & empty
                else:
                    m = (bit(sq) >> 8) & empty
                    if m and (sq >> 3) == 6:
                        m |= (m >> 8) & empty
                m = (m | (PAWN_ATT[us][sq] & opp)) & target
                if pinned & bit(sq):
                    m &= LINE[ksq][sq]
                if ep >= 0 and (PAWN_ATT[us][sq] >> ep) & 1 and self._ep_legal(sq, ep):
                    m |= bit(ep)
                promo = (sq >> 3) == promo_rank
            elif t == KNIGHT:
                if pinned & bit(sq):
                    continue
                m = KNIGHT_ATT[sq] & target
            elif t == KING:
                cand = KING_ATT[sq] & ~own
                m = 0
                while cand:
                    to = ctz(cand)
                    cand &= cand - 1
                    if not attacked(bb, opp, to, us, occ_nk):
                        m |= bit(to)
                if not checkers and self.castling:
                    if us == 0:
                        if (self.castling & 1) and not (occ & 0x60) and not attacked(bb, opp, 5, 0, occ) \
                                and not attacked(bb, opp, 6, 0, occ):
                            m |= bit(6)
                        if (self.castling & 2) and not (occ & 0x0E) and not attacked(bb, opp, 3, 0, occ) \
                                and not attacked(bb, opp, 2, 0, occ):
                            m |= bit(2)
                    else:
                        if (self.castling & 4) and not (occ & (<uint64_t>0x60 << 56)) \
                                and not attacked(bb, opp, 61, 1, occ) and not attacked(bb, opp, 62, 1, occ):
                            m |= bit(62)
                        if (self.castling & 8) and not (occ & (<uint64_t>0x0E << 56)) \
                                and not attacked(bb, opp, 59, 1, occ) and not attacked(bb, opp, 58, 1, occ):
                            m |= bit(58)
            else:
                if t == BISHOP:
                    m = bishop_att(sq, occ)
                elif t == ROOK:
                    m = rook_att(sq, occ)
                else:
                    m = bishop_att(sq, occ) | rook_att(sq, occ)
                m &= target
                if pinned & bit(sq):
                    m &= LINE[ksq][sq]
            if mode == MODE_ANY:
                if m:
                    return 1
                continue
            if mode == MODE_COUNT:
                n += popcount(m) << (2 if promo else 0)
                continue
            while m:
                to = ctz(m)
                m &= m - 1
                out[n] = sq * 64 + to
                n += 1
                if promo:
                    base = UNDERPROMO_BASE + ((us * 8 + (sq & 7)) * 3 + (to & 7) - (sq & 7) + 1) * 3
                    for k in range(3):
                        up[nup] = base + k
                        nup += 1
        if mode == MODE_LIST:
            for k in range(nup):
                out[n] = up[k]
                n += 1
        return n

    cdef bint _insufficient(self) noexcept nogil:
        cdef uint64_t* bb = self.bb
        if bb[PAWN] | bb[ROOK] | bb[QUEEN]:
            return False
        if bb[KNIGHT]:
            return (bb[KNIGHT] & (bb[KNIGHT] - 1)) == 0 and bb[BISHOP] == 0
        return (bb[BISHOP] & DARK_SQUARES) == 0 or (bb[BISHOP] & ~DARK_SQUARES) == 0

    cdef int _repetitions(self) noexcept nogil:
        """Occurrences of the current position since the position was set (this one included)."""
        cdef int count = 1
        cdef int lo = self._nundo - self.halfmove
        if lo < 0:
            lo = 0
        cdef int i = self._nundo - 2
        while i >= lo:
            if self._undo[i].key == self.key:
                count += 1
            i -= 2
        return count

    cdef void _set_terminal(self) noexcept nogil:
        cdef int any_move = self._gen(NULL, MODE_ANY)
        self._terminal = True
        if not any_move and self._checkers():
            self.reason = REASON_CHECKMATE
            self._result = RESULT_FIRST_WINS if self._player == 1 else RESULT_SECOND_WINS
            return
        self._result = RESULT_DRAW
        if self._insufficient():
            self.reason = REASON_INSUFFICIENT
        elif not any_move:
            self.reason = REASON_STALEMATE
        elif self.halfmove >= 100:
            self.reason = REASON_FIFTY
        elif self.halfmove >= 8 and self._nundo >= 8 and self._repetitions() >= 3:
            self.reason = REASON_THREEFOLD
        elif self._ply >= self.max_plies:
            self.reason = REASON_PLY_CAP
        else:
            self._terminal = False
            self.reason = REASON_NONE

    # ---- hooks --------------------------------------------------------------------------------------
    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        return self._gen(out, MODE_LIST)

    cdef int count_legal_actions(self, action_t* scratch) noexcept nogil:
        if self._terminal:
            return 0
        return self._gen(NULL, MODE_COUNT)

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int us = self._player
        cdef int them = us ^ 1
        cdef int fr, to, ptype = 0
        if a < UNDERPROMO_BASE:
            fr = a >> 6
            to = a & 63
        else:
            fr = UP_FROM[a - UNDERPROMO_BASE]
            to = UP_TO[a - UNDERPROMO_BASE]
            ptype = UP_TYPE[a - UNDERPROMO_BASE]
        cdef ChessUndo* u = &self._undo[self._nundo]
        self._nundo += 1
        cdef signed char pc = self.board[fr]
        cdef int t = pc & 7
        cdef signed char cap = self.board[to]
        cdef int cap_sq = to
        cdef hash_t k = self.key
        cdef uint64_t* bb = self.bb
        cdef uint64_t mv = bit(fr) | bit(to)
        u.key = k
        u.halfmove = <short>self.halfmove
        u.castling = <signed char>self.castling
        u.ep = <signed char>self.ep
        u.moved = pc
        u.flags = 0
        if t == PAWN and to == self.ep:
            cap_sq = to - 8 if us == 0 else to + 8
            cap = <signed char>(PAWN | (them << 3))
            u.flags = MF_EP
        u.captured = cap
        if cap:
            bb[cap & 7] ^= bit(cap_sq)
            self.color[them] ^= bit(cap_sq)
            self.board[cap_sq] = 0
            k ^= Z_PIECE[cap][cap_sq]
        bb[t] ^= mv
        self.color[us] ^= mv
        self.board[fr] = 0
        self.board[to] = pc
        k ^= Z_PIECE[pc][fr] ^ Z_PIECE[pc][to]
        if t == PAWN:
            if (to >> 3) == 7 or (to >> 3) == 0:
                if ptype == 0:
                    ptype = QUEEN
                bb[PAWN] ^= bit(to)
                bb[ptype] ^= bit(to)
                self.board[to] = <signed char>(ptype | (us << 3))
                k ^= Z_PIECE[pc][to] ^ Z_PIECE[ptype | (us << 3)][to]
                u.flags |= MF_PROMO
        elif t == KING and (to - fr == 2 or fr - to == 2):
            u.flags |= MF_CASTLE
            self._move_rook(fr, to, us)
            if to > fr:
                k ^= Z_PIECE[ROOK | (us << 3)][fr + 3] ^ Z_PIECE[ROOK | (us << 3)][fr + 1]
            else:
                k ^= Z_PIECE[ROOK | (us << 3)][fr - 4] ^ Z_PIECE[ROOK | (us << 3)][fr - 1]
        cdef int c = self.castling & CASTLE_KEEP[fr] & CASTLE_KEEP[to]
        cdef bint fresh = c != self.castling or t == PAWN or cap
        if c != self.castling:
            k ^= Z_CASTLE[self.castling] ^ Z_CASTLE[c]
            self.castling = c
        if self.ep >= 0:
            k ^= Z_EP[self.ep]
            self.ep = -1
        if t == PAWN or cap:
            self.halfmove = 0
        else:
            self.halfmove += 1
        self._player = them
        k ^= Z_SIDE
        cdef int e
        cdef uint64_t cand
        if t == PAWN and (to - fr == 16 or fr - to == 16):
            e = (fr + to) >> 1
            cand = PAWN_ATT[us][e] & bb[PAWN] & self.color[them]
            while cand:
                if self._ep_legal(ctz(cand), e):
                    self.ep = e
                    k ^= Z_EP[e]
                    break
                cand &= cand - 1
        self.key = k
        self._hash = k ^ Z_HALF[self.halfmove if self.halfmove <= 100 else 100]
        # history key: the multiset of the positions since the last move that makes every earlier
        # one unrepeatable (a pawn move, a capture, a change of castling rights), plus the ply
        if fresh:
            self._hist_key = mix64(k) + ply_key(self._ply)
        else:
            self._hist_key = self._hist_key - ply_key(self._ply - 1) + mix64(k) + ply_key(self._ply)
        self._set_terminal()

    cdef void _move_rook(self, int kfr, int kto, int us) noexcept nogil:
        """Move (or move back: it is its own inverse) the rook of a castling move of the king."""
        cdef int rfr, rto
        if kto > kfr:
            rfr, rto = kfr + 3, kfr + 1
        else:
            rfr, rto = kfr - 4, kfr - 1
        cdef uint64_t mv = bit(rfr) | bit(rto)
        self.bb[ROOK] ^= mv
        self.color[us] ^= mv
        self.board[rto], self.board[rfr] = self.board[rfr], self.board[rto]

    cdef void _do_undo(self, action_t a) noexcept nogil:
        self._nundo -= 1
        cdef ChessUndo* u = &self._undo[self._nundo]
        cdef int us = self._player             # the mover of `a`
        cdef int them = us ^ 1
        cdef int fr, to
        if a < UNDERPROMO_BASE:
            fr = a >> 6
            to = a & 63
        else:
            fr = UP_FROM[a - UNDERPROMO_BASE]
            to = UP_TO[a - UNDERPROMO_BASE]
        cdef uint64_t* bb = self.bb
        cdef signed char cur = self.board[to]
        bb[cur & 7] ^= bit(to)
        bb[u.moved & 7] ^= bit(fr)
        self.color[us] ^= bit(fr) | bit(to)
        self.board[to] = 0
        self.board[fr] = u.moved
        if u.flags & MF_CASTLE:
            self._move_rook(fr, to, us)
        cdef int cap_sq
        if u.captured:
            cap_sq = to
            if u.flags & MF_EP:
                cap_sq = to - 8 if us == 0 else to + 8
            bb[u.captured & 7] ^= bit(cap_sq)
            self.color[them] ^= bit(cap_sq)
            self.board[cap_sq] = u.captured
        self.castling = u.castling
        self.ep = u.ep
        self.halfmove = u.halfmove
        self.key = u.key
        self.reason = REASON_NONE

    cdef double natural_score(self) noexcept nogil:
        cdef int t
        cdef double m = 0.0
        for t in range(PAWN, KING):
            m += VALUE[t] * (popcount(self.bb[t] & self.color[0]) - popcount(self.bb[t] & self.color[1]))
        m /= 39.0
        if m > 1.0:
            return 1.0
        if m < -1.0:
            return -1.0
        return m

    cdef void encode(self, float* out) noexcept nogil:
        cdef int us = self._player
        cdef int sq, pc, r, c, ch, i, n
        memset(out, 0, sizeof(float) * 64 * NUM_PLANES)
        for sq in range(64):
            pc = self.board[sq]
            if pc == 0:
                continue
            r = 7 - (sq >> 3) if us == 0 else (sq >> 3)
            c = sq & 7
            ch = (pc & 7) - 1 + (0 if (pc >> 3) == us else 6)
            out[(r * 8 + c) * NUM_PLANES + ch] = 1.0
        cdef int rights[4]
        if us == 0:
            rights[0] = self.castling & 1
            rights[1] = self.castling & 2
            rights[2] = self.castling & 4
            rights[3] = self.castling & 8
        else:
            rights[0] = self.castling & 4
            rights[1] = self.castling & 8
            rights[2] = self.castling & 1
            rights[3] = self.castling & 2
        for ch in range(4):
            if rights[ch]:
                for i in range(64):
                    out[i * NUM_PLANES + 12 + ch] = 1.0
        if self.ep >= 0:
            r = 7 - (self.ep >> 3) if us == 0 else (self.ep >> 3)
            out[(r * 8 + (self.ep & 7)) * NUM_PLANES + 16] = 1.0
        n = self.halfmove * 64 // 100
        if n > 64:
            n = 64
        for i in range(n):
            out[i * NUM_PLANES + 17] = 1.0
        if self._nundo >= 4 and self._repetitions() >= 2:
            for i in range(64):
                out[i * NUM_PLANES + 18] = 1.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef ChessState d = <ChessState>dst
        d.bb = self.bb
        d.color = self.color
        d.board = self.board
        d.castling = self.castling
        d.ep = self.ep
        d.halfmove = self.halfmove
        d.key = self.key
        d.reason = self.reason
        memcpy(d._undo, self._undo, sizeof(ChessUndo) * self._nundo)
        d._nundo = self._nundo

    # ---- Python-level helpers -------------------------------------------------------------------
    def _termination_reason(self):
        if not self._terminal:
            return None
        return REASONS[self.reason]

    def is_check(self) -> bool:
        """Whether the side to move is in check."""
        return self._checkers() != 0

    def piece_at(self, sq):
        """The FEN letter of the piece on square ``sq`` (a1 = 0 .. h8 = 63), or None."""
        pc = self.board[<int>validate.integer(sq, "chess: square", 0, 63)]
        if not pc:
            return None
        letter = PIECE_LETTERS[(pc & 7) - 1]
        return letter if pc >> 3 == 0 else letter.lower()

    # ---- text ---------------------------------------------------------------------------------------
    def _parse_move_text(self, str text) -> int:
        low = text.lower()
        if low == "0000":
            raise InvalidMoveError(f"chess: the null move {text!r} is not a legal chess move")
        m = _UCI.match(low)
        if not m:
            raise InvalidMoveError(
                f"chess: malformed move {text!r} (expected UCI: from and to squares and an optional "
                f"promotion letter, e.g. 'e2e4', 'e7e8q', 'e1g1' for castling)")
        fr, to, p = _parse_sq(m.group(1)), _parse_sq(m.group(2)), m.group(3)
        if fr == to:
            raise InvalidMoveError(f"chess: move {text!r} does not leave its square")
        cdef int us = self._player
        df = (to & 7) - (fr & 7)
        last = (to >> 3) == (7 if us == 0 else 0)
        if p:
            if (fr >> 3) != (6 if us == 0 else 1) or not last or abs(df) > 1:
                raise InvalidMoveError(
                    f"chess: {text!r} names a promotion piece but is not a pawn move from the "
                    f"{'7th' if us == 0 else '2nd'} to the {'8th' if us == 0 else '1st'} rank "
                    f"({'white' if us == 0 else 'black'} to move)")
            if p == "q":
                return fr * 64 + to
            return UNDERPROMO_BASE + ((us * 8 + (fr & 7)) * 3 + df + 1) * 3 + "nbr".index(p)
        if last and self.board[fr] == (PAWN | (us << 3)):
            raise IllegalMoveError(
                f"chess: {text!r} moves a pawn to the last rank without a promotion letter "
                f"(e.g. {low}q) in position {self._position_text()!r}")
        return fr * 64 + to

    def _move_text(self, int action) -> str:
        cdef int fr, to, pt
        if action >= UNDERPROMO_BASE:
            fr = UP_FROM[action - UNDERPROMO_BASE]
            to = UP_TO[action - UNDERPROMO_BASE]
            if fr < 0:
                raise InvalidMoveError(f"chess: action {action} is an under-promotion off the board")
            pt = UP_TYPE[action - UNDERPROMO_BASE]
            return square_name(fr) + square_name(to) + "nbr"[pt - KNIGHT]
        fr, to = action >> 6, action & 63
        if fr == to:
            raise InvalidMoveError(f"chess: action {action} does not move ({square_name(fr)} to itself)")
        text = square_name(fr) + square_name(to)
        if (self.board[fr] & 7) == PAWN and ((to >> 3) == 7 or (to >> 3) == 0):
            text += "q"
        return text

    def _position_text(self) -> str:
        rows = []
        cdef int r, f, pc, run
        for r in range(7, -1, -1):
            row, run = [], 0
            for f in range(8):
                pc = self.board[r * 8 + f]
                if not pc:
                    run += 1
                    continue
                if run:
                    row.append(str(run))
                    run = 0
                letter = PIECE_LETTERS[(pc & 7) - 1]
                row.append(letter if pc >> 3 == 0 else letter.lower())
            if run:
                row.append(str(run))
            rows.append("".join(row))
        castle = "".join(CASTLE_LETTERS[i] for i in range(4) if self.castling & (1 << i)) or "-"
        ep = square_name(self.ep) if self.ep >= 0 else "-"
        return (f"{'/'.join(rows)} {'wb'[self._player]} {castle} {ep} {self.halfmove} "
                f"{self._ply // 2 + 1}")

    def _set_position_text(self, str text) -> None:
        def bad(why):
            return InvalidPositionError(f"chess: invalid FEN {text!r}: {why}")

        parts = text.split()
        if not 4 <= len(parts) <= 6:
            raise bad(f"expected 6 space-separated fields (placement, side, castling, en passant, "
                      f"halfmove clock, fullmove number; the last two may be omitted), got {len(parts)}")
        placement, side_s, castle_s, ep_s = parts[:4]
        # piece placement
        rows = placement.split("/")
        if len(rows) != 8:
            raise bad(f"the placement {placement!r} has {len(rows)} rows, expected 8")
        pieces = [0] * 64
        for i, row in enumerate(rows):
            rank = 7 - i
            f = 0
            prev_digit = False
            for ch in row:
                if ch in "12345678":
                    if prev_digit:
                        raise bad(f"two digits in a row in rank {rank + 1} ({row!r})")
                    f += int(ch)
                    prev_digit = True
                elif ch in "PNBRQKpnbrqk":
                    if f >= 8:
                        raise bad(f"rank {rank + 1} ({row!r}) has more than 8 squares")
                    pieces[rank * 8 + f] = (PIECE_LETTERS.index(ch.upper()) + 1) | (8 if ch.islower() else 0)
                    f += 1
                    prev_digit = False
                else:
                    raise bad(f"unexpected character {ch!r} in rank {rank + 1} ({row!r}); allowed: "
                              f"PNBRQK, pnbrqk and digits 1-8")
            if f != 8:
                raise bad(f"rank {rank + 1} ({row!r}) has {f} squares, expected 8")
        for colour, name in ((0, "white"), (1, "black")):
            own = [pc for pc in pieces if pc and pc >> 3 == colour]
            kings = sum(1 for pc in own if pc & 7 == KING)
            pawns = sum(1 for pc in own if pc & 7 == PAWN)
            if kings != 1:
                raise bad(f"{name} has {kings} kings, expected exactly 1")
            if pawns > 8:
                raise bad(f"{name} has {pawns} pawns (at most 8)")
            if len(own) > 16:
                raise bad(f"{name} has {len(own)} pieces (at most 16)")
        for sq in list(range(8)) + list(range(56, 64)):
            if pieces[sq] and pieces[sq] & 7 == PAWN:
                raise bad(f"a pawn stands on {square_name(sq)} (first or last rank)")
        # side to move
        if side_s not in ("w", "b"):
            raise bad(f"side to move {side_s!r} must be 'w' or 'b'")
        side = 0 if side_s == "w" else 1
        # castling rights
        castling = 0
        if castle_s != "-":
            for ch in castle_s:
                if ch not in CASTLE_LETTERS:
                    raise bad(f"castling field {castle_s!r}: unexpected {ch!r} (expected '-' or "
                              f"letters among KQkq)")
                bitv = 1 << CASTLE_LETTERS.index(ch)
                if castling & bitv:
                    raise bad(f"castling field {castle_s!r} repeats {ch!r}")
                castling |= bitv
            for i, (ksq, rsq) in enumerate(((4, 7), (4, 0), (60, 63), (60, 56))):
                if castling & (1 << i):
                    colour = 0 if i < 2 else 1
                    if pieces[ksq] != (KING | (colour << 3)) or pieces[rsq] != (ROOK | (colour << 3)):
                        raise bad(f"castling right {CASTLE_LETTERS[i]!r} needs the "
                                  f"{'white' if colour == 0 else 'black'} king on {square_name(ksq)} "
                                  f"and a rook on {square_name(rsq)}")
        # en passant
        ep = -1
        if ep_s != "-":
            if not _SQUARE.match(ep_s):
                raise bad(f"en-passant field {ep_s!r} must be '-' or a square such as 'e3'")
            ep = _parse_sq(ep_s)
            if (ep >> 3) != (5 if side == 0 else 2):
                raise bad(f"en-passant square {ep_s!r} must be on rank {6 if side == 0 else 3} "
                          f"with {'white' if side == 0 else 'black'} to move")
            fwd = 8 if side == 0 else -8             # from the ep square towards the pushed pawn's start
            pawn_sq = ep - fwd
            if pieces[ep] or pieces[ep + fwd] or pieces[pawn_sq] != (PAWN | ((side ^ 1) << 3)):
                raise bad(f"en-passant square {ep_s!r} does not follow a double pawn step (it and the "
                          f"square behind it must be empty, with the pawn on {square_name(pawn_sq)})")
        # clocks
        halfmove, fullmove = 0, 1
        if len(parts) >= 5:
            if not is_digits(parts[4]) or len(parts[4]) > 9:
                raise bad(f"halfmove clock {parts[4]!r} is not a non-negative integer")
            halfmove = int(parts[4])
            if halfmove > 100:
                raise bad(f"halfmove clock {halfmove} exceeds 100 (the fifty-move rule ends the game at 100)")
        if len(parts) == 6:
            if not is_digits(parts[5]) or len(parts[5]) > 9 or int(parts[5]) < 1:
                raise bad(f"fullmove number {parts[5]!r} is not a positive integer")
            fullmove = int(parts[5])
        ply = 2 * (fullmove - 1) + side
        if ply > self.max_plies:
            raise bad(f"fullmove number {fullmove} gives ply {ply}, beyond the ply cap {self.max_plies}")
        wk, bk = pieces.index(KING), pieces.index(KING | 8)
        if KING_ATT[wk] & bit(bk):
            raise bad(f"the kings stand next to each other ({square_name(wk)}, {square_name(bk)})")
        # checks, on a scratch state
        cdef ChessState tmp = ChessState(self.game)
        tmp._load(pieces, side ^ 1, 0, -1, 0, 0)
        if tmp._checkers():
            raise bad(f"the side not to move ({'black' if side == 0 else 'white'}) is in check")
        tmp._load(pieces, side, castling, ep, halfmove, ply)
        if popcount(tmp._checkers()) > 2:
            raise bad(f"{popcount(tmp._checkers())} pieces give check")
        # valid: take it over
        tmp._copy_to(self)
        self._player = tmp._player
        self._ply = tmp._ply
        self._terminal = tmp._terminal
        self._result = tmp._result
        self._hash = tmp._hash
        self._hist_key = tmp._hist_key
        self._nundo = 0

    def _drawing(self) -> str:
        grid = []
        cdef int r, f, pc
        for r in range(7, -1, -1):
            row = []
            for f in range(8):
                pc = self.board[r * 8 + f]
                row.append(-1 if not pc else (pc & 7) - 1 + 6 * (pc >> 3))
            grid.append(row)
        side = ("white", "black")[self._player]
        if self._terminal:
            footer = f"game over: {self.result()} ({REASONS[self.reason]}, ply {self._ply})"
        else:
            footer = f"{side} to move (ply {self._ply}{', check' if self._checkers() else ''})"
        return bt.draw_grid(grid, SYMBOLS, 8, 8, footer)

    def _transform_action(self, int sym, int action) -> int:
        if not 0 <= action < self.num_actions:
            raise InvalidMoveError(f"action id {action} is out of range [0, {self.num_actions})")
        if sym == 0:
            return action
        raise GameError(f"chess: symmetry {sym} is not a symmetry of the game (allowed: 0)")


def _start_pieces():
    order = [ROOK, KNIGHT, BISHOP, QUEEN, KING, BISHOP, KNIGHT, ROOK]
    p = [0] * 64
    for f in range(8):
        p[f] = order[f]
        p[8 + f] = PAWN
        p[48 + f] = PAWN | 8
        p[56 + f] = order[f] | 8
    return p


_START = [_start_pieces()]
