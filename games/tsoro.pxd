from games._align cimport AlignState

cdef class TsoroYematatuState(AlignState):
    pass
