"""One batcher: many walks in flight, one network call per evaluator and round.

Self-play (``search_ext.selfplay.SelfPlayPool``) and games with networks (``descent.batched``) both
run searches whose walk (``search_ext.descent_core.Walk``) stops when it needs the values of an
expansion's children. ``Batcher.play`` is the one round loop over them: every walk in flight is
stepped until it waits for values (its children's planes written to its evaluator's buffer) or its
game is over; then each evaluator is called once for all the states waiting for it, the values are
handed back, and the games that ended make room for new ones.

The evaluator contract is one function, ``values(planes) -> values``: planes float32 (n, H, W, C),
values (n,) in [-1, 1], each from its state's player to move's point of view. Search knows nothing
of the network behind it. An evaluator whose values can change (self-play's network, given new
weights as it trains) comes with ``refresh() -> bool``: the batcher calls it before every round's
lookups, and a true answer (the values changed) empties the evaluator's cache.

``Evaluation`` puts the value cache in front of an evaluator (``search_ext.valuecache.ValueCache``:
a state already valued, in any game in flight, by either side, is not asked for again) and keeps
the accounting in one place: the calls made, the states asked for, the states answered by the
cache, and the seconds spent in the evaluator (each waiting walk is charged its share).

A walker (one game in flight) has two methods:

* ``step(batcher) -> bool``: advance until the walk waits for values (true: it has written its
  children's planes at ``evaluation.buf[evaluation.n:]`` and called ``evaluation.claim(self, k)``;
  ``batcher.evaluation(...)`` gives it the evaluation of its evaluator) or its game is over (false);
* ``supply(values, offset, seconds)``: the values of its ``k`` states at ``values[offset:]``, and
  its share of the call's seconds.
"""
from __future__ import annotations

import time

import numpy as np

from search_ext.valuecache import ValueCache

DEFAULT_CACHE_STATES = 500_000   # values kept per evaluator and generation (two: 32 MB)


class Evaluation:
    """One evaluator's states of a round: their planes in one buffer (room for ``rows`` states of
    ``shape``), valued by one call, less those its cache holds."""

    def __init__(self, values, shape, rows: int, cache: ValueCache | None, refresh=None):
        h, w, c = shape
        self.fn, self.cache, self.refresh = values, cache, refresh
        self.buf = np.zeros((rows, h, w, c), np.float32)
        self.flat = self.buf.reshape(rows, h * w * c)
        # the states to ask the evaluator for, gathered by the cache (none without one)
        self.ask = np.zeros_like(self.buf) if cache is not None else self.buf[:0]
        self.values = np.zeros(rows, np.float32)
        self.n = 0
        self.waiting: list = []            # (walker, offset, states) of this round

    def claim(self, walker, states: int) -> None:
        """``walker`` wrote ``states`` planes at ``buf[n:]`` and waits for their values."""
        self.waiting.append((walker, self.n, states))
        self.n += states

    def evaluate(self) -> tuple[np.ndarray, int, float]:
        """The values of ``buf[:n]`` (each state's mover's view), the number of states the
        evaluator was asked for, and the call's seconds."""
        n = self.n
        if self.refresh is not None and self.refresh() and self.cache is not None:
            self.cache.clear()            # new weights: the values kept are another network's
        if self.cache is None:
            ask, k = self.buf[:n], n
        else:
            k = self.cache.lookup(self.flat[:n], self.values, self.ask.reshape(len(self.ask), -1))
            if k == 0:
                return self.values[:n], 0, 0.0
            ask = self.ask[:k]
        t0 = time.perf_counter()
        out = np.ascontiguousarray(np.asarray(self.fn(ask), dtype=np.float32).reshape(-1))
        dt = time.perf_counter() - t0
        if out.shape != (k,):
            raise ValueError(f"the evaluator returned {out.shape[0]} values for {k} states")
        if self.cache is None:
            return out, n, dt
        self.cache.store(out, self.values)
        return self.values[:n], k, dt


class Batcher:
    """The round loop over the walkers in flight (see the module). ``in_flight``: the most games
    at once; ``cache_states``: the most values kept per evaluator (0: no cache). The counts:
    ``rounds``, ``calls`` (evaluator calls), ``states`` (states the evaluators were asked for),
    ``cached`` (states the caches answered), ``abandoned`` (walkers in flight when ``stop``
    ended a play, in all)."""

    def __init__(self, in_flight: int, cache_states: int = DEFAULT_CACHE_STATES):
        if in_flight < 1:
            raise ValueError(f"games_in_flight must be >= 1, got {in_flight}")
        self.in_flight = in_flight
        self.cache_states = cache_states
        self.evaluations: dict = {}       # (evaluator key, planes shape) -> Evaluation
        self.caches: dict = {}            # evaluator key -> its value cache
        self.rounds = self.calls = self.states = self.cached = self.abandoned = 0
        self.live: list = []              # the walkers in flight
        self.given_up: list = []          # those in flight when ``stop`` ended the last play

    def evaluation(self, key, values, shape, branching: int, refresh=None) -> Evaluation:
        """The round's evaluation of the evaluator ``values`` (known by ``key``: walkers with one
        key share its calls and its cache) for states of ``shape`` and at most ``branching``
        children an expansion; ``refresh``: see the module."""
        shape = tuple(shape)
        ev = self.evaluations.get((key, shape))
        if ev is None:
            if key not in self.caches:
                self.caches[key] = ValueCache(self.cache_states) if self.cache_states > 0 else None
            ev = self.evaluations[(key, shape)] = Evaluation(values, shape, self.in_flight * branching,
                                                             self.caches[key], refresh)
        return ev

    def play(self, start, stop=None, before_round=None):
        """Play walkers until ``start()`` returns None and every walker in flight is over, or
        until ``stop()`` is true (asked before every round, after ``before_round()``): the walkers
        in flight are then given up (``abandoned``). Yields each walker whose game is over, in the
        order they end (the walkers in flight keep their order; a new one goes last); after each,
        once the consumer has taken it, ``start()`` is asked for the next."""
        live = self.live = []
        self.given_up: list = []
        more = True
        while more and len(live) < self.in_flight:
            w = start()
            if w is None:
                more = False
            else:
                live.append(w)
        while live:
            if before_round is not None:
                before_round()
            if stop is not None and stop():
                self.abandoned += len(live)
                self.given_up = list(live)
                live.clear()
                return
            for ev in self.evaluations.values():
                ev.n = 0
                ev.waiting.clear()
            ended = [w for w in live if not w.step(self)]
            for ev in self.evaluations.values():
                if ev.n == 0:
                    continue
                values, asked, dt = ev.evaluate()
                if asked:
                    self.calls += 1
                    self.states += asked
                self.cached += ev.n - asked
                for w, off, k in ev.waiting:
                    w.supply(values, off, dt * k / ev.n)
            self.rounds += 1
            for w in ended:
                live.remove(w)
                yield w
                nxt = start()
                if nxt is not None:
                    live.append(nxt)
