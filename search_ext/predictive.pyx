"""Predictive *-minimax (seed 002, Reibman & Ballard, section V) and the minimax values behind the
noise-based imperfect player (section IV-B), for every game of the ``State`` interface.

``StarMinimax(game, evaluator, ps, star_all)`` is a full-width, depth-limited search whose values are
from the point of view of the player to move at its root (the *root player*):

* a node where the root player moves takes the max of its children;
* a node where the opponent moves, on the opponent's first turn below the root (every opponent node
  with ``star_all``), is a chance node: its children are sorted best for the opponent first
  (increasing root-player value) and averaged with the weights PS, (1-PS)PS, (1-PS)^2 PS, ...
  normalized to sum 1 (the paper's weights do not sum to 1; normalizing changes no decision when all
  opponent nodes have the same number of children, and with a varying number of moves it keeps the
  value an expectation; PS = 0 is the plain average, PS = 1 the min);
* the other opponent nodes take the min (the paper backs up the nodes below the first opponent
  level by conventional minimax).

Who moves is read from each state (``_player``), never inferred from parity, so games where a player
moves several times in a row (connect6: one ply per stone) are searched correctly; the opponent's
first turn lasts until the root player moves again. Terminal states are valued by f_t; states at the
depth limit by the evaluator (one batch per parent, as in alpha-beta). With ``ps = 1`` the search is
plain minimax: the noisy player's "conventional minimax backup search".

``search(state, max_depth, seconds, nodes)`` deepens iteratively from depth 1 (always completed)
until the depth, time or node budget runs out, and returns the root actions, their values and the
depth completed; the search stops early when no leaf was cut by the depth limit (exact values).
"""
from libc.stdlib cimport malloc, free, qsort
from search_ext.clock cimport now

from games._state cimport State
from games import validate
from games.validate import count, search_call, state_arg
from search_ext.evaluators import check_evaluator
from games.errors import GameError
from games._typedefs cimport action_t
from search_ext.evaluators cimport Evaluator, ZeroEvaluator


cdef int cmp_double(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0]
    cdef double y = (<const double*>b)[0]
    return (x > y) - (x < y)


cdef double star_average(double* vals, int n, double ps) noexcept nogil:
    """The predictive value of an opponent node: ``vals`` (root player's view) sorted increasing
    (in place), weighted by PS (1-PS)^k and normalized."""
    cdef int k
    cdef double r = 1.0 - ps, w = 1.0, total = 0.0, wsum = 0.0
    if n == 1:
        return vals[0]
    qsort(vals, n, sizeof(double), cmp_double)
    for k in range(n):
        total += w * vals[k]
        wsum += w
        w *= r
        if w < 1e-300:        # the rest weighs nothing (PS close to 1)
            break
    return total / wsum


def star_value(values, ps) -> float:
    """The predictive (*-minimax) value of an opponent node whose children have ``values`` (root
    player's view): the PS-weighted average of the values sorted increasing (see the module doc)."""
    ps = validate.real(ps, "star_value: PS", 0.0, 1.0)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise GameError(f"star_value: values must be a sequence of numbers, got {values!r:.60}")
    vals = [validate.real(v, "star_value: value") for v in values]
    if not vals:
        raise GameError("star_value: an opponent node needs at least one child")
    cdef int n = len(vals), i
    cdef double* buf = <double*>malloc(sizeof(double) * n)
    for i in range(n):
        buf[i] = vals[i]
    cdef double v = star_average(buf, n, ps)
    free(buf)
    return v


cdef class StarMinimax:
    """Depth-limited predictive *-minimax (``ps < 1``) or minimax (``ps = 1``); see the module doc."""
    cdef readonly object game
    cdef readonly Evaluator evaluator
    cdef readonly double ps
    cdef readonly bint star_all
    cdef int stride
    cdef action_t* moves          # per-ply move buffers: (max_plies + 2) * num_actions
    cdef double* vals             # per-ply child values, same layout
    cdef float* ev
    cdef signed char* ev_sign
    cdef action_t* eval_actions
    cdef int* eval_index
    cdef float* enc
    cdef int enc_size
    cdef int root_player
    cdef double deadline
    cdef long node_limit
    cdef readonly long nodes
    cdef bint stopped
    cdef int error
    cdef bint hit_horizon
    cdef readonly int depth_reached

    def __init__(self, game, evaluator=None, ps=1.0, bint star_all=False):
        # checked here, before any conversion to a C type (GameError, never OverflowError)
        check_evaluator(evaluator, "predictive: evaluator")
        ps = validate.real(ps, "predictive: PS", 0.0, 1.0)
        self.game = game
        self.evaluator = evaluator if evaluator is not None else ZeroEvaluator()
        self.ps = ps
        self.star_all = star_all
        self.stride = game.branching
        cdef long slots = <long>(game.max_plies + 2) * self.stride
        self.moves = <action_t*>malloc(sizeof(action_t) * slots)
        self.vals = <double*>malloc(sizeof(double) * slots)
        self.ev = <float*>malloc(sizeof(float) * self.stride)
        self.ev_sign = <signed char*>malloc(self.stride)
        self.eval_actions = <action_t*>malloc(sizeof(action_t) * self.stride)
        self.eval_index = <int*>malloc(sizeof(int) * self.stride)
        h, w, c = game.planes_shape
        self.enc_size = h * w * c
        self.enc = <float*>malloc(sizeof(float) * self.stride * self.enc_size)
        if not (self.moves and self.vals and self.ev and self.ev_sign and self.eval_actions
                and self.eval_index and self.enc):
            raise MemoryError()

    def __dealloc__(self):
        free(self.moves); free(self.vals); free(self.ev); free(self.ev_sign)
        free(self.eval_actions); free(self.eval_index); free(self.enc)

    cdef inline double root_view(self, double first_player_value) noexcept nogil:
        return first_player_value if self.root_player == 0 else -first_player_value

    cdef inline bint out_of_budget(self) noexcept nogil:
        if self.node_limit > 0 and self.nodes >= self.node_limit:
            return True
        if self.deadline > 0 and now() >= self.deadline:     # checked after each interior child
            return True
        return False

    cdef int children_values(self, State s, action_t* mv, int n, double* out) noexcept nogil:
        """Value every child of `s` (root player's view): terminal ones by f_t, the others in one
        evaluator batch. Returns -1 if the evaluator failed."""
        cdef int i, k = 0
        for i in range(n):
            s.apply(mv[i])
            self.nodes += 1
            if s._terminal:
                out[i] = self.root_view(s.terminal_value())
            else:
                if self.evaluator.needs_encoding:
                    s.encode(self.enc + <long>k * self.enc_size)
                self.eval_actions[k] = mv[i]
                self.eval_index[k] = i
                self.ev_sign[k] = 1 if s._player == self.root_player else -1
                k += 1
            s.undo()
        if k > 0:
            self.hit_horizon = True
            if self.evaluator.evaluate(s, self.eval_actions, k, self.enc, self.ev) < 0:
                return -1
            for i in range(k):
                out[self.eval_index[i]] = self.ev_sign[i] * <double>self.ev[i]
        return 0

    cdef double combine(self, State s, double* v, int n, bint star) noexcept nogil:
        cdef int i
        cdef double best = v[0]
        if s._player == self.root_player:
            for i in range(1, n):
                if v[i] > best:
                    best = v[i]
            return best
        if star and self.ps < 1.0:
            return star_average(v, n, self.ps)
        for i in range(1, n):
            if v[i] < best:
                best = v[i]
        return best

    cdef double value(self, State s, int depth, int ply, bint pending) noexcept nogil:
        """Value of `s` (root player's view) searched `depth` >= 1 plies deep. `pending`: the
        opponent's first turn below the root has not ended on this line."""
        cdef action_t* mv
        cdef double* v
        cdef int n, i
        cdef bint opponent, star, child_pending
        if s._terminal:
            return self.root_view(s.terminal_value())
        mv = self.moves + <long>ply * self.stride
        v = self.vals + <long>ply * self.stride
        n = s.legal_actions(mv)
        opponent = s._player != self.root_player
        star = opponent and (pending or self.star_all)
        if depth == 1:
            if self.children_values(s, mv, n, v) < 0:
                self.error = 1
                return 0.0
        else:
            for i in range(n):
                s.apply(mv[i])
                self.nodes += 1
                # the opponent's first turn ends when the root player is to move again
                child_pending = pending and not (opponent and s._player == self.root_player)
                v[i] = self.value(s, depth - 1, ply + 1, child_pending)
                s.undo()
                if self.stopped or self.error:
                    return 0.0
                if self.out_of_budget():
                    self.stopped = True
                    return 0.0
        return self.combine(s, v, n, star)

    cdef int root_values(self, State s, int depth, double* out) noexcept nogil:
        """Values of the root's children (root player's view) from a `depth`-ply search; the root
        actions are in `self.moves[0:n]`. Returns n, or -1 when stopped or on error."""
        cdef action_t* mv = self.moves
        cdef int n = s.legal_actions(mv)
        cdef int i
        if depth == 1:
            if self.children_values(s, mv, n, out) < 0:
                self.error = 1
                return -1
            return n
        for i in range(n):
            s.apply(mv[i])
            self.nodes += 1
            out[i] = self.value(s, depth - 1, 1, True)
            s.undo()
            if self.stopped or self.error:
                return -1
            if self.out_of_budget():
                self.stopped = True
                return -1
        return n

    def search(self, state, max_depth=0, seconds=0.0, nodes=0):
        """Iterative deepening from depth 1 (always completed) until ``max_depth``, ``seconds`` or
        ``nodes`` runs out (``max_depth`` 0: no depth limit). Returns ``(actions, values, depth)``:
        the root actions, their values (root player's view) at the deepest completed depth, and that
        depth. Stops early once no leaf was cut by the depth limit (the values are then exact)."""
        return self._search(state_arg(state, self.game, 'predictive.search'),
                            validate.integer(max_depth, 'predictive.search: max_depth', 0, 1000),
                            validate.seconds(seconds, 'predictive.search: seconds', allow_zero=True),
                            count(nodes, 'predictive.search: nodes', 0))

    def _search(self, State state, int max_depth=0, double seconds=0.0, long nodes=0):
        """Iterative deepening from depth 1 (always completed) until ``max_depth``, ``seconds`` or
        ``nodes`` runs out (``max_depth`` 0: no depth limit). Returns ``(actions, values, depth)``:
        the root actions, their values (root player's view) at the deepest completed depth, and that
        depth. Stops early once no leaf was cut by the depth limit (the values are then exact)."""
        search_call(state, self.game, seconds, "predictive.search")
        if max_depth <= 0 and seconds <= 0 and nodes <= 0:
            raise ValueError("give a budget: max_depth, seconds or nodes")
        if state._terminal:
            raise ValueError("no move in a terminal state")
        if max_depth <= 0:
            max_depth = state.max_plies - state._ply
        cdef State s = state.clone()
        cdef double* out = <double*>malloc(sizeof(double) * self.stride)
        if out == NULL:
            raise MemoryError()
        cdef int depth, n = 0, i
        cdef double deadline = now() + seconds if seconds > 0 else 0.0
        actions, values = [], []
        self.root_player = s._player
        self.nodes = 0
        self.depth_reached = 0
        self.error = 0
        try:
            for depth in range(1, max_depth + 1):
                self.stopped = False
                self.hit_horizon = False
                # depth 1 always completes; afterwards the budgets apply
                self.node_limit = nodes if depth > 1 else 0
                self.deadline = deadline if depth > 1 else 0.0
                with nogil:
                    n = self.root_values(s, depth, out)
                if self.error:
                    err, self.evaluator.error = self.evaluator.error, None
                    raise RuntimeError(f"the evaluator failed: {err!r}") from err
                if self.stopped:
                    break
                actions = [self.moves[i] for i in range(n)]
                values = [out[i] for i in range(n)]
                self.depth_reached = depth
                if not self.hit_horizon:
                    break           # no leaf was cut: the values are exact
                if (deadline > 0 and now() >= deadline) or (nodes > 0 and self.nodes >= nodes):
                    break
        finally:
            free(out)
        return actions, values, self.depth_reached
