from games._state cimport State
from games._typedefs cimport action_t, uint64_t

cdef enum:
    BT_MAX_SQUARES = 256          # 16 x 16, the largest board the registry allows

cdef class BreakthroughState(State):
    cdef int rows, cols, nsq
    cdef signed char board[BT_MAX_SQUARES]   # -1 empty, else the owner (0 = x, 1 = o); r * cols + c, row 0 on top
    cdef int count[2]                        # pieces of each player on the board
    cdef uint64_t bits[2][4]                 # the same pieces as bit sets (bit sq % 64 of word sq / 64)
    cdef int nwords                          # words in use: ceil(nsq / 64)
    cdef unsigned char edge[BT_MAX_SQUARES]  # 1: may step towards c - 1 (c > 0); 2: towards c + 1
    cdef uint64_t not_left, not_right        # boards of <= 64 squares: the squares with c > 0, c < cols - 1
    cdef unsigned char* _captured            # undo stack: 1 when the move at that depth captured
    cdef int _nundo                          # entries used on the undo stack
    cdef int _undo_cap

    cdef void _rebuild(self) noexcept nogil
    cdef int _legal_actions_64(self, action_t* out) noexcept nogil
