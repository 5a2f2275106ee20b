"""One best-first engine for Unbounded Minimax with completion, Unbounded Minibal_n and Minibal_+,
and Descent (docs/ALGORITHMS.md sections 3-5; Minibal paper, Algorithms 1-4).

The variants differ only in two small rules, ``best_action`` and ``backup_resolution``, selected by
``rule``; ``descent`` switches the iteration from "expand one state" to "expand down to a terminal
state". The tree is a transposition table keyed by the Zobrist hash; it is kept across the moves of
one game (``reset()`` between games).

Values are stored from the FIRST player's point of view (so one table serves both players and the
tree survives a change of the player to move); every rule converts to the view it needs. Nothing
assumes that players alternate: each node records its own player to move.
"""
from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.string cimport memset
from libc.math cimport fabs
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

import numpy as np

from games._state cimport State
from games.validate import search_call
from games._typedefs cimport action_t, hash_t, uint64_t, rng_below, rng_uniform
from search_ext.evaluators cimport Evaluator, ZeroEvaluator

from games.errors import GameError

# Rules ------------------------------------------------------------------------------------------------
cdef enum:
    RULE_MINIMAX = 0
    RULE_MINIBAL_N = 1
    RULE_MINIBAL_PLUS = 2

cdef int _cmp_desc(const void* a, const void* b) noexcept nogil:
    cdef long x = (<const long*>a)[0], y = (<const long*>b)[0]
    return (x < y) - (x > y)


RULES = {"minimax": RULE_MINIMAX, "minibal_n": RULE_MINIBAL_N, "minibal_plus": RULE_MINIBAL_PLUS}
DECISIONS = ("best", "safe")


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
    int first_edge
    int n_edges
    int res_depth       # plies to the terminal state behind a resolved value (the chosen line)
    int proof_depth     # proven win: plies of the shortest forced win; proven loss: the longest


cdef struct Edge:
    action_t action
    int child
    int n               # selection count n_{s,a}


cdef enum:
    UNPROVEN = 2
    QUEUED = 2
    OUT_OF_MEMORY = -2
    EVAL_FAILED = -1


cdef inline double now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef inline hash_t skey(State s) noexcept nogil:
    """The search key of `s` (equal keys: same future, see State.search_key)."""
    return s._hash ^ s._hist_key


class SearchError(RuntimeError):
    """The search could not continue (an evaluator failed, or the allocator refused memory)."""


# Table memory: a state costs at most about BYTES_PER_STATE bytes (its node, two edges on average at
# most, its share of the hash slots); ``max_mb`` caps the table at max_mb * 2**20 / BYTES_PER_STATE.
BYTES_PER_STATE = sizeof(Node) + 2 * sizeof(Edge) + 4 * sizeof(int)
DEFAULT_MAX_MB = 1024.0
cdef long MAX_INDEX = 1_000_000_000


cdef class BestFirstSearch:
    """Unbounded best-first minimax-family search with completion.

    Parameters: ``game`` (a GameInfo), ``rule`` (minimax | minibal_n | minibal_plus), ``descent``
    (expand to terminal states each iteration), ``evaluator``, ``decision`` (best | safe: the final
    move), ``take_proven_wins`` with ``proven_win_depth`` (-1: any depth) for Minibal, the memory
    caps ``max_nodes`` (states) and ``max_mb`` (megabytes; ``None``: no cap of that kind), and
    ``keep_tree`` (keep the whole game's tree, for tree learning; by default, when the root moves
    on, only the new root's subtree is kept and the rest freed).

    When the table is full, the least visited subtrees are cut back to their root state (which keeps
    its value) and the search goes on; when even that frees too little, it stops and decides from the
    tree it has (``last_cut_short``). It never raises for want of table space.
    """
    cdef readonly object game
    cdef readonly int rule
    cdef readonly bint descent
    cdef readonly Evaluator evaluator
    cdef readonly bint safe_decision
    cdef readonly bint take_proven_wins
    cdef readonly int proven_win_depth
    cdef readonly long max_nodes
    cdef readonly double max_mb
    cdef readonly bint keep_tree
    cdef long limit_nodes, limit_edges
    cdef int balanced                  # the balanced player (Minibal), fixed for a game; -1 unset
    cdef int root                      # node of the last searched state; -1 none

    cdef Node* nodes
    cdef long n_nodes, cap_nodes
    cdef Edge* edges
    cdef long n_edges, cap_edges
    cdef int* slots
    cdef long cap_slots

    cdef action_t* scratch             # legal actions of the state being expanded
    cdef action_t* eval_actions
    cdef int* eval_nodes
    cdef float* enc
    cdef float* values
    cdef int enc_size
    cdef readonly long iterations_done
    cdef readonly double seconds_used
    cdef readonly long evaluations
    cdef readonly long last_iterations     # iterations of the last search() call
    cdef readonly bint last_cut_short      # the last search stopped before its budget (memory)
    cdef readonly bint memory_full         # the last search reached the table's cap
    cdef readonly long collections         # times the table was cut back because it was full
    cdef readonly long peak_nodes

    def __init__(self, game, str rule="minimax", bint descent=False, Evaluator evaluator=None,
                 str decision="best", bint take_proven_wins=False, int proven_win_depth=-1,
                 max_nodes=None, max_mb=DEFAULT_MAX_MB, bint keep_tree=False):
        if rule not in RULES:
            raise ValueError(f"unknown rule {rule!r} (known: {', '.join(RULES)})")
        if decision not in DECISIONS:
            raise ValueError(f"unknown decision {decision!r} (known: {', '.join(DECISIONS)})")
        if max_nodes is not None and max_nodes < 16:
            raise ValueError(f"max_nodes must be >= 16, got {max_nodes}")
        if max_mb is not None and not (max_mb > 0 and max_mb < 1e9):
            raise ValueError(f"max_mb must be > 0, got {max_mb}")
        self.game = game
        self.rule = RULES[rule]
        self.descent = descent
        self.evaluator = evaluator if evaluator is not None else ZeroEvaluator()
        self.safe_decision = decision == "safe"
        self.take_proven_wins = take_proven_wins
        self.proven_win_depth = proven_win_depth
        self.max_nodes = max_nodes if max_nodes is not None else MAX_INDEX
        self.max_mb = max_mb if max_mb is not None else 0.0
        self.keep_tree = keep_tree
        self.limit_nodes = min(self.max_nodes, MAX_INDEX)
        if max_mb is not None:
            self.limit_nodes = min(self.limit_nodes, max(16, <long>(max_mb * 1048576.0 / BYTES_PER_STATE)))
        self.limit_edges = 2 * self.limit_nodes
        h, w, c = game.planes_shape
        self.enc_size = h * w * c
        n = game.branching
        self.scratch = <action_t*>malloc(sizeof(action_t) * n)
        self.eval_actions = <action_t*>malloc(sizeof(action_t) * n)
        self.eval_nodes = <int*>malloc(sizeof(int) * n)
        self.values = <float*>malloc(sizeof(float) * n)
        self.enc = <float*>malloc(sizeof(float) * n * self.enc_size)
        if not (self.scratch and self.eval_actions and self.eval_nodes and self.values and self.enc):
            raise MemoryError()
        self._alloc_table(1024)

    def __dealloc__(self):
        free(self.nodes); free(self.edges); free(self.slots)
        free(self.scratch); free(self.eval_actions); free(self.eval_nodes)
        free(self.values); free(self.enc)

    cdef int _alloc_table(self, long cap) except -1:
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
            raise SearchError("the allocator refused memory for the search table")
        cdef long i
        for i in range(self.cap_slots):
            self.slots[i] = -1
        self.n_nodes = 0
        self.n_edges = 0
        self.root = -1
        return 0

    def reset(self):
        """Forget the tree (call between games) and free its memory."""
        self._alloc_table(1024)
        self.balanced = -1
        self.iterations_done = 0
        self.seconds_used = 0.0
        self.evaluations = 0
        self.last_iterations = 0
        self.last_cut_short = False
        self.memory_full = False
        self.collections = 0
        self.peak_nodes = 0

    @property
    def size(self) -> int:
        """Number of states in the table."""
        return self.n_nodes

    @property
    def node_limit(self) -> int:
        """The most states the table may hold (from ``max_nodes`` and ``max_mb``)."""
        return self.limit_nodes

    @property
    def memory_bytes(self) -> int:
        """Bytes allocated for the table (nodes, edges, hash slots)."""
        return self.cap_nodes * sizeof(Node) + self.cap_edges * sizeof(Edge) + self.cap_slots * sizeof(int)

    def subtree_size(self, State state) -> int:
        """States reachable from ``state``'s node (0 when it is not in the table)."""
        cdef int idx = self.find(skey(state), state._terminal)
        if idx < 0:
            return 0
        cdef unsigned char* seen = <unsigned char*>calloc(self.n_nodes, 1)
        cdef int* stack = <int*>malloc(sizeof(int) * self.n_nodes)
        if seen == NULL or stack == NULL:
            free(seen); free(stack)
            raise MemoryError()
        cdef long count = self._mark(idx, seen, stack)
        free(seen); free(stack)
        return count

    def verify(self, State state) -> int:
        """Check the table below ``state`` against the game (for tests): every edge leads to the
        node of the state its action reaches (same key, same terminal flag, terminal values exact),
        every node is found by its key, every node is reachable. Returns the states checked."""
        cdef int root = self.find(skey(state), state._terminal)
        if root < 0:
            raise AssertionError("the state is not in the table")
        cdef long i
        for i in range(self.n_nodes):
            if self.find(self.nodes[i].key, self.nodes[i].terminal) != i:
                raise AssertionError(f"node {i} is not found by its key")
        seen = set()
        cdef State s = state.clone()
        stack = [(root, [])]
        while stack:
            idx, path = stack.pop()
            if idx in seen:
                continue
            seen.add(idx)
            for a in path:
                s.apply(a)
            nd = self.nodes[idx]
            if nd["key"] != skey(s) or bool(nd["terminal"]) != bool(s._terminal):
                raise AssertionError(f"node {idx} does not match the state {s.position()!r}")
            if nd["player"] != s._player or not (nd["evaluated"] == 1 or idx == root):
                raise AssertionError(f"node {idx}: wrong player or not valued")
            if s._terminal and (nd["v"] != <float>s.terminal_value() or nd["c"] != s._result):
                raise AssertionError(f"terminal node {idx} has a wrong value")
            if nd["expanded"]:
                legal = s.legal_actions_list()
                acts = [self.edges[e].action for e in range(nd["first_edge"], nd["first_edge"] + nd["n_edges"])]
                if sorted(acts) != legal:
                    raise AssertionError(f"node {idx}: edges {acts} are not the legal actions {legal}")
                for e in range(nd["first_edge"], nd["first_edge"] + nd["n_edges"]):
                    if not 0 <= self.edges[e].child < self.n_nodes:
                        raise AssertionError(f"edge {e} leads out of the table")
                    stack.append((self.edges[e].child, path + [self.edges[e].action]))
            for _ in path:
                s.undo()
        if not self.keep_tree and not self.last_cut_short and len(seen) != self.n_nodes:
            raise AssertionError(f"{self.n_nodes - len(seen)} states are not reachable from the root")
        return len(seen)

    # ---- table --------------------------------------------------------------------------------
    cdef int _rebuild_slots(self, long new_cap) noexcept nogil:
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
        cdef long mask = self.cap_slots - 1
        cdef long j = <long>(key & <hash_t>mask)
        cdef int idx
        while True:
            idx = self.slots[j]
            if idx < 0:
                return -1
            if self.nodes[idx].key == key and self.nodes[idx].terminal == terminal:
                return idx
            j = (j + 1) & mask

    cdef int lookup(self, hash_t key, bint terminal, int player, bint* created) noexcept nogil:
        """Index of the node of (`key`, `terminal`), created (unvalued) when absent; -1 when the
        table is full. A node is matched on its terminal flag too, so a terminal state never shares
        a node with a non-terminal one even if their keys collide."""
        cdef long mask = self.cap_slots - 1
        cdef long j = <long>(key & <hash_t>mask)
        cdef int idx
        while True:
            idx = self.slots[j]
            if idx < 0:
                break
            if self.nodes[idx].key == key and self.nodes[idx].terminal == terminal:
                created[0] = False
                return idx
            j = (j + 1) & mask
        if self.n_nodes >= self.limit_nodes:
            return -1
        cdef Node* grown
        cdef long new_cap
        if self.n_nodes == self.cap_nodes:
            new_cap = self.cap_nodes * 2
            if new_cap > self.limit_nodes:
                new_cap = self.limit_nodes
            grown = <Node*>realloc(self.nodes, sizeof(Node) * new_cap)
            if grown == NULL:
                return -1
            self.nodes = grown
            self.cap_nodes = new_cap
        if (self.n_nodes + 1) * 2 > self.cap_slots:
            if self._rebuild_slots(self.cap_slots * 2) < 0:
                return -1
            mask = self.cap_slots - 1
            j = <long>(key & <hash_t>mask)
            while self.slots[j] >= 0:
                j = (j + 1) & mask
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
        nd.first_edge = 0
        nd.n_edges = 0
        nd.res_depth = 0
        nd.proof_depth = 0
        created[0] = True
        return idx

    cdef long alloc_edges(self, int n) noexcept nogil:
        cdef Edge* grown
        cdef long new_cap
        if self.n_edges + n > self.limit_edges:
            return -1
        if self.n_edges + n > self.cap_edges:
            new_cap = self.cap_edges * 2
            while new_cap < self.n_edges + n:
                new_cap *= 2
            if new_cap > self.limit_edges:
                new_cap = self.limit_edges
            grown = <Edge*>realloc(self.edges, sizeof(Edge) * new_cap)
            if grown == NULL:
                return -1
            self.edges = grown
            self.cap_edges = new_cap
        cdef long first = self.n_edges
        self.n_edges += n
        return first

    cdef long _mark(self, int root, unsigned char* seen, int* stack) noexcept nogil:
        """Mark the nodes reachable from `root` (through expanded nodes); return their number."""
        cdef long top = 0, count = 0
        cdef int i, e, ch
        seen[root] = 1
        stack[top] = root
        top += 1
        while top > 0:
            top -= 1
            i = stack[top]
            count += 1
            if not self.nodes[i].expanded:
                continue
            for e in range(self.nodes[i].first_edge, self.nodes[i].first_edge + self.nodes[i].n_edges):
                ch = self.edges[e].child
                if not seen[ch]:
                    seen[ch] = 1
                    stack[top] = ch
                    top += 1
        return count

    cdef int compact(self, int root) except -2:
        """Keep only the states reachable from `root`; free the rest. Returns the new index of
        `root`. Nodes keep their order (so they slide down in place); edge blocks are copied."""
        cdef long n = self.n_nodes
        cdef unsigned char* seen = <unsigned char*>calloc(n if n > 0 else 1, 1)
        cdef int* newidx = <int*>malloc(sizeof(int) * (n if n > 0 else 1))
        if seen == NULL or newidx == NULL:
            free(seen); free(newidx)
            raise SearchError("the allocator refused memory to compact the search table")
        cdef long i, count = 0, n_edges = 0, k
        cdef int e
        cdef Edge* ne
        cdef Node* nd
        cdef long want
        with nogil:
            self._mark(root, seen, newidx)          # newidx doubles as the stack
            for i in range(n):
                if seen[i]:
                    newidx[i] = <int>count
                    count += 1
                    if self.nodes[i].expanded:
                        n_edges += self.nodes[i].n_edges
                else:
                    newidx[i] = -1
        want = max(1024, n_edges + n_edges // 4)
        if want > self.limit_edges:
            want = max(self.limit_edges, n_edges)
        ne = <Edge*>malloc(sizeof(Edge) * want)
        if ne == NULL:
            free(seen); free(newidx)
            raise SearchError("the allocator refused memory to compact the search table")
        with nogil:
            k = 0
            for i in range(n):
                if newidx[i] < 0:
                    continue
                nd = &self.nodes[i]
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
        root = newidx[root]
        free(seen); free(newidx)
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
        if self._rebuild_slots(want) < 0:
            raise SearchError("the allocator refused memory to compact the search table")
        self.root = root
        return root

    cdef int collect(self, int root) except -2:
        """The table is full: cut back the least visited subtrees (the states whose selection count
        is lowest lose their children but keep their values) to about half the cap, then compact.
        Returns the new index of `root`, or -1 when too little could be freed."""
        cdef long n = self.n_nodes, i, k = 0, m = 0, acc, target
        cdef int e, ch, threshold
        cdef unsigned char* seen = <unsigned char*>calloc(n if n > 0 else 1, 1)
        cdef int* stack = <int*>malloc(sizeof(int) * (n if n > 0 else 1))
        cdef int* inc = <int*>malloc(sizeof(int) * (n if n > 0 else 1))
        cdef long* order = <long*>malloc(sizeof(long) * (n if n > 0 else 1))
        if not (seen and stack and inc and order):
            free(seen); free(stack); free(inc); free(order)
            raise SearchError("the allocator refused memory to collect the search table")
        self.collections += 1
        with nogil:
            self._mark(root, seen, stack)
            for i in range(n):
                inc[i] = -1
            # usefulness of a state: the largest selection count of an edge into it
            for i in range(n):
                if seen[i] and self.nodes[i].expanded:
                    for e in range(self.nodes[i].first_edge,
                                   self.nodes[i].first_edge + self.nodes[i].n_edges):
                        ch = self.edges[e].child
                        if self.edges[e].n > inc[ch]:
                            inc[ch] = self.edges[e].n
            # keep the most visited expanded states whose children fit in half the cap
            for i in range(n):
                if seen[i] and self.nodes[i].expanded and i != root:
                    order[m] = (<long>inc[i] << 32) | i
                    m += 1
        qsort(order, m, sizeof(long), _cmp_desc)
        target = self.limit_nodes // 2 - self.nodes[root].n_edges - 1
        threshold = 0x7FFFFFFF
        acc = 0
        for k in range(m):
            acc += self.nodes[order[k] & 0xFFFFFFFF].n_edges
            if acc > target:
                break
            threshold = <int>(order[k] >> 32)
        if acc > target and k < m and (order[k] >> 32) == threshold:
            # the states at the threshold that did not fit go too
            threshold += 1
        for k in range(m):
            i = order[k] & 0xFFFFFFFF
            if inc[i] < threshold:
                self.nodes[i].expanded = 0
                self.nodes[i].n_edges = 0
        free(seen); free(stack); free(inc); free(order)
        root = self.compact(root)
        if self.n_nodes > (3 * self.limit_nodes) // 4 or self.n_edges > (3 * self.limit_edges) // 4:
            return -1
        return root

    # ---- rules ---------------------------------------------------------------------------------
    cdef inline bint better(self, int player, int e, int f) noexcept nogil:
        """Does edge e beat edge f for `player` (the mover of their parent) under the rule?"""
        cdef Node* a = &self.nodes[self.edges[e].child]
        cdef Node* b = &self.nodes[self.edges[f].child]
        cdef int na = self.edges[e].n, nb = self.edges[f].n
        cdef double s, va, vb
        cdef int ca, cb, ia, ib
        if self.rule == RULE_MINIMAX:
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
        s = 1.0 if self.balanced == 0 else -1.0
        va = s * a.v
        vb = s * b.v
        if player != self.balanced:
            # the opponent: argmin (v, -n)  (Algorithm 3)
            if va != vb:
                return va < vb
            return na > nb
        if self.rule == RULE_MINIBAL_PLUS:
            # argmin (1[v < 0], |v|, -n)  (Algorithm 4)
            ia = 1 if va < 0 else 0
            ib = 1 if vb < 0 else 0
            if ia != ib:
                return ia < ib
        # Minibal_n: argmin (|v|, -n)  (Algorithm 3)
        if fabs(va) != fabs(vb):
            return fabs(va) < fabs(vb)
        return na > nb

    cdef int select(self, int idx, bint unresolved_only) noexcept nogil:
        """best_action(s, A): the best edge (index) among all, or among unresolved children."""
        cdef Node* nd = &self.nodes[idx]
        cdef int player = nd.player
        cdef int best = -1
        cdef int e
        for e in range(nd.first_edge, nd.first_edge + nd.n_edges):
            if unresolved_only and self.nodes[self.edges[e].child].r:
                continue
            if best < 0 or self.better(player, e, best):
                best = e
        return best

    cdef void backup(self, int idx) noexcept nogil:
        """c_s, v_s <- those of best_action(s, actions(s)); r_s <- backup_resolution(s); and the
        minimax proof (independent of the rule): a proven win with the depth of the shortest
        forced win, a proven loss with the depth of the longest defence."""
        cdef int e = self.select(idx, False)
        if e < 0:
            return
        cdef Node* ch = &self.nodes[self.edges[e].child]
        cdef Node* nd = &self.nodes[idx]
        cdef Node* x
        cdef int f
        cdef bint all_resolved = True
        nd.c = ch.c
        nd.v = ch.v
        cdef bint resolved
        if self.rule == RULE_MINIMAX:
            resolved = nd.c != 0
        elif nd.player == self.balanced:
            resolved = ch.c == 0 and ch.r != 0
        else:
            resolved = ch.r != 0 and ch.c == (-1 if self.balanced == 0 else 1)
        if not resolved:
            for f in range(nd.first_edge, nd.first_edge + nd.n_edges):
                if not self.nodes[self.edges[f].child].r:
                    all_resolved = False
                    break
            resolved = all_resolved
        nd.r = 1 if resolved else 0
        if resolved:
            nd.res_depth = ch.res_depth + 1
        # the proof, in the mover's view (s = +1 for the first player)
        cdef int s = 1 if nd.player == 0 else -1
        cdef int best = -2, win_d = 0x7FFFFFFF, other_d = 0, o
        cdef bint all_proven = True
        for f in range(nd.first_edge, nd.first_edge + nd.n_edges):
            x = &self.nodes[self.edges[f].child]
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

    # ---- iteration -----------------------------------------------------------------------------
    cdef inline void set_terminal(self, Node* nd, State s) noexcept nogil:
        nd.r = 1
        nd.c = <signed char>s._result
        nd.v = <float>s.terminal_value()
        nd.res_depth = 0
        nd.proven = <signed char>s._result
        nd.proof_depth = 0
        nd.evaluated = 1

    cdef int expand(self, State s, int idx) noexcept nogil:
        """Create and value the children of `idx`. A child is marked evaluated only once its value
        is in: an expansion cut short (memory, evaluator) leaves no child valued 0 by mistake."""
        cdef int n = s.legal_actions(self.scratch)
        cdef long first = self.alloc_edges(n)
        if first < 0:
            return OUT_OF_MEMORY
        cdef int i, child, n_eval = 0, rc
        cdef bint created
        cdef Node* ch
        cdef action_t a
        for i in range(n):
            a = self.scratch[i]
            s.apply(a)
            child = self.lookup(skey(s), s._terminal, s._player, &created)
            if child < 0:
                s.undo()
                self.unqueue(n_eval)
                return OUT_OF_MEMORY
            ch = &self.nodes[child]
            if ch.terminal:
                if not ch.evaluated:
                    self.set_terminal(ch, s)
            elif not ch.evaluated:
                ch.evaluated = QUEUED               # once per batch, even if two actions lead here
                if self.evaluator.needs_encoding:
                    s.encode(self.enc + <long>n_eval * self.enc_size)
                self.eval_actions[n_eval] = a
                self.eval_nodes[n_eval] = child
                n_eval += 1
            s.undo()
            self.edges[first + i].action = a
            self.edges[first + i].child = child
            self.edges[first + i].n = 0
        if n_eval > 0:
            rc = self.evaluator.evaluate(s, self.eval_actions, n_eval, self.enc, self.values)
            if rc < 0:
                self.unqueue(n_eval)
                return EVAL_FAILED
            self.evaluations += n_eval
            for i in range(n_eval):
                ch = &self.nodes[self.eval_nodes[i]]
                ch.v = self.values[i] if ch.player == 0 else -self.values[i]
                ch.evaluated = 1
        cdef Node* nd = &self.nodes[idx]
        nd.first_edge = <int>first
        nd.n_edges = n
        nd.expanded = 1
        return 0

    cdef void unqueue(self, int n_eval) noexcept nogil:
        """An expansion was cut short: its queued children stay unvalued (evaluated later)."""
        cdef int i
        for i in range(n_eval):
            self.nodes[self.eval_nodes[i]].evaluated = 0

    cdef int relink(self, State s, int e) noexcept nogil:
        """Edge `e` leads to `s` (already played) but its child node is not `s`'s: point it to
        the node of `s` (created and valued when absent)."""
        cdef bint created
        cdef int child = self.lookup(skey(s), s._terminal, s._player, &created)
        if child < 0:
            return OUT_OF_MEMORY
        cdef Node* ch = &self.nodes[child]
        cdef action_t a
        cdef int rc
        if ch.terminal:
            if not ch.evaluated:
                self.set_terminal(ch, s)
        elif not ch.evaluated:
            a = s.undo()
            if self.evaluator.needs_encoding:
                s.apply(a)
                s.encode(self.enc)
                s.undo()
            self.eval_actions[0] = a
            rc = self.evaluator.evaluate(s, self.eval_actions, 1, self.enc, self.values)
            s.apply(a)
            if rc < 0:
                return EVAL_FAILED
            self.evaluations += 1
            ch = &self.nodes[child]
            ch.v = self.values[0] if ch.player == 0 else -self.values[0]
            ch.evaluated = 1
        self.edges[e].child = child
        return child

    cdef int iterate(self, State s, int idx) noexcept nogil:
        """One iteration from the state `s` whose node is `idx` (< 0: out of memory or the
        evaluator failed; the tree stays consistent)."""
        cdef Node* nd = &self.nodes[idx]
        cdef int e, rc, child
        if s._terminal:
            if not nd.evaluated:
                self.set_terminal(nd, s)
            return 0
        if nd.r:
            return 0
        if not nd.expanded:
            rc = self.expand(s, idx)
            if rc < 0:
                return rc
            if not self.descent:
                self.backup(idx)
                return 0
        e = self.select(idx, True)
        if e < 0:
            self.backup(idx)
            return 0
        s.apply(self.edges[e].action)
        child = self.edges[e].child
        # follow the current state's key, not only the index stored on the edge
        if self.nodes[child].key != skey(s) or self.nodes[child].terminal != s._terminal:
            child = self.relink(s, e)
            if child < 0:
                s.undo()
                return child
        self.edges[e].n += 1
        rc = self.iterate(s, child)
        s.undo()
        if rc < 0 and not self.descent:
            self.edges[e].n -= 1        # nothing below changed: as if never selected
            return rc
        self.backup(idx)
        return rc

    cdef int root_of(self, State s) except -2:
        """The node of `s` (created when absent; the table is emptied first when it is full)."""
        cdef bint created
        cdef int idx = self.lookup(skey(s), s._terminal, s._player, &created)
        if idx < 0:
            self._alloc_table(1024)
            idx = self.lookup(skey(s), s._terminal, s._player, &created)
            if idx < 0:
                raise SearchError("the allocator refused memory for the search table")
        return idx

    def search(self, State state, long iterations=0, double seconds=0.0):
        """Search from ``state`` until ``iterations`` iterations or ``seconds`` have been spent (the
        first limit reached; at least one iteration) or the root is resolved. Returns the number of
        iterations run. When the root moved on since the last search, only its subtree is kept
        (unless ``keep_tree``); when the table fills, its least visited parts are cut back; when
        even that cannot make room, the search stops early (``last_cut_short``)."""
        search_call(state, self.game, seconds, "bestfirst.search")
        if iterations <= 0 and seconds <= 0.0:
            raise ValueError("give a budget: iterations > 0 or seconds > 0")
        if state.game.spec != self.game.spec:
            raise ValueError(f"state of {state.game.spec} given to a search for {self.game.spec}")
        self.last_iterations = 0
        self.last_cut_short = False
        self.memory_full = False
        if state._terminal:
            return 0
        if self.rule != RULE_MINIMAX:
            if self.balanced < 0:
                self.balanced = state._player
            elif self.balanced != state._player:
                # the tree holds another balanced player's values: start afresh
                self._alloc_table(1024)
                self.balanced = state._player
        cdef State s = state.clone()
        cdef int root = self.root_of(s)
        if root != self.root and not self.keep_tree and self.root >= 0:
            root = self.compact(root)
        self.root = root
        cdef long it = 0
        cdef double t0 = now(), deadline = t0 + seconds
        cdef int rc = 0
        cdef bint use_time = seconds > 0.0
        cdef long max_it = iterations if iterations > 0 else -1
        cdef bint collected = False
        while True:
            with nogil:
                while True:
                    rc = self.iterate(s, root)
                    if rc < 0:
                        break
                    it += 1
                    collected = False
                    if self.nodes[root].r:
                        break
                    if max_it > 0 and it >= max_it:
                        break
                    if use_time and now() >= deadline:
                        break
            if rc != OUT_OF_MEMORY:
                break
            # the table is full: cut back its least visited parts and go on
            self.memory_full = True
            if collected:
                root = -1
            else:
                root = self.collect(self.root)
            if root < 0:
                root = self.root
                self.last_cut_short = True
                break
            self.root = root
            collected = True
            if use_time and now() >= deadline:
                break
        self.root = root
        self.iterations_done += it
        self.last_iterations = it
        self.seconds_used += now() - t0
        if rc == EVAL_FAILED:
            err, self.evaluator.error = self.evaluator.error, None
            raise SearchError(f"the evaluator failed: {err!r}") from err
        return it

    # ---- decisions -----------------------------------------------------------------------------
    cdef int decide(self, int root) noexcept nogil:
        cdef Node* nd = &self.nodes[root]
        cdef int e, best = -1
        cdef int player = nd.player
        cdef double s = 1.0 if player == 0 else -1.0
        cdef Node* ch
        cdef Node* bc
        cdef int kw, kb, lw, lb
        if self.take_proven_wins:
            # the shortest proven win (tracked apart from the chosen line: in margin-scored games
            # the best-valued win can be a longer one)
            for e in range(nd.first_edge, nd.first_edge + nd.n_edges):
                ch = &self.nodes[self.edges[e].child]
                if ch.proven != UNPROVEN and s * ch.proven > 0 and (
                        self.proven_win_depth < 0 or ch.proof_depth + 1 <= self.proven_win_depth):
                    if best < 0 or ch.proof_depth < self.nodes[self.edges[best].child].proof_depth:
                        best = e
            if best >= 0:
                return best
        if not self.safe_decision:
            return self.select(root, False)
        # safe decision: proven wins first, proven losses last, then most selected, then value
        for e in range(nd.first_edge, nd.first_edge + nd.n_edges):
            if best < 0:
                best = e
                continue
            ch = &self.nodes[self.edges[e].child]
            bc = &self.nodes[self.edges[best].child]
            kw = 1 if (ch.r and s * ch.c > 0) else 0
            kb = 1 if (bc.r and s * bc.c > 0) else 0
            if kw != kb:
                if kw > kb:
                    best = e
                continue
            lw = 1 if (ch.r and s * ch.c < 0) else 0
            lb = 1 if (bc.r and s * bc.c < 0) else 0
            if lw != lb:
                if lw < lb:
                    best = e
                continue
            if self.edges[e].n != self.edges[best].n:
                if self.edges[e].n > self.edges[best].n:
                    best = e
                continue
            if s * ch.v > s * bc.v:
                best = e
        return best

    cdef int expanded_root(self, State state) except -2:
        """The node of ``state``, expanded (making room when the table is full)."""
        if state._terminal:
            raise GameError("no move in a finished game")
        cdef int root = self.root_of(state)
        cdef State s
        cdef int rc
        if not self.nodes[root].expanded:
            s = state.clone()
            rc = self.expand(s, root)
            if rc == OUT_OF_MEMORY:
                root = self.compact(root)
                rc = self.expand(s, root)
            if rc == EVAL_FAILED:
                err, self.evaluator.error = self.evaluator.error, None
                raise SearchError(f"the evaluator failed: {err!r}") from err
            if rc < 0:
                return -1
            self.backup(root)
        return root

    def best_action(self, State state) -> int:
        """The final decision at ``state`` (searched before; expands it if it never was). Raises
        ``GameError`` when the game is over."""
        search_call(state, self.game, what="bestfirst.best_action")
        cdef int root = self.expanded_root(state)
        if root < 0:
            # not even the root's children fit in the table: any legal move
            self.last_cut_short = True
            return state.legal_actions_list()[0]
        return self.edges[self.decide(root)].action

    def analyse(self, State state) -> list:
        """Per root action: value and completion (from the player to move's point of view),
        resolution, selection count, resolution depth of the chosen line and depth of the shortest
        proven win (or longest proven loss), best first by the final decision."""
        search_call(state, self.game, what="bestfirst.analyse")
        if state._terminal:
            return []
        cdef int root = self.root_of(state)
        cdef Node* nd = &self.nodes[root]
        if not nd.expanded:
            return []
        cdef double s = 1.0 if nd.player == 0 else -1.0
        out = []
        cdef int e
        cdef Node* ch
        chosen = self.edges[self.decide(root)].action
        for e in range(nd.first_edge, nd.first_edge + nd.n_edges):
            ch = &self.nodes[self.edges[e].child]
            out.append({"action": self.edges[e].action, "value": s * ch.v, "completion": int(s * ch.c),
                        "resolved": bool(ch.r), "count": self.edges[e].n,
                        "resolution_depth": ch.res_depth + 1 if ch.r else None,
                        "proven": None if ch.proven == UNPROVEN else int(s * ch.proven),
                        "proof_depth": ch.proof_depth + 1 if ch.proven != UNPROVEN else None,
                        "chosen": self.edges[e].action == chosen})
        out.sort(key=lambda d: (not d["chosen"], -d["completion"], -d["value"], -d["count"]))
        return out

    def root_info(self, State state) -> dict:
        """Value, completion (mover's view) and resolution of ``state``'s node."""
        search_call(state, self.game, what="bestfirst.root_info")
        cdef int root = self.root_of(state)
        cdef Node* nd = &self.nodes[root]
        cdef double s = 1.0 if nd.player == 0 else -1.0
        return {"value": s * nd.v, "completion": int(s * nd.c), "resolved": bool(nd.r),
                "expanded": bool(nd.expanded)}

    # ---- self-play support (Descent training) -------------------------------------------------------
    cdef int ordinal_choice(self, int root, double e, double epsilon, uint64_t* rng) noexcept nogil:
        """Edge index of the move to play at `root`: with `epsilon` < 0, the ordinal distribution over
        the root actions ranked best first by (c, v) in the mover's view,
        P(rank i) = (e + (1 - e) / (n - i)) * (1 - sum_{j<i} P(rank j)) (i from 0);
        with `epsilon` >= 0, epsilon-greedy (uniform with probability epsilon, else the best)."""
        cdef Node* nd = &self.nodes[root]
        cdef int n = nd.n_edges, i, j, e_best
        cdef double s = 1.0 if nd.player == 0 else -1.0
        cdef double u, rest, p
        if n == 1:
            return nd.first_edge
        # rank edges (insertion sort on (c, v), descending, in the mover's view)
        cdef int* order = <int*>malloc(sizeof(int) * n)
        cdef int t
        for i in range(n):
            order[i] = nd.first_edge + i
        for i in range(1, n):
            t = order[i]
            j = i - 1
            while j >= 0 and self._rank_before(t, order[j], s):
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = t
        u = rng_uniform(rng)
        if epsilon >= 0.0:
            if u < epsilon:
                t = order[rng_below(rng, n)]
            else:
                t = order[0]
            free(order)
            return t
        rest = 1.0
        t = order[n - 1]
        for i in range(n):
            p = (e + (1.0 - e) / (n - i)) * rest
            if u < p:
                t = order[i]
                break
            u -= p
            rest -= p
        free(order)
        return t

    cdef inline bint _rank_before(self, int e, int f, double s) noexcept nogil:
        cdef Node* a = &self.nodes[self.edges[e].child]
        cdef Node* b = &self.nodes[self.edges[f].child]
        if s * a.c != s * b.c:
            return s * a.c > s * b.c
        return s * a.v > s * b.v

    def choose_selfplay_move(self, State state, double e, double epsilon, object rng_state):
        """The move to play in self-play at the searched ``state`` (see ``ordinal_choice``);
        ``rng_state`` is a one-element uint64 numpy array, advanced in place."""
        cdef int root = self.expanded_root(state)
        if root < 0:
            self.last_cut_short = True
            return state.legal_actions_list()[0]
        cdef uint64_t[::1] r = rng_state
        return self.edges[self.ordinal_choice(root, e, epsilon, &r[0])].action

    def collect_examples(self, State start):
        """Tree learning: every state of the tree below ``start`` that was expanded, and every
        terminal state reached, as ``(planes, value)`` with the value from the point of view of the
        player to move in that state (terminal states: f_t). Returns float32 arrays
        ``x`` (n, H, W, C) and ``y`` (n,), in a deterministic order (depth first)."""
        cdef State s = start.clone()
        cdef int root = self.root_of(s)
        cdef long n_nodes = self.n_nodes
        cdef unsigned char* seen = <unsigned char*>calloc(n_nodes, 1)
        if seen == NULL:
            raise MemoryError()
        cdef long count = 0
        with nogil:
            count = self._walk(s, root, seen, NULL, NULL, 0)
        memset(seen, 0, n_nodes)
        h, w, c = self.game.planes_shape
        x = np.zeros((count, h, w, c), dtype=np.float32)
        y = np.zeros(count, dtype=np.float32)
        cdef float[:, :, :, ::1] xv = x
        cdef float[::1] yv = y
        cdef long filled = 0
        if count > 0:
            with nogil:
                filled = self._walk(s, root, seen, &xv[0, 0, 0, 0], &yv[0], 0)
        free(seen)
        return x, y

    cdef long _walk(self, State s, int idx, unsigned char* seen, float* xs, float* ys,
                    long k) noexcept nogil:
        """Depth-first walk over the table from `idx` (state `s`); writes examples from slot k on
        when `xs` is given; returns the new count."""
        cdef Node* nd = &self.nodes[idx]
        cdef int e
        cdef double v
        if seen[idx]:
            return k
        seen[idx] = 1
        if s._terminal:
            if xs != NULL:
                s.encode(xs + k * self.enc_size)
                v = s.terminal_value()
                ys[k] = <float>(v if s._player == 0 else -v)
            return k + 1
        if not nd.expanded:
            return k
        if xs != NULL:
            s.encode(xs + k * self.enc_size)
            ys[k] = nd.v if s._player == 0 else -nd.v
        k += 1
        for e in range(nd.first_edge, nd.first_edge + nd.n_edges):
            s.apply(self.edges[e].action)
            k = self._walk(s, self.edges[e].child, seen, xs, ys, k)
            s.undo()
            nd = &self.nodes[idx]
        return k
