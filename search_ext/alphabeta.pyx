"""Alpha-beta with iterative deepening, a transposition table and move ordering (seed 004), and
with a playout evaluator the Hybrid Minimax-MCTS of seed 003 (section 4).

Values are from the point of view of the player to move and lie in [-1, 1]; terminal states get
f_t. Nothing assumes alternation: a child with the same player to move is searched with the same
window, otherwise with the negated one. Leaves are valued one batch per frontier node: at depth 1
every non-terminal child goes to the evaluator in one call (so networks are called in batches).
Move ordering: the transposition table's move first, then the history heuristic.

Scales: a ``bounded`` evaluator (zero, playouts) values leaves strictly inside the decided terminal
values (``evaluators.proven_floor``), so a proven win beats every estimate and a proven loss is below
every one. Iterative deepening stops early only on a proof: when the last iteration reached no
evaluated leaf (the whole tree was searched), or, in the depth-scored games with a bounded evaluator,
when the root value is a proven win or loss (|v| >= proven_floor; a faster result would have been
found at a smaller depth). An estimate, even all playouts won, never counts as a proof.
"""
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset
from search_ext.clock cimport now

from games._state cimport State
from games import validate
from games.validate import count, search_call, state_arg
from search_ext.evaluators import check_evaluator
from games._typedefs cimport action_t, hash_t
from search_ext.evaluators cimport Evaluator, ZeroEvaluator, proven_floor

cdef enum:
    EXACT = 0
    LOWER = 1
    UPPER = 2

cdef double INF = 1e9


cdef struct TTEntry:
    hash_t key
    float value
    signed char depth
    signed char flag
    signed char horizon     # the stored value rests on evaluated (non-terminal) leaves
    action_t move


cdef class AlphaBeta:
    """Iterative-deepening alpha-beta. Budgets: ``max_depth``, ``seconds`` and/or ``nodes``."""
    cdef readonly object game
    cdef readonly Evaluator evaluator
    cdef TTEntry* tt
    cdef long tt_mask
    cdef unsigned int* history
    cdef action_t* moves          # per-ply buffers: (max_plies + 2) * num_actions
    cdef float* values
    cdef action_t* eval_actions
    cdef int* eval_index
    cdef float* enc
    cdef int enc_size
    cdef int stride
    cdef double deadline
    cdef long node_limit
    cdef readonly long nodes
    cdef bint stopped
    cdef int error
    cdef readonly int depth_reached
    cdef action_t best_root
    cdef int ply_cap
    cdef bint hit_horizon        # an evaluated (non-terminal) leaf was reached this iteration
    cdef readonly double win_floor   # the least |f_t| of a decided terminal state
    cdef bint depth_scored       # f_t decreases with the ply (a proven result cannot improve deeper)

    def __init__(self, game, evaluator=None, tt_bits=20):
        # checked here, before any conversion to a C type (GameError, never OverflowError)
        check_evaluator(evaluator, "alphabeta: evaluator")
        tt_bits = validate.integer(tt_bits, "alphabeta: tt_bits", 10, 28)
        self.game = game
        self.evaluator = evaluator if evaluator is not None else ZeroEvaluator()
        self.win_floor = proven_floor(game.score_kind, game.max_plies)
        self.depth_scored = game.score_kind in (0, 1)
        self.tt = <TTEntry*>calloc(1 << tt_bits, sizeof(TTEntry))
        self.tt_mask = (1 << tt_bits) - 1
        self.stride = game.branching
        self.history = <unsigned int*>calloc(game.num_actions, sizeof(unsigned int))
        self.moves = <action_t*>malloc(sizeof(action_t) * (game.max_plies + 2) * self.stride)
        self.values = <float*>malloc(sizeof(float) * 2 * self.stride)
        self.eval_actions = <action_t*>malloc(sizeof(action_t) * self.stride)
        self.eval_index = <int*>malloc(sizeof(int) * self.stride)
        h, w, c = game.planes_shape
        self.enc_size = h * w * c
        self.enc = <float*>malloc(sizeof(float) * self.stride * self.enc_size)
        if not (self.tt and self.history and self.moves and self.values and self.eval_actions
                and self.eval_index and self.enc):
            raise MemoryError()

    def __dealloc__(self):
        free(self.tt); free(self.history); free(self.moves); free(self.values)
        free(self.eval_actions); free(self.eval_index); free(self.enc)

    def reset(self):
        """Clear the transposition table and the history heuristic (between games)."""
        memset(self.tt, 0, sizeof(TTEntry) * (self.tt_mask + 1))
        memset(self.history, 0, sizeof(unsigned int) * self.game.num_actions)

    cdef inline bint out_of_budget(self, int depth) noexcept nogil:
        if self.node_limit > 0 and self.nodes >= self.node_limit:
            return True
        # the clock is read every 256 nodes, and after every frontier batch (which may be costly)
        if self.deadline > 0 and ((self.nodes & 255) == 0 or depth == 2) and now() >= self.deadline:
            return True
        return False

    cdef void order(self, action_t* mv, int n, action_t first) noexcept nogil:
        """TT move first, then by decreasing history score (insertion sort: n is small)."""
        cdef int i, j
        cdef action_t t
        cdef unsigned int key
        for i in range(n):
            if mv[i] == first:
                mv[i] = mv[0]
                mv[0] = first
                break
        cdef int start = 1 if (n > 0 and mv[0] == first) else 0
        for i in range(start + 1, n):
            t = mv[i]
            key = self.history[t]
            j = i - 1
            while j >= start and self.history[mv[j]] < key:
                mv[j + 1] = mv[j]
                j -= 1
            mv[j + 1] = t

    cdef int children_values(self, State s, action_t* mv, int n, float* vals) noexcept nogil:
        """Value every child (mover's view of `s`): terminal ones exactly (f_t), the others in one
        evaluator batch. Returns -1 if the evaluator failed."""
        cdef int i, k = 0, me = s._player
        cdef double v
        cdef float* ev = self.values + self.stride
        for i in range(n):
            s.apply(mv[i])
            self.nodes += 1
            if s._terminal:
                v = s.terminal_value()
                vals[i] = <float>(v if me == 0 else -v)
            else:
                if self.evaluator.needs_encoding:
                    s.encode(self.enc + <long>k * self.enc_size)
                self.eval_actions[k] = mv[i]
                self.eval_index[k] = i
                vals[i] = <float>(1.0 if s._player == me else -1.0)   # sign, times the value below
                k += 1
            s.undo()
        if k > 0:
            self.hit_horizon = True
            if self.evaluator.evaluate(s, self.eval_actions, k, self.enc, ev) < 0:
                return -1
            for i in range(k):
                vals[self.eval_index[i]] = vals[self.eval_index[i]] * ev[i]
        return 0

    cdef double frontier(self, State s, int ply, action_t* best) noexcept nogil:
        """A depth-1 node: the best child value, all children valued in one batch."""
        cdef action_t* mv = self.moves + ply * self.stride
        cdef int n = s.legal_actions(mv)
        cdef int i
        cdef double bestv = -INF
        if self.children_values(s, mv, n, self.values) < 0:
            self.error = 1
            return 0.0
        for i in range(n):
            if self.values[i] > bestv:
                bestv = self.values[i]
                best[0] = mv[i]
        return bestv

    cdef double negamax(self, State s, int depth, double alpha, double beta, int ply) noexcept nogil:
        cdef double v, bestv, a0 = alpha
        cdef TTEntry* e
        cdef action_t tt_move = -1, best = -1
        cdef action_t* mv
        cdef int n, i, me
        if s._terminal:
            v = s.terminal_value()
            return v if s._player == 0 else -v
        cdef hash_t key = s._hash ^ s._hist_key     # history-correct: repetition draws differ by path
        e = &self.tt[key & <hash_t>self.tt_mask]
        if e.key == key and e.depth > 0:
            tt_move = e.move
            if e.depth >= depth and ply > 0:
                # a cutoff from the table: the value may rest on a horizon (no exactness claim)
                if e.flag == EXACT or (e.flag == LOWER and e.value >= beta) or (
                        e.flag == UPPER and e.value <= alpha):
                    if e.horizon:
                        self.hit_horizon = True
                    return e.value
        cdef bint outer_horizon = self.hit_horizon
        self.hit_horizon = False
        if depth == 1:
            v = self.frontier(s, ply, &best)
            if self.error:
                return 0.0
            if ply == 0:
                self.best_root = best
            self.store(key, v, 1, EXACT, best)
            self.hit_horizon = self.hit_horizon or outer_horizon
            return v
        mv = self.moves + ply * self.stride
        n = s.legal_actions(mv)
        self.order(mv, n, tt_move)
        me = s._player
        bestv = -INF
        for i in range(n):
            s.apply(mv[i])
            self.nodes += 1
            if s._player == me:
                v = self.negamax(s, depth - 1, alpha, beta, ply + 1)
            else:
                v = -self.negamax(s, depth - 1, -beta, -alpha, ply + 1)
            s.undo()
            if self.stopped or self.error:
                return 0.0
            if v > bestv:
                bestv = v
                best = mv[i]
                if ply == 0:
                    self.best_root = best
            if v > alpha:
                alpha = v
            if alpha >= beta:
                self.history[mv[i]] += depth * depth
                break
            if self.out_of_budget(depth):
                self.stopped = True
                return 0.0
        if bestv <= a0:
            self.store(key, bestv, depth, UPPER, best)
        elif bestv >= beta:
            self.store(key, bestv, depth, LOWER, best)
        else:
            self.store(key, bestv, depth, EXACT, best)
        self.hit_horizon = self.hit_horizon or outer_horizon
        return bestv

    cdef void store(self, hash_t key, double v, int depth, int flag, action_t move) noexcept nogil:
        cdef TTEntry* e = &self.tt[key & <hash_t>self.tt_mask]
        e.key = key
        e.value = <float>v
        e.depth = <signed char>(depth if depth < 127 else 127)
        e.flag = <signed char>flag
        e.horizon = 1 if self.hit_horizon else 0
        e.move = move

    def search(self, state, max_depth=0, seconds=0.0, nodes=0):
        """Iterative deepening from depth 1 until ``max_depth``, ``seconds`` or ``nodes`` runs out
        (at least depth 1 completes). Returns (best action, value, depth completed)."""
        return self._search(state_arg(state, self.game, 'alphabeta.search'),
                            validate.integer(max_depth, 'alphabeta.search: max_depth', 0, 1000),
                            validate.seconds(seconds, 'alphabeta.search: seconds', allow_zero=True),
                            count(nodes, 'alphabeta.search: nodes', 0))

    def _search(self, State state, int max_depth=0, double seconds=0.0, long nodes=0):
        """Iterative deepening from depth 1 until ``max_depth``, ``seconds`` or ``nodes`` runs out
        (at least depth 1 completes). Returns (best action, value, depth completed)."""
        search_call(state, self.game, seconds, "alphabeta.search")
        if max_depth <= 0 and seconds <= 0 and nodes <= 0:
            raise ValueError("give a budget: max_depth, seconds or nodes")
        if state._terminal:
            raise ValueError("no move in a terminal state")
        if max_depth <= 0:
            max_depth = state.max_plies - state._ply
        cdef State s = state.clone()
        self.nodes = 0
        self.deadline = now() + seconds if seconds > 0 else 0.0
        cdef long node_budget = nodes
        cdef int depth
        cdef double v
        cdef action_t completed_best = -1
        cdef double completed_value = 0.0
        self.depth_reached = 0
        self.error = 0
        for depth in range(1, max_depth + 1):
            self.stopped = False
            self.hit_horizon = False
            # depth 1 always completes; afterwards the budgets apply
            self.node_limit = node_budget if (depth > 1 and node_budget > 0) else 0
            if depth == 1:
                saved_deadline = self.deadline
                self.deadline = 0.0
            with nogil:
                v = self.negamax(s, depth, -INF, INF, 0)
            if depth == 1:
                self.deadline = saved_deadline
            if self.error:
                err, self.evaluator.error = self.evaluator.error, None
                raise RuntimeError(f"the evaluator failed: {err!r}") from err
            if self.stopped:
                break
            completed_best = self.best_root
            completed_value = v
            self.depth_reached = depth
            if not self.hit_horizon:
                break           # the whole tree was searched: the value is exact
            if self.proven(v) or (self.deadline > 0 and now() >= self.deadline) or (
                    node_budget > 0 and self.nodes >= node_budget):
                break
        return completed_best, completed_value, self.depth_reached

    cdef inline bint proven(self, double v) noexcept nogil:
        """A value that rests on terminal states only (with a bounded evaluator: beyond every
        estimate); in the depth-scored games also exact, as no deeper result can beat it."""
        return self.evaluator.bounded and self.depth_scored and (
            v >= self.win_floor * (1.0 - 1e-6) or v <= -self.win_floor * (1.0 - 1e-6))

    def analyse(self, state, depth=1):
        """Values of the root actions (mover's view): each child valued by the evaluator
        (depth 1) or by a ``depth - 1`` search below it. ``resolved``: the value is exact (no
        evaluated leaf below, or a proven result in a depth-scored game); ``proven``: the sign is
        (a win or loss beyond every estimate of a bounded evaluator, or resolved)."""
        return self._analyse(state_arg(state, self.game, 'alphabeta.analyse'),
                             validate.integer(depth, 'alphabeta.analyse: depth', 1, 1000))

    def _analyse(self, State state, int depth=1) -> list:
        """Values of the root actions (mover's view): each child valued by the evaluator
        (depth 1) or by a ``depth - 1`` search below it. ``resolved``: the value is exact (no
        evaluated leaf below, or a proven result in a depth-scored game); ``proven``: the sign is
        (a win or loss beyond every estimate of a bounded evaluator, or resolved)."""
        search_call(state, self.game, what="alphabeta.analyse")
        if state._terminal:
            return []
        cdef State s = state.clone()
        cdef action_t* mv = self.moves
        cdef int n = s.legal_actions(mv)
        cdef int i, me = s._player
        cdef float* vals = <float*>malloc(sizeof(float) * n)
        acts = [mv[i] for i in range(n)]
        self.nodes = 0
        self.deadline = 0.0
        self.node_limit = 0
        self.stopped = False
        self.error = 0
        try:
            if self.children_values(s, mv, n, vals) < 0:
                err, self.evaluator.error = self.evaluator.error, None
                raise RuntimeError(f"the evaluator failed: {err!r}") from err
            out = []
            for i, a in enumerate(acts):
                v = vals[i]
                s.apply(a)
                exact = s._terminal
                if depth > 1 and not s._terminal:
                    self.hit_horizon = False
                    w = self.negamax(s, depth - 1, -INF, INF, 1)
                    if self.error:
                        s.undo()
                        err, self.evaluator.error = self.evaluator.error, None
                        raise RuntimeError(f"the evaluator failed: {err!r}") from err
                    v = w if s._player == me else -w
                    exact = not self.hit_horizon
                s.undo()
                bounded_proof = self.evaluator.bounded and abs(v) >= self.win_floor * (1.0 - 1e-6)
                out.append({"action": a, "value": float(v), "completion": 0,
                            "resolved": bool(exact or (bounded_proof and self.depth_scored)),
                            "proven": bool(exact or bounded_proof), "count": 0})
        finally:
            free(vals)
        out.sort(key=lambda d: -d["value"])
        return out
