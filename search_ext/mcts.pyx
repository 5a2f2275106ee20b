"""MCTS / UCT without evaluation (UCB1, random playouts): the Minibal paper's weak opponent.

Each node stores the number of visits and the sum of results from the point of view of the player
who chose it (the mover of its parent), with a win 1, a draw 1/2, a loss 0, so nothing assumes that
players alternate. Children are created all at once when a node is first expanded, in a random order
(the tie-break between unvisited children), in one contiguous block after their parent. The final
move is the most visited child.

Memory. The table is capped by ``max_nodes`` nodes and ``max_mb`` megabytes (whichever is smaller;
a node is 40 bytes). The tree is kept across the moves of a game: the new root is found by following
the moves played since the last search, and the table is compacted to the new root's subtree (the
rest is freed). When the table is full, a leaf that cannot be expanded is valued by a playout and the
result backed up as usual: the search keeps running its whole budget within the tree it has
(``memory_full`` says so), it never stops early and never crashes.
"""
from libc.stdlib cimport malloc, realloc, free
from libc.math cimport sqrt, log
from search_ext.clock cimport now

from games._state cimport State
from games import validate
from games.validate import count, search_call, state_arg
from games._typedefs cimport action_t, hash_t, uint64_t, rng_below

from games.errors import GameError


cdef struct MNode:
    hash_t key
    double wins         # sum of results, view of the parent's mover (win 1, draw 0.5)
    action_t action     # the action leading here from the parent
    int first_child     # children are nodes first_child .. first_child + n_children - 1
    int n_children      # -1 while unexpanded
    int visits
    signed char player  # player to move here


cdef inline hash_t skey(State s) noexcept nogil:
    """The search key: the position hash with the repetition-relevant history folded in."""
    return s._hash ^ s._hist_key


NODE_BYTES = sizeof(MNode)
DEFAULT_MAX_MB = 1024.0
cdef long MAX_INDEX = 2_000_000_000


cdef class MCTS:
    """UCT search. ``c`` is the exploration constant (default sqrt 2); the table holds at most
    ``max_nodes`` nodes and ``max_mb`` megabytes (``None``: no cap of that kind)."""
    cdef readonly object game
    cdef readonly double c
    cdef readonly long max_nodes
    cdef readonly double max_mb
    cdef long limit                     # nodes allowed: min(max_nodes, max_mb)
    cdef MNode* nodes
    cdef long n_nodes, cap
    cdef int root
    cdef hash_t root_key
    cdef int root_nhist
    cdef uint64_t rng
    cdef action_t* buf
    cdef int* path
    cdef int path_cap
    cdef readonly long iterations_done
    cdef readonly long last_iterations
    cdef readonly bint memory_full
    cdef readonly long peak_nodes

    def __init__(self, game, c=1.4142135623730951, seed=0, max_nodes=None, max_mb=DEFAULT_MAX_MB):
        # checked here, before any conversion to a C type (GameError, never OverflowError)
        c = validate.real(c, "mcts: exploration constant c", 0.0, 1e6)
        seed = validate.integer(seed, "mcts: seed", 0, 2 ** 64 - 1)
        if max_nodes is not None:
            max_nodes = validate.count(max_nodes, "mcts: max_nodes", 1, 2 ** 62)
        if max_mb is not None:
            max_mb = validate.real(max_mb, "mcts: max_mb", 0.0, 1e9, lo_open=True, hi_open=True)
        self.game = game
        self.c = c
        self.max_nodes = max_nodes if max_nodes is not None else MAX_INDEX
        self.max_mb = max_mb if max_mb is not None else 0.0
        self.limit = min(self.max_nodes, MAX_INDEX)
        if max_mb is not None:
            self.limit = min(self.limit, max(1, <long>(max_mb * 1048576.0 / sizeof(MNode))))
        self.rng = <unsigned long long>seed * 0x9E3779B97F4A7C15ULL + 1
        self.buf = <action_t*>malloc(sizeof(action_t) * game.branching)
        self.path_cap = game.max_plies + 2
        self.path = <int*>malloc(sizeof(int) * self.path_cap)
        self.cap = min(1024, self.limit)
        self.nodes = <MNode*>malloc(sizeof(MNode) * self.cap)
        if not (self.buf and self.path and self.nodes):
            raise MemoryError()
        self.n_nodes = 0
        self.root = -1

    def __dealloc__(self):
        free(self.buf); free(self.path); free(self.nodes)

    def reset(self):
        """Forget the tree (between games) and free its memory."""
        self._clear()
        self.iterations_done = 0
        self.last_iterations = 0
        self.memory_full = False
        self.peak_nodes = 0

    cdef void _clear(self):
        cdef MNode* small
        self.n_nodes = 0
        self.root = -1
        if self.cap > 1024:
            small = <MNode*>realloc(self.nodes, sizeof(MNode) * 1024)
            if small != NULL:
                self.nodes = small
                self.cap = 1024

    def reseed(self, seed):
        return self._reseed(validate.integer(seed, 'mcts.reseed: seed', 0, 2 ** 64 - 1))

    def _reseed(self, unsigned long long seed):
        self.rng = seed * 0x9E3779B97F4A7C15ULL + 1

    @property
    def size(self) -> int:
        """Nodes in the table."""
        return self.n_nodes

    @property
    def node_limit(self) -> int:
        """The most nodes the table may hold (from ``max_nodes`` and ``max_mb``)."""
        return self.limit

    @property
    def memory_bytes(self) -> int:
        """Bytes allocated for the table."""
        return self.cap * sizeof(MNode)

    def subtree_size(self, state):
        """Nodes reachable from ``state``'s node (0 when it is not the root)."""
        return self._subtree_size(state_arg(state, self.game, 'mcts.subtree_size'))

    def _subtree_size(self, State state) -> int:
        """Nodes reachable from ``state``'s node (0 when it is not the root)."""
        if self.root < 0 or self.nodes[self.root].key != skey(state):
            return 0
        cdef long kept = 0, i
        cdef int k
        stack = [self.root]
        while stack:
            i = stack.pop()
            kept += 1
            if self.nodes[i].n_children > 0:
                for k in range(self.nodes[i].n_children):
                    stack.append(self.nodes[i].first_child + k)
        return kept

    # ---- table ---------------------------------------------------------------------------------
    cdef int reserve(self, long n) noexcept nogil:
        """Room for `n` more nodes; -1 when the cap (or the allocator) refuses."""
        cdef long need = self.n_nodes + n, new_cap
        cdef MNode* grown
        if need > self.limit:
            return -1
        if need <= self.cap:
            return 0
        new_cap = self.cap * 2
        while new_cap < need:
            new_cap *= 2
        if new_cap > self.limit:
            new_cap = self.limit
        grown = <MNode*>realloc(self.nodes, sizeof(MNode) * new_cap)
        if grown == NULL:
            return -1
        self.nodes = grown
        self.cap = new_cap
        return 0

    cdef int new_node(self, hash_t key, action_t a, int player) noexcept nogil:
        if self.reserve(1) < 0:
            return -1
        cdef int i = <int>self.n_nodes
        self.n_nodes += 1
        self.nodes[i].key = key
        self.nodes[i].action = a
        self.nodes[i].first_child = -1
        self.nodes[i].n_children = -1
        self.nodes[i].visits = 0
        self.nodes[i].wins = 0.0
        self.nodes[i].player = <signed char>player
        return i

    cdef int expand(self, State s, int idx) noexcept nogil:
        """Create the children of `idx` (in random order); -1 when the table has no room."""
        cdef int n = s.legal_actions(self.buf)
        cdef int i, j, first
        cdef action_t t
        if n <= 0 or self.reserve(n) < 0:
            return -1
        for i in range(n - 1, 0, -1):       # Fisher-Yates
            j = rng_below(&self.rng, i + 1)
            t = self.buf[i]
            self.buf[i] = self.buf[j]
            self.buf[j] = t
        first = <int>self.n_nodes
        for i in range(n):
            s.apply(self.buf[i])
            self.new_node(skey(s), self.buf[i], s._player)   # cannot fail: reserved
            s.undo()
        self.nodes[idx].first_child = first
        self.nodes[idx].n_children = n
        if self.n_nodes > self.peak_nodes:
            self.peak_nodes = self.n_nodes
        return 0

    cdef int compact(self, int new_root) except -1:
        """Keep only `new_root`'s subtree (children always sit after their parent, so one forward
        sweep marks it and a slide packs it in place); free the rest of the allocation."""
        cdef long n = self.n_nodes, i, k, kept = 0
        cdef int* newidx = <int*>malloc(sizeof(int) * (n if n > 0 else 1))
        if newidx == NULL:
            raise MemoryError()
        cdef MNode* nd
        with nogil:
            for i in range(n):
                newidx[i] = -1
            newidx[new_root] = 0
            for i in range(new_root, n):
                if newidx[i] < 0:
                    continue
                newidx[i] = <int>kept
                kept += 1
                nd = &self.nodes[i]
                if nd.n_children > 0:
                    for k in range(nd.first_child, nd.first_child + nd.n_children):
                        newidx[k] = 0           # reachable (numbered when the sweep gets there)
            for i in range(new_root, n):
                if newidx[i] < 0:
                    continue
                nd = &self.nodes[i]
                if nd.n_children > 0:
                    nd.first_child = newidx[nd.first_child]
                if newidx[i] != i:
                    self.nodes[newidx[i]] = nd[0]
        free(newidx)
        self.n_nodes = kept
        self.root = 0
        cdef long want = max(1024, kept + kept // 4)
        if want > self.limit:
            want = max(self.limit, kept)
        cdef MNode* shrunk
        if want < self.cap:
            shrunk = <MNode*>realloc(self.nodes, sizeof(MNode) * want)
            if shrunk != NULL:
                self.nodes = shrunk
                self.cap = want
        return 0

    cdef int find_root(self, State s) except -1:
        """The node of `s`: the old root's descendant along the moves played since it (its subtree
        is kept, the rest freed), else a fresh tree."""
        cdef int idx = self.root, i, k, found
        cdef action_t a
        cdef hash_t key = skey(s)
        if idx >= 0 and s._nhist >= self.root_nhist:
            for i in range(self.root_nhist, s._nhist):
                a = s._history[i]
                found = -1
                if self.nodes[idx].n_children > 0:
                    for k in range(self.nodes[idx].first_child,
                                   self.nodes[idx].first_child + self.nodes[idx].n_children):
                        if self.nodes[k].action == a:
                            found = k
                            break
                idx = found
                if idx < 0:
                    break
            if idx >= 0 and self.nodes[idx].key == key and self.nodes[idx].player == s._player:
                if idx != self.root:
                    self.compact(idx)
                self.root_nhist = s._nhist
                return self.root
        self._clear()
        self.root = self.new_node(key, -1, s._player)
        self.root_key = key
        self.root_nhist = s._nhist
        return self.root

    # ---- search --------------------------------------------------------------------------------
    cdef void iterate(self, State s) noexcept nogil:
        cdef int idx = self.root, depth = 0, k, best, child, n, m, i
        cdef double best_score, score, logn
        cdef MNode* nd
        cdef MNode* ch
        self.path[0] = idx
        # selection (a leaf that cannot be expanded for want of memory is played out as it is)
        while not s._terminal:
            nd = &self.nodes[idx]
            if nd.n_children < 0:
                if self.expand(s, idx) < 0:
                    self.memory_full = True
                    break
                nd = &self.nodes[idx]
            best = nd.first_child
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
        while m > 0:
            s.undo()
            m -= 1
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

    def search(self, state, iterations=0, seconds=0.0):
        """Run UCT iterations from ``state`` (iteration and/or time budget; at least one). The
        whole budget is always run (a full table stops the tree's growth, not the search)."""
        return self._search(state_arg(state, self.game, 'mcts.search'),
                            count(iterations, 'mcts.search: iterations', 0),
                            validate.seconds(seconds, 'mcts.search: seconds', allow_zero=True))

    def _search(self, State state, long iterations=0, double seconds=0.0):
        """Run UCT iterations from ``state`` (iteration and/or time budget; at least one). The
        whole budget is always run (a full table stops the tree's growth, not the search)."""
        search_call(state, self.game, seconds, "mcts.search")
        if iterations <= 0 and seconds <= 0.0:
            raise ValueError("give a budget: iterations > 0 or seconds > 0")
        if state.game.spec != self.game.spec:
            raise ValueError(f"state of {state.game.spec} given to a search for {self.game.spec}")
        if state._terminal:
            raise GameError("no search in a finished game")
        cdef State s = state.clone()
        self.find_root(s)
        self.memory_full = False
        cdef long it = 0
        cdef double deadline = now() + seconds
        cdef bint use_time = seconds > 0.0
        with nogil:
            while True:
                self.iterate(s)
                it += 1
                if iterations > 0 and it >= iterations:
                    break
                if use_time and now() >= deadline:
                    break
        self.iterations_done += it
        self.last_iterations = it
        return it

    cdef int root_for(self, State state) except -2:
        search_call(state, self.game, what="mcts.best_action")
        if state._terminal:
            raise GameError("no move in a finished game")
        if self.root < 0 or self.nodes[self.root].key != skey(state) \
                or self.root_nhist != state._nhist:
            self.search(state, iterations=1)
        return self.root

    def best_action(self, state):
        """The most visited root child (ties: higher mean result); a legal move even when the
        table had no room for the root's children."""
        return self._best_action(state_arg(state, self.game, 'mcts.best_action'))

    def _best_action(self, State state) -> int:
        """The most visited root child (ties: higher mean result); a legal move even when the
        table had no room for the root's children."""
        cdef int root = self.root_for(state)
        cdef MNode* nd = &self.nodes[root]
        cdef int best = -1, k, child, n
        if nd.n_children <= 0:
            n = state.legal_actions(self.buf)
            return self.buf[rng_below(&self.rng, n)]
        for k in range(nd.n_children):
            child = nd.first_child + k
            if best < 0 or self.nodes[child].visits > self.nodes[best].visits or (
                    self.nodes[child].visits == self.nodes[best].visits
                    and self.nodes[child].wins > self.nodes[best].wins):
                best = child
        return self.nodes[best].action

    def analyse(self, state):
        """Per root action: mean result mapped to [-1, 1] (mover's view) and visit count."""
        return self._analyse(state_arg(state, self.game, 'mcts.analyse'))

    def _analyse(self, State state) -> list:
        """Per root action: mean result mapped to [-1, 1] (mover's view) and visit count."""
        search_call(state, self.game, what="mcts.analyse")
        if state._terminal or self.root < 0 or self.nodes[self.root].key != skey(state):
            return []
        cdef MNode* nd = &self.nodes[self.root]
        out = []
        for k in range(max(nd.n_children, 0)):
            ch = self.nodes[nd.first_child + k]
            v = 2.0 * ch["wins"] / ch["visits"] - 1.0 if ch["visits"] else 0.0
            out.append({"action": ch["action"], "value": v, "count": ch["visits"],
                        "completion": 0, "resolved": False})
        out.sort(key=lambda d: (-d["count"], -d["value"]))
        return out
