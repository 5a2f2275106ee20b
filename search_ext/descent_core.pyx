"""The Descent core: the search tree and the rules shared by every Descent-family search.

One implementation of what ``search_ext.bestfirst.BestFirstSearch`` (the agents' search: one
state at a time, a synchronous evaluator, recursive iterations) and
``search_ext.selfplay.SelfPlayPool`` (self-play: many games, each its own tree, resumable
iterations that pause for one batched network call per round) both need (docs/ALGORITHMS.md
sections 3-5):

- ``Table``: the transposition table. Nodes are keyed by the search key (position hash xor the
  repetition-relevant history key) AND the terminal flag, so a terminal state (a repetition or
  ply-cap draw) never shares a node with a non-terminal state of the same key. Open addressing with
  linear probing; children of a node contiguous in one edge array; caps on states and edges
  (``lookup``/``alloc_edges`` return -1 when full, never raise); reachability marks; compaction
  (keep the marked states, renumbered in order); and, when full, ``collect`` (cut back the least
  visited subtrees).
- the rules, inline in ``descent_core.pxd``: ``better`` (Unbounded Minimax with completion:
  argmax (c, v, n) in the mover's view; Minibal_n and Minibal_+ in the balanced player's view),
  ``select`` (best_action), ``backup`` (value, completion, resolution, and the minimax proof when
  ``Rules.proofs``), ``set_terminal`` (terminal valuation);
- the self-play move decision: the root actions ranked best first by (c, v) in the mover's view
  (``rank_order``), a rank drawn from the ordinal distribution or epsilon-greedy (``rank_choice``);
- tree learning's examples: ``harvest`` walks a tree and emits its expanded and terminal states
  with their values (``Examples``, a growing buffer).

Values are stored from the FIRST player's point of view; nothing assumes that players alternate.
"""
from libc.stdlib cimport malloc, realloc, free, qsort

import numpy as np

RULES = {"minimax": RULE_MINIMAX, "minibal_n": RULE_MINIBAL_N, "minibal_plus": RULE_MINIBAL_PLUS,
         "minibal_swing": RULE_MINIBAL_SWING}

# A state costs at most about BYTES_PER_STATE bytes (its node, two edges on average at most, its
# share of the hash slots).
BYTES_PER_STATE = sizeof(Node) + 2 * sizeof(Edge) + 4 * sizeof(int)


cdef void* _grow(void* p, size_t size, long* cap, long need, long limit) noexcept nogil:
    """`p` (an array of `size`-byte elements with room for cap[0]) reallocated to hold `need`:
    the capacity doubles (capped at `limit`). NULL when the allocator refused (`p` is then kept)."""
    cdef long new_cap = cap[0] * 2
    while new_cap < need:
        new_cap *= 2
    if new_cap > limit:
        new_cap = limit
    cdef void* q = realloc(p, size * new_cap)
    if q != NULL:
        cap[0] = new_cap
    return q


cdef inline long _probe(Table t, hash_t key, bint terminal) noexcept nogil:
    """The hash slot of (`key`, `terminal`): the slot of its node, or the empty slot where its node
    would go (linear probing)."""
    cdef long mask = t.cap_slots - 1
    cdef long j = <long>(key & <hash_t>mask)
    cdef int idx
    while True:
        idx = t.slots[j]
        if idx < 0 or (t.nodes[idx].key == key and t.nodes[idx].terminal == terminal):
            return j
        j = (j + 1) & mask


cdef int _cmp_desc(const void* a, const void* b) noexcept nogil:
    cdef long x = (<const long*>a)[0], y = (<const long*>b)[0]
    return (x < y) - (x > y)


cdef class Table:
    def __cinit__(self, long limit_nodes, long limit_edges):
        self.limit_nodes = min(limit_nodes, MAX_INDEX)
        self.limit_edges = min(limit_edges, 2 * MAX_INDEX)
        self.alloc(1024)

    def __dealloc__(self):
        free(self.nodes); free(self.edges); free(self.slots)

    cdef int alloc(self, long cap) except -1:
        """Free the table and allocate an empty one for about `cap` states."""
        free(self.nodes); free(self.edges); free(self.slots)
        self.nodes = NULL; self.edges = NULL; self.slots = NULL
        if cap > self.limit_nodes:
            cap = self.limit_nodes
        self.cap_nodes = cap
        self.cap_edges = min(cap * 2, self.limit_edges)
        self.cap_slots = 1
        while self.cap_slots < 2 * cap:
            self.cap_slots *= 2
        self.nodes = <Node*>malloc(sizeof(Node) * self.cap_nodes)
        self.edges = <Edge*>malloc(sizeof(Edge) * self.cap_edges)
        self.slots = <int*>malloc(sizeof(int) * self.cap_slots)
        if not (self.nodes and self.edges and self.slots):
            raise MemoryError("the allocator refused memory for the search table")
        self.clear()
        return 0

    cdef void clear(self) noexcept nogil:
        """Empty the table, keeping its memory."""
        cdef long i
        for i in range(self.cap_slots):
            self.slots[i] = -1
        self.n_nodes = 0
        self.n_edges = 0

    cdef long bytes_used(self) noexcept nogil:
        return self.cap_nodes * sizeof(Node) + self.cap_edges * sizeof(Edge) + self.cap_slots * sizeof(int)

    @property
    def size(self) -> int:
        return self.n_nodes

    cdef int rebuild_slots(self, long new_cap) noexcept nogil:
        cdef int* ns = <int*>malloc(sizeof(int) * new_cap)
        if ns == NULL:
            return -1
        cdef long i, j
        cdef long mask = new_cap - 1
        for i in range(new_cap):
            ns[i] = -1
        for i in range(self.n_nodes):
            j = <long>(self.nodes[i].key & <hash_t>mask)
            while ns[j] >= 0:
                j = (j + 1) & mask
            ns[j] = <int>i
        free(self.slots)
        self.slots = ns
        self.cap_slots = new_cap
        return 0

    cdef int find(self, hash_t key, bint terminal) noexcept nogil:
        """Index of the node of (`key`, `terminal`), -1 when absent."""
        return self.slots[_probe(self, key, terminal)]

    cdef int lookup(self, hash_t key, bint terminal, int player, bint* created) noexcept nogil:
        """Index of the node of (`key`, `terminal`), created (unvalued) when absent; -1 when the
        table is full (``limit_nodes``) or the allocator refused memory."""
        cdef long j = _probe(self, key, terminal)
        cdef int idx = self.slots[j]
        if idx >= 0:
            created[0] = False
            return idx
        if self.n_nodes >= self.limit_nodes:
            return -1
        cdef Node* grown
        if self.n_nodes == self.cap_nodes:
            grown = <Node*>_grow(self.nodes, sizeof(Node), &self.cap_nodes, self.n_nodes + 1, self.limit_nodes)
            if grown == NULL:
                return -1
            self.nodes = grown
        if (self.n_nodes + 1) * 2 > self.cap_slots:
            if self.rebuild_slots(self.cap_slots * 2) < 0:
                return -1
            j = _probe(self, key, terminal)       # the key is absent: an empty slot
        idx = <int>self.n_nodes
        self.n_nodes += 1
        if self.n_nodes > self.peak_nodes:
            self.peak_nodes = self.n_nodes
        self.slots[j] = idx
        cdef Node* nd = &self.nodes[idx]
        nd.key = key
        nd.v = 0.0
        nd.c = 0
        nd.r = 0
        nd.player = <signed char>player
        nd.expanded = 0
        nd.evaluated = 0
        nd.terminal = 1 if terminal else 0
        nd.proven = UNPROVEN
        nd.mark = 0
        nd.first_edge = 0
        nd.n_edges = 0
        nd.res_depth = 0
        nd.proof_depth = 0
        created[0] = True
        return idx

    cdef long alloc_edges(self, int n) noexcept nogil:
        """Index of the first of `n` new edges; -1 when the table is full (``limit_edges``) or the
        allocator refused memory."""
        cdef Edge* grown
        if self.n_edges + n > self.limit_edges:
            return -1
        if self.n_edges + n > self.cap_edges:
            grown = <Edge*>_grow(self.edges, sizeof(Edge), &self.cap_edges, self.n_edges + n, self.limit_edges)
            if grown == NULL:
                return -1
            self.edges = grown
        cdef long first = self.n_edges
        self.n_edges += n
        return first

    cdef long mark_reachable(self, int root) noexcept nogil:
        """Set mark = 1 on the nodes reachable from `root` (through expanded nodes), 0 on the others
        (all 0 when `root` < 0). Returns their number, -1 when the allocator refused memory."""
        cdef long i
        for i in range(self.n_nodes):
            self.nodes[i].mark = 0
        if root < 0:
            return 0
        cdef int* stack = <int*>malloc(sizeof(int) * (self.n_nodes + 1))
        if stack == NULL:
            return -1
        cdef long top = 0, count = 0
        cdef int e, ch, idx
        self.nodes[root].mark = 1
        stack[top] = root
        top += 1
        while top > 0:
            top -= 1
            idx = stack[top]
            count += 1
            if not self.nodes[idx].expanded:
                continue
            for e in range(self.nodes[idx].first_edge, self.nodes[idx].first_edge + self.nodes[idx].n_edges):
                ch = self.edges[e].child
                if self.nodes[ch].mark == 0:
                    self.nodes[ch].mark = 1
                    stack[top] = ch
                    top += 1
        free(stack)
        return count

    cdef int compact(self, int keep) noexcept nogil:
        """Keep only the nodes with mark == 1 (a set closed under the edges of expanded nodes, as
        ``mark_reachable`` leaves it) and free the rest. Nodes keep their order (they slide down in
        place, marks reset to 0); edge blocks are copied. Returns the new index of node `keep`
        (-1 when `keep` < 0 or was not kept), TABLE_NO_MEMORY when the allocator refused memory."""
        cdef long n = self.n_nodes
        cdef int* newidx = <int*>malloc(sizeof(int) * (n if n > 0 else 1))
        if newidx == NULL:
            return TABLE_NO_MEMORY
        cdef long i, count = 0, n_edges = 0, k
        cdef int e
        cdef Node* nd
        cdef long want
        for i in range(n):
            if self.nodes[i].mark == 1:
                newidx[i] = <int>count
                count += 1
                if self.nodes[i].expanded:
                    n_edges += self.nodes[i].n_edges
            else:
                newidx[i] = -1
        want = max(1024, n_edges + n_edges // 4)
        if want > self.limit_edges:
            want = max(self.limit_edges, n_edges)
        cdef Edge* ne = <Edge*>malloc(sizeof(Edge) * want)
        if ne == NULL:
            free(newidx)
            return TABLE_NO_MEMORY
        k = 0
        for i in range(n):
            if newidx[i] < 0:
                continue
            nd = &self.nodes[i]
            nd.mark = 0
            if nd.expanded:
                for e in range(nd.n_edges):
                    ne[k + e] = self.edges[nd.first_edge + e]
                    ne[k + e].child = newidx[ne[k + e].child]
                nd.first_edge = <int>k
                k += nd.n_edges
            else:
                nd.first_edge = 0
                nd.n_edges = 0
            if newidx[i] != i:
                self.nodes[newidx[i]] = nd[0]
        free(self.edges)
        self.edges = ne
        self.cap_edges = want
        self.n_edges = n_edges
        keep = newidx[keep] if keep >= 0 else -1
        free(newidx)
        self.n_nodes = count
        want = max(1024, count + count // 4)
        if want > self.limit_nodes:
            want = max(self.limit_nodes, count)
        cdef Node* shrunk
        if want < self.cap_nodes:
            shrunk = <Node*>realloc(self.nodes, sizeof(Node) * want)
            if shrunk != NULL:
                self.nodes = shrunk
                self.cap_nodes = want
        want = 2048
        while want < 2 * (count + 1):
            want *= 2
        if self.rebuild_slots(want) < 0:
            return TABLE_NO_MEMORY
        return keep

    cdef int collect(self, int root) noexcept nogil:
        """The table is full: cut back the least visited subtrees (the states whose selection count
        is lowest lose their children but keep their values) to about half the cap, then keep only
        what `root` reaches. Returns the new index of `root` (see ``crowded`` for whether enough
        was freed), TABLE_NO_MEMORY when the allocator refused memory."""
        cdef long n = self.n_nodes, i, k = 0, m = 0, acc, target
        cdef int e, ch, threshold
        cdef int* inc = <int*>malloc(sizeof(int) * (n if n > 0 else 1))
        cdef long* order = <long*>malloc(sizeof(long) * (n if n > 0 else 1))
        if not (inc and order) or self.mark_reachable(root) < 0:
            free(inc); free(order)
            return TABLE_NO_MEMORY
        for i in range(n):
            inc[i] = -1
        # usefulness of a state: the largest selection count of an edge into it
        for i in range(n):
            if self.nodes[i].mark and self.nodes[i].expanded:
                for e in range(self.nodes[i].first_edge, self.nodes[i].first_edge + self.nodes[i].n_edges):
                    ch = self.edges[e].child
                    if self.edges[e].n > inc[ch]:
                        inc[ch] = self.edges[e].n
        # keep the most visited expanded states whose children fit in half the cap
        for i in range(n):
            if self.nodes[i].mark and self.nodes[i].expanded and i != root:
                order[m] = (<long>inc[i] << 32) | i
                m += 1
        qsort(order, m, sizeof(long), _cmp_desc)
        target = self.limit_nodes // 2 - self.nodes[root].n_edges - 1
        threshold = 0x7FFFFFFF
        acc = 0
        for k in range(m):
            acc += self.nodes[order[k] & <long>0xFFFFFFFF].n_edges
            if acc > target:
                break
            threshold = <int>(order[k] >> 32)
        if acc > target and k < m and (order[k] >> 32) == threshold:
            # the states at the threshold that did not fit go too
            threshold += 1
        for k in range(m):
            i = order[k] & <long>0xFFFFFFFF
            if inc[i] < threshold:
                self.nodes[i].expanded = 0
                self.nodes[i].n_edges = 0
        free(inc); free(order)
        if self.mark_reachable(root) < 0:
            return TABLE_NO_MEMORY
        return self.compact(root)

    cdef bint crowded(self) noexcept nogil:
        """Is the table still more than three quarters full (``collect`` freed too little)?"""
        return self.n_nodes > (3 * self.limit_nodes) // 4 or self.n_edges > (3 * self.limit_edges) // 4


# ---- the one walk: a Descent-family iteration, resumable ------------------------------------------

cdef class Walk:
    """One iteration of Unbounded Minimax / Minibal (one expansion) or Descent (expansions down to
    a terminal or resolved state), written once and resumable, for every driver: the agents'
    ``BestFirstSearch`` values the pending children at once with its evaluator; the self-play pool
    and the batched game driver gather the pending children of many games into one network call.

    ``begin(root)`` starts an iteration at the node `root` of ``cur`` (the walker, set by the
    driver: it is moved down and back, and is at the root again when ``step`` returns WALK_DONE or WALK_FULL).
    ``step(enc)`` runs until the iteration is over (WALK_DONE: counted), the table is full
    (WALK_FULL: undone, not counted) or values are needed (WALK_EVAL: the ``n_pend`` children of
    ``cur`` reached by ``pend_acts``, encoded to `enc` when ``encode``); ``supply(values)`` (each
    child's value in its mover's view) resumes it, ``abort()`` gives it up (WALK_FULL's undoing).

    The decisions (docs/ALGORITHMS.md, "One walk"): an edge's count rises when the walk passes it
    (after a relink) and falls back when the iteration is undone; a child reached by two actions
    of one expansion is valued once (QUEUED); a relinked child is valued before the walk goes on
    (every child an edge points to has a value); a terminal node is valued once (``child_node``)."""

    def __cinit__(self, Table t, int branching, int path_cap, int enc_size, int rule=RULE_MINIMAX,
                  bint proofs=False, bint descent=False, bint encode=True):
        self.t = t
        self.rules.rule = rule
        self.rules.balanced = -1
        self.rules.lean = 1
        self.rules.proofs = proofs
        self.descent = descent
        self.encode = encode
        self.enc_size = enc_size
        self.path_cap = path_cap
        self.path = <int*>malloc(sizeof(int) * path_cap)
        self.path_edge = <int*>malloc(sizeof(int) * path_cap)
        self.acts = <action_t*>malloc(sizeof(action_t) * branching)
        self.pend_nodes = <int*>malloc(sizeof(int) * branching)
        self.pend_acts = <action_t*>malloc(sizeof(action_t) * branching)
        if not (self.path and self.path_edge and self.acts and self.pend_nodes and self.pend_acts):
            raise MemoryError()

    def __dealloc__(self):
        free(self.path); free(self.path_edge); free(self.acts)
        free(self.pend_nodes); free(self.pend_acts)

    cdef void place(self, State cur):
        """Walk ``cur`` from now on (the root's state between iterations; moved down and back)."""
        self.cur = cur

    cdef void balance(self, int player) noexcept nogil:
        """The balanced player of Minibal (the game's first searched mover; -1: unset); a new
        balanced player starts Minibal swing leaning to values >= 0."""
        self.rules.balanced = player
        self.rules.lean = 1

    cdef int expand_alone(self, int root, float* enc) noexcept nogil:
        """Expand `root` (the walker's state) outside an iteration: ``expand``'s codes; on
        WALK_EVAL ``supply`` the values, then ``end_alone``."""
        self.begin(root)
        return self.expand(root, enc)

    cdef void end_alone(self) noexcept nogil:
        """Close an expansion made by ``expand_alone`` (no iteration is left open)."""
        self.leaf_done = False
        self.path_len = 0

    cdef void begin(self, int root) noexcept nogil:
        self.path[0] = root
        self.path_len = 1
        self.n_pend = 0
        self.leaf_done = False

    cdef int finish(self, bint counted) noexcept nogil:
        """End the iteration: an undone one (not `counted`) gives its edges' counts back first;
        then the expanded nodes of the path are backed up, deepest first, and the walker climbs
        back to the root."""
        cdef int i
        if not counted:
            for i in range(1, self.path_len):
                self.t.edges[self.path_edge[i]].n = self.t.edges[self.path_edge[i]].n - 1
        for i in range(self.path_len - 1, -1, -1):
            if self.t.nodes[self.path[i]].expanded:
                backup(self.t, &self.rules, self.path[i])
        i = self.path_len - 1
        while i > 0:
            self.cur.undo()
            i -= 1
        self.path_len = 0
        self.n_pend = 0
        return WALK_DONE if counted else WALK_FULL

    cdef void unqueue(self) noexcept nogil:
        """Pending children go back to unvalued (valued by a later expansion)."""
        cdef int i
        for i in range(self.n_pend):
            if self.t.nodes[self.pend_nodes[i]].evaluated == QUEUED:
                self.t.nodes[self.pend_nodes[i]].evaluated = 0
        self.n_pend = 0

    cdef int expand(self, int idx, float* enc) noexcept nogil:
        """Create the children of `idx` (the walker's state): WALK_DONE when none needs a value (the
        node is expanded), WALK_EVAL when some do (queued, encoded), WALK_FULL (nothing linked)."""
        cdef int n = self.cur.legal_actions(self.acts)
        cdef long first = self.t.alloc_edges(n)
        if first < 0:
            return WALK_FULL
        cdef int i, child
        cdef bint created
        cdef Node* ch
        cdef action_t a
        self.n_pend = 0
        for i in range(n):
            a = self.acts[i]
            self.cur.apply(a)
            child = child_node(self.t, self.cur, &created)
            if child < 0:
                self.cur.undo()
                self.unqueue()
                return WALK_FULL
            ch = &self.t.nodes[child]
            if not ch.terminal and not ch.evaluated:
                ch.evaluated = QUEUED              # once, even if two actions lead here
                if self.encode:
                    self.cur.encode(enc + <long>self.n_pend * self.enc_size)
                self.pend_acts[self.n_pend] = a
                self.pend_nodes[self.n_pend] = child
                self.n_pend += 1
            self.cur.undo()
            self.t.edges[first + i].action = a
            self.t.edges[first + i].child = child
            self.t.edges[first + i].n = 0
        self.pend_relink = False
        self.pend_idx = idx
        self.pend_first = first
        self.pend_n = n
        if self.n_pend > 0:
            return WALK_EVAL
        self.supply(NULL)
        return WALK_DONE

    cdef void supply(self, const float* values) noexcept nogil:
        cdef int i, e
        cdef Node* ch
        cdef Node* nd
        for i in range(self.n_pend):
            ch = &self.t.nodes[self.pend_nodes[i]]
            ch.v = values[i] if ch.player == 0 else -values[i]
            ch.evaluated = 1
        self.evaluations += self.n_pend
        self.n_pend = 0
        if self.pend_relink:
            e = self.pend_idx
            self.cur.apply(self.pend_acts[0])
            self.t.edges[e].child = self.pend_nodes[0]
            self.t.edges[e].n = self.t.edges[e].n + 1
            self.path_edge[self.path_len] = e
            self.path[self.path_len] = self.pend_nodes[0]
            self.path_len += 1
            return
        nd = &self.t.nodes[self.pend_idx]
        nd.first_edge = <int>self.pend_first
        nd.n_edges = self.pend_n
        nd.expanded = 1
        if not self.descent:
            self.leaf_done = True

    cdef int abort(self) noexcept nogil:
        """Give the iteration up (the values will not come): as a full table's."""
        self.unqueue()
        return self.finish(False)

    cdef int step(self, float* enc) noexcept nogil:
        cdef int idx, e, child, rc
        cdef bint created
        cdef Node* nd
        cdef Node* ch
        cdef action_t a
        while True:
            if self.leaf_done:
                self.leaf_done = False
                return self.finish(True)
            idx = self.path[self.path_len - 1]
            nd = &self.t.nodes[idx]
            if self.cur._terminal:
                if not nd.evaluated:
                    set_terminal(nd, self.cur)
                return self.finish(True)
            if nd.r:
                return self.finish(True)
            if not nd.expanded:
                rc = self.expand(idx, enc)
                if rc == WALK_FULL:
                    return self.finish(False)
                if rc == WALK_EVAL:
                    return WALK_EVAL
                continue                       # expanded (leaf_done without Descent)
            e = select(self.t, &self.rules, idx, True)
            if e < 0 or self.path_len >= self.path_cap:
                return self.finish(True)
            a = self.t.edges[e].action
            self.cur.apply(a)
            child = self.t.edges[e].child
            if not same_state(&self.t.nodes[child], self.cur):
                # follow the current state's key, not only the index stored on the edge
                child = child_node(self.t, self.cur, &created)
                if child < 0:
                    self.cur.undo()
                    return self.finish(False)
                ch = &self.t.nodes[child]
                if not ch.terminal and not ch.evaluated:
                    ch.evaluated = QUEUED
                    if self.encode:
                        self.cur.encode(enc)
                    self.cur.undo()
                    self.pend_nodes[0] = child
                    self.pend_acts[0] = a
                    self.n_pend = 1
                    self.pend_relink = True
                    self.pend_idx = e
                    return WALK_EVAL
                self.t.edges[e].child = child
            self.t.edges[e].n = self.t.edges[e].n + 1
            self.path_edge[self.path_len] = e
            self.path[self.path_len] = child
            self.path_len += 1


# ---- tree learning: the examples of a tree -------------------------------------------------------

cdef int examples_add(Examples* ex, State s, float value) noexcept nogil:
    """Append one example (the encoding of `s`, `value` in its mover's view); -1 when the
    allocator refused memory. At ``ex.limit`` examples (when > 0) the example is dropped
    (``ex.dropped``) and the buffer never grows past the limit."""
    cdef long cap
    cdef float* nx
    cdef float* ny
    if ex.limit > 0 and ex.n >= ex.limit:
        ex.dropped += 1
        return 0
    if ex.n == ex.cap:
        cap = ex.cap * 2 if ex.cap else 1024
        if ex.limit > 0 and cap > ex.limit:
            cap = ex.limit
        nx = <float*>realloc(ex.x, sizeof(float) * cap * ex.enc_size)
        if nx == NULL:
            return -1
        ex.x = nx
        ny = <float*>realloc(ex.y, sizeof(float) * cap)
        if ny == NULL:
            return -1
        ex.y = ny
        ex.cap = cap
    s.encode(ex.x + ex.n * ex.enc_size)
    ex.y[ex.n] = value
    ex.n += 1
    return 0


cdef void examples_free(Examples* ex) noexcept nogil:
    free(ex.x); free(ex.y)
    ex.x = NULL
    ex.y = NULL
    ex.n = 0
    ex.cap = 0


cdef int harvest(Table t, State s, int root, int max_depth, Examples* ex) noexcept nogil:
    """Tree learning: emit as examples the states of the tree below `root` (the node of state `s`)
    whose nodes are unmarked (mark 0): every expanded state (its value) and every terminal state
    (f_t), each in its mover's view; marks them 2. Depth first, a state before its children, the
    children in edge order, each state once, at most `max_depth` plies down; an edge whose node is
    not its state's (another history) is not followed. `s` is left as it was. Returns 0, or -1
    when the allocator refused memory."""
    cdef Node* nd = &t.nodes[root]
    cdef double tv
    if nd.mark != 0:
        return 0
    nd.mark = 2
    if s._terminal:
        tv = s.terminal_value()
        return examples_add(ex, s, <float>(tv if s._player == 0 else -tv))
    if not nd.expanded:
        return 0
    if examples_add(ex, s, mover_value(nd)) < 0:
        return -1
    cdef int* stk = <int*>malloc(sizeof(int) * max_depth * 2)      # node, next edge
    if stk == NULL:
        return -1
    cdef int depth = 1, idx, e, ch
    stk[0] = root
    stk[max_depth] = t.nodes[root].first_edge
    while depth > 0:
        idx = stk[depth - 1]
        e = stk[max_depth + depth - 1]
        if e >= t.nodes[idx].first_edge + t.nodes[idx].n_edges or depth >= max_depth:
            depth -= 1
            if depth > 0:
                s.undo()
            continue
        stk[max_depth + depth - 1] = e + 1
        ch = t.edges[e].child
        if t.nodes[ch].mark != 0:
            continue
        s.apply(t.edges[e].action)
        if not same_state(&t.nodes[ch], s):
            s.undo()
            continue
        t.nodes[ch].mark = 2
        if s._terminal:
            tv = s.terminal_value()
            if examples_add(ex, s, <float>(tv if s._player == 0 else -tv)) < 0:
                free(stk)
                return -1
            s.undo()
            continue
        if not t.nodes[ch].expanded:
            s.undo()
            continue
        if examples_add(ex, s, mover_value(&t.nodes[ch])) < 0:
            free(stk)
            return -1
        stk[depth] = ch
        stk[max_depth + depth] = t.nodes[ch].first_edge
        depth += 1
    free(stk)
    return 0


# ---- the move decision, for tests and tools ----------------------------------------------------------

def sample_ranks(n, e, epsilon, seed, draws):
    """Counts of the ranks drawn by the self-play move choice (``draws`` draws) among ``n``
    ranked actions: the ordinal distribution (``epsilon`` < 0) or epsilon-greedy."""
    from games import validate
    return _sample_ranks(validate.count(n, "sample_ranks: n", 1, 1_000_000),
                         validate.real(e, "sample_ranks: e", 0.0, 1.0),
                         validate.real(epsilon, "sample_ranks: epsilon", None, 1.0),
                         validate.integer(seed, "sample_ranks: seed", 0, 2 ** 64 - 1),
                         validate.count(draws, "sample_ranks: draws", 0))


def _sample_ranks(int n, double e, double epsilon, unsigned long long seed, long draws):
    counts = np.zeros(n, dtype=np.int64)
    cdef long[::1] cv = counts
    cdef uint64_t rng = seed * <uint64_t>0x9E3779B97F4A7C15ULL + 1
    cdef long _d
    for _d in range(draws):
        cv[rank_choice(n, e, epsilon, &rng)] += 1
    return counts


def ordinal_probabilities(n, e):
    """P(rank i) of the ordinal distribution over n ranked actions."""
    from games import validate
    n = validate.count(n, "ordinal_probabilities: n", 1, 1_000_000)
    e = validate.real(e, "ordinal_probabilities: e", 0.0, 1.0)
    out = []
    rest = 1.0
    for i in range(n):
        p = (e + (1.0 - e) / (n - i)) * rest
        out.append(p)
        rest -= p
    return out
