"""Random arc-sum game trees (seed 002, Reibman & Ballard, section VI; Fuller et al. 1973).

A complete tree of branching ``Br`` and depth ``D``; every arc independently gets an integer drawn
uniformly from ``0..V`` (both ends included); a node's static value is the sum of the arcs from the
root down to it, and a leaf's arc sum is the payoff to Max, the player at the root (Min wants it
small). Max moves at even depths, Min at odd ones; the game is played down to a leaf. The paper's
Table 1 uses Br=4, D=5, V=10 ("Game Values 0-50").

``random_arc_sum_trees(n, ...)`` draws ``n`` trees at once as numpy arrays (seeded, fast: 5000 trees
of 4^5 leaves take a few milliseconds); ``arc_sum_nested(trees, t)`` turns tree ``t`` into the nested
description of ``games.tree_game.make_tree`` (internal nodes carry ``h`` = their arc sum, leaves are
their arc sum), and ``make_arc_sum_tree`` builds the ``GameInfo`` directly, so that the compiled
agents can play the same trees as the vectorized experiment (``examples.arc_sum.play``).

Layout: node ``i`` of level ``k`` (``0 <= i < Br**k``, the root is node 0 of level 0) has children
``i*Br .. i*Br + Br - 1`` at level ``k + 1``; action ``c`` leads to child ``i*Br + c``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ArcSumTrees:
    """``n`` random arc-sum trees. ``arcs[k]`` (k = 1..depth) is an (n, Br**k) int array of the
    values of the arcs entering the level-k nodes (``arcs[0]`` is empty); ``sums[k]`` is the
    (n, Br**k) array of the nodes' static values (arc sums from the root, Max's point of view)."""
    branching: int
    depth: int
    max_arc: int
    arcs: tuple
    sums: tuple

    @property
    def n(self) -> int:
        return self.sums[0].shape[0]

    def player(self, level: int) -> int:
        """The player to move at ``level``: 0 (Max) at even levels, 1 (Min) at odd ones."""
        return level % 2

    def descendants(self, level: int, nodes: np.ndarray, d: int) -> np.ndarray:
        """Static values of the level ``level + d`` descendants of ``nodes`` (one node index per
        tree), shaped (n, Br, ..., Br) with ``d`` axes of size Br (the axis j is the move at
        level + j)."""
        br = self.branching
        width = br ** d
        idx = nodes[:, None].astype(np.int64) * width + np.arange(width)
        vals = np.take_along_axis(self.sums[level + d], idx, axis=1)
        return vals.reshape((self.n,) + (br,) * d)


def random_arc_sum_trees(n: int, branching: int = 4, depth: int = 5, max_arc: int = 10,
                         seed: int = 0) -> ArcSumTrees:
    """Draw ``n`` arc-sum trees (arc values uniform on the integers 0..``max_arc``), reproducibly
    from ``seed``."""
    if n < 1 or branching < 1 or depth < 1 or max_arc < 0:
        raise ValueError(f"bad arc-sum tree parameters n={n}, Br={branching}, D={depth}, V={max_arc}")
    rng = np.random.default_rng(seed)
    arcs = [np.zeros((n, 1), dtype=np.int16)]
    sums = [np.zeros((n, 1), dtype=np.int16)]
    for k in range(1, depth + 1):
        a = rng.integers(0, max_arc + 1, size=(n, branching ** k), dtype=np.int16)
        arcs.append(a)
        sums.append(np.repeat(sums[-1], branching, axis=1) + a)
    return ArcSumTrees(branching, depth, max_arc, tuple(arcs), tuple(sums))


def arc_sum_nested(trees: ArcSumTrees, t: int = 0, value_scale: float = 1.0):
    """Tree ``t`` as a ``make_tree`` description: internal nodes ``{"player", "h", "children"}``,
    leaves their arc sum (times ``value_scale``; the payoff from Max's = the first player's view)."""
    br, depth = trees.branching, trees.depth

    def node(level, i):
        v = float(trees.sums[level][t, i]) * value_scale
        if level == depth:
            return v
        return {"player": level % 2, "h": v,
                "children": [node(level + 1, i * br + c) for c in range(br)]}
    return node(0, 0)


def make_arc_sum_tree(trees: ArcSumTrees, t: int = 0, value_scale: float = 1.0):
    """The ``GameInfo`` of tree ``t`` (see ``arc_sum_nested``); value its leaves' ``h`` with
    ``search_ext.evaluators.heuristic_evaluator``."""
    from games.tree_game import make_tree
    return make_tree(arc_sum_nested(trees, t, value_scale), name="arc_sum")
