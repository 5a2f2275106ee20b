"""The web app of ``descent serve``: one page to play in the browser, and the JSON API behind it.

``create_app(...)`` returns a Starlette (ASGI) application; ``descent serve`` runs it with uvicorn.

**What a client may choose.** A game from the server's list (games with a shipped or trained network,
``available_games``), a level of ``descent.api.LEVELS``, a side, and with the adaptive level a player
name (``descent.adaptive.check_player``: the profile file is named by the server from it). The
network is the server's: ``best_network`` of the game, as for ``descent play``. Nothing a client
sends is executed or names a file; moves are parsed by the game's own parser.

**The computer's thinking never blocks the server.** Every search (and the loading of a network)
runs in a thread pool off the event loop; the compiled search runs without the GIL
(``search_ext/bestfirst.pyx``: its iterations run in a ``with nogil`` block), so the loop answers
other requests while games are thinking (bench/bench_serve.py measures it). Games are keyed by
random ids made by the server; one game does one thing at a time: a request on a game whose
computer is thinking is refused with 409.

**A game belongs to the browser that started it.** ``POST /api/new`` gives the browser an owner
cookie (``descent_owner``, HttpOnly, SameSite=Strict) when it has none, and every request on a game
must carry that cookie (403 otherwise), so the game's id in the page's address (``/?game=ID``) brings
a reload or a link back to the game in that browser only. A script keeps the cookie as a browser
does (``requests.Session``, ``curl -b jar -c jar``).

**Slots.** At most ``max_games`` games *in progress* at once (a new one past that is refused with
503): a finished or resigned game frees its slot at once (it stays readable, its record
downloadable, until it has been idle ``idle_seconds``), and a game in progress nobody has asked
about for ``idle_seconds`` (default ``IDLE_SECONDS``, ten minutes; ``descent serve --idle``) is
closed as abandoned. The page asks about its game every ``HEARTBEAT`` seconds (a third of
``idle_seconds`` when that is shorter) while it is open, so
only a closed tab or a lost connection lets a game go idle. Finished games kept beyond
``KEEP_FINISHED`` times ``max_games`` are closed oldest first.

**Errors.** Every error is JSON, ``{"error": "one line"}``, with a 4xx status for a bad request
(400 malformed or illegal, 404 unknown game id or path, 405 method, 409 not now, 413 too large,
503 too many games) and 500 for a fault of the server, never a traceback page.

The API (JSON bodies and answers):

* ``GET /api/games``: the games offered, each with its levels and their ratings (``level_rating``);
* ``GET /api/levels``: the levels with a description;
* ``POST /api/new`` ``{"game", "level", "side": "first"|"second", "player"}``: a new game, its view;
  ``{"game", "elo": N, "side"}`` instead of a level plays the rated setting nearest to Elo ``N``
  (as ``descent play --elo``; the game's ``elo`` range in ``/api/games`` says where it applies);
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
from descent.web import board
from search_ext.agents import parse_agent

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
        self.message = " ".join(str(message).split())


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
    return {"elo": entry["elo"], "low": entry["low"], "high": entry["high"], "anchor": t["anchor"],
            "note": strength.level_notes(t).get(level)}


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
    return {k: rating.get(k) for k in ("elo", "low", "high", "anchor")}


def available_games(root=None) -> list[dict]:
    """The games a person can play: every game with a network shipped in the repository
    (``descent.shipped``) or trained under ``root`` (``descent checkpoints``), in name order."""
    found: dict[str, str] = {}
    for _, card in shipped.entries():
        found.setdefault(card["game"], "shipped")
    for row in list_checkpoints(Path(root) if root else DEFAULT_ROOT):
        if row["exists"] and row["games"] and row["game"]:
            found[row["game"]] = "trained"
    out = []
    for spec in sorted(found):
        try:
            info = games.load(spec)
        except GameError:
            continue
        out.append({"spec": info.spec, "name": info.name, "players": list(info.players),
                    "network": found[spec]})
    return out


def public_spec(spec: str) -> str:
    """An agent spec as a remote player may read it: no seed, and a network named by its folder and
    file (``reversi_size-6/final.weights.h5``), never by a path of the server's."""
    name, opts = parse_agent(spec)
    shown = [f"{k}={Path(str(val)).parent.name}/{Path(str(val)).name}" if k == "net" and val else f"{k}={val}"
             for k, val in opts.items() if k != "seed"]
    return f"{name}:{','.join(shown)}" if shown else name


def _person_undo_plies(bot: Opponent, seat: int) -> int:
    """How many plies take back the person's last move and everything played after it (0: none)."""
    s = bot.info.new_state()
    movers = []
    for a in bot.state.move_stack:
        movers.append(s.to_move)
        s.push(a)
    return movers[::-1].index(seat) + 1 if seat in movers else 0


class Session:
    """One game in progress: the opponent, the person's seat, and what happened."""

    def __init__(self, gid: str, bot: Opponent, seat: int, level: str, player: str | None,
                 rating: dict | None, owner: str = "", touched: float = 0.0):
        self.id, self.bot, self.seat, self.level, self.player = gid, bot, seat, level, player
        self.owner = owner               # the owner cookie of the browser that started it
        self.rating = rating
        self.lock = asyncio.Lock()
        self.thinking = False
        self.resigned = False
        self.recorded = False            # the adaptive profile has this game's result
        self.profile_note: str | None = None
        self.touched = touched           # the hub's clock at the last request about it
        self.started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())

    @property
    def over(self) -> bool:
        return self.resigned or self.bot.is_over()

    def result(self) -> dict | None:
        players = board.side_names(self.bot.info.players)
        if self.resigned:
            return {"winner": 1 - self.seat, "score": "0-1" if self.seat == 0 else "1-0",
                    "text": f"You resigned: the computer ({players[1 - self.seat]}) wins."}
        if not self.bot.is_over():
            return None
        o = self.bot.outcome()
        score = self.bot.state.result()
        if o.winner is None:
            return {"winner": None, "score": score, "text": f"Draw ({o.termination})."}
        mine = o.winner == self.seat
        return {"winner": o.winner, "score": score,
                "text": f"{'You win' if mine else 'The computer wins'} ({o.termination}), {score}."}

    def record_text(self) -> str:
        players = self.bot.info.players
        res = self.result()
        moves = self.bot.record()
        numbered = " ".join(f"{i // 2 + 1}.{m}" if i % 2 == 0 else m for i, m in enumerate(moves))
        return (f"[Game \"{self.bot.info.spec}\"]\n[Date \"{self.started} UTC\"]\n"
                f"[You \"{players[self.seat]}\"]\n[Computer \"{players[1 - self.seat]}\"]\n"
                f"[Level \"{self.level}\"]\n[Result \"{res['score'] if res else '*'}\"]\n"
                + ("[Termination \"resignation\"]\n" if self.resigned else "")
                + numbered + "\n")

    def think(self) -> None:
        """The computer starts thinking: until ``done()``, the view is the one of this moment (the
        search's thread plays its move on the board when it ends, so the board is not read then)."""
        self._frozen = self.view()
        self.thinking = True

    def done(self) -> None:
        self.thinking = False

    def view(self) -> dict:
        """What the page shows: the board, the legal moves (on the person's turn), the last move,
        the record and the result."""
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
            last = {"text": record[-1], "squares": board.squares(info.name, record[-1], names),
                    "by": "you" if self._mover(len(record) - 1) == self.seat else "computer"}
        net = self.bot.network
        return {
            "id": self.id, "game": info.spec, "name": info.name, "players": list(info.players),
            "sides": board.side_names(info.players), "count": board.piece_count(info.name, drawn),
            "level": self.level, "player": self.player, "you": self.seat, "to_move": state.to_move,
            "your_turn": your_turn, "over": over, "thinking": self.thinking,
            "board": drawn, "moves": board.moves(state, names) if your_turn else [],
            "last": last, "record": record, "result": self.result(),
            "position": state.position(), "drawing": str(state),
            "network": f"{Path(net).parent.name}/{Path(net).name}" if net else None,
            "opponent": self.bot.adaptive.describe() if self.bot.adaptive is not None else public_spec(self.bot.spec),
            "rating": self.rating, "profile": self.profile_note,
        }

    def _mover(self, ply: int) -> int:
        s = self.bot.info.new_state()
        for a in self.bot.state.move_stack[:ply]:
            s.push(a)
        return s.to_move


class Hub:
    """The open games and the pool their searches run in."""

    def __init__(self, root=None, offered: list[dict] | None = None, max_games: int = MAX_GAMES,
                 time_per_move: float | None = None, iterations: int | None = None,
                 idle_seconds: float = IDLE_SECONDS, clock=time.monotonic):
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
        self._build_lock = threading.Lock()      # networks load one at a time (a shared cache)
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

    def _build(self, spec: str, level: str, player: str | None, seed: int,
               elo: float | None = None) -> Opponent:
        with self._build_lock:
            return Opponent(spec, level=level, net="best", time=self.time, iterations=self.iterations,
                            seed=seed, player=player, root=self.root, elo=elo)

    def in_progress(self) -> int:
        """The slots taken: games not over, and games being built."""
        return sum(1 for s in self.sessions.values() if not s.over) + self.building

    def _sweep(self) -> None:
        """Close the games idle past ``idle_seconds`` (abandoned, or finished and read), then the
        oldest finished games beyond ``KEEP_FINISHED * max_games``."""
        now = self.clock()
        for gid, s in list(self.sessions.items()):
            if now - s.touched > self.idle_seconds and not s.lock.locked():
                del self.sessions[gid]
        finished = sorted((s for s in self.sessions.values() if s.over and not s.lock.locked()),
                          key=lambda s: s.touched)
        for s in finished[:max(0, len(finished) - KEEP_FINISHED * self.max_games)]:
            del self.sessions[s.id]

    async def new(self, body: dict, owner: str) -> Session:
        spec = _field(body, "game", str)
        level = _field(body, "level", str, "balanced")
        side = _field(body, "side", str, "first")
        player = _field(body, "player", str, None)
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
        self._sweep()
        if self.in_progress() >= self.max_games:
            raise ApiError(503, f"too many games in progress ({self.max_games}): finish or close one, "
                                f"or try again in {self.idle_seconds / 60:g} minutes (an abandoned game "
                                f"is closed then)")
        gid = secrets.token_urlsafe(12)
        self.building += 1                        # the slot is held while the opponent is built
        try:
            bot = await self.run(self._build, spec, level, player, secrets.randbelow(1_000_000), elo)
        finally:
            self.building -= 1
        session = Session(gid, bot, 0 if side == "first" else 1, bot.level, player, _rating(bot.rating), owner,
                          self.clock())
        self.sessions[gid] = session
        return session

    def get(self, gid: str, owner: str | None) -> Session:
        """The game ``gid`` for the browser whose owner cookie is ``owner`` (404 unknown or closed,
        403 a game of another browser); asking about it keeps it open."""
        s = self.sessions.get(gid) if _ID.fullmatch(gid or "") else None
        if s is None:
            raise ApiError(404, f"no game {gid!r} on this server (a game is closed after "
                                f"{self.idle_seconds / 60:g} minutes without a request)")
        if not owner or not secrets.compare_digest(owner, s.owner):
            raise ApiError(403, f"game {gid!r} was started in another browser: start a game of your own")
        s.touched = self.clock()
        return s

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


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


NEW_FIELDS = ("game", "level", "side", "player", "elo")


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
        s.profile_note = (f"Your profile is updated: next game {s.bot.adaptive.describe()} "
                          f"(this game: {change['before']['iterations']} iterations).")
    except (OSError, GameError) as exc:
        s.profile_note = f"Could not save your profile: {exc}"


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


def create_app(root=None, offered: list[dict] | None = None, max_games: int = MAX_GAMES,
               time_per_move: float | None = None, iterations: int | None = None,
               idle_seconds: float = IDLE_SECONDS, clock=time.monotonic) -> Starlette:
    """The ASGI app. ``root``: the folder of the user's runs (default ``checkpoints/``);
    ``offered``: the games offered (default ``available_games(root)``); ``time_per_move`` /
    ``iterations``: the computer's budget per move (default: as ``descent play``, one second, or the
    calibrated budget at the balanced level); ``max_games``: games open at once; ``clock``: the
    seconds idle games are measured in (``time.monotonic``)."""
    hub = Hub(root, offered, max_games, time_per_move, iterations, idle_seconds, clock)

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

    def game(request: Request) -> Session:
        return hub.get(request.path_params["gid"], request.cookies.get(OWNER_COOKIE))

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
        return JSONResponse(game(request).view())

    async def move(request: Request):
        s = game(request)
        body = await _body(request, ("move",))
        text = _field(body, "move", str)
        async with _in_play(s, turn="person"):
            try:
                s.bot.push(text)
            except GameError as exc:
                raise ApiError(400, f"{text!r} is not a legal move: {exc}") from None
        await _finish(hub, s)
        return JSONResponse(s.view())

    async def reply(request: Request):
        s = game(request)
        async with _in_play(s, turn="computer"):
            played = await _think(hub, s, s.bot.reply)
        await _finish(hub, s)
        return JSONResponse(dict(s.view(), played=played))

    async def hint(request: Request):
        s = game(request)
        async with _in_play(s, turn="person"):
            suggestion = await _think(hub, s, s.bot.hint)
        names = {c["name"] for c in board.view(s.bot.state)["cells"] if c["name"]}
        return JSONResponse(dict(s.view(), hint={"text": suggestion, "squares": board.squares(
            s.bot.info.name, suggestion, names)}))

    async def undo(request: Request):
        s = game(request)
        async with _in_play(s):
            plies = _person_undo_plies(s.bot, s.seat)
            if not plies:
                raise ApiError(409, "nothing to undo: you have not moved yet")
            s.bot.undo(plies)
        return JSONResponse(dict(s.view(), undone=plies))

    async def resign(request: Request):
        s = game(request)
        async with _in_play(s):
            s.resigned = True
        await _finish(hub, s)
        return JSONResponse(s.view())

    async def record(request: Request):
        s = game(request)
        name = f"descent-{s.bot.info.name}-{s.started[:10]}.txt"
        return PlainTextResponse(s.record_text(), headers={
            "Content-Disposition": f'attachment; filename="{name}"'})

    async def close(request: Request):
        s = game(request)
        _busy(s)
        hub.sessions.pop(s.id, None)
        return JSONResponse({"closed": s.id})

    async def api_error(request: Request, exc: ApiError):
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    async def game_error(request: Request, exc: GameError):
        return JSONResponse({"error": " ".join(str(exc).split())}, status_code=400)

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
