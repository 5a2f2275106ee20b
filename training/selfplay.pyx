"""Descent self-play in Cython: many games per process, their expansions evaluated in one batch.

``SelfPlayPool`` keeps ``games_in_flight`` games going. Each game has its own search tree (a
transposition table kept across the game's moves) and runs Descent (docs/ALGORITHMS.md section 5):
every iteration goes down from the root, expanding each unexpanded state it meets, along the best
unresolved child by (completion, value, count) in the mover's view, until a terminal or resolved
state; then the values and resolutions are backed up along the path. The iteration is an explicit
state machine (a path stack, no recursion): when it needs the values of an expansion's children it
stops, the pool gathers the pending children of every game into one batch, calls the network once,
writes the values back, and every game resumes. Games finish and start independently.

Move choice: after ``iterations`` iterations (or ``seconds``, or a resolved root) the move is drawn
from the ordinal distribution over the root actions ranked best first by (c, v) in the mover's view,
P(rank i) = (e + (1 - e) / (n - i)) * (1 - sum_{j<i} P(rank j)), or epsilon-greedy.

Tree learning: every expanded state and every terminal state reached becomes an example (its
encoding, its value from the mover's point of view). When the root moves on, the states that are
no longer reachable from the new root are emitted as examples and dropped from the table
(compaction), so the table holds only the live subtree and memory stays bounded by it.

Memory: ``max_nodes`` caps each game's table. When it is full the move is decided from the tree
built so far (a random legal move when even the root could not be expanded) and counted in
``short_moves``; nothing is raised mid-game.

History: a terminal state is keyed apart from a non-terminal state of the same hash (a repetition
draw or a ply-cap draw never shares a node with the same position elsewhere in the tree), so a
terminal value is never written into a node created as non-terminal; and the iteration follows the
current state's key, not only the child index stored on the edge.

``play_game`` (one game through ``search_ext.bestfirst.BestFirstSearch``) is the previous path, kept
for comparisons.
"""
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset, memcpy
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

import numpy as np

from games._state cimport State
from games._typedefs cimport action_t, hash_t, uint64_t, rng_below, rng_uniform

cdef hash_t TERMINAL_SALT = <hash_t>0xD6E8FEB86659FD93ULL

cdef enum:
    ADV_EVAL = 1        # the game waits for the values of an expansion's children
    ADV_DONE = 2        # the game is over
    ADV_OOM = -1        # memory could not be allocated (malloc failed)

cdef enum:
    EXP_DONE = 0
    EXP_PENDING = 1
    EXP_FULL = -2


cdef struct Node:
    hash_t key
    float v             # value, first player's view
    signed char c       # completion in {-1, 0, 1}, first player's view
    signed char r       # resolved
    signed char player  # player to move
    signed char expanded
    signed char evaluated
    signed char terminal
    unsigned char mark  # scratch for reachability and harvesting
    int first_edge
    int n_edges


cdef struct Edge:
    action_t action
    int child
    int n               # selection count


cdef inline double now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef inline hash_t state_key(State s) noexcept nogil:
    """The table key of a state: its hash and history key, salted when the state is terminal."""
    if s._terminal:
        return s._hash ^ s._hist_key ^ TERMINAL_SALT
    return s._hash ^ s._hist_key      # history-correct: repetition-relevant history is part of the key


cdef class Tree:
    """One game's transposition table (open addressing on the key, linear probing)."""
    cdef Node* nodes
    cdef long n_nodes, cap_nodes, max_nodes
    cdef Edge* edges
    cdef long n_edges, cap_edges
    cdef int* slots
    cdef long cap_slots
    cdef long peak_nodes

    def __cinit__(self, long max_nodes):
        self.max_nodes = max_nodes
        self.cap_nodes = 1024
        self.cap_edges = 4096
        self.cap_slots = 2048
        self.nodes = <Node*>malloc(sizeof(Node) * self.cap_nodes)
        self.edges = <Edge*>malloc(sizeof(Edge) * self.cap_edges)
        self.slots = <int*>malloc(sizeof(int) * self.cap_slots)
        if not (self.nodes and self.edges and self.slots):
            raise MemoryError()
        self.clear()

    def __dealloc__(self):
        free(self.nodes); free(self.edges); free(self.slots)

    cdef void clear(self) noexcept nogil:
        cdef long i
        for i in range(self.cap_slots):
            self.slots[i] = -1
        self.n_nodes = 0
        self.n_edges = 0

    cdef long bytes_used(self) noexcept nogil:
        return (sizeof(Node) * self.cap_nodes + sizeof(Edge) * self.cap_edges
                + sizeof(int) * self.cap_slots)

    cdef int rebuild_slots(self, long cap) noexcept nogil:
        cdef int* ns = <int*>malloc(sizeof(int) * cap)
        if ns == NULL:
            return -1
        cdef long i, j, mask = cap - 1
        for i in range(cap):
            ns[i] = -1
        for i in range(self.n_nodes):
            j = <long>(self.nodes[i].key & <hash_t>mask)
            while ns[j] >= 0:
                j = (j + 1) & mask
            ns[j] = <int>i
        free(self.slots)
        self.slots = ns
        self.cap_slots = cap
        return 0

    cdef int find(self, hash_t key) noexcept nogil:
        cdef long mask = self.cap_slots - 1
        cdef long j = <long>(key & <hash_t>mask)
        cdef int idx
        while True:
            idx = self.slots[j]
            if idx < 0:
                return -1
            if self.nodes[idx].key == key:
                return idx
            j = (j + 1) & mask

    cdef int lookup(self, hash_t key, bint terminal, int player, bint* created) noexcept nogil:
        """Index of the node of `key`, created (unvalued, unevaluated) when absent; -1 when the
        table is full (max_nodes) or memory ran out."""
        cdef long mask = self.cap_slots - 1
        cdef long j = <long>(key & <hash_t>mask)
        cdef int idx
        while True:
            idx = self.slots[j]
            if idx < 0:
                break
            if self.nodes[idx].key == key:
                created[0] = False
                return idx
            j = (j + 1) & mask
        if self.n_nodes >= self.max_nodes:
            return -1
        cdef Node* grown
        cdef long new_cap
        if self.n_nodes == self.cap_nodes:
            new_cap = self.cap_nodes * 2
            if new_cap > self.max_nodes:
                new_cap = self.max_nodes
            grown = <Node*>realloc(self.nodes, sizeof(Node) * new_cap)
            if grown == NULL:
                return -1
            self.nodes = grown
            self.cap_nodes = new_cap
        idx = <int>self.n_nodes
        self.n_nodes += 1
        if self.n_nodes > self.peak_nodes:
            self.peak_nodes = self.n_nodes
        self.slots[j] = idx
        cdef Node* nd = &self.nodes[idx]
        memset(nd, 0, sizeof(Node))
        nd.key = key
        nd.player = <signed char>player
        nd.terminal = 1 if terminal else 0
        created[0] = True
        if self.n_nodes * 2 > self.cap_slots:
            if self.rebuild_slots(self.cap_slots * 2) < 0:
                return -1
        return idx

    cdef long alloc_edges(self, int n) noexcept nogil:
        cdef Edge* grown
        cdef long new_cap
        if self.n_edges + n > self.cap_edges:
            new_cap = self.cap_edges * 2
            while new_cap < self.n_edges + n:
                new_cap *= 2
            grown = <Edge*>realloc(self.edges, sizeof(Edge) * new_cap)
            if grown == NULL:
                return -1
            self.edges = grown
            self.cap_edges = new_cap
        cdef long first = self.n_edges
        self.n_edges += n
        return first

    cdef int mark_reachable(self, int root) noexcept nogil:
        """Set mark = 1 on every node reachable from `root` (0 on the others)."""
        cdef long i
        for i in range(self.n_nodes):
            self.nodes[i].mark = 0
        if root < 0:
            return 0
        cdef int* stack = <int*>malloc(sizeof(int) * (self.n_nodes + 1))
        if stack == NULL:
            return -1
        cdef long top = 0
        cdef int idx, e, ch
        stack[top] = root
        top += 1
        self.nodes[root].mark = 1
        while top > 0:
            top -= 1
            idx = stack[top]
            if not self.nodes[idx].expanded:
                continue
            for e in range(self.nodes[idx].first_edge,
                           self.nodes[idx].first_edge + self.nodes[idx].n_edges):
                ch = self.edges[e].child
                if self.nodes[ch].mark == 0:
                    self.nodes[ch].mark = 1
                    stack[top] = ch
                    top += 1
        free(stack)
        return 0

    cdef int compact(self) noexcept nogil:
        """Keep only the nodes with mark == 1 (a set closed under edges), renumbered in order;
        edges of kept expanded nodes copied contiguously."""
        cdef int* newidx = <int*>malloc(sizeof(int) * (self.n_nodes + 1))
        if newidx == NULL:
            return -1
        cdef long i, k = 0, ne = 0
        cdef int e
        for i in range(self.n_nodes):
            if self.nodes[i].mark == 1:
                newidx[i] = <int>k
                k += 1
                if self.nodes[i].expanded:
                    ne += self.nodes[i].n_edges
            else:
                newidx[i] = -1
        cdef long cap_e = 4096
        while cap_e < ne:
            cap_e *= 2
        cdef Edge* new_edges = <Edge*>malloc(sizeof(Edge) * cap_e)
        if new_edges == NULL:
            free(newidx)
            return -1
        cdef long pos = 0
        cdef Node* nd
        for i in range(self.n_nodes):
            if newidx[i] < 0:
                continue
            nd = &self.nodes[i]
            if not nd.expanded:
                nd.first_edge = 0
                nd.n_edges = 0
            else:
                for e in range(nd.n_edges):
                    new_edges[pos + e] = self.edges[nd.first_edge + e]
                    new_edges[pos + e].child = newidx[new_edges[pos + e].child]
                nd.first_edge = <int>pos
                pos += nd.n_edges
            self.nodes[newidx[i]] = nd[0]
            self.nodes[newidx[i]].mark = 0
        free(self.edges)
        self.edges = new_edges
        self.cap_edges = cap_e
        self.n_edges = pos
        self.n_nodes = k
        free(newidx)
        cdef long cap_s = 2048
        while cap_s < 2 * k + 2:
            cap_s *= 2
        return self.rebuild_slots(cap_s)


# ---- move choice -----------------------------------------------------------------------------------

cdef int rank_choice(int n, double e, double epsilon, uint64_t* rng) noexcept nogil:
    """Rank (0 = best) drawn from the ordinal distribution with parameter e (epsilon < 0), or
    epsilon-greedy (uniform with probability epsilon, else rank 0)."""
    cdef double u, rest = 1.0, p
    cdef int i
    if n <= 1:
        return 0
    u = rng_uniform(rng)
    if epsilon >= 0.0:
        if u < epsilon:
            return <int>rng_below(rng, n)
        return 0
    for i in range(n):
        p = (e + (1.0 - e) / (n - i)) * rest
        if u < p:
            return i
        u -= p
        rest -= p
    return n - 1


def sample_ranks(int n, double e, double epsilon, unsigned long long seed, long draws):
    """Counts of the ranks drawn by the self-play move choice (``draws`` draws) among ``n``
    ranked actions: the ordinal distribution (``epsilon`` < 0) or epsilon-greedy."""
    counts = np.zeros(n, dtype=np.int64)
    cdef long[::1] cv = counts
    cdef uint64_t rng = seed * <uint64_t>0x9E3779B97F4A7C15ULL + 1
    cdef long i
    for i in range(draws):
        cv[rank_choice(n, e, epsilon, &rng)] += 1
    return counts


def ordinal_probabilities(int n, double e):
    """P(rank i) of the ordinal distribution over n ranked actions."""
    out = []
    rest = 1.0
    for i in range(n):
        p = (e + (1.0 - e) / (n - i)) * rest
        out.append(p)
        rest -= p
    return out


# ---- one game in flight -----------------------------------------------------------------------------

cdef class Slot:
    cdef State s                 # the game position
    cdef State cur               # the iteration's walker (equals s between iterations)
    cdef State base              # the position of the last compaction: the tree's top
    cdef int base_node
    cdef int base_ply
    cdef int compactions
    cdef Tree tree
    cdef int root
    cdef int* path
    cdef int path_len, path_cap
    cdef bint in_iter
    cdef long iters_move
    cdef double move_t0
    cdef int pending_node, pending_n, pending_off
    cdef int* pending
    cdef int* kids
    cdef action_t* acts
    cdef uint64_t rng
    cdef double e, epsilon
    cdef bint full
    cdef bint active
    cdef object tag
    cdef int plies
    cdef action_t* moves
    cdef float* root_values
    cdef signed char* movers
    cdef int short_moves
    cdef long iterations_total
    cdef float* ex_x
    cdef float* ex_y
    cdef long n_ex, cap_ex
    cdef int enc_size
    cdef double t_start

    def __cinit__(self, object info, long max_nodes):
        self.tree = Tree(max_nodes)
        self.s = info.new_state()
        n = info.branching
        self.path_cap = self.s.max_plies + 4
        self.path = <int*>malloc(sizeof(int) * self.path_cap)
        self.pending = <int*>malloc(sizeof(int) * n)
        self.kids = <int*>malloc(sizeof(int) * n)
        self.acts = <action_t*>malloc(sizeof(action_t) * n)
        self.moves = <action_t*>malloc(sizeof(action_t) * self.path_cap)
        self.root_values = <float*>malloc(sizeof(float) * self.path_cap)
        self.movers = <signed char*>malloc(self.path_cap)
        if not (self.path and self.pending and self.kids and self.acts and self.moves
                and self.root_values and self.movers):
            raise MemoryError()
        h, w, c = info.planes_shape
        self.enc_size = h * w * c
        self.pending_node = -1

    def __dealloc__(self):
        free(self.path); free(self.pending); free(self.kids); free(self.acts)
        free(self.moves); free(self.root_values); free(self.movers)
        free(self.ex_x); free(self.ex_y)

    cdef int emit(self, State st, float value) noexcept nogil:
        """Append one example (the encoding of `st`, `value` in its mover's view)."""
        cdef long cap
        cdef float* nx
        cdef float* ny
        if self.n_ex == self.cap_ex:
            cap = self.cap_ex * 2 if self.cap_ex else 1024
            nx = <float*>realloc(self.ex_x, sizeof(float) * cap * self.enc_size)
            if nx == NULL:
                return -1
            self.ex_x = nx
            ny = <float*>realloc(self.ex_y, sizeof(float) * cap)
            if ny == NULL:
                return -1
            self.ex_y = ny
            self.cap_ex = cap
        st.encode(self.ex_x + self.n_ex * self.enc_size)
        self.ex_y[self.n_ex] = value
        self.n_ex += 1
        return 0


cdef inline float mover_value(Node* nd) noexcept nogil:
    return nd.v if nd.player == 0 else -nd.v


cdef class SelfPlayPool:
    """``games_in_flight`` Descent self-play games in one process, one network call per round.

    ``evaluate(batch) -> values``: batch float32 (n, H, W, C) of encoded states, values (n,) in
    [-1, 1] from the point of view of each state's player to move. Budget per move: ``iterations``
    (and/or ``seconds`` of wall-clock time per move and game). ``max_nodes``: table cap per game.
    """
    cdef readonly object info
    cdef object evaluate
    cdef readonly long iterations
    cdef readonly double seconds
    cdef readonly int games_in_flight
    cdef readonly long max_nodes
    cdef readonly long compact_at
    cdef list slots
    cdef object batch
    cdef float[:, :, :, ::1] batch_v
    cdef int branching, enc_size
    cdef readonly long eval_calls, eval_states, rounds, abandoned

    def __init__(self, info, evaluate, long iterations=50, double seconds=0.0,
                 int games_in_flight=1, long max_nodes=2_000_000, long compact_at=-1):
        if iterations <= 0 and seconds <= 0.0:
            raise ValueError("give a budget: iterations > 0 or seconds > 0")
        if games_in_flight < 1:
            raise ValueError(f"games_in_flight must be >= 1, got {games_in_flight}")
        if max_nodes < 2 * info.branching + 16:
            raise ValueError(f"max_nodes must be >= {2 * info.branching + 16} for {info.spec} "
                             f"(twice the branching factor and some), got {max_nodes}")
        self.info = info
        self.evaluate = evaluate
        self.iterations = iterations
        self.seconds = seconds
        self.games_in_flight = games_in_flight
        self.max_nodes = max_nodes
        self.compact_at = max_nodes // 2 if compact_at < 0 else compact_at
        self.branching = info.branching
        h, w, c = info.planes_shape
        self.enc_size = h * w * c
        self.batch = np.zeros((games_in_flight * self.branching, h, w, c), dtype=np.float32)
        self.batch_v = self.batch
        self.slots = [Slot(info, max_nodes) for _ in range(games_in_flight)]

    def memory_bytes(self) -> int:
        """Bytes held now by the tables, the pending examples and the batch buffer."""
        cdef Slot g
        total = self.batch.nbytes
        for g in self.slots:
            total += g.tree.bytes_used() + g.cap_ex * (g.enc_size + 1) * 4
        return total

    # ---- game life -----------------------------------------------------------------------------
    cdef void start(self, Slot g, tuple params):
        seed, e, epsilon, tag = params
        g.s = self.info.new_state()
        g.cur = g.s.clone()
        g.base = g.s.clone()
        g.tree.clear()
        g.tree.peak_nodes = 0
        cdef bint created
        g.root = g.tree.lookup(state_key(g.s), g.s._terminal, g.s._player, &created)
        g.base_node = g.root
        g.base_ply = 0
        g.compactions = 0
        g.rng = (<uint64_t>seed) * <uint64_t>0x9E3779B97F4A7C15ULL + 1
        g.e = e
        g.epsilon = epsilon
        g.tag = tag
        g.in_iter = False
        g.iters_move = 0
        g.move_t0 = now()
        g.t_start = g.move_t0
        g.pending_node = -1
        g.full = False
        g.active = True
        g.plies = 0
        g.short_moves = 0
        g.iterations_total = 0
        g.n_ex = 0

    cdef dict finish(self, Slot g):
        h, w, c = self.info.planes_shape
        x = np.empty((g.n_ex, h, w, c), dtype=np.float32)
        y = np.empty(g.n_ex, dtype=np.float32)
        cdef float[:, :, :, ::1] xv = x
        cdef float[::1] yv = y
        if g.n_ex:
            memcpy(&xv[0, 0, 0, 0], g.ex_x, sizeof(float) * g.n_ex * g.enc_size)
            memcpy(&yv[0], g.ex_y, sizeof(float) * g.n_ex)
        moves = [int(g.moves[i]) for i in range(g.plies)]
        rv = np.array([g.root_values[i] for i in range(g.plies)], dtype=np.float32)
        mv = np.array([g.movers[i] for i in range(g.plies)], dtype=np.int8)
        out = {"x": x, "y": y, "result": int(g.s._result), "plies": int(g.plies), "moves": moves,
               "root_values": rv, "movers": mv, "short_moves": int(g.short_moves),
               "iterations": int(g.iterations_total), "peak_nodes": int(g.tree.peak_nodes),
               "compactions": int(g.compactions),
               "seconds": now() - g.t_start, "tag": g.tag}
        # release the example buffers of a long game
        free(g.ex_x); free(g.ex_y)
        g.ex_x = NULL
        g.ex_y = NULL
        g.cap_ex = 0
        g.n_ex = 0
        return out

    # ---- search rules (minimax with completion, Descent) -------------------------------------------
    cdef inline bint better(self, Tree t, int player, int e, int f) noexcept nogil:
        cdef Node* a = &t.nodes[t.edges[e].child]
        cdef Node* b = &t.nodes[t.edges[f].child]
        cdef double sg = 1.0 if player == 0 else -1.0
        cdef int ca = <int>(sg * a.c), cb = <int>(sg * b.c)
        if ca != cb:
            return ca > cb
        cdef double va = sg * a.v, vb = sg * b.v
        if va != vb:
            return va > vb
        return t.edges[e].n > t.edges[f].n

    cdef int select(self, Tree t, int idx, bint unresolved_only) noexcept nogil:
        cdef Node* nd = &t.nodes[idx]
        cdef int best = -1, e
        for e in range(nd.first_edge, nd.first_edge + nd.n_edges):
            if unresolved_only and t.nodes[t.edges[e].child].r:
                continue
            if best < 0 or self.better(t, nd.player, e, best):
                best = e
        return best

    cdef void backup(self, Tree t, int idx) noexcept nogil:
        cdef int e = self.select(t, idx, False)
        if e < 0:
            return
        cdef Node* nd = &t.nodes[idx]
        cdef Node* ch = &t.nodes[t.edges[e].child]
        cdef int f
        nd.c = ch.c
        nd.v = ch.v
        cdef bint resolved = nd.c != 0
        if not resolved:
            resolved = True
            for f in range(nd.first_edge, nd.first_edge + nd.n_edges):
                if not t.nodes[t.edges[f].child].r:
                    resolved = False
                    break
        nd.r = 1 if resolved else 0

    cdef int expand_begin(self, Slot g, int idx, float* batch, int off) noexcept nogil:
        """Create the children of node `idx` (state g.cur); encode the unevaluated ones into the
        batch from slot `off`. EXP_DONE (no evaluation needed), EXP_PENDING, or EXP_FULL (nothing
        linked; children created so far stay unevaluated)."""
        cdef int n = g.cur.legal_actions(g.acts)
        cdef int i, child, n_eval = 0
        cdef bint created
        cdef Node* ch
        for i in range(n):
            g.cur.apply(g.acts[i])
            child = g.tree.lookup(state_key(g.cur), g.cur._terminal, g.cur._player, &created)
            if child < 0:
                g.cur.undo()
                return EXP_FULL
            ch = &g.tree.nodes[child]
            if g.cur._terminal:
                # a terminal-keyed node: (re)valued by the terminal evaluation at this ply
                ch.r = 1
                ch.c = <signed char>g.cur._result
                ch.v = <float>g.cur.terminal_value()
                ch.evaluated = 1
            elif not ch.evaluated:
                g.cur.encode(batch + <long>(off + n_eval) * self.enc_size)
                g.pending[n_eval] = child
                n_eval += 1
            g.cur.undo()
            g.kids[i] = child
        cdef long first = g.tree.alloc_edges(n)
        if first < 0:
            return EXP_FULL
        for i in range(n):
            g.tree.edges[first + i].action = g.acts[i]
            g.tree.edges[first + i].child = g.kids[i]
            g.tree.edges[first + i].n = 0
        g.tree.nodes[idx].first_edge = <int>first
        g.tree.nodes[idx].n_edges = n
        if n_eval > 0:
            g.pending_node = idx
            g.pending_n = n_eval
            g.pending_off = off
            return EXP_PENDING
        g.tree.nodes[idx].expanded = 1
        return EXP_DONE

    cdef void finish_eval(self, Slot g, const float* values) noexcept nogil:
        cdef int i
        cdef Node* ch
        cdef float v
        for i in range(g.pending_n):
            ch = &g.tree.nodes[g.pending[i]]
            v = values[g.pending_off + i]
            ch.v = v if ch.player == 0 else -v
            ch.evaluated = 1
        g.tree.nodes[g.pending_node].expanded = 1
        g.pending_node = -1
        g.pending_n = 0

    cdef void end_iteration(self, Slot g, bint counted) noexcept nogil:
        cdef int i
        for i in range(g.path_len - 1, -1, -1):
            if g.tree.nodes[g.path[i]].expanded:
                self.backup(g.tree, g.path[i])
        for i in range(g.path_len - 1):
            g.cur.undo()
        g.path_len = 0
        g.in_iter = False
        if counted:
            g.iters_move += 1
            g.iterations_total += 1

    cdef bint move_done(self, Slot g) noexcept nogil:
        if g.full or g.tree.nodes[g.root].r:
            return True
        if g.iters_move < 1:
            return False
        if self.iterations > 0 and g.iters_move >= self.iterations:
            return True
        if self.seconds > 0.0 and now() - g.move_t0 >= self.seconds:
            return True
        return False

    cdef int harvest(self, Slot g, int old_root) noexcept nogil:
        """Emit as examples the expanded and terminal states below `old_root` (state g.base) whose
        nodes are not marked reachable (mark 1); marks them 2. Walks with an explicit stack, in
        the depth-first order of BestFirstSearch.collect_examples."""
        cdef Node* nd = &g.tree.nodes[old_root]
        if nd.mark != 0:
            return 0
        nd.mark = 2
        if nd.expanded:
            if g.emit(g.base, mover_value(nd)) < 0:
                return -1
        else:
            return 0
        cdef int* stk = <int*>malloc(sizeof(int) * g.path_cap * 2)
        if stk == NULL:
            return -1
        cdef int depth = 1, idx, e, ch
        cdef double tv
        stk[0] = old_root
        stk[g.path_cap] = g.tree.nodes[old_root].first_edge
        while depth > 0:
            idx = stk[depth - 1]
            e = stk[g.path_cap + depth - 1]
            if e >= g.tree.nodes[idx].first_edge + g.tree.nodes[idx].n_edges or depth >= g.path_cap:
                depth -= 1
                if depth > 0:
                    g.base.undo()
                continue
            stk[g.path_cap + depth - 1] = e + 1
            ch = g.tree.edges[e].child
            if g.tree.nodes[ch].mark != 0:
                continue
            g.base.apply(g.tree.edges[e].action)
            if g.tree.nodes[ch].key != state_key(g.base):
                g.base.undo()            # the edge's node is not this state (history): skip it
                continue
            g.tree.nodes[ch].mark = 2
            if g.base._terminal:
                tv = g.base.terminal_value()
                if g.emit(g.base, <float>(tv if g.base._player == 0 else -tv)) < 0:
                    free(stk)
                    return -1
                g.base.undo()
                continue
            if not g.tree.nodes[ch].expanded:
                g.base.undo()
                continue
            if g.emit(g.base, mover_value(&g.tree.nodes[ch])) < 0:
                free(stk)
                return -1
            stk[depth] = ch
            stk[g.path_cap + depth] = g.tree.nodes[ch].first_edge
            depth += 1
        free(stk)
        return 0

    cdef int play_move(self, Slot g) noexcept nogil:
        """Choose and play the move at the searched root; harvest and compact the table.
        Returns 1 when the game is over, 0 otherwise, -1 when memory ran out."""
        cdef Node* nd = &g.tree.nodes[g.root]
        cdef int n, i, j, tmp, rank, e_choice
        cdef action_t a
        cdef double sg = 1.0 if nd.player == 0 else -1.0
        cdef int* order = g.kids
        if (self.iterations > 0 and g.iters_move < self.iterations and not nd.r):
            g.short_moves += 1
        g.root_values[g.plies] = <float>(sg * nd.v)
        g.movers[g.plies] = <signed char>g.s._player
        if nd.expanded and nd.n_edges > 0:
            n = nd.n_edges
            for i in range(n):
                order[i] = nd.first_edge + i
            for i in range(1, n):           # insertion sort, best first by (c, v), mover's view
                tmp = order[i]
                j = i - 1
                while j >= 0 and self.rank_before(g.tree, tmp, order[j], sg):
                    order[j + 1] = order[j]
                    j -= 1
                order[j + 1] = tmp
            rank = rank_choice(n, g.e, g.epsilon, &g.rng)
            a = g.tree.edges[order[rank]].action
        else:
            n = g.s.legal_actions(g.acts)
            a = g.acts[rng_below(&g.rng, n)]
        g.moves[g.plies] = a
        g.plies += 1
        # the new root's node, if the tree has it
        g.cur.apply(a)
        cdef hash_t key = state_key(g.cur)
        cdef bint over = g.cur._terminal
        g.cur.undo()
        cdef int new_root = -1 if over else g.tree.find(key)
        cdef bint compacting = over or g.tree.n_nodes > self.compact_at
        if compacting:
            # emit the states the new root cannot reach (all of them at the end), drop them
            if g.tree.mark_reachable(new_root) < 0:
                return -1
            if self.harvest(g, g.base_node) < 0:
                return -1
            if g.tree.compact() < 0:
                return -1
            g.compactions += 1
        g.s.apply(a)
        g.cur.apply(a)
        if over:
            return 1
        cdef bint created
        g.root = g.tree.lookup(key, False, g.s._player, &created)
        if g.root < 0:
            return -1
        if compacting:
            for i in range(g.base_ply, g.plies):
                g.base.apply(g.moves[i])
            g.base_ply = g.plies
            g.base_node = g.root
        g.iters_move = 0
        g.full = False
        g.move_t0 = now()
        return 0

    cdef inline bint rank_before(self, Tree t, int e, int f, double sg) noexcept nogil:
        cdef Node* a = &t.nodes[t.edges[e].child]
        cdef Node* b = &t.nodes[t.edges[f].child]
        if sg * a.c != sg * b.c:
            return sg * a.c > sg * b.c
        return sg * a.v > sg * b.v

    cdef int advance(self, Slot g, float* batch, int off) noexcept nogil:
        """Run game `g` until it needs an evaluation (ADV_EVAL: g.pending_n states written to the
        batch from `off`) or is over (ADV_DONE)."""
        cdef int idx, e, child, rc
        cdef bint created
        cdef hash_t key
        while True:
            if not g.in_iter:
                if self.move_done(g):
                    rc = self.play_move(g)
                    if rc < 0:
                        return ADV_OOM
                    if rc == 1:
                        return ADV_DONE
                    continue
                g.in_iter = True
                g.path[0] = g.root
                g.path_len = 1
            idx = g.path[g.path_len - 1]
            if g.cur._terminal or g.tree.nodes[idx].r:
                self.end_iteration(g, True)
                continue
            if not g.tree.nodes[idx].expanded:
                rc = self.expand_begin(g, idx, batch, off)
                if rc == EXP_PENDING:
                    return ADV_EVAL
                if rc == EXP_FULL:
                    g.full = True
                    self.end_iteration(g, False)
                    continue
            e = self.select(g.tree, idx, True)
            if e < 0 or g.path_len >= g.path_cap:
                self.end_iteration(g, True)
                continue
            g.tree.edges[e].n = g.tree.edges[e].n + 1
            g.cur.apply(g.tree.edges[e].action)
            key = state_key(g.cur)
            child = g.tree.edges[e].child
            if g.tree.nodes[child].key != key:
                # follow the current state, not the stored index
                child = g.tree.lookup(key, g.cur._terminal, g.cur._player, &created)
                if child < 0:
                    g.cur.undo()
                    g.full = True
                    self.end_iteration(g, False)
                    continue
                g.tree.edges[e].child = child
                if g.cur._terminal:
                    g.tree.nodes[child].r = 1
                    g.tree.nodes[child].c = <signed char>g.cur._result
                    g.tree.nodes[child].v = <float>g.cur.terminal_value()
                    g.tree.nodes[child].evaluated = 1
            g.path[g.path_len] = child
            g.path_len += 1

    # ---- driver --------------------------------------------------------------------------------
    def run(self, new_game, on_game, stop=None):
        """Play games until ``new_game()`` returns None and every game in flight is over, or until
        ``stop()`` returns true (checked once per round, before the round): the games still in
        flight are then abandoned (counted in ``abandoned``; their examples are dropped) and
        ``run`` returns at once. Returns the number of games abandoned by this call.

        ``new_game() -> (seed, e, epsilon, tag)`` or None (epsilon < 0: ordinal distribution with
        parameter e); ``on_game(result)`` is called as each game ends, with the dict of
        ``play_game`` plus ``short_moves`` (moves searched with fewer iterations than asked: a full
        table), ``iterations``, ``peak_nodes``, ``seconds`` and ``tag``.
        """
        cdef Slot g
        cdef int n, rc, k
        cdef float* bptr = &self.batch_v[0, 0, 0, 0]
        cdef float[::1] vv
        live = []
        for g in self.slots:
            params = new_game()
            if params is None:
                break
            self.start(g, tuple(params))
            live.append(g)
        while live:
            if stop is not None and stop():
                for g in live:
                    g.active = False
                self.abandoned += len(live)
                return len(live)
            n = 0
            waiting = []
            ended = []
            for g in live:
                with nogil:
                    rc = self.advance(g, bptr, n)
                if rc == ADV_EVAL:
                    n += g.pending_n
                    waiting.append(g)
                elif rc == ADV_DONE:
                    ended.append(g)
                else:
                    raise MemoryError("self-play: out of memory")
            if n > 0:
                values = np.ascontiguousarray(self.evaluate(self.batch[:n]), dtype=np.float32)
                if values.shape != (n,):
                    raise ValueError(f"the evaluator returned shape {values.shape}, expected ({n},)")
                vv = values
                self.eval_calls += 1
                self.eval_states += n
                for g in waiting:
                    with nogil:
                        self.finish_eval(g, &vv[0])
            self.rounds += 1
            for g in ended:
                live.remove(g)
                result = self.finish(g)
                on_game(result)
                params = new_game()
                if params is not None:
                    self.start(g, tuple(params))
                    live.append(g)
                else:
                    g.active = False
        return 0


# ---- the previous path: one game through BestFirstSearch ----------------------------------------------

def play_game(object info, object search, long iterations, double seconds, double e,
              double epsilon, unsigned long long seed):
    """Play one self-play game with a ``BestFirstSearch(descent=True)`` (the path before
    ``SelfPlayPool``). Returns a dict with ``x``, ``y`` (tree-learning examples), ``result`` (b_t,
    first player), ``plies``, ``moves``, ``root_values`` and ``movers``."""
    cdef State start = info.new_state()
    cdef State s = start.clone()
    cdef long plies = 0
    rng = np.array([seed * 0x9E3779B97F4A7C15 % (1 << 64) + 1], dtype=np.uint64)
    search.reset()
    moves = []
    root_values = []
    movers = []
    while not s._terminal:
        search.search(s, iterations=iterations, seconds=seconds)
        root_values.append(search.root_info(s)["value"])
        movers.append(s._player)
        a = search.choose_selfplay_move(s, e, epsilon, rng)
        moves.append(a)
        s.apply(a)
        plies += 1
    x, y = search.collect_examples(start)
    return {"x": x, "y": y, "result": int(s._result), "plies": int(plies), "moves": moves,
            "root_values": np.asarray(root_values, dtype=np.float32),
            "movers": np.asarray(movers, dtype=np.int8)}
