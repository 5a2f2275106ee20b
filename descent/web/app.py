"""The web app of ``descent serve``: one page to play in the browser, and the JSON API behind it.

``create_app(...)`` returns a Starlette (ASGI) application; ``descent serve`` runs it with uvicorn.

**What a client may choose.** A game from the server's list (games with a shipped or trained network,
and the games ``descent serve --game SPEC`` names: any game, a plugin's or OpenSpiel's too, drawn on
a generic grid, ``descent.web.grid``; ``available_games``), a level of ``descent.api.LEVELS``, a side, and with the adaptive level a player
name (``descent.adaptive.check_player``: the profile file is named by the server from it). The
network is the server's: ``best_network`` of the game, as for ``descent play``. Nothing a client
sends is executed or names a file; moves are parsed by the game's own parser.

**The computer's thinking never blocks the server.** Every search (and the loading of a network)
runs in a thread pool off the event loop, and the network backend's import (which holds the GIL for
about a second) is done at start, before the first request (``warm_up``); the compiled search runs without the GIL
(``search_ext/bestfirst.pyx``: its iterations run in a ``with nogil`` block), so the loop answers
other requests while games are thinking (bench/bench_serve.py measures it). Games are keyed by
random ids made by the server; one game does one thing at a time: a request on a game whose
computer is thinking is refused with 409.

**A game belongs to the browser that started it.** ``POST /api/new`` gives the browser an owner
cookie (``descent_owner``, HttpOnly, SameSite=Strict) when it has none, and every request on a game
must carry that cookie (403 otherwise), so the game's id in the page's address (``/?game=ID``) brings
a reload or a link back to the game in that browser only. A script keeps the cookie as a browser
does (``requests.Session``, ``curl -b jar -c jar``).

**Slots** (the page's "tables"). At most ``max_games`` games *in progress* at once (a new one past
that is refused with 503, saying when a table frees: at once when a game ends, at the latest when
the longest-idle game times out; ``Retry-After``): a finished or resigned game frees its slot at
once (it stays readable, its record downloadable, until it has been idle ``idle_seconds``), and a
game in progress nobody has asked about for ``idle_seconds`` (default ``IDLE_SECONDS``, ten
minutes; ``descent serve --idle``) is unloaded as abandoned. The page asks about its game every ``HEARTBEAT`` seconds (a third of
``idle_seconds`` when that is shorter) while it is open, so
only a closed tab or a lost connection lets a game go idle. Finished games kept beyond
``KEEP_FINISHED`` times ``max_games`` are closed oldest first.

**Games outlive the server.** Every game is written to the store (``descent.web.store``: SQLite,
``serve/games.sqlite3`` in the data directory) as it is played, one transaction a change; a game
asked about that is not in memory (the server restarted, or it was unloaded) is rebuilt from its
record, its moves replayed, at the same ply. A game closed by its player is not brought back.

**What a player is told** about the computer is built from a whitelist (``descent.web.describe``):
the level and its rating in words, the search and its budget, the network by where it comes from;
never a path of the server's, which error messages are scrubbed of too (``scrub``).

**Errors.** Every error is JSON, ``{"error": "one line"}``, with a 4xx status for a bad request
(400 malformed or illegal, 404 unknown game id or path, 405 method, 409 not now, 413 too large,
503 too many games) and 500 for a fault of the server, never a traceback page.

The API (JSON bodies and answers):

* ``GET /api/games``: the games offered, each with its levels and their ratings (``level_rating``),
  and ``network`` (shipped, trained, or null: a game named with ``--game`` that has none);
* ``GET /api/levels``: the levels with a description;
* ``POST /api/new`` ``{"game", "level", "side": "first"|"second", "player", "replace"}``: a new game,
  its view (``replace``: a game of the same browser, closed once the new one stands);
  ``{"game", "elo": N, "side"}`` instead of a level plays the rated setting nearest to Elo ``N``
  (as ``descent play --elo``; the game's ``elo`` range in ``/api/games`` says where it applies);
* ``GET /api/mine``: the browser's games in progress (by its owner cookie), for the start page;
* ``GET /api/game/ID``: the view of a game (``Session.view``);
* ``POST /api/game/ID/move`` ``{"move": "e2e4"}``: play the person's move (the game's notation);
* ``POST /api/game/ID/reply``: the computer plays its move;
* ``POST /api/game/ID/hint``: ``{"hint": MOVE, ...view}`` (a separate strongest-level analysis);
* ``POST /api/game/ID/undo``: take back the person's last move and what followed;
* ``POST /api/game/ID/resign``;
* ``GET /api/game/ID/record``: the game record as a text file to download;
* ``DELETE /api/game/ID``: close the game.
"""
from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import games
from games.errors import GameError
from training.run import DEFAULT_ROOT, list_checkpoints
from descent import shipped, strength
from descent.adaptive import check_player
from descent.api import LEVELS, Opponent
from descent.networks import best_network
from descent.web import board, describe
from descent.web.store import Store, default_path

log = logging.getLogger("descent.web")

STATIC = Path(__file__).parent / "static"
MAX_BODY = 4096                    # bytes of a request body
MAX_GAMES = 16
IDLE_SECONDS = 600.0               # a game nobody asked about for this long is closed
HEARTBEAT = 60                     # seconds between the page's questions about its open game
KEEP_FINISHED = 4                  # finished games kept, per slot, for their record
OWNER_COOKIE = "descent_owner"
_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")

LEVEL_INFO = {
    "easy": "Gaussian difficulty over Unbounded Minimax: often picks a weaker move",
    "medium": "Gaussian difficulty over Unbounded Minimax, in between",
    "hard": "Gaussian difficulty over Unbounded Minimax: rarely strays from the best move",
    "balanced": "Unbounded Minibal_+: aims at a balanced game (at the calibrated budget when there is one)",
    "strongest": "Unbounded Minimax: the best move it finds",
    "adaptive": "follows your results across games (needs your name; your profile is kept on this server)",
}


class ApiError(Exception):
    """A request the server refuses: an HTTP status and a one-line message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = scrub(" ".join(str(message).split()))
        self.headers: dict | None = None


def _rated_table(game_spec: str, root=None, budget_given: bool = False) -> dict | None:
    """The game's rating table (``descent.strength``) where it applies to what this server plays, or
    None. A table rates the shipped final network at fixed budgets, so it applies only when the
    server plays that network (no network of the user's is better ranked) at the table's own budgets
    (no ``--time`` or ``--iterations``). No number is made up here: where nothing is known nothing
    is shown."""
    if budget_given:
        return None
    try:
        t = strength.table(game_spec)
        final, used = shipped.network(game_spec), best_network(game_spec, root)
        if t is None or not final or not used or os.path.realpath(final) != os.path.realpath(used):
            return None
        return t
    except (ImportError, GameError, OSError):
        return None


def level_rating(game_spec: str, level: str, root=None, budget_given: bool = False) -> dict | None:
    """The rating of ``level`` for ``game_spec`` as this server plays it, when one is known:
    ``{"elo", "low", "high", "anchor", "note"}`` (``_rated_table``'s conditions; the note from
    ``strength.level_notes``: the balanced level's place, levels of one strength); the adaptive
    level's is the rating of its start."""
    t = _rated_table(game_spec, root, budget_given)
    if t is None or level not in t["levels"]:
        return None
    entry = t["levels"][level]
    notes = [n for n in (strength.level_notes(t).get(level),) if n]
    return {"elo": entry["elo"], "low": entry["low"], "high": entry["high"], "anchor": t["anchor"],
            "at_least": bool(entry.get("at_least")), "note": "; ".join(notes) or None}


def elo_range(game_spec: str, root=None, budget_given: bool = False) -> dict | None:
    """``{"low", "high", "anchor"}``: the Elo range a person can ask for with ``elo``
    (``_rated_table``'s conditions); None where ``elo`` cannot be used."""
    t = _rated_table(game_spec, root, budget_given)
    if t is None:
        return None
    return {"low": t["settings"][0]["elo"], "high": t["settings"][-1]["elo"], "anchor": t["anchor"]}


def _rating(rating: dict | None) -> dict | None:
    """What the page shows of an ``Opponent.rating``."""
    if not isinstance(rating, dict) or "elo" not in rating:
        return None
    return dict({k: rating.get(k) for k in ("elo", "low", "high", "anchor")},
                at_least=bool(rating.get("at_least")))


def available_games(root=None, named=()) -> list[dict]:
    """The games a person can play: every game with a network shipped in the repository
    (``descent.shipped``) or trained under ``root`` (``descent checkpoints``), in name order, and
    the games ``named`` (specs: ``descent serve --game``; any game, a plugin's or OpenSpiel's
    included, with or without a network: ``"network": None`` where it has none, and the computer's
    leaves are random playouts), marked ``"named": True``. A named game that cannot be loaded raises
    its ``GameError``; a game of the lists that cannot is left out."""
    loaded = [games.load(spec) for spec in named]
    found: dict[str, str | None] = {}
    for _, card in shipped.entries():
        found.setdefault(card["game"], "shipped")
    for row in list_checkpoints(Path(root) if root else DEFAULT_ROOT):
        if row["exists"] and row["games"] and row["game"]:
            found[row["game"]] = "trained"
    for info in loaded:
        found.setdefault(info.spec, None)
    wanted = {info.spec for info in loaded}
    out = []
    for spec in sorted(found):
        try:
            info = games.load(spec)
        except GameError:
            continue
        out.append({"spec": info.spec, "name": info.name, "players": list(info.players),
                    "network": found[spec], "named": info.spec in wanted})
    return out


_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?[/\\](?:[^\s'\"/\\,;()]+[/\\])+[^\s'\",;()]*")


def scrub(text: str) -> str:
    """``text`` with every absolute file path cut to its last name (an error from deep inside the
    server may name a file of its own; a remote player never reads the server's paths)."""
    return _PATH.sub(lambda m: re.split(r"[/\\]", m.group(0).rstrip("/\\"))[-1] or "(a path)", text)


def short_id(gid: str) -> str:
    """A game id as an error message quotes it: at most 40 characters."""
    gid = str(gid)
    return gid if len(gid) <= 40 else gid[:40] + "..."


def _person_undo_plies(bot: Opponent, seat: int) -> int:
    """How many plies take back the person's last move and everything played after it (0: none)."""
    s = bot.info.new_state()
    movers = []
    for a in bot.state.move_stack:
        movers.append(s.to_move)
        s.push(a)
    return movers[::-1].index(seat) + 1 if seat in movers else 0


TERMINATIONS = {"win": "", "draw": "", "ply cap": ""}     # words that only repeat the result


class Session:
    """One game in progress: the opponent, the person's seat, and what happened."""

    def __init__(self, gid: str, bot: Opponent, seat: int, level: str, player: str | None,
                 rating: dict | None, owner: str = "", touched: float = 0.0, asked: dict | None = None,
                 seed: int = 0, started: str | None = None):
        self.id, self.bot, self.seat, self.level, self.player = gid, bot, seat, level, player
        self.owner = owner               # the owner cookie of the browser that started it
        self.rating = rating
        self.asked = asked or {}         # what the game was started with: game, level, elo, player
        self.seed = seed
        self.lock = asyncio.Lock()
        self.thinking = False
        self.resigned = False
        self.recorded = False            # the adaptive profile has this game's result
        self.profile_note: str | None = None
        self.touched = touched           # the hub's clock at the last request about it
        self.seen_saved = 0.0            # wall time the store last heard of a request about it
        self.started = started or time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        self._describe()

    def _describe(self) -> None:
        """The public description of the computer (``describe``): the short line and its sentences."""
        bot = self.bot
        spec = bot.adaptive.spec(0) if bot.adaptive is not None else bot.spec
        self.setting = describe.public_setting(spec, bot.network)
        note = self.rating.get("note") if isinstance(self.rating, dict) else None
        self.opponent = describe.opponent_text(self.level, self.rating, bot.adaptive)
        self.about = describe.about(self.level, self.setting, self.rating, note, bot.adaptive,
                                    getattr(bot, "elo_note", None))

    @property
    def over(self) -> bool:
        return self.resigned or self.bot.is_over()

    def result(self) -> dict | None:
        players = board.sides(self.bot.info)
        if self.resigned:
            return {"winner": 1 - self.seat, "score": "0-1" if self.seat == 0 else "1-0",
                    "text": f"You resigned: the computer ({players[1 - self.seat]}) wins."}
        if not self.bot.is_over():
            return None
        o = self.bot.outcome()
        score = self.bot.state.result()
        why = TERMINATIONS.get(o.termination, o.termination)
        why = f" ({why})" if why else ""
        if o.winner is None:
            return {"winner": None, "score": score, "text": f"Draw{why}."}
        mine = o.winner == self.seat
        return {"winner": o.winner, "score": score,
                "text": f"{'You win' if mine else 'The computer wins'}{why}, {score}."}

    def seat_names(self) -> list[str]:
        """Who played each seat, as the record names them: the person (their name with the adaptive
        level, else "You") and the computer with its level."""
        you = self.player or "You"
        computer = f"descent, {self.opponent}"
        return [you if seat == self.seat else computer for seat in (0, 1)]

    def record_text(self) -> str:
        """The game as a text file in the manner of PGN: a header per seat named by the game's own
        name for it (PGN's White and Black for chess), who played it, then the numbered moves."""
        res = self.result()
        moves = self.bot.record()
        numbered = " ".join(f"{i // 2 + 1}.{m}" if i % 2 == 0 else m for i, m in enumerate(moves))
        who = self.seat_names()
        tags = [("Game", self.bot.info.spec), ("Date", f"{self.started} UTC")]
        sides = board.sides(self.bot.info)
        tags += [(_tag(sides[seat]), who[seat]) for seat in (0, 1)]
        tags += [("Level", self.level), ("Result", res["score"] if res else "*")]
        if self.resigned:
            tags.append(("Termination", "resignation"))
        end = f" {res['score']}" if res else ""
        return "".join(f'[{k} "{_quoted(v)}"]\n' for k, v in tags) + (numbered + end).strip() + "\n"

    def think(self) -> None:
        """The computer starts thinking: until ``done()``, the view is the one of this moment (the
        search's thread plays its move on the board when it ends, so the board is not read then)."""
        self._frozen = self.view()
        self.thinking = True

    def done(self) -> None:
        self.thinking = False

    def row(self) -> dict:
        """What the store keeps of the game (``descent.web.store``)."""
        return {"id": self.id, "owner": self.owner, "game": self.asked.get("game", self.bot.info.spec),
                "level": self.asked.get("level", self.level), "elo": self.asked.get("elo"),
                "player": self.player, "seat": self.seat, "seed": self.seed, "moves": self.bot.record(),
                "resigned": self.resigned, "recorded": self.recorded, "over": self.over,
                "closed": False, "started": self.started}

    def view(self) -> dict:
        """What the page shows: the board, the legal moves (on the person's turn), the last move,
        the record, the result, and the computer described in words (never a path of the server)."""
        if self.thinking:
            return dict(self._frozen, thinking=True)
        state = self.bot.state
        info = self.bot.info
        drawn = board.view(state)
        names = {c["name"] for c in drawn["cells"] if c["name"]}
        over = self.over
        your_turn = not over and state.to_move == self.seat
        record = self.bot.record()
        last = None
        if record:
            last = {"text": record[-1], "squares": board.last_squares(state, record[-1], names),
                    "by": "you" if self._mover(len(record) - 1) == self.seat else "computer"}
        return {
            "id": self.id, "game": info.spec, "name": info.name, "players": list(info.players),
            "sides": board.sides(info), "count": board.piece_count(info.name, drawn),
            "level": self.level, "player": self.player, "you": self.seat, "to_move": state.to_move,
            "your_turn": your_turn, "over": over, "thinking": self.thinking,
            "board": drawn, "moves": board.moves(state, names) if your_turn else [],
            "last": last, "record": record, "result": self.result(),
            "position": state.position(), "drawing": str(state),
            "network": self.setting.get("leaves") if self.bot.network else None,
            "opponent": self.opponent, "about": self.about, "setting": self.setting,
            "rating": self.rating, "profile": self.profile_note,
        }

    def _mover(self, ply: int) -> int:
        s = self.bot.info.new_state()
        for a in self.bot.state.move_stack[:ply]:
            s.push(a)
        return s.to_move


def _tag(name: str) -> str:
    """A record header's name for a seat: the page's name of it ("black (x)": Black), capitalised."""
    word = re.sub(r"[^A-Za-z0-9]", "", str(name).split(" ")[0]).capitalize()
    return word or "Player"


def _quoted(value) -> str:
    return " ".join(str(value).replace("\\", "\\\\").replace('"', '\\"').split())


class Hub:
    """The open games, the pool their searches run in, and the store that keeps them on disk."""

    def __init__(self, root=None, offered: list[dict] | None = None, max_games: int = MAX_GAMES,
                 time_per_move: float | None = None, iterations: int | None = None,
                 idle_seconds: float = IDLE_SECONDS, clock=time.monotonic, store: Store | None = None):
        self.root = root
        self.clock = clock               # seconds, for idle games (a test freezes it)
        self.offered = offered if offered is not None else available_games(root)
        self.by_spec = {g["spec"]: g for g in self.offered}
        self.max_games = max_games
        self.time, self.iterations = time_per_move, iterations
        self.idle_seconds = idle_seconds
        self.sessions: dict[str, Session] = {}
        self.building = 0
        self.pool = ThreadPoolExecutor(max_workers=max_games + 1, thread_name_prefix="descent-search")
        self.store = store
        # the store is written from one thread, in the order of the changes
        self.store_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="descent-store")
        self._build_lock = threading.Lock()      # networks load one at a time (a shared cache)
        self._reviving: dict[str, asyncio.Lock] = {}
        self._ratings: dict = {}
        self._elo_ranges: dict = {}

    def elo_range(self, spec: str) -> dict | None:
        if spec not in self._elo_ranges:
            self._elo_ranges[spec] = elo_range(spec, self.root, self.time is not None or self.iterations is not None)
        return self._elo_ranges[spec]

    def rating(self, spec: str, level: str) -> dict | None:
        key = (spec, level)
        if key not in self._ratings:
            self._ratings[key] = level_rating(spec, level, self.root,
                                              self.time is not None or self.iterations is not None)
        return self._ratings[key]

    async def run(self, fn, *args):
        """``fn(*args)`` in the pool, off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def stored(self, fn, *args, default=None):
        """``fn(*args)`` on the store, in its thread; a store that fails is logged, never fatal (the
        game goes on in memory)."""
        if self.store is None:
            return default
        try:
            return await asyncio.get_running_loop().run_in_executor(self.store_pool, fn, *args)
        except (sqlite3.Error, OSError, ValueError) as exc:
            log.warning("descent serve: the games file %s: %s", self.store.path, exc)
            return default

    async def save(self, s: Session) -> None:
        """Write the game's moves and state (one transaction)."""
        if self.store is not None:
            await self.stored(self.store.update, s.id, s.bot.record(), s.resigned, s.recorded, s.over)

    def _build(self, spec: str, level: str, player: str | None, seed: int,
               elo: float | None = None) -> Opponent:
        with self._build_lock:
            bot = Opponent(spec, level=level, net="best", time=self.time, iterations=self.iterations,
                           seed=seed, player=player, root=self.root, elo=elo)
            board.prepare(bot.info)     # a generic grid is learnt here, in the pool, not on the loop
            return bot

    def _session(self, gid: str, bot: Opponent, seat: int, owner: str, asked: dict, seed: int,
                 started: str | None = None) -> Session:
        rating = _rating(bot.rating)
        named = self.rating(bot.info.spec, asked["level"]) if asked.get("elo") is None else None
        if rating is not None and named and named.get("note"):
            rating["note"] = named["note"]
        return Session(gid, bot, seat, bot.level, asked.get("player"), rating, owner, self.clock(),
                       asked, seed, started)

    def in_progress(self) -> int:
        """The slots taken: games not over, and games being built."""
        return sum(1 for s in self.sessions.values() if not s.over) + self.building

    def _sweep(self) -> None:
        """Unload the games idle past ``idle_seconds`` (abandoned, or finished and read), then the
        oldest finished games beyond ``KEEP_FINISHED * max_games``; the store keeps them, and a
        request about one brings it back."""
        now = self.clock()
        for gid, s in list(self.sessions.items()):
            if now - s.touched > self.idle_seconds and not s.lock.locked():
                del self.sessions[gid]
        finished = sorted((s for s in self.sessions.values() if s.over and not s.lock.locked()),
                          key=lambda s: s.touched)
        for s in finished[:max(0, len(finished) - KEEP_FINISHED * self.max_games)]:
            del self.sessions[s.id]

    def _full(self, owner: str | None, freed: str | None = None) -> ApiError | None:
        """The 503 when every table is taken (None when one is free): when one frees, from the games
        in progress (an abandoned game's time runs out ``idle_seconds`` after its last request)."""
        self._sweep()
        taken = self.in_progress() - (1 if freed in self.sessions and not self.sessions[freed].over else 0)
        if taken < self.max_games:
            return None
        now = self.clock()
        left = [self.idle_seconds - (now - s.touched) for s in self.sessions.values()
                if not s.over and s.id != freed]
        soonest = max(1, math.ceil(min(left))) if left else 5
        tables = f"all {self.max_games} tables are" if self.max_games > 1 else "the one table is"
        msg = (f"{tables} taken by games in progress: one frees as soon as a game "
               f"ends or is resigned, so try again in a few seconds; an abandoned game frees its table "
               f"{_duration(soonest)} from now at the latest")
        mine = [s for s in self.sessions.values() if not s.over and owner and s.owner == owner]
        if mine:
            msg += ("; one is yours: go back to it (the start page links it) or resign it" if len(mine) == 1
                    else f"; {len(mine)} are yours: go back to one (the start page links them) or resign one")
        err = ApiError(503, msg)
        err.headers = {"Retry-After": str(min(soonest, 30))}
        return err

    async def new(self, body: dict, owner: str) -> Session:
        spec = _field(body, "game", str)
        level = _field(body, "level", str, "balanced")
        side = _field(body, "side", str, "first")
        player = _field(body, "player", str, None)
        replace = _field(body, "replace", str, None)
        elo = body.get("elo")
        if spec not in self.by_spec:
            known = ", ".join(self.by_spec) or "none"
            raise ApiError(400, f"unknown game {spec!r} (offered: {known})")
        if elo is not None:
            if isinstance(elo, bool) or not isinstance(elo, (int, float)) or not math.isfinite(elo):
                raise ApiError(400, "field 'elo' must be a number")
            if "level" in body or player:
                raise ApiError(400, "elo picks the computer's setting: send it without a level or a player")
            if self.elo_range(spec) is None:
                raise ApiError(400, f"{spec}: no Elo can be asked for here (the game has no rating "
                                    f"table for the network this server plays, or the server was "
                                    f"started with a fixed --time or --iterations)")
        if level not in LEVELS:
            raise ApiError(400, f"unknown level {level!r} (known: {', '.join(LEVELS)})")
        if side not in ("first", "second"):
            raise ApiError(400, f"side {side!r}: expected first or second")
        if level == "adaptive":
            if not player:
                raise ApiError(400, "the adaptive level needs a player name")
            check_player(player)
        elif player:
            raise ApiError(400, "a player name is only used with the adaptive level")
        # the page's old game, closed once the new one stands (so a refused new game keeps it)
        old = self.sessions.get(replace) if replace else None
        if old is not None and (not owner or not secrets.compare_digest(owner, old.owner)):
            old = None
        if old is not None:
            _busy(old)
        full = self._full(owner, old.id if old is not None else None)
        if full is not None:
            raise full
        gid = secrets.token_urlsafe(12)
        seed = secrets.randbelow(1_000_000)
        self.building += 1                        # the slot is held while the opponent is built
        try:
            bot = await self.run(self._build, spec, level, player, seed, elo)
        finally:
            self.building -= 1
        asked = {"game": spec, "level": level, "elo": elo, "player": player}
        session = self._session(gid, bot, 0 if side == "first" else 1, owner, asked, seed)
        self.sessions[gid] = session
        if self.store is not None:
            await self.stored(self.store.add, session.row())
        if replace:
            try:
                await self.close_game(replace, owner, quiet=True)
            except ApiError:        # it began thinking meanwhile, or is another's: it stays
                pass
        return session

    def _missing(self, gid: str, closed: bool = False) -> ApiError:
        if closed:
            return ApiError(404, f"game {short_id(gid)!r} was closed: start a new game")
        return ApiError(404, f"no game {short_id(gid)!r} on this server")

    def _owned(self, gid: str, owner: str | None, of: str) -> None:
        if not owner or not secrets.compare_digest(owner, of):
            raise ApiError(403, f"game {short_id(gid)!r} was started in another browser: start a game of "
                                f"your own")

    async def get(self, gid: str, owner: str | None) -> Session:
        """The game ``gid`` for the browser whose owner cookie is ``owner`` (404 unknown or closed,
        403 a game of another browser); asking about it keeps it open. A game not in memory (the
        server restarted, or it was unloaded idle) is rebuilt from its record in the store, at the
        same ply (503 when it is in progress and every table is taken)."""
        if not _ID.fullmatch(gid or ""):
            raise self._missing(gid)
        s = self.sessions.get(gid)
        if s is None:
            lock = self._reviving.setdefault(gid, asyncio.Lock())
            try:
                async with lock:
                    s = self.sessions.get(gid) or await self._revive(gid, owner)
            finally:
                if not lock.locked():
                    self._reviving.pop(gid, None)
        self._owned(gid, owner, s.owner)
        s.touched = self.clock()
        return s

    async def _revive(self, gid: str, owner: str | None) -> Session:
        row = await self.stored(self.store.get, gid) if self.store is not None else None
        if row is None or row["closed"]:
            raise self._missing(gid, closed=bool(row))
        self._owned(gid, owner, row["owner"])
        if not row["over"]:
            full = self._full(owner)
            if full is not None:
                raise full
        self.building += 0 if row["over"] else 1
        try:
            bot = await self.run(self._rebuild, row)
        except GameError as exc:
            raise ApiError(404, f"game {short_id(gid)!r} cannot be brought back on this server: {exc}") from None
        finally:
            self.building -= 0 if row["over"] else 1
        asked = {k: row[k] for k in ("game", "level", "elo", "player")}
        s = self._session(gid, bot, row["seat"], row["owner"], asked, row["seed"], row["started"])
        s.resigned, s.recorded = row["resigned"], row["recorded"]
        self.sessions[gid] = s
        log.info("descent serve: game %s brought back from its record at ply %d", gid, len(row["moves"]))
        return s

    def _rebuild(self, row: dict) -> Opponent:
        """A stored game's opponent, its moves replayed (in the pool: the network may load)."""
        bot = self._build(row["game"], row["level"], row["player"], row["seed"], row["elo"])
        for n, move in enumerate(row["moves"]):
            try:
                bot.push(move)
            except GameError as exc:
                log.warning("descent serve: game %s: move %d (%r) of its record cannot be replayed (%s); "
                            "the game goes on from the ply before", row["id"], n + 1, move, exc)
                break
        return bot

    async def close_game(self, gid: str, owner: str | None, quiet: bool = False) -> None:
        """Close a game (``DELETE``): it is unloaded and its record marked closed, never brought back."""
        s = self.sessions.get(gid) if _ID.fullmatch(gid or "") else None
        if s is not None:
            self._owned(gid, owner, s.owner)
            _busy(s)
            self.sessions.pop(gid, None)
        elif not quiet:
            row = await self.stored(self.store.get, gid) if self.store is not None and _ID.fullmatch(gid or "") else None
            if row is None or row["closed"]:
                raise self._missing(gid, closed=bool(row))
            self._owned(gid, owner, row["owner"])
        if self.store is not None and (s is not None or not quiet):
            await self.stored(self.store.close_game, gid)

    async def open_games(self, owner: str | None) -> list[dict]:
        """The owner's games in progress, the latest first: the ones in memory, and the store's."""
        if not owner:
            return []
        rows = await self.stored(self.store.open_games, owner, default=[]) if self.store is not None else []
        out = {r["id"]: {"id": r["id"], "game": r["game"], "level": r["level"] if r["elo"] is None else
                         f"Elo {r['elo']:+.0f}", "plies": len(r["moves"]), "started": r["started"]}
               for r in rows}
        for s in self.sessions.values():
            if s.owner == owner and not s.over:
                out[s.id] = {"id": s.id, "game": s.bot.info.spec, "level": s.level,
                             "plies": len(s.bot.state.move_stack), "started": s.started}
        return sorted(out.values(), key=lambda g: g["started"], reverse=True)[:5]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.store_pool.shutdown(wait=True)
        if self.store is not None:
            self.store.close()


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} seconds"
    return f"{math.ceil(seconds / 60):.0f} minutes"


def warm_up() -> None:
    """Import the network's inference backend (ONNX Runtime, about a second): done once at start,
    off the event loop and before the first request, so the first new game stalls no one."""
    try:
        from training.inference import onnx_available  # lazy: the inference backend
        onnx_available()
    except Exception:  # noqa: BLE001 - a backend that cannot load is found, and said, by a game
        log.debug("descent serve: warming up the inference backend failed", exc_info=True)


def _field(body: dict, key: str, kind, default=...):
    value = body.get(key, default)
    if value is ...:
        raise ApiError(400, f"missing field {key!r}")
    if value is None and default is None:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ApiError(400, f"field {key!r} must be a {kind.__name__}")
    if isinstance(value, str) and len(value) > 256:
        raise ApiError(400, f"field {key!r} is too long")
    return value


NEW_FIELDS = ("game", "level", "side", "player", "elo", "replace")


async def _body(request: Request, fields: tuple[str, ...]) -> dict:
    """The request's JSON object, holding no field but ``fields`` (400 otherwise; 413 too large)."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
        raise ApiError(413, f"request body over {MAX_BODY} bytes")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise ApiError(413, f"request body over {MAX_BODY} bytes")
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ApiError(400, "the request body is not JSON") from None
    except RecursionError:        # Python's parser recurses per level: a deep array ends it
        raise ApiError(400, "the request body is JSON nested too deeply (a flat object is expected)") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise ApiError(400, f"unknown field {unknown[0]!r} (known: {', '.join(fields)})")
    return body


def _busy(s: Session) -> None:
    if s.lock.locked():
        raise ApiError(409, "the computer is thinking: wait for its move")


@asynccontextmanager
async def _in_play(s: Session, turn: str | None = None):
    """Hold the game's lock for a change to a game still in play (409 while the computer thinks
    or once the game is over); ``turn``, ``"person"`` or ``"computer"``: whose turn it must be."""
    _busy(s)
    async with s.lock:
        if s.over:
            raise ApiError(409, "the game is over")
        if turn == "person" and s.bot.state.to_move != s.seat:
            raise ApiError(409, "it is the computer's turn")
        if turn == "computer" and s.bot.state.to_move == s.seat:
            raise ApiError(409, "it is your turn")
        yield


async def _think(hub: Hub, s: Session, fn):
    """Run the search ``fn`` in the hub's pool, the page showing the board of this moment meanwhile."""
    s.think()
    try:
        return await hub.run(fn)
    finally:
        s.done()


async def _finish(hub: Hub, s: Session) -> None:
    """After a game ends: an adaptive opponent records the person's result in their profile."""
    if s.recorded or s.bot.adaptive is None or not s.over:
        return
    s.recorded = True
    try:
        change = await hub.run(lambda: s.bot.end_game(s.seat, resigned=s.resigned))
        a = s.bot.adaptive
        s.profile_note = (f"Your profile is updated: next game {a.iterations} iterations a move, rung "
                          f"{a.entry['rung'] + 1} of {len(a.rungs)} (this game: "
                          f"{change['before']['iterations']} iterations).")
    except (OSError, GameError):
        log.warning("descent serve: the profile of %s could not be saved", s.player, exc_info=True)
        s.profile_note = "Could not save your profile (the server's log says why)."


class SecurityHeaders:
    """ASGI middleware: the page loads nothing from elsewhere, and answers are not cached."""

    HEADERS = [(b"content-security-policy", b"default-src 'self'; img-src 'self' data:; style-src 'self'; "
                                            b"script-src 'self'"),
               (b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-store")]

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message = dict(message, headers=list(message.get("headers", [])) + self.HEADERS)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def open_store(store) -> Store | None:
    """The games file ``store`` (a path; None: ``store.default_path()``; False: none). One that
    cannot be opened is said in one line, and the server keeps its games in memory only."""
    if store is False:
        return None
    path = Path(store) if store else default_path()
    try:
        return Store(path)
    except (sqlite3.Error, OSError) as exc:
        log.warning("descent serve: cannot open the games file %s (%s): games are kept in memory only, "
                    "and a restart loses them", path, exc)
        return None


def create_app(root=None, offered: list[dict] | None = None, max_games: int = MAX_GAMES,
               time_per_move: float | None = None, iterations: int | None = None,
               idle_seconds: float = IDLE_SECONDS, clock=time.monotonic, store=None,
               named=()) -> Starlette:
    """The ASGI app. ``root``: the folder of the user's runs (default ``checkpoints/``);
    ``offered``: the games offered (default ``available_games(root, named)``; ``named``: game specs
    offered besides the games with a network, ``descent serve --game``); ``time_per_move`` /
    ``iterations``: the computer's budget per move (default: as ``descent play``, one second, or the
    calibrated budget at the balanced level); ``max_games``: games open at once; ``clock``: the
    seconds idle games are measured in (``time.monotonic``); ``store``: the games file
    (``descent.web.store``; default ``store.default_path()``, in the data directory; False: games
    are kept in memory only)."""
    if offered is None:
        offered = available_games(root, named)
    hub = Hub(root, offered, max_games, time_per_move, iterations, idle_seconds, clock, open_store(store))

    async def index(request: Request):
        return FileResponse(STATIC / "index.html", media_type="text/html")

    async def favicon(request: Request):
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    async def list_games(request: Request):
        return JSONResponse({"games": [dict(g, levels=[{"name": lv, "rating": hub.rating(g["spec"], lv)}
                                                        for lv in LEVELS], elo=hub.elo_range(g["spec"]))
                                       for g in hub.offered],
                             "max_games": hub.max_games, "idle_seconds": hub.idle_seconds,
                             "heartbeat": max(1.0, min(HEARTBEAT, hub.idle_seconds / 3))})

    async def list_levels(request: Request):
        return JSONResponse({"levels": [{"name": lv, "about": LEVEL_INFO[lv]} for lv in LEVELS]})

    async def game(request: Request) -> Session:
        return await hub.get(request.path_params["gid"], request.cookies.get(OWNER_COOKIE))

    async def mine(request: Request):
        return JSONResponse({"games": await hub.open_games(request.cookies.get(OWNER_COOKIE))})

    async def new_game(request: Request):
        owner = request.cookies.get(OWNER_COOKIE)
        if not owner or not _ID.fullmatch(owner):
            owner = secrets.token_urlsafe(24)
        s = await hub.new(await _body(request, NEW_FIELDS), owner)
        response = JSONResponse(s.view(), status_code=201)
        response.set_cookie(OWNER_COOKIE, owner, max_age=30 * 86400, httponly=True, samesite="strict",
                            path="/")
        return response

    async def show(request: Request):
        return JSONResponse((await game(request)).view())

    async def move(request: Request):
        s = await game(request)
        body = await _body(request, ("move",))
        text = _field(body, "move", str)
        async with _in_play(s, turn="person"):
            try:
                s.bot.push(text)
            except GameError as exc:
                raise ApiError(400, f"{text!r} is not a legal move: {exc}") from None
            await _finish(hub, s)
            await hub.save(s)
        return JSONResponse(s.view())

    async def reply(request: Request):
        s = await game(request)
        async with _in_play(s, turn="computer"):
            played = await _think(hub, s, s.bot.reply)
            await _finish(hub, s)
            await hub.save(s)
        return JSONResponse(dict(s.view(), played=played))

    async def hint(request: Request):
        s = await game(request)
        async with _in_play(s, turn="person"):
            suggestion = await _think(hub, s, s.bot.hint)
        names = {c["name"] for c in board.view(s.bot.state)["cells"] if c["name"]}
        return JSONResponse(dict(s.view(), hint={"text": suggestion, "squares": board.move_squares(
            s.bot.state, suggestion, names)}))

    async def undo(request: Request):
        s = await game(request)
        async with _in_play(s):
            plies = _person_undo_plies(s.bot, s.seat)
            if not plies:
                raise ApiError(409, "nothing to undo: you have not moved yet")
            s.bot.undo(plies)
            await hub.save(s)
        return JSONResponse(dict(s.view(), undone=plies))

    async def resign(request: Request):
        s = await game(request)
        async with _in_play(s):
            s.resigned = True
            await _finish(hub, s)
            await hub.save(s)
        return JSONResponse(s.view())

    async def record(request: Request):
        s = await game(request)
        name = f"descent-{s.bot.info.name}-{s.started[:10]}.txt"
        return PlainTextResponse(s.record_text(), headers={
            "Content-Disposition": f'attachment; filename="{name}"'})

    async def close(request: Request):
        gid = request.path_params["gid"]
        await hub.close_game(gid, request.cookies.get(OWNER_COOKIE))
        return JSONResponse({"closed": gid})

    async def api_error(request: Request, exc: ApiError):
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=exc.headers)

    async def game_error(request: Request, exc: GameError):
        return JSONResponse({"error": scrub(" ".join(str(exc).split()))}, status_code=400)

    async def http_error(request: Request, exc: HTTPException):
        message = {404: f"no such address: {request.url.path}",
                   405: f"method {request.method} is not allowed here"}.get(exc.status_code, exc.detail)
        return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)

    async def server_error(request: Request, exc: Exception):
        log.exception("descent serve: %s %s failed", request.method, request.url.path)
        return JSONResponse({"error": f"internal error ({type(exc).__name__}); the server log has "
                                      f"the details"}, status_code=500)

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
        Route("/api/games", list_games, methods=["GET"]),
        Route("/api/levels", list_levels, methods=["GET"]),
        Route("/api/new", new_game, methods=["POST"]),
        Route("/api/mine", mine, methods=["GET"]),
        Route("/api/game/{gid}", show, methods=["GET"]),
        Route("/api/game/{gid}", close, methods=["DELETE"]),
        Route("/api/game/{gid}/move", move, methods=["POST"]),
        Route("/api/game/{gid}/reply", reply, methods=["POST"]),
        Route("/api/game/{gid}/hint", hint, methods=["POST"]),
        Route("/api/game/{gid}/undo", undo, methods=["POST"]),
        Route("/api/game/{gid}/resign", resign, methods=["POST"]),
        Route("/api/game/{gid}/record", record, methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

    @asynccontextmanager
    async def lifespan(app):
        if hub.offered:      # before the first request: the network backend's import holds the GIL
            await hub.run(warm_up)
        yield
        hub.close()

    # each handler is registered for its own exception class only (Starlette's handler type takes
    # any Exception, so the handlers' narrower parameter types are widened to Any here)
    handlers: dict[type[Exception], Callable[[Request, Any], Awaitable[Response]]] = {
        ApiError: api_error, GameError: game_error, HTTPException: http_error, Exception: server_error}
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(SecurityHeaders)],
                    exception_handlers=handlers)
    app.state.hub = hub
    return app
