"""MCTS / UCT without evaluation (UCB1, random playouts): the Minibal paper's weak opponent.

Each node stores the number of visits and the sum of results from the point of view of the player
who chose it (the mover of its parent), with a win 1, a draw 1/2, a loss 0, so nothing assumes that
players alternate. Children are created all at once when a node is first expanded, in a random order
(the tie-break between unvisited children). The final move is the most visited child. The tree is
kept across the moves of a game: the new root is looked up among the old root's descendants.
"""
from libc.stdlib cimport malloc, realloc, free
from libc.math cimport sqrt, log
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

from games._state cimport State
from games.validate import search_call
from games._typedefs cimport action_t, hash_t, uint64_t, rng_below


cdef struct MNode:
    hash_t key
    action_t action     # the action leading here from the parent
    int parent
    int first_child
    int n_children      # -1 while unexpanded
    int visits
    double wins         # sum of results, view of the parent's mover (win 1, draw 0.5)
    signed char player  # player to move here


cdef inline double now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef class MCTS:
    """UCT search. ``c`` is the exploration constant (default sqrt 2)."""
    cdef readonly object game
    cdef readonly double c
    cdef readonly long max_nodes
    cdef MNode* nodes
    cdef long n_nodes, cap
    cdef int root
    cdef uint64_t rng
    cdef action_t* buf
    cdef int* path
    cdef int path_cap
    cdef readonly long iterations_done

    def __init__(self, game, double c=1.4142135623730951, unsigned long long seed=0,
                 long max_nodes=4_000_000):
        if not 0.0 <= c <= 1e6:          # NaN fails this test too (c=nan never selects a child)
            raise ValueError(f"exploration constant must be in [0, 1e6], got {c}")
        self.game = game
        self.c = c
        self.max_nodes = max_nodes
        self.rng = seed * 0x9E3779B97F4A7C15ULL + 1
        self.buf = <action_t*>malloc(sizeof(action_t) * game.branching)
        self.path_cap = game.max_plies + 2
        self.path = <int*>malloc(sizeof(int) * self.path_cap)
        self.cap = 1024
        self.nodes = <MNode*>malloc(sizeof(MNode) * self.cap)
        if not (self.buf and self.path and self.nodes):
            raise MemoryError()
        self.n_nodes = 0
        self.root = -1

    def __dealloc__(self):
        free(self.buf); free(self.path); free(self.nodes)

    def reset(self):
        """Forget the tree (between games)."""
        self.n_nodes = 0
        self.root = -1
        self.iterations_done = 0

    def reseed(self, unsigned long long seed):
        self.rng = seed * 0x9E3779B97F4A7C15ULL + 1

    @property
    def size(self) -> int:
        return self.n_nodes

    cdef int new_node(self, hash_t key, action_t a, int parent, int player) noexcept nogil:
        cdef MNode* grown
        if self.n_nodes >= self.max_nodes:
            return -1
        if self.n_nodes == self.cap:
            grown = <MNode*>realloc(self.nodes, sizeof(MNode) * self.cap * 2)
            if grown == NULL:
                return -1
            self.nodes = grown
            self.cap *= 2
        cdef int i = <int>self.n_nodes
        self.n_nodes += 1
        self.nodes[i].key = key
        self.nodes[i].action = a
        self.nodes[i].parent = parent
        self.nodes[i].first_child = -1
        self.nodes[i].n_children = -1
        self.nodes[i].visits = 0
        self.nodes[i].wins = 0.0
        self.nodes[i].player = <signed char>player
        return i

    cdef int expand(self, State s, int idx) noexcept nogil:
        """Create the children of `idx` (in random order); -1 when out of memory."""
        cdef int n = s.legal_actions(self.buf)
        cdef int i, j, child, first = -1
        cdef action_t t
        if self.n_nodes + n > self.max_nodes:
            return -1
        for i in range(n - 1, 0, -1):       # Fisher-Yates
            j = rng_below(&self.rng, i + 1)
            t = self.buf[i]
            self.buf[i] = self.buf[j]
            self.buf[j] = t
        for i in range(n):
            s.apply(self.buf[i])
            child = self.new_node(s._hash, self.buf[i], idx, s._player)
            s.undo()
            if child < 0:
                return -1
            if i == 0:
                first = child
        self.nodes[idx].first_child = first
        self.nodes[idx].n_children = n
        return 0

    cdef int iterate(self, State s) noexcept nogil:
        cdef int idx = self.root, depth = 0, k, best, child, n, m, i
        cdef double best_score, score, logn
        cdef MNode* nd
        cdef MNode* ch
        self.path[0] = idx
        # selection
        while not s._terminal:
            nd = &self.nodes[idx]
            if nd.n_children < 0:
                if self.expand(s, idx) < 0:
                    return -1
                nd = &self.nodes[idx]
            best = -1
            best_score = -1.0
            logn = log(nd.visits + 1.0)
            for k in range(nd.n_children):
                child = nd.first_child + k
                ch = &self.nodes[child]
                if ch.visits == 0:
                    best = child
                    break
                score = ch.wins / ch.visits + self.c * sqrt(logn / ch.visits)
                if score > best_score:
                    best_score = score
                    best = child
            s.apply(self.nodes[best].action)
            depth += 1
            self.path[depth] = best
            idx = best
            if self.nodes[best].visits == 0:
                break
        # simulation
        m = 0
        while not s._terminal:
            n = s.legal_actions(self.buf)
            s.apply(self.buf[rng_below(&self.rng, n)])
            m += 1
        cdef int result = s._result          # first player's view
        for i in range(m):
            s.undo()
        # backpropagation
        cdef int mover
        for i in range(depth, -1, -1):
            nd = &self.nodes[self.path[i]]
            nd.visits += 1
            if i > 0:
                mover = self.nodes[self.path[i - 1]].player
                if result == 0:
                    nd.wins += 0.5
                elif (result > 0) == (mover == 0):
                    nd.wins += 1.0
                s.undo()
        return 0

    cdef int find_root(self, State s):
        """Reuse the subtree of `s` if it is within 4 plies below the old root."""
        cdef int frontier_start, frontier_end, i, k, d
        if self.root >= 0:
            if self.nodes[self.root].key == s._hash:
                return self.root
            level = [self.root]
            for d in range(4):
                nxt = []
                for i in level:
                    if self.nodes[i].n_children > 0:
                        for k in range(self.nodes[i].n_children):
                            j = self.nodes[i].first_child + k
                            if self.nodes[j].key == s._hash and self.nodes[j].player == s._player:
                                self.nodes[j].parent = -1
                                return j
                            nxt.append(j)
                level = nxt
        self.n_nodes = 0
        return self.new_node(s._hash, -1, -1, s._player)

    def search(self, State state, long iterations=0, double seconds=0.0):
        """Run UCT iterations from ``state`` (iteration and/or time budget; at least one)."""
        search_call(state, self.game, seconds, "mcts.search")
        if iterations <= 0 and seconds <= 0.0:
            raise ValueError("give a budget: iterations > 0 or seconds > 0")
        if state._terminal:
            return 0
        cdef State s = state.clone()
        self.root = self.find_root(s)
        cdef long it = 0
        cdef double deadline = now() + seconds
        cdef bint use_time = seconds > 0.0
        cdef int rc = 0
        with nogil:
            while True:
                rc = self.iterate(s)
                if rc < 0:
                    break
                it += 1
                if iterations > 0 and it >= iterations:
                    break
                if use_time and now() >= deadline:
                    break
        self.iterations_done += it
        return it

    def best_action(self, State state) -> int:
        """The most visited root child (ties: higher mean result)."""
        search_call(state, self.game, what="mcts.best_action")
        if self.root < 0 or self.nodes[self.root].key != state._hash:
            self.search(state, iterations=1)
        cdef MNode* nd = &self.nodes[self.root]
        cdef int best = -1, k, child
        for k in range(nd.n_children):
            child = nd.first_child + k
            if best < 0 or self.nodes[child].visits > self.nodes[best].visits or (
                    self.nodes[child].visits == self.nodes[best].visits
                    and self.nodes[child].wins > self.nodes[best].wins):
                best = child
        return self.nodes[best].action

    def analyse(self, State state) -> list:
        """Per root action: mean result mapped to [-1, 1] (mover's view) and visit count."""
        search_call(state, self.game, what="mcts.analyse")
        if self.root < 0 or self.nodes[self.root].key != state._hash:
            return []
        cdef MNode* nd = &self.nodes[self.root]
        out = []
        for k in range(nd.n_children):
            ch = self.nodes[nd.first_child + k]
            v = 2.0 * ch["wins"] / ch["visits"] - 1.0 if ch["visits"] else 0.0
            out.append({"action": ch["action"], "value": v, "count": ch["visits"],
                        "completion": 0, "resolved": False})
        out.sort(key=lambda d: (-d["count"], -d["value"]))
        return out
