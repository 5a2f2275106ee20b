# The one batcher (batcher.pyx): the round loop over many walks, the evaluator contract with the
# value cache in front, and the interface a walker implements (a compiled one, the self-play pool's
# games, overrides the cdef methods; one written in Python subclasses PyWalker).

cdef class Batcher


cdef class Evaluation:
    cdef readonly object fn, cache, refresh
    cdef readonly object buf, values
    cdef object flat, ask
    cdef float* bufp                # buf's rows, for compiled walkers
    cdef readonly int n             # rows claimed this round
    cdef readonly int rows
    cdef list waiting               # the walkers claiming them, in order
    cdef void claim_c(self, Walker w, int states)
    cdef tuple evaluate(self)


cdef class Walker:
    cdef int off, k                 # this round's claim: k rows from off
    cdef int step_c(self, Batcher batcher) except -1
    cdef int supply_c(self, object values, const float* p, double seconds) except -1


cdef class PyWalker(Walker):
    pass


cdef class Batcher:
    cdef readonly int in_flight
    cdef readonly long cache_states
    cdef dict evaluations, caches
    cdef readonly long rounds, calls, states, cached, abandoned
    cdef readonly list live, given_up
