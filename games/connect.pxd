from games._state cimport State
from games._typedefs cimport action_t

# Largest board side the engines hold (the arrays below are sized for it).
cdef enum:
    STONE_MAX_SIDE = 25
    STONE_MAX_CELLS = 625


cdef class StoneGameState(State):
    """k in a row by stone placement on an N x N board (shared by gomoku and connect6)."""
    cdef signed char cells[625]    # -1 empty, else the owner (0 = x, 1 = o); index = row * n + col
    cdef int n                     # board side
    cdef int ncells                # n * n
    cdef int k                     # stones in a row needed to win (or more)
    cdef int stones_per_turn       # 1 (gomoku) or 2 (connect6: after a single first stone)
    cdef bint outer_open           # black's first stone must be on the two outermost lines

    cdef int _init_stone(self, object info, int k, int stones_per_turn, bint outer_open) except -1
    cdef int mover_at(self, int ply) noexcept nogil
    cdef bint completes_line(self, int a, int p) noexcept nogil


cdef class OuterOpenGomokuState(StoneGameState):
    pass


cdef class Connect6State(StoneGameState):
    pass
