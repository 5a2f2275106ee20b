"""The design of a calibration: what is calibrated (``Settings``), the fitted curve (``Fit``), where
each round's games go (``round_budgets``), when to stop (``Design.status``), and the result.

The model, rounds, answer and stops are described in ``descent.calibrate``'s docstring. Everything
here is a pure function of the games consumed so far (``Design.add``), in (budget, k) order: the
design never plays a game or reads a file.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass

import numpy as np

from games.errors import GameError
from games.validate import MAX_COUNT, MAX_SECONDS
from descent.stats import mean_ci

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


def digest(d: dict) -> str:
    return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:10]


def join_spec(spec: str, extra: str) -> str:
    """An agent spec with more options (``minimax`` + ``net=x`` -> ``minimax:net=x``)."""
    return spec + ("," if ":" in spec else ":") + extra if extra else spec


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


def check_settings(s: Settings) -> None:
    """``CalibrationError`` unless the settings describe a design that can run."""
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


def _point(s: Settings, fit: Fit, b, ys: list) -> dict:
    """A budget's own games (mean and 95% radius) and the fitted gain there."""
    m, r = mean_ci(ys)           # NaN without games, an infinite radius with one: null in JSON
    fm, flo, fhi = fit.gain(b)
    return {"budget": b, "games": len(ys), "mean": _finite(m), "radius": _finite(r),
            "fitted": round(fm, 6), "fitted_low": round(flo, 6), "fitted_high": round(fhi, 6)}


def fmt_metric(metric: str, v: float) -> str:
    return f"{100 * v:+.1f}%" if metric == "gain" else f"{v:+.3f}"


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None




class Tally:
    """The games the design has consumed, per budget (in k order): the metric's values, and the
    fit's data, (games, sum of u, sum of u^2) with ``u = (y + 1) / 2`` clipped to [0, 1]."""

    def __init__(self, metric: str):
        self.key = "result" if metric == "gain" else "score"
        self.values: dict = {}            # budget -> metric values, in k order
        self.data: dict = {}              # budget -> (games, sum u, sum u^2)
        self.spent = 0

    def add(self, budget, rec: dict) -> None:
        y = float(rec[self.key])
        self.values.setdefault(budget, []).append(y)
        u = min(1.0, max(0.0, (y + 1) / 2))
        n, su, sq = self.data.get(budget, (0, 0.0, 0.0))
        self.data[budget] = (n + 1, su + u, sq + u * u)
        self.spent += 1


def stop(s: Settings, fit: Fit, answer, tally: Tally) -> tuple[str | None, bool]:
    """(status, converged) after a round: ``too_strong``/``too_weak`` (the target is out of reach
    at an end of the range), ``done`` (converged, or the game budget spent: not converged), or
    None to play another round."""
    g = fit.gain(answer)
    if answer == snap(s, s.high) and g[2] < s.target:
        return "too_strong", True
    if answer == snap(s, s.low) and g[1] > s.target:
        return "too_weak", True
    if (g[2] - g[1]) / 2 <= s.precision and near_games(s, fit, answer, tally.values)[2] >= s.near_games:
        return "done", True
    if tally.spent >= s.max_games:
        return "done", False
    return None, True


def round_keys(s: Settings, fit: Fit, r: int, tally: Tally) -> tuple[list, list]:
    """(the budgets of round ``r``'s seat pairs, the round's games ``(budget, k)``): each pair's two
    games are the next two at its budget, within what is left of ``max_games``."""
    pairs = round_budgets(s, fit, r)
    pairs = pairs[:max(1, (s.max_games - tally.spent) // 2)]
    keys: list = []
    used: dict = {}
    for b in pairs:
        k = len(tally.values.get(b, ())) + used.get(b, 0)
        keys += [(b, k), (b, k + 1)]
        used[b] = used.get(b, 0) + 2
    return pairs, keys


def round_step(s: Settings, fit: Fit, r: int, pairs: list, tally: Tally) -> dict:
    """The record of round ``r`` once its games are consumed and ``fit`` refitted."""
    answer = fit.answer()
    counts: dict = {}
    for b in pairs:
        counts[str(b)] = counts.get(str(b), 0) + 2
    return {"round": r, "games": counts, "spent": tally.spent, "answer": answer,
            "fitted": [round(x, 4) for x in fit.gain(answer)]}


def result(s: Settings, fit: Fit, answer, tally: Tally, status: str, converged: bool, steps: list) -> dict:
    """The calibration's result record (without the call's own counts, log path and time)."""
    points = [_point(s, fit, b, tally.values[b]) for b in sorted(tally.values)]
    qlo, qhi = fit.root_quantile(0.025), fit.root_quantile(0.975)
    at = _point(s, fit, answer, tally.values.get(answer, []))
    nlo, nhi, nn = near_games(s, fit, answer, tally.values)
    out = {"version": 2, "design": DESIGN, "settings": s.design_key(), "status": status,
           "converged": converged and status == "done", "games": tally.spent, "points": points,
           "steps": steps, "posterior": fit.summary(), "near": {"low": nlo, "high": nhi, "games": nn},
           "algorithm": s.algorithm, "against": s.against, "metric": s.metric, "target": s.target,
           "unit": s.unit, "game": s.game, "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if status == "done":
        out.update({"budget": answer, "spec": join_spec(s.algorithm, budget_text(s.unit, answer)),
                    "interval": [snap(s, math.exp(qlo)), snap(s, math.exp(qhi))],
                    "interval_open": [qlo < math.log(s.low), qhi > math.log(s.high)],
                    "at_budget": at})
    else:
        out["at_budget"] = at
    return out


def unreachable(s: Settings, fit: Fit, answer, status: str, spent: int, res: dict) -> Unreachable:
    """The error of a target out of reach (``status`` too_strong or too_weak), with its result."""
    g = fit.gain(answer)
    what = "gain" if s.metric == "gain" else "score"
    fmt = f"{100 * s.target:+.0f}%" if s.metric == "gain" else f"{s.target:+.3f}"
    side = ("below the target even at the largest" if status == "too_strong"
            else "above the target even at the smallest")
    who = "strong" if status == "too_strong" else "weak"
    return Unreachable(f"no budget in {s.low}..{s.high} {'s' if s.unit == 'time' else s.unit} reaches {what} {fmt}: "
                       f"the opponent is too {who} (fitted {what} {fmt_metric(s.metric, g[0])} "
                       f"[{fmt_metric(s.metric, g[1])}, {fmt_metric(s.metric, g[2])}], {side} budget "
                       f"{budget_text(s.unit, answer)}; {spent} games spent)", status, res)
