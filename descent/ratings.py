"""Bradley-Terry ratings from pairwise results (draws count half a win), with 95% intervals.

The model: P(i beats j) = 1 / (1 + exp(-(r_i - r_j))). ``fit`` maximises the likelihood by Newton's
method with a small ridge (so that unbeaten players keep finite ratings), centred on mean 0; the
intervals come from the inverse of the observed information. Elo = 400 / ln 10 * r.
"""
from __future__ import annotations

import math

import numpy as np

ELO = 400.0 / math.log(10.0)
Z95 = 1.959963984540054


def fit(n_players: int, games, ridge: float = 1e-2, iterations: int = 100):
    """``games``: iterable of (i, j, s) with s the score of i against j (1, 0.5 or 0).

    Returns (ratings, radii): numpy arrays of Bradley-Terry strengths (natural units, mean 0) and
    the radii of their 95% confidence intervals.
    """
    w = np.zeros((n_players, n_players))   # w[i, j]: points of i against j
    m = np.zeros((n_players, n_players))   # games between i and j
    for i, j, s in games:
        w[i, j] += s
        w[j, i] += 1.0 - s
        m[i, j] += 1
        m[j, i] += 1
    r = np.zeros(n_players)
    for _ in range(iterations):
        d = r[:, None] - r[None, :]
        p = 1.0 / (1.0 + np.exp(-d))
        grad = (w - m * p).sum(axis=1) - ridge * r
        h = m * p * (1 - p)
        hess = -np.diag(h.sum(axis=1)) + h - ridge * np.eye(n_players)
        step = np.linalg.solve(hess, grad)
        r = r - step
        r -= r.mean()
        if np.abs(step).max() < 1e-10:
            break
    d = r[:, None] - r[None, :]
    p = 1.0 / (1.0 + np.exp(-d))
    h = m * p * (1 - p)
    # the information matrix is singular along a common shift of all ratings (fixed by centring):
    # invert it within the centred subspace
    centre = np.eye(n_players) - 1.0 / n_players
    info = np.diag(h.sum(axis=1)) - h + ridge * centre
    cov = np.linalg.pinv(info, hermitian=True)
    radii = Z95 * np.sqrt(np.clip(np.diag(cov), 0, None))
    return r, radii


def point_elo(n_players: int, pairs, anchor: int) -> list[float]:
    """Elo of every player from ``pairs`` [(i, j, [i's scores against j])], player ``anchor`` at 0
    (no interval: a staircase's guide)."""
    r, _ = fit(n_players, [(i, j, s) for i, j, ss in pairs for s in ss])
    return [float((x - r[anchor]) * ELO) for x in r]


def elo_intervals(n_players: int, pairs, anchor: int, boot: int = 300, seed: int = 0) -> list[tuple]:
    """(Elo, low, high) of every player, player ``anchor`` at 0, with 95% intervals from ``boot``
    bootstrap resamples of the games within each pair (``pairs`` as in ``point_elo``)."""
    point = point_elo(n_players, pairs, anchor)
    rng = np.random.default_rng(seed)
    samples = np.array([point_elo(n_players, [(i, j, list(rng.choice(ss, len(ss)))) for i, j, ss in pairs], anchor)
                        for _ in range(boot)]) if boot else np.array([point])
    lo, hi = np.percentile(samples, [2.5, 97.5], axis=0)
    return [(round(point[k], 1), round(float(lo[k]), 1), round(float(hi[k]), 1)) for k in range(n_players)]
