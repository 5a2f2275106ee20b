from games._state cimport State
from games._typedefs cimport action_t, hash_t, uint64_t

# Boards up to 10x10 = 100 squares fit one 128-bit integer (GCC/Clang `unsigned __int128`); bit
# `r * n + c` is the square in row r (0 = top) and column c, which is also its action id.
cdef extern from *:
    """
    typedef unsigned __int128 rv_bits_t;

    static inline int rv_popcount(rv_bits_t x) {
        return __builtin_popcountll((unsigned long long)x)
             + __builtin_popcountll((unsigned long long)(x >> 64));
    }

    /* Index of the highest set bit of x (x != 0). */
    static inline int rv_highest(rv_bits_t x) {
        unsigned long long hi = (unsigned long long)(x >> 64);
        return hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll((unsigned long long)x);
    }

    static inline uint64_t rv_lo(rv_bits_t x) { return (uint64_t)x; }
    static inline uint64_t rv_hi(rv_bits_t x) { return (uint64_t)(x >> 64); }
    static inline int rv_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    static inline int rv_clz64(unsigned long long x) { return __builtin_clzll(x); }
    """
    ctypedef unsigned long long bits_t "rv_bits_t"
    # A 64-bit word for boards up to 8x8. Declared with a different Cython base type than bits_t
    # (the C type is the same as uint64_t) so that a fused type can tell the two apart.
    ctypedef unsigned long word64_t "uint64_t"
    int rv_popcount(bits_t x) noexcept nogil
    int rv_highest(bits_t x) noexcept nogil
    word64_t rv_lo(bits_t x) noexcept nogil
    uint64_t rv_hi(bits_t x) noexcept nogil
    int rv_ctz64(uint64_t x) noexcept nogil
    int rv_clz64(word64_t x) noexcept nogil


# One saved ply: everything `_do_apply` changes besides the base class's bookkeeping.
ctypedef struct ReversiUndo:
    bits_t discs0
    bits_t discs1
    bits_t mob
    bits_t mob_next


cdef class ReversiState(State):
    cdef int n                      # board side (6, 8 or 10)
    cdef int nn                     # n * n; also the PASS action id
    cdef bits_t discs[2]            # discs of player 0 (x, black) and player 1 (o, white)
    cdef bits_t _mob                # legal placements of the mover (0: must pass, or game over)
    cdef bits_t _mob_next           # when _mob == 0 and the game goes on: the other player's placements
    cdef bits_t _full               # the squares of the board
    cdef bits_t _inner              # the board without its first and last columns
    cdef const bits_t* _rays        # _rays[sq * 8 + d]: squares from sq (exclusive) towards direction d
    cdef ReversiUndo* _undo         # one entry per ply played since the position was set
    cdef int _sp                    # entries used in _undo
    cdef int _undo_cap
