"""Searching in a thread that can be stopped: what ``descent engine`` runs on ``go`` / ``genmove``.

A best-first agent (Unbounded Minimax, Minibal, Descent, and a Gaussian level over one of them)
keeps its search tree between calls at the same root, so the search grows in chunks of iterations
(or of seconds), and between chunks it reports progress and looks at the stop flag: ``stop``,
``isready`` and ``quit`` are answered while it thinks, and the move is the agent's own decision
over the grown tree (its budget in iterations is the sum of the chunks, exactly). Other agents are
asked for a move with the budget in their options and cannot be interrupted.

A budget is ``Limits``: ``iterations`` and/or ``seconds`` (the first reached ends the search), or
``infinite`` (until ``stop``).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from search_ext.agents import BestFirstAgent, GaussianAgent


@dataclass
class Limits:
    iterations: int | None = None
    seconds: float | None = None
    infinite: bool = False

    def describe(self) -> str:
        if self.infinite:
            return "infinite"
        parts = [f"iterations={self.iterations}"] if self.iterations else []
        parts += [f"time={self.seconds:.3f}"] if self.seconds else []
        return ",".join(parts) or "none"


def own_limits(agent) -> Limits:
    """The budget in an agent's options (its level's budget), 1 second when it has none."""
    opts = _budget_opts(agent)
    it, t = opts.get("iterations") or opts.get("nodes"), opts.get("time")
    if not it and not t:
        t = 1.0
    return Limits(iterations=it or None, seconds=t or None)


def _budget_opts(agent) -> dict:
    base = getattr(agent, "base", None)
    return base.opts if base is not None and type(agent).__name__ == "GaussianAgent" else agent.opts


def _growable(agent):
    """The best-first search whose tree the agent's moves come from, or None."""
    if type(agent) is BestFirstAgent:
        return agent.search
    if type(agent) is GaussianAgent and type(agent.base) is BestFirstAgent:
        return agent.base.search
    return None


def _decide(agent, search, state) -> int:
    """The agent's decision over its grown tree (as its ``choose`` decides after searching)."""
    if type(agent) is GaussianAgent:
        rows = search.analyse(state)
        agent.last_move = agent.base.last_move
        return rows[agent.select(agent.level_values(rows))]["action"]
    return search.best_action(state)


class Thinker:
    """One search at a time in a daemon thread. ``start(state, limits, on_info, on_done)``:
    ``on_info(dict)`` after each chunk (``iterations``, ``seconds``, ``value``, ``pv`` actions,
    ``proven``, ``proof_depth``), ``on_done(action or None, error or None)`` at the end, from the
    thread. ``stop()`` ends the search at the next chunk and waits for ``on_done``."""

    CHUNK_SECONDS = 0.05

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
        search = _growable(self.agent)
        if search is None:
            return self._fallback(state, limits)
        t0 = time.perf_counter()
        total = 0
        chunk = 16
        while True:
            if self._stop.is_set() and total > 0:
                break
            elapsed = time.perf_counter() - t0
            if not limits.infinite:
                if limits.iterations and total >= limits.iterations:
                    break
                if limits.seconds and elapsed >= limits.seconds and total > 0:
                    break
            n = chunk
            if limits.iterations and not limits.infinite:
                n = min(n, limits.iterations - total)
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
                on_info(self._info(search, state, total, time.perf_counter() - t0))
                if not limits.infinite:
                    break
                self._stop.wait()
                break
            if dt < self.CHUNK_SECONDS and done == n:
                chunk = min(chunk * 2, 1 << 20)
            on_info(self._info(search, state, total, time.perf_counter() - t0))
        asked = limits.iterations if limits.iterations and not limits.infinite else None
        action = _decide(self.agent, search, state)
        self.agent.last_move = {"iterations": total, "asked": asked,
                                "cut_short": bool(search.last_cut_short), "memory_full": bool(search.memory_full)}
        return action

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

    @staticmethod
    def _info(search, state, total: int, seconds: float) -> dict:
        rows = search.analyse(state)
        info = {"iterations": total, "seconds": seconds, "value": 0.0, "pv": [], "proven": None,
                "proof_depth": None}
        if not rows:
            return info
        best = rows[0]
        info.update(value=float(best["value"]), proven=best.get("proven"), proof_depth=best.get("proof_depth"))
        pv = [best["action"]]
        s = state.copy()
        s.push(best["action"])
        while len(pv) < 8 and not s.is_game_over():
            nxt = search.analyse(s)
            if not nxt or not nxt[0]["count"]:
                break
            pv.append(nxt[0]["action"])
            s.push(nxt[0]["action"])
        info["pv"] = pv
        return info
