"""Batched evaluation with the real thing: ``descent evaluate`` killed (SIGKILL, in a subprocess,
with games in flight) and rerun loses only the games in flight and plays nothing twice; and with
the production backend (ONNX Runtime, whose values may depend on the batch in the last bits) the
games played many in flight agree with the games played one by one."""
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from tests.test_engine_opponent import pool_run  # noqa: F401  (the fixture: tic-tac-toe, ranked pools)

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")
# 1 high net x 1 low net x 2 algorithms x 12 games = 24 matches, 16 in flight per process
EVAL = ["--algorithms", "minimax,minibal_plus", "--iterations", "20", "--opponent-time", "iterations=10",
        "--games-per-pair", "12", "--seed", "3", "--opening-plies", "1"]
TOTAL = 24


def _keys(db):
    with sqlite3.connect(db) as c:
        return [r[0] for r in c.execute("SELECT match_key FROM matches WHERE stage = 'evaluate'")]


def _rows(db):
    with sqlite3.connect(db) as c:
        return {r[0]: r[1:] for r in c.execute(
            "SELECT match_key, moves, result, score FROM matches WHERE stage = 'evaluate'")}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_batched_evaluate_killed_and_rerun_loses_only_the_games_in_flight(pool_run, tmp_path, workers):  # noqa: F811
    import shutil
    run = tmp_path / "run"
    shutil.copytree(pool_run, run, ignore=shutil.ignore_patterns("results.db*"))
    db = run / "results.db"
    cmd = [sys.executable, "-m", "descent", "evaluate", "tic_tac_toe", "--run", str(run), *EVAL,
           "--workers", str(workers)]
    # SIGKILL right after the 5th match is stored (a crash point: an exact point, not a moment),
    # while the other games of the batch are still being played
    killed = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                            env=dict(ENV, DESCENT_CRASH_AT="match_stored:5"))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    stored = _rows(db)
    assert len(stored) == 5
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=ENV)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    keys = _keys(db)
    assert len(keys) == len(set(keys)) == TOTAL            # every match once
    after = _rows(db)
    assert all(after[k] == v for k, v in stored.items())     # the stored ones were not replayed


def test_production_backend_batched_agrees_with_one_by_one():
    """The shipped reversi networks through ONNX Runtime (the default backend): 16 games of
    Unbounded Minimax (final network) against Minibal_+ (early network), one by one and 16 in
    flight. Each side's score lies within the other's 95% interval, and most games are the very
    same games (a value differing in its last bits can flip a near tie, rarely)."""
    from descent import batched, shipped
    from descent.match import play_game
    from descent.networks import make_agent
    from descent.stats import mean_ci
    game = "reversi(size=6)"
    final, early = shipped.network(game), shipped.network(game, "early")
    a, b = f"minimax:iterations=30,net={final}", f"minibal_plus:iterations=30,net={early}"
    agent_a, agent_b = make_agent(a, game), make_agent(b, game)
    assert type(agent_a.opts["_inference"]).__name__ == "OnnxInference"
    tasks = [{"game": game, "agent_a": a, "agent_b": b, "index": i, "seed": 5, "a_first": i % 2 == 0,
              "opening_plies": 2} for i in range(16)]
    one = {t["index"]: play_game(game, agent_a, agent_b, t["index"], t["seed"], t["a_first"], 2) for t in tasks}
    stats = {}
    many = {t["index"]: r for t, r in batched.run_batched(tasks, 16, stats=stats)}
    assert stats["calls"] < stats["states"]
    m1, r1 = mean_ci([r.a_score for r in one.values()])
    m2, r2 = mean_ci([r.a_score for r in many.values()])
    assert abs(m1 - m2) <= min(r1, r2) + 1e-9 or abs(m1 - m2) <= 1e-9, (m1, r1, m2, r2)
    same = sum(one[i].moves == many[i].moves for i in one)
    assert same >= 12, same
