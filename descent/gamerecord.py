"""The record of one game of a match (``GameRecord``) and the seed of game i of a match: shared by
the one-game-at-a-time driver (``descent.match``) and the batched one (``descent.batched``)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GameRecord:
    index: int
    a_first: bool
    moves: list = field(default_factory=list)
    result: int = 0          # b_t, first player's view
    score: float = 0.0       # f_t, first player's view
    plies: int = 0
    seconds_a: float = 0.0
    seconds_b: float = 0.0
    # moves whose search was cut short (fewer iterations than its budget because its table was
    # full) and moves searched with a full table (the tree stopped growing), per agent
    short_a: int = 0
    short_b: int = 0
    full_a: int = 0
    full_b: int = 0
    # why the game was aborted (an outside engine failed: descent.protocols.outside.EngineError),
    # None for a finished game; an aborted game has no result and is never scored
    aborted: str | None = None

    @property
    def a_result(self) -> int:
        return self.result if self.a_first else -self.result

    @property
    def a_score(self) -> float:
        return self.score if self.a_first else -self.score


def game_seed(match_seed: int, index: int) -> int:
    return (match_seed * 1_000_003 + index * 7919 + 1) & 0x7FFFFFFF
