"""Embedding a balanced opponent in another program.

>>> from descent.api import Opponent
>>> bot = Opponent("tic_tac_toe", level="balanced", iterations=2000)
>>> bot.push("b2")              # the person's move, in the game's notation
>>> reply = bot.reply()         # the agent's move, already played on its board
>>> bot.is_over()
False

Levels: ``balanced`` (Unbounded Minibal_+ with the best available network), ``easy``, ``medium`` and
``hard`` (seed 003's Gaussian difficulty levels over Unbounded Minimax), ``strongest`` (Unbounded
Minimax). ``net="best"`` takes the best network trained for the game (from ``descent rank``'s pools,
else the newest final checkpoint); without one, the agent evaluates leaves by random playouts and
``network`` is None.
"""
from __future__ import annotations

import json
from pathlib import Path

import games
from games.errors import GameError
from search_ext.agents import make_agent

LEVELS = ("easy", "medium", "hard", "balanced", "strongest")


def best_network(game_spec: str, root=None) -> str | None:
    """The path of the best network for a game, or None when none is trained."""
    from training.run import DEFAULT_ROOT, list_checkpoints
    root = Path(root) if root else DEFAULT_ROOT
    for pools_path in sorted(root.glob("*/pools.json")):
        try:
            pools = json.loads(pools_path.read_text())
        except (OSError, ValueError):
            continue
        if pools.get("game") == game_spec and pools.get("high"):
            top = pools["ranking"][0]["net"] if pools.get("ranking") else pools["high"][0]["net"]
            for h in pools["high"]:
                if h["net"] == top and Path(h["path"]).exists():
                    return h["path"]
    rows = [r for r in list_checkpoints(root, game_spec) if r["exists"] and r["game"] == game_spec]
    if not rows:
        return None
    rows.sort(key=lambda r: (r["train_seconds"] or 0, r["games"] or 0))
    return rows[-1]["path"]


def agent_spec(level: str, net: str | None, time: float | None, iterations: int | None, seed: int) -> str:
    """The agent spec behind a level."""
    if level not in LEVELS:
        raise GameError(f"unknown level {level!r} (known: {', '.join(LEVELS)})")
    budget = f"iterations={iterations}" if iterations else f"time={time or 1.0}"
    leaf = f"net={net}" if net else "eval=playout,playouts=4"
    if level == "balanced":
        return f"minibal_plus:{budget},{leaf},seed={seed}"
    if level == "strongest":
        return f"minimax:{budget},{leaf},seed={seed}"
    return f"gaussian:level={level},base=minimax,{budget},{leaf},seed={seed}"


class Opponent:
    """A computer opponent holding its own copy of the game."""

    def __init__(self, game: str, level: str = "balanced", net: str | None = "best",
                 time: float | None = None, iterations: int | None = None, seed: int = 0,
                 agent: str | None = None):
        self.info = games.load(game)
        if net == "best":
            net = best_network(self.info.spec)
        self.network = net
        self.level = level
        self.spec = agent or agent_spec(level, net, time, iterations, seed)
        self.agent = make_agent(self.spec, self.info)
        self.state = self.info.new_state()
        self.agent.reset(seed)
        # hints come from a separate analysis at the strongest level (same network and budget),
        # built on the first hint, so asking one never touches the playing agent's tree
        self.hint_spec = agent_spec("strongest", net, time, iterations, seed)
        self._analyst = None

    def push(self, move: str | int) -> int:
        """Play a move (notation or action id) on the opponent's board; returns the action id.
        Raises ``InvalidMoveError`` / ``IllegalMoveError`` and leaves the board unchanged."""
        action = self.state.parse_move(move) if isinstance(move, str) else move
        self.state.push(action)
        return action

    def reply(self) -> str:
        """Choose a move for the side to move, play it, and return it in the game's notation."""
        if self.state.is_game_over():
            raise GameError("the game is over")
        action = self.agent.choose(self.state)
        text = self.state.move_to_str(action)
        self.state.push(action)
        return text

    def hint(self) -> str:
        """The best move for the side to move by a separate strongest-level analysis (Unbounded
        Minimax, same network and budget; ``hint_spec``), not the playing agent's (balanced) choice;
        nothing is played and the playing agent's tree is left as it was."""
        if self.state.is_game_over():
            raise GameError("the game is over")
        if self._analyst is None:
            self._analyst = make_agent(self.hint_spec, self.info)
        return self.state.move_to_str(self._analyst.choose(self.state.copy()))

    def undo(self, plies: int = 1) -> None:
        for _ in range(plies):
            self.state.pop()
        self.agent.reset()

    def is_over(self) -> bool:
        return self.state.is_game_over()

    def outcome(self):
        return self.state.outcome()

    def record(self) -> list[str]:
        """The moves played, in the game's notation."""
        s = self.info.new_state()
        out = []
        for a in self.state.move_stack:
            out.append(s.move_to_str(a))
            s.push(a)
        return out
