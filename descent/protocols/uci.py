"""``descent engine GAME --protocol uci``: the Universal Chess Interface on stdin/stdout.

Commands: ``uci``, ``debug``, ``isready``, ``setoption name N [value V]``, ``ucinewgame``,
``position startpos|fen F [moves M...]``, ``go`` (``wtime btime winc binc movestogo movetime nodes
depth infinite``; ``ponder``, ``mate`` and ``searchmoves`` are read and ignored), ``stop``,
``ponderhit``, ``quit``, and ``d`` (the board, as Stockfish's). The search runs in a thread, so
``isready`` and ``stop`` are answered while it thinks. An unknown or malformed command gets an
``info string`` line and is otherwise ignored, as UCI says.

Budgets: ``go nodes N`` searches N iterations (alpha-beta: N nodes), ``go movetime MS`` that long,
``go depth D`` D plies of alpha-beta, or D times the number of legal moves in iterations of a
best-first search (which has no depth), ``go infinite`` until ``stop``; ``go`` alone uses the level's
budget. A clock (``wtime btime winc binc movestogo``) is spent: at full strength (the ``strongest``
level, no ``UCI_LimitStrength``) the engine searches for the share of it that ``thinking.allot``
gives the move (an even share over ``movestogo`` moves, or 30, plus 80% of the increment, never more
than half of what is left, less 50 ms for the round trip); a weaker setting (a Gaussian level,
``balanced``, ``UCI_Elo``) keeps the budget its strength was measured at, and the clock only caps it.

Output while it thinks, at most every half second, and once more before ``bestmove``:
``info depth D score cp X|mate N nodes N nps N time MS pv ...``. ``depth`` is the alpha-beta depth
completed, or the length of a best-first search's principal line; ``nodes`` counts iterations
(alpha-beta: nodes); ``score cp`` is ``centipawns(value)`` of the search's value v in [-1, 1] (the
mover's expected result: 1 a win, -1 a loss), 2 atanh(v) / 0.00368, the inverse of the logistic curve
that takes centipawns to an expected score in chess, (1 + v) / 2 = 1 / (1 + exp(-0.00368 cp)), so
v = 0.5 reads as about +300; a forced result the search has proven reads ``score mate N`` (N moves,
negative when the engine is the one mated).

Strength, as UCI engines have it: full strength by default (the ``strongest`` level); where the
game has a rating table for the network in use (``descent.strength``), ``UCI_LimitStrength`` and
``UCI_Elo`` (its range the table's) play the measured setting nearest to that rating. ``Level``
(easy, medium, hard, balanced, strongest) picks one of ``descent play``'s levels by name.
Other options: ``Iterations`` (0: the level's budget), ``Seed``, and for Fairy-Stockfish's dialect
``UCI_Variant`` (xiangqi; breakthrough: ``breakthrough`` for 8x8 and the sizes of the shipped
``variants.ini``, ``breakthrough6x6``...; those it offers are those it accepts).

What a GUI should know is said in ``info string`` lines, after ``uci``, when ``UCI_Variant`` changes
the game, and at the first ``go`` of each game: no network for the game or size (``id name`` says
"no network" too; the engine then searches without one), and the setting ``UCI_Elo`` picked with
its distance from the rating asked.
"""
from __future__ import annotations

import math
import re
import sys
import threading
from importlib import metadata

from games.errors import GameError
from descent import strength
from descent.protocols import variants_ini
from descent.protocols.notation import Dialect
from descent.protocols.player import ENGINE_LEVELS, Player, Settings
from descent.protocols.thinking import Limits, allot

CP_SCALE = 0.00368208       # the logistic slope from centipawns to an expected score (chess)
CP_LIMIT = 5000             # the largest score cp reported for an estimate (a proof is a mate score)


def clock_seconds(remaining_ms: float, inc_ms: float, movestogo: int | None) -> float:
    """The seconds a UCI clock allots to one move (``thinking.allot`` of milliseconds)."""
    return allot(remaining_ms / 1000.0, inc_ms / 1000.0, movestogo)


def centipawns(value: float) -> int:
    """A search value v in [-1, 1] (the mover's expected result) as UCI's ``score cp``:
    2 atanh(v) / 0.00368, the inverse of (1 + v) / 2 = 1 / (1 + exp(-0.00368 cp)); monotonic, 0 at 0,
    about +300 at 0.5, within +-5000."""
    v = max(-1.0, min(1.0, float(value)))
    if abs(v) >= 1.0:
        return CP_LIMIT if v > 0 else -CP_LIMIT
    cp = 2.0 * math.atanh(v) / CP_SCALE
    return int(round(max(-CP_LIMIT, min(CP_LIMIT, cp))))


def breakthrough_variants() -> list[str]:
    """The breakthrough variants Fairy-Stockfish knows: its own (8x8) and those of the shipped
    ``variants.ini``."""
    with open(variants_ini(), encoding="utf-8") as f:
        return ["breakthrough"] + re.findall(r"^\[(breakthrough\d+x\d+):breakthrough\]", f.read(), re.M)


def _version() -> str:
    try:
        return metadata.version("descent")
    except Exception:
        return "0"


class UciServer:
    def __init__(self, game: str, settings: Settings, out=None):
        self.out = out or sys.stdout
        self.lock = threading.Lock()
        self.player = Player(game, settings)
        self.dialect = Dialect(self.player.info)
        self.moves_given: list[str] = []
        self.extra_iterations: int | None = None
        self.limit_strength = False
        self.uci_elo: float | None = None        # UCI_Elo as set (the table's lowest by default)
        self.told = False                        # the notes were said in this game

    # ---- output ----------------------------------------------------------------------------------

    def send(self, line: str) -> None:
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()

    def note(self, text: str) -> None:
        self.send("info string " + " ".join(str(text).split()))

    # ---- the loop --------------------------------------------------------------------------------

    def run(self, lines=None) -> int:
        for raw in (lines if lines is not None else sys.stdin):
            if not self.handle(raw):
                break
        self.player.thinker.stop()
        return 0

    def handle(self, raw: str) -> bool:
        """One command line; False on ``quit``."""
        words = raw.strip().split()
        if not words:
            return True
        cmd, args = words[0], words[1:]
        if cmd == "quit":
            self.player.thinker.stop()
            return False
        if cmd == "isready":
            self.send("readyok")
            return True
        if cmd == "stop":
            self.player.thinker.stop()
            return True
        if cmd in ("ponderhit", "debug", "register"):
            return True
        handler = getattr(self, f"cmd_{cmd}", None) if cmd.isidentifier() else None
        if handler is None:
            self.note(f"unknown command: {raw.strip()[:200]}")
            return True
        if cmd != "uci":
            self._finish_search()
        try:
            handler(args)
        except (GameError, ValueError) as exc:
            self.note(f"error: {exc}")
        return True

    def _finish_search(self) -> None:
        """Before a command that changes the board: an infinite search is stopped, a bounded one
        waited for."""
        t = self.player.thinker
        if t.busy and t.limits is not None and t.limits.infinite:
            t.stop()
        t.wait()

    # ---- commands --------------------------------------------------------------------------------

    def cmd_uci(self, args) -> None:
        p = self.player
        self.send(f"id name descent {_version()} ({p.info.spec}, {p.label})")
        self.send("id author the descent authors")
        if self.dialect.variant:
            self.send(f"option name UCI_Variant type combo default {self.dialect.variant} "
                      + " ".join(f"var {v}" for v in self.variants()))
        self.send(f"option name Level type combo default {p.settings.level} "
                  + " ".join(f"var {x}" for x in ENGINE_LEVELS))
        span = self._elo_span()
        if span is not None:
            self.send("option name UCI_LimitStrength type check default false")
            self.send(f"option name UCI_Elo type spin default {span[0]} min {span[0]} max {span[1]}")
        self.send("option name Iterations type spin default 0 min 0 max 100000000")
        self.send(f"option name Seed type spin default {p.settings.seed} min 0 max 2147483647")
        for line in p.notes():
            self.note(line)
        self.send("uciok")

    def _elo_span(self) -> tuple[int, int] | None:
        """UCI_Elo's range: the rated settings' lowest and highest Elo (whole numbers inside the
        table's range), or None where the game has no rating table for the network in use."""
        span = strength.elo_span(self.player.info.spec, self.player.network)
        return None if span is None else (math.ceil(span[0]), math.floor(span[1]))

    def _apply_strength(self) -> None:
        """UCI_LimitStrength and UCI_Elo as set: the setting nearest to UCI_Elo, or back to the level."""
        p = self.player
        span = self._elo_span()
        if self.limit_strength and span is None:
            self.limit_strength = False
            raise GameError(f"UCI_LimitStrength: {p.info.spec} has no rating table for this network")
        old = p.settings.elo
        if not self.limit_strength or span is None:
            p.settings.elo = None
        else:
            p.settings.elo = self.uci_elo if self.uci_elo is not None else span[0]
        try:
            p.load(p.info.spec)
        except GameError:
            p.settings.elo = old                # the setting in play stays, and so does its label
            self.limit_strength = old is not None
            raise
        for line in p.notes():
            self.note(line)
        self.told = True

    def cmd_d(self, args) -> None:
        for line in str(self.player.state).splitlines():
            self.send(line)
        self.send(f"Fen: {self.dialect.position_to_fen(self.player.state)}")

    def cmd_setoption(self, args) -> None:
        text = " ".join(args)
        if not text.startswith("name "):
            raise GameError(f"setoption {text!r}: expected 'name NAME [value VALUE]'")
        name, _, value = text[5:].partition(" value ")
        name, value = name.strip(), value.strip()
        key = name.lower()
        p = self.player
        if key == "uci_variant":
            self._variant(value)
        elif key == "level":
            if value not in ENGINE_LEVELS:
                raise GameError(f"Level {value!r}: expected one of {', '.join(ENGINE_LEVELS)}")
            p.settings.level = value
            p.settings.elo = None               # a level chosen by name replaces --elo
            self.limit_strength = False
            p.load(p.info.spec)
        elif key == "uci_limitstrength":
            if value.lower() not in ("true", "false"):
                raise GameError(f"UCI_LimitStrength {value!r}: expected true or false")
            self.limit_strength = value.lower() == "true"
            self._apply_strength()
        elif key == "uci_elo":
            span = self._elo_span()
            if span is None:
                raise GameError(f"UCI_Elo: {p.info.spec} has no rating table for this network")
            if not re.fullmatch(r"[+-]?\d{1,6}", value) or not span[0] <= int(value) <= span[1]:
                raise GameError(f"UCI_Elo {value!r}: expected an integer in [{span[0]}, {span[1]}]")
            self.uci_elo = int(value)
            if self.limit_strength:
                self._apply_strength()
        elif key == "seed":
            if not value.isdigit() or int(value) > 2 ** 31 - 1:
                raise GameError(f"Seed {value!r}: expected an integer in [0, 2147483647]")
            p.settings.seed = int(value)
            p.agent.reset(int(value))
        elif key == "iterations":
            if not value.isdigit() or int(value) > 10 ** 8:
                raise GameError(f"Iterations {value!r}: expected an integer in [0, 100000000]")
            self.extra_iterations = int(value) or None
        else:
            self.note(f"unknown option {name!r} (ignored)")

    def variants(self) -> list[str]:
        """The ``UCI_Variant`` values offered, and so accepted: the game's own, and for breakthrough
        every size Fairy-Stockfish can be given (``breakthrough_variants``)."""
        own = [self.dialect.variant] if self.dialect.variant else []
        if self.player.info.name == "breakthrough":
            return own + [v for v in breakthrough_variants() if v not in own]
        return own

    def _variant(self, value: str) -> None:
        p = self.player
        if value == self.dialect.variant or (value == "chess" and p.info.name == "chess"):
            return
        m = re.fullmatch(r"breakthrough(?:(\d+)x(\d+))?", value)
        if p.info.name == "breakthrough" and m and value in self.variants():
            rows, cols = (int(m.group(1)), int(m.group(2))) if m.group(1) else (8, 8)
            p.load(f"breakthrough(rows={rows},cols={cols})")
            self.dialect = Dialect(p.info)
            for line in p.notes():              # another game: what the GUI should know, now
                self.note(line)
            self.told = False                   # and again at its first go
            return
        offered = ", ".join(self.variants()) or "none (this game has no UCI_Variant)"
        raise GameError(f"UCI_Variant {value!r}: this engine plays {offered}")

    def cmd_ucinewgame(self, args) -> None:
        self.player.new_game()
        self.told = False

    def cmd_position(self, args) -> None:
        p = self.player
        if not args:
            raise GameError("position: expected startpos or fen FEN, then moves ...")
        if "moves" in args:
            i = args.index("moves")
            head, moves = args[:i], args[i + 1:]
        else:
            head, moves = args, []
        state = p.info.new_state()
        if head[0] == "startpos" and len(head) == 1:
            pass
        elif head[0] == "fen" and len(head) > 1:
            state.set_position(self.dialect.fen_to_position(" ".join(head[1:])))
        else:
            raise GameError(f"position {' '.join(args)[:80]!r}: expected startpos or fen FEN")
        for m in moves:
            try:
                state.push(self.dialect.parse_uci(state, m))
            except GameError as exc:
                raise GameError(f"position: move {m!r}: {exc}") from None
        p.state = state

    def cmd_go(self, args) -> None:
        p = self.player
        state = p.state
        if state.is_game_over():
            outcome = state.outcome()
            assert outcome is not None          # the game is over
            self.note(f"the game is over ({outcome.termination})")
            self.send("bestmove (none)")
            return
        if not self.told:
            self.told = True
            for line in p.notes():
                self.note(line)
        try:
            limits = self.limits(args, state)
        except GameError as exc:
            self.note(f"error: {exc}; searching with the level's budget")
            limits = self._own()
        p.thinker.start(state, limits, lambda info: self._info_line(info, state),
                        lambda a, e: self._bestmove(state, a, e))

    def _own(self) -> Limits:
        lim = self.player.limits()
        if self.extra_iterations:
            lim = Limits(iterations=self.extra_iterations)
        return lim

    def limits(self, args, state) -> Limits:
        """The budget of a ``go`` command (``GameError`` for a malformed one)."""
        vals: dict = {}
        flags = set()
        i = 0
        numeric = ("wtime", "btime", "winc", "binc", "movestogo", "movetime", "nodes", "depth", "mate")
        while i < len(args):
            w = args[i]
            if w in ("infinite", "ponder"):
                flags.add(w)
                i += 1
            elif w == "searchmoves":
                i += 1
                while i < len(args) and args[i] not in numeric + ("infinite", "ponder"):
                    i += 1
            elif w in numeric:
                if i + 1 >= len(args):
                    raise GameError(f"go: {w} needs a number")
                try:
                    vals[w] = int(args[i + 1])
                except ValueError:
                    raise GameError(f"go: {w} {args[i + 1]!r} is not an integer") from None
                i += 2
            else:
                raise GameError(f"go: unknown token {w!r}")
        if "infinite" in flags:
            return Limits(infinite=True)
        if "nodes" in vals or "movetime" in vals or "depth" in vals:
            return Limits(iterations=max(1, vals["nodes"]) if "nodes" in vals else None,
                          seconds=max(0.001, vals["movetime"] / 1000.0) if "movetime" in vals else None,
                          depth=max(1, vals["depth"]) if "depth" in vals else None)
        own = self._own()
        side = "w" if state.to_move == 0 else "b"
        if f"{side}time" in vals:
            t = clock_seconds(vals[f"{side}time"], vals.get(f"{side}inc", 0), vals.get("movestogo"))
            if self.player.spends_clock:
                return Limits(seconds=t)        # full strength: the clock's share, all of it
            return Limits(iterations=own.iterations, seconds=min(own.seconds, t) if own.seconds else t,
                          depth=own.depth)
        return own

    def _info_line(self, info: dict, state) -> None:
        ms = int(info["seconds"] * 1000)
        nps = int(info["iterations"] / max(info["seconds"], 1e-3))
        if info.get("proven") in (1, -1) and info.get("proof_plies"):
            moves = (info["proof_plies"] + 1) // 2
            score = f"mate {moves if info['proven'] > 0 else -moves}"
        else:
            score = f"cp {centipawns(info['value'])}"
        pv = []
        s = state.copy()
        for a in info["pv"]:
            pv.append(self.dialect.move_to_uci(s, a))
            s.push(a)
        line = (f"info depth {max(1, info.get('depth') or len(pv))} score {score} nodes {info['iterations']} "
                f"nps {nps} time {ms}")
        self.send(line + (f" pv {' '.join(pv)}" if pv else ""))

    def _bestmove(self, state, action, error) -> None:
        if error is not None:
            self.note(f"error: the search failed: {error}")
            self.send("bestmove (none)")
            return
        self.send(f"bestmove {self.dialect.move_to_uci(state, action)}")


def serve(game: str, settings: Settings) -> int:
    return UciServer(game, settings).run()
