"""Statistics of match results: means with 95% confidence radii."""
from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054


def mean_ci(values) -> tuple[float, float]:
    """Mean and the radius of its 95% confidence interval (normal approximation, sample std)."""
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
class MatchSummary:
    """Results from one agent's point of view."""

    games: int
    wins: int
    draws: int
    losses: int
    gain: float          # mean binary result, in [-1, 1]
    gain_radius: float
    score: float         # mean terminal evaluation f_t
    score_radius: float

    @classmethod
    def from_results(cls, binaries, scores) -> "MatchSummary":
        binaries, scores = list(binaries), list(scores)
        g, gr = mean_ci(binaries)
        s, sr = mean_ci(scores)
        return cls(len(binaries), sum(1 for b in binaries if b > 0), sum(1 for b in binaries if b == 0),
                   sum(1 for b in binaries if b < 0), g, gr, s, sr)
