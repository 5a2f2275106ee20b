from games._align cimport AlignState

cdef class TapatanState(AlignState):
    pass
