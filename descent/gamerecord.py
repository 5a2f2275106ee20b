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
    # when the game was decided, per seat of a best-first agent ('a', 'b'): ``ProofNote.as_dict``
    proofs: dict = field(default_factory=dict)

    @property
    def a_result(self) -> int:
        return self.result if self.a_first else -self.result

    @property
    def a_score(self) -> float:
        return self.score if self.a_first else -self.score


def game_seed(match_seed: int, index: int) -> int:
    return (match_seed * 1_000_003 + index * 7919 + 1) & 0x7FFFFFFF


@dataclass
class ProofNote:
    """When a best-first agent's root first held a proven result in a game, and what it chose then:
    ``ply`` the ply of that position (None: never), ``sign`` +1 a proven win for the agent, -1 a
    proven loss; ``moves`` the agent's searched moves in the game, ``won_moves`` those whose root
    was a proven win and ``proven_choices`` those of them where it chose a proven-winning move.
    Read from the search's tree after each move (``search_ext.bestfirst.BestFirstSearch.analyse``,
    which changes nothing), at play time."""

    ply: int | None = None
    sign: int = 0
    moves: int = 0
    won_moves: int = 0
    proven_choices: int = 0

    def note(self, ply: int, root: int, chose: int | None) -> None:
        """One move: the root's proven result (+1, -1, 0: none) and the chosen move's (+1, -1,
        None: unproven)."""
        self.moves += 1
        if root and self.ply is None:
            self.ply, self.sign = ply, root
        if root > 0:
            self.won_moves += 1
            self.proven_choices += int(chose is not None and chose > 0)

    def as_dict(self) -> dict:
        return {"ply": self.ply, "sign": self.sign, "moves": self.moves, "won_moves": self.won_moves,
                "proven_choices": self.proven_choices}


def root_proof(search, state, action: int) -> tuple[int, int | None] | None:
    """(the root's proven result for the player to move: +1 a proven win, -1 a proven loss, 0
    none; the proven result of ``action``, or None) after a best-first search of ``state``; None
    when ``search`` keeps no such tree. A root is a proven win when one of its moves is, a proven
    loss when all of them are."""
    from search_ext.bestfirst import BestFirstSearch  # lazy: the record module imports no engine
    if not isinstance(search, BestFirstSearch):
        return None
    rows = search.analyse(state)
    if not rows:
        return None
    proven = [r["proven"] for r in rows]
    root = 1 if any(p is not None and p > 0 for p in proven) else (
        -1 if all(p is not None and p < 0 for p in proven) else 0)
    chose = next((r["proven"] for r in rows if r["action"] == action), None)
    return root, chose
