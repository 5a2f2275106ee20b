"""``descent engine`` speaking UCI, driven by real clients: python-chess's engine module for a whole
chess game, Fairy-Stockfish for a breakthrough 6x6 match refereed only through the two engines'
protocols, and scripted sessions (stop during go infinite, unknown and malformed commands)."""
from __future__ import annotations

import math
import os
import queue
import re
import shutil
import subprocess
import sys
import threading

import pytest

import games
from descent.protocols import variants_ini
from descent.protocols.notation import Dialect
from descent.protocols.uci import centipawns, clock_seconds

FSF = shutil.which("fairy-stockfish") or ("/usr/games/fairy-stockfish"
                                          if os.path.exists("/usr/games/fairy-stockfish") else None)
needs_fsf = pytest.mark.skipif(FSF is None, reason="Fairy-Stockfish is not installed (Debian package "
                                                   "fairy-stockfish, /usr/games/fairy-stockfish)")
BT6 = "breakthrough(rows=6,cols=6)"


def engine_cmd(game, *args):
    return [sys.executable, "-m", "descent", "engine", game, *args]


class Peer:
    """A UCI process with a reader thread: every read has a deadline (a hang fails, never blocks)."""

    def __init__(self, cmd, wait=120):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, bufsize=1)
        self.q: queue.Queue = queue.Queue()
        self.wait = wait
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def until(self, pred):
        """Lines up to and including the first for which ``pred`` is true."""
        out = []
        while True:
            line = self.q.get(timeout=self.wait)
            assert line is not None, f"the engine exited; it said {out[-5:]} / {self.p.stderr.read()[-500:]}"
            out.append(line)
            if pred(line):
                return out

    def close(self):
        try:
            self.send("quit")
        except OSError:
            pass
        try:
            self.p.wait(timeout=30)
        finally:
            if self.p.poll() is None:
                self.p.kill()


def test_notation_round_trips():
    """Our moves and positions as the dialect writes them, and back, along random games."""
    import random
    rng = random.Random(3)
    for spec in ("chess", "xiangqi", BT6, "breakthrough", "breakthrough(rows=6,cols=5)"):
        info = games.load(spec)
        d = Dialect(info)
        s = info.new_state()
        while not s.is_game_over() and s.ply < 60:
            t = info.new_state()
            t.set_position(d.fen_to_position(d.position_to_fen(s)))
            assert t.position() == s.position()
            for a in s.legal_actions_list():
                assert d.parse_uci(s, d.move_to_uci(s, a)) == a
            s.push(rng.choice(s.legal_actions_list()))
    assert Dialect(games.load("xiangqi")).move_to_uci(games.new_state("xiangqi"),
                                                      games.new_state("xiangqi").parse_move("h2e2")) == "h3e3"
    assert Dialect(games.load(BT6)).startpos_fen() == "pppppp/pppppp/6/6/PPPPPP/PPPPPP w - - 0 1"
    assert Dialect(games.load(BT6)).variant == "breakthrough6x6"


def test_xiangqi_moves_are_fairy_stockfish_moves():
    """The dialect's xiangqi moves are exactly pyffish's legal moves (ranks 1-10)."""
    sf = pytest.importorskip("pyffish")
    s = games.new_state("xiangqi")
    d = Dialect(s.game)
    import random
    rng = random.Random(1)
    for _ in range(40):
        ours = {d.move_to_uci(s, a) for a in s.legal_actions_list()}
        assert ours == set(sf.legal_moves("xiangqi", s.position(), []))
        s.push(rng.choice(s.legal_actions_list()))


def test_clock_share():
    assert clock_seconds(60_000, 0, None) == pytest.approx(2.0 - 0.05)
    assert clock_seconds(60_000, 500, None) == pytest.approx(2.0 + 0.4 - 0.05)     # 60 s + 0.5 s
    assert clock_seconds(10_000, 1000, 5) == pytest.approx(2.0 + 0.8 - 0.05)
    assert clock_seconds(10_000, 0, 1) == pytest.approx(8.0 - 0.05)   # the last move of a period: 80%
    assert clock_seconds(1_000, 5_000, None) == pytest.approx(0.5 - 0.05)   # never more than half
    assert clock_seconds(100, 0, 1) <= 0.05
    assert clock_seconds(0, 0, None) > 0


def test_centipawns_are_a_monotonic_map_of_the_value():
    vals = [-1.0, -0.999, -0.5, -0.1, 0.0, 0.1, 0.5, 0.999, 1.0]
    cps = [centipawns(v) for v in vals]
    assert cps == sorted(cps) and centipawns(0.0) == 0 and cps[0] == -cps[-1]
    assert 290 <= centipawns(0.5) <= 310          # (1 + v) / 2 = 1 / (1 + exp(-0.00368 cp))
    assert abs(centipawns(1.0)) <= 5000 and centipawns(-0.5) == -centipawns(0.5)


# ---- a clock is spent at full strength, and only caps a weaker setting ------------------------------

def _server(game, **settings):
    import io
    from descent.protocols.player import Settings
    from descent.protocols.uci import UciServer
    return UciServer(game, Settings(**settings), out=io.StringIO())


def test_a_clock_gives_full_strength_the_time_the_allotment_function_gives():
    """The budget of `go wtime ...` at the default settings is the clock's share (the level's own
    budget dropped); a weaker level keeps its budget, capped by that share; nodes, movetime, depth
    and infinite as documented. What the search is started with is read from the thinker, not
    timed."""
    from descent.protocols.thinking import Limits
    srv = _server(BT6, net=None)
    s = games.new_state(BT6)
    clock = "wtime 60000 btime 30000 winc 500 binc 100".split()
    assert srv.limits(clock, s) == Limits(seconds=clock_seconds(60_000, 500, None))
    s.push("a2a3")                                                   # the second player's clock
    assert srv.limits(clock, s) == Limits(seconds=clock_seconds(30_000, 100, None))
    assert srv.limits(clock + ["movestogo", "3"], s) == Limits(seconds=clock_seconds(30_000, 100, 3))
    assert srv.limits("nodes 50".split(), s) == Limits(iterations=50)
    assert srv.limits("movetime 250".split(), s) == Limits(seconds=0.25)
    assert srv.limits("depth 3".split(), s) == Limits(depth=3)
    assert srv.limits(["infinite"], s) == Limits(infinite=True)
    assert srv.limits([], s) == srv.player.limits()                # no budget: the level's
    srv.handle("setoption name Level value easy")
    own = srv.player.limits()
    assert own.seconds == 1.0 and not own.iterations                 # easy without a network: 1 s a move
    assert srv.limits("wtime 9000 btime 9000".split(), s) == Limits(seconds=clock_seconds(9000, 0, None))
    assert srv.limits("wtime 90000 btime 90000".split(), s) == Limits(seconds=1.0)   # capped, not raised
    # and `go` hands that budget to the search
    started = []
    srv.handle("setoption name Level value strongest")
    srv.player.thinker.start = lambda state, limits, on_info, on_done: started.append(limits)
    srv.handle("position startpos")
    srv.handle("go wtime 12000 btime 12000 winc 200 binc 200")
    assert started == [Limits(seconds=clock_seconds(12_000, 200, None))]


INFO = re.compile(r"info depth (\d+) score (cp|mate) (-?\d+) nodes (\d+) nps (\d+) time (\d+)(?: pv( \S+)+)?$")


def test_info_lines_report_depth_score_nodes_and_a_legal_pv():
    """A raw UCI session (breakthrough 6x6, the shipped network): every `info depth` line has the
    documented fields in order, its pv is a legal line from the position, and the last one comes
    before `bestmove` with the nodes of the budget."""
    e = Peer(engine_cmd(BT6))
    try:
        e.send("uci")
        e.until(lambda x: x == "uciok")
        e.send("position startpos moves a2a3")
        e.send("go nodes 300")
        lines = e.until(lambda x: x.startswith("bestmove"))
        infos = [x for x in lines if x.startswith("info depth")]
        assert infos and lines[-2] == infos[-1]
        for line in infos:
            m = INFO.match(line)
            assert m, line
            s = games.new_state(BT6)
            s.push("a2a3")
            for mv in line.split(" pv ")[1].split():
                s.push(s.parse_move(mv))
        assert INFO.match(infos[-1]).group(4) == "300"
        assert infos[-1].split(" pv ")[1].split()[0] == lines[-1].split()[1]
    finally:
        e.close()


def test_python_chess_reads_a_score_under_a_clock_and_in_analysis():
    """python-chess, as a GUI: a move under a clock comes with a score, depth, nodes and a legal
    pv (alpha-beta without a network); `go infinite` (analysis) reports until stopped; a mate in one
    reads as mate 1."""
    import chess
    import chess.engine
    eng = chess.engine.SimpleEngine.popen_uci(engine_cmd("chess"), timeout=120)
    try:
        board = chess.Board()
        board.push_uci("e2e4")
        result = eng.play(board, chess.engine.Limit(white_clock=3, black_clock=3, white_inc=0, black_inc=0),
                          info=chess.engine.INFO_ALL)
        assert result.move in board.legal_moves
        assert result.info.get("score") is not None and result.info["depth"] >= 1 and result.info["nodes"] > 0
        assert result.info["pv"] and result.info["pv"][0] == result.move
        with eng.analysis(board) as analysis:
            for info in analysis:
                if info.get("score") is not None and info.get("depth", 0) >= 2:
                    break
        assert info["score"].relative.score() == 0 or info["score"].is_mate()
        mate = eng.play(chess.Board(MATE_IN_ONE), chess.engine.Limit(nodes=2000), info=chess.engine.INFO_ALL)
        assert mate.move == chess.Move.from_uci("d1d8") and mate.info["score"].white().mate() == 1
    finally:
        eng.quit()


# ---- options that agree: the command line, UCI_Variant, the no-network notice -------------------------

@pytest.mark.parametrize("args", [["--elo", "0", "--net", "early"], ["--elo", "0", "--time", "5"],
                                  ["--elo", "0", "--iterations", "50"], ["--elo", "0", "--level", "easy"]])
def test_contradictory_options_are_refused_in_one_line(args):
    p = subprocess.run(engine_cmd(BT6, *args), input="uci\nquit\n", capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("Error: --elo") and p.stderr.count("\n") == 1, p.stderr


def test_uci_variant_offers_what_it_accepts_and_says_at_each_switch_that_there_is_no_network():
    e = Peer(engine_cmd(BT6, "--iterations", "10"))
    try:
        e.send("uci")
        lines = e.until(lambda x: x == "uciok")
        opt = next(x for x in lines if x.startswith("option name UCI_Variant")).split()
        offered = [opt[i + 1] for i, w in enumerate(opt) if w == "var"]
        assert offered[0] == "breakthrough6x6" and opt[opt.index("default") + 1] == "breakthrough6x6"
        assert {"breakthrough", "breakthrough5x5", "breakthrough7x7", "breakthrough6x5"} <= set(offered)
        e.send("setoption name UCI_Variant value breakthrough9x9")      # not offered: refused
        e.send("isready")
        assert any("UCI_Variant 'breakthrough9x9'" in x for x in e.until(lambda x: x == "readyok"))
        for variant in ("breakthrough5x5", "breakthrough7x7", "breakthrough6x6"):
            e.send(f"setoption name UCI_Variant value {variant}")
            e.send("isready")
            said = e.until(lambda x: x == "readyok")
            notes = [x for x in said if x.startswith("info string no network")]
            if variant == "breakthrough6x6":
                assert not notes and not any("error" in x for x in said)
            else:
                r, c = variant[len("breakthrough"):].split("x")
                assert len(notes) == 1 and f"breakthrough(rows={r},cols={c})" in notes[0], said
                e.send("position startpos")                 # and again at the first go of the game
                e.send("go nodes 5")
                went = e.until(lambda x: x.startswith("bestmove"))
                assert sum(x.startswith("info string no network") for x in went) == 1, went
    finally:
        e.close()


def test_python_chess_drives_a_whole_game():
    """python-chess's engine module plays a whole game of chess, our engine on both sides (one
    process each), until the game ends by our rules (python-chess with draw claims: threefold and
    the 50-move rule are automatic here)."""
    chess = pytest.importorskip("chess")
    import chess.engine
    cmd = engine_cmd("chess", "--level", "strongest", "--net", "none")
    white = chess.engine.SimpleEngine.popen_uci(cmd, timeout=120)
    black = chess.engine.SimpleEngine.popen_uci(cmd, timeout=120)
    try:
        assert white.id["name"].startswith("descent")
        assert "Level" in white.options and "Iterations" in white.options
        board = chess.Board()
        ours = games.new_state("chess")
        while not board.is_game_over(claim_draw=True):
            eng = white if board.turn == chess.WHITE else black
            result = eng.play(board, chess.engine.Limit(nodes=2))
            assert result.move in board.legal_moves
            ours.push(result.move.uci())
            board.push(result.move)
            assert ours.position().split()[:4] == board.fen().split()[:4]
        assert ours.is_game_over()
        o = ours.outcome()
        if board.is_checkmate():
            assert o.winner == (0 if board.turn == chess.BLACK else 1)
        else:
            assert o.winner is None
    finally:
        white.quit()
        black.quit()


def test_stop_during_go_infinite_and_isready_while_thinking():
    e = Peer(engine_cmd(BT6, "--net", "none", "--level", "strongest"))
    try:
        e.send("uci")
        lines = e.until(lambda x: x == "uciok")
        assert any(x.startswith("option name UCI_Variant") and "breakthrough6x6" in x for x in lines)
        e.send("position startpos moves a2a3")
        e.send("go infinite")
        e.until(lambda x: x.startswith("info depth"))          # it is thinking
        e.send("isready")
        lines = e.until(lambda x: x == "readyok")
        assert not any(x.startswith("bestmove") for x in lines)   # answered while it thinks
        e.send("stop")
        best = e.until(lambda x: x.startswith("bestmove"))[-1].split()[1]
        s = games.new_state(BT6)
        s.push("a2a3")
        s.parse_move(best)                                          # legal for o
        # a bounded search after it: the position is kept, the answer is legal
        e.send("go nodes 20")
        lines = e.until(lambda x: x.startswith("bestmove"))
        s.parse_move(lines[-1].split()[1])
        infos = [x.split() for x in lines if x.startswith("info depth")]
        assert infos[-1][infos[-1].index("nodes") + 1] == "20"     # the chunks add up to the budget
    finally:
        e.close()
    assert e.p.returncode == 0


def test_unknown_and_malformed_commands_get_info_strings():
    e = Peer(engine_cmd(BT6, "--net", "none", "--iterations", "10"))
    try:
        e.send("uci")
        e.until(lambda x: x == "uciok")
        bad = ["xyzzy", "position", "position fen not-a-fen w", "position startpos moves a2a5",
               "go nodes abc", "setoption name Bogus value 3", "setoption name Level value superhuman",
               "setoption name UCI_Variant value chess", "setoption garbage", "go wibble"]
        for line in bad:
            e.send(line)
            e.send("isready")
            out = e.until(lambda x: x == "readyok")
            if line.startswith("go"):
                # a malformed go still searches (the level's budget) and answers a legal move
                out += e.until(lambda x: x.startswith("bestmove")) if not any(
                    x.startswith("bestmove") for x in out) else []
                assert any(x.startswith("info string error") for x in out), (line, out)
                best = [x for x in out if x.startswith("bestmove")][-1].split()[1]
                games.new_state(BT6).parse_move(best)
            else:
                assert any(x.startswith("info string") for x in out), (line, out)
        e.send("position startpos")
        e.send("go nodes 5")
        best = e.until(lambda x: x.startswith("bestmove"))[-1].split()[1]
        games.new_state(BT6).parse_move(best)
        # a finished game: no move
        e.send("position fen 6/1P4/6/6/6/pppppp w - - 0 9")
        e.send("go nodes 5")
        assert e.until(lambda x: x.startswith("bestmove"))[-1] == "bestmove (none)"
    finally:
        e.close()
    assert e.p.returncode == 0


@needs_fsf
def test_variants_ini_matches_our_rules_by_perft():
    """Fairy-Stockfish reads the shipped variants.ini; its perft equals ours for every size."""
    from games._state import perft
    sizes = {"breakthrough6x6": (6, 6), "breakthrough6x5": (6, 5), "breakthrough7x7": (7, 7),
             "breakthrough5x5": (5, 5)}
    e = Peer([FSF], wait=60)
    try:
        e.send("uci")
        e.until(lambda x: x == "uciok")
        e.send(f"setoption name VariantPath value {variants_ini()}")
        for name, (r, c) in sizes.items():
            e.send(f"setoption name UCI_Variant value {name}")
            e.send("position startpos")
            e.send("go perft 3")
            line = e.until(lambda x: x.startswith("Nodes searched"))[-1]
            assert int(line.split()[-1]) == perft(games.new_state(f"breakthrough(rows={r},cols={c})"), 3), name
    finally:
        e.close()


def _uci_move(engine: Peer, moves: list[str]) -> str:
    engine.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
    engine.send("go nodes 200")
    return engine.until(lambda x: x.startswith("bestmove"))[-1].split()[1]


@needs_fsf
def test_descent_against_fairy_stockfish_through_the_protocols():
    """A breakthrough 6x6 match, descent (the strongest level, shipped network) against
    Fairy-Stockfish, refereed only through the two engines' protocols: the referee holds the move
    list, checks each answer with our rules (parse_move) and asks Fairy-Stockfish itself whether the
    game is over at the end."""
    ours = Peer(engine_cmd(BT6, "--level", "strongest", "--iterations", "100"))
    fsf = Peer([FSF], wait=60)
    try:
        for e in (ours, fsf):
            e.send("uci")
            e.until(lambda x: x == "uciok")
        fsf.send(f"setoption name VariantPath value {variants_ini()}")
        for e in (ours, fsf):
            e.send("setoption name UCI_Variant value breakthrough6x6")
            e.send("isready")
            e.until(lambda x: x == "readyok")
        results = []
        for g in range(2):                       # each engine moves first once
            for e in (ours, fsf):
                e.send("ucinewgame")
                e.send("isready")
                e.until(lambda x: x == "readyok")
            seats = (ours, fsf) if g == 0 else (fsf, ours)
            s = games.new_state(BT6)
            moves: list[str] = []
            while not s.is_game_over():
                answer = _uci_move(seats[s.to_move], moves)
                s.push(s.parse_move(answer))         # the referee's legality check
                moves.append(answer)
            # Fairy-Stockfish agrees that the game is over: it has no move to play
            fsf.send("position startpos moves " + " ".join(moves))
            fsf.send("go depth 1")
            assert fsf.until(lambda x: x.startswith("bestmove"))[-1].split()[1] == "(none)"
            w = s.outcome().winner
            results.append("descent" if seats[w] is ours else "fairy-stockfish")
        assert len(results) == 2
    finally:
        ours.close()
        fsf.close()


# ---- the conventions: full strength by default, UCI_LimitStrength / UCI_Elo, no-network notice ------

MATE_IN_ONE = "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1"


def test_python_chess_finds_a_mate_in_one_at_the_default_settings():
    """A GUI adding the engine with no option gets full strength: Rd8# at a node budget (python-
    chess's `go nodes`), and is told in an info string that chess plays without a network."""
    import chess
    import chess.engine
    eng = chess.engine.SimpleEngine.popen_uci(engine_cmd("chess"), timeout=120)
    try:
        assert "no network" in eng.id["name"]
        assert eng.options["Level"].default == "strongest"
        board = chess.Board(MATE_IN_ONE)
        result = eng.play(board, chess.engine.Limit(nodes=2000), info=chess.engine.INFO_ALL)
        assert result.move == chess.Move.from_uci("d1d8")
        assert "no network for chess" in result.info.get("string", "")
        board.push(result.move)
        assert board.is_checkmate()
        # Level easy plays weaker: over seeded games it takes the mate less often than strongest
        eng.configure({"Level": "easy"})
        missed = 0
        for seed in range(6):
            eng.configure({"Seed": seed})
            if eng.play(chess.Board(MATE_IN_ONE), chess.engine.Limit(nodes=2000)).move != \
                    chess.Move.from_uci("d1d8"):
                missed += 1
        assert missed >= 1
    finally:
        eng.quit()


def test_uci_limit_strength_plays_the_rated_setting_nearest_to_uci_elo():
    """Where a rating table ships (breakthrough 6x6), UCI_LimitStrength and UCI_Elo are offered
    with the table's range; limiting strength plays the nearest rated setting and says how far it
    is from UCI_Elo; turning it off goes back to full strength."""
    from descent import strength
    table = strength.table(BT6)
    if table is None:
        pytest.skip(f"no rating table ships for {BT6}")
    lo, hi = table["settings"][0]["elo"], table["settings"][-1]["elo"]
    e = Peer(engine_cmd(BT6))
    try:
        e.send("uci")
        lines = e.until(lambda x: x == "uciok")
        assert any(x.startswith("option name UCI_LimitStrength type check default false") for x in lines)
        elo = next(x for x in lines if x.startswith("option name UCI_Elo"))
        assert f"min {math.ceil(lo)} max {math.floor(hi)}" in elo
        assert any("default strongest" in x for x in lines if x.startswith("option name Level"))
        assert not any("no network" in x for x in lines)
        e.send("setoption name UCI_Elo value 400")
        e.send("setoption name UCI_LimitStrength value true")
        e.send("isready")
        said = e.until(lambda x: x == "readyok")
        pick = strength.level_for_elo(BT6, 400)
        gap = abs(pick["elo"] - 400)
        note = " ".join(x for x in said if x.startswith("info string"))
        assert "Elo +400 asked" in note and f"rated {pick['elo']:+.0f}" in note and f"{gap:.0f} " in note
        e.send("setoption name UCI_Elo value 99999")
        e.send("isready")
        assert any("expected an integer in" in x for x in e.until(lambda x: x == "readyok"))
        e.send("position startpos")
        e.send("go nodes 40")
        assert e.until(lambda x: x.startswith("bestmove"))[-1].split()[1] != "(none)"
        e.send("setoption name UCI_LimitStrength value false")
        e.send("isready")
        assert not any("asked" in x for x in e.until(lambda x: x == "readyok"))
    finally:
        e.close()


def test_a_game_without_a_network_says_so_in_its_id_and_an_info_string():
    e = Peer(engine_cmd("xiangqi"))
    try:
        e.send("uci")
        lines = e.until(lambda x: x == "uciok")
        assert "no network" in next(x for x in lines if x.startswith("id name"))
        assert any(x.startswith("info string no network for xiangqi") for x in lines)
        assert not any(x.startswith("option name UCI_Elo") for x in lines)
        e.send("setoption name UCI_LimitStrength value true")
        e.send("isready")
        assert any("no rating table" in x for x in e.until(lambda x: x == "readyok"))
    finally:
        e.close()
