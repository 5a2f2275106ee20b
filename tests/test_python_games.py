"""Games written in Python (games.protocol) through the compiled adapter (games.python_game): naming
(module:Class, entry points), the conformance suite (descent check-game) on good and deliberately
broken games, and the search, matches and perft reaching a Python game through the State contract."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import games
from descent.cli import cli
from examples.connect_four import ConnectFour
from games._state import State, perft, random_games
from games.conformance import check_game
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError, PluginError, UnknownGameError
from games.protocol import Game
from search_ext import selfplay

ROOT = Path(__file__).resolve().parent.parent
C4 = "examples.connect_four:ConnectFour"
HERE = "test_python_games"          # this module, as pytest imports it (tests/ is on the path)


def run(*args):
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def descent(*args, cwd=ROOT, extra_path=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, extra_path), str(ROOT), str(ROOT / "tests")]))
    return subprocess.run([sys.executable, "-m", "descent", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


# ---- deliberately broken variants of the example --------------------------------------------------

class WrongUndo(ConnectFour):
    """Connect Four whose undo leaves the stone on the board."""

    def undo(self, action):
        self.heights[action] -= 1
        self.plies -= 1
        self.winner = -1
        self.player = 1 - self.player


class FalseSymmetry(ConnectFour):
    """Connect Four claiming the mirror symmetry but mapping each column to itself."""

    def transform_action(self, sym, action):
        return action


class MovesAfterTheEnd(ConnectFour):
    """Connect Four that still lists the open columns once four are in a row."""

    def legal_actions(self):
        return [c for c in range(self.columns) if self.heights[c] < self.rows]


class NoEncode(Game):
    """A class that forgot most of the protocol."""

    num_actions, max_plies, planes_shape = 3, 3, (1, 3, 1)

    def to_move(self):
        return 0


class WrongPlanes(ConnectFour):
    """Connect Four whose planes are not the shape it declares."""

    def encode(self):
        return np.zeros((7, 6, 2), dtype=np.float32)


class Exploding(ConnectFour):
    """Connect Four whose apply raises at the tenth ply (inside the compiled search)."""

    def apply(self, action):
        if self.plies >= 9:
            raise RuntimeError("boom")
        super().apply(action)


class Stuck(ConnectFour):
    """Connect Four without a legal move after four stones, the game going on."""

    def legal_actions(self):
        return [] if self.plies == 4 else super().legal_actions()


class CopyOnly(ConnectFour):
    """Connect Four without undo (the adapter keeps the positions) and without a key (the adapter
    hashes the move history)."""

    undo = None

    def key(self):
        return None


# ---- the adapter ------------------------------------------------------------------------------------

def _count(g, depth):
    """Perft computed directly on the Python game object (apply/undo), no adapter."""
    if depth == 0:
        return 1
    total = 0
    for a in g.legal_actions():
        g.apply(a)
        total += _count(g, depth - 1)
        g.undo(a)
    return total


def test_loads_as_an_adapter_state_with_its_facts():
    info = games.load(C4)
    s = info.new_state()
    assert type(s).__name__ == "PythonGameState" and isinstance(s, State)
    assert info.spec == C4 and info.players == ("red", "yellow") and info.num_actions == 7
    assert info.max_plies == 42 and info.planes_shape == (6, 7, 2) and info.symmetries == (0, 4)
    assert info.facts()["plugin"] == C4 and info.facts()["terminal_evaluation"] == "additive depth"
    small = games.load(f"{C4}(rows=5)")
    assert small.spec == f"{C4}(rows=5)" and small.planes_shape == (5, 7, 2)
    assert games.load(f"{C4}(rows=6)") is info


@pytest.mark.parametrize("spec,game", [(C4, ConnectFour()), (f"{C4}(rows=4,columns=5)", ConnectFour(4, 5))])
def test_perft_equals_the_count_in_python(spec, game):
    s = games.new_state(spec)
    for depth in range(1, 6):
        assert perft(s, depth) == _count(game, depth)
    # from a position in the middle of a game too
    for m in "ddcce":
        s.push(m)
        game.apply(game.text_to_action(m))
    assert perft(s, 4) == _count(game, 4)


def test_push_pop_text_and_outcome():
    s = games.new_state(C4)
    for m in "aabbccd":
        s.push(m)
    assert s.is_game_over() and s.result() == "1-0" and s.legal_actions_list() == []
    assert s.outcome().termination == "four in a row" and s.outcome().winner_name == "red"
    assert s.position() == "start a a b b c c d"
    t = games.new_state(C4)
    t.set_position(s.position())
    assert t == s and t.zobrist_hash == s.zobrist_hash and t.ply == 7 and t.is_game_over()
    s.pop()
    assert not s.is_game_over() and s.legal_actions_list() == list(range(7))
    with pytest.raises(InvalidMoveError, match="column letter"):
        s.push("z")
    with pytest.raises(IllegalMoveError):
        s.push(9)
    with pytest.raises(InvalidPositionError):
        t.set_position("a b c")
    with pytest.raises(InvalidPositionError):
        t.set_position("start a a a a a a a")           # the seventh stone in a full column
    assert t.position() == "start a a b b c c d"            # unchanged
    assert "a b c d e f g" in str(s)


def test_a_game_without_undo_or_key_runs_on_copies_and_the_move_history():
    s, t = games.new_state(f"{HERE}:CopyOnly"), games.new_state(C4)
    assert [perft(s, d) for d in range(1, 5)] == [perft(t, d) for d in range(1, 5)]
    a, b = games.new_state(f"{HERE}:CopyOnly"), games.new_state(f"{HERE}:CopyOnly")
    for x, y in zip("abc", "cba"):
        a.push(x)
        b.push(y)
    assert a.zobrist_hash != b.zobrist_hash          # transpositions are not recognised without key()
    c = a.copy()
    c.push("d")
    c.pop()
    c.pop()
    assert a.position() == "start a b c" and c.position() == "start a b"
    assert check_game(f"{HERE}:CopyOnly", n_games=4, depth=2).ok


def test_random_games_are_seeded():
    s = games.new_state(C4)
    r1, l1 = random_games(s, 10, 7)
    r2, l2 = random_games(s, 10, 7)
    assert (r1 == r2).all() and (l1 == l2).all() and s.ply == 0


def test_an_error_inside_the_search_is_one_line_at_the_next_call():
    code, out = run("match", f"{HERE}:Exploding", "--first", "minimax:iterations=30",
                    "--second", "minimax:iterations=30", "--games", "1")
    assert code == 2
    line = out.strip().splitlines()[-1]
    assert line.startswith("Error: ") and "apply(" in line and "RuntimeError: boom" in line
    assert "Traceback" not in out


def test_self_play_of_a_broken_game_stops_with_its_error():
    pool = selfplay.SelfPlayPool(games.load(f"{HERE}:Stuck"), lambda b: np.zeros(len(b), dtype=np.float32),
                                 iterations=10, games_in_flight=1)
    seeds = iter(range(1, 4))

    def new_game():
        seed = next(seeds, None)
        return None if seed is None else (seed, 0.5, -1.0, 0.0)

    with pytest.raises(PluginError, match="legal_actions\\(\\) is empty in a position that is not over"):
        pool.run(new_game, lambda g: None)


@pytest.mark.parametrize("actors", [[], ["--actors", "2"]], ids=["in-process", "actors"])
def test_descent_train_of_a_broken_game_stops_with_one_error_line_and_records_no_game(tmp_path, actors):
    """The trainer raises a Python game's pending error as the game ends (``raise_pending`` in
    ``on_game``): the broken game is neither counted nor trained on, and ``descent train`` ends with
    its one ``Error:`` line and status 2; with actor processes too (the actor ends with
    ``GAME_ERROR_EXIT``, the learner raises its message)."""
    r = descent("train", f"{HERE}:Stuck", "--population", "1", "--budget", "4s", "--milestones", "2s,4s",
                "--min-games", "3", "--workers", "1", "--seed", "1", *actors, "--out", str(tmp_path / "run"),
                cwd=tmp_path)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Error: {HERE}:Stuck: legal_actions() is empty in a position that is not over")
    assert "Traceback" not in r.stderr and "game 1:" not in r.stdout


# ---- naming -----------------------------------------------------------------------------------------

def test_module_class_names_and_their_errors():
    with pytest.raises(PluginError, match=r"no_such_module_zz:Game: cannot import no_such_module_zz"):
        games.load("no_such_module_zz:Game")
    with pytest.raises(PluginError, match="has no 'Nope'"):
        games.load("examples.connect_four:Nope")
    with pytest.raises(PluginError, match="missing methods legal_actions, apply, is_terminal"):
        games.load(f"{HERE}:NoEncode")
    with pytest.raises(PluginError, match=r"encode\(\) gives planes shaped \(7, 6, 2\), not planes_shape \(6, 7, 2\)"):
        games.load(f"{HERE}:WrongPlanes")
    with pytest.raises(PluginError, match="rows and columns must be in"):
        games.load(f"{C4}(rows=3)")
    with pytest.raises(games.InvalidGameSpecError, match="unknown parameter 'size'"):
        games.load(f"{C4}(size=3)")
    with pytest.raises(UnknownGameError, match="module:Class"):
        games.load("no_such_game")
    assert games.load("tic_tac_toe").new_state().legal_moves.count() == 9      # the others still work


def test_cli_names_module_class_and_reports_a_bad_one_in_one_line():
    code, out = run("games", C4)
    assert code == 0 and "written in Python: examples.connect_four:ConnectFour" in out
    assert "players red (first), yellow; actions 7; ply cap 42; planes 6x7x2; symmetries 2" in out
    code, out = run("show", C4, "--moves", "d d e")
    assert code == 0 and "yellow to move; 7 legal" in out
    code, out = run("perft", f"{C4}(rows=4,columns=4)", "3")
    assert code == 0 and "perft(3) = 64" in out
    code, out = run("games", "no_such_module_zz:Game")
    assert code == 2 and out.startswith("Error: no_such_module_zz:Game: cannot import") and out.count("\n") == 1


def test_seeded_match_on_the_example_plays_to_the_end_and_repeats():
    args = ["match", C4, "--first", "minimax:iterations=60", "--second", "mcts:iterations=60", "--games", "2",
            "--seed", "5", "--verbose"]
    code1, out1 = run(*args)
    code2, out2 = run(*args)
    games_of = [re.findall(r"game \d+: [^\r\n]*", out) for out in (out1, out2)]
    assert code1 == code2 == 0
    assert len(games_of[0]) == 2 and games_of[0] == games_of[1]
    assert all("->" in ln for ln in games_of[0])


def test_entry_point_plugins_listed_and_a_broken_one_named(tmp_path):
    dist = tmp_path / "fake_descent_plugins-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-descent-plugins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[descent.games]\nfour = examples.connect_four:ConnectFour\n"
        "broken = no_such_module_zz.sub:Game\nhalf = test_python_games:NoEncode\n"
        "bad-name = examples.connect_four:ConnectFour\ntic_tac_toe = examples.connect_four:ConnectFour\n")
    r = descent("games", extra_path=[tmp_path])
    assert r.returncode == 0, r.stderr
    assert "tic_tac_toe" in r.stdout and "four  (version 1; written in Python: examples.connect_four:ConnectFour)" in r.stdout
    assert "plugin broken (no_such_module_zz.sub:Game) is broken: cannot import no_such_module_zz.sub" in r.stdout
    assert "plugin bad-name (examples.connect_four:ConnectFour) is broken: the entry point's name must be" in r.stdout
    assert "plugin tic_tac_toe (examples.connect_four:ConnectFour) is broken: its name is a built-in" in r.stdout
    assert "plugin half (test_python_games:NoEncode) is broken: " in r.stdout and "missing methods" in r.stdout
    r = descent("games", "broken", extra_path=[tmp_path])
    assert r.returncode == 2 and r.stderr.startswith("Error: plugin broken") and r.stderr.count("\n") == 1
    r = descent("check-game", "four", "--games", "3", "--depth", "2", extra_path=[tmp_path])
    assert r.returncode == 0 and "8 of 8 checks passed" in r.stdout


# ---- check-game ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["tic_tac_toe", C4, f"{C4}(rows=4,columns=5)"])
def test_check_game_passes_good_games(spec):
    code, out = run("check-game", spec, "--games", "8")
    assert code == 0, out
    assert out.strip().splitlines()[-1] == "8 of 8 checks passed"


@pytest.mark.parametrize("variant,check,reason", [
    ("WrongUndo", "random games", "does not restore the position before it: planes differ"),
    ("FalseSymmetry", "symmetries", "symmetry 4: the image"),
    ("MovesAfterTheEnd", "terminal states", "legal_actions() is not empty in a finished game"),
])
def test_check_game_fails_broken_games_with_the_reason_and_the_moves(variant, check, reason):
    report = check_game(f"{HERE}:{variant}", n_games=6, seed=0, depth=2)
    assert not report.ok
    failure = next(f for f in report.failures if f.check == check)
    assert reason in failure.reason and failure.moves
    # the moves reproduce it: a fresh state accepts them
    s = games.new_state(f"{HERE}:{variant}")
    for m in failure.moves.split():
        s.push(m)
    code, out = run("check-game", f"{HERE}:{variant}", "--games", "6")
    assert code == 1 and f"FAIL  {check}: " in out and "moves from the start: " in out


def test_check_game_of_a_broken_plugin_is_one_line():
    code, out = run("check-game", f"{HERE}:NoEncode")
    assert code == 2 and out.startswith("Error: test_python_games:NoEncode: missing methods")


def test_a_python_game_without_a_config_file_trains_with_the_default_settings(tmp_path):
    from descent.config import SCHEMA
    from descent.plan import build_plan
    plan = build_plan(C4, population=1, budget="20s", milestones="10s,20s", out=tmp_path / "run")
    assert plan.game == C4 and str(plan.config_path) == "(defaults)" and "no config file" in plan.notes[0]
    assert plan.cfg["game"]["spec"] == C4
    assert plan.cfg["network"] == {k: key.default for k, key in SCHEMA["network"].items()}


@pytest.mark.parametrize("spec", ["reversi(size=6)", "breakthrough(rows=6,cols=6)", "havannah(base=4)", "chess",
                                  "connect6(size=9)", "tapatan", "five_field_kono", "tsoro_yematatu"])
def test_check_game_passes_the_compiled_engines(spec):
    report = check_game(spec, n_games=2, seed=1, depth=2)
    assert report.ok, [str(f) for f in report.failures]


def test_a_game_module_named_by_a_file_is_never_imported(tmp_path, monkeypatch):
    """Loading files never executes code: once the command line restricts ad hoc names to its own
    arguments (``plugins.restrict_ad_hoc``, set by ``descent``'s group for every command), a
    ``module:Class`` spec read from a file (a checkpoint's metadata, a results database, a request)
    is refused in one line, and its module is not imported (it would have left a marker)."""
    from games import plugins
    marker = tmp_path / "imported"
    (tmp_path / "side_effect_game.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nclass G:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_AD_HOC", None)
    plugins.restrict_ad_hoc(plugins.ad_hoc_names(["match", "examples.connect_four:ConnectFour(rows=5)",
                                                  "--first", "minimax:iterations=5"]))
    with pytest.raises(PluginError, match="named by a file or a request is not imported"):
        games.load("side_effect_game:G")
    assert not marker.exists() and "side_effect_game" not in sys.modules
    assert games.load("examples.connect_four:ConnectFour(rows=5)").num_actions == 7
    # the command line: a checkpoint-like file naming the module does not import it either
    spec_file = tmp_path / "spec.txt"
    spec_file.write_text("side_effect_game:G")
    r = CliRunner().invoke(cli, ["games", "tic_tac_toe"])
    assert r.exit_code == 0
    with pytest.raises(PluginError):
        games.load(spec_file.read_text())
    assert not marker.exists()
    plugins.restrict_ad_hoc(None)


class StateWithoutFacts(State):
    """A State subclass in a module without facts(params): not a usable compiled plugin."""


def test_a_compiled_plugin_is_a_state_subclass_whose_module_gives_the_facts():
    # a built-in engine named as a plugin would name its own: module:StateClass
    info = games.load("games.tic_tac_toe:TicTacToeState")
    assert (info.num_actions, info.planes_shape) == (9, (3, 3, 2))
    assert info.definition.game_class is None and info.definition.module == "games.tic_tac_toe"
    code, out = run("check-game", "games.tic_tac_toe:TicTacToeState", "--games", "4", "--depth", "2")
    assert code == 0 and out.strip().splitlines()[-1] == "8 of 8 checks passed"
    code, out = run("match", "games.tic_tac_toe:TicTacToeState", "--first", "minimax:iterations=50",
                    "--second", "mcts:iterations=50", "--games", "2")
    assert code == 0 and "2 games, seats alternating" in out
    with pytest.raises(PluginError, match="must define facts"):
        games.load(f"{HERE}:StateWithoutFacts")
