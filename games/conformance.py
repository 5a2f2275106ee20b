"""The conformance suite a game author runs: ``descent check-game SPEC`` (and ``check_game`` here).

It checks any game, compiled or written in Python (``games.protocol``), through the ``State``
contract the searches use, along seeded uniformly random games:

* facts: players, action space, ply cap, planes, symmetries;
* random games: legal actions sorted, unique and in range, non-empty until the game is over; the
  ply cap kept; a copy equals its original and is independent of it; every ``pop`` restores the
  hash, the player, the ply, the legal actions and the planes of before the move, and a position
  reached by ``pop`` equals the same moves replayed from the start;
* terminal states: no legal actions (for a Python game, the game object's own list too), a result
  of +1, 0 or -1 and a score of its sign;
* hash: replaying the same moves gives the same hashes; two positions with the same search key
  have the same player to move, legal actions, outcome and planes;
* encoding: shaped ``planes_shape``, float32, finite, the same on every call;
* symmetries: playing the image of every move gives the transformed planes, the images of the
  legal actions and the same outcome;
* text: ``parse_move(move_to_str(a)) == a`` for every legal action; a position set from its text
  has the same hash, player, legal actions and outcome;
* perft: the compiled count (apply/undo) to ``depth`` equals the count over copies (``push``);
  seeded random games are reproducible.

Each failure names the check, the reason, and the moves from the initial position that show it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

import games
from games import validate
from games._state import perft, random_games
from games.symmetry import transform_planes


@dataclass
class Failure:
    check: str
    reason: str
    moves: str | None = ""     # the moves from the initial position that show it ('': none; None: unknown)

    def __str__(self) -> str:
        where = "" if self.moves is None else (
            f" (moves from the start: {self.moves})" if self.moves else " (at the initial position)")
        return f"{self.check}: {self.reason}{where}"


@dataclass
class Report:
    spec: str
    results: list[tuple[str, str]] = field(default_factory=list)    # (check, summary) of passed checks
    failures: list[Failure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


class _Fail(Exception):
    def __init__(self, reason: str, moves: list[int] | None = None):
        super().__init__(reason)
        self.reason, self.moves = reason, moves or []


def _texts(info, moves: list[int]) -> str:
    """The moves in the game's notation (action ids where the notation fails)."""
    s = info.new_state()
    out = []
    for a in moves:
        try:
            out.append(s.move_to_str(a))
            s.push(a)
        except Exception:
            out.append(f"#{a}")
            s = None
            break
    if s is None:
        out += [f"#{a}" for a in moves[len(out):]]
    return " ".join(out)


def _snapshot(s) -> tuple:
    return (s.zobrist_hash, s.search_key, s.to_move, s.ply, s.is_game_over(), tuple(s.legal_actions_list()),
            s.encode_planes().tobytes())


_FIELDS = ("hash", "search key", "player to move", "ply", "game-over flag", "legal actions", "planes")


def _diff(a: tuple, b: tuple) -> str:
    return ", ".join(f for f, x, y in zip(_FIELDS, a, b) if x != y)


def _replay(info, moves):
    s = info.new_state()
    for a in moves:
        s.push(a)
    return s


# ---- the checks ------------------------------------------------------------------------------------

def _facts(info, ctx) -> str:
    h, w, c = info.planes_shape
    s = info.new_state()
    if not (info.num_actions > 0 and info.max_plies > 0 and h > 0 and w > 0 and c > 0):
        raise _Fail(f"num_actions, max_plies and the planes must be positive: {info.facts()}")
    if len(info.players) != 2 or info.players[0] == info.players[1]:
        raise _Fail(f"two different players needed, got {info.players}")
    if 0 not in info.symmetries or not all(0 <= k < 8 for k in info.symmetries):
        raise _Fail(f"symmetries must include 0 and be ids 0..7, got {info.symmetries}")
    if s.ply != 0 or s.move_stack:
        raise _Fail("the initial position has plies or moves")
    return (f"players {', '.join(info.players)}; {info.num_actions} actions; ply cap {info.max_plies}; "
            f"planes {h}x{w}x{c}; symmetries {', '.join(map(str, info.symmetries))}")


def _random_games(info, ctx) -> str:
    positions = 0
    for g in range(ctx.n_games):
        rng = random.Random(ctx.seed * 1_000_003 + g)
        s = info.new_state()
        moves: list[int] = []
        ctx.moves = moves
        trail = []
        ctx.games.append(moves)
        while not s.is_game_over():
            legal = s.legal_actions_list()
            if not legal:
                raise _Fail("no legal actions in a position that is not over", moves)
            if legal != sorted(set(legal)):
                raise _Fail(f"legal actions not sorted ascending without repeats: {legal[:20]}", moves)
            if not all(0 <= a < info.num_actions for a in legal):
                raise _Fail(f"a legal action out of range [0, {info.num_actions}): {legal[:20]}", moves)
            if s.ply >= info.max_plies:
                raise _Fail(f"the game goes on at the ply cap {info.max_plies}", moves)
            before = _snapshot(s)
            trail.append(before)
            a = rng.choice(legal)
            if rng.random() < 0.25:
                c = s.copy()
                if _snapshot(c) != before:
                    raise _Fail(f"a copy differs from its original: {_diff(before, _snapshot(c))}", moves)
                c.push(a)
                if _snapshot(s) != before:
                    raise _Fail(f"playing {s.move_to_str(a)} on a copy changed the original: "
                                f"{_diff(before, _snapshot(s))}", moves)
            s.push(a)
            moves.append(a)
            positions += 1
            if s.ply != len(moves):
                raise _Fail(f"the ply is {s.ply} after {len(moves)} moves", moves)
        for k in range(len(moves) - 1, -1, -1):
            s.pop()
            now = _snapshot(s)
            if now != trail[k]:
                raise _Fail(f"undoing {_texts(info, moves[k:k + 1])} does not restore the position before it: "
                            f"{_diff(trail[k], now)} differ", moves[:k + 1])
            if k % 7 == 0 and _snapshot(_replay(info, moves[:k])) != now:
                raise _Fail(f"the position reached by undo differs from the same moves replayed: "
                            f"{_diff(_snapshot(_replay(info, moves[:k])), now)}", moves[:k])
    ctx.moves = None
    return f"{ctx.n_games} games, {positions} moves played and taken back, copies checked"


def _terminal(info, ctx) -> str:
    ends = {1: 0, 0: 0, -1: 0}
    for moves in ctx.games:
        s = _replay(info, moves)
        if not s.is_game_over():
            continue
        if s.legal_actions_list():
            raise _Fail("a finished game has legal actions", moves)
        g = getattr(s, "game_object", None)
        if g is not None and g.is_terminal() and list(g.legal_actions()):
            raise _Fail(f"the game object's legal_actions() is not empty in a finished game: "
                        f"{list(g.legal_actions())[:20]}", moves)
        o = s.outcome()
        if o is None or o.binary not in (-1, 0, 1):
            raise _Fail(f"a finished game without a result of +1, 0 or -1: {o}", moves)
        if not -1.0 <= o.score <= 1.0 or np.sign(o.score) != o.binary:
            raise _Fail(f"the score {o.score} does not have the sign of the result {o.binary}", moves)
        ends[o.binary] += 1
    return f"first player wins {ends[1]}, draws {ends[0]}, second player wins {ends[-1]}"


def _hash(info, ctx) -> str:
    seen: dict[int, tuple] = {}
    for moves in ctx.games:
        s, t = info.new_state(), info.new_state()
        for k, a in enumerate(moves):
            s.push(a)
            t.push(a)
            if (s.zobrist_hash, s.search_key) != (t.zobrist_hash, t.search_key):
                raise _Fail("the same moves played twice give two hashes", moves[:k + 1])
            snap = _snapshot(s)
            o = s.outcome()
            key = (snap[2], snap[4], snap[5], snap[6], o.binary if o is not None else None)
            other = seen.setdefault(s.search_key, (key, moves[:k + 1]))
            if other[0] != key:
                raise _Fail(f"two positions with one search key differ (the other: "
                            f"{_texts(info, other[1])})", moves[:k + 1])
    return f"{len(seen)} distinct search keys, each with one future"


def _encoding(info, ctx) -> str:
    n = 0
    for moves in ctx.games[:4]:
        s = info.new_state()
        for k in range(len(moves) + 1):
            x = s.encode_planes()
            if x.shape != tuple(info.planes_shape) or x.dtype != np.float32:
                raise _Fail(f"planes {x.shape} {x.dtype}, not {info.planes_shape} float32", moves[:k])
            if not np.isfinite(x).all():
                raise _Fail("planes with NaN or infinity", moves[:k])
            if not np.array_equal(x, s.encode_planes()) or not np.array_equal(x, s.copy().encode_planes()):
                raise _Fail("the same position encodes differently twice", moves[:k])
            n += 1
            if k < len(moves):
                s.push(moves[k])
    return f"{n} positions, deterministic"


def _symmetries(info, ctx) -> str:
    syms = [k for k in info.symmetries if k != 0]
    for sym in syms:
        for moves in ctx.games[:4]:
            s, t = info.new_state(), info.new_state()
            for k, a in enumerate(moves):
                images = sorted(s.transform_action(sym, x) for x in s.legal_actions_list())
                if images != t.legal_actions_list():
                    raise _Fail(f"symmetry {sym}: the images of the legal actions are not the legal actions of "
                                f"the image position", moves[:k])
                s.push(a)
                t.push(s.transform_action(sym, a))
                if not np.array_equal(transform_planes(s.encode_planes(), sym), t.encode_planes()):
                    raise _Fail(f"symmetry {sym}: the image position's planes are not the transformed planes",
                                moves[:k + 1])
                if s.to_move != t.to_move or s.outcome() != t.outcome():
                    raise _Fail(f"symmetry {sym}: the image position has another player to move or outcome",
                                moves[:k + 1])
    return f"{len(syms)} symmetries beside the identity" if syms else "the identity only"


def _text(info, ctx) -> str:
    n = long = 0
    for moves in ctx.games[:4]:
        s = info.new_state()
        for k in range(len(moves) + 1):
            for x in s.legal_actions_list():
                text = s.move_to_str(x)
                if s.parse_move(text) != x:
                    raise _Fail(f"action {x} reads back from its text {text!r} as {s.parse_move(text)}", moves[:k])
                n += 1
            if len(s.position()) > validate.MAX_TEXT:   # past what set_position accepts: not a fault
                long += 1
                if k < len(moves):
                    s.push(s.move_to_str(moves[k]))
                continue
            t = info.new_state()
            t.set_position(s.position())
            # a game whose outcome depends on the history (repetition draws) cannot carry that part
            # in its position text: there only the text and the player to move are compared
            full = not info.extra.get("history_dependent", False)
            if (t.position(), t.to_move) != (s.position(), s.to_move) or full and (
                    t.zobrist_hash, t.legal_actions_list(), t.is_game_over()) != (
                    s.zobrist_hash, s.legal_actions_list(), s.is_game_over()):
                raise _Fail(f"the position set from its text {s.position()!r:.80} differs", moves[:k])
            if k < len(moves):
                s.push(s.move_to_str(moves[k]))
    skipped = f" ({long} positions of texts over {validate.MAX_TEXT} characters not read back)" if long else ""
    return f"{n} move texts and the positions read back{skipped}"


def _walk(s, depth: int) -> int:
    if depth == 0:
        return 1
    total = 0
    for a in s.legal_actions_list():
        c = s.copy()
        c.push(a)
        total += _walk(c, depth - 1)
    return total


def _perft(info, ctx) -> str:
    counts = []
    s = info.new_state()
    for d in range(1, ctx.depth + 1):
        n = perft(s, d)
        walked = _walk(s, d)
        if n != walked:
            raise _Fail(f"perft({d}) = {n} by apply/undo but {walked} by copies")
        counts.append(n)
    r1, l1 = random_games(s, 10, ctx.seed)
    r2, l2 = random_games(s, 10, ctx.seed)
    if not ((r1 == r2).all() and (l1 == l2).all()):
        raise _Fail(f"random games with seed {ctx.seed} differ from one run to the next")
    if s.ply != 0 or s.move_stack:
        raise _Fail("perft or random games changed the position they started from")
    return "perft " + ", ".join(f"{d + 1}: {n}" for d, n in enumerate(counts))


CHECKS = (("facts", _facts), ("random games", _random_games), ("terminal states", _terminal),
          ("hash", _hash), ("encoding", _encoding), ("symmetries", _symmetries), ("text", _text),
          ("perft", _perft))


class _Context:
    def __init__(self, n_games: int, seed: int, depth: int):
        self.n_games, self.seed, self.depth = n_games, seed, depth
        self.games: list[list[int]] = []
        self.moves: list[int] | None = None       # the game being played (for an unexpected error)


def check_game(spec, n_games: int = 20, seed: int = 0, depth: int = 3) -> Report:
    """Run every check on the game ``spec`` (``GameError`` if it does not load); a check stops at its
    first failure."""
    info = games.load(spec)
    report = Report(info.spec)
    ctx = _Context(n_games, seed, depth)
    for name, check in CHECKS:
        ctx.moves = None
        try:
            report.results.append((name, check(info, ctx)))
        except _Fail as f:
            report.failures.append(Failure(name, f.reason, _texts(info, f.moves)))
        except Exception as exc:
            moves = _texts(info, list(ctx.moves)) if ctx.moves is not None else None
            report.failures.append(Failure(name, f"raised {type(exc).__name__}: {exc}", moves))
            try:      # a Python game's pending error must not leak into the next check
                from games.python_game import raise_pending  # lazy: only Python games have one
                raise_pending()
            except Exception:
                pass
    return report
