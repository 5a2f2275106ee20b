"""Embedding a balanced opponent in another program.

>>> from descent.api import Opponent
>>> bot = Opponent("tic_tac_toe", level="balanced", iterations=2000)
>>> bot.push("b2")              # the person's move, in the game's notation
>>> reply = bot.reply()         # the agent's move, already played on its board
>>> bot.is_over()
False

Levels: ``balanced`` (Unbounded Minibal_+ with the best available network, at the budget found by
``descent calibrate`` when there is one and no budget is given), ``easy``, ``medium`` and
``hard`` (seed 003's Gaussian difficulty levels over Unbounded Minimax), ``strongest`` (Unbounded
Minimax), ``adaptive`` (needs ``player=NAME``: budget and network follow the person's results
across games, see ``descent.adaptive``; call ``end_game()`` when a game ends and ``new_game()`` to
start the next). ``net="best"`` takes the best network trained for the game (from ``descent rank``'s pools,
else the newest final checkpoint), else the network shipped in the repository for the game
(``descent.shipped``; the balanced and adaptive levels then start from the calibration shipped
beside it); without one, the agent evaluates leaves by random playouts and ``network`` is None.
``root`` is the folder of the user's runs (default ``checkpoints/``).

Any agent, a value network included, is built by ``make_agent`` (also ``descent.make_agent``):

>>> from descent.api import make_agent
>>> agent = make_agent("minimax:iterations=300,net=run/member_00/milestone_final.weights.h5", "tic_tac_toe")
>>> action = agent.choose(agent.game.new_state())
"""
from __future__ import annotations

import os

import games
from games.errors import GameError
from search_ext import agents as _agents
from search_ext.agents import parse_agent
from descent import shipped, strength
from descent.adaptive import Adaptive
from descent.calibrate import find_calibration
from descent.networks import best_network, make_agent

__all__ = ["LEVELS", "Opponent", "agent_spec", "best_network", "make_agent"]

LEVELS = ("easy", "medium", "hard", "balanced", "strongest", "adaptive")


# Where a game has no network, the search its levels play: alpha-beta (iterative deepening, the
# zero evaluation, so every forced result within its depth is seen) for the games where it was
# measured stronger than Unbounded Minimax over random playouts at equal time (bench/
# bench_network_free.py; BENCHMARKS.md "Without a network"); Unbounded Minimax with random-playout
# leaves for the others. The balanced level keeps Minibal_+ (its point is balance, not strength).
NETWORK_FREE_ALPHABETA = ("chess", "xiangqi")
PLAYOUT_LEAVES = "eval=playout,playouts=4"


def agent_spec(level: str, net: str | None, time: float | None, iterations: int | None, seed: int,
               game: str | None = None) -> str:
    """The agent spec behind a level (``game``: the game's name, which decides the search played
    without a network, ``NETWORK_FREE_ALPHABETA``)."""
    if level not in LEVELS:
        raise GameError(f"unknown level {level!r} (known: {', '.join(LEVELS)})")
    budget = f"iterations={iterations}" if iterations else f"time={time or 1.0}"
    if not net and game in NETWORK_FREE_ALPHABETA and level != "balanced":
        budget = f"nodes={iterations}" if iterations else f"time={time or 1.0}"
        if level == "strongest":
            return f"alphabeta:{budget},seed={seed}"
        return f"gaussian:level={level},base=alphabeta,{budget},seed={seed}"
    leaf = f"net={net}" if net else PLAYOUT_LEAVES
    if level == "balanced":
        return f"minibal_plus:{budget},{leaf},seed={seed}"
    if level == "strongest":
        return f"minimax:{budget},{leaf},seed={seed}"
    return f"gaussian:level={level},base=minimax,{budget},{leaf},seed={seed}"


def _calibrated(game_spec: str, net: str | None, seed: int, root=None) -> dict | None:
    """The balanced agent at the calibrated budget (``descent calibrate``), or None: a calibration
    against the pool applies with the best network; one against an agent applies with its own leaf
    evaluator."""
    cal = find_calibration(game_spec, "minibal_plus", root=root)
    if cal is None and shipped.is_shipped(net):
        cal = shipped.calibration(game_spec)      # the one shipped beside the network
    if cal is None:
        return None
    if cal.get("against") == "pool":
        if not net:
            return None
        return {**cal, "agent": f"{cal['spec']},net={net},seed={seed}", "network": net}
    _, opts = parse_agent(cal["spec"])
    return {**cal, "agent": f"{cal['spec']},seed={seed}", "network": opts.get("net")}


def _is_shipped_final(game_spec: str, net) -> bool:
    final = shipped.network(game_spec)
    return bool(net and final and os.path.realpath(str(net)) == os.path.realpath(str(final)))


def _rating_of(game_spec: str, level: str, spec: str) -> dict | None:
    """The measured rating of ``level`` when ``spec`` is the setting its table rated (network and
    budget), else None (another network, a time budget, an own agent)."""
    ratings = strength.level_ratings(game_spec)
    entry = ratings.get(level)
    if entry is None or not strength.matches(entry["spec"], spec):
        return None
    return {**entry, "anchor": strength.anchor(game_spec)}


class Opponent:
    """A computer opponent holding its own copy of the game."""

    def __init__(self, game: str, level: str = "balanced", net: str | None = "best",
                 time: float | None = None, iterations: int | None = None, seed: int = 0,
                 agent: str | None = None, player: str | None = None, root=None,
                 elo: float | None = None):
        self.info = games.load(game)
        if level not in LEVELS:
            raise GameError(f"unknown level {level!r} (known: {', '.join(LEVELS)})")
        self.seed = seed
        self.level = level
        self.calibration = None
        self.adaptive = None
        self.rating = None          # the rating table's entry of this setting (descent.strength), or None
        self.elo_note: str | None = None    # with elo: what it picked and how far from the request
        self._bot_seats: set = set()
        if elo is not None:
            if agent is not None or level == "adaptive" or time is not None or iterations is not None \
                    or net != "best" and not _is_shipped_final(self.info.spec, net):
                raise strength.StrengthError("elo picks a rated setting of the shipped network (budget "
                                             "included): it cannot be combined with a time, iterations, "
                                             "an agent, another network or the adaptive level")
            pick = strength.level_for_elo(self.info.spec, elo)
            agent = f"{pick['spec']},seed={seed}"
            self.level = f"elo {pick['elo']:+.0f} ({pick['label']})"
            self.elo_note = strength.pick_text(pick, elo)
            self.rating = {k: pick[k] for k in ("elo", "low", "high", "anchor", "spec")}
            net = pick["spec"].rpartition("net=")[2].split(",")[0]
        elif agent is None and (level in strength.NAMED_MUS or level == "strongest"):
            # the named levels are rated at a fixed budget: without a budget they play at it where
            # the game ships a rating table for the network in use (else time=1 s a move)
            if time is None and iterations is None and net in ("best", None):
                used = best_network(self.info.spec, root) if net == "best" else None
                if used and _is_shipped_final(self.info.spec, used) and strength.level_ratings(self.info.spec):
                    iterations = strength.LEVEL_ITERATIONS
        if agent is None and level == "adaptive":
            if not player:
                raise GameError("level adaptive needs a player name (--player NAME)")
            self.adaptive = Adaptive(player, self.info.spec, start_iterations=iterations, root=root,
                                     net=net)
            self.network = self.adaptive.rung.get("net")
            self.spec = self.adaptive.spec(seed)
        else:
            if net == "best":
                net = best_network(self.info.spec, root)
                if agent is None and level == "balanced" and time is None and iterations is None:
                    self.calibration = _calibrated(self.info.spec, net, seed, root)
            self.network = net
            if self.calibration:
                self.spec, self.network = self.calibration["agent"], self.calibration["network"]
            else:
                self.spec = agent or agent_spec(level, net, time, iterations, seed, self.info.name)
        if self.rating is None:
            self.rating = _rating_of(self.info.spec, self.level, self.spec)
        self.agent = make_agent(self.spec, self.info)
        self.state = self.info.new_state()
        self.agent.reset(seed)
        # hints come from a separate analysis at the strongest level (same network and budget),
        # built on the first hint, so asking one never touches the playing agent's tree
        self.hint_spec = agent_spec("strongest", net, time, iterations, seed, self.info.name)
        self._analyst: _agents.Agent | None = None

    def new_game(self) -> None:
        """Start a new game on a fresh board (an adaptive opponent takes its updated budget)."""
        self.state = self.info.new_state()
        self._bot_seats = set()
        self._games = getattr(self, "_games", 0) + 1
        if self.adaptive is not None:
            self.network = self.adaptive.rung.get("net")
            self.spec = self.adaptive.spec(self.seed)
            self.agent = make_agent(self.spec, self.info)
        self.agent.reset(self.seed + 7919 * self._games)

    def end_game(self, person_seat: int | None = None, resigned: bool = False) -> dict | None:
        """Tell an adaptive opponent the game is over (by the board's outcome, or the person's
        resignation); updates and saves the person's profile. Returns the change, None for other
        levels."""
        if self.adaptive is None:
            return None
        if person_seat is None:
            if len(self._bot_seats) != 1:
                raise GameError("end_game: cannot tell the person's seat; pass person_seat")
            person_seat = 1 - next(iter(self._bot_seats))
        if resigned:
            score = 0.0
        elif not self.state.is_game_over():
            raise GameError("end_game: the game is not over (pass resigned=True for a resignation)")
        else:
            outcome = self.state.outcome()
            assert outcome is not None          # the game is over
            w = outcome.winner
            score = 0.5 if w is None else 1.0 if w == person_seat else 0.0
        return self.adaptive.record(score)

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
        self._bot_seats.add(self.state.to_move)
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
