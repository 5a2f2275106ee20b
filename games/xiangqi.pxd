from games._state cimport State
from games._typedefs cimport action_t, hash_t, uint64_t

cdef enum:
    XQ_PAD = 160              # padded mailbox: (rank + 2) * 11 + file + 2, off-board cells hold XQ_OFF
    XQ_OFF = 16               # piece code of an off-board cell (red 1..7, black 9..15, 0 empty)

cdef class XiangqiState(State):
    cdef signed char brd[XQ_PAD]     # piece codes on the padded mailbox
    cdef uint64_t occ[2][2]          # each side's pieces as a 90-bit set over squares rank * 9 + file
    cdef int ksq[2]                  # padded square of each general
    cdef int clock                   # plies since the last capture (60 moves each = 120 plies: a draw)
    cdef int _why                    # why the game ended (WHY_* in xiangqi.pyx), 0 while it goes on
    cdef hash_t bhash                # hash of the board and the side to move (repetition key)
    # undo stack, one entry per ply played since the position was set (capacity max_plies + 1)
    cdef signed char* _u_cap         # the piece captured (0: none)
    cdef short* _u_clock             # the clock before the move
    cdef hash_t* _u_pos              # bhash of the position after k plies (entry 0: the set position)
    cdef int _nundo
    cdef int _undo_cap

    cdef bint _attacked(self, int k, int side) noexcept nogil
    cdef int _gen(self, action_t* out, int mode) noexcept nogil
    cdef void _rebuild(self) noexcept nogil
    cdef void _set_terminal(self) noexcept nogil
