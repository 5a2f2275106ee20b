from games._state cimport State
from games._typedefs cimport action_t, hash_t, uint32_t

cdef class AlquerqueState(State):
    cdef signed char board[25]      # -1 empty, else the owner (0 = x, 1 = o); r * 5 + c, row 0 on top
    cdef int count[2]               # pieces of each player
    cdef bint multi                 # lobogames rules: compulsory capture sequences (else ludii: optional single)
    cdef int reason                 # why the game ended (ALQ_* in alquerque.pyx)
    cdef hash_t key                 # board + side to move (without the ply)

    cdef int _captures_from(self, int start, int cur, uint32_t mask, action_t* out, int lo, int n) noexcept nogil
    cdef bint _has_move(self, int p) noexcept nogil
    cdef void _rebuild(self) noexcept
