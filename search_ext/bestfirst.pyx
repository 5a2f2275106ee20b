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
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset
from libc.math cimport fabs
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

import numpy as np

from games._state cimport State
from games.validate import search_call
from games._typedefs cimport action_t, hash_t, uint64_t, rng_below, rng_uniform
from search_ext.evaluators cimport Evaluator, ZeroEvaluator

# Rules ------------------------------------------------------------------------------------------------
cdef enum:
    RULE_MINIMAX = 0
    RULE_MINIBAL_N = 1
    RULE_MINIBAL_PLUS = 2

RULES = {"minimax": RULE_MINIMAX, "minibal_n": RULE_MINIBAL_N, "minibal_plus": RULE_MINIBAL_PLUS}
DECISIONS = ("best", "safe")


cdef struct Node:
    hash_t key
    float v             # value, first player's view
    signed char c       # completion in {-1, 0, 1}, first player's view
    signed char r       # resolved
    signed char player  # player to move
    signed char expanded
    signed char evaluated
    int first_edge
    int n_edges
    int res_depth       # plies to the terminal state behind a resolved value


cdef struct Edge:
    action_t action
    int child
    int n               # selection count n_{s,a}


cdef inline double now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


class SearchError(RuntimeError):
    """The search could not continue (an evaluator failed, or memory ran out)."""


cdef class BestFirstSearch:
    """Unbounded best-first minimax-family search with completion.

    Parameters: ``game`` (a GameInfo), ``rule`` (minimax | minibal_n | minibal_plus), ``descent``
    (expand to terminal states each iteration), ``evaluator``, ``decision`` (best | safe: the final
    move), ``take_proven_wins`` with ``proven_win_depth`` (-1: any depth) for Minibal, and
    ``max_nodes`` (memory cap; the search stops when it is reached).
    """
    cdef readonly object game
    cdef readonly int rule
    cdef readonly bint descent
    cdef readonly Evaluator evaluator
    cdef readonly bint safe_decision
    cdef readonly bint take_proven_wins
    cdef readonly int proven_win_depth
    cdef readonly long max_nodes
    cdef int balanced                  # the balanced player (Minibal), fixed for a game; -1 unset

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

    def __init__(self, game, str rule="minimax", bint descent=False, Evaluator evaluator=None,
                 str decision="best", bint take_proven_wins=False, int proven_win_depth=-1,
                 long max_nodes=2_000_000):
        if rule not in RULES:
            raise ValueError(f"unknown rule {rule!r} (known: {', '.join(RULES)})")
        if decision not in DECISIONS:
            raise ValueError(f"unknown decision {decision!r} (known: {', '.join(DECISIONS)})")
        if max_nodes < 16:
            raise ValueError(f"max_nodes must be >= 16, got {max_nodes}")
        self.game = game
        self.rule = RULES[rule]
        self.descent = descent
        self.evaluator = evaluator if evaluator is not None else ZeroEvaluator()
        self.safe_decision = decision == "safe"
        self.take_proven_wins = take_proven_wins
        self.proven_win_depth = proven_win_depth
        self.max_nodes = max_nodes
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
        self.cap_nodes = cap
        self.cap_edges = cap * 4
        self.cap_slots = cap * 2
        self.nodes = <Node*>malloc(sizeof(Node) * self.cap_nodes)
        self.edges = <Edge*>malloc(sizeof(Edge) * self.cap_edges)
        self.slots = <int*>malloc(sizeof(int) * self.cap_slots)
        if not (self.nodes and self.edges and self.slots):
            raise MemoryError()
        cdef long i
        for i in range(self.cap_slots):
            self.slots[i] = -1
        self.n_nodes = 0
        self.n_edges = 0
        self.balanced = -1
        return 0

    def reset(self):
        """Forget the tree (call between games)."""
        self._alloc_table(1024)
        self.iterations_done = 0
        self.seconds_used = 0.0
        self.evaluations = 0

    @property
    def size(self) -> int:
        """Number of states in the table."""
        return self.n_nodes

    # ---- table --------------------------------------------------------------------------------
    cdef int _grow_slots(self) noexcept nogil:
        cdef long new_cap = self.cap_slots * 2
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

    cdef int lookup(self, hash_t key, bint* created) noexcept nogil:
        """Index of the node of `key`, created (unvalued) when absent; -1 when out of memory."""
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
        if self.n_nodes == self.cap_nodes:
            grown = <Node*>realloc(self.nodes, sizeof(Node) * self.cap_nodes * 2)
            if grown == NULL:
                return -1
            self.nodes = grown
            self.cap_nodes *= 2
        idx = <int>self.n_nodes
        self.n_nodes += 1
        self.slots[j] = idx
        cdef Node* nd = &self.nodes[idx]
        nd.key = key
        nd.v = 0.0
        nd.c = 0
        nd.r = 0
        nd.player = 0
        nd.expanded = 0
        nd.evaluated = 0
        nd.first_edge = 0
        nd.n_edges = 0
        nd.res_depth = 0
        created[0] = True
        if self.n_nodes * 2 > self.cap_slots:
            if self._grow_slots() < 0:
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
        """c_s, v_s <- those of best_action(s, actions(s)); r_s <- backup_resolution(s)."""
        cdef int e = self.select(idx, False)
        if e < 0:
            return
        cdef Node* ch = &self.nodes[self.edges[e].child]
        cdef Node* nd = &self.nodes[idx]
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

    # ---- iteration -----------------------------------------------------------------------------
    cdef int expand(self, State s, int idx) noexcept nogil:
        cdef int n = s.legal_actions(self.scratch)
        cdef long first = self.alloc_edges(n)
        if first < 0:
            return -2
        cdef int i, child, n_eval = 0, rc
        cdef bint created
        cdef Node* ch
        cdef action_t a
        for i in range(n):
            a = self.scratch[i]
            s.apply(a)
            child = self.lookup(s._hash, &created)
            if child < 0:
                s.undo()
                return -2
            ch = &self.nodes[child]
            if created:
                ch.player = <signed char>s._player
            if s._terminal:
                ch.r = 1
                ch.c = <signed char>s._result
                ch.v = <float>s.terminal_value()
                ch.res_depth = 0
                ch.evaluated = 1
            elif not ch.evaluated:
                ch.evaluated = 1
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
                return -1
            self.evaluations += n_eval
            for i in range(n_eval):
                ch = &self.nodes[self.eval_nodes[i]]
                ch.v = self.values[i] if ch.player == 0 else -self.values[i]
        cdef Node* nd = &self.nodes[idx]
        nd.first_edge = <int>first
        nd.n_edges = n
        nd.expanded = 1
        return 0

    cdef int iterate(self, State s, int idx) noexcept nogil:
        """One iteration from the state `s` whose node is `idx` (returns -2 when out of memory)."""
        cdef Node* nd = &self.nodes[idx]
        cdef int e, rc
        if s._terminal:
            nd.r = 1
            nd.c = <signed char>s._result
            nd.v = <float>s.terminal_value()
            nd.res_depth = 0
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
        self.edges[e].n += 1
        s.apply(self.edges[e].action)
        rc = self.iterate(s, self.edges[e].child)
        s.undo()
        if rc < 0:
            return rc
        self.backup(idx)
        return 0

    cdef int root_of(self, State s) except -1:
        cdef bint created
        cdef int idx = self.lookup(s._hash, &created)
        if idx < 0:
            raise SearchError(f"the search table is full ({self.max_nodes} states); raise max_nodes")
        if created:
            self.nodes[idx].player = s._player
        return idx

    def search(self, State state, long iterations=0, double seconds=0.0):
        """Search from ``state`` until ``iterations`` iterations or ``seconds`` have been spent (the
        first limit reached; at least one iteration) or the root is resolved. Returns the number of
        iterations run."""
        search_call(state, self.game, seconds, "bestfirst.search")
        if iterations <= 0 and seconds <= 0.0:
            raise ValueError("give a budget: iterations > 0 or seconds > 0")
        if state.game.spec != self.game.spec:
            raise ValueError(f"state of {state.game.spec} given to a search for {self.game.spec}")
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
        cdef long it = 0
        cdef double t0 = now(), deadline = t0 + seconds
        cdef int rc = 0
        cdef bint use_time = seconds > 0.0
        cdef long max_it = iterations if iterations > 0 else -1
        with nogil:
            while True:
                rc = self.iterate(s, root)
                if rc < 0:
                    break
                it += 1
                if self.nodes[root].r:
                    break
                if max_it > 0 and it >= max_it:
                    break
                if use_time and now() >= deadline:
                    break
        self.iterations_done += it
        self.seconds_used += now() - t0
        if rc == -1:
            err, self.evaluator.error = self.evaluator.error, None
            raise SearchError(f"the evaluator failed: {err!r}") from err
        # rc == -2: out of memory or max_nodes reached: stop quietly with what has been searched
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
            for e in range(nd.first_edge, nd.first_edge + nd.n_edges):
                ch = &self.nodes[self.edges[e].child]
                if ch.r and s * ch.c > 0 and (self.proven_win_depth < 0
                                              or ch.res_depth + 1 <= self.proven_win_depth):
                    if best < 0 or ch.res_depth < self.nodes[self.edges[best].child].res_depth:
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

    def best_action(self, State state) -> int:
        """The final decision at ``state`` (searched before; expands it if it never was)."""
        search_call(state, self.game, what="bestfirst.best_action")
        if state._terminal:
            raise ValueError("no move in a terminal state")
        cdef int root = self.root_of(state)
        cdef State s
        if not self.nodes[root].expanded:
            s = state.clone()
            if self.expand(s, root) < 0:
                raise SearchError("cannot expand the root")
            self.backup(root)
        return self.edges[self.decide(root)].action

    def analyse(self, State state) -> list:
        """Per root action: value and completion (from the player to move's point of view),
        resolution, selection count and resolution depth, best first by the final decision."""
        search_call(state, self.game, what="bestfirst.analyse")
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
        cdef int root = self.root_of(state)
        cdef State s
        if not self.nodes[root].expanded:
            s = state.clone()
            if self.expand(s, root) < 0:
                raise SearchError("cannot expand the root")
            self.backup(root)
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
