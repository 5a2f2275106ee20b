"""Replicating a member's training state without a cluster (``training.replication``): a member
trained in a scratch directory sends its copies through a function, and the driver's copy stays
whole and resumable after every copy; a log that rotates between two copies arrives whole.
Tic-tac-toe, game budgets (``max_games``), ``sync_every = 0`` (after every game): no assertion
depends on the machine's speed. tests/test_ray_sync.py carries the same messages through Ray."""
import json
from pathlib import Path

from training.replication import (MemberSync, ShippedMembers, apply_sync, pack, prepare_member,
                                  shipped_files, train_shipped, unpack)

TINY = """
[game]
spec = "tic_tac_toe"
[network]
filters = 4
blocks = 1
head_units = 8
[selfplay]
iterations = 10
[training]
replay_games = 6
min_sample = 32
batch_size = 32
[run]
sync_every = {every}
"""
BUDGET = 1e6                       # seconds: the game budgets (max_games) stop the members
MILESTONES = [("0s", 0.0)]         # written before the first game: a milestone file to sync


def tiny_cfg(tmp_path, every=0):
    from descent.config import load_config
    path = tmp_path / "tiny.toml"
    path.write_text(TINY.format(every=every))
    return load_config(path)


def log_games(mdir: Path) -> list[int]:
    path = mdir / "log.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["game"] for line in path.read_text().splitlines() if line.strip()]


def state_games(mdir: Path) -> int:
    from training.network import read_meta
    return read_meta(mdir / "latest.h5")["counters"]["games"]


def check_member(mdir: Path) -> int:
    """The driver's copy is whole: a loadable state, one log line per counted game, in order."""
    games = state_games(mdir)
    assert log_games(mdir) == list(range(1, games + 1))
    return games


def job_of(cfg, run_dir, max_games, member=0):
    from training.run import runtime_config, training_config
    from training.trainer import MemberJob
    return MemberJob(str(run_dir), member, "tic_tac_toe", training_config(cfg), BUDGET, MILESTONES,
                     member, max_games=max_games, extra=runtime_config(cfg))


def test_member_sync_keeps_the_driver_copy_resumable(tmp_path):
    """The hook and the driver's writes without Ray: a member trained in a scratch directory in
    two calls (shipped from the driver's copy each time) leaves the driver's copy whole after
    every copy, and a local resume of that copy continues it."""
    from training.layout import member_dir
    from training.trainer import train_member
    cfg = tiny_cfg(tmp_path, every=0)
    driver = member_dir(tmp_path / "run", 0)
    seen, calls = [], []

    def call(max_games, every):
        calls.append(max_games)
        scratch = tmp_path / f"scratch{len(calls)}"
        last = {"game": prepare_member(driver)}
        mdir = member_dir(scratch, 0)
        unpack(pack(driver, shipped_files(False)), mdir)
        assert not (mdir / "log.jsonl").exists() and not (mdir / "replay").exists()

        def send(msg):
            last["game"] = apply_sync(driver, msg, last["game"], 6)
            seen.append((msg["event"], check_member(driver)))
        job = job_of(cfg, scratch, max_games)
        return train_member(job, on_saved=MemberSync(mdir, 0, every, send))

    first = call(5, 0.0)
    assert first["games"] == 5 and [e for e, _ in seen] == ["game"] * 5 + ["end"]
    assert (driver / "milestone_0s.weights.h5").exists() and (driver / "status.json").exists()
    assert list((driver / "tensorboard").glob("events.out.tfevents.*"))
    seen.clear()
    second = call(3, 1e6)                     # a long interval: only the end is sent
    assert second["games"] == 8 and seen == [("end", 8)]
    # the driver's copy resumes locally, as any run directory does
    third = train_member(job_of(cfg, tmp_path / "run", 2))
    assert third["games"] == 10 and check_member(driver) == 10


def test_a_rotated_log_reaches_the_driver_whole(tmp_path):
    """With a log cap small enough that the worker's log.jsonl rotates into archives between two
    copies (``training.logfiles``), the copy still carries every game's line, and the driver's log
    rotates under the same cap."""
    from training.logfiles import archives, read_history
    from training.layout import member_dir
    from training.trainer import train_member
    cfg = tiny_cfg(tmp_path, every=1e6)
    cfg["run"]["log_max_mb"] = 0.01
    driver, scratch = member_dir(tmp_path / "run", 0), member_dir(tmp_path / "scratch", 0)
    last = {"game": prepare_member(driver, 0.01)}

    def send(msg):
        last["game"] = apply_sync(driver, msg, last["game"], 6, 0.01)
    scratch.mkdir(parents=True)
    result = train_member(job_of(cfg, tmp_path / "scratch", 8),
                          on_saved=MemberSync(scratch, 0, 1e6, send))
    assert result["games"] == 8 and archives(scratch)       # the worker's log rotated
    assert [r["game"] for r in read_history(driver, unique=False)] == list(range(1, 9))
    assert archives(driver) and state_games(driver) == 8


def test_shipped_members_keep_the_driver_copy_and_ignore_a_lost_attempt(tmp_path):
    """The driver's bookkeeping (``ShippedMembers``) with the worker's side (``train_shipped``)
    joined by a list instead of a queue: the first attempt is lost after its copies were taken
    (its late copies are ignored once the member is shipped again); the second continues from
    the synced state and ends with every game counted and logged once."""
    from training.layout import member_dir
    cfg = tiny_cfg(tmp_path, every=0)
    run = tmp_path / "run"
    members = ShippedMembers(replay=False)
    sent = members.ship(job_of(cfg, run, 4))
    assert sent.done is None and sent.attempt == 0 and sent.job.max_games == 4
    late: list = []
    first = train_shipped(sent.job, sent.archive, lambda rec: None, late.append, sent.attempt)
    assert first["games"] == 4 and [m["event"] for m in late][-1] == "end"
    for msg in late[:2]:                       # two copies arrived, then the worker was lost
        assert members.receive(msg)["games"] == msg["games"]
    assert members.lost(0) == 1 and members.synced[0] == 2
    again = members.ship(job_of(cfg, run, 4))  # from the driver's copy: 2 games, 2 left
    assert again.attempt == 1 and again.job.max_games == 2
    assert all(members.receive(msg) is None for msg in late[2:])     # the lost attempt's
    copies: list = []
    second = train_shipped(again.job, again.archive, lambda rec: None, copies.append, again.attempt)
    infos = [members.receive(msg) for msg in copies]
    assert second["games"] == 4 and infos[-1]["event"] == "end" and members.synced[0] == 4
    assert check_member(member_dir(run, 0)) == 4
    done = members.ship(job_of(cfg, run, 4))   # every game played and synced: nothing to ship
    assert done.done is not None and done.done["games"] == 4 and done.archive == b""
