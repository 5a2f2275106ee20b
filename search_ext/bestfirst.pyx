"""One best-first engine for Unbounded Minimax with completion, Unbounded Minibal_n and Minibal_+,
and Descent (docs/ALGORITHMS.md sections 3-5; Minibal paper, Algorithms 1-4).

The variants differ only in two small rules, ``best_action`` and ``backup_resolution``, selected by
``rule``; ``descent`` switches the iteration from "expand one state" to "expand down to a terminal
state". The tree (a transposition table keyed by the search key and the terminal flag) and the
rules, and the iteration itself (``descent_core.Walk``, resumable), are the Descent core's, shared
with the self-play pool ``search_ext.selfplay.SelfPlayPool``; this module drives them for one game:
synchronously with its evaluator (``search``), or in steps whose children a driver values in one
network call shared with other games (``search_begin``, ``search_step``, ``search_supply``:
``descent.batched``), and makes the final decisions and keeps the proofs. The tree is kept across
the moves of one game (``reset()`` between games). Self-play and tree learning are the pool's.

Values are stored from the FIRST player's point of view (so one table serves both players and the
tree survives a change of the player to move); every rule converts to the view it needs. Nothing
assumes that players alternate: each node records its own player to move.
"""
from libc.stdlib cimport malloc, free
from search_ext.clock cimport now

import numpy as np


from games._state cimport State
from games import validate
from games.validate import count, search_call, state_arg
from search_ext.evaluators import check_evaluator
from search_ext.evaluators cimport Evaluator, ZeroEvaluator
from search_ext.descent_core cimport (
    Node, Table, Walk, MAX_INDEX, UNPROVEN, RULE_MINIMAX, RULE_MINIBAL_SWING, WALK_EVAL, WALK_FULL, skey, select,
    backup)
from search_ext.descent_core import RULES, BYTES_PER_STATE

from games.errors import GameError

DECISIONS = ("best", "safe")


cdef enum:
    OUT_OF_MEMORY = -2
    EVAL_FAILED = -1
    PUMP_DONE = 0
    PUMP_EVAL = 1
    PUMP_FULL = -3


class SearchError(RuntimeError):
    """The search could not continue (an evaluator failed, or the allocator refused memory)."""


# Table memory: ``max_mb`` caps the table at max_mb * 2**20 / BYTES_PER_STATE states (the core's
# estimate of a state's bytes: its node, two edges on average at most, its share of the hash slots).
DEFAULT_MAX_MB = 1024.0


cdef class BestFirstSearch:
    """Unbounded best-first minimax-family search with completion.

    Parameters: ``game`` (a GameInfo), ``rule`` (minimax | minibal_n | minibal_plus), ``descent``
    (expand to terminal states each iteration), ``evaluator``, ``decision`` (best | safe: the final
    move), ``take_proven_wins`` with ``proven_win_depth`` (-1: any depth) for Minibal, the memory
    caps ``max_nodes`` (states) and ``max_mb`` (megabytes; ``None``: no cap of that kind). When the
    root moves on, only the new root's subtree is kept and the rest freed (``_root_moved``).

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
    cdef long limit_nodes
    cdef int root                      # node of the last searched state; -1 none

    cdef Table t                       # the tree (the core's transposition table)
    cdef Walk w                        # the core's walk over it (its rules: the rule, the balanced
                                       # player, proofs on)

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
    # the search in progress (``_begin``, ``pump``)
    cdef bint active, in_iter, collected
    cdef long it, max_it
    cdef double budget_s, clock

    def __init__(self, game, rule="minimax", bint descent=False, evaluator=None,
                 decision="best", bint take_proven_wins=False, proven_win_depth=-1,
                 max_nodes=None, max_mb=DEFAULT_MAX_MB):
        # checked here, before any conversion to a C type (GameError, never OverflowError)
        if not isinstance(rule, str) or rule not in RULES:
            raise GameError(f"bestfirst: unknown rule {rule!r:.60} (known: {', '.join(RULES)})")
        if not isinstance(decision, str) or decision not in DECISIONS:
            raise GameError(f"bestfirst: unknown decision {decision!r:.60} (known: {', '.join(DECISIONS)})")
        check_evaluator(evaluator, "bestfirst: evaluator")
        proven_win_depth = validate.integer(proven_win_depth, "bestfirst: proven_win_depth", -1, 1000)
        if max_nodes is not None:
            max_nodes = validate.count(max_nodes, "bestfirst: max_nodes", 16, 2 ** 62)
        if max_mb is not None:
            max_mb = validate.real(max_mb, "bestfirst: max_mb", 0.0, 1e9, lo_open=True, hi_open=True)
        self.game = game
        self.rule = RULES[rule]
        self.descent = descent
        self.evaluator = evaluator if evaluator is not None else ZeroEvaluator()
        self.safe_decision = decision == "safe"
        self.take_proven_wins = take_proven_wins
        self.proven_win_depth = proven_win_depth
        self.max_nodes = max_nodes if max_nodes is not None else MAX_INDEX
        self.max_mb = max_mb if max_mb is not None else 0.0
        self.limit_nodes = min(self.max_nodes, MAX_INDEX)
        if max_mb is not None:
            self.limit_nodes = min(self.limit_nodes, max(16, <long>(max_mb * 1048576.0 / BYTES_PER_STATE)))
        self.t = Table(self.limit_nodes, 2 * self.limit_nodes)
        h, w, c = game.planes_shape
        self.enc_size = h * w * c
        n = game.branching
        cdef State s0 = game.new_state()
        # a path is never longer than a game
        self.w = Walk(self.t, n, s0.max_plies + 4, self.enc_size, rule=self.rule, proofs=True,
                      descent=descent, encode=self.evaluator.needs_encoding)
        self.values = <float*>malloc(sizeof(float) * n)
        self.enc = <float*>malloc(sizeof(float) * n * self.enc_size)
        if not (self.values and self.enc):
            raise MemoryError()
        self.root = -1

    def __dealloc__(self):
        free(self.values); free(self.enc)

    cdef int _alloc_table(self, long cap) except -1:
        """Empty the table and free its memory (keeping room for about `cap` states)."""
        try:
            self.t.alloc(cap)
        except MemoryError:
            raise SearchError("the allocator refused memory for the search table") from None
        self.root = -1
        return 0

    def reset(self):
        """Forget the tree (call between games) and free its memory."""
        self._alloc_table(1024)
        self.w.balance(-1)
        self.iterations_done = 0
        self.seconds_used = 0.0
        self.evaluations = 0
        self.last_iterations = 0
        self.last_cut_short = False
        self.memory_full = False
        self.collections = 0
        self.t.peak_nodes = 0

    @property
    def size(self) -> int:
        """Number of states in the table."""
        return self.t.n_nodes

    @property
    def peak_nodes(self) -> int:
        """The most states the table held since the last ``reset()``."""
        return self.t.peak_nodes

    @property
    def node_limit(self) -> int:
        """The most states the table may hold (from ``max_nodes`` and ``max_mb``)."""
        return self.limit_nodes

    @property
    def memory_bytes(self) -> int:
        """Bytes allocated for the table (nodes, edges, hash slots)."""
        return self.t.bytes_used()

    def subtree_size(self, state):
        """States reachable from ``state``'s node (0 when it is not in the table)."""
        return self._subtree_size(state_arg(state, self.game, 'bestfirst.subtree_size'))

    def _subtree_size(self, State state) -> int:
        """States reachable from ``state``'s node (0 when it is not in the table)."""
        cdef int idx = self.t.find(skey(state), state._terminal)
        if idx < 0:
            return 0
        cdef long reachable = self.t.mark_reachable(idx)
        if reachable < 0:
            raise MemoryError()
        return reachable

    def verify(self, state, bint all_reachable=True):
        """Check the table below ``state`` against the game (for tests): every edge leads to the
        node of the state its action reaches (same key, same terminal flag, terminal values exact),
        every node is found by its key, and (``all_reachable``) every node is reachable. Returns the
        states checked."""
        return self._verify(state_arg(state, self.game, 'bestfirst.verify'), all_reachable)

    def _verify(self, State state, bint all_reachable=True) -> int:
        """Check the table below ``state`` against the game (for tests): every edge leads to the
        node of the state its action reaches (same key, same terminal flag, terminal values exact),
        every node is found by its key, every node is reachable. Returns the states checked."""
        cdef int root = self.t.find(skey(state), state._terminal)
        if root < 0:
            raise AssertionError("the state is not in the table")
        cdef long i
        for i in range(self.t.n_nodes):
            if self.t.find(self.t.nodes[i].key, self.t.nodes[i].terminal) != i:
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
            nd = self.t.nodes[idx]
            if nd["key"] != skey(s) or bool(nd["terminal"]) != bool(s._terminal):
                raise AssertionError(f"node {idx} does not match the state {s.position()!r}")
            if nd["player"] != s._player or not (nd["evaluated"] == 1 or idx == root):
                raise AssertionError(f"node {idx}: wrong player or not valued")
            if s._terminal and (nd["v"] != <float>s.terminal_value() or nd["c"] != s._result):
                raise AssertionError(f"terminal node {idx} has a wrong value")
            if nd["expanded"]:
                legal = s.legal_actions_list()
                acts = [self.t.edges[e].action for e in range(nd["first_edge"], nd["first_edge"] + nd["n_edges"])]
                if sorted(acts) != legal:
                    raise AssertionError(f"node {idx}: edges {acts} are not the legal actions {legal}")
                for e in range(nd["first_edge"], nd["first_edge"] + nd["n_edges"]):
                    if not 0 <= self.t.edges[e].child < self.t.n_nodes:
                        raise AssertionError(f"edge {e} leads out of the table")
                    stack.append((self.t.edges[e].child, path + [self.t.edges[e].action]))
            for _ in path:
                s.undo()
        if all_reachable and not self.last_cut_short and len(seen) != self.t.n_nodes:
            raise AssertionError(f"{self.t.n_nodes - len(seen)} states are not reachable from the root")
        return len(seen)

    # ---- table upkeep --------------------------------------------------------------------------
    cdef int compact(self, int root) except -2:
        """Keep only the states reachable from `root`; free the rest. Returns the new index of
        `root`."""
        if self.t.mark_reachable(root) >= 0:
            root = self.t.compact(root)
            if root >= 0:
                self.root = root
                return root
        raise SearchError("the allocator refused memory to compact the search table")

    cpdef int _root_moved(self, int root) except -2:
        """The root moved on to node ``root`` since the last search: keep only the states it can
        reach (``compact``) and return its new index. (A subclass in the tests keeps every state,
        whatever the root: tests/kept_tree.py.)"""
        return self.compact(root)

    cdef int collect(self, int root) except -2:
        """The table is full: cut back its least visited subtrees (``Table.collect``). Returns the
        new index of `root`, or -1 when too little could be freed."""
        self.collections += 1
        root = self.t.collect(root)
        if root < 0:
            raise SearchError("the allocator refused memory to collect the search table")
        self.root = root
        return -1 if self.t.crowded() else root

    # ---- iteration -----------------------------------------------------------------------------
    cdef int root_of(self, State s) except -2:
        """The node of `s` (created when absent; the table is emptied first when it is full)."""
        cdef bint created
        cdef int idx = self.t.lookup(skey(s), s._terminal, s._player, &created)
        if idx < 0:
            self._alloc_table(1024)
            idx = self.t.lookup(skey(s), s._terminal, s._player, &created)
            if idx < 0:
                raise SearchError("the allocator refused memory for the search table")
        return idx

    def search(self, state, iterations=0, seconds=0.0):
        """Search from ``state`` until ``iterations`` iterations or ``seconds`` have been spent (the
        first limit reached; at least one iteration) or the root is resolved. Returns the number of
        iterations run. When the root moved on since the last search, only its subtree is kept
        (``_root_moved``); when the table fills, its least visited parts are cut back; when
        even that cannot make room, the search stops early (``last_cut_short``)."""
        return self._search(state_arg(state, self.game, 'bestfirst.search'),
                            count(iterations, 'bestfirst.search: iterations', 0),
                            validate.seconds(seconds, 'bestfirst.search: seconds', allow_zero=True))

    def _search(self, State state, long iterations=0, double seconds=0.0):
        """Search from ``state`` until ``iterations`` iterations or ``seconds`` have been spent (the
        first limit reached; at least one iteration) or the root is resolved. Returns the number of
        iterations run. When the root moved on since the last search, only its subtree is kept
        (``_root_moved``); when the table fills, its least visited parts are cut back; when
        even that cannot make room, the search stops early (``last_cut_short``)."""
        if not self._begin(state, iterations, seconds, "bestfirst.search"):
            return 0
        self.pump(self.enc, True)
        return self.last_iterations

    # ---- the search, resumable: the same walk driven synchronously or in batches ----------------
    cdef bint _begin(self, State state, long iterations, double seconds, str what) except -1:
        """Start a search from ``state`` (see ``search``); False when there is nothing to search
        (the game is over)."""
        search_call(state, self.game, seconds, what)
        self._drop()
        if iterations <= 0 and seconds <= 0.0:
            raise ValueError("give a budget: iterations > 0 or seconds > 0")
        if state.game.spec != self.game.spec:
            raise ValueError(f"state of {state.game.spec} given to a search for {self.game.spec}")
        self.last_iterations = 0
        self.last_cut_short = False
        self.memory_full = False
        self.active = False
        if state._terminal:
            return False
        if self.rule != RULE_MINIMAX:
            if self.w.rules.balanced < 0:
                self.w.balance(state._player)
            elif self.w.rules.balanced != state._player:
                # the tree holds another balanced player's values: start afresh
                self._alloc_table(1024)
                self.w.balance(state._player)
        if self.rule == RULE_MINIBAL_SWING:
            self._swing(state)
        cdef State s = state.clone()
        self.w.place(s)
        cdef int root = self.root_of(s)
        if root != self.root and self.root >= 0:
            root = self._root_moved(root)
        self.root = root
        self.it = 0
        self.max_it = iterations if iterations > 0 else -1
        self.budget_s = seconds
        self.clock = 0.0
        self.collected = False
        self.in_iter = False
        self.active = True
        return True

    cdef int _swing(self, State state) except -1:
        """Minibal swing (docs/ALGORITHMS.md section 4): Minibal_+ (lean +1) until the search has
        proven the position won for the balanced player; from a proven win it leans to values
        <= 0 (its mirror), giving the win back, until the win is no longer proven. A new lean
        starts a fresh table, since the tree's values were backed up under the other one."""
        cdef int idx = self.t.find(skey(state), state._terminal)
        cdef int lean = 1
        cdef int win = 1 if self.w.rules.balanced == 0 else -1
        if idx >= 0 and self.t.nodes[idx].proven == win:
            lean = -1
        if lean != self.w.rules.lean:
            self._alloc_table(1024)
            self.w.rules.lean = lean
        return 0

    @property
    def lean(self) -> int:
        """Minibal swing's lean: +1 values >= 0 preferred, -1 values <= 0."""
        return self.w.rules.lean

    cdef void _drop(self):
        """Give up a stepped search left in the middle of an iteration (its driver went away): the
        iteration is undone (its queued children unvalued, its counts given back)."""
        if self.active and self.in_iter:
            self.w.abort()
        self.in_iter = False
        self.active = False

    cdef int _pump(self, float* enc, bint sync) noexcept nogil:
        """Run the search's iterations until it is over (PUMP_DONE), the table is full (PUMP_FULL),
        the evaluator failed (EVAL_FAILED) or, unless `sync` (then the evaluator values them at
        once), children wait for values (PUMP_EVAL: ``w.n_pend`` of them encoded to `enc`). The
        time spent is added to ``clock``."""
        cdef double t0 = now()
        cdef int rc
        cdef bint use_time = self.budget_s > 0.0
        while True:
            if not self.in_iter:
                self.w.begin(self.root)
                self.in_iter = True
            rc = self.w.step(enc)
            if rc == WALK_EVAL:
                if not sync:
                    self.clock += now() - t0
                    return PUMP_EVAL
                rc = self.evaluator.evaluate(self.w.cur, self.w.pend_acts, self.w.n_pend, enc, self.values)
                if rc < 0:
                    self.w.abort()
                    self.in_iter = False
                    self.clock += now() - t0
                    return EVAL_FAILED
                self.evaluations += self.w.n_pend
                self.w.supply(self.values)
                continue
            self.in_iter = False
            if rc == WALK_FULL:
                self.clock += now() - t0
                return PUMP_FULL
            self.it += 1
            self.collected = False
            if (self.t.nodes[self.root].r or (self.max_it > 0 and self.it >= self.max_it)
                    or (use_time and self.clock + (now() - t0) >= self.budget_s)):
                self.clock += now() - t0
                return PUMP_DONE

    cdef int pump(self, float* enc, bint sync) except -2:
        """``_pump`` and what needs the interpreter: a full table is cut back (``collect``) and the
        search goes on, or stops (``last_cut_short``) when that frees too little; at the end the
        counts are updated. Returns the pending children (> 0) or 0 when the search is over."""
        cdef int rc
        cdef int root
        while True:
            with nogil:
                rc = self._pump(enc, sync)
            if rc == PUMP_EVAL:
                return self.w.n_pend
            if rc != PUMP_FULL:
                break
            # the table is full: cut back its least visited parts and go on
            self.memory_full = True
            root = -1 if self.collected else self.collect(self.root)
            if root < 0:
                self.last_cut_short = True
                break
            self.collected = True
            if self.budget_s > 0.0 and self.clock >= self.budget_s:
                break
        self.active = False
        self.iterations_done += self.it
        self.last_iterations = self.it
        self.seconds_used += self.clock
        if rc == EVAL_FAILED:
            err, self.evaluator.error = self.evaluator.error, None
            raise SearchError(f"the evaluator failed: {err!r}") from err
        return 0

    def search_begin(self, state, iterations=0, seconds=0.0):
        """Start a search that a driver runs in steps (``search_step``, ``search_supply``), valuing
        the children it asks for with its own network call, shared with other searches (the
        batched game driver, ``descent.batched``). The budget is ``search``'s; the time budget
        counts the time of the steps plus what ``search_charge`` adds (the driver's share of its
        network calls). Returns False when there is nothing to search (the game is over)."""
        return self._begin(state_arg(state, self.game, 'bestfirst.search_begin'),
                           count(iterations, 'bestfirst.search_begin: iterations', 0),
                           validate.seconds(seconds, 'bestfirst.search_begin: seconds', allow_zero=True),
                           "bestfirst.search_begin")

    def search_step(self, batch, offset):
        """Run the search begun by ``search_begin`` until it needs values or is over. Returns the
        number n of children waiting for values, their planes written to ``batch[offset:offset+n]``
        (``batch``: a C-contiguous float32 array (N, H, W, C), room for ``game.branching`` states
        from ``offset``), or 0 when the search is over (then ``best_action``). Requires an
        evaluator that reads planes (a network's). The same as ``step``."""
        return self.step(batch, offset)

    def step(self, batch, offset):
        """``search_step``: the driver's step (the batcher, ``search_ext.batcher``, through
        ``descent.batched``). Its checks are a few comparisons, against a network call a round."""
        if not isinstance(batch, np.ndarray) or batch.dtype != np.float32 or batch.ndim != 4 \
                or not batch.flags.c_contiguous or not batch.flags.writeable \
                or batch.shape[1:] != tuple(self.game.planes_shape):
            raise GameError(f"bestfirst.step: batch must be a writable C-contiguous float32 array of shape "
                            f"(N, {', '.join(map(str, self.game.planes_shape))})")
        offset = validate.integer(offset, "bestfirst.step: offset", 0, 2 ** 31 - 1)
        if offset + self.game.branching > batch.shape[0]:
            raise GameError("bestfirst.step: the batch has no room for the children at this offset")
        if not self.active:
            raise GameError("bestfirst.step: no search in progress (search_begin first)")
        if not self.evaluator.needs_encoding:
            raise GameError("bestfirst.step: the evaluator reads no planes (a network's does)")
        return self._step(batch, offset)

    cdef int _step(self, float[:, :, :, ::1] batch, int offset) except -2:
        return self.pump(&batch[offset, 0, 0, 0], False)

    def search_supply(self, values, offset):
        """Hand the values of the children asked for by the last ``search_step`` to the search
        (``values[offset:offset+n]``: a float32 vector, each from its state's mover's point of
        view). The same as ``supply``."""
        self.supply(values, offset)

    def supply(self, values, offset):
        """``search_supply``: the driver's supply of the values its last ``step`` asked for."""
        if not isinstance(values, np.ndarray) or values.dtype != np.float32 or values.ndim != 1 \
                or not values.flags.c_contiguous:
            raise GameError("bestfirst.supply: values must be a contiguous float32 vector")
        offset = validate.integer(offset, "bestfirst.supply: offset", 0, 2 ** 31 - 1)
        if not self.active or self.w.n_pend == 0:
            raise GameError("bestfirst.supply: no values are waiting")
        if offset + self.w.n_pend > values.shape[0]:
            raise GameError("bestfirst.supply: too few values")
        self._supply(values, offset)

    cdef void _supply(self, const float[::1] values, int offset):
        self.evaluations += self.w.n_pend
        self.w.supply(&values[offset])

    def search_charge(self, seconds):
        """Add ``seconds`` to the search's clock (its share of a network call made for it)."""
        self.clock += validate.real(seconds, "bestfirst.search_charge: seconds", 0.0, 1e9)

    @property
    def searching(self) -> bool:
        """A search begun by ``search_begin`` is not over yet."""
        return bool(self.active)

    # ---- decisions -----------------------------------------------------------------------------
    cdef int decide(self, int root) noexcept nogil:
        cdef Node* nd = &self.t.nodes[root]
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
                ch = &self.t.nodes[self.t.edges[e].child]
                if ch.proven != UNPROVEN and s * ch.proven > 0 and (
                        self.proven_win_depth < 0 or ch.proof_depth + 1 <= self.proven_win_depth):
                    if best < 0 or ch.proof_depth < self.t.nodes[self.t.edges[best].child].proof_depth:
                        best = e
            if best >= 0:
                return best
        if not self.safe_decision:
            return select(self.t, &self.w.rules, root, False)
        # safe decision: proven wins first, proven losses last, then most selected, then value
        for e in range(nd.first_edge, nd.first_edge + nd.n_edges):
            if best < 0:
                best = e
                continue
            ch = &self.t.nodes[self.t.edges[e].child]
            bc = &self.t.nodes[self.t.edges[best].child]
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
            if self.t.edges[e].n != self.t.edges[best].n:
                if self.t.edges[e].n > self.t.edges[best].n:
                    best = e
                continue
            if s * ch.v > s * bc.v:
                best = e
        return best

    cdef int expanded_root(self, State state) except -2:
        """The node of ``state``, expanded (making room when the table is full)."""
        if state._terminal:
            raise GameError("no move in a finished game")
        self._drop()
        cdef int root = self.root_of(state)
        cdef int rc
        if not self.t.nodes[root].expanded:
            # the walk's expansion alone (the root may be resolved: cut back to its value)
            self.w.place(state.clone())
            rc = self.expand_root(root)
            if rc == OUT_OF_MEMORY:
                root = self.compact(root)
                rc = self.expand_root(root)
            if rc == EVAL_FAILED:
                err, self.evaluator.error = self.evaluator.error, None
                raise SearchError(f"the evaluator failed: {err!r}") from err
            if rc < 0:
                return -1
            backup(self.t, &self.w.rules, root)
        return root

    cdef int expand_root(self, int root) noexcept nogil:
        """Expand `root` (the walker's state) with the walk's ``expand``, its children valued at
        once: 0, OUT_OF_MEMORY or EVAL_FAILED."""
        cdef int rc = self.w.expand_alone(root, self.enc)
        if rc == WALK_FULL:
            return OUT_OF_MEMORY
        if rc == WALK_EVAL:
            rc = self.evaluator.evaluate(self.w.cur, self.w.pend_acts, self.w.n_pend, self.enc, self.values)
            if rc < 0:
                self.w.unqueue()
                return EVAL_FAILED
            self.evaluations += self.w.n_pend
            self.w.supply(self.values)
        self.w.end_alone()
        return 0

    def best_action(self, state):
        """The final decision at ``state`` (searched before; expands it if it never was). Raises
        ``GameError`` when the game is over."""
        return self._best_action(state_arg(state, self.game, 'bestfirst.best_action'))

    def _best_action(self, State state) -> int:
        """The final decision at ``state`` (searched before; expands it if it never was). Raises
        ``GameError`` when the game is over."""
        search_call(state, self.game, what="bestfirst.best_action")
        cdef int root = self.expanded_root(state)
        if root < 0:
            # not even the root's children fit in the table: any legal move
            self.last_cut_short = True
            return state.legal_actions_list()[0]
        return self.t.edges[self.decide(root)].action

    def analyse(self, state):
        """Per root action: value and completion (from the player to move's point of view),
        resolution, selection count, resolution depth of the chosen line and depth of the shortest
        proven win (or longest proven loss), best first by the final decision."""
        return self._analyse(state_arg(state, self.game, 'bestfirst.analyse'))

    def _analyse(self, State state) -> list:
        """Per root action: value and completion (from the player to move's point of view),
        resolution, selection count, resolution depth of the chosen line and depth of the shortest
        proven win (or longest proven loss), best first by the final decision."""
        search_call(state, self.game, what="bestfirst.analyse")
        if state._terminal:
            return []
        cdef int root = self.root_of(state)
        cdef Node* nd = &self.t.nodes[root]
        if not nd.expanded:
            return []
        cdef double s = 1.0 if nd.player == 0 else -1.0
        out = []
        cdef int e
        cdef Node* ch
        chosen = self.t.edges[self.decide(root)].action
        for e in range(nd.first_edge, nd.first_edge + nd.n_edges):
            ch = &self.t.nodes[self.t.edges[e].child]
            out.append({"action": self.t.edges[e].action, "value": s * ch.v, "completion": int(s * ch.c),
                        "resolved": bool(ch.r), "count": self.t.edges[e].n,
                        "resolution_depth": ch.res_depth + 1 if ch.r else None,
                        "proven": None if ch.proven == UNPROVEN else int(s * ch.proven),
                        "proof_depth": ch.proof_depth + 1 if ch.proven != UNPROVEN else None,
                        "chosen": self.t.edges[e].action == chosen})
        out.sort(key=lambda d: (not d["chosen"], -d["completion"], -d["value"], -d["count"]))
        return out

    def root_info(self, state):
        """Value, completion (mover's view) and resolution of ``state``'s node."""
        return self._root_info(state_arg(state, self.game, 'bestfirst.root_info'))

    def _root_info(self, State state) -> dict:
        """Value, completion (mover's view) and resolution of ``state``'s node."""
        search_call(state, self.game, what="bestfirst.root_info")
        cdef int root = self.root_of(state)
        cdef Node* nd = &self.t.nodes[root]
        cdef double s = 1.0 if nd.player == 0 else -1.0
        return {"value": s * nd.v, "completion": int(s * nd.c), "resolved": bool(nd.r),
                "expanded": bool(nd.expanded)}
