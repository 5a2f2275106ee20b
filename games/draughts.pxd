from games._state cimport State
from games._typedefs cimport action_t, hash_t, uint64_t

cdef enum:
    DR_MAXMOVES = 512     # capacity of the capture list, and the fact `max_legal`
    DR_MAXPATH = 32       # landing squares of a recorded capture path (from-square included)

# Squares live in a "ghost" bit layout: PDN square i (0-based) is bit i + i // n on an n x n board,
# so that the four diagonal steps are constant shifts and steps off the board land on bits that are
# never part of the board (see the module docstring).

# One capture move of the list being built: from, to and the captured pieces, in ghost bits.
ctypedef struct DrCap:
    uint64_t cap          # captured pieces
    signed char frm       # ghost square the piece leaves
    signed char to        # ghost square it ends on
    short pidx            # index of its recorded path (when paths are recorded)

# One saved ply: everything `_do_apply` changes besides the base class's bookkeeping.
ctypedef struct DrUndo:
    uint64_t men0, men1, kings0, kings1
    uint64_t rkey         # repetition key of the position before the move
    short hclock, s16, v5, reason


cdef class DraughtsState(State):
    cdef int n                    # board side: 10 or 8
    cdef int sz                   # table index: 1 for 10x10, 0 for 8x8
    cdef int nsq                  # playable squares: 50 or 32
    cdef int nn                   # nsq * nsq: the first id past the plain from * nsq + to ids
    cdef int max_material         # man value times men per side at the start (20 or 12)
    cdef uint64_t men[2]          # men of white (player 0) and black (player 1), ghost bits
    cdef uint64_t kings[2]
    cdef int hclock               # plies since the last man move or capture (25-move rule)
    cdef int s16                  # plies since the 16-move configuration arose, -1 if it has not
    cdef int v5                   # plies since the 5-move configuration arose, -1 if it has not
    cdef int reason               # why the game ended (REASON_* in the .pyx)
    cdef uint64_t rkey            # repetition key: Zobrist of the board and side to move only
    cdef DrUndo* _undo
    cdef hash_t* _quiet_tag       # [undo depth]: hash of the position at that depth last found
                                  # without a capture by legal_actions (lets _do_apply skip the test)
    cdef int _nundo
    cdef int _undo_cap
    # The capture list of the last position whose moves were generated in full (sorted by from,
    # to, captured set), with its action ids; valid while _cc_ok and (_cc_hash, _cc_ply) match the
    # state. _cc_n == 0: that position has no capture (its moves are the plain from * nsq + to).
    cdef DrCap* _cc
    cdef action_t* _cc_ids
    cdef signed char* _cc_paths   # DR_MAXMOVES * DR_MAXPATH landing squares (when recorded)
    cdef int _cc_n
    cdef bint _cc_ok
    cdef bint _cc_overflow
    cdef hash_t _cc_hash
    cdef int _cc_ply

    cdef void _rebuild(self) noexcept nogil
    cdef bint _has_capture(self, int p) noexcept nogil
    cdef bint _has_move(self, int p) noexcept nogil
    cdef int _gen_captures(self, int p, bint paths, int only_from) noexcept nogil
    cdef int _quiet_actions(self, action_t* out) noexcept nogil
    cdef int _count_quiet(self) noexcept nogil
    cdef void _start_clocks(self) noexcept nogil
    cdef void _settle(self) noexcept nogil
