"""Members that checkpoint back (issue 21): with --ray-ship a member trains in a scratch directory on
its worker and its state reaches the driver's run directory every ``sync_every`` seconds, at every
milestone and at the end; a member lost with its node continues from there; a driver killed and
rerun continues. Tic-tac-toe, game budgets (``max_games``), ``sync_every = 0`` (after every game):
no assertion depends on the machine's speed."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.test_replication import BUDGET, MILESTONES, check_member, log_games, state_games, tiny_cfg

# A guard against a hang, not a time budget: generous, so that a loaded machine (raylets, their
# workers and TensorFlow start-ups on 2 busy cores took more than 5 minutes) only takes longer
HANG_GUARD = 1200

# ---- on a multi-node cluster ----------------------------------------------------------------------

ray = pytest.importorskip("ray")
from ray_cluster import ray_cluster, ray_dump_lines  # noqa: E402,F401  (the fixture)


def _syncs():
    out, lock = [], threading.Lock()

    def on_sync(info):
        with lock:
            out.append(info)
    return out, on_sync


def test_state_reaches_the_driver_before_the_member_ends(ray_cluster, tmp_path):
    from descent.distributed import ray_runner
    from training.run import run_training
    cfg = tiny_cfg(tmp_path, every=0)
    run = tmp_path / "run"
    mid = []

    def on_sync(info):            # the driver's copy at each copy, while the members still play
        mdir = run / f"member_{info['member']:02d}"
        mid.append((info["member"], info["event"], info["games"], check_member(mdir), info["bytes"]))
    results = run_training("tic_tac_toe", cfg, 2, BUDGET, MILESTONES, 2, run, 0, progress=False,
                           echo=lambda line: None, max_games=6,
                           remote=ray_runner(ray_cluster.address, ship=True, on_sync=on_sync))
    assert [r["games"] for r in results] == [6, 6]
    for m in (0, 1):
        copies = [(e, g, on_disk) for mm, e, g, on_disk, _ in mid if mm == m]
        assert [g for e, g, _ in copies if e == "game"] == [1, 2, 3, 4, 5, 6]
        assert copies[-1][0] == "end" and all(g == on_disk for _, g, on_disk in copies)
        mdir = run / f"member_{m:02d}"
        assert check_member(mdir) == 6
        assert (mdir / "milestone_0s.weights.h5").exists() and (mdir / "milestone_0s.json").exists()
        assert not (mdir / "replay").exists()       # the window stays with the worker by default
    assert all(b > 0 for *_, b in mid)


def test_a_member_lost_with_its_node_continues_from_the_synced_state(ray_cluster, tmp_path, capfd):
    GAMES = 120
    from descent.distributed import ray_runner
    from training.run import run_training
    cfg = tiny_cfg(tmp_path, every=0)
    run = tmp_path / "run"
    syncs, collect = _syncs()
    head = ray.get_runtime_context().get_node_id()
    victim = {}
    ready = threading.Event()

    def on_sync(info):
        collect(info)
        if not ready.is_set() and info["node"] != head and info["games"] >= 3:
            victim.update(info)
            ready.set()
    out = {}

    def train():
        try:
            out["results"] = run_training(
                "tic_tac_toe", cfg, 2, BUDGET, MILESTONES, 2, run, 0, progress=False,
                # games enough that the victim (picked at its 3rd) is still playing when its node
                # is gone: at 25 a fast machine finished all of them while the node was removed
                echo=lambda line: None, max_games=GAMES,
                remote=ray_runner(ray_cluster.address, ship=True, on_sync=on_sync))
        except BaseException as exc:        # re-raised below
            out["error"] = exc
    t = threading.Thread(target=train)
    t.start()
    assert ready.wait(HANG_GUARD), "no member synced from a worker node"
    node = next(n for n in ray_cluster.nodes if n.node_id == victim["node"])
    ray_cluster.remove_node(node)
    ray_cluster.nodes.append(ray_cluster.add_node(wait=False))
    t.join(HANG_GUARD)
    assert not t.is_alive() and "error" not in out, out.get("error")
    m = victim["member"]
    mine = [s for s in syncs if s["member"] == m]
    attempts = sorted({s["attempt"] for s in mine})
    assert len(attempts) >= 2, "the lost member was not shipped again"
    before = max(s["games"] for s in mine if s["attempt"] == attempts[0])
    after = min(s["games"] for s in mine if s["attempt"] == attempts[1])
    assert after == before + 1          # continued from the last copy: nothing lost but games in play
    assert {s["node"] for s in mine if s["attempt"] == attempts[1]} != {victim["node"]}
    # the driver said so in one line: which member, from which game it resumes, what was lost
    said, err = capfd.readouterr()
    notes = [line for line in err.splitlines() if "was lost with its node" in line]
    assert len(notes) == len(attempts) - 1
    # and nothing of Ray's own: the lost raylet's dump goes to Ray's log folder, not the terminal
    for text in (said, err):
        assert not ray_dump_lines(text), text[:2000]
    assert [line for line in err.splitlines() if line.strip()] == notes, err[:2000]
    assert notes[0].startswith(f"note: member {m} was lost") and f"after game {before}:" in notes[0]
    # this call's game budget is kept whatever was lost; nothing counted twice
    assert [r["games"] for r in out["results"]] == [GAMES, GAMES]
    for i in (0, 1):
        assert check_member(run / f"member_{i:02d}") == GAMES


DRIVER = """
import sys
from descent.config import load_config
from descent.distributed import ray_runner
from training.run import run_training
cfg = load_config(sys.argv[2])
run_training("tic_tac_toe", cfg, 1, {budget}, {milestones!r}, 1, sys.argv[3], 0, progress=False,
             echo=lambda line: None, max_games=10_000, remote=ray_runner(sys.argv[1], ship=True))
"""


def test_a_driver_killed_and_rerun_continues(ray_cluster, tmp_path):
    from descent.distributed import ray_runner
    from training.run import run_training
    cfg = tiny_cfg(tmp_path, every=0)
    run = tmp_path / "run"
    mdir = run / "member_00"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")
    script = DRIVER.format(budget=BUDGET, milestones=MILESTONES)
    proc = subprocess.Popen([sys.executable, "-c", script, ray_cluster.address,
                             str(tmp_path / "tiny.toml"), str(run)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + HANG_GUARD
        while len(log_games(mdir)) < 3:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < end, "the first driver synced nothing"
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    synced = state_games(mdir)
    assert synced >= 3
    results = run_training("tic_tac_toe", cfg, 1, BUDGET, MILESTONES, 1, run, 0, progress=False,
                           echo=lambda line: None, max_games=4,
                           remote=ray_runner(ray_cluster.address, ship=True))
    assert results[0]["games"] == synced + 4
    assert check_member(mdir) == results[0]["games"]
