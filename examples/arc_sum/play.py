"""Seed 002's experiment (Reibman & Ballard, section VI, Table 1), vectorized over many random
arc-sum trees at once (``examples.arc_sum.trees``): every player searches the static values (arc sums) of
the nodes a few plies below the current one, with numpy over all trees together.

Players (``Max`` moves at even levels, ``Min`` at odd ones; values are arc sums, Max's view):

* ``Minimax(ply)``: conventional minimax backup of the static values ``ply`` plies down (cut at the
  leaves), the best child for the mover.
* ``Predictive(ps, ply=2, star="first")``: the predictive *-minimax strategy of section V: the
  opponent nodes directly below the root are valued by the weighted average of their children sorted
  best-for-the-opponent first, with weights PS, (1-PS)PS, (1-PS)^2 PS, ... (normalized to sum 1,
  which changes no decision when every node has Br children, and makes PS -> 0 the plain average);
  the nodes under them are backed up by minimax (``star="all"``: every opponent node is averaged).
* ``Noisy(noise, scale, ply=2)``: the noise-based imperfect player of section IV-B: the minimax
  values of the children (mover's view) divided by ``scale`` ("normalized"), plus independent
  uniform noise in [0, noise], and the best noisy value is played.

Ties go to the first child (the trees' children are exchangeable, so this is the same in
distribution as a random tie-break). The same noise draws are used for every Max strategy (common
random numbers), so differences between strategies are paired.

``table1(n_trees, seed, scale)`` plays the paper's Table 1 and returns the payoffs;
``python -m examples.arc_sum.play [N] [SEED] [SCALE]`` prints the table.

How well it reproduces (400000 trees, standard errors <= 0.01; the paper's 5000 trees have standard
errors 0.05-0.08): the 1-, 2- and 3-ply minimax rows agree with the paper in every column within
2.2 of the paper's standard errors, the noise-free column with no scale involved, the noisy columns
with the child values divided by 72 game points (a least-squares fit over the minimax rows: 66 and
78 fit clearly worse; dividing by the natural range 50 gives far too little noise). The predictive
rows show the paper's effects (PS 0.9 gains ~0.06 over 2-ply minimax against the perfect opponent,
low PS loses there; against noisy opponents every PS beats 2-ply minimax, more so as the noise grows,
and beats 3-ply minimax at noise 2 and 6) but not its exact shape in PS: the paper's PS 0.6-0.9 rows
are nearly identical in every column, while ours keep improving as PS drops to 0.5 against noisy
opponents (up to 0.3 points above the paper at PS 0.5-0.6, noise 6: about 4 standard errors), and at
PS 0.1 against the perfect opponent ours loses 0.2 to 2-ply minimax where the paper's loses 0.07.
Quantizing the weighted average, leaving the weights unnormalized, or applying the rule only at the
game's first move do not bring it closer; the paper gives no more detail.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from examples.arc_sum.trees import ArcSumTrees, random_arc_sum_trees

# seed 002, Table 1: the noise ranges S of the seven 2-ply Min opponents, and the PS of the rows
TABLE1_NOISE = (0.0, 0.25, 0.5, 0.75, 1.0, 2.0, 6.0)
TABLE1_PS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
# The noise is added to the child values divided by this many game points (docs/ALGORITHMS.md §7:
# the natural 0..50 range gives too little noise); fitted to the paper's noisy columns.
DEFAULT_SCALE = 72.0


def star_weights(ps: float, n: int) -> np.ndarray:
    """Weights PS, (1-PS)PS, ..., (1-PS)^(n-1) PS of the n sorted children, normalized to sum 1
    (PS = 0: the plain average; PS = 1: the best child for the opponent only)."""
    if not 0.0 <= ps <= 1.0:
        raise ValueError(f"PS must be in [0, 1], got {ps}")
    if ps == 0.0:
        return np.full(n, 1.0 / n)
    w = ps * (1.0 - ps) ** np.arange(n)
    return w / w.sum()


@dataclass(frozen=True)
class Minimax:
    ply: int = 2

    def name(self) -> str:
        return f"{self.ply}-ply minimax"


@dataclass(frozen=True)
class Predictive:
    ps: float
    ply: int = 2
    star: str = "first"

    def name(self) -> str:
        return f"{self.ply}-ply PS = {self.ps}"


@dataclass(frozen=True)
class Noisy:
    noise: float
    scale: float = DEFAULT_SCALE
    ply: int = 2

    def name(self) -> str:
        return f"noisy S={self.noise}"


def child_values(trees: ArcSumTrees, level: int, nodes: np.ndarray, ply: int,
                 ps: float | None = None, star: str = "first") -> np.ndarray:
    """(n, Br) backed-up values (Max's view) of the children of ``nodes`` (level ``level``) from a
    ``ply``-ply search (cut at the leaves): minimax, or with ``ps`` the predictive backup for the
    player at ``level`` (its opponent's nodes averaged with the sorted weights)."""
    d = max(1, min(ply, trees.depth - level))
    vals = trees.descendants(level, nodes, d).astype(np.float64)
    me = trees.player(level)
    weights = None if ps is None else star_weights(ps, trees.branching)
    # axis j (1..d) holds the moves made at level + j - 1; reduce from the deepest up to axis 2
    for j in range(d, 1, -1):
        node_level = level + j - 1
        mover = trees.player(node_level)
        opponent_first = node_level == level + 1
        if weights is not None and mover != me and (opponent_first or star == "all"):
            # sort best for the opponent first: increasing for Min, decreasing for Max
            s = np.sort(vals, axis=-1)
            if mover == 0:
                s = s[..., ::-1]
            vals = s @ weights
        elif mover == 0:
            vals = vals.max(axis=-1)
        else:
            vals = vals.min(axis=-1)
    return vals


def choose(trees: ArcSumTrees, level: int, nodes: np.ndarray, player, noise_u: np.ndarray | None):
    """Child index (per tree) chosen by ``player`` at ``level``; ``noise_u``: (n, Br) uniform [0, 1)
    draws used by a noisy player."""
    sign = 1.0 if trees.player(level) == 0 else -1.0
    if isinstance(player, Minimax):
        v = sign * child_values(trees, level, nodes, player.ply)
    elif isinstance(player, Predictive):
        v = sign * child_values(trees, level, nodes, player.ply, player.ps, player.star)
    elif isinstance(player, Noisy):
        v = sign * child_values(trees, level, nodes, player.ply) / player.scale
        if player.noise > 0:
            v = v + player.noise * noise_u
    else:
        raise TypeError(f"unknown arc-sum player {player!r}")
    return np.argmax(v, axis=1)


def play(trees: ArcSumTrees, max_player, min_player, noise: np.ndarray | None = None) -> np.ndarray:
    """Play every tree from the root to a leaf; return the payoffs (leaf arc sums), one per tree.
    ``noise[level]``: (n, Br) uniform draws for the decision at that level (drawn if None)."""
    n = trees.n
    nodes = np.zeros(n, dtype=np.int64)
    if noise is None:
        noise = draw_noise(trees, 0)
    for level in range(trees.depth):
        player = max_player if level % 2 == 0 else min_player
        c = choose(trees, level, nodes, player, noise[level])
        nodes = nodes * trees.branching + c
    return trees.sums[trees.depth][np.arange(n), nodes].astype(np.float64)


def draw_noise(trees: ArcSumTrees, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [rng.random((trees.n, trees.branching)) for _ in range(trees.depth)]


def table1_rows(ps_values=TABLE1_PS) -> list:
    return [Minimax(1), Minimax(2), Minimax(3)] + [Predictive(ps, 2) for ps in ps_values]


def table1(n_trees: int = 5000, seed: int = 0, scale: float = DEFAULT_SCALE,
           noise_levels=TABLE1_NOISE, ps_values=TABLE1_PS, min_ply: int = 2):
    """Seed 002's Table 1: each Max strategy against 2-ply noisy Min opponents, on ``n_trees`` random
    trees (Br=4, D=5, V=10). Returns ``(rows, payoffs)``: the row names and an array of shape
    (rows, noise levels, n_trees) of payoffs (use ``.mean(-1)``; paired differences between rows
    share trees and noise)."""
    trees = random_arc_sum_trees(n_trees, 4, 5, 10, seed)
    noise = draw_noise(trees, seed + 1)
    rows = table1_rows(ps_values)
    out = np.zeros((len(rows), len(noise_levels), n_trees))
    for j, s in enumerate(noise_levels):
        opponent = Noisy(s, scale, min_ply)
        for i, row in enumerate(rows):
            out[i, j] = play(trees, row, opponent, noise)
    return [r.name() for r in rows], out


def format_table(rows, payoffs, noise_levels=TABLE1_NOISE) -> str:
    n = payoffs.shape[-1]
    se = payoffs.std(axis=-1, ddof=1).max() / np.sqrt(n)
    lines = [f"Trials={n}, Br=4, D=5, game values 0-50; largest standard error {se:.3f}",
             f"{'Max strategy':<18}" + "".join(f"{s:>7.2f}" for s in noise_levels)]
    for name, row in zip(rows, payoffs.mean(axis=-1)):
        lines.append(f"{name:<18}" + "".join(f"{v:>7.2f}" for v in row))
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    args = sys.argv[1:]
    n = int(args[0]) if args else 5000
    seed = int(args[1]) if len(args) > 1 else 0
    scale = float(args[2]) if len(args) > 2 else DEFAULT_SCALE
    names, pay = table1(n, seed, scale)
    print(format_table(names, pay))
