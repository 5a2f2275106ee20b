"""A member's logs stay under ``log_max_mb`` (issue 20, item 6): ``log.jsonl`` rotates into gzip
archives that are thinned as they fill up, TensorBoard rolls to new event files and deletes the
oldest; a kill in the middle of a rotation or a thinning resumes with exactly one record per
counted game; the readers see every record kept. Game budgets only (no timing)."""
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from test_training import ENV, TINY as TRAINING_TINY
from training.fileio import append_json
from training.layout import LOG_FILE
from training.logfiles import (LogCaps, archived_through, archives, last_game, read_archive,
                               read_history, rotate_log)



def record(g: int) -> dict:
    return {"member": 0, "game": g, "examples": 7, "loss": 0.5 / g, "note": "x" * 200}


def log_bytes(mdir: Path) -> int:
    return sum(p.stat().st_size for p in mdir.iterdir()
               if p.name == LOG_FILE or p.name.endswith(".jsonl.gz"))


def one_line(g: int) -> int:
    return len(json.dumps(record(g))) + 1


def games_of(recs) -> list[int]:
    return [int(r["game"]) for r in recs]


def test_rotation_keeps_every_game_while_the_archives_fit(tmp_path):
    cap = 0.05                                  # 26 KB for the game log: archives never thinned
    for g in range(1, 121):
        append_json(tmp_path / LOG_FILE, record(g))
        rotate_log(tmp_path, cap)
    arcs = archives(tmp_path)
    assert len(arcs) >= 3 and all(a.every == 1 for a in arcs)
    assert games_of(read_history(tmp_path)) == list(range(1, 121))
    assert last_game(tmp_path) == 120
    live = games_of(json.loads(x) for x in (tmp_path / LOG_FILE).read_text().splitlines())
    assert all(g > archived_through(arcs) for g in live)


def test_thinned_archives_stay_under_the_cap(tmp_path):
    cap = 0.02
    half = LogCaps(cap).half
    most = 0
    for g in range(1, 1001):
        append_json(tmp_path / LOG_FILE, record(g))
        most = max(most, log_bytes(tmp_path))
        rotate_log(tmp_path, cap)
        most = max(most, log_bytes(tmp_path))
    assert most <= half + one_line(1000)        # the cap plus one record, at every moment
    arcs = archives(tmp_path)
    assert max(a.every for a in arcs) > 1 and arcs[-1].every == 1       # thinned, but the newest
    hist = games_of(read_history(tmp_path))
    assert hist == sorted(set(hist)) and hist[-1] == 1000
    recent = arcs[-1].first                     # the newest archive and log.jsonl: every game
    assert [g for g in hist if g >= recent] == list(range(recent, 1001))
    for a in arcs:                              # the older ones: a stride, coarser with age
        assert all(a.first <= g <= a.last and g % a.every == 0
                   for g in games_of(read_archive(a.path)))
    assert len([g for g in hist if g < recent]) >= 5      # the run's start still in the curve


SCRIPT = """
import sys
from pathlib import Path
from training.fileio import append_json
from training.layout import LOG_FILE
from training.logfiles import rotate_log
d, first, last, cap = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
for g in range(first, last + 1):
    append_json(d / LOG_FILE, {"member": 0, "game": g, "examples": 7, "note": "x" * 200})
    rotate_log(d, cap)
"""


@pytest.mark.parametrize("crash", ["log_archived:2", "log_thinned:1", "log_thinned:2",
                                   "tmp_written.log.jsonl:2", "renamed.log.jsonl:1"])
def test_a_kill_in_a_rotation_resumes_with_one_record_per_game(tmp_path, crash):
    """Killed in a rotation or a thinning (the process appends a game, then rotates), then
    resumed as the trainer does (``repair_logs`` with the state's count and last record)."""
    from training.trainer import repair_logs
    cap = 0.01
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), "1", "600", str(cap)],
                       env=dict(ENV, DESCENT_CRASH_AT=crash), capture_output=True, text=True)
    assert r.returncode == -signal.SIGKILL, f"{crash} not reached: {r.stderr}"
    n = last_game(tmp_path)                     # the state counts the game logged last
    repair_logs(tmp_path, n, {**record(n), "game": n}, log_max_mb=cap)
    arcs = archives(tmp_path)
    assert len({(a.first, a.last) for a in arcs}) == len(list(tmp_path.glob("*.jsonl.gz")))
    live = games_of(json.loads(x) for x in (tmp_path / LOG_FILE).read_text().splitlines())
    assert all(g > archived_through(arcs) for g in live) and live == sorted(set(live))
    assert last_game(tmp_path) == n
    all_read = games_of(read_history(tmp_path, unique=False))
    assert len(all_read) == len(set(all_read))   # no game twice anywhere
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(n + 1), str(n + 50),
                        str(cap)], env=ENV, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    hist = games_of(read_history(tmp_path, unique=False))
    assert hist == sorted(set(hist)) and hist[-1] == n + 50
    assert log_bytes(tmp_path) <= LogCaps(cap).half + one_line(n + 50)


def test_tensorboard_rolls_and_deletes_the_oldest_event_files(tmp_path):
    from training import import_tensorflow
    from training.logfiles import RollingWriter
    from training.trainer import _logged_scalars
    tf = import_tensorflow()
    cap = 0.01
    w = RollingWriter(tf, tmp_path / "tb", cap)
    half = LogCaps(cap).half
    for g in range(1, 301):
        with w.as_default(step=g):
            for k in ("loss", "value_error", "e"):
                tf.summary.scalar(k, 1.0 / g)
        w.flush()
        assert sum(p.stat().st_size for p in (tmp_path / "tb").iterdir()) <= half + 400
    w.close()
    files = list((tmp_path / "tb").iterdir())
    assert len(files) >= 2
    steps = {s for s, _ in _logged_scalars(tmp_path / "tb")}
    assert 300 in steps and 1 not in steps                # the recent steps kept, the oldest gone
    assert steps == set(range(min(steps), 301))


# test_training's tiny network with a replay window of 4 games (its [run] keys are overridden
# by the command line below)
TINY = TRAINING_TINY.replace("replay_games = 30", "replay_games = 4")
assert "replay_games = 4" in TINY


def test_training_with_a_tiny_log_cap_killed_mid_rotation(tmp_path):
    """``descent train --log-max-mb`` far below a run's logs: killed in a rotation and in a
    thinning, resumed; every counted game is logged once (or thinned out of an archive), the
    logs stay under the cap, and the TensorBoard scalars of the recent games are all there."""
    from training.trainer import SCALARS, _logged_scalars
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY)
    run = tmp_path / "run"
    mdir = run / "member_00"
    cap = 0.006
    args = ["train", "tic_tac_toe", "--config", str(cfg), "--out", str(run), "--budget", "1h",
            "--milestones", "1h", "--inference", "numpy", "--games-in-flight", "2",
            "--log-max-mb", str(cap)]

    def train(games: int, crash: str | None):
        env = dict(ENV, DESCENT_CRASH_AT=crash) if crash else ENV
        return subprocess.run([sys.executable, "-m", "descent", *args, "--max-games", str(games)],
                              capture_output=True, text=True, env=env, timeout=600)

    for crash in ("log_archived:2", "log_thinned:1"):
        r = train(40, crash)
        assert r.returncode == -signal.SIGKILL, f"{crash}: not reached ({r.returncode}) {r.stderr}"
    r = train(6, None)
    assert r.returncode == 0, r.stderr
    from training.network import read_meta
    n = read_meta(mdir / "latest.h5")["counters"]["games"]
    assert n >= 6
    arcs = archives(mdir)
    assert arcs and max(a.every for a in arcs) > 1          # rotated and thinned
    raw = games_of(read_history(mdir, unique=False))
    assert raw == sorted(set(raw)) and raw[-1] == n        # one record per game kept, in order
    recent = arcs[-1].first                                 # newest archive + log.jsonl: all
    assert [g for g in raw if g >= recent] == list(range(recent, n + 1))
    through = archived_through(arcs)
    assert log_bytes(mdir) <= LogCaps(cap).half + 2048
    tb = sum(p.stat().st_size for p in (mdir / "tensorboard").iterdir())
    assert tb <= LogCaps(cap).half + 4096
    have = _logged_scalars(mdir / "tensorboard")
    floor = min(s for s, t in have if t in SCALARS)
    assert floor > 1                                        # old event files deleted
    for g in range(max(floor, through + 1), n + 1):         # the recent games: every scalar
        assert all((g, k) in have for k in SCALARS), g
