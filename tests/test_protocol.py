"""Ranking, balancing evaluation, results database and reports (the Minibal protocol)."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from descent.ratings import fit
from descent.stats import MatchSummary, mean_ci

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")


def descent(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout)


def test_confidence_radii_on_known_data():
    m, r = mean_ci([1, -1, 0, 1])
    # mean 0.25, sample variance 0.9167, radius 1.96 * sqrt(0.9167 / 4)
    assert m == pytest.approx(0.25) and r == pytest.approx(1.959964 * np.sqrt(0.9166667 / 4), rel=1e-5)
    s = MatchSummary.from_results([1, 1, 0, -1, 1], [0.5, 0.7, 0.0, -0.4, 0.9])
    assert (s.games, s.wins, s.draws, s.losses) == (5, 3, 1, 1)
    assert s.gain == pytest.approx(0.4) and s.score == pytest.approx(0.34)
    assert mean_ci([1, 1, 1])[1] == 0.0


def test_bradley_terry_recovers_the_true_order():
    rng = np.random.default_rng(3)
    true = np.array([0.9, -1.2, 0.1, 1.6, -0.5, 0.4])
    games = []
    for _ in range(3000):
        i, j = rng.choice(len(true), 2, replace=False)
        p = 1 / (1 + np.exp(-(true[i] - true[j])))
        u = rng.random()
        games.append((i, j, 1.0 if u < p * 0.9 else (0.5 if u < p * 0.9 + 0.1 else 0.0)))
    r, radii = fit(len(true), games)
    assert list(np.argsort(r)) == list(np.argsort(true))
    assert np.all(radii > 0) and np.all(radii < 0.3)
    assert abs(r.mean()) < 1e-9


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    """A run directory with four members, each with an early and a final checkpoint (untrained
    networks of different seeds: enough to exercise the protocol quickly)."""
    from training.network import build_model, save_weights, write_json
    run = tmp_path_factory.mktemp("run")
    cfg = {"network": {"filters": 4, "blocks": 1, "head_units": 8}}
    write_json(run / "run.json", {"game": "tic_tac_toe", "config": cfg, "seed": 0, "format": "descent-run-1"})
    for m in range(4):
        d = run / f"member_{m:02d}"
        d.mkdir()
        for name, secs, seed in (("early", 1.0, 100 + m), ("final", 2.0, m)):
            model = build_model((3, 3, 2), 4, 1, 8, seed=seed)
            save_weights(d / f"milestone_{name}.weights.h5", model,
                         {"game": "tic_tac_toe", "member": m, "milestone": name, "milestone_seconds": secs,
                          "network": cfg["network"], "planes_shape": [3, 3, 2]})
    return run


def test_rank_writes_pools(fake_run):
    r = descent("rank", "tic_tac_toe", "--run", str(fake_run), "--agent",
                "minimax:iterations=10,decision=safe", "--games-per-pair", "2", "--opening-plies", "2")
    assert r.returncode == 0, r.stderr
    pools = json.loads((fake_run / "pools.json").read_text())
    assert len(pools["high"]) == 2 and len(pools["low"]) == 2
    assert {p["net"].split("@")[1] for p in pools["high"]} == {"final"}
    assert {p["net"].split("@")[1] for p in pools["low"]} == {"early"}
    assert [x["rank"] for x in pools["ranking"]] == [1, 2, 3, 4]
    assert len(pools["early_vs_final"]) == 2
    assert "high-level pool" in r.stdout and "Elo" in r.stdout
    with sqlite3.connect(fake_run / "results.db") as c:
        assert c.execute("SELECT COUNT(*) FROM matches WHERE stage='rank'").fetchone()[0] == 6 * 2
    # rerun: nothing new is played
    r2 = descent("rank", "tic_tac_toe", "--run", str(fake_run), "--agent",
                 "minimax:iterations=10,decision=safe", "--games-per-pair", "2", "--opening-plies", "2")
    assert r2.returncode == 0
    with sqlite3.connect(fake_run / "results.db") as c:
        assert c.execute("SELECT COUNT(*) FROM matches WHERE stage='rank'").fetchone()[0] == 12


def test_evaluate_resumes_after_a_kill_without_duplicates(fake_run):
    if not (fake_run / "pools.json").exists():
        test_rank_writes_pools(fake_run)
    args = ["evaluate", "tic_tac_toe", "--run", str(fake_run), "--iterations", "3,30",
            "--algorithms", "minimax,minibal_n,minibal_plus", "--algorithm", "minibal_plus:proven_wins=true",
            "--opponent-time", "iterations=10"]
    expected = 4 * 2 * 2 * 2 * 2          # algorithms x budgets x high x low x seats
    p = subprocess.Popen([sys.executable, "-m", "descent", *args], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=ENV)
    db = fake_run / "results.db"

    def count():
        try:
            with sqlite3.connect(db, timeout=5) as c:
                return c.execute("SELECT COUNT(*) FROM matches WHERE stage='evaluate'").fetchone()[0]
        except sqlite3.Error:
            return 0
    deadline = time.time() + 240
    while count() < 5 and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    partial = count()
    assert 0 < partial < expected
    r = descent(*args)
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(db) as c:
        keys = [k for (k,) in c.execute("SELECT match_key FROM matches WHERE stage='evaluate'")]
    assert len(keys) == expected == len(set(keys))
    r = descent(*args)
    assert "0 match(es) played" in r.stdout
    rep = descent("report", "--run", str(fake_run), "--out", str(fake_run / "report"))
    assert rep.returncode == 0, rep.stderr
    assert "minibal_plus:proven_wins=true" in rep.stdout
    assert (fake_run / "report" / "tic_tac_toe_gain.png").stat().st_size > 5000


def test_report_renders_from_a_fixture_database(tmp_path):
    from descent.report import make_report
    from descent.results import ResultsDB
    rng = np.random.default_rng(0)
    with ResultsDB(tmp_path / "results.db") as db:
        for game in ("reversi(size=6)", "breakthrough(rows=6,cols=6)"):
            for alg, bias in (("minimax", 0.9), ("minibal_plus", 0.0), ("minibal_n", -0.6)):
                for budget in ("time=0.01", "time=0.1", "time=1"):
                    for k in range(20):
                        b = int(np.clip(np.round(bias + rng.normal(0, 0.6)), -1, 1))
                        db.insert({"match_key": f"evaluate|{game}|{alg}|{budget}|{k}", "stage": "evaluate",
                                   "game": game, "algorithm": alg, "budget": budget, "agent_a": alg,
                                   "agent_b": "minimax", "a_first": k % 2, "moves": "", "result": b,
                                   "score": 0.3 * b, "a_result": b, "a_score": 0.3 * b, "plies": 30})
        assert not db.insert({"match_key": "evaluate|reversi(size=6)|minimax|time=1|0", "stage": "evaluate",
                              "game": "x", "agent_a": "a", "agent_b": "b", "a_first": 1, "moves": "",
                              "result": 0, "score": 0, "a_result": 0, "a_score": 0, "plies": 1})
    rep = make_report([tmp_path / "results.db"], tmp_path / "out")
    assert rep["matches"] == 2 * 3 * 3 * 20
    assert len(rep["figures"]) == 6           # two games and their average, gain and score each
    for f in rep["figures"]:
        assert Path(f).stat().st_size > 5000
    lines = rep["table"].splitlines()
    assert any(l.startswith("average of 2 game(s)") and "minibal_plus" in l for l in lines)
    csv = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert csv[0].startswith("game,algorithm,budget,games,gain") and len(csv) == 1 + 2 * 9 + 9


def test_protocol_errors_are_one_line(tmp_path):
    r = descent("rank", "tic_tac_toe", "--run", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "no training run here" in r.stderr and r.stderr.count("\n") == 1
    r = descent("evaluate", "tic_tac_toe", "--run", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "pools.json missing" in r.stderr
    r = descent("report", "--run", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "no results database" in r.stderr


def test_pipeline_end_to_end(tmp_path):
    out = tmp_path / "run"
    r = descent("pipeline", "tic_tac_toe", "--population", "2", "--budget", "3s", "--milestones", "1s,3s",
                "--workers", "1", "--rank-agent", "minimax:iterations=10,decision=safe",
                "--iterations", "3,20", "--opponent-time", "iterations=10", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "[4/4] report" in r.stdout and "minibal_plus" in r.stdout
    assert (out / "report" / "tic_tac_toe_gain.png").exists()
    with sqlite3.connect(out / "results.db") as c:
        n = c.execute("SELECT COUNT(*) FROM matches WHERE stage='evaluate'").fetchone()[0]
    assert n == 3 * 2 * 1 * 1 * 2
