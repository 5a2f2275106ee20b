# Shared C types and small inline helpers for every game engine and the search.
from libc.stdint cimport uint64_t, int32_t, int8_t, uint32_t

cdef extern from *:
    """
    #include <stdint.h>
    /* Population count: the POPCNT instruction when the compiler may use it, else a branch-free
       SWAR sum (without -mpopcnt, __builtin_popcountll is a library call). */
    static inline int descent_popcount64(uint64_t x) {
    #if defined(__POPCNT__)
        return __builtin_popcountll(x);
    #else
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    #endif
    }
    """
    int descent_popcount64(uint64_t x) nogil

ctypedef int32_t action_t
ctypedef uint64_t hash_t


cdef inline uint64_t splitmix64(uint64_t* state) noexcept nogil:
    """SplitMix64 step (Steele, Lea & Flood 2014): a fast, well-mixed 64-bit generator.

    Used to fill Zobrist tables deterministically and to seed the playout RNG.
    """
    state[0] += <uint64_t>0x9E3779B97F4A7C15ULL
    cdef uint64_t z = state[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline uint32_t rng_below(uint64_t* state, uint32_t n) noexcept nogil:
    """Uniform integer in [0, n) (Lemire's multiply-shift; bias < n / 2**32)."""
    cdef uint64_t r = splitmix64(state) >> 32
    return <uint32_t>((r * <uint64_t>n) >> 32)


cdef inline double rng_uniform(uint64_t* state) noexcept nogil:
    """Uniform double in [0, 1) with 53 random bits."""
    return <double>(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0)


cdef inline int popcount64(uint64_t x) noexcept nogil:
    """Number of set bits (shared by the bitboard engines)."""
    return descent_popcount64(x)


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    """SplitMix64's finalizer: a bijective, well-mixed image of a 64-bit key (history keys are sums
    of these, an order-free multiset hash)."""
    x = (x ^ (x >> 30)) * <uint64_t>0xBF58476D1CE4E5B9ULL
    x = (x ^ (x >> 27)) * <uint64_t>0x94D049BB133111EBULL
    return x ^ (x >> 31)


cdef inline uint64_t ply_key(int ply) noexcept nogil:
    """The history key's term for the ply (games whose hash leaves the ply out but whose ply cap or
    depth-scored outcome depends on it)."""
    return mix64(<uint64_t>ply * <uint64_t>0x9E3779B97F4A7C15ULL + <uint64_t>0x5851F42D4C957F2DULL)
