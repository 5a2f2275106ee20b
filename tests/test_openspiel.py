"""OpenSpiel's games by name (``games.openspiel``): loaded, refused with the reason, checked by
``check-game``, trained, ranked and matched through the same adapter as any Python game."""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pyspiel = pytest.importorskip("pyspiel")

import games  # noqa: E402
from descent.cli import cli  # noqa: E402
from games import openspiel  # noqa: E402
from games.errors import GameError, InvalidGameSpecError, PluginError  # noqa: E402
from games.plugins import plugin_facts  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def run(*args):
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def descent(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "descent", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_the_playable_games_are_listed_and_the_others_are_not():
    names = openspiel.available()
    for name in ("connect_four", "breakthrough", "tic_tac_toe", "hex", "chess", "othello"):
        assert f"openspiel:{name}" in names
    for name in ("kuhn_poker", "leduc_poker", "goofspiel", "backgammon", "matrix_rps", "hanabi"):
        assert f"openspiel:{name}" not in names
    code, out = run("games", "--openspiel")
    assert code == 0 and out.split() == names
    code, out = run("games")
    assert code == 0 and f"openspiel:NAME  {len(names)} games from OpenSpiel" in out


@pytest.mark.parametrize("name,reason", [
    ("kuhn_poker", "it has chance events"),
    ("matrix_rps", "its moves are simultaneous"),
    ("dark_hex", "it has hidden information"),
    ("nope_no_such_game", "OpenSpiel has no game 'nope_no_such_game'"),
])
def test_a_game_descent_cannot_play_is_refused_with_the_reason(name, reason):
    with pytest.raises(PluginError, match=reason):
        games.load(f"openspiel:{name}")
    code, out = run("games", f"openspiel:{name}")
    assert code != 0 and reason in out and out.count("\n") == 1


def test_facts_parameters_and_planes():
    info = games.load("openspiel:breakthrough(rows=6,columns=6)")
    assert (info.num_actions, info.planes_shape) == (432, (6, 6, 4))
    assert info.spec == "openspiel:breakthrough(columns=6,rows=6)"
    with pytest.raises(InvalidGameSpecError, match="unknown parameter 'cols'"):
        games.load("openspiel:breakthrough(cols=6)")
    # go's max_game_length=0 means "derived from the board": not passed, so 9x9 gets its own
    assert games.load("openspiel:go(board_size=9)").max_plies == 9 * 9 * 2
    # the planes: OpenSpiel's observation for the player to move, channels last, then the side plane
    s = games.new_state("openspiel:connect_four")
    s.push("3")
    x = np.asarray(s.encode_planes())
    spiel = pyspiel.load_game("connect_four").new_initial_state()
    spiel.apply_action(3)
    obs = np.asarray(spiel.observation_tensor(1), dtype=np.float32).reshape(3, 6, 7).transpose(1, 2, 0)
    assert x.shape == (6, 7, 4) and np.array_equal(x[:, :, :3], obs) and np.all(x[:, :, 3] == 1.0)


def test_moves_are_read_as_ids_or_as_openspiel_strings_and_results_follow_the_returns():
    s = games.new_state("openspiel:tic_tac_toe")
    for m in ("x(1,1)", "1", "x(0,0)", "2", "x(2,2)"):   # ids and OpenSpiel's strings of the position
        s.push(m)
    assert s.is_game_over() and s.outcome().binary == 1 and s.outcome().winner_name == "first"
    assert s.position() == "start 4 1 0 2 8"
    t = games.new_state("openspiel:breakthrough(rows=6,columns=6)")
    first = t.legal_actions_list()[0]
    assert t.move_to_str(first) == "a5a4" and t.parse_move("a5a4") == first


def test_action_text_games_really_write_moves_without_the_position():
    rng = random.Random(0)
    for name in sorted(openspiel.ACTION_TEXT_GAMES):
        game = pyspiel.load_game(name)
        start = game.new_initial_state()
        for _ in range(2):
            state, plies = game.new_initial_state(), 0
            while not state.is_terminal() and plies < 60:
                for a in state.legal_actions()[:30]:
                    assert state.action_to_string(state.current_player(), a) == start.action_to_string(0, a), name
                state.apply_action(rng.choice(state.legal_actions()))
                plies += 1


@pytest.mark.parametrize("spec", ["openspiel:connect_four", "openspiel:breakthrough(rows=6,columns=6)",
                                  "openspiel:tic_tac_toe", "openspiel:othello"])
def test_check_game_passes_openspiel_games(spec):
    code, out = run("check-game", spec, "--games", "6", "--depth", "2")
    assert code == 0, out
    assert out.strip().splitlines()[-1] == "8 of 8 checks passed"


def test_a_seeded_match_repeats():
    args = ["match", "openspiel:connect_four", "--first", "minimax:iterations=30", "--second", "mcts:iterations=30",
            "--games", "2", "--seed", "3", "--verbose"]
    (code1, out1), (code2, out2) = run(*args), run(*args)
    games_of = [re.findall(r"game \d+: [^\r\n]*", out) for out in (out1, out2)]
    assert code1 == code2 == 0 and len(games_of[0]) == 2 and games_of[0] == games_of[1]


def test_an_openspiel_game_is_trained_ranked_evaluated_reported_and_matched(tmp_path):
    out = tmp_path / "run"
    r = descent("train", "openspiel:tic_tac_toe", "--population", "2", "--budget", "4s", "--milestones", "2s,4s",
                "--min-games", "3", "--workers", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    for m in ("member_00", "member_01"):
        meta = json.loads((out / m / "milestone_4s.json").read_text())
        assert meta["games"] >= 3
    r = descent("rank", "openspiel:tic_tac_toe", "--run", str(out), "--agent", "minimax:iterations=10",
                "--games-per-pair", "2", "--opening-plies", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    assert (out / "pools.json").is_file()
    r = descent("evaluate", "openspiel:tic_tac_toe", "--run", str(out), "--algorithms", "minimax,minibal_swing",
                "--iterations", "10", "--opponent-time", "iterations=5", "--games-per-pair", "2",
                "--opening-plies", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    r = descent("report", "--run", str(out), "--out", str(tmp_path / "report"))
    assert r.returncode == 0, r.stderr[-2000:]
    table = (tmp_path / "report" / "table.txt").read_text()
    assert "openspiel:tic_tac_toe" in table and "minibal_swing" in table
    net = out / "member_00" / "milestone_4s.weights.h5"
    r = descent("match", "openspiel:tic_tac_toe", "--first", f"minibal_plus:iterations=20,net={net}",
                "--second", "mcts:iterations=20", "--games", "2")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "2 games, seats alternating" in r.stdout


def test_without_openspiel_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspiel", None)       # `import pyspiel` raises ImportError
    monkeypatch.setattr(openspiel, "_FOUND", {})
    with pytest.raises(GameError, match=r"OpenSpiel is not installed .*pip install -e '\.\[openspiel\]'"):
        openspiel.definition_for("openspiel:hex", plugin_facts)
    assert openspiel.available() == []


def test_the_engine_speaks_gtp_for_point_moves_and_uci_for_the_others():
    r = subprocess.run([sys.executable, "-m", "descent", "engine", "openspiel:hex", "--protocol", "gtp", "--net",
                        "none", "--iterations", "20"], input="boardsize 7\nclear_board\nplay b a1\ngenmove w\nquit\n",
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    replies = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert replies[:3] == ["=", "=", "="] and re.fullmatch(r"= [A-HJ]\d", replies[3]), replies
    r = subprocess.run([sys.executable, "-m", "descent", "engine", "openspiel:connect_four", "--protocol", "gtp",
                        "--net", "none"], input="quit\n", capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 2 and "GTP carries games whose moves are single points" in r.stderr
    r = subprocess.run([sys.executable, "-m", "descent", "engine", "openspiel:breakthrough(rows=6,columns=6)",
                        "--protocol", "uci", "--net", "none", "--iterations", "20"],
                       input="uci\nisready\nposition startpos\ngo\nquit\n", capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert re.search(r"^bestmove [a-f][1-6][a-f][1-6]$", r.stdout, re.M), r.stdout


def test_an_experiment_file_runs_every_stage_on_an_openspiel_game(tmp_path):
    (tmp_path / "exp.toml").write_text(f"""
[experiment]
name = "openspiel-ttt"
seed = 0
workers = 1
runs = "{tmp_path / 'runs'}"
report = "{tmp_path / 'report'}"
[train]
population = 2
budget = "3s"
milestones = "1s,3s"
min_games = 2
[rank]
agent = "minimax:iterations=10,decision=safe"
games_per_pair = 2
opening_plies = 1
[evaluate]
algorithms = ["minimax", "minibal_plus"]
budgets = ["iterations=5"]
opening_plies = 1
[[opponents]]
kind = "pool"
budget = "iterations=5"
games_per_pair = 2
[[games]]
spec = "openspiel:tic_tac_toe"
""")
    r = descent("experiment", str(tmp_path / "exp.toml"))
    assert r.returncode == 0, r.stderr[-2000:]
    table = (tmp_path / "report" / "table.txt").read_text()
    assert "openspiel:tic_tac_toe" in table and "minibal_plus" in table
    r = descent("experiment", str(tmp_path / "exp.toml"))          # a rerun plays nothing again
    assert r.returncode == 0 and "nothing to train" in r.stdout, r.stdout[-2000:]
