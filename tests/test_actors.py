"""Self-play actors feeding one learner (issue 45): K = 2 actor processes per member, SIGKILL of an
actor, of the learner and of the command at each crash point; nothing lost, nothing counted twice,
every rerun continues; every stored game records its actor and network version. Game budgets
(``--max-games``), tiny networks, tic-tac-toe: nothing depends on the machine's speed."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import pytest

from test_training import ENV, TINY, check_member, game_scalars, strict_json

WINDOW = 1000           # every game's replay file stays: the test reads them all


def run_args(run: Path, cfg: Path, max_games: int, actors: int = 2) -> list[str]:
    return ["train", "tic_tac_toe", "--config", str(cfg), "--out", str(run), "--budget", "1h",
            "--milestones", "0.001s,1h", "--games-in-flight", "2", "--inference", "numpy",
            "--max-games", str(max_games), "--actors", str(actors)]


def descent(args, crash=None, timeout=300):
    env = dict(ENV, DESCENT_CRASH_AT=crash) if crash else ENV
    return subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def counted_games(mdir: Path) -> list[dict]:
    """Each counted game's (actor, sequence, versions) from its replay file."""
    out = []
    for p in sorted((mdir / "replay").glob("g*.h5")):
        with h5py.File(p, "r") as f:
            g = {k: int(f.attrs[k]) for k in ("game_id", "actor", "network_version")}
            # a game played inside the member's process (1 actor) has no sequence of its own
            g["actor_game"] = int(f.attrs.get("actor_game", -1))
            g["network_version_first"] = int(f.attrs.get("network_version_first", g["network_version"]))
            out.append(g)
    return out


def inbox_games(mdir: Path) -> list[tuple[int, int]]:
    from training.layout import inbox_game
    return sorted(k for p in (mdir / "inbox").glob("*.npz") if (k := inbox_game(p.name)))


def check_actors(mdir: Path) -> int:
    """No game counted twice or lost: for each actor, its games counted and those waiting in the
    inbox are 1, 2, ... its last one, each once, counted ones in order of its sequence; the state's
    per-actor counts match. Returns the counted games."""
    n = check_member(mdir)
    games = [g for g in counted_games(mdir) if g["game_id"] <= n]   # past n: never counted
    assert [g["game_id"] for g in games] == list(range(1, n + 1))
    meta = strict_json(h5py.File(mdir / "latest.h5", "r").attrs["meta"], "meta")
    last = {int(a): s for a, s in meta["counters"]["actor_games"].items()}
    waiting = inbox_games(mdir)
    for actor in {g["actor"] for g in games} | {a for a, _ in waiting}:
        mine = [g["actor_game"] for g in games if g["actor"] == actor and g["actor_game"] >= 0]
        assert mine == sorted(mine), f"actor {actor}: counted out of its order {mine}"
        assert last.get(actor, 0) == max(mine, default=0)
        left = [s for a, s in waiting if a == actor and s > last.get(actor, 0)]
        everything = mine + left
        assert sorted(everything) == list(range(1, len(everything) + 1)), \
            f"actor {actor}: counted {mine}, waiting {left}: a game lost or counted twice"
    for g in games:
        assert 0 <= g["network_version_first"] <= g["network_version"] <= meta["counters"]["network_version"]
    return n


def check_final(mdir: Path) -> int:
    """After a call that ended normally: one log line and one replay file per counted game, no
    temporary file left, the status says the count (every game stays in this test's window)."""
    n = check_actors(mdir)
    ids = [json.loads(line)["game"] for line in (mdir / "log.jsonl").read_text().splitlines()]
    assert ids == list(range(1, n + 1))
    assert sorted(g["game_id"] for g in counted_games(mdir)) == list(range(1, n + 1))
    assert not list(mdir.rglob(".*.tmp*")), "temporary files left behind"
    assert json.loads((mdir / "status.json").read_text())["games"] == n
    return n


def wait_dead(mdir: Path, seconds: float = 30.0) -> None:
    """The actors of a killed learner end with it (their last states name their pids)."""
    from training.fileio import pid_alive
    pids = []
    for p in (mdir / "actors").glob("actor_*.json"):
        try:
            pids.append(json.loads(p.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            continue
    deadline = time.monotonic() + seconds
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(pid_alive(pid) for pid in pids), "an actor outlived its learner"


@pytest.fixture
def cfg(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY.replace("replay_games = 30", f"replay_games = {WINDOW}"))
    return p


# The learner's crash points (the command's process is the learner: killing it kills the command
# and, through PR_SET_PDEATHSIG, its actors). None of them is reached by an actor.
LEARNER_CHAIN = [
    "state_saved:1",                    # counted, its inbox file not yet deleted
    "replay_written:1",                 # a game's replay file written, not counted, file in inbox
    "network_published:1",              # a new version published, nothing else after
    "tmp_written.network.h5:2",         # a version half published (the old one stays)
    "renamed.latest.h5:3",
    "log_written:2",
    "appended.log.jsonl:3",
    "tmp_written.status.json:1",        # at the end of the call
]


def test_kill_the_learner_at_every_crash_point(tmp_path, cfg):
    run = tmp_path / "run"
    mdir = run / "member_00"
    args = run_args(run, cfg, 3)
    for crash in LEARNER_CHAIN:
        r = descent(args, crash)
        assert r.returncode == -signal.SIGKILL, f"{crash}: not reached (rc {r.returncode}) {r.stderr}"
        assert "Traceback" not in r.stderr, r.stderr
        wait_dead(mdir)
        check_actors(mdir)
    r = descent(args)
    assert r.returncode == 0, r.stderr
    n = check_actors(mdir)
    assert n >= 3 + len(LEARNER_CHAIN) - 2
    assert check_final(mdir) == n
    from training.trainer import SCALARS
    assert game_scalars(mdir) == {g: sorted(SCALARS) for g in range(1, n + 1)}
    logged = [json.loads(line) for line in (mdir / "log.jsonl").read_text().splitlines()]
    assert [(rec["actor"], rec.get("actor_game", -1), rec["network_version"]) for rec in logged] == \
        [(g["actor"], g["actor_game"], g["network_version"]) for g in counted_games(mdir)]
    assert all(rec["actors"] == 2 and rec["cpu_seconds"] > 0 for rec in logged)


def test_a_killed_actor_is_restarted_and_loses_only_its_games_in_flight(tmp_path, cfg):
    """SIGKILL of each actor with its first game written under a temporary name, as it has shipped
    its first game, its second: the learner restarts each (a note; the restarted process is not
    aimed at), their numbering goes on after the games shipped, the command ends normally. A new
    run each time, four games from two actors: one of them ships two, so every kill happens
    whatever the speeds; a rerun continues."""
    for i, crash in enumerate(("actor_writing:1", "actor_shipped:1", "actor_shipped:2")):
        run = tmp_path / f"run{i}"
        mdir = run / "member_00"
        r = descent(run_args(run, cfg, 4), crash)
        assert r.returncode == 0, f"{crash}: {r.stderr}"
        assert "Traceback" not in r.stderr, r.stderr
        assert "ended by signal 9" in r.stderr, f"{crash}: no actor was killed {r.stderr}"
        assert check_final(mdir) == 4
    r = descent(run_args(run, cfg, 2))
    assert r.returncode == 0, r.stderr
    assert check_final(mdir) == 6


def test_a_rerun_may_change_the_actors(tmp_path, cfg):
    """`actors` is a runtime option: a member trained with 2 actors continues with 1 (in its own
    process) and then with 3; the first line names them; every game records actor and version."""
    run = tmp_path / "run"
    mdir = run / "member_00"
    r = descent(run_args(run, cfg, 3, actors=2))
    assert r.returncode == 0 and "2 self-play actors each" in r.stdout, r.stdout + r.stderr
    r = descent(run_args(run, cfg, 2, actors=1))
    assert r.returncode == 0, r.stderr
    r = descent(run_args(run, cfg, 3, actors=3))
    assert r.returncode == 0, r.stderr
    assert check_final(mdir) == 8
    logged = [json.loads(line) for line in (mdir / "log.jsonl").read_text().splitlines()]
    assert [rec["actors"] for rec in logged] == [2] * 3 + [1] * 2 + [3] * 3
    assert [rec["actor"] for rec in logged[3:5]] == [0, 0]
    assert all("network_version" in rec for rec in logged)
    with h5py.File(mdir / "replay" / "g00000004.h5", "r") as f:
        assert int(f.attrs["actor"]) == 0 and "network_version" in f.attrs


def test_the_auto_rule_gives_a_lone_member_the_spare_cores(monkeypatch):
    from training.actors import resolve_actors
    monkeypatch.setenv("DESCENT_CPUS", "16")
    k, note = resolve_actors(0, 1)
    assert k == 15 and "15 self-play actors" in note and "16 cores" in note
    assert resolve_actors(0, 4) == (1, None)              # not a lone member
    assert resolve_actors(0, 1, remote=True) == (1, None)
    assert resolve_actors(3, 1) == (3, None)              # asked for
    monkeypatch.setenv("DESCENT_CPUS", "2")
    assert resolve_actors(0, 1) == (1, None)              # one spare core: self-play in-process


def test_the_first_line_says_the_automatic_actors(tmp_path, cfg):
    run = tmp_path / "run"
    env = dict(ENV, DESCENT_CPUS="3")
    args = run_args(run, cfg, 2)
    args = args[:args.index("--actors")]
    r = subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert "2 self-play actors for the lone member (3 cores" in first, first
    logged = [json.loads(line) for line in (run / "member_00" / "log.jsonl").read_text().splitlines()]
    assert {rec["actors"] for rec in logged} == {2}


def test_an_actor_needs_no_tensorflow(tmp_path):
    """An actor process plays with a published network without importing TensorFlow."""
    code = (
        "import sys, json\n"
        "from training.actors import Actor, ActorJob\n"
        "job = ActorJob(**json.loads(sys.argv[1]))\n"
        "shipped = []\n"
        "a = Actor(job, ship=shipped.append, stop=lambda: len(shipped) >= 2)\n"
        "a.run(write_status=False)\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
        "print(json.dumps([(g['seq'], g['network_version']) for g in shipped]))\n")
    net = publish_tiny_network(tmp_path)
    from descent.config import load_config
    from training.actors import ActorJob
    import dataclasses
    sp = load_config(Path(__file__).parents[1] / "configs" / "tic_tac_toe.toml")["selfplay"]
    sp["iterations"] = 10
    job = ActorJob(str(tmp_path), 0, 0, "tic_tac_toe", sp, 0, 60.0, 2, 4096, 1 << 20,
                   first_seq=5, inference="numpy", network=str(net))
    r = subprocess.run([sys.executable, "-c", code, json.dumps(dataclasses.asdict(job))],
                       capture_output=True, text=True, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [[5, 7], [6, 7]]


def publish_tiny_network(tmp_path: Path) -> Path:
    """A network.h5 as a learner publishes it (version 7), written in a child process (TF)."""
    code = (
        "import sys\n"
        "from training.network import build_model, save_weights\n"
        "m = build_model((3, 3, 2), 8, 1, 16, seed=1)\n"
        "save_weights(sys.argv[1], m, {'game': 'tic_tac_toe', 'network': m.architecture.to_meta(),"
        " 'planes_shape': [3, 3, 2], 'network_version': 7, 'train_seconds': 1.0}, record=False)\n")
    path = tmp_path / "network.h5"
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "network.json").exists()
    return path


def test_the_inbox_files_round_trip(tmp_path):
    import numpy as np
    from training.actors import game_record, inbox_arrivals, read_game, write_game
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, (5, 3, 3, 2)).astype(np.float32)
    g = {"x": x, "y": np.linspace(-1, 1, 5, dtype=np.float32), "movers": np.array([0, 1, 0, 1, 0]),
         "root_values": np.zeros(5, np.float32), "result": 1, "plies": 5, "tag": (1, 3, 0.5),
         "seconds": 0.1}
    for seq in (2, 1):
        write_game(tmp_path, 4, seq, game_record(g, 4, seq, 3, 4, 0.25))
        time.sleep(0.01)
    assert [(a, s) for a, s, _ in inbox_arrivals(tmp_path)] == [(4, 2), (4, 1)]   # as they came
    back = read_game(tmp_path / "a004.000000001.npz", (3, 3, 2))
    assert np.array_equal(back["x"], x) and back["network_version"] == 4
    assert (back["actor"], back["seq"], back["network_version_first"], back["e"]) == (4, 1, 3, 0.5)
    assert os.listdir(tmp_path) and not [p for p in os.listdir(tmp_path) if ".tmp" in p]


def test_at_the_budget_the_actors_stop_and_their_waiting_games_are_dropped(tmp_path, cfg):
    """A member whose budget is spent stops its actors at once; games still in the inbox are
    dropped like games in flight (``abandoned_games``), the counted ones stay, nothing is left
    behind, and a further rerun has nothing to do."""
    run = tmp_path / "run"
    mdir = run / "member_00"
    assert descent(run_args(run, cfg, 3)).returncode == 0
    args = run_args(run, cfg, 0)
    args[args.index("--budget") + 1] = "0.001s"
    args[args.index("--milestones") + 1] = "0.001s"
    r = descent(args)
    assert r.returncode == 0, r.stderr
    status = json.loads((mdir / "status.json").read_text())
    assert status["done"] is True and status["games"] == 3
    assert inbox_games(mdir) == [] and not list(mdir.rglob(".*.tmp*"))
    assert check_final(mdir) == 3
    wait_dead(mdir)
    r = descent(args)
    assert r.returncode == 0 and json.loads((mdir / "status.json").read_text())["games"] == 3
