"""The Ray path: same work units, same results as the process pool (a local Ray cluster)."""
import sqlite3
import sys

import pytest

from descent.distributed import RayUnavailable, ray_runner

ray = pytest.importorskip("ray")

from test_protocol import fake_run  # noqa: E402,F401  (the fixture)


@pytest.fixture(scope="module")
def cluster():
    from descent import distributed
    distributed.init("local")
    yield
    ray.shutdown()


def test_missing_ray_is_one_clear_error(monkeypatch):
    from descent import distributed
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RayUnavailable, match=r"pip install -e '\.\[ray\]'"):
        distributed.init("auto")


def _rows(db):
    with sqlite3.connect(db) as c:
        return sorted(c.execute("SELECT match_key, moves, result, score FROM matches WHERE stage='evaluate'"))


def test_evaluation_on_ray_matches_the_process_pool(cluster, fake_run, tmp_path):
    from descent.tournament import evaluate, rank
    if not (fake_run / "pools.json").exists():
        rank(fake_run, "tic_tac_toe", "minimax:iterations=10,decision=safe", 2, 2, 1, 0, progress=False)
    args = dict(run_dir=fake_run, game="tic_tac_toe", algorithms=["minimax", "minibal_plus"],
                budgets=["iterations=20"], opponent_budget="iterations=10", games_per_pair=2, seed=4,
                progress=False)
    n_pool = evaluate(**args, workers=2, db_path=tmp_path / "pool.db")
    n_ray = evaluate(**args, workers=1, db_path=tmp_path / "ray.db", ray_address="local")
    assert n_pool == n_ray == 2 * 1 * 2 * 2 * 2
    assert _rows(tmp_path / "pool.db") == _rows(tmp_path / "ray.db")
    # resuming on Ray skips everything already there
    assert evaluate(**args, workers=1, db_path=tmp_path / "ray.db", ray_address="local") == 0


@pytest.mark.parametrize("ship", [False, True])
def test_population_training_on_ray(cluster, tmp_path, ship):
    from test_ray_sync import tiny_cfg
    from training.run import run_training
    cfg = tiny_cfg(tmp_path)
    run = tmp_path / "run"
    records = []
    # game budgets (max_games), never a time budget's outcome: 3 games each, then a finished run
    results = run_training("tic_tac_toe", cfg, 2, 3600.0, [("0.001s", 0.001)], 1, run, 0,
                           progress=False, max_games=3, echo=records.append,
                           remote=ray_runner("local", ship))
    assert [r["milestones_done"] for r in results] == [["0.001s"], ["0.001s"]]
    assert [r["games"] for r in results] == [3, 3]
    for m in (0, 1):
        assert (run / f"member_{m:02d}" / "milestone_0.001s.weights.h5").exists()
        assert (run / f"member_{m:02d}" / "latest.h5").exists()
    assert any("member 1 game" in r for r in records)
    # rerun of a finished run (budget reached): nothing more to do, counters unchanged
    again = run_training("tic_tac_toe", cfg, 2, 0.002, [("0.001s", 0.001), ("0.002s", 0.002)], 1,
                         run, 0, progress=False, echo=records.append,
                         remote=ray_runner("local", ship))
    assert [r["games"] for r in again] == [r["games"] for r in results]


@pytest.mark.parametrize("spec", ["examples.connect_four:ConnectFour", "openspiel:tic_tac_toe"])
def test_a_python_or_openspiel_game_plays_on_ray_as_in_the_process_pool(spec):
    """A game written in Python reaches Ray's workers by its spec (a module:Class named on the
    command line is imported there too): the same seeded games as the process pool's."""
    import re
    import subprocess
    from pathlib import Path
    if spec.startswith("openspiel:"):
        pytest.importorskip("pyspiel")
    root = Path(__file__).resolve().parent.parent
    args = [sys.executable, "-m", "descent", "match", spec, "--first", "minimax:iterations=20",
            "--second", "mcts:iterations=20", "--games", "4", "--seed", "2", "--verbose"]
    outs = []
    for extra in (["--workers", "2"], ["--ray", "local"]):
        r = subprocess.run(args + extra, cwd=root, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        outs.append(sorted(re.findall(r"game \d+: [^\r\n]*", r.stdout)))
    assert len(outs[0]) == 4 and outs[0] == outs[1]
