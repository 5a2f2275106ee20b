"""The agents of seed 002 (Reibman & Ballard): ``predictive`` (predictive *-minimax, section V) and
``noisy`` (the noise-based imperfect player, section IV-B), over ``search_ext.predictive.StarMinimax``.

* ``predictive:ps=P[,depth=D][,star=first|all]``: searches ``depth`` plies (default 2, the paper's),
  valuing the opponent's nodes of its first turn by the PS-weighted average of their children sorted
  best for the opponent first (every opponent node with ``star=all``), its own nodes by the max;
  plays the best value.
* ``noisy:noise=S[,scale=K][,depth=D]``: a ``depth``-ply minimax search (default 2) gives each move
  a value v (the mover's view, in [-1, 1] on the games); the move played maximises
  v / K + u with u uniform in [0, S] drawn per move. K "normalizes" the values to the range of the
  possible backed-up values (default 2, the width of [-1, 1]); S = 0 is plain minimax, a large S
  random play.

Budgets: ``depth`` and/or ``time`` (seconds per move) and/or ``nodes``; with ``time`` or ``nodes``
the search deepens iteratively (up to ``depth`` if given) and uses the deepest completed depth.
Leaves at the depth limit are valued by the ``eval`` evaluator (zero or random playouts), as for
alpha-beta. Ties are broken at random (seeded): with a depth/nodes budget and a seed, play is
reproducible.
"""
from __future__ import annotations

import random

from search_ext.agent_base import Agent, check_values, leaf_evaluator
from search_ext.predictive import StarMinimax

DEFAULT_DEPTH = 2      # seed 002, Table 1: the predictive players and the Min opponents search 2 plies
TIE_EPS = 1e-9


class _StarAgent(Agent):
    def __init__(self, game, spec, opts):
        super().__init__(game, spec, opts)
        self.reset()

    def reset(self, seed=None):
        super().reset(seed)
        self.rng = random.Random(self.seed)
        self.search = StarMinimax(self.game, leaf_evaluator(self.opts, self.seed, self.game), self._ps(),
                                  self.opts.get("star", "first") == "all")

    def _ps(self) -> float:
        return 1.0

    def _star_budget(self) -> dict:
        t, d, n = self.opts.get("time"), self.opts.get("depth"), self.opts.get("nodes")
        if t is None and d is None and n is None:
            d = DEFAULT_DEPTH
        return {"seconds": t or 0.0, "max_depth": d or 0, "nodes": n or 0}

    def values(self, state) -> tuple[list, list]:
        """The root actions and their searched values (the mover's point of view)."""
        actions, values, _ = self.search.search(state, **self._star_budget())
        return actions, values

    def _pick(self, actions, scores) -> int:
        best = max(scores)
        ties = [a for a, v in zip(actions, scores) if v >= best - TIE_EPS]
        return ties[0] if len(ties) == 1 else self.rng.choice(ties)

    def analyse(self, state) -> list:
        if state.is_game_over():
            return []
        actions, values = self.values(state)
        rows = [{"action": a, "value": float(v), "completion": 0, "resolved": False, "count": 0}
                for a, v in zip(actions, values)]
        rows.sort(key=lambda r: -r["value"])
        return rows


class PredictiveAgent(_StarAgent):
    """Predictive *-minimax with predicted opponent strength ``ps``."""

    def _ps(self) -> float:
        return self.opts["ps"]

    def choose(self, state) -> int:
        actions, values = self.values(state)
        return self._pick(actions, values)


class NoisyAgent(_StarAgent):
    """The noise-based imperfect player: minimax values / ``scale`` + uniform noise in [0, ``noise``]."""

    def noisy_scores(self, values) -> list:
        values = check_values(values, f"agent {self.spec!r}: noisy_scores values")
        s, k = self.opts["noise"], self.opts["scale"]
        return [v / k + (self.rng.uniform(0.0, s) if s > 0 else 0.0) for v in values]

    def choose(self, state) -> int:
        actions, values = self.values(state)
        return self._pick(actions, self.noisy_scores(values))


def make_star_agent(name: str, game, spec: str, opts: dict) -> Agent:
    return PredictiveAgent(game, spec, opts) if name == "predictive" else NoisyAgent(game, spec, opts)
