"""The computer player behind ``descent engine``: a level (or an Elo) of ``descent play`` for a game,
its board, and the thread it thinks in. Shared by the UCI and GTP servers."""
from __future__ import annotations

from dataclasses import dataclass

import games
from games.errors import GameError
from descent import shipped, strength
from descent.api import Opponent
from descent.protocols.thinking import Limits, Thinker, own_limits

ENGINE_LEVELS = ("easy", "medium", "hard", "balanced", "strongest")
DEFAULT_LEVEL = "strongest"        # full strength unless asked otherwise, as engines are


@dataclass
class Settings:
    level: str = DEFAULT_LEVEL
    net: str | None = "best"
    time: float | None = None
    iterations: int | None = None
    seed: int = 0
    elo: float | None = None


def elo_level(game_spec: str, elo: float) -> dict:
    """The setting nearest to an Elo rating (``descent.strength.level_for_elo``); a ``GameError``
    when there is no rating table yet."""
    return strength.level_for_elo(game_spec, elo)


class Player:
    """A level's agent on its own board. ``load(spec)`` switches the game (GTP ``boardsize``, UCI
    ``UCI_Variant``)."""

    def __init__(self, game: str, settings: Settings):
        self.settings = settings
        self.load(game)

    def load(self, game: str) -> None:
        info = games.load(game)
        s = self.settings
        if s.level not in ENGINE_LEVELS:
            raise GameError(f"level {s.level!r} is not available to an engine (known: {', '.join(ENGINE_LEVELS)}; "
                            f"the adaptive level needs game results, which the protocols do not report)")
        self.picked: dict | None = None
        if s.elo is not None:
            # as `descent play --elo`: the rated setting of the shipped network, its budget included
            # (another network refused, StrengthError); the budget rated replaces --time and
            # --iterations, the budget when the GUI gives none (the command line refuses both)
            bot = Opponent(info.spec, level=DEFAULT_LEVEL, net=s.net, seed=s.seed, elo=s.elo)
            self.picked = elo_level(info.spec, s.elo)
        else:
            bot = Opponent(info.spec, level=s.level, net=s.net, time=s.time, iterations=s.iterations,
                           seed=s.seed)
        self.info = info
        self.bot = bot
        self.agent = bot.agent
        self.spec = bot.spec
        self.network = bot.network
        self.state = info.new_state()
        self.thinker = Thinker(self.agent)
        self.games = 0

    def new_game(self) -> None:
        self.thinker.wait()
        self.games += 1
        self.state = self.info.new_state()
        self.agent.reset(self.settings.seed + 7919 * self.games)

    def limits(self) -> Limits:
        """The level's own budget per move."""
        return own_limits(self.agent)

    @property
    def spends_clock(self) -> bool:
        """Full strength (the ``strongest`` level, no Elo asked): a clock's share of time replaces
        the level's budget. A weaker setting keeps the budget its strength was measured at, and a
        clock only caps it."""
        return self.settings.level == "strongest" and self.settings.elo is None

    @property
    def label(self) -> str:
        """The level, or the rating asked for (``--elo``); "no network" where none plays."""
        lab = f"Elo {self.settings.elo:+.0f}" if self.settings.elo is not None else self.settings.level
        return lab + ("" if self.network else ", no network")

    def notes(self) -> list[str]:
        """What a GUI should be told about this player, one line each: no network for the game (and
        what plays instead), the setting an Elo picked and how far it is from the rating asked."""
        out = []
        if not self.network:
            out.append(no_network_note(self.info.spec, self.spec))
        if self.picked is not None and self.settings.elo is not None:
            out.append(strength.pick_text(self.picked, self.settings.elo))
        return out

    def describe(self) -> str:
        net = f", network {self.network}" if self.network else ", random playouts"
        return f"{self.info.spec}, {self.label} ({self.spec}{net})"


def no_network_note(game_spec: str, spec: str) -> str:
    """The line that says a game (or size) is played without a network, and what plays instead."""
    ships = [g for g in shipped.specs_for(game_spec) if g != game_spec]
    where = f" (networks ship for {', '.join(ships)})" if ships else ""
    return (f"no network for {game_spec}{where}: it searches without one ({spec.split(',seed=')[0]}), "
            f"far weaker than with a network")
