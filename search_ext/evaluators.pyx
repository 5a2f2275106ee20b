"""Evaluators: how the search values the leaves it creates. Kept apart from the search itself.

* ``ZeroEvaluator``: every non-terminal leaf is worth 0 (search driven by terminal states only).
* ``PlayoutEvaluator(k, max_plies, use_score, seed)``: the mean result of k uniformly random playouts
  (b_t, or f_t with ``use_score``), capped at ``max_plies`` plies each (a capped playout counts 0);
  seed 003's Hybrid Minimax-MCTS uses k = 15 and a cap of 100. The mean, in [-1, 1], is scaled by
  ``ESTIMATE_SHARE * proven_floor`` (``estimate_scale``) so that it lies strictly inside the values
  of decided terminal states: a proven win (any f_t > 0) beats every playout estimate, a proven loss
  is below every estimate, and an estimate of +-1 (all playouts won) is never taken for a proof.
  In tic-tac-toe (P = 9) estimates lie in [-0.11, 0.11], in reversi (natural score) in
  [-0.0495, 0.0495]; only their order matters to the searches.
* ``CallableEvaluator(fn)``: ``fn`` takes a float32 array (n, H, W, C) of encoded children and
  returns n values (for example a compiled Keras model); used for the value networks.
* ``heuristic_evaluator(info)``: the value a game writes first in each encoded state, read as is:
  the heuristic ``h`` of an explicit tree (``games.tree_game``, ``games.arc_sum``).
"""
from libc.stdlib cimport malloc, free
import numpy as np

from games import validate
from games.errors import GameError
cimport numpy as cnp

from games._typedefs cimport rng_below, rng_uniform

cnp.import_array()

cdef double NATURAL_FLOOR = 0.05     # games/_state.pyx SCORE_FLOOR: the least |f_t| of a natural win
cdef double _SHARE = 0.99
ESTIMATE_SHARE = _SHARE    # bounded estimates are scaled by ESTIMATE_SHARE * proven_floor


cdef double proven_floor(int score_kind, int max_plies) noexcept nogil:
    if score_kind == 0 or score_kind == 1:          # additive / multiplicative depth: a win at ply P
        return 1.0 / max_plies if max_plies > 1 else 1.0
    return NATURAL_FLOOR


def decided_floor(info) -> float:
    """The smallest |f_t| of a decided terminal state of the game ``info`` (a ``GameInfo``)."""
    return proven_floor(info.score_kind, info.max_plies)


def estimate_scale(info) -> float:
    """The factor a bounded evaluator (playouts) applies to its [-1, 1] estimates in this game."""
    return _SHARE * proven_floor(info.score_kind, info.max_plies)


cdef class Evaluator:
    """Base class: values every child 0."""

    def __init__(self):
        self.needs_encoding = False
        self.bounded = True
        self.error = None

    cdef int evaluate(self, State parent, const action_t* actions, int n, float* enc,
                      float* out) noexcept nogil:
        cdef int i
        for i in range(n):
            out[i] = 0.0
        return 0

    def describe(self) -> str:
        return type(self).__name__


cdef class ZeroEvaluator(Evaluator):
    """Every non-terminal leaf is worth 0."""

    def describe(self) -> str:
        return "zero"


def check_evaluator(evaluator, what="evaluator"):
    """``evaluator`` when it is ``None`` or an ``Evaluator`` (``GameError`` otherwise): the check a
    search constructor makes before its typed attribute would raise ``TypeError``."""
    if evaluator is not None and not isinstance(evaluator, Evaluator):
        raise GameError(validate.one_line(f"{what}: must be an Evaluator, got {evaluator!r:.60}"))
    return evaluator


cdef class PlayoutEvaluator(Evaluator):
    """Mean of ``playouts`` random playouts from each child (child mover's point of view)."""

    def __init__(self, playouts=15, max_plies=100, bint use_score=False, seed=0):
        super().__init__()
        # checked here, before any conversion to a C type (GameError, never OverflowError)
        playouts = validate.count(playouts, "playout evaluator: playouts", 1, 1_000_000)
        max_plies = validate.count(max_plies, "playout evaluator: max_plies", 1, 1_000_000)
        seed = validate.integer(seed, "playout evaluator: seed", 0, 2 ** 64 - 1)
        self.playouts = playouts
        self.max_plies = max_plies
        self.use_score = use_score
        self.rng = <unsigned long long>seed ^ 0x5DEECE66DULL
        self.buf = NULL
        self.buf_cap = 0

    def __dealloc__(self):
        if self.buf != NULL:
            free(self.buf)

    def reseed(self, seed):
        self.rng = <unsigned long long>validate.integer(seed, "playout evaluator: seed", 0, 2 ** 64 - 1) \
            ^ 0x5DEECE66DULL

    cdef int evaluate(self, State parent, const action_t* actions, int n, float* enc,
                      float* out) noexcept nogil:
        cdef int i, _k, p, m, mover
        cdef double total, value
        cdef double scale = _SHARE * proven_floor(parent.score_kind, parent.max_plies)
        if self.buf_cap < parent.max_legal:
            if self.buf != NULL:
                free(self.buf)
            self.buf = <action_t*>malloc(sizeof(action_t) * parent.max_legal)
            self.buf_cap = parent.max_legal
        for i in range(n):
            parent.apply(actions[i])
            mover = parent._player
            total = 0.0
            for _k in range(self.playouts):
                p = 0
                while not parent._terminal and p < self.max_plies:
                    m = parent.legal_actions(self.buf)
                    parent.apply(self.buf[rng_below(&self.rng, m)])
                    p += 1
                if parent._terminal:
                    value = parent.terminal_value() if self.use_score else <double>parent._result
                    total += value if mover == 0 else -value
                while p > 0:
                    parent.undo()
                    p -= 1
            out[i] = <float>(scale * total / self.playouts)
            parent.undo()
        return 0

    def describe(self) -> str:
        return f"playout(k={self.playouts},cap={self.max_plies}{',score' if self.use_score else ''})"


cdef class CallableEvaluator(Evaluator):
    """Calls ``fn(planes) -> values`` once per expansion with the (n, H, W, C) float32 batch."""

    def __init__(self, fn, shape):
        super().__init__()
        self.fn = fn
        self.shape = tuple(shape)
        self.needs_encoding = True
        self.bounded = False            # a network's values share f_t's scale

    cdef int evaluate(self, State parent, const action_t* actions, int n, float* enc,
                      float* out) noexcept nogil:
        cdef int i
        cdef float[::1] vals
        with gil:
            try:
                h, w, c = self.shape
                batch = np.asarray(<float[:n * h * w * c]>enc).reshape(n, h, w, c)
                res = np.ascontiguousarray(np.asarray(self.fn(batch), dtype=np.float32).reshape(-1))
                if res.shape[0] != n:
                    raise ValueError(f"evaluator returned {res.shape[0]} values for {n} states")
                vals = res
                for i in range(n):
                    out[i] = vals[i]
            except BaseException as exc:
                self.error = exc
                return -1
        return 0

    def describe(self) -> str:
        return f"callable({getattr(self.fn, '__name__', type(self.fn).__name__)})"


cdef class RandomValueEvaluator(Evaluator):
    """Uniform random values in [-1, 1] (seeded): a stand-in with a network's cost removed, so that
    benchmarks measure the search on realistic (non-degenerate) tree shapes."""

    def __init__(self, seed=0):
        super().__init__()
        seed = validate.integer(seed, "random value evaluator: seed", 0, 2 ** 64 - 1)
        self.bounded = False
        self.rng = <unsigned long long>seed ^ 0xA5A5A5A5ULL

    cdef int evaluate(self, State parent, const action_t* actions, int n, float* enc,
                      float* out) noexcept nogil:
        cdef int i
        for i in range(n):
            out[i] = <float>(2.0 * rng_uniform(&self.rng) - 1.0)
        return 0

    def describe(self) -> str:
        return "random values"


def heuristic_evaluator(info):
    """An evaluator that values a child by the first number of its encoding (``planes[0, 0, 0]``):
    the heuristic ``h`` that ``games.tree_game`` encodes, from the child's mover's point of view."""
    def read_h(batch):
        return batch[:, 0, 0, 0]
    return CallableEvaluator(read_h, info.planes_shape)
