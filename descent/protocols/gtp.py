"""``descent engine GAME --protocol gtp``: the Go Text Protocol (version 2) on stdin/stdout.

Commands: ``protocol_version``, ``name``, ``version``, ``known_command``, ``list_commands``,
``boardsize`` (the game's size: ``size``, havannah's ``base``), ``clear_board``, ``komi`` (accepted,
no game here uses it), ``play``, ``genmove``, ``undo``, ``showboard``, ``time_settings``,
``time_left``, ``final_score``, ``quit``. Replies are ``=[id] result`` or ``?[id] error`` followed by
an empty line; comments (``#``) and control characters are removed as GTP says. An unknown command
gets ``? unknown command``, a malformed one ``? syntax error``, and neither stops the engine.

Vertices: a column letter from ``A`` skipping ``I`` and the row from the bottom (``notation``);
``pass`` (reversi, when it is the only move) and ``swap`` (havannah). A ``play`` or ``genmove`` for
the colour not to move is refused, except that a forced pass of the side to move is played first
(reversi). ``genmove`` searches for the level's budget, or with a clock (``time_settings`` /
``time_left``) spends its share of it at full strength (a weaker level's budget is only capped by
the clock: ``GtpServer.limits``); ``final_score`` gives the winner (``B+``/``W+``: reversi's disc
difference, 1 for the other games) or ``0`` for a draw.

Strength: full strength by default (the ``strongest`` level). Two extension commands choose
another, as ``descent play`` does: ``descent-level LEVEL`` (easy, medium, hard, balanced,
strongest) and ``descent-elo N`` (the measured setting nearest to Elo N, where the game has a
rating table for the network in use; its answer says what it picked and how far that is from N).
What a GUI should know goes to stderr, one line each, at the start and whenever the game or the
setting changes: no network for the game or size (``version`` says "no network" too; the engine
then searches without one), and the setting an Elo picked.
"""
from __future__ import annotations

import re
import sys
from importlib import metadata

from games.errors import GameError
from descent.protocols import notation as nt
from descent import strength
from descent.protocols.player import ENGINE_LEVELS, Player, Settings
from descent.protocols.thinking import Limits, allot

COMMANDS = ("protocol_version", "name", "version", "known_command", "list_commands", "boardsize",
            "clear_board", "komi", "play", "genmove", "undo", "showboard", "time_settings",
            "time_left", "final_score", "quit", "descent-level", "descent-elo")


class GtpFailure(Exception):
    """A command's failure: its message is the ``?`` reply."""


def _version() -> str:
    try:
        return metadata.version("descent")
    except Exception:
        return "0"


class GtpServer:
    def __init__(self, game: str, settings: Settings, out=None, err=None):
        self.out = out or sys.stdout
        self.player = Player(game, settings)
        nt.gtp_game(self.player.info)
        self.clock: dict = {}           # main time, byo-yomi time and stones (time_settings)
        self.left: dict = {}            # seat -> (seconds, stones) (time_left)
        self.err = err or sys.stderr
        self.tell()

    def tell(self) -> None:
        """The player's notes (no network, the Elo picked) on stderr, where GTP GUIs log them."""
        for line in self.player.notes():
            self.err.write(f"descent: {line}\n")
        self.err.flush()

    def reply(self, ok: bool, ident: str, text: str = "") -> None:
        sep = " " if text else ""
        self.out.write(f"{'=' if ok else '?'}{ident}{sep}{text}\n\n")
        self.out.flush()

    def run(self, lines=None) -> int:
        for raw in (lines if lines is not None else sys.stdin):
            if not self.handle(raw):
                break
        return 0

    @staticmethod
    def clean(raw: str) -> str:
        """GTP's preprocessing: control characters but HT and LF removed, comments cut, HT as space."""
        line = "".join(ch for ch in raw if ch in "\t\n" or (ord(ch) >= 32 and ord(ch) != 127))
        return line.split("#", 1)[0].replace("\t", " ").strip()

    def handle(self, raw: str) -> bool:
        line = self.clean(raw)
        if not line:
            return True
        words = line.split()
        ident = ""
        if words[0].isdigit():
            ident = words.pop(0)
            if not words:
                self.reply(False, ident, "syntax error")
                return True
        cmd, args = words[0].lower(), words[1:]
        if cmd not in COMMANDS:
            self.reply(False, ident, "unknown command")
            return True
        try:
            result = getattr(self, f"cmd_{cmd.replace('-', '_')}")(args)
        except GtpFailure as exc:
            self.reply(False, ident, str(exc))
            return True
        except GameError as exc:
            self.reply(False, ident, " ".join(str(exc).split()))
            return True
        self.reply(True, ident, result or "")
        return cmd != "quit"

    # ---- commands --------------------------------------------------------------------------------

    def cmd_protocol_version(self, args):
        return "2"

    def cmd_name(self, args):
        return "descent"

    def cmd_version(self, args):
        return f"{_version()} ({self.player.info.spec}, {self.player.label})"

    def cmd_known_command(self, args):
        if len(args) != 1:
            raise GtpFailure("syntax error")
        return "true" if args[0].lower() in COMMANDS else "false"

    def cmd_list_commands(self, args):
        return "\n".join(COMMANDS)

    def cmd_quit(self, args):
        return ""

    def cmd_boardsize(self, args):
        if len(args) != 1 or not args[0].isdigit():
            raise GtpFailure("syntax error")
        try:
            info = nt.resized(self.player.info, int(args[0]))
        except GameError:
            raise GtpFailure("unacceptable size") from None
        if info.spec != self.player.info.spec:
            self.player.load(info.spec)
            self.tell()
        else:
            self.player.new_game()
        return ""

    def cmd_descent_level(self, args):
        if len(args) != 1 or args[0].lower() not in ENGINE_LEVELS:
            raise GtpFailure(f"syntax error (expected descent-level {'|'.join(ENGINE_LEVELS)})")
        p = self.player
        p.settings.level, p.settings.elo = args[0].lower(), None
        p.load(p.info.spec)
        self.tell()
        return p.label

    def cmd_descent_elo(self, args):
        if len(args) != 1 or not re.fullmatch(r"[+-]?\d{1,6}(\.\d*)?", args[0]):
            raise GtpFailure("syntax error (expected descent-elo NUMBER)")
        p = self.player
        old = p.settings.elo
        p.settings.elo = float(args[0])
        try:
            p.load(p.info.spec)
        except GameError:
            p.settings.elo = old
            raise
        self.tell()
        return strength.pick_text(p.picked, p.settings.elo) if p.picked else p.label

    def cmd_clear_board(self, args):
        self.player.new_game()
        return ""

    def cmd_komi(self, args):
        if len(args) != 1 or not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", args[0]):
            raise GtpFailure("syntax error")
        return ""

    def _seat(self, word: str) -> int:
        try:
            return nt.colour_seat(self.player.info, word)
        except GameError:
            raise GtpFailure("syntax error") from None

    def _turn(self, seat: int) -> None:
        """Bring the board to ``seat``'s turn: the other side's forced pass is played; any other
        case is an error."""
        s = self.player.state
        if s.is_game_over():
            raise GtpFailure("game is over")
        if s.to_move == seat:
            return
        legal = [s.move_to_str(a) for a in s.legal_actions_list()]
        if legal == ["pass"]:
            s.push(s.parse_move("pass"))
            return
        raise GtpFailure(f"not {nt.seat_colour(self.player.info, seat)}'s turn")

    def cmd_play(self, args):
        if len(args) != 2:
            raise GtpFailure("syntax error")
        seat = self._seat(args[0])
        try:
            text = nt.vertex_to_text(args[1])
        except GameError:
            raise GtpFailure("syntax error") from None
        self._turn(seat)
        s = self.player.state
        try:
            action = s.parse_move(text)
        except GameError:
            raise GtpFailure("illegal move") from None
        s.push(action)
        return ""

    def cmd_genmove(self, args):
        if len(args) != 1:
            raise GtpFailure("syntax error")
        seat = self._seat(args[0])
        self._turn(seat)
        s = self.player.state
        action = self.player.thinker.think(s, self.limits(seat))
        text = s.move_to_str(action)
        s.push(action)
        return nt.text_to_vertex(text)

    def limits(self, seat: int) -> Limits:
        """The move's budget. With a clock (``time_settings``, ``time_left``): in byo-yomi the
        period's time over its stones, in main time an even share of it (``thinking.allot``: 30
        moves), or the byo-yomi share when that is more (a move that outlasts the main time goes
        on in the first period); at full strength (``Player.spends_clock``) the engine searches for
        that long, a weaker setting keeps its own budget and the clock only caps it."""
        own = self.player.limits()
        c = self.clock
        if c and c["byo"] > 0 and c["stones"] == 0:
            return own                   # GTP: byo-yomi time with 0 stones means no time limit
        if seat in self.left:
            secs, stones = self.left[seat]
        elif c:
            secs, stones = (c["main"], 0) if c["main"] > 0 else (c["byo"], c["stones"])
        else:
            return own
        if stones > 0:
            t = allot(secs, 0.0, stones)
        else:
            t = allot(secs)
            if c and c["byo"] > 0 and c["stones"] > 0:
                t = max(t, allot(c["byo"], 0.0, c["stones"]))
        if self.player.spends_clock:
            return Limits(seconds=t)
        return Limits(iterations=own.iterations, seconds=min(own.seconds, t) if own.seconds else t,
                      depth=own.depth)

    def cmd_undo(self, args):
        s = self.player.state
        if not s.move_stack:
            raise GtpFailure("cannot undo")
        s.pop()
        self.player.agent.reset()
        return ""

    def cmd_showboard(self, args):
        return "\n" + str(self.player.state)

    def cmd_time_settings(self, args):
        if len(args) != 3 or not all(a.isdigit() for a in args):
            raise GtpFailure("syntax error")
        self.clock = {"main": int(args[0]), "byo": int(args[1]), "stones": int(args[2])}
        self.left = {}
        return ""

    def cmd_time_left(self, args):
        if len(args) != 3 or not args[1].isdigit() or not args[2].isdigit():
            raise GtpFailure("syntax error")
        self.left[self._seat(args[0])] = (int(args[1]), int(args[2]))
        return ""

    def cmd_final_score(self, args):
        s = self.player.state
        if not s.is_game_over():
            raise GtpFailure("cannot score: the game is not over")
        o = s.outcome()
        assert o is not None                      # the game is over
        if o.winner is None:
            return "0"
        letter = nt.seat_colour(self.player.info, o.winner)[0].upper()
        margin = 1
        if self.player.info.name == "reversi":
            board = s.position().split()[0]
            margin = abs(board.count("x") - board.count("o"))
        return f"{letter}+{margin}"


def serve(game: str, settings: Settings) -> int:
    return GtpServer(game, settings).run()
