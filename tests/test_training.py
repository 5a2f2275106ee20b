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


def pool_game(spec, iterations, seed=1):
    """One self-play game of the pool (one game in flight), greedy."""
    from search_ext.selfplay import SelfPlayPool
    info = games.load(spec)
    seeds, got = [seed], []
    SelfPlayPool(info, lambda b: np.zeros(len(b), np.float32), iterations=iterations).run(
        lambda: (seeds.pop(), 0.0, 0.0, None) if seeds else None, got.append)
    return got[0]


def test_tree_learning_examples():
    g = pool_game("tic_tac_toe", 30)
    x, y = g["x"], g["y"]
    assert len(x) == len(y) > 30 and x.shape[1:] == (3, 3, 2)
    assert np.all(np.abs(y) <= 1)
    g2 = pool_game("tic_tac_toe", 30)
    np.testing.assert_array_equal(x, g2["x"])
    np.testing.assert_array_equal(y, g2["y"])


def test_selfplay_game_is_reproducible():
    """Two pools given the same seeds play the same games (moves, examples, root values), and
    another seed plays another game (so the check can fail)."""
    from search_ext.selfplay import SelfPlayPool
    info = games.load("tic_tac_toe")
    w = np.random.default_rng(7).normal(size=int(np.prod(info.planes_shape))) / 4

    def net(batch):
        return np.tanh(np.asarray(batch, np.float64).reshape(len(batch), -1) @ w).astype(np.float32)

    def play(seeds):
        queue = [(s, 0.3, -1.0, s) for s in reversed(seeds)]
        out = []
        SelfPlayPool(info, net, iterations=20, games_in_flight=2).run(
            lambda: queue.pop() if queue else None, out.append)
        return {g["tag"]: g for g in out}

    first, second = play([5, 6]), play([5, 6])
    for seed in (5, 6):
        g1, g2 = first[seed], second[seed]
        assert g1["moves"] == g2["moves"] and g1["plies"] == len(g1["moves"]) > 0
        np.testing.assert_array_equal(g1["x"], g2["x"])
        np.testing.assert_array_equal(g1["y"], g2["y"])
        np.testing.assert_array_equal(g1["root_values"], g2["root_values"])
    others = play(list(range(7, 17)))
    assert any(g["moves"] != first[5]["moves"] for g in others.values())


def tensorboard_steps(mdir: Path) -> dict:
    """step -> sorted list of the scalar tags the event files hold for it (repeats kept)."""
    from training.trainer import _logged_scalars
    import tensorflow as tf
    from tensorflow.core.util import event_pb2
    out = {}
    for path in sorted((mdir / "tensorboard").glob("events.out.tfevents.*")):
        for raw in tf.data.TFRecordDataset(str(path)):
            ev = event_pb2.Event.FromString(raw.numpy())
            for v in ev.summary.value:
                out.setdefault(int(ev.step), []).append(v.tag)
    assert set(_logged_scalars(mdir / "tensorboard")) == {(s, t) for s, ts in out.items() for t in ts}
    return {s: sorted(t) for s, t in out.items()}


def game_scalars(mdir: Path) -> dict:
    """``tensorboard_steps`` restricted to the per-game scalars (``SCALARS``; the progress scalars
    of ``training.progress`` are written by time, not per game)."""
    from training.trainer import SCALARS
    per_step = {s: [t for t in tags if t in SCALARS] for s, tags in tensorboard_steps(mdir).items()}
    return {s: tags for s, tags in per_step.items() if tags}


def test_train_kill_resume(tmp_path, tiny_config):
    """Kills aimed at exact points (DESCENT_CRASH_AT, a SIGKILL of the process itself) with game
    budgets: every counted game keeps exactly one log line and one set of TensorBoard scalars,
    temporary files of killed writes are removed, and the run continues without duplicates."""
    from training.network import read_meta
    from training.trainer import SCALARS
    run = tmp_path / "run"
    mdir = run / "member_00"
    # the thread learner: one training pass per game whatever the machine's load (the async one
    # skips passes when self-play is ahead, so its losses per game depend on speed)
    args = ["train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run),
            "--budget", "1h", "--milestones", "0.001s,1h", "--learner", "thread"]

    def train(games, crash=None):
        env = dict(ENV, DESCENT_CRASH_AT=crash) if crash else ENV
        return subprocess.run([sys.executable, "-m", "descent", *args, "--max-games", str(games)],
                              capture_output=True, text=True, env=env, timeout=300)

    def counted():
        return read_meta(mdir / "latest.h5")["counters"]["games"]

    # 1. killed after game 3 is saved (counted) but before its log line and scalars
    r = train(5, "state_saved:3")
    assert r.returncode == -signal.SIGKILL
    assert counted() == 3 and [rec["game"] for rec in log_records(run)] == [1, 2]
    pending = read_meta(mdir / "latest.h5")["record"]
    assert pending["game"] == 3
    assert (mdir / "milestone_0.001s.weights.h5").exists()
    # a second process is refused while a run holds the lock
    from training.run import RunLock
    with RunLock(run):
        r = descent(*args)
    assert r.returncode == 2 and "another process is training this run" in r.stderr
    assert r.stderr.count("\n") == 1
    # leftovers of killed writes elsewhere (a json, a replay file, run.json's), by a dead writer
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    planted = [mdir / f".milestone_1h.json.tmp{dead.pid}",
               mdir / "replay" / f".g00000009.h5.tmp{dead.pid}", run / f".run.json.tmp{dead.pid}"]
    for p in planted:
        p.write_bytes(b"partial")
    # 2. resumes (game 3's line comes back from the state), killed inside the write of game 5's
    # state: its temporary file stays behind
    r = train(5, "tmp_written.latest.h5:2")
    assert r.returncode == -signal.SIGKILL
    assert counted() == 4 and [rec["game"] for rec in log_records(run)] == [1, 2, 3, 4]
    assert log_records(run)[2] == pending
    assert not any(p.exists() for p in planted)
    assert len(list(mdir.glob(".latest.h5.tmp*"))) == 1
    # 3. resumes and plays to 30 games
    r = train(26)
    assert r.returncode == 0, r.stderr
    after = log_records(run)
    ids = [rec["game"] for rec in after]
    assert ids == list(range(1, 31)), "one line per counted game, no duplicates"
    assert counted() == 30
    assert game_scalars(mdir) == {g: sorted(SCALARS) for g in ids}, \
        "every game's scalars exactly once"
    times = [rec["train_seconds"] for rec in after]
    assert times == sorted(times)
    assert not list(run.rglob(".*.tmp*")), "temporary files left behind"
    replay_ids = sorted(int(p.stem[1:]) for p in (mdir / "replay").glob("g*.h5"))
    assert replay_ids == list(range(1, 31))
    # the loss goes down as the network learns tic-tac-toe's values (a game budget, not time)
    losses = [rec["loss"] for rec in after if rec["loss"] is not None]
    assert len(losses) == 30
    assert np.mean(losses[-8:]) < 0.9 * np.mean(losses[:8])
    # a finished run (budget reached): rerunning it does nothing more
    args[args.index("--budget") + 1] = "0.002s"
    args[args.index("--milestones") + 1] = "0.001s,0.002s"
    r = train(0)
    assert r.returncode == 0, r.stderr
    assert log_records(run) == after and counted() == 30
    meta = json.loads((mdir / "milestone_0.002s.json").read_text())
    assert meta["milestone"] == "0.002s" and meta["game"] == "tic_tac_toe" and meta["games"] == 30
    # the CPU seconds behind a checkpoint: a running total across the kills, the milestone's the
    # log's at its last game
    cpu = [rec["cpu_seconds"] for rec in after]
    assert cpu == sorted(cpu) and cpu[0] > 0
    from training.logfiles import cpu_seconds_through
    assert meta["cpu_seconds"] == cpu[-1] == cpu_seconds_through(mdir, 30)
    r = descent("checkpoints", "--out", str(run))
    assert r.returncode == 0 and "milestone_0.002s.weights.h5" in r.stdout


def test_a_budget_shorter_than_a_game_still_trains_to_its_floor(tmp_path, tiny_config):
    """A machine far too slow for its budget (issue 58, item 8), made so on every machine: a budget
    of 2 ms, shorter than any game. Before the floor, every game in flight was dropped at the
    budget and the member ended with 0 games; with ``--min-games 5`` it plays at least 5 games
    (games started before the learner counted the first one may add a few), its early milestone
    (half the budget) waits for 3 and its final one for 5, and it is done."""
    from training.trainer import milestone_floor
    assert [milestone_floor(5, s, 0.002) for s in (0.001, 0.002)] == [3, 5]
    assert milestone_floor(0, 1.0, 2.0) == 0 and milestone_floor(16, 30, 120) == 4
    assert milestone_floor(1, 0.001, 3600) == 1          # a floor never asks for 0 games
    run = tmp_path / "run"
    mdir = run / "member_00"
    r = descent("train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run),
                "--budget", "0.002s", "--milestones", "0.001s,0.002s", "--min-games", "5",
                "--learner", "thread")
    assert r.returncode == 0, r.stderr
    assert "at least 5 game(s)" in r.stdout
    status = json.loads((mdir / "status.json").read_text())
    games = status["games"]
    assert games >= 5 and status["done"] is True and status["min_games"] == 5
    assert [rec["game"] for rec in log_records(run)] == list(range(1, games + 1))
    early = json.loads((mdir / "milestone_0.001s.json").read_text())
    final = json.loads((mdir / "milestone_0.002s.json").read_text())
    assert early["games"] == 3 and final["games"] == 5
    # finished: a rerun trains nothing more
    r = descent("train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run),
                "--budget", "0.002s", "--milestones", "0.001s,0.002s", "--min-games", "5")
    assert r.returncode == 0, r.stderr
    assert len(log_records(run)) == games
    # a config's [run] min_games is the default
    cfg = tmp_path / "floor.toml"
    cfg.write_text(tiny_config.read_text().replace('milestones = "2s,6s"', 'milestones = "2s,6s"\nmin_games = 2'))
    r = descent("train", "tic_tac_toe", "--config", str(cfg), "--out", str(tmp_path / "run2"),
                "--budget", "0.002s", "--milestones", "0.001s,0.002s")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "run2" / "member_00" / "status.json").read_text())["games"] >= 2
    r = descent("train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(tmp_path / "run3"),
                "--min-games", "-1")
    assert r.returncode == 2 and "Error: Invalid value for '--min-games'" in r.stderr


def test_repair_logs(tmp_path):
    """Resume repair in place: a torn last line, a repeated line and a line past the counter go, the
    counted game's record saved in the state comes back, and exactly the scalars the event files
    lack are written (here: game 2's line exists but its scalars were never written)."""
    import tensorflow as tf
    from training.trainer import SCALARS, repair_logs
    mdir = tmp_path / "member_00"
    mdir.mkdir()

    def rec(g):
        return {"member": 0, "game": g, "plies": 5, "result": 1, "examples": 10, "loss": 0.5,
                "value_error": 0.25, "seconds": 2.0, "e": 0.1}
    writer = tf.summary.create_file_writer(str(mdir / "tensorboard"))
    with writer.as_default(step=1):
        for k in SCALARS:
            tf.summary.scalar(k, 1.0)
    writer.flush()
    lines = [json.dumps(rec(1)), json.dumps(rec(2)), json.dumps(rec(2)), json.dumps(rec(5))]
    (mdir / "log.jsonl").write_text("\n".join(lines) + '\n{"member": 0, "ga')
    added = repair_logs(mdir, 3, rec(3), writer)
    assert added == [rec(3)]
    assert [r["game"] for r in log_records(tmp_path)] == [1, 2, 3]
    assert (mdir / "log.jsonl").read_text().endswith("\n")
    assert tensorboard_steps(mdir) == {g: sorted(SCALARS) for g in (1, 2, 3)}
    assert repair_logs(mdir, 3, rec(3), writer) == []          # nothing more to do
    assert tensorboard_steps(mdir) == {g: sorted(SCALARS) for g in (1, 2, 3)}


def test_corrupt_files_are_named(tmp_path, tiny_config):
    run = tmp_path / "run"
    # a game budget (--max-games), not a time one: the corrupted replay file below needs a game,
    # which may take more than a few seconds on a loaded machine; each rerun below goes on training
    # (the 1h budget is far away), so it reads what was corrupted
    args = ["train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run), "--budget", "1h",
            "--milestones", "0.001s", "--max-games", "1"]
    r = descent(*args)
    assert r.returncode == 0, r.stderr
    latest = run / "member_00" / "latest.h5"
    data = latest.read_bytes()
    latest.write_bytes(data[: len(data) // 2])
    r = descent(*args)
    assert r.returncode == 2 and str(latest) in r.stderr and "Traceback" not in r.stderr
    latest.write_bytes(data)
    replay = sorted((run / "member_00" / "replay").glob("g*.h5"))[-1]
    rdata = replay.read_bytes()
    replay.write_bytes(rdata[:100])
    r = descent(*args)
    assert r.returncode == 2 and str(replay) in r.stderr
    replay.write_bytes(rdata)
    milestone = run / "member_00" / "milestone_0.001s.weights.h5"
    from training.network import CheckpointError, build_model, load_weights
    model = build_model((3, 3, 2), 8, 1, 16)
    load_weights(milestone, model)
    milestone.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=str(milestone)):
        load_weights(milestone, model)


def test_run_refuses_another_config(tmp_path, tiny_config):
    """Another network, self-play or training config is refused; the runtime options (here from
    the command line, over the config) may change between reruns."""
    run = tmp_path / "run"
    # a game budget (--max-games), not a time one: a game may take seconds on a loaded machine
    args = ["train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run), "--budget", "1h",
            "--milestones", "1h", "--max-games", "1"]
    r = descent(*args, "--games-in-flight", "2", "--inference", "numpy", "--learner", "inline")
    assert r.returncode == 0, r.stderr
    r = descent(*args, "--games-in-flight", "3")
    assert r.returncode == 0, r.stderr
    first, second = log_records(run)
    assert (first["games_in_flight"], first["inference"]) == (2, "numpy")
    assert second["games_in_flight"] == 3
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


def _replay_with_games(tmp_path, sizes, shape=(3, 3, 2), seed=0):
    from training.replay import ReplayBuffer
    rng = np.random.default_rng(seed)
    replay = ReplayBuffer(tmp_path / "replay", len(sizes), shape)
    xs, ys = [], []
    for gid, n in enumerate(sizes, 1):
        x = rng.integers(0, 2, (n, *shape)).astype(np.float32)
        y = np.arange(sum(sizes[:gid - 1]), sum(sizes[:gid]), dtype=np.float32)   # y = global index
        replay.add(gid, x, y, np.zeros(n, np.int32), {"result": 0, "plies": 1})
        xs.append(x)
        ys.append(y)
    return replay, np.concatenate(xs), np.concatenate(ys)


def test_replay_sampling_fraction(tmp_path):
    """sigma of the window by index, uniform without replacement, at least min_sample, decoded
    exactly from the bit-packed memory."""
    from training.replay import bytes_per_example
    sizes = [300, 50, 650, 1000]
    replay, x_all, y_all = _replay_with_games(tmp_path, sizes)
    n = sum(sizes)
    assert replay.size == n and replay.nbytes == n * bytes_per_example((3, 3, 2)) == n * 7
    rng = np.random.default_rng(1)
    for fraction, min_size, k in ((0.04, 10, 80), (0.04, 128, 128), (0.5, 10, 1000), (1.0, 1, n),
                                  (0.001, 1, 2)):
        idx = replay.sample_indices(fraction, min_size, rng)
        assert len(idx) == k and len(np.unique(idx)) == k and idx.min() >= 0 and idx.max() < n
    # decoding: the planes and targets of exactly those examples
    idx = replay.sample_indices(0.1, 1, rng)
    x, y = replay.gather(idx)
    np.testing.assert_array_equal(y, idx.astype(np.float32))
    np.testing.assert_array_equal(x, x_all[idx])
    # uniform: every example is drawn with probability sigma (binomial bounds over 400 draws),
    # the games' shares follow their sizes, and the order is random
    counts = np.zeros(n)
    draws, fraction = 400, 0.04
    firsts = []
    for _ in range(draws):
        idx = replay.sample_indices(fraction, 1, rng)
        counts[idx] += 1
        firsts.append(idx[0])
    p = fraction
    sd = np.sqrt(draws * p * (1 - p))
    assert abs(counts.mean() - draws * p) < 1e-9          # exactly k = sigma * n per draw
    assert np.all(np.abs(counts - draws * p) < 5.5 * sd)  # no example favoured or starved
    bounds = np.cumsum([0] + sizes)
    for a, b in zip(bounds[:-1], bounds[1:]):
        share = counts[a:b].sum() / counts.sum()
        assert abs(share - (b - a) / n) < 0.01
    assert np.std(firsts) > 0.2 * n                       # the first index is not the smallest
    # the window slides: only the last `window` games are kept, in memory at once and on disk once
    # the state counting the new game is saved (trim_files)
    replay.add(5, x_all[:10], np.zeros(10, np.float32), np.zeros(10, np.int32), {})
    assert sorted(replay.games) == [2, 3, 4, 5] and replay.size == n - 300 + 10
    assert sorted(replay.files()) == [1, 2, 3, 4, 5]
    replay.trim_files()
    assert sorted(replay.files()) == [2, 3, 4, 5]


def test_replay_files_old_format_and_float_planes(tmp_path):
    """Version-1 files (float32 planes) still load (packed in memory when 0/1); planes that are not
    0/1 (tree_game's heuristic plane) stay float32; a bad packed file is named."""
    import h5py
    from training.network import CheckpointError
    from training.replay import ReplayBuffer
    rng = np.random.default_rng(0)
    d = tmp_path / "replay"
    d.mkdir()
    x1 = rng.integers(0, 2, (20, 3, 3, 2)).astype(np.float32)
    with h5py.File(d / "g00000001.h5", "w") as f:          # as the previous version wrote them
        f.create_dataset("x", data=x1, compression="lzf", chunks=True)
        f.create_dataset("y", data=np.linspace(-1, 1, 20, dtype=np.float32))
        f.create_dataset("ply", data=np.zeros(20, np.int32))
        f.attrs["game_id"] = 1
    replay = ReplayBuffer(d, 10, (3, 3, 2))
    replay.load(1)
    assert replay.games[1].packed and replay.nbytes == 20 * 7
    x, y = replay.gather(np.arange(20))
    np.testing.assert_array_equal(x, x1)
    xf = rng.normal(size=(5, 3, 3, 2)).astype(np.float32)
    replay.add(2, xf, np.zeros(5, np.float32), np.zeros(5, np.int32), {})
    assert not replay.games[2].packed
    again = ReplayBuffer(d, 10, (3, 3, 2))
    again.load(2)
    np.testing.assert_array_equal(again.gather(np.arange(20, 25))[0], xf)
    mixed = again.gather(np.array([24, 3, 20, 0]))[0]        # a window of packed and float games
    np.testing.assert_array_equal(mixed, np.stack([xf[4], x1[3], xf[0], x1[0]]))
    with h5py.File(d / "g00000002.h5", "r+") as f:
        f.attrs["format"] = "descent-replay-9"
        f.create_dataset("planes", data=np.zeros((5, 3), np.uint8))
    with pytest.raises(CheckpointError, match="g00000002.h5"):
        ReplayBuffer(d, 10, (3, 3, 2)).load(2)


def test_augmentation_in_the_trainer(tmp_path):
    """With augment on, every training example is a symmetric image of a replay example (target
    unchanged) and every symmetry of the game is used; with it off, the examples are unchanged."""
    from games.symmetry import transform_planes
    from training.trainer import training_batches
    shape = (6, 6, 2)
    replay, x_all, y_all = _replay_with_games(tmp_path, [200, 200], shape)
    syms = games.load("reversi(size=6)").symmetries
    assert len(syms) == 4
    rng = np.random.default_rng(3)
    idx = replay.sample_indices(0.5, 1, rng)
    used = set()
    seen = 0
    for bx, by in training_batches(replay, idx, 32, syms, True, rng):
        for xi, yi in zip(bx, by):
            orig = x_all[int(yi)]                      # y is the example's window index
            images = [s for s in syms if np.array_equal(xi, transform_planes(orig, s))]
            assert images, "an augmented example is not an image of its replay example"
            if not np.array_equal(xi, orig):
                used.update(images)
            seen += 1
    assert seen == len(idx)
    assert used == set(syms) - {0}, f"symmetries used: {sorted(used)}"
    for bx, by in training_batches(replay, idx, 32, syms, False, rng):
        np.testing.assert_array_equal(bx, x_all[by.astype(int)])


def test_tree_learning_targets_both_players():
    """The targets are from the mover's point of view for BOTH players: on a solved tic-tac-toe
    tree, a terminal state won by the player who just moved is < 0 for the mover, whoever won,
    and a state whose mover can complete a line at once is > 0, whoever is to move."""
    g = pool_game("tic_tac_toe", 20000)         # the first search solves the game
    x, y = g["x"], g["y"]
    lines = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
    checked = {("lost", "x"): 0, ("lost", "o"): 0, ("wins", "x"): 0, ("wins", "o"): 0}
    for planes, v in zip(x, y):
        mine, theirs = planes[..., 0].reshape(-1), planes[..., 1].reshape(-1)
        mover = "x" if mine.sum() == theirs.sum() else "o"
        if any(theirs[list(ln)].all() for ln in lines):            # the opponent just won
            assert v < 0, (planes, v)
            checked[("lost", mover)] += 1
        elif any(mine[list(ln)].sum() == 2 and not theirs[list(ln)].any() for ln in lines):
            assert v > 0, (planes, v)
            checked[("wins", mover)] += 1
    assert all(n > 0 for n in checked.values()), checked


def test_budget_stops_games_in_flight_and_writes_the_final_milestone(tmp_path):
    """A member whose budget runs out while games are in flight stops at once instead of finishing
    them: they are dropped and counted, the time counts, the final milestone is written and the
    member is done (budget 1e-9 s: out before the first round, on any machine)."""
    from descent.config import load_config
    from training.run import training_config
    from training.trainer import MemberJob, train_member
    cfg = training_config(load_config(Path(__file__).parents[1] / "configs" / "reversi.toml"))
    job = MemberJob(str(tmp_path), 0, "reversi(size=6)", cfg, 1e-9, [("final", 1e-9)], seed=0,
                    extra={"games_in_flight": 4, "inference": "numpy", "learner": "thread"})
    out = train_member(job)
    mdir = tmp_path / "member_00"
    assert out["games"] == 0 and out["abandoned_games"] == 4 and out["train_seconds"] >= 1e-9
    assert (mdir / "milestone_final.weights.h5").exists()
    status = json.loads((mdir / "status.json").read_text())
    assert status["done"] and status["abandoned_games"] == 4
    assert log_records(tmp_path) == []          # no game is logged that was not played out


def test_async_learner_never_blocks_self_play_and_trains_once_per_backlog():
    """learner = "async": every game is counted in order; a game that finds later games waiting is
    counted without a pass of its own, the last of the backlog trains for all."""
    import threading
    from training.trainer import _Learner
    entered, release = threading.Event(), threading.Event()
    seen = []

    def process(g, train=True):
        seen.append((g, train))
        if g == 1:
            entered.set()
            release.wait(30)
        return f"weights after {g}"

    learner = _Learner(process, "async")
    learner.submit(1)
    assert entered.wait(30)
    for g in (2, 3, 4):
        learner.submit(g)                 # returns at once: the learner is busy with game 1
    release.set()
    learner.close()
    assert seen == [(1, True), (2, False), (3, False), (4, True)]
    assert learner.skipped == 2 and learner.take_snapshot() == "weights after 4"


def test_async_learner_member_counts_every_game(tmp_path):
    from descent.config import load_config
    from training.run import training_config
    from training.trainer import MemberJob, train_member
    cfg = training_config(load_config(Path(__file__).parents[1] / "configs" / "tic_tac_toe.toml"))
    job = MemberJob(str(tmp_path), 0, "tic_tac_toe", cfg, 1e9, [], seed=0, max_games=6,
                    extra={"games_in_flight": 3, "inference": "numpy", "learner": "async"})
    out = train_member(job)
    recs = log_records(tmp_path)
    assert out["games"] == 6 and [r["game"] for r in recs] == list(range(1, 7))
    assert recs[-1]["trained"] and out["updates"] > 0
    assert all(np.isfinite(r["loss"]) for r in recs if r["trained"])
    # no NaN in the log (a game counted before the first pass has no loss: null)
    def refuse(token):
        raise AssertionError(f"{token} in log.jsonl")
    text = (tmp_path / "member_00" / "log.jsonl").read_text()
    assert all(json.loads(line, parse_constant=refuse) for line in text.splitlines())
    assert all(r["loss"] is None or np.isfinite(r["loss"]) for r in recs)


def test_progress_reads_wait_for_the_lock():
    """The trainer's shared state is read only under its lock: a budget check, a game start or a
    counters snapshot waits while the learner holds it, then sees the whole update."""
    import threading
    from training.trainer import _Progress
    p = _Progress.restore(0, {"games": 4, "train_seconds": 2.0, "milestones_done": ["a"]}, None)
    p.reset_clock()
    reads = {"timing": p.timing, "start_game": lambda: p.start_game(10.0, 0),
             "counters": p.counters, "games_counted": p.games_counted}
    for name, read in reads.items():
        got = []
        with p._lock:                                   # the learner in the middle of an update
            t = threading.Thread(target=lambda: got.append(read()))
            t.start()
            t.join(0.5)
            assert t.is_alive() and not got, f"{name} read the state without the lock"
        t.join(30)
        assert got, name
    assert p.counters()["games"] == 4 and p.start_game(10.0, 0) == (6, 2.0)   # 5 was started above
    assert p.start_game(2.0, 0) is None                 # the budget is spent


def test_budget_checks_see_whole_updates_under_the_async_learner(tmp_path, monkeypatch):
    """A member with the async learner: every budget check of the self-play thread reads the
    training time and the clock of the same counted game (each game adds to the training time
    exactly the clock's advance, so their difference never changes unless a read is torn).
    Self-play waits for game k-1 to be counted when game k ends, so the checks run beside the
    learner's updates whatever the machine's speed."""
    import threading
    from descent.config import load_config
    from training.run import training_config
    from training.trainer import MemberJob, MemberTrainer, _Progress, train_member
    seen, counted = [], []
    timing, count_game, on_game = _Progress.timing, _Progress.count_game, MemberTrainer.on_game
    cond = threading.Condition()

    def recording_timing(self):
        out = timing(self)
        seen.append((threading.current_thread().name, *out))
        return out

    def recording_count(self, *args):
        out = count_game(self, *args)
        with cond:
            counted.append(threading.current_thread().name)
            cond.notify_all()
        return out

    def pacing_on_game(self, g):
        on_game(self, g)
        with cond:
            assert cond.wait_for(lambda: len(counted) >= self.learner_games - 1, timeout=120)
        self.learner_games += 1
    monkeypatch.setattr(_Progress, "timing", recording_timing)
    monkeypatch.setattr(_Progress, "count_game", recording_count)
    monkeypatch.setattr(MemberTrainer, "on_game", pacing_on_game)
    monkeypatch.setattr(MemberTrainer, "learner_games", 1, raising=False)
    cfg = training_config(load_config(Path(__file__).parents[1] / "configs" / "tic_tac_toe.toml"))
    job = MemberJob(str(tmp_path), 0, "tic_tac_toe", cfg, 1e9, [], seed=0, max_games=8,
                    extra={"games_in_flight": 3, "inference": "numpy", "learner": "async"})
    assert train_member(job)["games"] == 8
    assert set(counted) == {"learner"} and len(counted) == 8
    assert {name for name, _, _ in seen} == {threading.main_thread().name}
    assert len({trained for _, trained, _ in seen}) >= 2, "the checks did not run beside the learner"
    offsets = [trained - clock for _, trained, clock in seen]
    assert max(offsets) - min(offsets) < 1e-6


def test_a_game_without_a_pass_logs_the_last_finite_loss_or_none():
    """No NaN in a record: before the first pass the loss is None; a resumed member keeps the
    loss of its saved record; a pass whose loss is not finite logs None."""
    import time as time_
    from training.trainer import _Progress
    fresh = _Progress.restore(0, None, None)
    fresh.reset_clock()
    assert fresh.count_game(1, 5, [], time_.perf_counter())["loss"] is None
    assert fresh.count_game(2, 5, [0.5, 0.25], time_.perf_counter())["loss"] == 0.375
    assert fresh.count_game(3, 5, [], time_.perf_counter())["loss"] == 0.375
    assert fresh.count_game(4, 5, [float("nan")], time_.perf_counter())["loss"] is None
    resumed = _Progress.restore(0, {"games": 3, "train_seconds": 1.0}, {"game": 3, "loss": 0.125})
    resumed.reset_clock()
    counted = resumed.count_game(4, 5, [], time_.perf_counter())
    assert counted["loss"] == 0.125 and counted["train_seconds"] > 1.0
    assert resumed.counters()["games"] == 4


# ---- issue 20: honest checkpoints, nothing bricked, nothing lost ---------------------------------

WINDOW = 4          # replay_games of the kill tests: small, so that every few games one leaves it


def strict_json(text: str, what: str):
    """``text`` parsed as strict JSON (NaN and infinities refused)."""
    def refuse(token):
        raise AssertionError(f"{what} holds {token}")
    return json.loads(text, parse_constant=refuse)


def strict_meta(path: Path) -> dict:
    import h5py
    with h5py.File(path, "r") as f:
        return strict_json(f.attrs["meta"], f"{path} meta")


def check_member(mdir: Path, final: bool = False) -> int:
    """Invariants after any kill (``final``: after a run that ended normally). Returns the counted
    games."""
    meta = strict_meta(mdir / "latest.h5")
    n = meta["counters"]["games"]
    for p in list(mdir.glob("*.json")):
        strict_json(p.read_text(), str(p))
    lines = (mdir / "log.jsonl").read_text().splitlines() if (mdir / "log.jsonl").exists() else []
    ids = [strict_json(line, "log.jsonl")["game"] for line in lines if line.strip()]
    assert ids == sorted(set(ids)) and all(g <= n for g in ids), f"duplicated or uncounted games {ids}"
    files = {int(p.stem[1:]) for p in (mdir / "replay").glob("g*.h5")}
    window = set(range(max(1, n - WINDOW + 1), n + 1))
    assert window <= files, f"counted game(s) {sorted(window - files)} of {n} have no replay file"
    if final:
        assert ids == list(range(1, n + 1))
        assert files == window
        assert not list(mdir.rglob(".*.tmp*")), "temporary files left behind"
        assert json.loads((mdir / "status.json").read_text())["games"] == n
    return n


# Every crash point a member passes (``grep -rn 'crash_point(' training``: the trainer's three and
# fileio's tmp_written / renamed.<file> / appended.<file>), each aimed at a moment of the chain
# below: each run resumes the previous kill and is killed at the next point. ``replay_written:1``
# and ``state_saved:1`` right after a resume are kills before the learner's first pass of that
# process (the async learner may count a game without a pass: the NaN case of issue 20).
KILL_CHAIN = [
    "renamed.milestone_0.001s.weights.h5:1",   # between a milestone's weights and its JSON
    "tmp_written.milestone_0.001s.json:1",     # (the resume writes the milestone again)
    "state_saved:1",                           # first game after a resume, counted, no log line
    "replay_written:1",                        # its replay file written, not counted
    "tmp_written:3",                           # inside some atomic write
    "tmp_written.latest.h5:2",
    "renamed.latest.h5:2",
    "replay_written:2",                        # by now past the window: a file must not be lost
    "appended.log.jsonl:2",
    "log_written:2",
    "tmp_written.status.json:1",               # at the end of the call
    "renamed.status.json:1",
]
# The other learner modes share every file write with the default (async) one; what differs is
# when the learner's passes and the counted state happen, so they run the points around those.
LEARNER_CHAIN = [
    "renamed.milestone_0.001s.weights.h5:1",
    "state_saved:1",
    "replay_written:1",
    "tmp_written.latest.h5:2",
    "replay_written:2",
    "log_written:2",
    "renamed.status.json:1",
]


def _kill_chain(tmp_path, mode, chain=KILL_CHAIN):
    run = tmp_path / "run"
    mdir = run / "member_00"
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY.replace("replay_games = 30", f"replay_games = {WINDOW}"))
    args = ["train", "tic_tac_toe", "--config", str(cfg), "--out", str(run), "--budget", "1h",
            "--milestones", "0.001s,1h", "--learner", mode, "--games-in-flight", "3",
            "--inference", "numpy", "--max-games", "3"]
    for crash in chain:
        r = subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                           env=dict(ENV, DESCENT_CRASH_AT=crash), timeout=300)
        assert r.returncode == -signal.SIGKILL, f"{crash}: not reached (rc {r.returncode}) {r.stderr}"
        assert "Traceback" not in r.stderr, r.stderr
        check_member(mdir)
    r = subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                       env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    n = check_member(mdir, final=True)
    assert n >= 3 * 3                   # at least the last call's games and those of the chain
    assert json.loads((mdir / "milestone_0.001s.json").read_text())["games"] >= 1
    from training.trainer import SCALARS
    assert game_scalars(mdir) == {g: sorted(SCALARS) for g in range(1, n + 1)}


@pytest.mark.parametrize("mode", ["async", pytest.param("thread", marks=pytest.mark.slow),
                                  pytest.param("inline", marks=pytest.mark.slow)])
def test_kill_and_resume_at_every_crash_point(tmp_path, mode):
    """SIGKILL at every crash point (the async learner; the learner-timing points for the thread
    and inline ones): every run resumes, no file holds NaN, no game is logged twice, every counted
    game of the window keeps its replay file, and the run ends with one log line and one set of
    scalars per game."""
    _kill_chain(tmp_path, mode, KILL_CHAIN if mode == "async" else LEARNER_CHAIN)


def test_replay_files_leave_the_window_only_once_the_state_counts(tmp_path):
    """The lost-game race of issue 20: game N+1's file written, N+1-window's deleted, then a kill
    before the state counting N+1 is saved left a window one game short on resume. Now the old
    file goes only in ``trim_files`` (after the state is saved)."""
    from training.replay import ReplayBuffer
    buf = ReplayBuffer(tmp_path / "replay", 3, (3, 3, 2))
    x = np.zeros((2, 3, 3, 2), np.float32)
    for g in range(1, 5):
        buf.add(g, x, np.zeros(2, np.float32), np.zeros(2, np.int32), {})
    assert sorted(buf.games) == [2, 3, 4]                   # out of the window in memory at once
    assert sorted(buf.files()) == [1, 2, 3, 4]              # the file waits for the state
    again = ReplayBuffer(tmp_path / "replay", 3, (3, 3, 2))
    assert again.load(3) == [] and sorted(again.games) == [1, 2, 3]     # a kill: game 4 uncounted
    assert sorted(again.files()) == [1, 2, 3]
    buf = ReplayBuffer(tmp_path / "replay", 3, (3, 3, 2))
    buf.load(3)
    buf.add(4, x, np.zeros(2, np.float32), np.zeros(2, np.int32), {})
    buf.trim_files()
    assert sorted(buf.files()) == [2, 3, 4]
    (tmp_path / "replay" / "g00000003.h5").unlink()
    assert ReplayBuffer(tmp_path / "replay", 3, (3, 3, 2)).load(4) == [3]


def test_a_nan_in_an_old_checkpoint_is_read_as_null_and_the_run_resumes(tmp_path, tiny_config):
    """An older version wrote ``"loss": NaN`` into latest.h5's metadata (a game counted before the
    first pass) and every later start failed. The metric is read as null and the run continues;
    NaN outside the metrics is still a corrupt checkpoint; nothing new is written with NaN."""
    import h5py
    from training.fileio import NonFiniteJSON
    from training.network import CheckpointError, read_meta, save_state
    run = tmp_path / "run"
    mdir = run / "member_00"
    args = ["train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run), "--budget",
            "1h", "--milestones", "1h", "--inference", "numpy", "--learner", "inline"]
    assert descent(*args, "--max-games", "2").returncode == 0
    latest = mdir / "latest.h5"
    good = strict_meta(latest)
    good["record"]["loss"] = float("nan")
    good["record"]["value_error"] = float("inf")
    with h5py.File(latest, "r+") as f:                  # the real file, its metadata as it was
        f.attrs["meta"] = json.dumps(good)
    assert '"loss": NaN' in json.dumps(good)
    log = mdir / "log.jsonl"
    log.write_text(log.read_text().replace('"loss": null', '"loss": NaN', 1)
                   .replace('"value_error": ', '"value_error": Infinity, "x": ', 1))
    meta = read_meta(latest)
    assert meta["record"]["loss"] is None and meta["record"]["value_error"] is None
    r = descent(*args, "--max-games", "2")
    assert r.returncode == 0, r.stderr
    assert strict_meta(latest)["counters"]["games"] == 4
    recs = [strict_json(line, "log.jsonl") for line in log.read_text().splitlines()]
    assert [rec["game"] for rec in recs] == [1, 2, 3, 4]
    # NaN in the counters: a corrupt checkpoint, named
    bad = strict_meta(latest)
    bad["counters"]["train_seconds"] = float("nan")
    with h5py.File(latest, "r+") as f:
        f.attrs["meta"] = json.dumps(bad)
    with pytest.raises(CheckpointError, match=r"meta\.counters\.train_seconds: NaN"):
        read_meta(latest)
    # and no writer puts NaN into a checkpoint
    from training.network import build_model, make_optimizer
    model = build_model((3, 3, 2), 8, 1, 16)
    with pytest.raises(NonFiniteJSON):
        save_state(tmp_path / "x.h5", model, make_optimizer(model, 0.01),
                   {**good, "record": {"loss": float("nan")}})
    assert not (tmp_path / "x.h5").exists()


def test_resume_without_the_replay_window_continues_from_the_weights(tmp_path, tiny_config):
    """A run moved without its replay files (all, or some): it continues from the weights and
    says so in one line; the counters are kept."""
    import shutil
    run = tmp_path / "run"
    mdir = run / "member_00"
    args = ["train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run), "--budget",
            "1h", "--milestones", "1h", "--inference", "numpy", "--learner", "inline"]
    assert descent(*args, "--max-games", "3").returncode == 0
    shutil.rmtree(mdir / "replay")
    r = descent(*args, "--max-games", "2")
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "lacks the files of 3 of its last 3 games (games 1-3)" in notes[0]
    assert strict_meta(mdir / "latest.h5")["counters"]["games"] == 5
    assert sorted(int(p.stem[1:]) for p in (mdir / "replay").glob("g*.h5")) == [4, 5]
    (mdir / "replay" / "g00000004.h5").unlink()
    r = descent(*args, "--max-games", "1")
    assert r.returncode == 0 and "lacks the files of 4 of its last 5 games (games 1-4)" in r.stderr
    assert [rec["game"] for rec in log_records(run)] == list(range(1, 7))


def test_a_milestone_before_the_first_game_is_flagged(tmp_path):
    """A milestone written with 0 games (a game longer than the budget) says so in its JSON, with
    the games and examples behind it; `descent checkpoints` marks it."""
    from descent.config import load_config
    from training.run import list_checkpoints, training_config
    from training.trainer import MemberJob, train_member
    cfg = training_config(load_config(Path(__file__).parents[1] / "configs" / "tic_tac_toe.toml"))
    job = MemberJob(str(tmp_path), 0, "tic_tac_toe", cfg, 1e-9, [("final", 1e-9)], seed=0,
                    extra={"games_in_flight": 2, "inference": "numpy", "learner": "inline"})
    assert train_member(job)["games"] == 0
    meta = json.loads((tmp_path / "member_00" / "milestone_final.json").read_text())
    assert (meta["games"], meta["examples"], meta["undertrained"]) == (0, 0, True)
    assert meta["min_milestone_games"] == 10
    from training.fileio import write_json
    write_json(tmp_path / "run.json", {"game": "tic_tac_toe", "seed": 0, "config": {}})
    # an older record without the new fields still lists, '?' where it does not say
    old = tmp_path / "member_01"
    old.mkdir()
    (old / "milestone_final.json").write_text(json.dumps(
        {"game": "tic_tac_toe", "member": 1, "milestone": "final", "milestone_seconds": 1e-9}))
    rows = list_checkpoints(tmp_path)
    assert [(r["member"], r["games"], r["examples"], r["undertrained"]) for r in rows] == \
        [(0, 0, 0, True), (1, None, None, None)]
    r = descent("checkpoints", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    line0, line1 = [line for line in r.stdout.splitlines() if "milestone_final" in line]
    assert "UNTRAINED (0 games)" in line0 and " ? " in line1 and "UNTRAINED" not in line1


def test_an_exported_finished_member_is_kept_and_the_population_grows_beside_it(tmp_path, tiny_config):
    """A run restored from an export (milestones and status.json, no latest.h5: tools.export_run,
    an experiment's [[games]] from) grown to a larger population trains only the new members; an
    exported member that would have to train further is refused, its files untouched."""
    import shutil
    run = tmp_path / "run"
    base = ["train", "tic_tac_toe", "--config", str(tiny_config), "--out", str(run), "--inference", "numpy",
            "--learner", "inline"]
    args = [*base, "--budget", "1s", "--milestones", "1s"]
    assert descent(*args).returncode == 0
    m0 = run / "member_00"
    for name in ("latest.h5", "log.jsonl"):             # as the export leaves them (a slow machine
        (m0 / name).unlink(missing_ok=True)              # may end the 1 s before a game, so no log)
    shutil.rmtree(m0 / "replay", ignore_errors=True)
    before = {p.name: p.read_bytes() for p in m0.iterdir() if p.is_file()}
    r = descent(*args, "--population", "2")
    assert r.returncode == 0, r.stderr
    assert "members 0: exported and finished" in r.stdout
    assert {p.name: p.read_bytes() for p in m0.iterdir() if p.is_file()} == before
    assert not (m0 / "latest.h5").exists()
    assert (run / "member_01" / "milestone_1s.weights.h5").exists()
    assert "member 0: " in r.stdout and "member 1: " in r.stdout
    # a longer budget would train member 0 again from scratch: refused, nothing touched
    r = descent(*base, "--budget", "2s", "--milestones", "1s,2s", "--population", "2")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "member_00: milestone checkpoints (1s) but no resume state (latest.h5)" in r.stderr
    assert {p.name: p.read_bytes() for p in m0.iterdir() if p.is_file()} == before
    # the Python API's train_member refuses it too, before it builds anything
    from descent.config import load_config
    from training.network import CheckpointError
    from training.run import training_config
    from training.trainer import MemberJob, train_member
    job = MemberJob(str(run), 0, "tic_tac_toe", training_config(load_config(tiny_config)), 2.0,
                    [("1s", 1.0), ("2s", 2.0)], 0)
    with pytest.raises(CheckpointError, match="an exported member cannot train further"):
        train_member(job)
    assert {p.name: p.read_bytes() for p in m0.iterdir() if p.is_file()} == before


def test_an_export_that_left_out_a_milestones_weights_still_counts_as_trained(tmp_path):
    """``tools.export_run`` keeps only the checkpoints a report uses (the others listed with
    ``kept: false``): an exported member whose record of a milestone is there without its weights
    has reached that milestone, so a run restored from such an export trains nothing for it. The
    member's files as training leaves them (only their presence matters here, no training run)."""
    from training import layout
    run = tmp_path / "run"
    m0 = layout.member_dir(run, 0)
    m0.mkdir(parents=True)
    for name in ("1s", "2s"):
        layout.milestone_weights(m0, name).write_bytes(b"weights")
        layout.milestone_record(m0, name).write_text("{}")
    layout.state_file(m0).write_bytes(b"state")
    assert layout.trained(run, 1, ["1s", "2s"]) and not layout.trained(run, 2, ["1s", "2s"])
    layout.milestone_weights(m0, "1s").unlink()         # a weights file no pool uses, left out
    assert not layout.trained(run, 1, ["1s", "2s"])      # still training (latest.h5): not reached
    layout.state_file(m0).unlink()                      # exported: no resume state
    assert layout.trained(run, 1, ["1s", "2s"]) and layout.milestone_reached(m0, "1s")
    layout.milestone_record(m0, "1s").unlink()          # without its record it is not reached
    assert not layout.milestone_reached(m0, "1s") and not layout.trained(run, 1, ["1s", "2s"])
