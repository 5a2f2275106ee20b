"""Searching in a thread that can be stopped: what ``descent engine`` runs on ``go`` / ``genmove``.

A best-first agent (Unbounded Minimax, Minibal, Descent, and a Gaussian level over one of them)
keeps its search tree between calls at the same root, so the search grows in chunks of iterations
(or of seconds), and between chunks it reports progress and looks at the stop flag: ``stop``,
``isready`` and ``quit`` are answered while it thinks, and the move is the agent's own decision
over the grown tree (its budget in iterations is the sum of the chunks, exactly). Alpha-beta (and a
Gaussian level over it) deepens one depth a call, its transposition table carrying the work from
call to call (measured: the calls cost what one iterative-deepening call costs), and a call that
has a time budget is cut into slices of ``SLICE_SECONDS``, so it too reports each completed depth
and stops when told. Other agents are asked for a move with the budget in their options and cannot
be interrupted.

A budget is ``Limits``: ``iterations`` (alpha-beta: nodes), ``seconds`` and/or ``depth`` (the first
reached ends the search; a best-first search has no depth, so ``depth`` D is D times the number of
legal moves in iterations), or ``infinite`` (until ``stop``).

``allot`` is the share of a clock one move may spend (UCI ``wtime``..., GTP ``time_left``).

Progress is reported to ``on_info`` at most every ``INFO_SECONDS``, and once more, marked
``final``, just before the move: ``depth`` (alpha-beta: the depth completed; best-first: the length
of the principal line the tree has grown), ``iterations``, ``seconds``, ``value`` (the best root
action's, mover's view, in [-1, 1]), ``pv`` (actions), ``proven`` (1 or -1 for a forced win or
loss, else None) and ``proof_plies`` (plies to that end, where known).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from search_ext.agents import AlphaBetaAgent, BestFirstAgent, GaussianAgent

MOVES_LEFT = 30             # moves a clock is shared over when the GUI does not say (movestogo)
INCREMENT_SHARE = 0.8       # of the increment, spent on the move it comes with
MOVE_OVERHEAD = 0.05        # seconds kept back per move for the protocol's round trip


def allot(remaining: float, increment: float = 0.0, moves_to_go: int | None = None,
          overhead: float = MOVE_OVERHEAD) -> float:
    """Seconds one move may spend of a clock with ``remaining`` seconds: an even share over
    ``moves_to_go`` moves (``MOVES_LEFT`` when not given) plus most of the increment, never more than
    half of what is left (80% for the last move before the clock is refilled), less ``overhead``
    for the round trip; at least 5 ms."""
    rem = max(0.0, float(remaining))
    n = max(1, int(moves_to_go)) if moves_to_go else MOVES_LEFT
    t = min(rem / n + INCREMENT_SHARE * max(0.0, float(increment)), rem * (0.8 if n == 1 else 0.5))
    t = t - overhead if t > 2 * overhead else t * 0.5
    return max(0.005, t)


@dataclass
class Limits:
    iterations: int | None = None
    seconds: float | None = None
    infinite: bool = False
    depth: int | None = None

    def describe(self) -> str:
        if self.infinite:
            return "infinite"
        parts = [f"iterations={self.iterations}"] if self.iterations else []
        parts += [f"time={self.seconds:.3f}"] if self.seconds else []
        parts += [f"depth={self.depth}"] if self.depth else []
        return ",".join(parts) or "none"


def own_limits(agent) -> Limits:
    """The budget in an agent's options (its level's budget), 1 second when it has none."""
    opts = _budget_opts(agent)
    it, t = opts.get("iterations") or opts.get("nodes"), opts.get("time")
    d = opts.get("depth")
    if not it and not t and not d:
        t = 1.0
    return Limits(iterations=it or None, seconds=t or None, depth=d or None)


def _budget_opts(agent) -> dict:
    base = getattr(agent, "base", None)
    return base.opts if base is not None and type(agent).__name__ == "GaussianAgent" else agent.opts


def _search_of(agent, kind):
    """The search of an agent of class ``kind`` (itself, or the base of a Gaussian agent) whose
    moves the agent plays, or None."""
    if type(agent) is kind:
        return agent.search
    if type(agent) is GaussianAgent and type(agent.base) is kind:
        return agent.base.search
    return None


def _growable(agent):
    """The best-first search whose tree the agent's moves come from, or None."""
    return _search_of(agent, BestFirstAgent)


def _deepening(agent):
    """The alpha-beta search the agent's moves come from (deepened a depth a call), or None."""
    return _search_of(agent, AlphaBetaAgent)


def _decide(agent, search, state) -> int:
    """The agent's decision over its grown tree (as its ``choose`` decides after searching)."""
    if type(agent) is GaussianAgent:
        rows = search.analyse(state)
        agent.last_move = agent.base.last_move
        return rows[agent.select(agent.level_values(rows))]["action"]
    return search.best_action(state)


class Thinker:
    """One search at a time in a daemon thread. ``start(state, limits, on_info, on_done)``:
    ``on_info(dict)`` with the progress (module docstring), ``on_done(action or None, error or
    None)`` at the end, from the thread. ``stop()`` ends the search at the next chunk and waits
    for ``on_done``."""

    CHUNK_SECONDS = 0.05
    SLICE_SECONDS = 0.2         # alpha-beta: the longest call when a time budget or stop can end it
    INFO_SECONDS = 0.5          # progress reports at most this often (and one at the end)
    PV_PLIES = 32               # the longest principal line reported

    def __init__(self, agent):
        self.agent = agent
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.limits: Limits | None = None

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, state, limits: Limits, on_info, on_done) -> None:
        self.wait()
        self._stop.clear()
        self.limits = limits
        self._thread = threading.Thread(target=self._run, args=(state.copy(), limits, on_info, on_done),
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.wait()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def think(self, state, limits: Limits, on_info=None) -> int:
        """Search in the calling thread; the action (exceptions propagate)."""
        out: dict = {}

        def done(action, error):
            out["action"], out["error"] = action, error
        self._stop.clear()
        self.limits = limits
        self._run(state.copy(), limits, on_info or (lambda info: None), done)
        if out["error"] is not None:
            raise out["error"]
        return out["action"]

    # ---- the search ----------------------------------------------------------------------------

    def _run(self, state, limits: Limits, on_info, on_done) -> None:
        try:
            action = self._search(state, limits, on_info)
        except Exception as exc:          # reported to the protocol as an error line, not a crash
            on_done(None, exc)
            return
        on_done(action, None)

    def _search(self, state, limits: Limits, on_info) -> int:
        if not (limits.infinite or limits.iterations or limits.seconds or limits.depth):
            limits = Limits(seconds=1.0)
        search = _growable(self.agent)
        if search is not None:
            return self._best_first(search, state, limits, on_info)
        search = _deepening(self.agent)
        if search is not None:
            return self._alphabeta(search, state, limits, on_info)
        return self._fallback(state, limits)

    def _best_first(self, search, state, limits: Limits, on_info) -> int:
        iterations = limits.iterations
        if limits.depth and not limits.infinite:
            by_depth = max(1, limits.depth) * max(1, len(state.legal_actions_list()))
            iterations = min(iterations, by_depth) if iterations else by_depth
        t0 = time.perf_counter()
        last = t0
        total = 0
        chunk = 16
        while True:
            if self._stop.is_set() and total > 0:
                break
            elapsed = time.perf_counter() - t0
            if not limits.infinite:
                if iterations and total >= iterations:
                    break
                if limits.seconds and elapsed >= limits.seconds and total > 0:
                    break
            n = chunk
            if iterations and not limits.infinite:
                n = min(n, iterations - total)
            secs = self.CHUNK_SECONDS * 2
            if limits.seconds and not limits.infinite:
                secs = max(1e-4, min(secs, limits.seconds - elapsed))
            c0 = time.perf_counter()
            done = search.search(state, iterations=n, seconds=secs)
            dt = time.perf_counter() - c0
            total += done
            if search.root_info(state)["resolved"] or done == 0:
                # the root is resolved (or the table is full): nothing more to search; an infinite
                # search still waits for stop, as UCI wants
                if limits.infinite:
                    on_info(self._tree_info(search, state, total, time.perf_counter() - t0))
                    last = time.perf_counter()
                    self._stop.wait()
                break
            if dt < self.CHUNK_SECONDS and done == n:
                chunk = min(chunk * 2, 1 << 20)
            now = time.perf_counter()
            if now - last >= self.INFO_SECONDS:
                on_info(self._tree_info(search, state, total, now - t0))
                last = now
        asked = iterations if iterations and not limits.infinite else None
        on_info(dict(self._tree_info(search, state, total, time.perf_counter() - t0), final=True))
        action = _decide(self.agent, search, state)
        self.agent.last_move = {"iterations": total, "asked": asked,
                                "cut_short": bool(search.last_cut_short), "memory_full": bool(search.memory_full)}
        return action

    def _alphabeta(self, search, state, limits: Limits, on_info) -> int:
        """Iterative deepening a depth a call (the transposition table keeps the work between
        calls); a call with a time budget lasts at most ``SLICE_SECONDS``, so that the clock and
        ``stop`` are looked at between slices (a cut call is called again at the same depth)."""
        t0 = time.perf_counter()
        last = t0
        total = 0
        best = None                             # (action, value, depth) of the deepest completed depth
        cap = max(1, state.game.max_plies - state.ply)
        if limits.depth and not limits.infinite:
            cap = min(cap, max(1, limits.depth))
        timed = bool(limits.infinite or limits.seconds)
        d = 1
        resolved = False
        while True:
            if best is not None:
                if self._stop.is_set():
                    break
                elapsed = time.perf_counter() - t0
                if not limits.infinite and (
                        (limits.seconds and elapsed >= limits.seconds) or
                        (limits.iterations and total >= limits.iterations) or d > cap):
                    break
                if resolved or d > cap:         # nothing deeper to search: an infinite search waits
                    on_info(self._ab_info(search, state, best, total, elapsed))
                    self._stop.wait()
                    break
            secs = 0.0
            if timed:
                secs = self.SLICE_SECONDS
                if limits.seconds and not limits.infinite:
                    secs = max(1e-3, min(secs, limits.seconds - (time.perf_counter() - t0)))
            nodes = 0
            if limits.iterations and not limits.infinite:
                nodes = max(1, limits.iterations - total)
            c0 = time.perf_counter()
            action, value, reached = search.search(state, max_depth=d, seconds=secs, nodes=nodes)
            dt = time.perf_counter() - c0
            total += search.nodes
            if reached >= d or best is None:
                best = (action, value, reached)
                d = reached + 1
            elif not ((secs and dt >= secs) or (nodes and search.nodes >= nodes)):
                # iterative deepening ended before the depth asked with time and nodes to spare:
                # the value is exact (the whole tree searched) or a proven result
                resolved = True
            now = time.perf_counter()
            if now - last >= self.INFO_SECONDS:
                on_info(self._ab_info(search, state, best, total, now - t0))
                last = now
            if resolved and not limits.infinite:
                break
        on_info(dict(self._ab_info(search, state, best, total, time.perf_counter() - t0, pv=True),
                     final=True))
        if type(self.agent) is GaussianAgent:
            rows = search.analyse(state, depth=max(1, best[2]))
            return rows[self.agent.select(self.agent.level_values(rows))]["action"]
        return best[0]

    def _fallback(self, state, limits: Limits) -> int:
        """An agent that cannot grow its search in chunks: one ``choose`` with the budget in its
        options (iterations are alpha-beta's nodes; an infinite search becomes the agent's own
        budget)."""
        opts = _budget_opts(self.agent)
        count = "iterations" if "iterations" in opts else "nodes" if "nodes" in opts else None
        saved = {k: opts.get(k) for k in ("iterations", "nodes", "time") if k in opts}
        try:
            if not limits.infinite and (limits.iterations or limits.seconds) and count:
                opts[count], opts["time"] = limits.iterations, limits.seconds
            return self.agent.choose(state)
        finally:
            opts.update(saved)

    # ---- progress --------------------------------------------------------------------------------

    def _tree_info(self, search, state, total: int, seconds: float) -> dict:
        rows = search.analyse(state)
        info = {"iterations": total, "seconds": seconds, "value": 0.0, "pv": [], "proven": None,
                "proof_plies": None, "depth": 1}
        if not rows:
            return info
        best = rows[0]
        proven = best.get("proven")
        info.update(value=float(best["value"]), proven=proven if proven in (1, -1) else None,
                    proof_plies=best.get("proof_depth"))
        pv = [best["action"]]
        s = state.copy()
        s.push(best["action"])
        while len(pv) < self.PV_PLIES and not s.is_game_over():
            nxt = search.analyse(s)
            if not nxt or not nxt[0]["count"]:
                break
            pv.append(nxt[0]["action"])
            s.push(nxt[0]["action"])
        info["pv"] = pv
        info["depth"] = len(pv)
        return info

    def _ab_info(self, search, state, best, total: int, seconds: float,
                 pv: bool = False) -> dict:
        """Progress of the deepening search: ``best`` is the deepest completed depth's (action,
        value, depth). With ``pv`` (the final report, at a point that does not depend on the
        clock, so a node budget stays reproducible) the principal line is followed from the
        transposition table by shallow searches of a few nodes each; otherwise it is the move."""
        action, value, depth = best
        line = [action]
        s = state.copy()
        s.push(action)
        if pv:
            k = depth - 1
            while k >= 1 and len(line) < self.PV_PLIES and not s.is_game_over():
                a, _, _ = search.search(s, max_depth=k, nodes=2000, seconds=0.005)
                line.append(a)
                s.push(a)
                k -= 1
        proven = None
        if getattr(search.evaluator, "bounded", False) and abs(value) >= search.win_floor * (1.0 - 1e-6):
            proven = 1 if value > 0 else -1
        plies = None
        if proven is not None:
            o = s.outcome() if s.is_game_over() else None
            mover = state.to_move
            won = o is not None and o.winner is not None and (o.winner == mover) == (proven > 0)
            plies = len(line) if won else depth
        return {"iterations": total, "seconds": seconds, "value": float(value), "pv": line,
                "proven": proven, "proof_plies": plies, "depth": depth}
