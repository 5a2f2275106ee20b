from games._state cimport State
from games._typedefs cimport action_t, uint64_t, hash_t

# One entry of the undo stack: everything a move destroys, and the position key before it (the
# keys of the positions since the game start / the last set_position drive the repetition rule).
ctypedef struct ChessUndo:
    hash_t key              # position key before the move (no clocks)
    short halfmove          # fifty-move counter before the move
    signed char captured    # piece code captured (0: none)
    signed char moved       # piece code that moved (a pawn for a promotion)
    signed char castling    # castling rights before the move (KQkq = bits 1, 2, 4, 8)
    signed char ep          # en-passant target square before the move, -1 if none
    signed char flags       # MF_* bits: en-passant capture, castling, promotion


cdef class ChessState(State):
    cdef uint64_t bb[8]              # bit sets by piece type (1 pawn .. 6 king), both colours
    cdef uint64_t color[2]           # bit sets by colour (0 white, 1 black)
    cdef signed char board[64]       # piece codes: 0 empty, type | (colour << 3); a1 = 0 .. h8 = 63
    cdef int castling                # KQkq = bits 1, 2, 4, 8
    cdef int ep                      # en-passant target square when a legal en-passant capture exists, else -1
    cdef int halfmove                # plies since the last capture or pawn move
    cdef hash_t key                  # Zobrist key of the position (pieces, side, castling, ep), no clocks
    cdef int reason                  # REASON_* of a terminal state
    cdef ChessUndo* _undo
    cdef int _nundo
    cdef int _undo_cap

    cdef int _gen(self, action_t* out, int mode) noexcept nogil
    cdef bint _ep_legal(self, int from_sq, int ep) noexcept nogil
    cdef uint64_t _checkers(self) noexcept nogil
    cdef bint _insufficient(self) noexcept nogil
    cdef int _repetitions(self) noexcept nogil
    cdef void _set_terminal(self) noexcept nogil
    cdef void _rehash(self) noexcept nogil
    cdef void _move_rook(self, int kfr, int kto, int us) noexcept nogil
