"""``descent engine`` speaking GTP: scripted sessions through a subprocess's stdin/stdout for
havannah, outer-open gomoku, connect6 and reversi (and tic-tac-toe for a finished game), every
command a GUI needs, ids, and the error replies."""
from __future__ import annotations

import subprocess
import sys

import pytest

import games
from descent.protocols import notation as nt


def session(game: str, commands: list[str], *args) -> list[tuple[str, str, str]]:
    """Run a GTP session; the replies as (status '=' or '?', id, text)."""
    cmd = [sys.executable, "-m", "descent", "engine", game, "--net", "none", "--iterations", "20", *args]
    p = subprocess.run(cmd, input="".join(c + "\n" for c in commands), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stderr.strip() == "" or "Traceback" not in p.stderr, p.stderr[-2000:]
    blocks = p.stdout.split("\n\n")
    assert blocks[-1] == "", repr(p.stdout[-200:])          # every reply ends with an empty line
    out = []
    for b in blocks[:-1]:
        head = b[0]
        assert head in "=?", b
        rest = b[1:]
        ident = ""
        while rest and rest[0].isdigit():
            ident += rest[0]
            rest = rest[1:]
        out.append((head, ident, rest[1:] if rest.startswith(" ") else rest))
    return out


def test_vertices():
    assert nt.text_to_vertex("j10") == "K10" and nt.vertex_to_text("K10") == "j10"
    assert nt.vertex_to_text("a1") == "a1" and nt.vertex_to_text("PASS") == "pass"
    for bad in ("I5", "5", "A", "AA1", "A123"):
        with pytest.raises(Exception):
            nt.vertex_to_text(bad)
    info = games.load("havannah(base=4)")
    assert nt.colour_seat(info, "white") == 0 and nt.colour_seat(info, "B") == 1
    info = games.load("reversi(size=6)")
    assert nt.colour_seat(info, "black") == 0 and nt.seat_colour(info, 1) == "white"


def _replay(game, moves):
    s = games.new_state(game)
    for colour, vertex in moves:
        assert s.to_move == nt.colour_seat(s.game, colour)
        s.push(nt.vertex_to_text(vertex))
    return s


@pytest.mark.parametrize("game, first, second, size", [
    ("havannah(base=4)", ("white", "D4"), ("black", "C3"), 5),
    ("outer_open_gomoku(size=9)", ("black", "A1"), ("white", "E5"), 11),
    ("connect6(size=9)", ("black", "E5"), ("white", "D4"), 11),
    ("reversi(size=6)", ("black", "C5"), ("white", "B5"), 8),
])
def test_session(game, first, second, size):
    """Every command of a GUI's session, with ids, and the moves checked against our rules."""
    info = games.load(game)
    c1, c2 = nt.seat_colour(info, 0), nt.seat_colour(info, 1)
    cmds = ["protocol_version", "7 name", "version", "known_command genmove", "known_command frobnicate",
            "list_commands", "clear_board", "komi 0.5", "time_settings 600 0 0",
            f"play {first[0]} {first[1]}", f"11 genmove {c2}", "showboard", "undo", "undo",
            f"play {first[0]} {first[1]}", f"play {second[0]} {second[1]}", "time_left white 30 0",
            "time_left black 30 0", f"genmove {nt.seat_colour(info, 0)}",
            f"boardsize {size}", "clear_board", f"genmove {c1}", "final_score", "quit"]
    r = session(game, cmds)
    assert len(r) == len(cmds)
    by = dict(zip(cmds, r))
    assert by["protocol_version"] == ("=", "", "2")
    assert by["7 name"] == ("=", "7", "descent")
    assert by["known_command genmove"][2] == "true" and by["known_command frobnicate"][2] == "false"
    assert set(by["list_commands"][2].split("\n")) >= {"play", "genmove", "undo", "boardsize", "quit"}
    # the engine's reply to the first move is legal there
    st, ident, v = by[f"11 genmove {c2}"]
    assert (st, ident) == ("=", "11")
    _replay(game, [first, (c2, v)])
    assert info.spec.split("(")[0] in games.load(game).spec
    assert "to move" in by["showboard"][2]
    # two undos take back the genmove and the first move; replaying them is accepted
    assert [x[0] for x in r[12:16]] == ["="] * 4
    # connect6: the second player places two stones, so after one of them it is still white's turn
    assert r[18][0] == ("?" if game.startswith("connect6") else "=")
    # after boardsize the board is the bigger one: the move is on it
    st, _, v = by[f"genmove {c1}"]
    assert st == "="
    key = nt.BOARDSIZE_PARAM[info.name]
    big = games.load(nt.resized(info, size).spec)
    assert big.params[key] == size
    _replay(big.spec, [(c1, v)])
    assert by["final_score"][0] == "?"                     # the game is not over
    assert r[-1] == ("=", "", "")


def test_turn_order_and_errors():
    cmds = ["frobnicate", "5 frobnicate", "play", "play black", "play black Z99", "play purple A1",
            "play white A1", "genmove", "boardsize x", "boardsize 99", "komi abc", "undo",
            "time_settings 1 2", "time_left black x 0", "known_command", "final_score",
            "play black C5", "play black B4", "", "# a comment", "  \t ", "8 play white B5 # trailing comment",
            "quit"]
    r = session("reversi(size=6)", cmds)
    assert r[0] == ("?", "", "unknown command")
    assert r[1] == ("?", "5", "unknown command")
    assert [x[2] for x in r[2:4]] == ["syntax error", "syntax error"]
    assert r[4] == ("?", "", "illegal move")
    assert r[5] == ("?", "", "syntax error")
    assert r[6] == ("?", "", "not white's turn")
    assert r[7][2] == "syntax error"
    assert r[8][2] == "syntax error" and r[9][2] == "unacceptable size"
    assert r[10][2] == "syntax error" and r[11][2] == "cannot undo"
    assert r[12][2] == "syntax error" and r[13][2] == "syntax error" and r[14][2] == "syntax error"
    assert r[15][0] == "?"
    assert r[16] == ("=", "", "") and r[17] == ("?", "", "not black's turn")
    assert r[18] == ("=", "8", "")                        # blank lines and comments: no reply
    assert r[-1] == ("=", "", "")
    assert len(r) == len(cmds) - 3


def test_a_finished_game_is_scored():
    cmds = ["play black A1", "play white A2", "play black B1", "play white B2", "play black C1",
            "final_score", "genmove white", "play white C3", "quit"]
    r = session("tic_tac_toe", cmds)
    assert [x[0] for x in r[:5]] == ["="] * 5
    assert r[5] == ("=", "", "B+1")
    assert r[6] == ("?", "", "game is over") and r[7] == ("?", "", "game is over")


def _pass_position():
    """A reversi 6x6 position from a seeded random game where the side to move must pass."""
    import random
    rng = random.Random(0)
    for _ in range(500):
        s = games.new_state("reversi(size=6)")
        while not s.is_game_over():
            legal = s.legal_actions_list()
            if [s.move_to_str(a) for a in legal] == ["pass"]:
                return s
            s.push(rng.choice(legal))
    raise AssertionError("no forced pass found")


def test_reversi_forced_pass_is_played_for_the_other_colour():
    """When the side to move can only pass, a play or genmove for the other colour passes for it."""
    import io
    from descent.protocols.gtp import GtpServer
    from descent.protocols.player import Settings
    s = _pass_position()
    passer = nt.seat_colour(s.game, s.to_move)
    other = nt.seat_colour(s.game, 1 - s.to_move)
    out = io.StringIO()
    srv = GtpServer("reversi(size=6)", Settings(net=None, iterations=5), out=out)
    srv.player.state = s.copy()
    srv.run([f"genmove {other}\n", "undo\n", "undo\n", f"genmove {passer}\n", "quit\n"])
    replies = out.getvalue().split("\n\n")
    assert replies[0].startswith("= ") and replies[0][2:] != "pass"    # the pass, then its move
    assert replies[1] == replies[2] == "="                              # both undone
    assert replies[3] == "= pass"
    after = srv.player.state
    assert after.move_to_str(after.move_stack[-1]) == "pass"


def test_gtp_refuses_games_it_cannot_carry():
    p = subprocess.run([sys.executable, "-m", "descent", "engine", "chess", "--protocol", "gtp"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "GTP carries" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "descent", "engine", "reversi", "--level", "adaptive"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def _run(game, commands, *args):
    cmd = [sys.executable, "-m", "descent", "engine", game, "--iterations", "20", *args]
    return subprocess.run(cmd, input="".join(c + "\n" for c in commands), capture_output=True, text=True,
                          timeout=300)


def test_a_board_size_without_a_network_is_said_on_stderr_and_in_the_version():
    """havannah ships a network for base 4: `boardsize 5` drops it, and the engine says so (stderr,
    `version`) and still plays legal moves; back at base 4 the network plays again."""
    p = _run("havannah(base=4)", ["version", "boardsize 5", "version", "genmove white", "boardsize 4",
                                  "version", "quit"])
    assert p.returncode == 0 and "Traceback" not in p.stderr
    replies = [b[2:] for b in p.stdout.split("\n\n") if b.startswith("=")]
    assert "no network" not in replies[0] and "havannah(base=4), strongest" in replies[0]
    assert "havannah(base=5)" in replies[2] and "no network" in replies[2]
    assert replies[3] and "no network" not in replies[5]
    notes = [x for x in p.stderr.splitlines() if x.startswith("descent: ")]
    assert len(notes) == 1 and "no network for havannah(base=5)" in notes[0]
    assert "networks ship for havannah(base=4)" in notes[0]


def test_the_level_and_an_elo_are_chosen_by_documented_commands():
    from descent import strength
    p = _run("havannah(base=4)", ["known_command descent-level", "descent-level easy", "descent-level godlike",
                                  "descent-elo 400", "descent-elo 99999", "descent-elo x", "genmove white",
                                  "quit"])
    blocks = [b for b in p.stdout.split("\n\n") if b]
    assert blocks[0] == "= true" and blocks[1] == "= easy"
    assert blocks[2].startswith("? syntax error")
    pick = strength.level_for_elo("havannah(base=4)", 400)
    assert blocks[3].startswith("= Elo +400 asked") and f"rated {pick['elo']:+.0f}" in blocks[3]
    assert f"{abs(pick['elo'] - 400):.0f} {'below' if pick['elo'] < 400 else 'above'}" in blocks[3]
    assert blocks[4].startswith("? ") and "outside the rated range" in blocks[4]
    assert blocks[5].startswith("? syntax error") and blocks[6].startswith("= ")
    assert "Elo +400 asked" in p.stderr


def test_time_settings_and_time_left_give_full_strength_its_share_of_the_clock():
    """At full strength the clock of `time_settings` / `time_left` is spent (``thinking.allot``:
    main time over 30 moves, a byo-yomi period over its stones); a weaker level keeps its budget,
    capped by that share. What the search is started with is read, not timed; then a session under
    a clock answers legal moves."""
    import io
    from descent.protocols.gtp import GtpServer
    from descent.protocols.player import Settings
    from descent.protocols.thinking import Limits, allot
    srv = GtpServer("reversi(size=6)", Settings(net=None), out=io.StringIO(), err=io.StringIO())
    assert srv.limits(0) == srv.player.limits()                     # no clock: the level's budget
    srv.handle("time_settings 300 0 0")
    assert srv.limits(0) == Limits(seconds=allot(300))
    srv.handle("time_left black 60 0")
    assert srv.limits(0) == Limits(seconds=allot(60)) and srv.limits(1) == Limits(seconds=allot(300))
    srv.handle("time_left white 20 4")                               # in byo-yomi: 20 s for 4 stones
    assert srv.limits(1) == Limits(seconds=allot(20, 0, 4))
    srv.handle("time_settings 1 30 5")                               # main time nearly gone: a period's share
    assert srv.limits(0) == Limits(seconds=allot(30, 0, 5))
    srv.handle("time_settings 0 30 0")                               # GTP: no time limit
    assert srv.limits(0) == srv.player.limits()
    srv.handle("descent-level easy")
    srv.handle("time_settings 3 0 0")
    assert srv.limits(0) == Limits(seconds=allot(3))                 # under easy's 1 s: capped
    srv.handle("time_settings 600 0 0")
    assert srv.limits(0) == Limits(seconds=1.0)                      # not raised
    out = session("reversi(size=6)", ["time_settings 6 0 0", "genmove b", "time_left w 5 0", "genmove w",
                                      "quit"])
    assert [x[0] for x in out] == ["=", "=", "=", "=", "="]
    s = games.new_state("reversi(size=6)")
    for vertex in (out[1][2], out[3][2]):
        s.push(s.parse_move(nt.vertex_to_text(vertex)))
