"""Statistics of match results: means with 95% intervals that hold for clustered games.

Games are not independent: the searches are deterministic, so the games of one network pair from
one opening are near-duplicates, and both seats of a pairing share their opening. The unit of
independent information is the *cluster* (network pair x opening, see ``descent.tournament``), and
the intervals here are built on clusters:

- the variance of the mean is the cluster-robust (CR1, "sandwich") variance of a ratio estimator,
  ``G/(G-1) * sum_g (y_g - m n_g)^2 / N^2`` over the G clusters (y_g: the sum of the cluster's
  results, n_g its games, N all games);
- it is turned into an effective number of independent observations (Kish's design effect),
  ``n_eff = p(1-p) / var`` on the [0, 1] scale of the result, and a Wilson score interval is drawn
  with ``n_eff`` observations and the critical value of Student's t with G-1 degrees of freedom
  (scipy.stats). ``n_eff`` is not capped at the number of games: a draw (0) varies less than a
  win or a loss, so a cell rich in draws is worth more than that many Bernoulli trials, and its
  interval is as narrow as its variance says. Wilson intervals stay inside the bounds and keep a sensible width at the extremes:
  when every game is a win (no variance to estimate) each cluster counts as one binomial trial
  (normal critical value), so 16 clusters of wins give [+61, +100] on the gain scale, 4 give
  [+2, +100] and one game gives [-59, +100], never a radius of 0 or infinity.
- scores (mean f_t, continuous, often far less variable than the Bernoulli bound) use the
  cluster-robust t interval itself, clipped to [-1, 1] (``method='t'``).
- ``network_interval`` generalises to pools of networks, not only to these networks: the games of
  one high network (or of one low network) share that network, so the variance is the two-way
  cluster-robust one of Cameron, Gelbach & Miller (2011), ``V_high + V_low - V_pair`` (each CR1,
  clustered by the high network, by the low network and by the pair; never below the variance over
  the pair x opening units), with min(G_high, G_low) - 1 degrees of freedom. With two networks a
  pool that is one degree of freedom: the interval says how little two networks tell of a pool.

``tests/test_protocol.py`` checks the coverage of these intervals on simulated clustered data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054


def mean_ci(values) -> tuple[float, float]:
    """Mean and the radius of its 95% confidence interval for independent values (normal
    approximation, sample std). Kept for simple continuous measurements; match results use
    ``cluster_interval``."""
    values = list(values)
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(values) / n
    if n == 1:
        return m, float("inf")
    var = sum((x - m) ** 2 for x in values) / (n - 1)
    return m, Z95 * math.sqrt(var / n)


@dataclass(frozen=True)
class Interval:
    """A mean of bounded results with its confidence interval (all in the results' own units)."""

    mean: float
    low: float
    high: float
    games: int           # observations behind the mean
    units: int           # independent units (clusters) behind the mean
    n_eff: float         # effective number of independent observations
    var: float           # variance of the mean on the [0, 1] scale (NaN when not estimable)
    df: float            # degrees of freedom of the critical value (inf: normal)
    lo: float = -1.0     # the bounds of one result
    hi: float = 1.0

    @property
    def radius(self) -> float:
        """Half the width of the interval (it need not be symmetric about the mean)."""
        return (self.high - self.low) / 2.0

    def scaled(self, k: float) -> Interval:
        return Interval(self.mean * k, self.low * k, self.high * k, self.games, self.units, self.n_eff,
                        self.var, self.df, self.lo * k, self.hi * k)

    def separated_from(self, value: float) -> int:
        """+1 when the whole interval lies above ``value``, -1 below, 0 when it contains it."""
        return 1 if self.low > value else (-1 if self.high < value else 0)


def _critical(level: float, df: float) -> float:
    q = 1.0 - (1.0 - level) / 2.0
    from scipy import stats as _st      # lazy: importing scipy.stats costs ~1 s of CPU, and
    # `descent play` reaches this module (through the calibration) without computing an interval
    return float(_st.norm.ppf(q)) if not math.isfinite(df) or df <= 0 else float(_st.t.ppf(q, df))


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(max(p * (1.0 - p), 0.0) / n + z * z / (4.0 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _from_p(p: float, var: float, games: int, units: int, df: float, level: float, lo: float,
            hi: float, method: str = "wilson") -> Interval:
    q = p * (1.0 - p)
    span = hi - lo
    if method == "t" and var > 0.0 and q > 1e-15 and math.isfinite(df) and df > 0:
        # continuous results (scores): cluster-robust t interval, clipped to the bounds
        half = _critical(level, df) * math.sqrt(var)
        return Interval(lo + span * p, lo + span * max(0.0, p - half), lo + span * min(1.0, p + half), games,
                        units, min(float(games), q / var), var, df, lo, hi)
    if q <= 1e-15:
        # all at a bound: no variance to estimate; each independent unit counts as one binomial trial
        # (normal critical value: Wilson's interval for units successes out of units)
        n_eff, df = float(units), float("inf")
    elif not (var > 0.0):
        n_eff, df = float(games), float("inf")   # identical cluster means: at most one per game
    else:
        n_eff = max(1.0, q / var)
    a, b = _wilson(p, n_eff, _critical(level, df))
    return Interval(lo + span * p, lo + span * a, lo + span * b, games, units, n_eff, var, df, lo, hi)


def interval_from_variance(mean: float, var: float, games: int, units: int, df: float, level: float = 0.95,
                           method: str = "wilson", lo: float = -1.0, hi: float = 1.0) -> Interval:
    """The interval ``cluster_interval`` draws for a mean, the variance of the mean on the [0, 1]
    scale, games, units and degrees of freedom (an earlier report's cell, drawn again under the
    current rule)."""
    return _from_p((mean - lo) / (hi - lo), var, games, units, df, level, lo, hi, method)


def interval_from_bounds(mean: float, low: float, high: float, games: int, units: int, level: float = 0.95,
                         method: str = "wilson") -> Interval:
    """The ``Interval`` that ``cluster_interval`` drew with these bounds, for results in [-1, 1] (an
    earlier report's cell, whose variance was not written down), by inverting ``_from_p``: Wilson,
    the effective number of observations whose interval has this width; t, the variance whose
    half-width it is; the degrees of freedom, units - 1. (Reports written before the effective
    number of observations was uncapped capped it at the number of games: their variance is taken
    at the cap, which is what they drew.)"""
    p = (mean + 1.0) / 2.0
    a, b = (low + 1.0) / 2.0, (high + 1.0) / 2.0
    q = p * (1.0 - p)
    df = float(units - 1) if units >= 2 else float("inf")
    if q <= 1e-15:
        return Interval(mean, low, high, games, units, float(units), 0.0, float("inf"))
    z = _critical(level, df)
    if method == "t":
        half = (p - a) if a > 0.0 else (b - p)
        var = (half / z) ** 2 if half > 0 else 0.0
        return Interval(mean, low, high, games, units, min(float(games), q / var) if var > 0 else float(games),
                        var, df)

    def excess(n: float) -> float:          # the width falls as n grows
        lo_, hi_ = _wilson(p, n, z)
        return hi_ - lo_ - (b - a)
    top = float(max(games, 1)) * 1e6
    if excess(top) >= 0.0:
        n_eff = top
    else:
        from scipy.optimize import brentq  # lazy: scipy (heavy; only for an earlier report's cells)
        n_eff = float(brentq(excess, 1e-6, top, xtol=1e-12, rtol=1e-12))
    return Interval(mean, low, high, games, units, n_eff, q / n_eff, df)


def cluster_interval(values, clusters=None, lo: float = -1.0, hi: float = 1.0,
                     level: float = 0.95, method: str = "wilson") -> Interval:
    """Mean of ``values`` (each in [lo, hi]) with a cluster-robust interval.

    ``clusters``: one label per value naming its independent unit (None: every value its own unit).
    ``method``: 'wilson' for results in {-1, 0, 1} (binary gain); 't' for continuous values
    (scores), whose variance can be far below the Bernoulli bound: mean +- t(G-1) x the CR1 standard
    error, clipped to the bounds (Wilson when no variance can be estimated).
    """
    p_i = _unit_scale(values, lo, hi)
    n = len(p_i)
    if n == 0:
        nan = float("nan")
        return Interval(nan, nan, nan, 0, 0, 0.0, nan, nan, lo, hi)
    labels = list(range(n)) if clusters is None else list(clusters)
    if len(labels) != n:
        raise ValueError("one cluster label per value")
    var, g = _cr1(p_i, labels)
    df = g - 1.0 if g >= 2 else float("inf")
    return _from_p(float(p_i.mean()), var, n, g, df, level, lo, hi, method)


def _unit_scale(values, lo: float, hi: float) -> np.ndarray:
    v = np.clip(np.asarray(list(values), dtype=float), lo, hi)
    return (v - lo) / (hi - lo)


def _cr1(p_i: np.ndarray, labels) -> tuple[float, int]:
    """The CR1 variance of the mean of ``p_i`` clustered by ``labels``, and the number of clusters
    (NaN variance with one cluster)."""
    n = len(p_i)
    _, inv = np.unique(np.asarray([str(c) for c in labels]), return_inverse=True)
    g = int(inv.max()) + 1
    if g < 2:
        return float("nan"), g
    y = np.bincount(inv, weights=p_i, minlength=g)
    ng = np.bincount(inv, minlength=g).astype(float)
    p = float(p_i.mean())
    return g / (g - 1.0) * float(((y - p * ng) ** 2).sum()) / (n * n), g


def network_interval(values, units, high, low, lo: float = -1.0, hi: float = 1.0, level: float = 0.95,
                     method: str = "wilson") -> Interval:
    """The mean of ``values`` with an interval for pools of networks: ``high`` and ``low`` name each
    game's two networks, ``units`` its pair x opening unit. Two-way cluster-robust variance over
    the high and the low networks (Cameron, Gelbach & Miller 2011), at least the variance over the
    units, with min(G_high, G_low) - 1 degrees of freedom (see the module's text). Its ``units``
    are the network pairs."""
    p_i = _unit_scale(values, lo, hi)
    n = len(p_i)
    if n == 0 or not (len(units) == len(high) == len(low) == n):
        if n == 0:
            nan = float("nan")
            return Interval(nan, nan, nan, 0, 0, 0.0, nan, nan, lo, hi)
        raise ValueError("one unit, high and low label per value")
    pairs = [f"{h}|{o}" for h, o in zip(high, low)]
    v_h, g_h = _cr1(p_i, high)
    v_l, g_l = _cr1(p_i, low)
    v_hl, g_hl = _cr1(p_i, pairs)
    v_u, _ = _cr1(p_i, units)
    if g_h < 2 or g_l < 2:
        # one network on a side: its pool has no spread to estimate; only the other side and the units
        v = v_h if g_l < 2 and g_h >= 2 else v_l if g_h < 2 and g_l >= 2 else v_u
        df = (max(g_h, g_l) - 1.0) if max(g_h, g_l) >= 2 else float("inf")
    else:
        v = v_h + v_l - (v_hl if math.isfinite(v_hl) else 0.0)
        df = min(g_h, g_l) - 1.0
    parts = [x for x in (v, v_u) if math.isfinite(x)]
    v = max(parts) if parts else float("nan")
    return _from_p(float(p_i.mean()), v, n, g_hl, df, level, lo, hi, method)


def average_intervals(parts: list[Interval], level: float = 0.95, method: str = "wilson") -> Interval:
    """The mean of independent estimates (e.g. one per game), with its interval: variances add,
    degrees of freedom by Welch-Satterthwaite."""
    parts = [x for x in parts if x.games > 0]
    if not parts:
        nan = float("nan")
        return Interval(nan, nan, nan, 0, 0, 0.0, nan, nan)
    lo, hi = parts[0].lo, parts[0].hi
    k = len(parts)
    ps = [(x.mean - x.lo) / (x.hi - x.lo) for x in parts]
    # each part's variance on the [0, 1] scale; where none could be estimated, the one its n_eff implies
    vs = []
    for x, p in zip(parts, ps):
        v = x.var if math.isfinite(x.var) and x.var > 0 else p * (1 - p) / max(x.n_eff, 1.0)
        vs.append(v)
    p = sum(ps) / k
    var = sum(vs) / (k * k)
    terms = [(v / (k * k)) ** 2 / (x.df if math.isfinite(x.df) and x.df > 0 else 1e9)
             for v, x in zip(vs, parts)]
    df = (var * var / sum(terms)) if var > 0 and sum(terms) > 0 else float(sum(x.units for x in parts) - k)
    return _from_p(p, var, sum(x.games for x in parts), sum(x.units for x in parts), df, level, lo, hi,
                   method)


@dataclass(frozen=True)
class MatchSummary:
    """Results from one agent's point of view; intervals by ``cluster_interval`` (every game its own
    unit unless ``clusters`` is given)."""

    games: int
    wins: int
    draws: int
    losses: int
    gain: float          # mean binary result, in [-1, 1]
    gain_radius: float   # half the width of its 95% interval
    score: float         # mean terminal evaluation f_t
    score_radius: float
    gain_ci: Interval | None = None
    score_ci: Interval | None = None

    @classmethod
    def from_results(cls, binaries, scores, clusters=None) -> MatchSummary:
        binaries, scores = list(binaries), list(scores)
        g = cluster_interval(binaries, clusters)
        s = cluster_interval(scores, clusters, method="t")
        return cls(len(binaries), sum(1 for b in binaries if b > 0), sum(1 for b in binaries if b == 0),
                   sum(1 for b in binaries if b < 0), g.mean, g.radius, s.mean, s.radius, g, s)
