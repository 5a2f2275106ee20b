"""Shared engine of tapatan and tsoro yematatu: place three pieces, then move them along the lines.

A game on this base is a small static graph (``AlignGraph``): points, the directed moves along the
lines (a step to an adjacent point, or, in tsoro, a jump over the middle point of a line), the lines of
three that win, and where each point sits in the encoding planes. The rules common to both games:

* Player 0 (``x``) moves first; the players strictly alternate, so ``x`` moves at even plies.
* Drop phase (when the game starts with one): a player with fewer than 3 pieces on the board places one
  on any empty point. Pieces are never captured, so the pieces on the board are the pieces placed.
* Movement phase: a player with all 3 pieces on the board moves one of them along a move of the graph
  to an empty point (a jump needs a piece, of either colour, on the point jumped over).
* The mover wins at once when its move (a drop or a step) makes three of its pieces on a line.
* Otherwise, the mover also wins when the opponent, now to move, has no legal move (a player who cannot
  move loses). Otherwise the game is drawn on the third occurrence of the same position (same board,
  same side to move) since the root (the start, or the position last set from text), or when the ply
  cap is reached.

Hash. The Zobrist hash covers the board, the side to move and the **ply**: positions repeat in these
games and the position text carries the ply, so including it keeps every hash equal to the hash of
its text, and keeps the search graph acyclic (a position reached again later is a new node). A state
drawn by repetition also xors ``zrep``, so it never shares a hash with the same position not drawn.
The repetition key (board + side, no ply) is kept per ply on a stack for the threefold rule. The
history key (``history_key``; the searches use ``search_key = zobrist_hash ^ history_key``) is the
multiset of the positions since the last drop (the positions that can still recur): two histories
reaching the same position at the same ply share a search node only when they have the same future.
"""
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from games._state cimport State, RESULT_FIRST_WINS, RESULT_SECOND_WINS, RESULT_DRAW
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t, mix64

from games.errors import InvalidPositionError

SYMBOLS = "xo"
REASONS = {AL_LINE: "three in a row", AL_NO_MOVE: "no legal move", AL_REPETITION: "threefold repetition",
           AL_CAP: "ply cap"}


cdef int build_graph(AlignGraph* g, int npts, object moves, object lines, object cells, int planes_hw,
                     int planes_c, unsigned long long seed) except -1:
    """Fill ``g``: ``moves`` is a list of (from, to, over) sorted by (from, to), ``over`` = -1 for a
    step; ``lines`` the winning lines of three points; ``cells`` the plane index of each point."""
    cdef int i, j, k
    cdef uint64_t s = seed
    if npts > AL_MAX_POINTS or len(moves) > AL_MAX_MOVES or len(lines) > AL_MAX_LINES:
        raise ValueError("graph too large for AlignGraph")
    if list(moves) != sorted(moves, key=lambda m: (m[0], m[1])):
        raise ValueError("moves must be sorted by (from, to)")
    g.npts = npts
    g.nmoves = len(moves)
    for i in range(AL_MAX_POINTS):
        for j in range(AL_MAX_POINTS):
            g.move_id[i][j] = -1
    for k, (f, t, over) in enumerate(moves):
        g.mfrom[k], g.mto[k], g.mover[k] = f, t, over
        g.move_id[f][t] = k
    g.nlines = len(lines)
    for i in range(npts):
        g.nlines_at[i] = 0
    for k, line in enumerate(lines):
        for j in range(3):
            g.lines[k][j] = line[j]
            i = line[j]
            g.lines_at[i][g.nlines_at[i]] = k
            g.nlines_at[i] += 1
    for i in range(npts):
        g.cell[i] = cells[i]
    g.planes_hw = planes_hw
    g.planes_c = planes_c
    for i in range(npts):
        g.zob[i][0] = splitmix64(&s)
        g.zob[i][1] = splitmix64(&s)
    g.zside = splitmix64(&s)
    g.zrep = splitmix64(&s)
    for i in range(AL_MAX_PLIES + 1):
        g.zply[i] = splitmix64(&s)
    return 0


cdef class AlignState(State):
    def __cinit__(self):
        self.keys = NULL

    def __dealloc__(self):
        if self.keys != NULL:
            free(self.keys)
            self.keys = NULL

    cdef int _set_graph(self, const AlignGraph* g) except -1:
        """Called by the subclass's ``__init__`` after ``_init_base``: an empty board, ``x`` to move."""
        if self.max_plies > AL_MAX_PLIES:
            raise ValueError(f"ply cap {self.max_plies} exceeds {AL_MAX_PLIES}")
        self.g = g
        self.keys = <hash_t*>malloc(sizeof(hash_t) * (self.max_plies + 1))
        if self.keys == NULL:
            raise MemoryError()
        cdef int i
        for i in range(AL_MAX_POINTS):
            self.cells[i] = -1
        self.count[0] = self.count[1] = 0
        self.reason = AL_ONGOING
        self._rebuild()
        return 0

    cdef void _rebuild(self) noexcept:
        """Derive the repetition key, the hash and the key stack (a new root) from the board."""
        cdef int i
        cdef hash_t k = 0
        for i in range(self.g.npts):
            if self.cells[i] >= 0:
                k ^= self.g.zob[i][self.cells[i]]
        if self._player:
            k ^= self.g.zside
        self.key = k
        self.keys[0] = k
        self.nkeys = 1
        self._hash = k ^ self.g.zply[self._ply]
        self._hist_key = mix64(k)
        if self.reason == AL_REPETITION:
            self._hash ^= self.g.zrep

    # ---- hooks ----------------------------------------------------------------------------------
    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        cdef const AlignGraph* g = self.g
        cdef signed char p = <signed char>self._player
        cdef int i, k, n = 0
        if self.count[p] < AL_PIECES:
            for i in range(g.npts):
                if self.cells[i] < 0:
                    out[n] = i
                    n += 1
            return n
        for k in range(g.nmoves):
            if (self.cells[g.mfrom[k]] == p and self.cells[g.mto[k]] < 0
                    and (g.mover[k] < 0 or self.cells[g.mover[k]] >= 0)):
                out[n] = g.npts + k
                n += 1
        return n

    cdef bint _has_move(self, int p) noexcept nogil:
        cdef const AlignGraph* g = self.g
        cdef int k
        if self.count[p] < AL_PIECES:
            return self.count[0] + self.count[1] < g.npts
        for k in range(g.nmoves):
            if (self.cells[g.mfrom[k]] == p and self.cells[g.mto[k]] < 0
                    and (g.mover[k] < 0 or self.cells[g.mover[k]] >= 0)):
                return True
        return False

    cdef void _finish(self, int mover, int last) noexcept nogil:
        """Terminal status after ``mover`` put a piece on point ``last``: a line through it, or the
        opponent without a move. The repetition rule and the cap are applied by the caller."""
        cdef const AlignGraph* g = self.g
        cdef int j
        cdef const int* line
        for j in range(g.nlines_at[last]):
            line = g.lines[g.lines_at[last][j]]
            if self.cells[line[0]] == mover and self.cells[line[1]] == mover and self.cells[line[2]] == mover:
                self._terminal = True
                self._result = RESULT_FIRST_WINS if mover == 0 else RESULT_SECOND_WINS
                self.reason = AL_LINE
                return
        if not self._has_move(1 - mover):
            self._terminal = True
            self._result = RESULT_FIRST_WINS if mover == 0 else RESULT_SECOND_WINS
            self.reason = AL_NO_MOVE

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef const AlignGraph* g = self.g
        cdef int p = self._player
        cdef int k, f, t, j, reps
        cdef hash_t key = self.key ^ g.zside
        if a < g.npts:
            t = a
            self.count[p] += 1
        else:
            k = a - g.npts
            f = g.mfrom[k]
            t = g.mto[k]
            self.cells[f] = -1
            key ^= g.zob[f][p]
        self.cells[t] = <signed char>p
        key ^= g.zob[t][p]
        self.key = key
        self.keys[self.nkeys] = key
        self.nkeys += 1
        self._player = 1 - p
        self._hash = key ^ g.zply[self._ply]
        # history key: the multiset of the positions since the last drop (those that can recur)
        if a < g.npts:
            self._hist_key = mix64(key)
        else:
            self._hist_key = self._hist_key + mix64(key)
        self._finish(p, t)
        if self._terminal:
            return
        # Threefold repetition: the same side is to move every second entry of the key stack.
        reps = 1
        j = self.nkeys - 3
        while j >= 0:
            if self.keys[j] == key:
                reps += 1
            j -= 2
        if reps >= 3:
            self._terminal = True
            self._result = RESULT_DRAW
            self.reason = AL_REPETITION
            self._hash ^= g.zrep
        elif self._ply >= self.max_plies:
            self._terminal = True
            self._result = RESULT_DRAW
            self.reason = AL_CAP

    cdef void _do_undo(self, action_t a) noexcept nogil:
        cdef const AlignGraph* g = self.g
        cdef int p = self._player            # the mover of `a`
        cdef int k
        if a < g.npts:
            self.cells[a] = -1
            self.count[p] -= 1
        else:
            k = a - g.npts
            self.cells[g.mto[k]] = -1
            self.cells[g.mfrom[k]] = <signed char>p
        self.nkeys -= 1
        self.key = self.keys[self.nkeys - 1]
        self.reason = AL_ONGOING

    cdef void encode(self, float* out) noexcept nogil:
        cdef const AlignGraph* g = self.g
        cdef int C = g.planes_c
        cdef int i, v, base
        cdef int p = self._player
        for i in range(g.planes_hw * C):
            out[i] = 0.0
        for i in range(g.npts):
            base = g.cell[i] * C
            v = self.cells[i]
            if v >= 0:
                out[base + (0 if v == p else 1)] = 1.0
            if C > 2:
                out[base + 2] = 1.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef AlignState d = <AlignState>dst
        d.g = self.g
        d.cells = self.cells
        d.count[0] = self.count[0]
        d.count[1] = self.count[1]
        d.reason = self.reason
        d.key = self.key
        memcpy(d.keys, self.keys, sizeof(hash_t) * self.nkeys)
        d.nkeys = self.nkeys
        d.placement = self.placement

    # ---- Python helpers for the subclasses --------------------------------------------------------
    def _cells_list(self):
        return [self.cells[i] for i in range(self.g.npts)]

    def _load(self, list cells, int side, ply, str text):
        """Validate a position (cells: owner or -1 per point) and set it; raise InvalidPositionError
        (naming the game and the text) and leave the state untouched when it is not acceptable."""
        name = self.game.spec
        npts = self.g.npts
        if len(cells) != npts:
            raise InvalidPositionError(f"{name}: position {text!r} has {len(cells)} points, expected {npts}")
        nx, no = cells.count(0), cells.count(1)
        if nx > AL_PIECES or no > AL_PIECES:
            raise InvalidPositionError(
                f"{name}: position {text!r} has {nx} x and {no} o (at most {AL_PIECES} each)")
        dropping = nx < AL_PIECES or no < AL_PIECES
        if dropping and not self.placement:
            raise InvalidPositionError(
                f"{name}: position {text!r} has {nx} x and {no} o; the preset start has all "
                f"{2 * AL_PIECES} pieces on the board")
        if dropping and not ((nx == no and side == 0) or (nx == no + 1 and side == 1)):
            raise InvalidPositionError(
                f"{name}: position {text!r} is unreachable in the drop phase ({nx} x, {no} o, "
                f"{SYMBOLS[side]} to move; x drops first)")
        placed = nx + no if self.placement else 0
        if ply is None:
            ply = placed if dropping else placed + ((side - placed) % 2)
        if dropping and ply != placed:
            raise InvalidPositionError(
                f"{name}: ply {ply} in {text!r} does not match the {placed} pieces dropped")
        if ply < placed or ply % 2 != side:
            raise InvalidPositionError(
                f"{name}: ply {ply} in {text!r} is impossible with {SYMBOLS[side]} to move "
                f"(x moves at even plies{', after the ' + str(placed) + ' drops' if placed else ''})")
        if ply > self.max_plies:
            raise InvalidPositionError(f"{name}: ply {ply} in {text!r} exceeds the ply cap {self.max_plies}")
        lines = [[self.g.lines[k][j] for j in range(3)] for k in range(self.g.nlines)]
        owners = {cells[l[0]] for l in lines if cells[l[0]] >= 0 and cells[l[0]] == cells[l[1]] == cells[l[2]]}
        if len(owners) > 1:
            raise InvalidPositionError(f"{name}: both players have three in a row in {text!r}")
        # Validation done: set the state.
        cdef int i
        for i in range(npts):
            self.cells[i] = cells[i]
        self.count[0], self.count[1] = nx, no
        self._player = side
        self._ply = ply
        self._terminal, self._result, self.reason = False, RESULT_DRAW, AL_ONGOING
        if owners:
            w = owners.pop()
            self._terminal, self.reason = True, AL_LINE
            self._result = RESULT_FIRST_WINS if w == 0 else RESULT_SECOND_WINS
        elif not self._has_move(side):
            self._terminal, self.reason = True, AL_NO_MOVE
            self._result = RESULT_SECOND_WINS if side == 0 else RESULT_FIRST_WINS
        elif ply >= self.max_plies:
            self._terminal, self.reason = True, AL_CAP
        self._rebuild()

    def _termination_reason(self):
        return REASONS.get(self.reason) if self._terminal else None

    def _status(self) -> str:
        """A one-line footer for drawings: who is to move, the phase, the ply (or the result)."""
        if self._terminal:
            return f"game over: {self.result()} ({REASONS[self.reason]}, ply {self._ply})"
        p = self._player
        if self.count[p] < AL_PIECES:
            phase = f"drop phase, {AL_PIECES - self.count[p]} to drop"
        else:
            phase = "movement phase"
        return f"{SYMBOLS[p]} to move ({phase}, ply {self._ply})"
