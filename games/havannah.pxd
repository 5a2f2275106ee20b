from games._state cimport State
from games._typedefs cimport action_t, hash_t

cdef enum:
    HV_MAX_BASE = 10
    HV_MAX_D = 19             # 2 * base - 1
    HV_MAX_PAD = 441          # (HV_MAX_D + 2) ** 2: the axial square with a one-cell border
    HV_MAX_CELLS = 271        # 3 * base * (base - 1) + 1

cdef class HavannahState(State):
    cdef int base, D, W, ncells, swap_id
    cdef bint swap_on
    cdef int nb[6]                            # neighbour offsets on the padded square, in circular order
    cdef short cells[HV_MAX_CELLS]            # padded index of each cell, in ascending action order
    cdef short cellact[HV_MAX_CELLS]          # action id of each cell, ascending
    cdef short pad2act[HV_MAX_PAD]            # action id of a padded index (-1 off the board)
    cdef unsigned short cmask[HV_MAX_PAD]     # corner (bits 0-5) or edge (bits 6-11) of each cell
    # --- position ---
    cdef signed char cell[HV_MAX_PAD]         # -1 empty, 0 white, 1 black, 2 off the board
    cdef unsigned char nbc[2][HV_MAX_PAD]     # number of neighbours holding each player's stones
    cdef short parent[HV_MAX_PAD]             # union-find over stones (no path compression)
    cdef short gsize[HV_MAX_PAD]              # size of the group of a root
    cdef unsigned short gmask[HV_MAX_PAD]     # corners and edges touched by the group of a root
    cdef int filled                           # stones on the board
    cdef bint swapped                         # the swap was played
    cdef int first_pad                        # the first stone (the one a swap takes over)
    cdef int _wins                            # WIN_* bits of the finished game, 0 otherwise
    # --- undo stacks (capacity max_plies + 1 plies, 3 unions per ply) ---
    cdef short* _u_cell                       # padded index played at each ply
    cdef unsigned char* _u_nun                # unions made at each ply (255: the swap)
    cdef short* _ul_child                     # union log: the root that was attached,
    cdef short* _ul_root                      # the root it was attached to,
    cdef unsigned short* _ul_mask             # and that root's mask before the union
    cdef int _nundo, _nul

    cdef void _clear(self) noexcept
    cdef int _find(self, int c) noexcept nogil
    cdef int _place(self, int c, int p) noexcept nogil
