"""Training: a tiny run trains, writes milestones, survives SIGKILL, refuses a second process,
and reports corrupt files by name. Small configs, seconds each."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import games

TINY = """
[game]
spec = "tic_tac_toe"
[network]
filters = 8
blocks = 1
head_units = 16
[selfplay]
iterations = 20
[training]
replay_games = 30
min_sample = 64
batch_size = 32
learning_rate = 0.003
[run]
population = 1
budget = "6s"
milestones = "2s,6s"
"""

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")


def descent(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout)


@pytest.fixture
def tiny_config(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p


def log_records(run: Path, member: int = 0):
    path = run / f"member_{member:02d}" / "log.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_inference_matches_the_model():
    from training.network import Inference, build_model
    info = games.load("reversi(size=6)")
    model = build_model(info.planes_shape, filters=8, blocks=1, head_units=8, seed=1)
    inf = Inference(model)
    x = np.random.default_rng(0).integers(0, 2, (17, 6, 6, 2)).astype(np.float32)
    np.testing.assert_allclose(inf(x), model(x).numpy().reshape(-1), atol=1e-4)
    # and inside the search: the evaluator sees the same values as the model on the children
    from search_ext.bestfirst import BestFirstSearch
    b = BestFirstSearch(info, evaluator=inf.evaluator())
    s = info.new_state()
    b.search(s, iterations=1)
    for row in b.analyse(s):
        child = s.copy()
        child.push(row["action"])
        v = float(model(child.encode_planes()[None]).numpy()[0, 0])
        assert row["value"] == pytest.approx(-v, abs=1e-4)   # child mover is the opponent


def test_tree_learning_examples():
    from search_ext.bestfirst import BestFirstSearch
    info = games.load("tic_tac_toe")
    b = BestFirstSearch(info, descent=True)
    s = info.new_state()
    b.search(s, iterations=30)
    x, y = b.collect_examples(s)
    assert len(x) == len(y) > 30 and x.shape[1:] == (3, 3, 2)
    assert np.all(np.abs(y) <= 1)
    # the root comes first with its backed-up value from the mover's point of view
    assert y[0] == pytest.approx(b.root_info(s)["value"])
    x2, y2 = b.collect_examples(s)
    np.testing.assert_array_equal(x, x2)


def test_selfplay_game_is_reproducible():
    from search_ext.bestfirst import BestFirstSearch
    from training.selfplay import play_game
    info = games.load("tic_tac_toe")
    b = BestFirstSearch(info, descent=True)
    g1 = play_game(info, b, 20, 0.0, 0.1, -1.0, 5)
    g2 = play_game(info, b, 20, 0.0, 0.1, -1.0, 5)
    assert g1["moves"] == g2["moves"] and g1["plies"] == len(g1["moves"])
    np.testing.assert_array_equal(g1["y"], g2["y"])


def test_train_kill_resume(tmp_path, tiny_config):
    run = tmp_path / "run"
    args = ["train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run)]
    p = subprocess.Popen([sys.executable, "-m", "descent", *args], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=ENV)
    deadline = time.time() + 120
    while len(log_records(run)) < 8 and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    before = log_records(run)
    assert len(before) >= 8, "the run did not get going"
    # a second process is refused while a run holds the lock
    from training.run import RunLock
    with RunLock(run):
        r = descent(*args)
    assert r.returncode == 2 and "another process is training this run" in r.stderr
    assert r.stderr.count("\n") == 1
    # rerun: continues and finishes
    r = descent(*args)
    assert r.returncode == 0, r.stderr
    after = log_records(run)
    ids = [rec["game"] for rec in after]
    assert ids == list(range(1, len(ids) + 1)), "game counter must be continuous, no duplicates"
    assert after[-1]["train_seconds"] >= 6.0
    times = [rec["train_seconds"] for rec in after]
    assert times == sorted(times)
    mdir = run / "member_00"
    for ms in ("2s", "6s"):
        meta = json.loads((mdir / f"milestone_{ms}.json").read_text())
        assert meta["milestone"] == ms and meta["game"] == "tic_tac_toe"
        assert (mdir / f"milestone_{ms}.weights.h5").exists()
    from training.network import read_meta
    state = read_meta(mdir / "latest.h5")
    assert state["counters"]["games"] == len(ids)
    assert not list(run.rglob(".*.tmp*")), "temporary files left behind"
    replay_ids = sorted(int(p.stem[1:]) for p in (mdir / "replay").glob("g*.h5"))
    assert replay_ids == list(range(max(1, len(ids) - 30 + 1), len(ids) + 1))
    # the loss goes down as the network learns tic-tac-toe's values
    losses = [rec["loss"] for rec in after if rec["loss"] == rec["loss"]]
    k = max(3, len(losses) // 4)
    assert np.mean(losses[-k:]) < np.mean(losses[:k])
    # listing
    r = descent("checkpoints", "--out", str(run))
    assert r.returncode == 0 and "milestone_6s.weights.h5" in r.stdout
    # rerunning a finished run does nothing more
    r = descent(*args)
    assert r.returncode == 0 and log_records(run) == after


def test_corrupt_files_are_named(tmp_path, tiny_config):
    run = tmp_path / "run"
    args = ["train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run), "--budget", "2s",
            "--milestones", "2s"]
    assert descent(*args).returncode == 0
    latest = run / "member_00" / "latest.h5"
    data = latest.read_bytes()
    latest.write_bytes(data[: len(data) // 2])
    args[-3:] = ["4s", "--milestones", "4s"]
    r = descent(*args)
    assert r.returncode == 2 and str(latest) in r.stderr and "Traceback" not in r.stderr
    latest.write_bytes(data)
    replay = sorted((run / "member_00" / "replay").glob("g*.h5"))[-1]
    rdata = replay.read_bytes()
    replay.write_bytes(rdata[:100])
    r = descent(*args)
    assert r.returncode == 2 and str(replay) in r.stderr
    replay.write_bytes(rdata)
    milestone = run / "member_00" / "milestone_2s.weights.h5"
    from training.network import CheckpointError, build_model, load_weights
    model = build_model((3, 3, 2), 8, 1, 16)
    load_weights(milestone, model)
    milestone.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=str(milestone)):
        load_weights(milestone, model)


def test_run_refuses_another_config(tmp_path, tiny_config):
    run = tmp_path / "run"
    args = ["train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run), "--budget", "1s",
            "--milestones", "1s", "--max-games", "1"]
    assert descent(*args).returncode == 0
    other = tmp_path / "other.toml"
    other.write_text(TINY.replace("filters = 8", "filters = 16"))
    r = descent("train", "tic_tac_toe", "--config", str(other), "--out", str(run), "--budget", "1s",
                "--milestones", "1s")
    assert r.returncode == 2 and "another configuration" in r.stderr


@pytest.mark.parametrize("args, fragment", [
    (["--budget", "soon"], "bad duration 'soon'"),
    (["--budget", "10s", "--milestones", "5s,20s"], "beyond the budget"),
])
def test_bad_train_options(tmp_path, tiny_config, args, fragment):
    r = descent("train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(tmp_path / "r"), *args)
    assert r.returncode == 2 and fragment in r.stderr and r.stderr.count("\n") == 1


def test_parallel_members(tmp_path, tiny_config):
    run = tmp_path / "run"
    r = descent("train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run),
                "--population", "2", "--workers", "2", "--budget", "2s", "--milestones", "2s")
    assert r.returncode == 0, r.stderr
    for m in (0, 1):
        assert (run / f"member_{m:02d}" / "milestone_2s.weights.h5").exists()
    w0 = (run / "member_00" / "latest.h5").read_bytes()
    w1 = (run / "member_01" / "latest.h5").read_bytes()
    assert w0 != w1       # different seeds, different networks
