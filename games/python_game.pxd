from games._state cimport State
from games._typedefs cimport action_t

cdef class PythonGameState(State):
    cdef object g                # the game object (games.protocol.Game): the position
    cdef list snapshots          # the positions before each move, for a game without ``undo``
    cdef list moves              # the actions played since the initial position
    cdef bint has_undo           # the game takes moves back itself (else: snapshots)
    cdef bint keyed              # the game gives ``key()`` (else: the move history is hashed)
    cdef str label               # the game's spec, for error messages

    cdef int _legal_py(self, action_t* out) noexcept
    cdef void _apply_py(self, action_t a) noexcept
    cdef void _undo_py(self, action_t a) noexcept
    cdef void _encode_py(self, float* out) noexcept
    cdef double _margin_py(self) noexcept
    cdef int _sync(self, action_t a, bint moved) except -1
    cdef void _fail(self, str where, object exc) noexcept
