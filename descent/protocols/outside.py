"""Outside UCI and GTP engines as agents (``uci:COMMAND,...`` / ``gtp:COMMAND,...``, notation in
``search_ext.engine_spec``).

Each agent runs its engine as one subprocess, started when the agent is built and reused across
games (``ucinewgame`` / ``clear_board`` on ``reset``); ``close()`` (also at exit) sends ``quit`` and
waits. Before each move the engine is given the game so far (UCI: ``position startpos moves ...``;
GTP: the moves it has not seen, or ``clear_board`` and all of them), then asked for a move with the
spec's budget. Its answer is checked against the rules: an engine that is missing, exits, says
nothing within the budget plus ``timeout``, or answers a move that is malformed or illegal raises
``EngineError`` (one line naming the engine), and ``descent.match`` records that game as aborted,
never scored. After such an error the next ``reset`` starts the engine afresh.

Fairy-Stockfish plays xiangqi and breakthrough through ``UCI_Variant``; for breakthrough sizes other
than 8x8 the agent points its ``VariantPath`` at the shipped ``variants.ini`` unless the spec sets
one.
"""
from __future__ import annotations

import atexit
import os
import queue
import subprocess
import threading
import time
import weakref

import games
from games.errors import GameError
from search_ext.agent_base import Agent
from search_ext.engine_spec import parse_engine_spec
from descent.protocols import notation as nt, variants_ini

_OPEN: weakref.WeakSet = weakref.WeakSet()


class EngineError(GameError):
    """An outside engine that is missing, exits, does not answer in time, or answers a malformed or
    illegal move."""


def make_engine_agent(spec: str, game) -> EngineAgent:
    info = games.load(game)
    kind, opts = parse_engine_spec(spec)
    cls = UciAgent if kind == "uci" else GtpAgent
    return cls(info, spec, opts)


def engine_name(command: list[str]) -> str:
    """How errors name an engine: its program's file name, and the script's for an interpreter."""
    words = [os.path.basename(w) for w in command[:2]]
    if len(words) == 2 and words[0].startswith(("python", "perl", "ruby", "node", "java")):
        return " ".join(words)
    return words[0]


class _Process:
    """A subprocess speaking a line protocol: lines go in, lines come out through a queue (a
    reader thread), so that every wait has a deadline."""

    def __init__(self, command: list[str], name: str):
        self.name = name
        exe = command[0]
        if os.sep in exe and not os.path.exists(exe):
            raise EngineError(f"engine {exe}: not found")
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True, bufsize=1)
        except FileNotFoundError:
            raise EngineError(f"engine {exe}: not found") from None
        except PermissionError:
            raise EngineError(f"engine {exe}: not executable") from None
        except OSError as exc:
            raise EngineError(f"engine {name}: cannot start {exe} ({exc.strerror or exc})") from None
        assert self.proc.stdin is not None and self.proc.stdout is not None     # both are pipes
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.lines: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        try:
            for line in self.stdout:
                self.lines.put(line.rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        self.lines.put(None)

    def send(self, line: str) -> None:
        try:
            self.stdin.write(line + "\n")
            self.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise EngineError(f"engine {self.name} exited{self._code()} (writing {line[:60]!r})") from None

    def _code(self) -> str:
        try:
            code = self.proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return ""
        return f" with status {code}"

    def readline(self, deadline: float, waiting_for: str) -> str:
        left = deadline - time.monotonic()
        try:
            line = self.lines.get(timeout=max(0.0, left))
        except queue.Empty:
            raise EngineError(f"engine {self.name}: no answer within {max(0.0, left):.1f} s "
                              f"(waiting for {waiting_for})") from None
        if line is None:
            self.lines.put(None)
            raise EngineError(f"engine {self.name} exited{self._code()} (waiting for {waiting_for})")
        return line

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, goodbye: str | None) -> None:
        if self.proc.poll() is None:
            try:
                if goodbye:
                    self.stdin.write(goodbye + "\n")
                    self.stdin.flush()
                self.stdin.close()
            except (OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.stdin, self.stdout):
            try:
                f.close()
            except (OSError, ValueError):
                pass


class EngineAgent(Agent):
    """Base of the outside engines: the process, its lifetime and the move check."""

    kind = ""

    def __init__(self, game, spec, opts):
        super().__init__(game, spec, opts)
        self.name = engine_name(opts["command"])
        self.proc: _Process | None = None
        self.start()
        _OPEN.add(self)

    def start(self) -> None:
        self.close()
        self.proc = _Process(self.opts["command"], self.name)
        try:
            self.handshake()
        except EngineError:
            self.close()
            raise

    def close(self) -> None:
        if self.proc is not None:
            proc, self.proc = self.proc, None
            proc.close(self.goodbye)

    goodbye = "quit"

    def _running(self) -> _Process:
        """The engine's process (``EngineError`` once it was closed after a failure)."""
        if self.proc is None:
            raise EngineError(f"engine {self.name} is not running (it failed earlier in this game)")
        return self.proc

    # the protocol of each kind of engine
    def handshake(self) -> None:
        raise NotImplementedError

    def new_game(self) -> None:
        raise NotImplementedError

    def ask(self, state) -> int:
        raise NotImplementedError

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def reset(self, seed=None):
        super().reset(seed)
        proc = getattr(self, "proc", None)
        if proc is None or not proc.alive():
            self.start()
        else:
            self.new_game()

    def _deadline(self, extra: float = 0.0) -> float:
        return time.monotonic() + self.opts["timeout"] + extra

    def _move_budget(self) -> float:
        return self.opts.get("movetime") or 0.0

    def check_move(self, state, answer: str, text: str) -> int:
        try:
            return state.parse_move(text)
        except GameError:
            pos = state.position()
            self.close()
            raise EngineError(f"engine {self.name} answered an illegal move {answer!r} at ply {state.ply} "
                              f"of {state.game.spec} ({pos})") from None

    def analyse(self, state) -> list:
        raise GameError(f"agent {self.spec!r}: an outside engine gives no analysis")

    def choose(self, state) -> int:
        self._check_not_over(state)
        if self.proc is None or not self.proc.alive():
            raise EngineError(f"engine {self.name} is not running (it failed earlier in this game)")
        try:
            return self.ask(state)
        except EngineError:
            self.close()
            raise


class UciAgent(EngineAgent):
    kind = "uci"

    def handshake(self) -> None:
        p = self._running()
        self.dialect = nt.Dialect(self.game)
        p.send("uci")
        variants, has_path = set(), False
        while True:
            line = p.readline(self._deadline(), "uciok")
            if line.strip() == "uciok":
                break
            words = line.split()
            if words[:3] == ["option", "name", "UCI_Variant"]:
                variants = {words[i + 1] for i, w in enumerate(words[:-1]) if w == "var"}
            elif words[:3] == ["option", "name", "VariantPath"]:
                has_path = True
        given = {k for k, _ in self.opts["options"]}
        options = list(self.opts["options"])
        v = self.dialect.variant
        if v is not None:
            if v not in variants and not has_path and "UCI_Variant" not in given:
                raise EngineError(f"engine {self.name} does not play {self.game.spec} (its UCI_Variant "
                                  f"option has no {v!r})")
            if v not in variants and has_path and "VariantPath" not in given:
                options.insert(0, ("VariantPath", variants_ini()))
            if "UCI_Variant" not in given:
                options.append(("UCI_Variant", v))
        elif self.game.name != "chess":
            raise EngineError(f"engine {self.name}: {self.game.spec} has no UCI dialect that outside "
                              f"engines read (UCI carries chess, xiangqi and breakthrough)")
        for k, val in options:
            p.send(f"setoption name {k} value {val}")
        self.new_game()

    def new_game(self) -> None:
        self._running().send("ucinewgame")
        self.ready()

    def ready(self) -> None:
        p = self._running()
        p.send("isready")
        while p.readline(self._deadline(), "readyok").strip() != "readyok":
            pass

    def ask(self, state) -> int:
        p = self._running()
        start = self.game.new_state()
        moves = []
        for a in state.move_stack:
            moves.append(self.dialect.move_to_uci(start, a))
            start.push(a)
        if start.position() == state.position():
            p.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
        else:
            p.send(f"position fen {self.dialect.position_to_fen(state)}")
        go = []
        if self.opts.get("nodes"):
            go.append(f"nodes {self.opts['nodes']}")
        if self.opts.get("depth"):
            go.append(f"depth {self.opts['depth']}")
        if self.opts.get("movetime"):
            go.append(f"movetime {max(1, int(round(self.opts['movetime'] * 1000)))}")
        p.send("go " + " ".join(go))
        deadline = self._deadline(self._move_budget())
        while True:
            line = p.readline(deadline, "bestmove")
            words = line.split()
            if words and words[0] == "bestmove":
                break
        if len(words) < 2 or words[1] in ("(none)", "0000"):
            pos = state.position()
            raise EngineError(f"engine {self.name} answered no move ({line.strip()!r}) at ply {state.ply} "
                              f"of {state.game.spec} ({pos})")
        try:
            text = self.dialect.uci_to_text(words[1])
        except GameError:
            text = words[1] + " "            # malformed: reported as an illegal answer
        return self.check_move(state, words[1], text)


class GtpAgent(EngineAgent):
    kind = "gtp"

    def command(self, line: str, deadline: float | None = None) -> str:
        """Send one GTP command; its answer (``EngineError`` on ``?``)."""
        p = self._running()
        p.send(line)
        deadline = deadline or self._deadline()
        while True:
            first = p.readline(deadline, f"the answer to {line.split()[0]}")
            if first.strip():
                break
        body = [first]
        while True:
            nxt = p.readline(deadline, f"the end of the answer to {line.split()[0]}")
            if not nxt.strip():
                break
            body.append(nxt)
        head = body[0].lstrip()
        text = "\n".join([head[1:].lstrip()] + body[1:]).strip()
        if head.startswith("?"):
            raise EngineError(f"engine {self.name} refused {line!r}: {text}")
        if not head.startswith("="):
            raise EngineError(f"engine {self.name} answered {body[0]!r} to {line!r} (not GTP)")
        return text

    def handshake(self) -> None:
        nt.gtp_game(self.game)
        self.command("protocol_version")
        size = None
        if self.game.name in nt.BOARDSIZE_PARAM:
            size = self.game.params[nt.BOARDSIZE_PARAM[self.game.name]]
        elif self.game.name == "tic_tac_toe":
            size = 3
        self.command(f"boardsize {size}")
        self.new_game()

    def new_game(self) -> None:
        self.command("clear_board")
        t = self.opts.get("movetime") or 1.0
        self.command(f"time_settings 0 {max(1, int(round(t)))} 1")
        self.sent: list[int] = []

    def ask(self, state) -> int:
        history = list(state.move_stack)
        start = self.game.new_state()
        for a in history:
            start.push(a)
        if start.position() != state.position():
            raise EngineError(f"engine {self.name}: a GTP engine is given the game from its start; "
                              f"this position has no history")
        if history[:len(self.sent)] != self.sent:
            self.command("clear_board")
            self.sent = []
        s = self.game.new_state()
        for a in history[:len(self.sent)]:
            s.push(a)
        for a in history[len(self.sent):]:
            colour = nt.seat_colour(self.game, s.to_move)
            self.command(f"play {colour} {nt.text_to_vertex(s.move_to_str(a))}")
            s.push(a)
            self.sent.append(a)
        colour = nt.seat_colour(self.game, state.to_move)
        answer = self.command(f"genmove {colour}", self._deadline(self._move_budget()))
        word = answer.split()[0] if answer.split() else answer
        if word.lower() == "resign":
            raise EngineError(f"engine {self.name} resigned at ply {state.ply} (a resignation is not a "
                              f"move of {state.game.spec})")
        try:
            text = nt.vertex_to_text(word)
        except GameError:
            text = answer + " "              # malformed: reported as an illegal answer
        action = self.check_move(state, answer, text)
        self.sent.append(action)
        return action


@atexit.register
def _close_all() -> None:
    for agent in list(_OPEN):
        try:
            agent.close()
        except Exception:
            pass
