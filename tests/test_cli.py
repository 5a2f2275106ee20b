import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from descent.cli import cli


def run(*args):
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_games_lists_every_game():
    code, out = run("games")
    assert code == 0
    for name in ("tic_tac_toe", "reversi", "breakthrough", "outer_open_gomoku", "connect6"):
        assert name in out
    code, out = run("games", "--json", "reversi(size=6)")
    assert code == 0 and '"num_actions": 37' in out


def test_perft_and_divide():
    code, out = run("perft", "tic_tac_toe", "9")
    assert code == 0 and "perft(9) = 127872" in out
    code, out = run("perft", "tic_tac_toe", "2", "--divide")
    assert code == 0 and "b2: 8" in out and "perft(2) = 72" in out
    code, out = run("perft", "tic_tac_toe", "1", "--position", "xo1/3/3 x")
    assert code == 0 and "perft(1) = 7" in out


def test_show():
    code, out = run("show", "tic_tac_toe", "--moves", "b2 a1")
    assert code == 0 and "x to move; 7 legal" in out and "position: 3/1x1/o2 x" in out
    code, out = run("show", "tic_tac_toe", "--position", "xxx/oo1/3 o")
    assert code == 0 and "game over: 1-0" in out


def test_random_match():
    code, out = run("random-match", "tic_tac_toe", "--games", "2000", "--seed", "3")
    assert code == 0 and "2000 random games (seed 3)" in out and "games/s" in out
    assert run("random-match", "tic_tac_toe", "--games", "2000", "--seed", "3")[1].split("\n")[1] == \
        out.split("\n")[1]


@pytest.mark.parametrize("args, fragment", [
    (["show", "chesss"], "unknown game 'chesss'"),
    (["show", "reversi(size=7)"], "size=7 is not allowed"),
    (["show", "tic_tac_toe", "--position", "xx/3/3 x"], "has 2 squares"),
    (["show", "tic_tac_toe", "--moves", "b2 b2"], "illegal move 'b2'"),
    (["perft", "tic_tac_toe", "3", "--moves", "q7"], "square 'q7' is off"),
    (["random-match", "nope", "--games", "3"], "unknown game 'nope'"),
])
def test_bad_input_is_one_line_and_exit_2(args, fragment):
    code, out = run(*args)
    assert code == 2
    lines = [l for l in out.splitlines() if l.strip()]
    assert len(lines) == 1 and fragment in lines[0] and lines[0].startswith("Error:")


def test_console_script_has_no_traceback():
    """The installed entry point, as a user runs it: one line on stderr, non-zero exit."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.run([sys.executable, "-m", "descent", "show", "reversi(size=5)"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and p.stdout == ""
    assert p.stderr.strip().count("\n") == 0 and "size=5 is not allowed" in p.stderr
