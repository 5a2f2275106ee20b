"""Issue 12: every input a person can type is refused with one line of a documented error class, and
never crashes, hangs or prints a traceback.

Generated inputs (tests/fuzz/generate.py, driven by Hypothesis) run in batches in a child process
(tests/fuzz/runner.py): a segfault or a hang costs that input, which fails the test, not the run.
The representative cases of the issue are explicit regression tests below. ``bench/bench_fuzz.py``
runs larger batches (and compares with another checkout).
"""
from __future__ import annotations

import json
import math
import os
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import games
from games import validate
from games.errors import (GameError, GameOverError, InvalidGameSpecError, InvalidMoveError,
                          InvalidPositionError, WrongGameError)
from tests.fuzz import generate, runner

ROOT = Path(__file__).resolve().parent.parent
FUZZ = settings(max_examples=2, deadline=None,
                suppress_health_check=list(HealthCheck))


def _run(cases, **kw):
    results = runner.run_cases(cases, ROOT, **kw)
    bad = [r for r in results if r["verdict"] != "ok"]
    assert not bad, runner.failures(results)
    return results


# ---- generated inputs, in a child process --------------------------------------------------------

@FUZZ
@given(st.randoms(use_true_random=False))
def test_generated_parsers(rnd):
    """Game specs, positions, moves and the State API, durations and budgets (540 inputs)."""
    rng = random.Random(rnd.random())
    cases = (generate.specs(rng, 80) + generate.positions(rng, 200) + generate.state_api(rng, 200)
             + generate.durations(rng, 60))
    _run(cases)


@FUZZ
@given(st.randoms(use_true_random=False))
def test_generated_agents_and_configs(rnd):
    """Agent specs (every key), agents given foreign states, config keys (300 inputs)."""
    rng = random.Random(rnd.random())
    cases = generate.agent_specs(rng, 160) + generate.agent_choose(rng, 40) + generate.configs(rng, 100)
    _run(cases)


@FUZZ
@given(st.randoms(use_true_random=False))
def test_generated_files_and_cli(rnd):
    """JSON records, results databases and command-line options (115 inputs)."""
    rng = random.Random(rnd.random())
    cases = generate.json_files(rng, 25) + generate.results_dbs(rng, 10) + generate.cli(rng, 80)
    _run(cases)


@pytest.mark.slow
def test_generated_checkpoints():
    """Checkpoint files with corrupted metadata, groups, links and weights (TensorFlow)."""
    _run(generate.checkpoints(random.Random(0), 40))


@FUZZ
@given(st.text(max_size=40), st.sampled_from(generate.GAME_SPECS))
def test_any_text_as_position_or_move(text, game):
    """Arbitrary Unicode as a position and as a move: a documented refusal or a position that reads
    back (in process: these parsers are pure Python over the engines' text hooks)."""
    s = games.new_state(game)
    try:
        s.set_position(text)
    except InvalidPositionError as exc:
        assert "\n" not in str(exc)
    else:
        t = games.new_state(game)
        t.set_position(s.position())
        assert t.position() == s.position()
    try:
        s.push(text)
    except (InvalidMoveError, games.IllegalMoveError) as exc:
        assert "\n" not in str(exc)


# ---- the validation layer ------------------------------------------------------------------------

@given(st.floats(allow_nan=True, allow_infinity=True))
@settings(max_examples=60, deadline=None)
def test_real_refuses_non_finite_and_out_of_range(x):
    try:
        v = validate.real(x, "x", 0.0, 1.0)
    except GameError:
        assert not (math.isfinite(x) and 0.0 <= x <= 1.0)
    else:
        assert math.isfinite(v) and 0.0 <= v <= 1.0


@given(st.text(max_size=12))
@example("0\x1f")        # str.strip() takes U+001F for a blank; int() does not
@example("\u00a07")      # a Unicode space
@example(" \t+12\r\n\x0b\x0c")
@example("1_000")
@settings(max_examples=80, deadline=None)
def test_parse_int_accepts_only_ascii_integers(text):
    """Accepted exactly when the text is ASCII whitespace, a sign, ASCII digits, ASCII whitespace."""
    core = text.strip(" \t\n\r\x0b\x0c")
    expected = int(core) if re.fullmatch(r"[+-]?[0-9]+", core, re.ASCII) else None
    if expected is not None and not -10 ** 6 <= expected <= 10 ** 6:
        expected = None
    try:
        v = validate.parse_int(text, "n", -10 ** 6, 10 ** 6)
    except GameError:
        assert expected is None
    else:
        assert v == expected == int(text)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 2.0, True, "0.5", None])
def test_real_examples(value):
    with pytest.raises(GameError):
        validate.real(value, "x", 0.0, 1.0)


def test_integer_refuses_bool_float_and_huge():
    for v in (True, 1.0, 1.5, 10 ** 30, "3"):
        with pytest.raises(GameError):
            validate.integer(v, "n", 0, 10 ** 9)
    assert validate.integer(7, "n", 0, 10) == 7


def test_is_digits_is_ascii_only():
    assert "\u00b2".isdigit() and not validate.is_digits("\u00b2")
    assert validate.is_digits("0123") and not validate.is_digits("")


def test_schema_names_the_entry():
    schema = validate.Record({"a": validate.List(validate.Int(0, 5))})
    with pytest.raises(GameError, match=r"f\.a\[1\]"):
        schema({"a": [1, 9]}, "f", GameError)
    with pytest.raises(GameError, match="no 'a' entry"):
        schema({}, "f", GameError)
    with pytest.raises(GameError, match="JSON object"):
        schema([1], "f", GameError)


def test_one_line():
    assert validate.one_line("a\nb\r\n  c") == "a b c"


# ---- the issue's representative cases (regressions) ----------------------------------------------

def test_api_values_the_issue_lists():
    s = games.new_state("tic_tac_toe")
    for bad in (float("nan"), 1.5, True, None):
        with pytest.raises(InvalidMoveError):
            s.push(bad)
    with pytest.raises(games.IllegalMoveError):        # an action id, but none of this game
        s.push(10 ** 30)
    with pytest.raises(InvalidMoveError):
        s.move_to_str(10 ** 10)
    assert (10 ** 30 in s.legal_moves) is False
    assert (1.0 in s.legal_moves) is False
    with pytest.raises(InvalidPositionError, match="must be text, got None"):
        s.set_position(None)
    with pytest.raises(InvalidMoveError, match="must be text, got None"):
        s.parse_move(None)
    assert s.move_stack == []


def test_positions_the_issue_lists():
    s = games.new_state("tic_tac_toe")
    for text in ("3/3/3 xo", "999999999/3/3 x", "9" * 400 + "/3/3 x", "", "   ", "3/3/3 x \u00b2"):
        with pytest.raises(InvalidPositionError):
            s.set_position(text)
    with pytest.raises(InvalidPositionError, match="non-ASCII"):
        games.new_state("chess").set_position(
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - \u00b2 1")
    h = games.new_state("havannah(base=4)")
    with pytest.raises(InvalidPositionError):
        h.set_position(h.position().replace(" w ", " wb "))


def test_specs_the_issue_lists():
    for spec in ("reversi(size=\uff16)", "breakthrough(rows=nan)", "breakthrough(rows=1e400)",
                 "breakthrough(rows=99999999999999999999999)", "x" * 1000, None):
        with pytest.raises(InvalidGameSpecError):
            games.load(spec)


@pytest.mark.parametrize("spec", [
    "mcts:c=nan,iterations=50", "mcts:max_nodes=0", "mcts:max_nodes=-5", "mcts:c=-1",
    "minimax:iterations=99999999999999999999", "alphabeta:depth=99999999999", "alphadda:a=nan",
    "minimax:max_nodes=15", "mcts:time=inf", "mcts:time=nan", "minimax:time=1e400",
    "gaussian:level=custom,mu=5,sigma=0.3", "gaussian:level=custom,mu=0.5,sigma=nan",
    "noisy:noise=nan", "noisy:scale=inf", "mcts:iterations=\uff15", "mcts:iterations=1_000",
    "mcts:iterations=5\u00a0", "minimax:seed=-1"])
def test_agent_values_the_issue_lists(spec):
    from search_ext.agents import AgentSpecError, make_agent
    with pytest.raises(AgentSpecError):
        make_agent(spec, "tic_tac_toe")


@pytest.mark.parametrize("agent", generate.AGENTS)
def test_agents_bound_to_their_game(agent):
    from search_ext.agents import make_agent
    a = make_agent(agent, "tic_tac_toe")
    for state in (games.new_state("chess"), None, games.new_state("reversi(size=6)")):
        with pytest.raises(WrongGameError):
            a.choose(state)
    over = games.new_state("tic_tac_toe")
    over.set_position("xxx/oo1/3 o")
    with pytest.raises(GameOverError):
        a.choose(over)
    r8 = make_agent(agent, "reversi")
    with pytest.raises(WrongGameError):
        r8.choose(games.new_state("reversi(size=6)"))
    assert a.choose(games.new_state("tic_tac_toe")) in range(9)


def test_search_entry_points_check_the_state():
    from search_ext.alphabeta import AlphaBeta
    from search_ext.bestfirst import BestFirstSearch
    from search_ext.mcts import MCTS
    info = games.load("tic_tac_toe")
    chess = games.new_state("chess")
    for search, call in ((MCTS(info), lambda s, x: s.search(x, iterations=5)),
                         (BestFirstSearch(info), lambda s, x: s.search(x, iterations=5)),
                         (AlphaBeta(info), lambda s, x: s.search(x, max_depth=1))):
        for state in (chess, None):
            with pytest.raises(WrongGameError):
                call(search, state)
    with pytest.raises(GameError):
        MCTS(info).search(info.new_state(), seconds=float("inf"))
    with pytest.raises(ValueError):
        MCTS(info, c=float("nan"))


def test_durations_and_budgets():
    from descent.config import ConfigError, parse_duration, parse_durations
    from descent.tournament import ProtocolError, parse_budget
    for t in ("nan", "inf", "1e400s", "", "\uff15m", "-5m", "0s"):
        with pytest.raises(ConfigError):
            parse_duration(t)
    for t in ("20m,20m", "1h,60m", "20m,,1h"):
        with pytest.raises(ConfigError, match="milestone|empty item"):
            parse_durations(t)
    for t in ("time=nan", "time=inf", "iterations=1.5", "iterations=abc", ""):
        with pytest.raises(ProtocolError):
            parse_budget(t)
    assert parse_duration("1.5h") == 5400.0 and parse_budget("0.5") == "time=0.5"


@pytest.mark.parametrize("key,value", [("training", "learning_rate = nan"), ("selfplay", "time = inf"),
                                       ("selfplay", "epsilon = nan"), ("network", "filters = 99999999999"),
                                       ("run", 'budget = "nan"'), ("run", 'milestones = "3m,3m"')])
def test_config_values(tmp_path, key, value):
    from descent.config import ConfigError, load_config
    p = tmp_path / "c.toml"
    p.write_text(f'[game]\nspec = "tic_tac_toe"\n[{key}]\n{value}\n')
    with pytest.raises(ConfigError, match=str(p)):
        load_config(p)


def _results_db(path: Path, **bad):
    from descent.results import ResultsDB
    row = {"match_key": "k1", "stage": "evaluate", "game": "tic_tac_toe", "algorithm": "minimax",
           "budget": "time=0.1", "agent_a": "a", "agent_b": "b", "net_a": "n", "net_b": "m", "a_first": 1,
           "moves": "", "result": 1, "score": 0.5, "a_result": 1, "a_score": 0.5, "plies": 5,
           "seconds_a": 0.1, "seconds_b": 0.1, "seed": 1}
    with ResultsDB(path) as db:
        db.insert({**row, **bad})


def test_report_never_writes_the_database_it_reads(tmp_path):
    from descent.report import make_report
    from descent.results import ResultsError
    foreign = tmp_path / "foreign.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE foo (a TEXT)")
    con.commit()
    con.close()
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    bad = tmp_path / "bad" / "results.db"
    bad.parent.mkdir()
    _results_db(bad, budget="abc")
    good = tmp_path / "good" / "results.db"
    good.parent.mkdir()
    _results_db(good)
    for db in (foreign, empty, bad, good):
        before = (db.read_bytes(), sorted(p.name for p in db.parent.iterdir()))
        if db is good:
            assert make_report([db], tmp_path / "rep")["records"]
        else:
            with pytest.raises(ResultsError):
                make_report([db], tmp_path / "rep")
        assert (db.read_bytes(), sorted(p.name for p in db.parent.iterdir())) == before, db


def test_json_records_refused(tmp_path):
    from descent.tournament import ProtocolError, evaluate, find_nets
    from training.run import RunError, list_checkpoints
    run = tmp_path / "run"
    (run / "member_00").mkdir(parents=True)
    for content in ("[]", "null", '"x"', "{}", '{"game": "tic_tac_toe"}'):
        (run / "run.json").write_text(content)
        with pytest.raises(RunError, match="run.json"):
            list_checkpoints(run)
        with pytest.raises(ProtocolError, match="run.json"):
            find_nets(run, "tic_tac_toe")
    (run / "run.json").write_text(json.dumps({"game": "tic_tac_toe", "seed": 0, "config": {}}))
    (run / "member_00" / "milestone_1m.json").write_text('{"game": "tic_tac_toe", "member": "x"}')
    with pytest.raises(RunError, match="member"):
        list_checkpoints(run)
    for content in ("[]", "null", '{"game": "tic_tac_toe", "high": [], "low": []}',
                    '{"game": "tic_tac_toe", "high": [{"net": "a"}], "low": [{"net": "b", "path": "c"}]}'):
        (run / "pools.json").write_text(content)
        with pytest.raises(ProtocolError, match="pools"):
            evaluate(run, "tic_tac_toe", ["minimax"], ["iterations=1"], progress=False,
                     db_path=tmp_path / "r.db")


def _cli(*argv, input_text="", timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "descent", *argv], capture_output=True, text=True,
                          input=input_text, timeout=timeout, env=env, cwd=ROOT)


def _assert_error(p, fragment=""):
    assert p.returncode == 2, (p.returncode, p.stdout[-500:], p.stderr[-500:])
    assert "Traceback" not in p.stderr
    err = p.stderr[p.stderr.index("Error:"):].strip()
    assert "\n" not in err and fragment in err, err


def test_cli_cases_the_issue_lists(tmp_path):
    """A few of the issue's commands, as real processes (the generated CLI inputs run in one)."""
    _assert_error(_cli("show", "chess", "--position",
                       "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - \u00b2 1"), "non-ASCII")
    _assert_error(_cli("show", "tic_tac_toe", "--position", "999999999/3/3 x"), "row 1")
    _assert_error(_cli("show", "tic_tac_toe", "--position", ""), "position")
    _assert_error(_cli("match", "tic_tac_toe", "--first", "mcts:c=nan,iterations=50", "--second", "random",
                       "--games", "1"), "c:")
    _assert_error(_cli("match", "breakthrough(rows=5,cols=5)", "--first", "mcts:time=inf", "--second",
                       "random", "--games", "1"), "time")
    for budget in ("nan", "inf", "1e400s", ""):
        _assert_error(_cli("train", "tic_tac_toe", "--budget", budget, "--out", str(tmp_path / "r")),
                      "duration")
    _assert_error(_cli("train", "tic_tac_toe", "--out", "/proc/x"), "/proc/x")
    _assert_error(_cli("train", "tic_tac_toe", "--config", "configs/chess.toml", "--out", str(tmp_path / "r")),
                  "chess")
    _assert_error(_cli("evaluate", "tic_tac_toe", "--iterations", "1.5"), "--iterations")
    _assert_error(_cli("evaluate", "tic_tac_toe", "--algorithms", ""), "--algorithms")
    _assert_error(_cli("play", "tic_tac_toe", "--save", "/proc/x/y", "--plain"), "--save")
    for t in ("nan", "inf", "0"):
        p = _cli("play", "tic_tac_toe", "--time", t, "--plain")
        assert p.returncode == 2 and "Traceback" not in p.stderr and "--time" in p.stderr
    _assert_error(_cli("match", "tic_tac_toe", "--first", f"minimax:iterations=5,net={tmp_path}",
                       "--second", "random", "--games", "1"), "directory")
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_wrong_ray_address_times_out():
    from descent.distributed import RayUnavailable, check_reachable
    for address in ("bogus:1", "127.0.0.1:1", "ray://nohost", "host:99999", "h\u00e9:1"):
        with pytest.raises(RayUnavailable):
            check_reachable(address, timeout=2)


def test_workers_capped_by_the_work(monkeypatch):
    """`--workers 40 --games 2` starts at most 2 worker processes."""
    from click.testing import CliRunner
    import descent.match
    from descent.cli import cli
    seen, real = [], descent.match.run_match

    def spy(game, a, b, n_games, workers=1, *args, **kwargs):
        seen.append(workers)
        yield from real(game, a, b, n_games, 1, *args, **kwargs)
    monkeypatch.setattr(descent.match, "run_match", spy)
    r = CliRunner().invoke(cli, ["match", "tic_tac_toe", "--first", "random", "--second", "random",
                                 "--games", "2", "--workers", "40"])
    assert r.exit_code == 0, r.output
    assert seen == [2]


# ---- checkpoints (TensorFlow) --------------------------------------------------------------------

@pytest.mark.slow
def test_resume_with_negative_games_keeps_the_replay_files(tmp_path):
    """counters.games = -5 in latest.h5: the resume is refused and no replay file is deleted."""
    import h5py
    from training.network import CheckpointError, build_model, make_optimizer, read_meta, save_state
    info = games.load("tic_tac_toe")
    model = build_model(info.planes_shape, 4, 1, 4)
    path = tmp_path / "latest.h5"
    meta = {"game": info.spec, "config": {"network": {"filters": 4, "blocks": 1, "head_units": 4}},
            "counters": {"games": 3, "examples": 1, "train_seconds": 1.0, "updates": 1,
                         "milestones_done": [], "rng": None, "seed": 0}}
    save_state(path, model, make_optimizer(model, 1e-3), meta)
    assert read_meta(path)["counters"]["games"] == 3
    with h5py.File(path, "r+") as f:
        meta["counters"]["games"] = -5
        f.attrs["meta"] = json.dumps(meta)
    with pytest.raises(CheckpointError, match="counters.games"):
        read_meta(path)
    # the same file as a member's resume point, beside its replay files
    from descent.config import CONFIG_DIR, load_config
    from training.run import training_config
    from training.layout import member_dir
    from training.trainer import MemberJob, train_member
    cfg = training_config(load_config(CONFIG_DIR / "tic_tac_toe.toml"))
    cfg["network"] = {"filters": 4, "blocks": 1, "head_units": 4}
    mdir = member_dir(tmp_path / "run", 0)
    (mdir / "replay").mkdir(parents=True)
    replay = [mdir / "replay" / f"g{i:08d}.h5" for i in (1, 2, 3)]
    for p in replay:
        p.write_bytes(b"replay")
    (mdir / "latest.h5").write_bytes(path.read_bytes())
    job = MemberJob(str(tmp_path / "run"), 0, info.spec, cfg, 60.0, [("1m", 60.0)], 0, max_games=1)
    with pytest.raises(CheckpointError, match="counters.games"):
        train_member(job)
    assert all(p.read_bytes() == b"replay" for p in replay)


# ---- issue 20 (item 7): every public entry point, every argument, every bad value ----------------

def test_api_bad_values_raise_documented_classes():
    """Introspected public callables of games/ and search_ext/ (state methods of every game, module
    functions, registry, boardtext, the compiled searches and evaluators, make_agent and choose),
    each argument given each bad value (2**63, 10**12, -10**12, -1, True, 1.5, NaN, inf, None, text,
    a list, numpy scalars): a ``GameError`` or a normal return, never ``OverflowError``, a
    ``TypeError`` from Cython's argument conversion, ``SystemError``, a crash or a hang (child
    process, small budgets)."""
    from tests.fuzz import api
    cases = api.cases()
    assert len(cases) > 3000           # the introspection found the entry points
    _run(cases)


@pytest.mark.parametrize("value", [10 ** 12, 2 ** 63, -10 ** 12, -1, True, 1.5, math.nan, None, "4"])
def test_transform_action_bad_values(value):
    s = games.new_state("tic_tac_toe")
    with pytest.raises(GameError):
        s.transform_action(4, value)
    with pytest.raises(GameError):
        s.transform_action(value, 4)
    assert s.transform_action(4, 0) == s.transform_action(4, 0)


def test_search_entry_points_bad_values():
    from search_ext.bestfirst import BestFirstSearch
    from search_ext.mcts import MCTS
    info = games.load("tic_tac_toe")
    s = info.new_state()
    for bad in (10 ** 12, 2 ** 63, -1, 1.5, math.inf, None, "3"):
        with pytest.raises(GameError):
            BestFirstSearch(info).search(s, iterations=bad)
        with pytest.raises(GameError):
            MCTS(info).search(s, iterations=bad)
        with pytest.raises(GameError):
            MCTS(info, seed=bad if bad not in (10 ** 12, 2 ** 63) else 2 ** 64)
        if bad is not None:                 # max_mb=None: no cap
            with pytest.raises(GameError):
                BestFirstSearch(info, max_mb=bad if bad != 1.5 else 1e400)
    with pytest.raises(WrongGameError):
        BestFirstSearch(info).search(7, iterations=2)


@pytest.mark.parametrize("argv", [
    ["perft", "tic_tac_toe", "1000000000000000000000000000000"],
    ["perft", "tic_tac_toe", "1", "--moves", "9223372036854775808"],
    ["show", "tic_tac_toe", "--moves", "1000000000000"],
    ["show", "reversi(size=1e400)"],
    ["match", "tic_tac_toe", "--first", "mcts:iterations=" + "1" + "0" * 30, "--second", "random", "--games", "1"],
    ["match", "tic_tac_toe", "--first", "minimax:max_mb=1e400", "--second", "random", "--games", "1"],
    ["match", "tic_tac_toe", "--first", "mcts:seed=-1", "--second", "random", "--games", "1"],
    ["match", "tic_tac_toe", "--first", "mcts:seed=18446744073709551616", "--second", "random", "--games", "1"],
    ["match", "tic_tac_toe", "--first", "random", "--second", "random", "--games", "1", "--seed", "-1"],
    ["random-match", "tic_tac_toe", "--seed", "99999999999999999999999"],
])
def test_cli_huge_and_negative_numbers(argv):
    """The bad values of the API fuzz typed at the command line: one ``Error:`` line, exit 2."""
    from click.testing import CliRunner
    from descent.cli import cli
    res = CliRunner().invoke(cli, argv, catch_exceptions=True)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    lines = [l for l in res.output.splitlines() if l.strip()]
    assert res.exit_code == 2 and lines and lines[-1].startswith("Error:"), res.output
    assert "Traceback" not in res.output
