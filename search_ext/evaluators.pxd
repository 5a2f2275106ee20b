# Evaluators value the non-terminal children of an expanded state, one batch per expansion.
from games._state cimport State
from games._typedefs cimport action_t, uint64_t

# The smallest |f_t| of a decided terminal state of a game (docs/ALGORITHMS.md section 2): 1/P for
# the depth scores (a win at the ply cap P), the floor of the natural score otherwise. Estimates of a
# `bounded` evaluator lie strictly inside (-proven_floor, proven_floor), so every proven win is above
# every estimate and every proven loss below.
cdef double proven_floor(int score_kind, int max_plies) noexcept nogil

cdef class Evaluator:
    cdef public bint needs_encoding     # the search fills `enc` with the children's planes first
    cdef public bint bounded            # its values lie strictly inside the decided terminal values
    cdef object error                   # an exception raised inside a callback, re-raised by the search
    # Values of the children reached by `actions[i]` from `parent`, each from the point of view of
    # the player to move in that child, in [-1, 1], written to `out[i]`. `enc` holds the n encoded
    # children (n * H * W * C floats) when `needs_encoding`. Returns -1 on error (see `error`).
    cdef int evaluate(self, State parent, const action_t* actions, int n, float* enc,
                      float* out) noexcept nogil

cdef class ZeroEvaluator(Evaluator):
    pass

cdef class PlayoutEvaluator(Evaluator):
    cdef public int playouts
    cdef public int max_plies
    cdef public bint use_score
    cdef uint64_t rng
    cdef action_t* buf
    cdef int buf_cap

cdef class CallableEvaluator(Evaluator):
    cdef public object fn
    cdef tuple shape

cdef class RandomValueEvaluator(Evaluator):
    cdef uint64_t rng
