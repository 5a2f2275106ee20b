from games._state cimport State
from games._typedefs cimport action_t

cdef enum:
    BT_MAX_SQUARES = 256          # 16 x 16, the largest board the registry allows

cdef class BreakthroughState(State):
    cdef int rows, cols, nsq
    cdef signed char board[BT_MAX_SQUARES]   # -1 empty, else the owner (0 = x, 1 = o); r * cols + c, row 0 on top
    cdef int count[2]                        # pieces of each player on the board
    cdef unsigned char* _captured            # undo stack: 1 when the move at that depth captured
    cdef int _nundo                          # entries used on the undo stack
    cdef int _undo_cap

    cdef void _rehash(self) noexcept nogil
