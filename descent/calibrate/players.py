"""The games of a calibration: the balanced player at a budget and its opponents (``Players``):
for ``--against pool`` every (high net, low net) pair of the run's pools in turn, else one agent;
each game from a seeded random opening shared by the two seats of a pair.
"""
from __future__ import annotations

import time
import zlib
from pathlib import Path

from search_ext.agents import parse_agent
from search_ext.engine_spec import is_engine_spec
from descent import batched
from descent.batched import close_engines
from descent.budgets import parse_budget
from descent.calibrate.design import CalibrationError, Settings, budget_text, join_spec
from descent.match import make_opening, play_game
from descent.networks import make_agent
from descent.pools import read_pools

class Players:
    """Builds (and caches) the balanced player at a budget and the opponents: for ``pool``, every
    (high net, low net) pair in turn; otherwise the one agent."""

    def __init__(self, s: Settings, run_dir: Path):
        self.s = s
        name, opts = parse_agent(s.algorithm)
        if opts.get("time") is not None or opts.get("iterations") is not None:
            raise CalibrationError(f"algorithm {s.algorithm!r}: leave out the budget "
                                   f"(calibrate chooses {s.unit})")
        if "seed=" in s.algorithm.replace(" ", ""):
            raise CalibrationError(f"algorithm {s.algorithm!r}: leave out the seed (each game has its own)")
        if name not in ("minibal_plus", "minibal_n", "minimax", "descent", "mcts", "alphadda"):
            raise CalibrationError(f"algorithm {name!r}: calibrate needs an algorithm with an "
                                   f"iterations/time budget (e.g. minibal_plus)")
        self.cache: dict = {}
        self._openings: dict = {}
        self.engines: dict = {}          # the batched driver's pool of outside engines
        self.games_in_flight = max(1, int(s.round_games))
        if s.against == "pool":
            pools = read_pools(run_dir, s.game, CalibrationError, ", or give --against AGENT")
            if opts.get("net"):
                raise CalibrationError("with --against pool the balanced player uses the high-pool nets: "
                                       "leave net= out of --algorithm")
            ob = parse_budget(s.opponent_budget, CalibrationError)
            self.pairs = [(h["path"], h["net"], join_spec(f"minimax:{ob}", f"net={lo['path']}"), lo["net"])
                          for h in pools["high"] for lo in pools["low"]]
        else:
            parse_agent(s.against)
            self.pairs = [(opts.get("net"), None, s.against, s.against)]

    def spec(self, budget, pair: int) -> str:
        net = self.pairs[pair][0]
        spec = join_spec(self.s.algorithm, budget_text(self.s.unit, budget))
        if net and self.s.against == "pool":
            spec = join_spec(spec, f"net={net}")
        return spec

    def agent(self, spec: str):
        """The agent of ``spec``, built once (games played one by one share it)."""
        if spec not in self.cache:
            if len(self.cache) > 24:
                for old in self.cache.values():
                    getattr(old, "close", lambda: None)()
                self.cache.clear()
            self.cache[spec] = make_agent(spec, self.s.game)
        return self.cache[spec]

    def make(self, spec: str, game):
        """``make_agent`` for the batched driver: an agent with a network is built once and kept
        (the driver plays copies of it that share its network); any other is built afresh (each game
        in flight has its own; outside engines come from the driver's pool, kept in ``engines``)."""
        if not is_engine_spec(spec) and parse_agent(spec)[1].get("net"):
            return self.agent(spec)
        return make_agent(spec, game)

    def task(self, budget, k: int) -> dict:
        """Game ``k`` at ``budget`` as plain data (``descent.match.play_task``: a Ray task)."""
        pair = (k // 2) % len(self.pairs)
        seed = (self.s.seed * 1_000_003 + zlib.crc32(str(budget).encode()) + pair) & 0x7FFFFFFF
        return {"game": self.s.game, "agent_a": self.spec(budget, pair), "agent_b": self.pairs[pair][2],
                "index": k, "seed": seed, "a_first": k % 2 == 0, "budget": budget, "k": k,
                "opponent": self.pairs[pair][3], "net": self.pairs[pair][1],
                "opening": self.opening(budget, k)}

    def opening(self, budget, k: int) -> list[str]:
        """The seeded random opening of game ``k`` at ``budget``: the same for both seats of a pair
        (k // 2), another for every pair and budget. Without it, deterministic players (Minimax,
        Minibal_+ on iteration budgets) replay one game per seat: 24 games were 2 games repeated; and
        with one set of openings for every budget, the fit's games at neighbouring budgets would
        share their openings' luck."""
        if self.s.opening_plies <= 0:
            return []
        key = (budget, k // 2)
        if key not in self._openings:
            if len(self._openings) > 4096:
                self._openings.clear()
            self._openings[key] = make_opening(self.s.game, self.s.opening_plies,
                                               f"{self.s.seed}|calibrate|{budget}|{k // 2}")
        return self._openings[key]

    @staticmethod
    def record(task: dict, rec, seconds: float) -> dict:
        """The log record of a finished game."""
        out = {"budget": task["budget"], "k": task["k"], "a_first": rec.a_first, "result": rec.a_result,
               "score": rec.a_score, "plies": rec.plies, "opponent": task["opponent"],
               "net": task["net"], "seconds": round(seconds, 4)}
        if getattr(rec, "aborted", None):      # an outside engine failed: never logged as a result
            out["aborted"] = rec.aborted
        return out

    def play(self, budget, k: int) -> dict:
        """Game ``k`` at ``budget``, played alone."""
        t = self.task(budget, k)
        t0 = time.perf_counter()
        rec = play_game(self.s.game, self.agent(t["agent_a"]), self.agent(t["agent_b"]), k, t["seed"],
                        a_first=t["a_first"], opening=t["opening"])
        return self.record(t, rec, time.perf_counter() - t0)

    def run(self, keys):
        """Play the games ``(budget, k)`` of ``keys``; yield their log records in completion order.
        Games with a network are played many at a time by ``descent.batched`` (one network call per
        round of searches; an outside engine opponent: one engine process per game in flight), the
        others one by one. The records are the games' own, however they were played."""
        tasks = [self.task(b, k) for b, k in keys]
        if tasks and batched.batchable({t[x] for t in tasks for x in ("agent_a", "agent_b")}):
            for task, rec in batched.run_batched(tasks, self.games_in_flight, make_agent=self.make,
                                                 engines=self.engines):
                yield self.record(task, rec, rec.seconds_a + rec.seconds_b)
            return
        for t in tasks:
            yield self.play(t["budget"], t["k"])

    def close(self) -> None:
        """Stop the outside engines this calibration started."""
        close_engines(self.engines)
        for agent in self.cache.values():
            getattr(agent, "close", lambda: None)()
        self.cache.clear()
