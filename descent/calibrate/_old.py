"""Calibrating a balanced player: the search budget at which its gain (or score) against an
opponent reaches a target (``descent calibrate``).

The Minibal paper (section 5.1) observes that against a weaker opponent the mean binary gain of
Unbounded Minibal_+ grows monotonically with its search budget until it reaches zero (and above it
for much weaker opponents). The budget that gives a target gain is the root of a noisy monotone
curve. Near the root the curve is steep in the budget (against Fairy-Stockfish on breakthrough 6x6,
+0 at 4 iterations and about +20 at 5), so a design that accepts the first budget whose noisy
interval holds the target lands anywhere on that slope. This one fits the curve to every game played
so far and asks the fit where the root is:

* **The model.** With ``u = (y + 1) / 2`` in [0, 1] (``y`` the game's gain or score, the balanced
  player's view), ``E[u] = sigmoid(slope * (ln b - root) + c)`` where ``c = logit((target + 1) / 2)``,
  so that the gain at ``b = exp(root)`` is the target: a logistic curve in log-budget, increasing
  (``slope > 0``). Its posterior is computed on a grid: ``root`` uniform over the range widened by a
  factor ``e`` at each end (mass beyond an end says the target lies outside the range), ``slope``
  log-uniform over 0.1 .. 8. The likelihood is the binomial one on ``u`` (a quasi-likelihood when
  draws give ``u = 1/2``), divided by the dispersion estimated at the best fit (at most 1: draws make
  results less variable than wins and losses), so that games with many draws are not under-counted.
* **Rounds.** The design plays rounds of games, all of a round at once (batched: ``descent.batched``
  plays them in one process with one network call per round of searches). Round r has
  ``min(round_games, 2^(r+1))`` games in seat pairs that share a seeded random opening; pair i is
  played at the budget nearest to the ``(i + 1/2) / m`` quantile of the root's posterior (shifted by
  the golden ratio from round to round), so the games go where the root may be, spread as widely as
  the posterior still is, and concentrate on the few budgets around it as it narrows.
* **The answer** is the budget (an integer number of iterations, or seconds to 3 significant digits)
  whose posterior mean gain is nearest the target; its interval is the 95% interval of the fitted
  gain there. **Stops:** converged when that interval's half-width is at most ``precision`` and
  ``near_games`` games were played in the answer's neighbourhood (the budgets of the root's 95%
  interval, and the answer: ``near_games``); refused as unreachable when the answer is an end of the
  range and the whole interval there lies on the wrong side of the target (below at the largest
  budget: the opponent is too strong; above at the smallest: too weak); or ``max_games`` spent (the
  current answer, marked not converged).

Every game plays from a seeded random opening of ``opening_plies`` plies, the same for both seats of
a pair and different for every pair and budget (so no two pairs replay the same game).

Persistence: every finished game is appended (and fsynced) to a per-game log,
``<run>/calibrations/<name>.games.jsonl``, keyed by (budget, k) where k counts the games at that
budget; the design is a pure function of that log (games at a budget are consumed in k order), so a
rerun after a kill replays it and continues with the missing games of its round, never repeating
one. With iteration budgets every game is reproducible from its seed. The result is one JSON file,
``<run>/calibrations/<name>.json``, written to a temporary name and renamed.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from games.errors import GameError
from descent.stats import mean_ci
from training import fileio
from training.fileio import crash_point
from games.validate import MAX_COUNT, MAX_SECONDS
from search_ext.agents import parse_agent
from descent.budgets import parse_budget
from descent.networks import make_agent
from search_ext.engine_spec import is_engine_spec
from descent.match import make_opening
from descent.match import play_game
from descent import batched
from descent.batched import close_engines
from descent import distributed
from descent.match import play_task
from training.run import DEFAULT_ROOT

SUBDIR = "calibrations"
# In the results' keys (not the logs'): results of an earlier design are not reused, its games are.
# "logistic-fit" counted the near games at the answer's own budget only; "logistic-fit-2" counts
# those in the root's 95% interval (``near_games``).
DESIGN = "logistic-fit-2"


class CalibrationError(GameError):
    """Bad calibration input: algorithm, opponent, range, metric, or no pools for ``--against pool``."""


class Unreachable(CalibrationError):
    """No budget in the range reaches the target; ``direction`` is ``too_strong`` or ``too_weak``."""

    def __init__(self, message: str, direction: str, result: dict | None = None):
        super().__init__(message)
        self.direction = direction
        self.result = result


@dataclass
class Settings:
    game: str
    algorithm: str = "minibal_plus"
    against: str = "pool"
    target: float = 0.0
    metric: str = "gain"
    unit: str = "iterations"
    low: float = 1
    high: float = 10000
    opponent_budget: str = "iterations=200"
    seed: int = 0
    opening_plies: int = 4
    max_games: int = 400
    near_games: int = 40
    precision: float = 0.1
    round_games: int = 16

    def __post_init__(self):
        # one spelling per value, so that the CLI and the API name the same calibration the same way
        self.target = float(self.target)
        self.precision = float(self.precision)
        for k in ("low", "high"):
            v = float(getattr(self, k))
            setattr(self, k, int(v) if self.unit == "iterations" and v.is_integer() else v)

    def game_key(self) -> dict:
        """What determines the games themselves (not the design's target or metric)."""
        return {"game": self.game, "algorithm": self.algorithm, "against": self.against,
                "opponent_budget": self.opponent_budget if self.against == "pool" else None,
                "unit": self.unit, "seed": self.seed, "opening_plies": self.opening_plies,
                "openings": "per-budget"}

    def design_key(self) -> dict:
        return {**self.game_key(), "design": DESIGN, "target": self.target, "metric": self.metric,
                "low": self.low, "high": self.high, "max_games": self.max_games,
                "near_games": self.near_games, "precision": self.precision, "round_games": self.round_games}


def _digest(d: dict) -> str:
    return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:10]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:40]


def names(s: Settings) -> tuple[str, str]:
    """(result file name, log file name) inside ``<run>/calibrations``."""
    alg = _slug(s.algorithm.partition(":")[0])
    vs = "pool" if s.against == "pool" else _slug(s.against.partition(":")[0])
    base = f"{alg}-vs-{vs}"
    return (f"{base}-{s.metric}{s.target:+g}-{_digest(s.design_key())}.json",
            f"{base}-{_digest(s.game_key())}.games.jsonl")


def check_range(s: Settings) -> None:
    """``CalibrationError`` unless ``low .. high`` is a usable budget range of ``unit``."""
    if s.unit not in ("iterations", "time"):
        raise CalibrationError(f"unit {s.unit!r}: expected iterations or time")
    if not (s.low > 0 and s.high > s.low and math.isfinite(s.high)):
        raise CalibrationError(f"budget range {s.low:g}..{s.high:g}: need 0 < low < high, both finite")
    top = MAX_COUNT if s.unit == "iterations" else MAX_SECONDS
    if s.high > top:
        raise CalibrationError(f"budget range {s.low:g}..{s.high:g}: high must be at most {top:g}")
    if s.unit == "iterations" and (s.low != int(s.low) or s.high != int(s.high)):
        raise CalibrationError(f"budget range {s.low:g}..{s.high:g}: iterations must be whole numbers")


def snap(s: Settings, v: float):
    """The budget of ``unit`` nearest to ``v`` in log-budget, inside ``low .. high``: a whole number
    of iterations, or seconds to 3 significant digits."""
    v = min(max(float(v), float(s.low)), float(s.high))
    if s.unit == "iterations":
        lo, hi = max(int(s.low), math.floor(v)), min(int(s.high), math.ceil(v))
        if lo == hi:
            return lo
        return lo if math.log(v) - math.log(lo) <= math.log(hi) - math.log(v) else hi
    return min(max(float(f"{v:.3g}"), float(s.low)), float(s.high))


def budget_text(unit: str, value) -> str:
    return f"{unit}={value}"


# ---- the per-game log ------------------------------------------------------------------------------

def read_log(path: Path) -> dict:
    """{(budget, k): record}; a torn last line (a kill during a write) is dropped and the file
    rewritten without it (atomically). Call it holding the log's lock (``lock_log``): the rewrite
    would lose a line another process appends meanwhile."""
    path = Path(path)
    games: dict = {}
    if not path.exists():
        return games
    raw = path.read_bytes()
    good, dirty = [], False
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            key = (rec["budget"], int(rec["k"]))
            float(rec["result"]), float(rec["score"])
        except (ValueError, KeyError, TypeError):
            dirty = True
            continue
        if key in games:
            dirty = True
            continue
        games[key] = rec
        good.append(line)
    if dirty:
        fileio.write_bytes(path, b"".join(x + b"\n" for x in good))
    return games


def append_log(path: Path, rec: dict) -> None:
    """One finished game, appended whole and fsynced (``training.fileio.append_json``)."""
    fileio.append_json(path, rec, sort_keys=True)


# ---- players ---------------------------------------------------------------------------------------

def _join(spec: str, extra: str) -> str:
    return spec + ("," if ":" in spec else ":") + extra if extra else spec


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
            pools_path = Path(run_dir) / "pools.json"
            if not pools_path.exists():
                raise CalibrationError(f"{run_dir}: no pools (pools.json missing); run `descent rank "
                                       f"{s.game} --run {run_dir}` first, or give --against AGENT")
            pools = json.loads(pools_path.read_text())
            if pools.get("game") != s.game:
                raise CalibrationError(f"{pools_path}: pools of {pools.get('game')}, not of {s.game}")
            if opts.get("net"):
                raise CalibrationError("with --against pool the balanced player uses the high-pool nets: "
                                       "leave net= out of --algorithm")
            ob = parse_budget(s.opponent_budget, CalibrationError)
            self.pairs = [(h["path"], h["net"], _join(f"minimax:{ob}", f"net={lo['path']}"), lo["net"])
                          for h in pools["high"] for lo in pools["low"]]
            if not self.pairs:
                raise CalibrationError(f"{pools_path}: empty pools")
        else:
            parse_agent(s.against)
            self.pairs = [(opts.get("net"), None, s.against, s.against)]

    def spec(self, budget, pair: int) -> str:
        net = self.pairs[pair][0]
        spec = _join(self.s.algorithm, budget_text(self.s.unit, budget))
        if net and self.s.against == "pool":
            spec = _join(spec, f"net={net}")
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


# ---- the design ------------------------------------------------------------------------------------

ROOT_POINTS = 401                     # grid of the root (ln budget) over the widened range
SLOPES = np.geomspace(0.1, 8.0, 25)   # grid of the slope (logit of E[u] per unit of ln budget)
MARGIN = 1.0                          # the root's range: ln low - MARGIN .. ln high + MARGIN
GOLDEN = (math.sqrt(5) - 1) / 2


def _softplus(z):
    return np.logaddexp(0.0, z)


class Fit:
    """The posterior of the logistic curve (root, slope) given the games so far (see the module's
    docstring); ``data`` maps a budget to (games, sum of u, sum of u^2)."""

    def __init__(self, s: Settings, data: dict):
        self.s = s
        lo, hi = math.log(s.low), math.log(s.high)
        self.theta = np.linspace(lo - MARGIN, hi + MARGIN, ROOT_POINTS)
        self.c = math.log((1 + s.target) / (1 - s.target))       # logit((target + 1) / 2)
        budgets = sorted(data)
        self.dispersion = 1.0
        if not budgets:
            self.w = np.full((ROOT_POINTS, len(SLOPES)), 1.0 / (ROOT_POINTS * len(SLOPES)))
            return
        x = np.log(np.array(budgets, float))
        n = np.array([data[b][0] for b in budgets], float)
        su = np.array([data[b][1] for b in budgets], float)
        sq = np.array([data[b][2] for b in budgets], float)
        z = SLOPES[None, :, None] * (x[None, None, :] - self.theta[:, None, None]) + self.c
        ll = -(su * _softplus(-z) + (n - su) * _softplus(z)).sum(axis=2)
        best = np.unravel_index(np.argmax(ll), ll.shape)
        if n.sum() >= 20:                # the dispersion at the best fit: <= 1 (draws), >= 0.05
            p = 1.0 / (1.0 + np.exp(-z[best]))
            resid = float((sq - 2 * p * su + n * p * p).sum())
            var = float((n * p * (1 - p)).sum())
            if var > 0:
                self.dispersion = min(1.0, max(0.05, resid / var))
        ll = ll / self.dispersion
        w = np.exp(ll - ll.max())
        self.w = w / w.sum()

    def gain(self, b) -> tuple[float, float, float]:
        """Posterior mean and 95% interval of the fitted gain (or score) at budget ``b``."""
        z = SLOPES[None, :] * (math.log(b) - self.theta[:, None]) + self.c
        g = (2.0 / (1.0 + np.exp(-z)) - 1.0).ravel()
        w = self.w.ravel()
        order = np.argsort(g, kind="stable")
        cum = np.cumsum(w[order])
        low = float(g[order][min(len(g) - 1, int(np.searchsorted(cum, 0.025)))])
        high = float(g[order][min(len(g) - 1, int(np.searchsorted(cum, 0.975)))])
        return float((w * g).sum()), low, high

    def root_quantile(self, q: float) -> float:
        """The ``q`` quantile of the root's posterior (in ln budget)."""
        cum = np.cumsum(self.w.sum(axis=1))
        return float(self.theta[min(ROOT_POINTS - 1, int(np.searchsorted(cum, q)))])

    def slope_quantile(self, q: float) -> float:
        cum = np.cumsum(self.w.sum(axis=0))
        return float(SLOPES[min(len(SLOPES) - 1, int(np.searchsorted(cum, q)))])

    def answer(self):
        """The budget whose posterior mean gain is nearest the target (the smaller one on a tie),
        among the budgets between the root's 0.1% and 99.9% quantiles."""
        s = self.s
        lo, hi = math.exp(self.root_quantile(0.001)), math.exp(self.root_quantile(0.999))
        cands = {snap(s, lo), snap(s, hi)}
        if s.unit == "iterations":
            a, b = int(snap(s, lo)), int(snap(s, hi))
            if b - a <= 400:
                cands.update(range(a, b + 1))
            else:
                cands.update(snap(s, v) for v in np.geomspace(max(a, 1), b, 400))
        else:
            cands.update(snap(s, v) for v in np.geomspace(lo, hi, 400))
        ordered = sorted(cands)
        means = self.mean_gains(ordered)
        d = np.abs(means - s.target)
        return ordered[int(np.flatnonzero(d <= d.min() + 1e-12)[0])]

    def mean_gains(self, budgets) -> np.ndarray:
        """Posterior mean gain at each budget (vectorised ``gain(b)[0]``)."""
        x = np.log(np.asarray(budgets, float))
        wt = self.w[:, :, None]
        out = np.empty(len(x))
        for i in range(0, len(x), 64):
            z = SLOPES[None, :, None] * (x[None, None, i:i + 64] - self.theta[:, None, None]) + self.c
            out[i:i + 64] = (wt * (2.0 / (1.0 + np.exp(-z)) - 1.0)).sum(axis=(0, 1))
        return out

    def summary(self) -> dict:
        qs = (0.025, 0.5, 0.975)
        return {"root": [round(math.exp(self.root_quantile(q)), 4) for q in qs],
                "slope": [round(self.slope_quantile(q), 4) for q in qs],
                "dispersion": round(self.dispersion, 4)}


def near_games(s: Settings, fit: Fit, answer, values: dict) -> tuple:
    """``(low, high, games)``: the answer's neighbourhood (the budgets of the root's 95% posterior
    interval, and the answer) and the games played in it, which the stopping rule counts. A flat
    curve spreads the design's games over many whole budgets around the root, and counting only the
    answer's own budget would then never stop while the answer moves from one to the next."""
    lo = min(answer, snap(s, math.exp(fit.root_quantile(0.025))))
    hi = max(answer, snap(s, math.exp(fit.root_quantile(0.975))))
    return lo, hi, sum(len(v) for b, v in values.items() if lo <= b <= hi)


def round_budgets(s: Settings, fit: Fit, r: int) -> list:
    """The budgets of round ``r``'s seat pairs (a budget repeated for each of its pairs)."""
    m = max(1, min(s.round_games // 2, 2 ** r))
    out = []
    for i in range(m):
        q = ((i + 0.5) / m + r * GOLDEN) % 1.0
        out.append(snap(s, math.exp(fit.root_quantile(q))))
    return sorted(out)


def calibrate(s: Settings, run_dir, echo=None, progress: bool = False, stop_after: int | None = None,
              players=None, ray_address: str | None = None) -> dict:
    """Run (or resume) a calibration; returns the result dict (also written to the run).

    Raises ``Unreachable`` (with the result saved) when no budget in range reaches the target.
    ``stop_after`` plays at most that many new games in this call (returns ``None`` if unfinished):
    for tests of resumption. ``players`` replaces the game player (anything with
    ``play(budget, k) -> record``, or ``run(keys)`` yielding records), to study the design on a
    known curve.

    The games of a round are played at once: batched in this process (``Players.run``), or with
    ``ray_address`` as Ray tasks (``descent.match.play_task``). The driver appends each to the log as
    it returns, and the design consumes a round's games in (budget, k) order once all are there, so
    the answer is the serial one (with iteration budgets)."""
    if s.metric not in ("gain", "score"):
        raise CalibrationError(f"metric {s.metric!r}: expected gain or score")
    if not -1.0 < s.target < 1.0:
        raise CalibrationError(f"target {s.target:g}: must lie strictly between -1 and 1")
    for k in ("max_games", "near_games", "round_games"):
        v = getattr(s, k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 2:
            raise CalibrationError(f"{k} must be a whole number >= 2")
    if s.round_games % 2:
        raise CalibrationError("round_games must be even (games are played in seat pairs)")
    if not 0.0 < s.precision <= 1.0:
        raise CalibrationError(f"precision {s.precision:g}: must lie in (0, 1]")
    if not isinstance(s.opening_plies, int) or isinstance(s.opening_plies, bool) \
            or not 0 <= s.opening_plies <= 1000:
        raise CalibrationError(f"opening_plies {s.opening_plies!r}: expected an integer in 0..1000")
    check_range(s)
    run_dir = Path(run_dir)
    own = players is None
    players = players or Players(s, run_dir)
    try:
        out_dir = run_dir / SUBDIR
        fileio.check_writable_dir(out_dir, CalibrationError, "calibration folder")   # before any game
        res_name, log_name = names(s)
        res_path, log_path = out_dir / res_name, out_dir / log_name
        if ray_address is not None:

            def play(keys):
                tasks = [players.task(b, k) for b, k in keys]
                for task, rec in distributed.run_tasks_ray(tasks, ray_address, play_task):
                    yield players.record(task, rec, rec.seconds_a + rec.seconds_b)
        elif hasattr(players, "run"):
            play = players.run
        else:
            def play(keys):
                for b, k in keys:
                    yield players.play(b, k)
        with lock_log(log_path):
            # temporary files of this calibration's log and result (no one else writes them while we
            # hold the lock), and of writers that are dead; never a live calibration's
            fileio.clean_temp_files(out_dir, scope={res_name, log_name})
            return _calibrate(s, play, log_path, res_path, echo, progress, stop_after)
    finally:
        if own:
            players.close()


def lock_log(log_path: Path) -> fileio.FileLock:
    """The exclusive lock on a calibration's game log, ``<log>.lock`` (released when the process
    ends, even by SIGKILL): it covers the log and the results computed from it.
    ``CalibrationError`` if another process holds it."""
    log_path = Path(log_path)
    lock = log_path.with_name(log_path.name + ".lock")
    return fileio.FileLock(lock, timeout=0, error=CalibrationError,
                           busy=f"{lock.parent}: another process is running this calibration "
                                f"(lock {lock.name} is held); wait for it or stop it")


def _point(s: Settings, fit: Fit, b, ys: list) -> dict:
    """A budget's own games (mean and 95% radius) and the fitted gain there."""
    m, r = mean_ci(ys)           # NaN without games, an infinite radius with one: null in JSON
    fm, flo, fhi = fit.gain(b)
    return {"budget": b, "games": len(ys), "mean": _finite(m), "radius": _finite(r),
            "fitted": round(fm, 6), "fitted_low": round(flo, 6), "fitted_high": round(fhi, 6)}


def _calibrate(s, play, log_path, res_path, echo, progress, stop_after):
    log = read_log(log_path)
    key = "result" if s.metric == "gain" else "score"
    values: dict = {}                 # budget -> metric values, in k order
    data: dict = {}                   # budget -> (games, sum u, sum u^2)
    steps: list = []
    spent = new = 0
    t0 = time.perf_counter()

    def consume(b, rec):
        y = float(rec[key])
        values.setdefault(b, []).append(y)
        u = min(1.0, max(0.0, (y + 1) / 2))
        n, su, sq = data.get(b, (0, 0.0, 0.0))
        data[b] = (n + 1, su + u, sq + u * u)

    fit = Fit(s, data)
    status, converged, answer, r = None, True, None, 0
    answer = fit.answer()
    while True:
        g = fit.gain(answer)
        if r > 0:
            if answer == snap(s, s.high) and g[2] < s.target:
                status = "too_strong"
            elif answer == snap(s, s.low) and g[1] > s.target:
                status = "too_weak"
            elif (g[2] - g[1]) / 2 <= s.precision and near_games(s, fit, answer, values)[2] >= s.near_games:
                status = "done"
            elif spent >= s.max_games:
                status, converged = "done", False
            if status:
                break
        pairs = round_budgets(s, fit, r)
        pairs = pairs[:max(1, (s.max_games - spent) // 2)]
        keys: list = []
        used: dict = {}
        for b in pairs:
            k = len(values.get(b, ())) + used.get(b, 0)
            keys += [(b, k), (b, k + 1)]
            used[b] = used.get(b, 0) + 2
        todo = [x for x in keys if x not in log]
        if stop_after is not None:
            todo = todo[:max(0, stop_after - new)]
        aborted = []
        for rec in play(todo):
            if rec.get("aborted"):        # an outside engine failed: never into the design
                aborted_path = log_path.with_name(log_path.name.replace(".games.jsonl", "") + ".aborted.jsonl")
                append_log(aborted_path, rec)
                aborted.append(rec)
                continue
            append_log(log_path, rec)
            crash_point("calibrate_logged")
            log[(rec["budget"], rec["k"])] = rec
            new += 1
            if echo and progress:
                echo(f"  game {new}: {budget_text(s.unit, rec['budget'])} k={rec['k']} -> {rec['result']:+d}")
        if aborted:
            rec = aborted[0]
            raise CalibrationError(f"game k={rec['k']} at {budget_text(s.unit, rec['budget'])} was aborted, "
                                   f"not scored ({rec['aborted']}); rerun to play it again")
        if any(x not in log for x in keys):
            return None                   # stop_after reached inside the round
        for b, k in keys:
            consume(b, log[(b, k)])
        spent += len(keys)
        fit = Fit(s, data)
        r += 1
        answer = nxt = fit.answer()
        fg = fit.gain(nxt)
        counts: dict = {}
        for b in pairs:
            counts[str(b)] = counts.get(str(b), 0) + 2
        steps.append({"round": r, "games": counts, "spent": spent, "answer": nxt,
                      "fitted": [round(x, 4) for x in fg]})
        if echo:
            echo(f"  round {r}: {len(keys)} game(s) at {', '.join(f'{b} x{n}' for b, n in counts.items())} "
                 f"{s.unit}; {spent} spent; answer {budget_text(s.unit, nxt)}, fitted {s.metric} "
                 f"{_fmt(s.metric, fg[0])} [{_fmt(s.metric, fg[1])}, {_fmt(s.metric, fg[2])}]")
    points = [_point(s, fit, b, values[b]) for b in sorted(values)]
    qlo, qhi = fit.root_quantile(0.025), fit.root_quantile(0.975)
    at = _point(s, fit, answer, values.get(answer, []))
    nlo, nhi, nn = near_games(s, fit, answer, values)
    result = {"version": 2, "design": DESIGN, "settings": s.design_key(), "status": status,
              "converged": converged and status == "done", "games": spent, "games_played_this_call": new,
              "seconds_this_call": time.perf_counter() - t0, "points": points, "steps": steps,
              "posterior": fit.summary(), "log": str(log_path),
              "near": {"low": nlo, "high": nhi, "games": nn},
              "algorithm": s.algorithm, "against": s.against, "metric": s.metric, "target": s.target,
              "unit": s.unit, "game": s.game, "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if status == "done":
        result.update({"budget": answer, "spec": _join(s.algorithm, budget_text(s.unit, answer)),
                       "interval": [snap(s, math.exp(qlo)), snap(s, math.exp(qhi))],
                       "interval_open": [qlo < math.log(s.low), qhi > math.log(s.high)],
                       "at_budget": at})
    else:
        result["at_budget"] = at
    fileio.write_json(res_path, result)
    if status in ("too_strong", "too_weak"):
        what = "gain" if s.metric == "gain" else "score"
        fmt = f"{100 * s.target:+.0f}%" if s.metric == "gain" else f"{s.target:+.3f}"
        side = ("below the target even at the largest" if status == "too_strong"
                else "above the target even at the smallest")
        who = "strong" if status == "too_strong" else "weak"
        raise Unreachable(f"no budget in {s.low}..{s.high} {'s' if s.unit == 'time' else s.unit} reaches {what} {fmt}: "
                          f"the opponent is too {who} (fitted {what} {_fmt(s.metric, g[0])} "
                          f"[{_fmt(s.metric, g[1])}, {_fmt(s.metric, g[2])}], {side} budget "
                          f"{budget_text(s.unit, answer)}; {spent} games spent)", status, result)
    return result


def _fmt(metric: str, v: float) -> str:
    return f"{100 * v:+.1f}%" if metric == "gain" else f"{v:+.3f}"


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _measured(at: dict, metric: str, gain_digits: int, score_digits: int) -> str:
    """``mean ± radius`` of a budget's own games (``?`` for what one game cannot tell)."""
    m, r = at["mean"], at["radius"]
    if metric == "gain":
        return (f"{100 * m:+.{gain_digits}f}%" if m is not None else "?") + \
            (f" ± {100 * r:.{gain_digits}f}" if r is not None else " ± ?")
    return (f"{m:+.{score_digits}f}" if m is not None else "?") + \
        (f" ± {r:.{score_digits}f}" if r is not None else " ± ?")


def describe(result: dict) -> str:
    """One paragraph for the terminal."""
    at = result["at_budget"]
    unit = result["unit"]
    lo, hi = result["interval"]
    olo, ohi = result.get("interval_open", [False, False])
    metric = result["metric"]
    fitted = ""
    if at.get("fitted") is not None:
        fitted = (f"fitted there: {metric} {_fmt(metric, at['fitted'])} [{_fmt(metric, at['fitted_low'])}, "
                  f"{_fmt(metric, at['fitted_high'])}]; ")
    val = f"{metric} {_measured(at, metric, 1, 3)}"
    tgt = f"{100 * result['target']:+.0f}%" if metric == "gain" else f"{result['target']:+.3f}"
    conv = "" if result["converged"] else " (NOT converged: the game budget ran out; rerun with more --max-games)"
    word = "s" if unit == "time" else unit
    n = result.get("near")          # results of the first fitted design have none
    near = f", {n['games']} of them at {n['low']} .. {n['high']} {word}" if n else ""
    return (f"{result['game']}: {result['algorithm']} against {result['against']} reaches {metric} {tgt} at "
            f"{unit}={result['budget']} (root interval {'<=' if olo else ''}{lo} .. {'>=' if ohi else ''}{hi} {word}); "
            f"{fitted}measured there: {val} over {at['games']} games (95%); {result['games']} games spent"
            f"{near}{conv}")


# ---- looking calibrations up -------------------------------------------------------------------------

def find_calibration(game: str, algorithm: str = "minibal_plus", root=None, run_dir=None,
                     against: str | None = None, prefer_against: str = "pool") -> dict | None:
    """The calibrated result to use for ``game`` and ``algorithm`` (its name, without options), or
    None. Looks in ``run_dir``, else in every run under ``root``; prefers, in order: calibrations
    against an opponent starting with ``prefer_against``, target 0 with the gain metric, converged
    ones, iterations, the newest."""
    dirs = [Path(run_dir)] if run_dir else sorted(Path(root or DEFAULT_ROOT).glob("*"))
    best, best_key = None, None
    for d in dirs:
        for p in sorted((d / SUBDIR).glob("*.json")):
            try:
                r = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            if not isinstance(r, dict) or r.get("status") != "done" or r.get("game") != game:
                continue
            if str(r.get("algorithm", "")).partition(":")[0] != algorithm:
                continue
            if against is not None and r.get("against") != against:
                continue
            key = (str(r.get("against", "")).startswith(prefer_against), r.get("target") == 0 and r.get("metric") == "gain",
                   bool(r.get("converged")), r.get("unit") == "iterations", r.get("finished", ""))
            if best_key is None or key > best_key:
                best, best_key = dict(r, path=str(p)), key
    return best


# ---- the report's side-by-side view --------------------------------------------------------------------

def side_by_side(records) -> list[str]:
    """For ``descent report``: each calibrated cell (algorithm ``X:calibrated``) next to the
    uncalibrated cells of X in the same experiment and game at the nearest budgets of the same unit
    (one below, one above)."""
    out = []
    for c in records:
        base, _, opt = c["algorithm"].partition(":")
        if opt != "calibrated":
            continue
        unit, value = c["budget"].split("=", 1)
        same = [r for r in records if r["algorithm"] == base and r["game"] == c["game"]
                and r["opponent"] == c["opponent"] and r["opponent_budget"] == c["opponent_budget"]
                and r["budget"].split("=", 1)[0] == unit]
        below = [r for r in same if float(r["budget"].split("=", 1)[1]) <= float(value)]
        above = [r for r in same if float(r["budget"].split("=", 1)[1]) > float(value)]
        near = ([max(below, key=lambda r: float(r["budget"].split("=", 1)[1]))] if below else []) + \
               ([min(above, key=lambda r: float(r["budget"].split("=", 1)[1]))] if above else [])

        def cell(r):
            return (f"{r['budget']}: gain {r['gain']:+.1f}% [{r['gain_low']:+.1f}, {r['gain_high']:+.1f}], "
                    f"score {r['score']:+.3f} ({r['games']} games)")
        out.append(f"  {c['opponent']} {c['opponent_budget']} | {c['game']} | calibrated {base} {cell(c)}  <->  "
                   + ("uncalibrated " + "; ".join(cell(r) for r in near) if near else
                      f"no uncalibrated {base} cell in {unit}"))
    return out
