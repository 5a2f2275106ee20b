from games._state cimport State
from games._typedefs cimport action_t, hash_t, uint64_t

# One saved ply: everything `_do_apply` changes besides the base class's bookkeeping.
ctypedef struct LoaUndo:
    uint64_t pcs0, pcs1
    uint64_t rkey         # repetition key of the position before the move
    int irrev             # `_irrev` before the move
    int reason


cdef class LinesOfActionState(State):
    cdef int n                    # board side: 8 or 6
    cdef int sz                   # table index: 1 for 8x8, 0 for 6x6
    cdef int pass_action          # n * n * 8
    cdef uint64_t pcs[2]          # pieces of black (x, player 0) and white (o, player 1); bit r * n + c
    cdef uint64_t full            # the squares of the board
    cdef uint64_t rkey            # repetition key: Zobrist of the board and side to move only
    cdef int _irrev               # undo-stack depth of the latest position reached by a capture
    cdef int reason               # why the game ended (REASON_* in the .pyx)
    cdef LoaUndo* _undo
    cdef int _nundo
    cdef int _undo_cap

    cdef void _rebuild(self) noexcept nogil
    cdef bint _connected(self, uint64_t x) noexcept nogil
    cdef void _settle_connection(self, bint check_mover, bint check_other) noexcept nogil
