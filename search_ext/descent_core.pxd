# The Descent core: the search tree (transposition table), the rules of Unbounded Minimax with
# completion, Minibal_n and Minibal_+ (better, select, backup with completion, resolution and the
# minimax proof), terminal valuation, the self-play move decision and tree learning's example walk.
# Written once here and in descent_core.pyx; used by search_ext.bestfirst.BestFirstSearch (one
# search, synchronous evaluator) and search_ext.selfplay.SelfPlayPool (many games, one batched
# network call per round).
# The rules are inline (compiled into each user) so the hot loops pay no call through a pointer.
# docs/ALGORITHMS.md sections 3-5 give the rules; the Minibal paper, Algorithms 1-4.
from libc.math cimport fabs

from games._state cimport State
from games._typedefs cimport action_t, hash_t, uint64_t, rng_below, rng_uniform


cdef struct Node:
    hash_t key          # search key: the position hash xor the repetition-relevant history key
    float v             # value, first player's view
    signed char c       # completion in {-1, 0, 1}, first player's view
    signed char r       # resolved
    signed char player  # player to move
    signed char expanded
    signed char evaluated
    signed char terminal  # fixed when the node is created: terminal and non-terminal never share
    signed char proven  # minimax proof, first player's view: -1, 0, 1; UNPROVEN when not proven
    unsigned char mark  # scratch: reachability (1) and the self-play harvest (2)
    int first_edge
    int n_edges
    int res_depth       # plies to the terminal state behind a resolved value (the chosen line)
    int proof_depth     # proven win: plies of the shortest forced win; proven loss: the longest


cdef struct Edge:
    action_t action
    int child
    int n               # selection count n_{s,a}


cdef enum:
    MAX_INDEX = 1000000000  # the most nodes (and half the most edges) a table may index
    UNPROVEN = 2
    TABLE_NO_MEMORY = -3    # compact/collect: the allocator refused memory (a fatal error for the caller)
    QUEUED = 2              # Node.evaluated of a child whose value a pending evaluation will supply

# What Walk.step returns.
cdef enum:
    WALK_DONE = 0           # the iteration is over (counted); the walker is back at the root
    WALK_EVAL = 1           # it waits for values: Walk.n_pend children of Walk.cur (see Walk.supply)
    WALK_FULL = -2          # the table is full: the iteration is undone (not counted), walker at the root

cdef enum:
    RULE_MINIMAX = 0
    RULE_MINIBAL_N = 1
    RULE_MINIBAL_PLUS = 2
    RULE_MINIBAL_SWING = 3


cdef struct Rules:
    int rule            # RULE_*
    int balanced        # the balanced player of Minibal (fixed for a game); -1 unset
    bint proofs         # keep the minimax proof (proven, proof_depth) in backup
    int lean            # Minibal swing: +1 prefers values >= 0 (as Minibal_+), -1 values <= 0 (its
                        # mirror: after a proven win, search_ext.bestfirst)


cdef class Table:
    """A transposition table: nodes keyed by (search key, terminal flag), open addressing with
    linear probing on the key; edges in one array, a node's children contiguous."""
    cdef Node* nodes
    cdef long n_nodes, cap_nodes
    cdef Edge* edges
    cdef long n_edges, cap_edges
    cdef int* slots
    cdef long cap_slots
    cdef readonly long limit_nodes, limit_edges
    cdef readonly long peak_nodes
    cdef int alloc(self, long cap) except -1
    cdef void clear(self) noexcept nogil
    cdef long bytes_used(self) noexcept nogil
    cdef int rebuild_slots(self, long new_cap) noexcept nogil
    cdef int find(self, hash_t key, bint terminal) noexcept nogil
    cdef int lookup(self, hash_t key, bint terminal, int player, bint* created) noexcept nogil
    cdef long alloc_edges(self, int n) noexcept nogil
    cdef long mark_reachable(self, int root) noexcept nogil
    cdef int compact(self, int keep) noexcept nogil
    cdef int collect(self, int root) noexcept nogil
    cdef bint crowded(self) noexcept nogil


cdef class Walk:
    """The one Descent-family iteration, resumable (descent_core.pyx): made with its settings
    (``Walk(table, branching, path_cap, enc_size, rule, proofs, descent, encode)``, fixed for its
    life; only the balanced player of Minibal is set later, by ``balance``, at a game's first
    search), ``place``d on the state it walks, then ``begin`` at a root, ``step`` until WALK_DONE
    or WALK_FULL; on WALK_EVAL the driver values the ``n_pend`` children of ``cur`` reached by
    ``pend_acts`` (encoded to the buffer given to ``step`` when ``encode``) and hands the values to
    ``supply`` (or gives up with ``abort``). ``expand_alone`` / ``end_alone``: one expansion
    outside an iteration (a decision at a state never searched)."""
    cdef Table t
    cdef Rules rules
    cdef bint descent           # expand down to a terminal state (Descent), else one expansion
    cdef bint encode            # write the pending children's planes to the step's buffer
    cdef int enc_size
    cdef State cur              # the walker: the root's state between iterations
    cdef int* path              # nodes from the root
    cdef int* path_edge         # path_edge[i]: the edge from path[i - 1] to path[i]
    cdef int path_len, path_cap
    cdef action_t* acts         # scratch: legal actions
    cdef int n_pend             # children waiting for values
    cdef int* pend_nodes
    cdef action_t* pend_acts
    cdef bint pend_relink       # the pending child is an edge's relinked child (edge pend_idx)
    cdef int pend_idx           # expansion: the node expanded; relink: the edge
    cdef long pend_first        # expansion: its first edge
    cdef int pend_n             # expansion: its number of edges
    cdef bint leaf_done         # an expansion ended the iteration (not Descent)
    cdef readonly long evaluations   # children valued through supply
    cdef void place(self, State cur)
    cdef void balance(self, int player) noexcept nogil
    cdef void begin(self, int root) noexcept nogil
    cdef int expand_alone(self, int root, float* enc) noexcept nogil
    cdef void end_alone(self) noexcept nogil
    cdef int step(self, float* enc) noexcept nogil
    cdef void supply(self, const float* values) noexcept nogil
    cdef int abort(self) noexcept nogil
    cdef int finish(self, bint counted) noexcept nogil
    cdef int expand(self, int idx, float* enc) noexcept nogil
    cdef void unqueue(self) noexcept nogil


cdef struct Examples:
    float* x            # n encodings of enc_size floats
    float* y            # n values, each in its state's mover's view
    long n, cap
    long limit          # at most this many examples (0: no limit); the rest are dropped
    long dropped        # examples dropped at the limit
    int enc_size

# Tree learning (docs/ALGORITHMS.md section 5): append one example; free the buffer; and the walk
# that emits the expanded and terminal states of a tree (see descent_core.pyx).
cdef int examples_add(Examples* ex, State s, float value) noexcept nogil
cdef void examples_free(Examples* ex) noexcept nogil
cdef int harvest(Table t, State s, int root, int max_depth, Examples* ex) noexcept nogil


cdef inline hash_t skey(State s) noexcept nogil:
    """The search key of `s` (equal keys: same future, see State.search_key)."""
    return s._hash ^ s._hist_key


cdef inline bint same_state(Node* nd, State s) noexcept nogil:
    """Is `nd` the node of `s` (its key and its terminal flag)?"""
    return nd.key == skey(s) and nd.terminal == s._terminal


cdef inline float mover_value(Node* nd) noexcept nogil:
    """The node's value from its player to move's point of view."""
    return nd.v if nd.player == 0 else -nd.v


cdef inline void set_terminal(Node* nd, State s) noexcept nogil:
    """Value the node of the terminal state `s`: resolved, exact (f_t, b_t), proven."""
    nd.r = 1
    nd.c = <signed char>s._result
    nd.v = <float>s.terminal_value()
    nd.res_depth = 0
    nd.proven = <signed char>s._result
    nd.proof_depth = 0
    nd.evaluated = 1


cdef inline int child_node(Table t, State s, bint* created) noexcept nogil:
    """The node of `s` (the state an action just reached), created when absent; -1 when the table
    is full. A terminal state's node is valued by ``set_terminal`` once, when the search first
    reaches it (docs/ALGORITHMS.md, "One walk": never revalued under parents backed up with it)."""
    cdef int idx = t.lookup(skey(s), s._terminal, s._player, created)
    if idx >= 0 and s._terminal and not t.nodes[idx].evaluated:
        set_terminal(&t.nodes[idx], s)
    return idx


cdef inline bint better(Table t, Rules* rules, int player, int e, int f) noexcept nogil:
    """Does edge e beat edge f for `player` (the mover of their parent) under the rule?"""
    cdef Node* a = &t.nodes[t.edges[e].child]
    cdef Node* b = &t.nodes[t.edges[f].child]
    cdef int na = t.edges[e].n, nb = t.edges[f].n
    cdef double s, va, vb
    cdef int ca, cb, ia, ib
    if rules.rule == RULE_MINIMAX:
        # argmax over (c, v, n) in the mover's view (Algorithm 1).
        s = 1.0 if player == 0 else -1.0
        ca = <int>(s * a.c)
        cb = <int>(s * b.c)
        if ca != cb:
            return ca > cb
        va = s * a.v
        vb = s * b.v
        if va != vb:
            return va > vb
        return na > nb
    # Minibal: values in the balanced player's view.
    s = 1.0 if rules.balanced == 0 else -1.0
    va = s * a.v
    vb = s * b.v
    if player != rules.balanced:
        # the opponent: argmin (v, -n)  (Algorithm 3)
        if va != vb:
            return va < vb
        return na > nb
    if rules.rule == RULE_MINIBAL_PLUS:
        # argmin (1[v < 0], |v|, -n)  (Algorithm 4)
        ia = 1 if va < 0 else 0
        ib = 1 if vb < 0 else 0
        if ia != ib:
            return ia < ib
    elif rules.rule == RULE_MINIBAL_SWING:
        # argmin (1[lean * v < 0], |v|, -n): Minibal_+ (lean +1) or its mirror (lean -1)
        ia = 1 if rules.lean * va < 0 else 0
        ib = 1 if rules.lean * vb < 0 else 0
        if ia != ib:
            return ia < ib
    # Minibal_n: argmin (|v|, -n)  (Algorithm 3)
    if fabs(va) != fabs(vb):
        return fabs(va) < fabs(vb)
    return na > nb


cdef inline int select(Table t, Rules* rules, int idx, bint unresolved_only) noexcept nogil:
    """best_action(s, A): the best edge (index) among all, or among unresolved children; -1 when
    there is none."""
    cdef Node* nd = &t.nodes[idx]
    cdef int player = nd.player
    cdef int best = -1
    cdef int e
    for e in range(nd.first_edge, nd.first_edge + nd.n_edges):
        if unresolved_only and t.nodes[t.edges[e].child].r:
            continue
        if best < 0 or better(t, rules, player, e, best):
            best = e
    return best


cdef inline void backup(Table t, Rules* rules, int idx) noexcept nogil:
    """c_s, v_s <- those of best_action(s, actions(s)); r_s <- backup_resolution(s); and, with
    `rules.proofs`, the minimax proof (independent of the rule): a proven win with the depth of the
    shortest forced win, a proven loss with the depth of the longest defence."""
    cdef int e = select(t, rules, idx, False)
    if e < 0:
        return
    cdef Node* ch = &t.nodes[t.edges[e].child]
    cdef Node* nd = &t.nodes[idx]
    cdef Node* x
    cdef int f
    cdef bint all_resolved = True
    nd.c = ch.c
    nd.v = ch.v
    cdef bint resolved
    if rules.rule == RULE_MINIMAX:
        resolved = nd.c != 0
    elif nd.player == rules.balanced:
        resolved = ch.c == 0 and ch.r != 0
    else:
        resolved = ch.r != 0 and ch.c == (-1 if rules.balanced == 0 else 1)
    if not resolved:
        for f in range(nd.first_edge, nd.first_edge + nd.n_edges):
            if not t.nodes[t.edges[f].child].r:
                all_resolved = False
                break
        resolved = all_resolved
    nd.r = 1 if resolved else 0
    if resolved:
        nd.res_depth = ch.res_depth + 1
    if not rules.proofs:
        return
    # the proof, in the mover's view (s = +1 for the first player)
    cdef int s = 1 if nd.player == 0 else -1
    cdef int best = -2, win_d = 0x7FFFFFFF, other_d = 0, o
    cdef bint all_proven = True
    for f in range(nd.first_edge, nd.first_edge + nd.n_edges):
        x = &t.nodes[t.edges[f].child]
        if x.proven == UNPROVEN:
            all_proven = False
            continue
        o = s * x.proven
        if o > 0:
            if x.proof_depth < win_d:
                win_d = x.proof_depth
            best = 1
        elif o > best:
            best = o
            other_d = x.proof_depth
        elif o == best and x.proof_depth > other_d:
            other_d = x.proof_depth
    if best == 1:
        nd.proven = <signed char>s
        nd.proof_depth = win_d + 1
    elif all_proven and best > -2:
        nd.proven = <signed char>(s * best)
        nd.proof_depth = other_d + 1
    else:
        nd.proven = UNPROVEN


# ---- the self-play move decision ------------------------------------------------------------------

cdef inline bint rank_before(Table t, int e, int f, double s) noexcept nogil:
    """Does edge e rank before edge f by (c, v) in the view of sign `s` (+1: first player)?"""
    cdef Node* a = &t.nodes[t.edges[e].child]
    cdef Node* b = &t.nodes[t.edges[f].child]
    if s * a.c != s * b.c:
        return s * a.c > s * b.c
    return s * a.v > s * b.v


cdef inline void rank_order(Table t, int idx, int* order) noexcept nogil:
    """Write the edges of the expanded node `idx` to `order` (n_edges ints), best first by (c, v)
    in its mover's view (a stable insertion sort: ties keep the edge order)."""
    cdef Node* nd = &t.nodes[idx]
    cdef int n = nd.n_edges, i, j, tmp
    cdef double s = 1.0 if nd.player == 0 else -1.0
    for i in range(n):
        order[i] = nd.first_edge + i
    for i in range(1, n):
        tmp = order[i]
        j = i - 1
        while j >= 0 and rank_before(t, tmp, order[j], s):
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = tmp


cdef inline int rank_choice(int n, double e, double epsilon, uint64_t* rng) noexcept nogil:
    """Rank (0 = best) drawn among `n` ranked actions: with `epsilon` < 0, from the ordinal
    distribution P(rank i) = (e + (1 - e) / (n - i)) * (1 - sum_{j<i} P(rank j)); with `epsilon`
    >= 0, epsilon-greedy (uniform with probability epsilon, else rank 0). One uniform draw (two
    for an epsilon-greedy exploration); none when n <= 1."""
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


cdef inline int choose_edge(Table t, int idx, double e, double epsilon, uint64_t* rng,
                            int* order) noexcept nogil:
    """The edge of the move to play at the expanded node `idx` (rank_order, then rank_choice);
    `order` is scratch for n_edges ints."""
    if t.nodes[idx].n_edges == 1:
        return t.nodes[idx].first_edge
    rank_order(t, idx, order)
    return order[rank_choice(t.nodes[idx].n_edges, e, epsilon, rng)]
