"""Issue 21: the match stages on a multi-node Ray cluster (``ray.cluster_utils.Cluster``: a head and
3 worker nodes, each its own raylet) keep going when a worker node is lost, a driver killed and
rerun finishes the work without losing or duplicating a match, and bad input is one clear line.

Tiny budgets (tic-tac-toe, iteration budgets); a node is killed once some results came back (a
hook on the results stream, never a sleep); the results are compared with the serial run's, key by
key. No timing assertion anywhere.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from descent import distributed

ray = pytest.importorskip("ray")

from ray_cluster import ray_cluster, ray_dump_lines  # noqa: E402,F401  (the fixture)
from test_protocol import ENV, fake_run  # noqa: E402,F401  (the fixture)

GAME = "tic_tac_toe"
RANK_AGENT = "minimax:iterations=30,decision=safe"
EVAL = dict(algorithms=["minimax", "minibal_plus"], budgets=["iterations=20"],
            opponent_budget="iterations=10", games_per_pair=4, seed=3, opening_plies=1)
# the evaluate command of EVAL (2 high nets x 2 low nets x 2 algorithms x 4 games = 32 matches)
EVAL_CLI = ["--algorithms", "minimax,minibal_plus", "--iterations", "20", "--opponent-time",
            "iterations=10", "--games-per-pair", "4", "--seed", "3", "--opening-plies", "1"]


def _descent(*args, cwd=None, env=None, timeout=600):
    # Ray's variables as they are now: a cluster started in this process after ENV was taken may
    # have turned token authentication on (RAY_AUTH_MODE), which a driver must use too
    env = dict(env or ENV, **{k: v for k, v in os.environ.items() if k.startswith("RAY_")})
    return subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def _rows(db, stages=("rank", "early_vs_final", "evaluate")):
    with sqlite3.connect(db) as c:
        q = f"SELECT match_key, moves, result, score FROM matches WHERE stage IN ({','.join('?' * len(stages))})"
        return sorted(c.execute(q, stages))


def _count(db) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as c:
        return c.execute("SELECT COUNT(*) FROM matches").fetchone()[0]


@pytest.fixture
def lose_a_node(ray_cluster, monkeypatch):  # noqa: F811
    """Kill a worker node (and start a fresh one) when the ``after``-th result of a stage reaches
    the driver: the results stream of ``descent.distributed.run_tasks_ray`` is the hook."""
    real = distributed.run_tasks_ray
    state = {"after": 2, "seen": 0, "killed": 0, "then": None}

    def wrapped(tasks, address, play, max_retries=3):
        for out in real(tasks, address, play, max_retries):
            state["seen"] += 1
            if state["seen"] == state["after"] and not state["killed"]:
                # a fresh node in its place only when one worker node would be left (cold nodes
                # cost seconds of CPU): the module's stages lose 4 nodes between them
                ray_cluster.kill_worker(replace=len(ray_cluster.nodes) <= 2)
                state["killed"] += 1
                if state["then"]:
                    state["then"]()
            yield out
    monkeypatch.setattr(distributed, "run_tasks_ray", wrapped)
    return state


@pytest.fixture(scope="module")
def ranked(fake_run):  # noqa: F811
    """The fake run with its pools (ranked serially)."""
    from descent.tournament import rank
    rank(fake_run, GAME, RANK_AGENT, 4, 2, 1, 0, progress=False, echo=lambda *_: None)
    return fake_run


def test_the_cluster_has_separate_nodes_and_passes_the_package_check(ray_cluster):  # noqa: F811
    reports = distributed.check_workers(ray)
    assert len(reports) == 4 and len({r["node"] for r in reports}) == 4
    assert len({(r["version"], r["digest"]) for r in reports}) == 1


def test_the_clusters_messages_go_to_the_log_folder_not_the_terminal(ray_cluster, capfd):  # noqa: F811
    """What Ray's driver thread would print on stdout (a lost node's raylet dump, published by the
    cluster at a moment no test controls) and its Python loggers' warnings (stderr) go to
    MESSAGES_LOG in the session's log folder: both routes, called as Ray calls them."""
    import logging
    import ray._private.worker as ray_worker
    from pathlib import Path
    log = Path(ray_worker._global_node.get_logs_dir_path()) / distributed.MESSAGES_LOG
    ray_worker.print_to_stdstream({"lines": ["Raylet is terminated. (test)", "[state-dump] x"],
                                   "pid": "raylet", "is_err": False}, ignore_prefix=False)
    logging.getLogger("ray._private.worker").warning("a node was marked dead (test)")
    out, err = capfd.readouterr()
    assert "Raylet" not in out and "state-dump" not in out and "marked dead" not in err, (out, err)
    text = log.read_text()
    assert "(raylet) Raylet is terminated. (test)" in text and "(raylet) [state-dump] x" in text
    assert "WARNING a node was marked dead (test)" in text


def test_a_node_lost_during_the_package_check_is_skipped_with_a_note(ray_cluster, capfd):  # noqa: F811
    """The cluster listed a node as alive when the check began and the node is gone when its task
    is placed: one note, the other nodes checked, not fatal (a run whose cluster lost a node a
    minute ago must start)."""
    listed = [n for n in ray.nodes() if n.get("Alive")]
    before = ray_cluster.alive_nodes()
    lost = ray_cluster.kill_worker(replace=True)
    ray_cluster.wait_alive(before)           # the replacement joined, the lost one is dead
    lost_id = next(n["NodeID"] for n in listed if n["NodeID"] not in
                   {m["NodeID"] for m in ray.nodes() if m.get("Alive")})
    reports = distributed.check_workers(ray, nodes=listed)
    err = capfd.readouterr().err
    assert lost_id not in {r["node"] for r in reports}
    assert len(reports) == len(listed) - 1
    assert err.count("left the cluster during the package check") == 1 and lost_id[:12] in err
    assert lost is not None


def test_the_progress_queue_lives_on_the_head_node(ray_cluster):  # noqa: F811
    """The queue every member reports through must outlive any worker node (a soft affinity let
    Ray 2.60 put it on a worker node, whose loss then ended the run)."""
    from ray.util.queue import Queue
    head = next(n["NodeID"] for n in ray.nodes()
                if n.get("Alive") and "node:__internal_head__" in n["Resources"])
    for _ in range(4):                   # a soft affinity missed 2 times in 3
        queue = Queue(actor_options=distributed._driver_actor_options(ray))
        where = ray.get(queue.actor.__ray_call__.remote(
            lambda self: ray.get_runtime_context().get_node_id()))
        assert where == head
        ray.kill(queue.actor)


def test_rank_keeps_going_when_a_node_is_lost(ranked, ray_cluster, lose_a_node, tmp_path, capfd):  # noqa: F811
    from descent.tournament import rank
    args = (ranked, GAME, RANK_AGENT, 4, 2, 1, 0)
    rank(*args, progress=False, echo=lambda *_: None, db_path=tmp_path / "ray.db",
         ray_address=ray_cluster.address)
    assert lose_a_node["killed"] == 1
    # Ray's messages about the dead node (raylet dump, workers' output) stay in Ray's log files
    for text in capfd.readouterr():
        assert not ray_dump_lines(text), text[:2000]
    rank(*args, progress=False, echo=lambda *_: None, db_path=tmp_path / "serial.db")
    serial = _rows(tmp_path / "serial.db")
    assert len(serial) >= 24
    assert _rows(tmp_path / "ray.db") == serial            # every match once, the same games


def test_evaluate_keeps_going_when_a_node_is_lost(ranked, ray_cluster, lose_a_node, tmp_path):  # noqa: F811
    """Once the node is lost, the checkpoints also vanish from the run directory: the matches still
    to play (the retried ones included, on a fresh worker) use the copies shipped with the tasks."""
    from descent.tournament import evaluate
    members = sorted(ranked.glob("member_*"))

    def hide():
        for d in members:
            d.rename(d.with_name("hidden_" + d.name))
    lose_a_node["then"] = hide
    try:
        n = evaluate(ranked, GAME, **EVAL, workers=1, db_path=tmp_path / "ray.db", progress=False,
                     ray_address=ray_cluster.address)
    finally:
        for d in members:
            if d.with_name("hidden_" + d.name).exists():
                d.with_name("hidden_" + d.name).rename(d)
    assert lose_a_node["killed"] == 1
    assert n == 32 == evaluate(ranked, GAME, **EVAL, workers=1, db_path=tmp_path / "serial.db",
                               progress=False)
    assert _rows(tmp_path / "ray.db") == _rows(tmp_path / "serial.db")
    # nothing left to do
    assert evaluate(ranked, GAME, **EVAL, workers=1, db_path=tmp_path / "ray.db", progress=False,
                    ray_address=ray_cluster.address) == 0


def _log_keys(run):
    (log,) = (run / "calibrations").glob("*.games.jsonl")
    lines = log.read_text().splitlines()
    return [(json.loads(x)["budget"], json.loads(x)["k"]) for x in lines]


def test_calibrate_keeps_going_when_a_node_is_lost(ray_cluster, lose_a_node, tmp_path):  # noqa: F811
    from descent.calibrate import Settings, calibrate
    s = dict(algorithm="minibal_plus", against="mcts:iterations=20", low=1, high=64, max_games=16,
             near_games=8)
    on_ray = calibrate(Settings(GAME, **s), tmp_path / "ray", ray_address=ray_cluster.address)
    assert lose_a_node["killed"] == 1 and lose_a_node["seen"] >= 2
    serial = calibrate(Settings(GAME, **s), tmp_path / "serial")
    for k in ("status", "games", "points", "steps", "budget", "posterior"):
        assert on_ray.get(k) == serial.get(k), k
    keys = _log_keys(tmp_path / "ray")
    assert len(keys) == len(set(keys))                     # one line per (budget, k)
    assert set(_log_keys(tmp_path / "serial")) <= set(keys)


def test_experiment_keeps_going_when_a_node_is_lost(ranked, ray_cluster, lose_a_node, tmp_path):  # noqa: F811
    import shutil
    from descent.experiment import run_experiment
    from descent.tournament import evaluate
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copytree(ranked, runs / GAME, ignore=shutil.ignore_patterns("results.db*"))
    exp = tmp_path / "exp.toml"
    exp.write_text(f"""
[experiment]
name = "t"
runs = "{runs}"
report = "{tmp_path / 'report'}"
seed = 3
[train]
population = 4
budget = "2s"
milestones = "1s,2s"
[rank]
agent = "{RANK_AGENT}"
games_per_pair = 2
opening_plies = 2
[evaluate]
algorithms = ["minimax", "minibal_plus"]
budgets = ["iterations=20"]
opening_plies = 1
[[opponents]]
kind = "pool"
budget = "iterations=10"
games_per_pair = 4
[[games]]
spec = "{GAME}"
""")
    run_experiment(exp, stages=("rank", "evaluate"), echo=lambda *_: None, ray_address=ray_cluster.address)
    assert lose_a_node["killed"] == 1
    db = runs / GAME / "results.db"
    n = _count(db)
    with sqlite3.connect(db) as c:
        keys = [r[0] for r in c.execute("SELECT match_key FROM matches")]
    assert n == len(set(keys)) and n >= 12 + 32
    # nothing lost: the serial stages find every match there
    run_experiment(exp, stages=("rank", "evaluate"), echo=lambda *_: None)
    assert _count(db) == n
    assert evaluate(runs / GAME, GAME, **EVAL, workers=1, db_path=tmp_path / "serial.db",
                    progress=False) == 32
    assert _rows(db, ("evaluate",)) == _rows(tmp_path / "serial.db", ("evaluate",))


def test_a_driver_killed_and_rerun_finishes_without_duplicates(ranked, ray_cluster, tmp_path):  # noqa: F811
    """``descent evaluate --ray`` killed (SIGKILL, a crash point) after its 5th stored match, then
    rerun."""
    import shutil
    from descent.tournament import evaluate
    run = tmp_path / "run"               # a copy: its results.db is this test's
    shutil.copytree(ranked, run, ignore=shutil.ignore_patterns("results.db*"))
    db = run / "results.db"
    cmd = ["evaluate", GAME, "--run", str(run), *EVAL_CLI, "--ray", ray_cluster.address]
    killed = _descent(*cmd, env=dict(ENV, DESCENT_CRASH_AT="match_stored:5"))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert _count(db) == 5
    # the rerun (here in this process, a driver of its own on the same cluster) plays the rest
    assert evaluate(run, GAME, **EVAL, workers=1, progress=False, ray_address=ray_cluster.address) == 27
    assert evaluate(run, GAME, **EVAL, workers=1, db_path=tmp_path / "serial.db", progress=False) == 32
    assert _rows(db) == _rows(tmp_path / "serial.db")


# ---- bad input --------------------------------------------------------------------------------------

def _one_line_error(r):
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


@pytest.mark.parametrize("fake, says", [
    ('raise ImportError("No module named \'search_ext._mcts\'")', "cannot import descent (ImportError: No module"),
    ('"""another version of the package"""', "runs descent "),
])
def test_a_node_without_the_package_or_with_another_version_is_named(ray_cluster, tmp_path, fake, says):  # noqa: F811
    """A worker node whose Python finds another ``descent`` first (its own PYTHONPATH): the driver
    (run from a folder of its own) refuses the cluster in one line naming the node."""
    pkg = tmp_path / "site" / "descent"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(fake + "\n")
    before = ray_cluster.alive_nodes()
    node = ray_cluster.add_node(env_vars={"PYTHONPATH": str(tmp_path / "site")})
    try:
        work = tmp_path / "work"
        work.mkdir()
        r = _descent("calibrate", GAME, "--against", "mcts:iterations=10", "--max-games", "2",
                     "--run", str(work / "run"), "--ray", ray_cluster.address, cwd=work)
        line = _one_line_error(r)
        assert says in line and f"(node id {node.node_id[:12]})" in line, line
        assert line.startswith("Error: Ray node ")
        if "another version" in fake:
            assert str(pkg) in line and "install the same version on every node" in line
        assert not (work / "run" / "calibrations").exists() or not any(
            (work / "run" / "calibrations").glob("*.jsonl"))     # no game was played
    finally:
        ray_cluster.remove_node(node)
        ray_cluster.wait_alive(before)


def test_a_run_directory_the_driver_cannot_write_is_one_line_before_any_task(tmp_path):
    """Checked before Ray is even reached: the address given does not answer."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    r = _descent("calibrate", GAME, "--against", "mcts:iterations=10", "--max-games", "2",
                 "--run", str(blocker / "run"), "--ray", "127.0.0.1:9")
    line = _one_line_error(r)
    assert "cannot write there" in line and str(blocker / "run") in line, line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder")
def test_a_read_only_run_directory_is_one_line_before_any_task(ranked, tmp_path):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(ranked, run, ignore=shutil.ignore_patterns("results.db*"))
    run.chmod(0o555)
    try:
        r = _descent("evaluate", GAME, "--run", str(run), *EVAL_CLI, "--ray", "127.0.0.1:9")
        line = _one_line_error(r)
        assert f"run directory {run}: cannot write there" in line, line
    finally:
        run.chmod(0o755)


@pytest.mark.parametrize("command", [["rank", GAME, "--agent", RANK_AGENT],
                                     ["evaluate", GAME, *EVAL_CLI]])
def test_rank_and_evaluate_check_the_run_directory_before_ray(ranked, tmp_path, monkeypatch, command):
    """The same refusal for rank and evaluate, as the root user sees it too: the probe write is
    denied (``EACCES``); the command stops on it before reaching the cluster address."""
    from click.testing import CliRunner
    from descent.cli import cli
    real = os.open

    def deny(path, *args, **kwargs):
        if ".write-probe" in str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)
    monkeypatch.setattr(os, "open", deny)
    r = CliRunner().invoke(cli, [*command, "--run", str(ranked), "--ray", "127.0.0.1:9"])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert lines[-1] == f"Error: run directory {ranked}: cannot write there (Permission denied)", r.output
    assert "Traceback" not in r.output and "Ray" not in lines[-1]
