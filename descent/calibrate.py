"""Calibrating a balanced player: the search budget at which its gain (or score) against an
opponent reaches a target (``descent calibrate``).

The Minibal paper (section 5.1) observes that against a weaker opponent the mean binary gain of
Unbounded Minibal_+ grows monotonically with its search budget until it reaches zero (and above it
for much weaker opponents). The budget that gives a target gain is therefore the root of a noisy
monotone curve, which we locate by **probabilistic bisection** (Horstein; Waeber, Frazier and
Henderson, "Bisection search with noisy responses", SIAM J. Control Optim. 2013) on a grid of
budgets spaced evenly in log-budget:

* ``X``, the index of the first grid budget whose gain is at or above the target, has a posterior
  over ``0 .. G`` (``X = G``: no budget in range reaches the target, the opponent is too strong;
  ``X = 0`` and the smallest budget already above the target: the opponent is too weak). It starts
  uniform.
* Each step queries the grid budget at the posterior median (the j whose question
  "X <= j?" splits the posterior closest to evenly). There, games are played in pairs (one
  in each seat) and a sequential test compares the mean of ``y - target`` (``y`` the game's gain or
  score, the balanced player's view) with zero: ``|mean| > z * se`` with a variance floor of
  ``1 - target**2`` worth two pseudo-games, so that two straight wins do not decide. A decided
  test is a noisy answer "below" or "above" whose correctness we take to be ``p`` (0.8): the
  posterior on the side it supports is multiplied by ``p``, the other side by ``1 - p``. Far from
  the answer a test decides after 4-6 games; near it, it does not decide, and games concentrate
  there. This is why a bisection rather than Robbins-Monro stochastic approximation: the outcome of
  one game is ternary and very noisy, the curve can be flat (long runs of draws), and a bisection
  with tests spends its games where the answer is unclear, gives a budget interval directly
  (the nearest budgets decided below and above), and detects an unreachable target as posterior
  mass piling up at an end of the range.
* A test that has not decided after ``segment`` games ends the visit without an answer; when the
  budget has ``near_games`` games in all and the target is still inside the 95% confidence interval
  of its mean, it is the answer ("near").
* Stops: a "near" budget; posterior mass >= ``1 - alpha`` on one crossing between two adjacent grid
  budgets (answer: the one whose mean is closer to the target, in standard errors); mass
  >= ``1 - alpha`` at an end of the range (refusal, saying which way); or ``max_games`` spent
  (the best budget so far, marked not converged).

Persistence: every finished game is appended (and fsynced) to a per-game log,
``<run>/calibrations/<name>.games.jsonl``, keyed by (budget, k) where k counts the games at that
budget; the design is a pure function of that log (games at a budget are consumed in k order), so a
rerun after a kill replays it and continues with the next game, never repeating one. With iteration
budgets every game is reproducible from its seed. The result is one JSON file,
``<run>/calibrations/<name>.json``, written to a temporary name and renamed.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from games.errors import GameError
from descent.stats import Z95, mean_ci
from training import fileio
from training.fileio import crash_point

SUBDIR = "calibrations"


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
    ratio: float = 2 ** 0.25
    opponent_budget: str = "iterations=200"
    seed: int = 0
    opening_plies: int = 4
    max_games: int = 400
    segment: int = 12
    near_games: int = 40
    z: float = 2.0
    p: float = 0.8
    alpha: float = 0.1

    def __post_init__(self):
        # one spelling per value, so that the CLI and the API name the same calibration the same way
        self.target = float(self.target)
        for k in ("low", "high"):
            v = float(getattr(self, k))
            setattr(self, k, int(v) if self.unit == "iterations" and v.is_integer() else v)

    def game_key(self) -> dict:
        """What determines the games themselves (not the design's target or metric)."""
        return {"game": self.game, "algorithm": self.algorithm, "against": self.against,
                "opponent_budget": self.opponent_budget if self.against == "pool" else None,
                "unit": self.unit, "seed": self.seed, "opening_plies": self.opening_plies}

    def design_key(self) -> dict:
        return {**self.game_key(), "target": self.target, "metric": self.metric, "low": self.low,
                "high": self.high, "ratio": self.ratio, "max_games": self.max_games,
                "segment": self.segment, "near_games": self.near_games, "z": self.z, "p": self.p,
                "alpha": self.alpha}


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


def grid(s: Settings) -> list:
    """Budgets from ``low`` to ``high`` spaced by about ``ratio`` in log-budget (distinct values)."""
    if s.unit not in ("iterations", "time"):
        raise CalibrationError(f"unit {s.unit!r}: expected iterations or time")
    if not (s.low > 0 and s.high > s.low and math.isfinite(s.high)):
        raise CalibrationError(f"budget range {s.low:g}..{s.high:g}: need 0 < low < high, both finite")
    from games.validate import MAX_COUNT, MAX_SECONDS
    top = MAX_COUNT if s.unit == "iterations" else MAX_SECONDS
    if s.high > top:
        raise CalibrationError(f"budget range {s.low:g}..{s.high:g}: high must be at most {top:g}")
    if s.unit == "iterations" and (s.low != int(s.low) or s.high != int(s.high)):
        raise CalibrationError(f"budget range {s.low:g}..{s.high:g}: iterations must be whole numbers")
    if not s.ratio > 1:
        raise CalibrationError("ratio must be > 1")
    steps = max(1, math.ceil(math.log(s.high / s.low) / math.log(s.ratio) - 1e-9))
    out = []
    for i in range(steps + 1):
        v = s.low * (s.high / s.low) ** (i / steps)
        v = int(round(v)) if s.unit == "iterations" else float(f"{v:.3g}")
        if not out or v > out[-1]:
            out.append(v)
    return out


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
        from search_ext.agents import parse_agent
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
            from descent.budgets import parse_budget
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
        from descent.networks import make_agent
        if spec not in self.cache:
            if len(self.cache) > 24:
                self.cache.clear()
            self.cache[spec] = make_agent(spec, self.s.game)
        return self.cache[spec]

    def task(self, budget, k: int) -> dict:
        """Game ``k`` at ``budget`` as plain data (``descent.match.play_task``: a Ray task)."""
        pair = (k // 2) % len(self.pairs)
        seed = (self.s.seed * 1_000_003 + zlib.crc32(str(budget).encode()) + pair) & 0x7FFFFFFF
        return {"game": self.s.game, "agent_a": self.spec(budget, pair), "agent_b": self.pairs[pair][2],
                "index": k, "seed": seed, "a_first": k % 2 == 0, "budget": budget, "k": k,
                "opponent": self.pairs[pair][3], "net": self.pairs[pair][1],
                "opening": self.opening(k)}

    def opening(self, k: int) -> list[str]:
        """The seeded random opening of game ``k``: the same for both seats of a pair (k // 2) and at
        every budget. Without it, deterministic players (Minimax, Minibal_+ on iteration budgets)
        replay one game per seat: 24 games were 2 games repeated."""
        from descent.match import make_opening
        if self.s.opening_plies <= 0:
            return []
        key = k // 2
        if key not in self._openings:
            self._openings[key] = make_opening(self.s.game, self.s.opening_plies,
                                               f"{self.s.seed}|calibrate|{key}")
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
        from descent.match import play_game
        t = self.task(budget, k)
        t0 = time.perf_counter()
        rec = play_game(self.s.game, self.agent(t["agent_a"]), self.agent(t["agent_b"]), k, t["seed"],
                        a_first=t["a_first"], opening=t["opening"])
        return self.record(t, rec, time.perf_counter() - t0)


# ---- the design ------------------------------------------------------------------------------------

def test_mean(zs: list, z: float, prior_var: float, n0: float = 2.0) -> int:
    """Sequential test of mean(zs) against 0 on complete pairs: +1 above, -1 below, 0 undecided."""
    n = len(zs) - len(zs) % 2
    if n < 2:
        return 0
    xs = zs[:n]
    m = sum(xs) / n
    ss = sum((x - m) ** 2 for x in xs)
    var = (ss + prior_var * n0) / (n - 1 + n0)
    r = z * math.sqrt(var / n)
    return 1 if m - r > 0 else -1 if m + r < 0 else 0


@dataclass
class Design:
    s: Settings
    budgets: list
    posterior: list = field(default_factory=list)
    used: dict = field(default_factory=dict)        # budget -> games consumed so far
    values: dict = field(default_factory=dict)      # budget -> list of y (metric values)
    steps: list = field(default_factory=list)

    def __post_init__(self):
        g = len(self.budgets)
        self.posterior = [1.0 / (g + 1)] * (g + 1)

    @property
    def prior_var(self) -> float:
        return max(0.05, 1.0 - self.s.target ** 2)

    def median(self) -> int:
        """The grid index j whose question "X <= j?" is closest to an even split of the posterior
        (on a discrete grid the plain median can be a question whose answer is already known)."""
        best, best_gap, c = 0, 2.0, 0.0
        for j in range(len(self.budgets)):
            c += self.posterior[j]
            if abs(c - 0.5) < best_gap - 1e-12:
                best, best_gap = j, abs(c - 0.5)
        return best

    def update(self, j: int, above: bool) -> None:
        p = self.s.p
        post = [w * (p if ((x <= j) == above) else 1 - p) for x, w in enumerate(self.posterior)]
        tot = sum(post)
        self.posterior = [w / tot for w in post]

    def decision(self, budget) -> int:
        zs = [y - self.s.target for y in self.values.get(budget, [])]
        return test_mean(zs, self.s.z, self.prior_var)

    def summary(self, budget) -> dict:
        ys = self.values.get(budget, [])
        m, r = mean_ci(ys)           # NaN without games, an infinite radius with one: null in JSON
        return {"budget": budget, "games": len(ys), "mean": _finite(m), "radius": _finite(r),
                "decision": {1: "above", -1: "below", 0: "undecided"}[self.decision(budget)]}


def calibrate(s: Settings, run_dir, echo=None, progress: bool = False, stop_after: int | None = None,
              players=None, ray_address: str | None = None, width: int | None = None) -> dict:
    """Run (or resume) a calibration; returns the result dict (also written to the run).

    Raises ``Unreachable`` (with the result saved) when no budget in range reaches the target.
    ``stop_after`` plays at most that many new games in this call (returns ``None`` if unfinished):
    for tests of resumption. ``players`` replaces the game player (anything with
    ``play(budget, k) -> record``), to study the design on a known curve.

    ``ray_address``: the games are Ray tasks (``descent.match.play_task``). When the design needs
    game k at a budget, games k .. k+width-1 there (``width``: the cluster's CPUs, at most what the
    visit can still use) are played at once; the driver appends each to the log as it returns, and
    the design consumes them in k order as before, so the answer is the serial one (with iteration
    budgets) and a game played ahead is kept for the next visit to that budget."""
    if s.metric not in ("gain", "score"):
        raise CalibrationError(f"metric {s.metric!r}: expected gain or score")
    if not -1.0 < s.target < 1.0:
        raise CalibrationError(f"target {s.target:g}: must lie strictly between -1 and 1")
    for k in ("max_games", "segment", "near_games"):
        if getattr(s, k) < 2:
            raise CalibrationError(f"{k} must be >= 2")
    if not isinstance(s.opening_plies, int) or isinstance(s.opening_plies, bool) \
            or not 0 <= s.opening_plies <= 1000:
        raise CalibrationError(f"opening_plies {s.opening_plies!r}: expected an integer in 0..1000")
    budgets = grid(s)
    run_dir = Path(run_dir)
    players = players or Players(s, run_dir)
    out_dir = run_dir / SUBDIR
    fileio.check_writable_dir(out_dir, CalibrationError, "calibration folder")   # before any game
    res_name, log_name = names(s)
    res_path, log_path = out_dir / res_name, out_dir / log_name
    batch = None
    if ray_address is not None:
        from descent.distributed import cluster_cpus, run_tasks_ray
        from descent.match import play_task
        width = width or cluster_cpus(ray_address)

        def batch(tasks):
            t0 = time.perf_counter()
            for task, rec in run_tasks_ray(tasks, ray_address, play_task):
                yield players.record(task, rec, rec.seconds_a + rec.seconds_b or time.perf_counter() - t0)
    with lock_log(log_path):
        # temporary files of this calibration's log and result (no one else writes them while we
        # hold the lock), and of writers that are dead; never a live calibration's
        fileio.clean_temp_files(out_dir, scope={res_name, log_name})
        return _calibrate(s, budgets, players, log_path, res_path, echo, progress, stop_after,
                          batch, max(1, width or 1))


def lock_log(log_path: Path) -> fileio.FileLock:
    """The exclusive lock on a calibration's game log, ``<log>.lock`` (released when the process
    ends, even by SIGKILL): it covers the log and the results computed from it.
    ``CalibrationError`` if another process holds it."""
    log_path = Path(log_path)
    lock = log_path.with_name(log_path.name + ".lock")
    return fileio.FileLock(lock, timeout=0, error=CalibrationError,
                           busy=f"{lock.parent}: another process is running this calibration "
                                f"(lock {lock.name} is held); wait for it or stop it")


def _calibrate(s, budgets, players, log_path, res_path, echo, progress, stop_after, batch=None, width=1):
    log = read_log(log_path)
    d = Design(s, budgets)
    spent = 0
    new = 0
    t0 = time.perf_counter()
    key = "result" if s.metric == "gain" else "score"

    def logged(rec):
        nonlocal new
        if rec.get("aborted"):
            # an outside engine failed: the game goes to the aborted log, never into the design
            aborted_path = log_path.with_name(log_path.name.replace(".games.jsonl", "") + ".aborted.jsonl")
            append_log(aborted_path, rec)
            raise CalibrationError(f"game k={rec['k']} at {budget_text(s.unit, rec['budget'])} was aborted, "
                                   f"not scored ({rec['aborted']}); rerun to play it again")
        append_log(log_path, rec)
        crash_point("calibrate_logged")
        log[(rec["budget"], rec["k"])] = rec
        new += 1
        if echo and progress:
            echo(f"  game {new}: {budget_text(s.unit, rec['budget'])} k={rec['k']} -> {rec['result']:+d}")

    def next_game(budget, ahead=1):
        nonlocal spent
        k = d.used.get(budget, 0)
        rec = log.get((budget, k))
        if rec is None:
            if stop_after is not None and new >= stop_after:
                return None
            if batch is None:
                logged(players.play(budget, k))
            else:       # games k, k+1, ... at once, as many as the cluster runs and the visit uses
                n = max(1, min(width, ahead, stop_after - new if stop_after is not None else width))
                ks = [x for x in range(k, k + n) if (budget, x) not in log]
                for r in batch([players.task(budget, x) for x in ks]):
                    logged(r)
            rec = log[(budget, k)]
        d.used[budget] = k + 1
        d.values.setdefault(budget, []).append(float(rec[key]))
        spent += 1
        return rec

    status, answer, converged = None, None, True
    while status is None:
        if spent >= s.max_games:
            status, converged = "done", False
            break
        top = max(range(len(d.posterior)), key=lambda x: d.posterior[x])
        if d.posterior[top] >= 1 - s.alpha:
            if top == len(budgets):
                status = "too_strong"
            elif top == 0:
                status = "too_weak"
            else:
                lo_b, hi_b = budgets[top - 1], budgets[top]
                answer = min((lo_b, hi_b), key=lambda b: _distance(d, b))
                status = "done"
            break
        j = d.median()
        b = budgets[j]
        seg: list = []
        verdict = 0
        while len(seg) < s.segment and spent < s.max_games:
            rec = next_game(b, min(s.segment - len(seg), s.max_games - spent))
            if rec is None:
                return None
            seg.append(float(rec[key]) - s.target)
            verdict = test_mean(seg, s.z, d.prior_var)
            if verdict and len(seg) % 2 == 0:
                break
        step = {"budget": b, "games": len(seg), "segment": verdict}
        if verdict == 0:
            whole = d.decision(b)
            step["cumulative"] = whole
            if whole == 0 and len(d.values[b]) >= s.near_games:
                answer, status = b, "done"
                step["near"] = True
            elif whole != 0:
                verdict = whole
        if verdict:
            d.update(j, verdict > 0)
        step["posterior_top"] = round(max(d.posterior), 4)
        d.steps.append(step)
        if echo:
            word = {1: "above", -1: "below", 0: "undecided"}[verdict]
            echo(f"  {budget_text(s.unit, b)}: {len(seg)} game(s), {word} "
                 f"({len(d.values[b])} there in all, {spent} spent)")
    points = [d.summary(b) for b in budgets if b in d.values]
    result = {"version": 1, "settings": s.design_key(), "status": status, "converged": converged,
              "games": spent, "games_played_this_call": new, "seconds_this_call": time.perf_counter() - t0,
              "points": points, "steps": d.steps, "grid": budgets,
              "posterior": [round(w, 6) for w in d.posterior], "log": str(log_path),
              "algorithm": s.algorithm, "against": s.against, "metric": s.metric, "target": s.target,
              "unit": s.unit, "game": s.game, "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if status == "done":
        if answer is None:      # games spent without convergence: the best-supported budget so far
            tested = [b for b in budgets if len(d.values.get(b, [])) >= 2]
            answer = min(tested, key=lambda b: _distance(d, b)) if tested else budgets[d.median()]
        lower = [p for p in points if p["budget"] < answer and p["decision"] == "below"]
        upper = [p for p in points if p["budget"] > answer and p["decision"] == "above"]
        at = d.summary(answer)
        result.update({"budget": answer, "spec": _join(s.algorithm, budget_text(s.unit, answer)),
                       "interval": [lower[-1]["budget"] if lower else budgets[0],
                                    upper[0]["budget"] if upper else budgets[-1]],
                       "interval_open": [not lower, not upper],
                       "at_budget": at})
    fileio.write_json(res_path, result)
    if status in ("too_strong", "too_weak"):
        end = budgets[-1] if status == "too_strong" else budgets[0]
        at = d.summary(end)
        what = "gain" if s.metric == "gain" else "score"
        val = _measured(at, s.metric, 0, 3)
        fmt = f"{100 * s.target:+.0f}%" if s.metric == "gain" else f"{s.target:+.3f}"
        side = ("below the target even at the largest" if status == "too_strong"
                else "above the target even at the smallest")
        who = "strong" if status == "too_strong" else "weak"
        raise Unreachable(f"no budget in {budgets[0]}..{budgets[-1]} {'s' if s.unit == 'time' else s.unit} reaches {what} {fmt}: "
                          f"the opponent is too {who} ({what} {val} over {at['games']} games, {side} "
                          f"budget {budget_text(s.unit, end)}; {spent} games spent)", status, result)
    return result


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _measured(at: dict, metric: str, gain_digits: int, score_digits: int) -> str:
    """``mean ± radius`` of a budget's summary (``?`` for what one game cannot tell)."""
    m, r = at["mean"], at["radius"]
    if metric == "gain":
        return (f"{100 * m:+.{gain_digits}f}%" if m is not None else "?") + \
            (f" ± {100 * r:.{gain_digits}f}" if r is not None else " ± ?")
    return (f"{m:+.{score_digits}f}" if m is not None else "?") + \
        (f" ± {r:.{score_digits}f}" if r is not None else " ± ?")


def _distance(d: Design, b) -> float:
    ys = d.values.get(b, [])
    if not ys:
        return float("inf")
    m = sum(ys) / len(ys)
    var = (sum((y - m) ** 2 for y in ys) + d.prior_var * 2) / (len(ys) - 1 + 2)
    return abs(m - d.s.target) / math.sqrt(var / len(ys))


def describe(result: dict) -> str:
    """One paragraph for the terminal."""
    at = result["at_budget"]
    unit = result["unit"]
    lo, hi = result["interval"]
    olo, ohi = result.get("interval_open", [False, False])
    metric = result["metric"]
    val = f"{metric} {_measured(at, metric, 1, 3)}"
    tgt = f"{100 * result['target']:+.0f}%" if metric == "gain" else f"{result['target']:+.3f}"
    conv = "" if result["converged"] else " (NOT converged: the game budget ran out; rerun with more --max-games)"
    word = "s" if unit == "time" else unit
    return (f"{result['game']}: {result['algorithm']} against {result['against']} reaches {metric} {tgt} at "
            f"{unit}={result['budget']} (interval {'<=' if olo else ''}{lo} .. {'>=' if ohi else ''}{hi} {word}); "
            f"measured there: {val} over {at['games']} games (95%); {result['games']} games spent{conv}")


# ---- looking calibrations up -------------------------------------------------------------------------

def find_calibration(game: str, algorithm: str = "minibal_plus", root=None, run_dir=None,
                     against: str | None = None, prefer_against: str = "pool") -> dict | None:
    """The calibrated result to use for ``game`` and ``algorithm`` (its name, without options), or
    None. Looks in ``run_dir``, else in every run under ``root``; prefers, in order: calibrations
    against an opponent starting with ``prefer_against``, target 0 with the gain metric, converged
    ones, iterations, the newest."""
    from training.run import DEFAULT_ROOT
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
