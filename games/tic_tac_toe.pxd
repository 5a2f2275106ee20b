from games._state cimport State
from games._typedefs cimport action_t

cdef class TicTacToeState(State):
    cdef signed char cells[9]     # -1 empty, else the owner (0 = x, 1 = o); index = row * 3 + col
