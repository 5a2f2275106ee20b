"""One batcher: many walks in flight, one network call per evaluator and round.

Self-play (``search_ext.selfplay.SelfPlayPool``) and games with networks (``descent.batched``) both
run searches whose walk (``search_ext.descent_core.Walk``) stops when it needs the values of an
expansion's children. ``Batcher.play`` is the one round loop over them: every walk in flight is
stepped until it waits for values (its children's planes written to its evaluator's buffer) or its
game is over; then each evaluator is called once for all the states waiting for it, the values are
handed back, and the games that ended make room for new ones. The loop is compiled: with a cheap
evaluator self-play spends microseconds a round, and the loop's own cost shows.

The evaluator contract is one function, ``values(planes) -> values``: planes float32 (n, H, W, C),
values (n,) in [-1, 1], each from its state's player to move's point of view. Search knows nothing
of the network behind it. An evaluator whose values can change (self-play's network, given new
weights as it trains) comes with ``refresh() -> bool``: the batcher calls it before every round's
lookups, and a true answer (the values changed) empties the evaluator's cache.

``Evaluation`` puts the value cache in front of an evaluator (``search_ext.valuecache.ValueCache``:
a state already valued, in any game in flight, by either side, is not asked for again) and keeps
the accounting in one place: the calls made, the states asked for, the states answered by the
cache, and the seconds spent in the evaluator (each waiting walker is charged its share).

A walker (one game in flight) is a ``Walker``: the self-play pool's games implement its compiled
methods; one written in Python subclasses ``PyWalker`` and defines

* ``step(batcher) -> bool``: advance until the walk waits for values (true: it has written its
  children's planes at ``evaluation.buf[evaluation.n:]`` and called ``evaluation.claim(self, k)``;
  ``batcher.evaluation(...)`` gives it the evaluation of its evaluator) or its game is over (false);
* ``supply(values, offset, seconds)``: the values of its ``k`` states at ``values[offset:]``, and
  its share of the call's seconds.
"""
import numpy as np

from search_ext.clock cimport now
from search_ext.valuecache import ValueCache

DEFAULT_CACHE_STATES = 500_000   # values kept per evaluator and generation (two: 32 MB)


cdef class Evaluation:
    """One evaluator's states of a round: their planes in one buffer (room for ``rows`` states of
    ``shape``), valued by one call, less those its cache holds."""

    def __init__(self, values, shape, int rows, cache=None, refresh=None):
        h, w, c = shape
        self.fn, self.cache, self.refresh = values, cache, refresh
        self.rows = rows
        self.buf = np.zeros((rows, h, w, c), np.float32)
        cdef float[:, :, :, ::1] view = self.buf
        self.bufp = &view[0, 0, 0, 0]
        self.flat = self.buf.reshape(rows, h * w * c)
        # the states to ask the evaluator for, gathered by the cache (none without one)
        self.ask = np.zeros_like(self.flat) if cache is not None else self.flat[:0]
        self.values = np.zeros(rows, np.float32)
        self.n = 0
        self.waiting = []

    def claim(self, Walker walker, int states) -> None:
        """``walker`` wrote ``states`` planes at ``buf[n:]`` and waits for their values."""
        self.claim_c(walker, states)

    cdef void claim_c(self, Walker w, int states):
        w.off = self.n
        w.k = states
        self.waiting.append(w)
        self.n += states

    @property
    def nbytes(self) -> int:
        """Bytes of its buffers (the cache's are the cache's)."""
        return self.buf.nbytes + self.ask.nbytes + self.values.nbytes

    cdef tuple evaluate(self):
        """The values of ``buf[:n]`` (each state's mover's view), the number of states the
        evaluator was asked for, and the call's seconds."""
        cdef int n = self.n, k
        cdef double t0, dt
        if self.refresh is not None and self.refresh() and self.cache is not None:
            self.cache.clear()            # new weights: the values kept are another network's
        if self.cache is None:
            ask, k = self.buf[:n], n
        else:
            k = self.cache.lookup(self.flat[:n], self.values, self.ask)
            if k == 0:
                return self.values, 0, 0.0
            ask = self.ask[:k].reshape((k,) + self.buf.shape[1:])
        t0 = now()
        out = self.fn(ask)
        dt = now() - t0
        if not (type(out) is np.ndarray and out.dtype == np.float32 and out.ndim == 1
                and out.flags.c_contiguous):
            out = np.ascontiguousarray(np.asarray(out, dtype=np.float32).reshape(-1))
        if out.shape[0] != k:
            raise ValueError(f"the evaluator returned {out.shape[0]} values for {k} states")
        if self.cache is None:
            return out, n, dt
        self.cache.store(out, self.values)
        return self.values, k, dt


cdef class Walker:
    """One game in flight (see the module); a compiled walker overrides these."""

    cdef int step_c(self, Batcher batcher) except -1:
        raise NotImplementedError

    cdef int supply_c(self, object values, const float* p, double seconds) except -1:
        raise NotImplementedError


cdef class PyWalker(Walker):
    """A walker written in Python: its ``step(batcher) -> bool`` and ``supply(values, offset,
    seconds)`` (see the module)."""

    cdef int step_c(self, Batcher batcher) except -1:
        return 1 if self.step(batcher) else 0

    cdef int supply_c(self, object values, const float* p, double seconds) except -1:
        self.supply(values, self.off, seconds)
        return 0


cdef class Batcher:
    """The round loop over the walkers in flight (see the module). ``in_flight``: the most games
    at once; ``cache_states``: the most values kept per evaluator (0: no cache). The counts:
    ``rounds``, ``calls`` (evaluator calls), ``states`` (states the evaluators were asked for),
    ``cached`` (states the caches answered), ``abandoned`` (walkers in flight when ``stop``
    ended a play, in all); ``live``: the walkers in flight; ``given_up``: those in flight when
    ``stop`` ended the last play."""

    def __init__(self, int in_flight, long cache_states=DEFAULT_CACHE_STATES):
        if in_flight < 1:
            raise ValueError(f"games_in_flight must be >= 1, got {in_flight}")
        self.in_flight = in_flight
        self.cache_states = cache_states
        self.evaluations = {}             # (evaluator key, planes shape, branching) -> Evaluation
        self.caches = {}                  # evaluator key -> its value cache
        self.live = []
        self.given_up = []

    def evaluation(self, key, values, shape, int branching, refresh=None) -> Evaluation:
        """The round's evaluation of the evaluator ``values`` (known by ``key``: walkers with one
        key share its calls and its cache) for states of ``shape`` and at most ``branching``
        children an expansion; ``refresh``: see the module."""
        shape = tuple(shape)
        ev = self.evaluations.get((key, shape, branching))
        if ev is None:
            if key not in self.caches:
                self.caches[key] = ValueCache(self.cache_states) if self.cache_states > 0 else None
            ev = self.evaluations[(key, shape, branching)] = Evaluation(
                values, shape, self.in_flight * branching, self.caches[key], refresh)
        return ev

    def play(self, start, stop=None, before_round=None):
        """Play walkers until ``start()`` returns None and every walker in flight is over, or
        until ``stop()`` is true (asked before every round, after ``before_round()``): the walkers
        in flight are then given up (``abandoned``). Yields each walker whose game is over, in the
        order they end (the walkers in flight keep their order; a new one goes last); after each,
        once the consumer has taken it, ``start()`` is asked for the next."""
        cdef list live = []
        cdef list ended
        cdef Walker w
        cdef Evaluation ev
        cdef int asked
        cdef float[::1] vv
        self.live = live
        self.given_up = []
        for ev in self.evaluations.values():      # a play that ended by an error left its claims
            ev.n = 0
            ev.waiting.clear()
        while len(live) < self.in_flight:
            w = start()
            if w is None:
                break
            live.append(w)
        while live:
            if before_round is not None:
                before_round()
            if stop is not None and stop():
                self.abandoned += len(live)
                self.given_up = list(live)
                live.clear()
                return
            ended = []
            for w in live:
                if not w.step_c(self):
                    ended.append(w)
            for ev in self.evaluations.values():
                if ev.n == 0:
                    continue
                values, asked, dt = ev.evaluate()
                if asked:
                    self.calls += 1
                    self.states += asked
                self.cached += ev.n - asked
                vv = values
                for w in ev.waiting:
                    w.supply_c(values, &vv[w.off], dt * w.k / ev.n)
                ev.n = 0
                ev.waiting.clear()
            self.rounds += 1
            for w in ended:
                live.remove(w)
                yield w
                nxt = start()
                if nxt is not None:
                    live.append(nxt)
