"""The result of a finished game."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    """How a game ended.

    ``winner`` is 0 or 1 (the player index) or ``None`` for a draw; ``binary`` is b_t in {-1, 0, 1}
    from the first player's point of view; ``score`` is the terminal evaluation f_t in [-1, 1] from the
    first player's point of view; ``termination`` is a word saying why the game ended.
    """

    winner: int | None
    binary: int
    score: float
    termination: str
    winner_name: str | None = None

    @classmethod
    def from_result(cls, result: int, score: float, players, capped: bool) -> Outcome:
        if result == 0:
            return cls(None, 0, 0.0, "ply cap" if capped else "draw", None)
        winner = 0 if result > 0 else 1
        return cls(winner, int(result), float(score), "win", players[winner])

    def result(self) -> str:
        return {1: "1-0", 0: "1/2-1/2", -1: "0-1"}[self.binary]
