# Shared engine of the "place three, then move along the lines, three in a row wins" games
# (tapatan, tsoro yematatu): a small graph of points, static per game, and a state on it.
from games._state cimport State
from games._typedefs cimport action_t, hash_t

cdef enum:
    AL_MAX_POINTS = 9
    AL_MAX_MOVES = 40           # directed moves (steps and jumps)
    AL_MAX_LINES = 8
    AL_PIECES = 3               # pieces of each player
    AL_MAX_PLIES = 255          # largest ply cap any game on this base may use

# Why a game ended (State._result says who won).
cdef enum:
    AL_ONGOING = 0
    AL_LINE = 1                 # the mover made three in a row
    AL_NO_MOVE = 2              # the player to move has no legal move: it loses
    AL_REPETITION = 3           # threefold repetition: a draw
    AL_CAP = 4                  # ply cap: a draw


cdef struct AlignGraph:
    int npts                    # points 0 .. npts-1
    int nmoves                  # directed moves, sorted by (from, to); action = npts + index
    int mfrom[AL_MAX_MOVES]
    int mto[AL_MAX_MOVES]
    int mover[AL_MAX_MOVES]     # the point jumped over (any piece must stand there), -1 for a step
    int move_id[AL_MAX_POINTS][AL_MAX_POINTS]   # (from, to) -> index of the move, -1 if none
    int nlines
    int lines[AL_MAX_LINES][3]
    int nlines_at[AL_MAX_POINTS]                # the lines through each point
    int lines_at[AL_MAX_POINTS][4]
    int cell[AL_MAX_POINTS]     # index r * planes_w + c of the point in the encoding planes
    int planes_hw               # planes_h * planes_w
    int planes_c                # 2 (mover, opponent) or 3 (plus a plane marking the points)
    hash_t zob[AL_MAX_POINTS][2]
    hash_t zside
    hash_t zrep                 # xored into the hash of a state drawn by repetition
    hash_t zply[AL_MAX_PLIES + 1]


cdef class AlignState(State):
    cdef const AlignGraph* g
    cdef signed char cells[AL_MAX_POINTS]   # -1 empty, else the owner
    cdef int count[2]                       # pieces on the board (no captures: pieces placed)
    cdef int reason                         # AL_* why the game ended
    cdef hash_t key                         # board + side to move (the repetition key, no ply)
    cdef hash_t* keys                       # keys of the positions since the root, keys[0] = root
    cdef int nkeys
    cdef bint placement                     # the game starts with a drop phase (else: preset start)

    cdef int _set_graph(self, const AlignGraph* g) except -1
    cdef void _rebuild(self) noexcept
    cdef bint _has_move(self, int p) noexcept nogil
    cdef void _finish(self, int mover, int last) noexcept nogil


cdef int build_graph(AlignGraph* g, int npts, object moves, object lines, object cells, int planes_hw,
                     int planes_c, unsigned long long seed) except -1
