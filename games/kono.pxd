from games._state cimport State
from games._typedefs cimport action_t, hash_t

cdef class FiveFieldKonoState(State):
    cdef signed char board[25]      # -1 empty, else the owner (0 = x, 1 = o); r * 5 + c, row 0 on top
    cdef int athome[2]              # pieces of each player on its goal points (the other's start)
    cdef int reason                 # why the game ended (KONO_* in kono.pyx)
    cdef hash_t key                 # board + side to move (the repetition key, no ply)
    cdef hash_t* keys               # keys of the positions since the root, keys[0] = root
    cdef int nkeys

    cdef bint _has_move(self, int p) noexcept nogil
    cdef void _rebuild(self) noexcept
