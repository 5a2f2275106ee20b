"""training.fileio: atomic writes that a kill at any point leaves old or new, NaN refused, fsync'd
whole-line appends, the lock between processes, temp-file cleanup that spares live writers; and the
two races it fixes: a calibration's cleanup deleting another's temporary file, and two games of one
person losing a profile update.

Kills are aimed with crash points (``DESCENT_CRASH_AT``) in child processes, or sent while a child
writes in a loop; every wait is on a file's content or a process, never on a duration."""
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from training import fileio
from training.fileio import (FileLock, LockBusy, NonFiniteJSON, append_json, append_line, clean_temp_files,
                             parse_temp_name, pid_alive, temp_path, write_bytes, write_json, write_text)

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")


def child(script: str, crash: str | None = None, **kw) -> subprocess.CompletedProcess:
    env = dict(ENV, DESCENT_CRASH_AT=crash) if crash else {k: v for k, v in ENV.items() if k != "DESCENT_CRASH_AT"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          env=env, **kw)


def start(script: str) -> subprocess.Popen:
    env = {k: v for k, v in ENV.items() if k != "DESCENT_CRASH_AT"}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def dead_pid() -> int:
    """The PID of a process that has ended (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def no_temp_files(directory) -> bool:
    return not [p for p in directory.iterdir() if parse_temp_name(p.name)]


# ---- atomic writes ---------------------------------------------------------------------------------

WRITE_NEW = """
    from training.fileio import write_json
    write_json({path!r}, {{"version": "new", "pad": "y" * 100000}})
    print("returned")
"""


@pytest.mark.parametrize("point", ["tmp_written", "tmp_written.data.json", "renamed.data.json", None])
def test_atomic_write_killed_at_a_point_leaves_old_or_new(tmp_path, point):
    path = tmp_path / "data.json"
    write_json(path, {"version": "old"})
    r = child(WRITE_NEW.format(path=str(path)), crash=f"{point}:1" if point else None)
    data = json.loads(path.read_text())
    if point is None:
        assert r.returncode == 0 and "returned" in r.stdout
        assert data["version"] == "new" and no_temp_files(tmp_path)
    else:
        assert r.returncode == -signal.SIGKILL and "returned" not in r.stdout
        # killed before the rename: the old file and the killed writer's temporary file
        assert data["version"] == ("new" if point.startswith("renamed") else "old")
        left = [p for p in tmp_path.iterdir() if parse_temp_name(p.name)]
        assert len(left) == (0 if point.startswith("renamed") else 1)
        # its writer is dead: a cleanup removes it, and the file is untouched
        clean_temp_files(tmp_path)
        assert no_temp_files(tmp_path) and json.loads(path.read_text()) == data


def test_atomic_write_killed_at_any_moment_leaves_a_whole_version(tmp_path):
    """A child rewrites the file in a loop (versions of different sizes); it is killed (SIGKILL)
    once several versions were seen; the file is then exactly one whole version."""
    path = tmp_path / "loop.json"
    write_json(path, {"i": -1, "pad": ""})
    for round_ in range(3):
        p = start(f"""
            from training.fileio import write_json
            i = 0
            while True:
                write_json({str(path)!r}, {{"i": i, "pad": "x" * (1000 * (i % 50))}})
                i += 1
        """)
        try:
            seen = -1
            while seen < 5 + 7 * round_:                 # wait on the content, not on time
                try:
                    seen = json.loads(path.read_text())["i"]
                except (FileNotFoundError, ValueError):
                    pytest.fail("a reader saw a missing or torn file")
        finally:
            p.kill()
            p.wait()
        data = json.loads(path.read_text())
        assert data == {"i": data["i"], "pad": "x" * (1000 * (data["i"] % 50))}
        clean_temp_files(tmp_path)
        assert no_temp_files(tmp_path)


def test_write_refuses_nan_and_infinity_and_leaves_the_file(tmp_path):
    path = tmp_path / "m.json"
    write_json(path, {"loss": 0.5})
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(NonFiniteJSON, match=r"m\.json: refusing to write NaN or infinity \(at a\.b\[1\]\)"):
            write_json(path, {"a": {"b": [1.0, bad]}})
        with pytest.raises(ValueError):                 # NonFiniteJSON is a ValueError
            append_json(tmp_path / "log.jsonl", {"loss": bad})
    assert json.loads(path.read_text()) == {"loss": 0.5}
    assert not (tmp_path / "log.jsonl").exists() or (tmp_path / "log.jsonl").read_text() == ""
    assert no_temp_files(tmp_path)


def test_write_bytes_text_and_failed_writer(tmp_path):
    write_bytes(tmp_path / "b.bin", b"\x00\x01")
    write_text(tmp_path / "t.txt", "é\n")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "é\n"
    assert temp_path(tmp_path / "t.txt").name == f".t.txt.tmp{os.getpid()}"
    # a writer that fails inside atomic_target leaves the old file and no temporary file
    with pytest.raises(RuntimeError):
        with fileio.atomic_target(tmp_path / "t.txt") as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "é\n" and no_temp_files(tmp_path)


# ---- appends ---------------------------------------------------------------------------------------

def test_append_killed_after_a_line_keeps_whole_lines(tmp_path):
    log = tmp_path / "log.jsonl"
    r = child(f"""
        from training.fileio import append_json
        for i in range(10):
            append_json({str(log)!r}, {{"game": i, "pad": "z" * 5000}})
    """, crash="appended.log.jsonl:3")
    assert r.returncode == -signal.SIGKILL
    lines = log.read_text().split("\n")
    assert lines[-1] == "" and [json.loads(x)["game"] for x in lines[:-1]] == [0, 1, 2]


def test_append_is_fsynced_before_it_returns(tmp_path, monkeypatch):
    log = tmp_path / "log.jsonl"
    synced, real = [], os.fsync

    def spy(fd):
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), os.fstat(fd).st_size))
        return real(fd)
    monkeypatch.setattr(fileio.os, "fsync", spy)
    append_line(log, "first")
    append_json(log, {"second": 2})
    assert synced == [(str(log), len("first\n")), (str(log), len("first\n") + len('{"second": 2}\n'))]
    assert log.read_text() == 'first\n{"second": 2}\n'


def test_appends_of_two_processes_never_interleave(tmp_path):
    log = tmp_path / "log.jsonl"
    script = f"""
        from training.fileio import append_json
        import sys
        for i in range(150):
            append_json({str(log)!r}, {{"who": sys.argv[1], "i": i, "pad": sys.argv[1] * 3000}})
    """
    env = {k: v for k, v in ENV.items() if k != "DESCENT_CRASH_AT"}
    ps = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), w], env=env) for w in "ab"]
    assert [p.wait() for p in ps] == [0, 0]
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(recs) == 300 and all(r["pad"] == r["who"] * 3000 for r in recs)
    for w in "ab":
        assert [r["i"] for r in recs if r["who"] == w] == list(range(150))


# ---- the lock --------------------------------------------------------------------------------------

TRY_LOCK = """
    from training.fileio import FileLock, LockBusy
    try:
        with FileLock({path!r}, timeout={timeout}):
            print("got it")
    except LockBusy as exc:
        print("busy:", exc)
"""


def test_lock_excludes_a_second_process_until_released(tmp_path):
    path = tmp_path / "dir.lock"
    with FileLock(path, busy="the folder is busy") as lock:
        assert lock.held and path.read_text() == str(os.getpid())
        r = child(TRY_LOCK.format(path=str(path), timeout=0))
        assert r.stdout.strip() == f"busy: {path}: locked by another process"
        r = child(TRY_LOCK.format(path=str(path), timeout=0.2))        # waits, then gives up
        assert r.stdout.startswith("busy:")
        # a second lock object in this process is excluded too (flock is per open file)
        with pytest.raises(LockBusy, match="the folder is busy"):
            FileLock(path, busy="the folder is busy").acquire()

        class Mine(Exception):
            pass
        with pytest.raises(Mine):
            FileLock(path, error=Mine).acquire()
    assert not lock.held
    assert child(TRY_LOCK.format(path=str(path), timeout=0)).stdout.strip() == "got it"


def test_lock_of_a_killed_holder_is_released_and_a_waiter_gets_it(tmp_path):
    path = tmp_path / "dir.lock"
    holder = start(f"""
        import sys
        from training.fileio import FileLock
        with FileLock({str(path)!r}):
            print("held", flush=True)
            sys.stdin.readline()
    """)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert child(TRY_LOCK.format(path=str(path), timeout=0)).stdout.startswith("busy:")
        waiter = start(TRY_LOCK.format(path=str(path), timeout=None))     # blocks until released
        holder.kill()
        holder.wait()
        out, _ = waiter.communicate(timeout=120)
        assert out.strip() == "got it"
    finally:
        holder.kill()
        holder.wait()


def test_a_removing_lock_leaves_the_folder_as_it_found_it(tmp_path):
    """``remove=True``: the holder deletes the lock file; one a killed holder left is taken over and
    deleted; a waiter whose file was deleted under it locks the new file, so two holders never overlap."""
    path = tmp_path / ".report.lock"
    with FileLock(path, remove=True):
        assert path.read_text() == str(os.getpid())
    assert not path.exists()
    holder = start(f"""
        import sys
        from training.fileio import FileLock
        with FileLock({str(path)!r}, remove=True):
            print("held", flush=True)
            sys.stdin.readline()
    """)
    try:
        assert holder.stdout.readline().strip() == "held"
        holder.kill()                                  # killed holding it: the file stays
        holder.wait()
    finally:
        holder.kill()
        holder.wait()
    assert path.exists()
    with FileLock(path, remove=True):
        assert path.read_text() == str(os.getpid())
    assert not path.exists()
    # a waiter that opened the file before its holder deleted it locks the new file, not the old one
    first = FileLock(path, remove=True).acquire()
    waiter = FileLock(path, timeout=None, remove=True)
    thread = threading.Thread(target=waiter.acquire)
    thread.start()
    while sum(os.path.realpath(f"/proc/self/fd/{fd}") == str(path) for fd in os.listdir("/proc/self/fd")
              if os.path.exists(f"/proc/self/fd/{fd}")) < 2:
        thread.join(0.01)                              # until the waiter has the file open
    first.release()
    thread.join()
    assert waiter.held and path.read_text() == str(os.getpid())
    with pytest.raises(LockBusy):
        FileLock(path, remove=True).acquire()
    waiter.release()
    assert not path.exists()


# ---- cleanup of temporary files --------------------------------------------------------------------

def test_cleanup_spares_live_writers_and_removes_dead_ones(tmp_path):
    live = start("import sys; sys.stdin.readline()")
    try:
        dead = dead_pid()
        assert pid_alive(live.pid) and not pid_alive(dead) and pid_alive(os.getpid())
        files = {
            "live": tmp_path / f".a.json.tmp{live.pid}",
            "live_old_style": tmp_path / f".b.json.{live.pid}.tmp",
            "dead": tmp_path / f".c.json.tmp{dead}",
            "dead_old_style": tmp_path / f".d.json.{dead}.tmp",
            "no_owner": tmp_path / ".e.json.tmp",
            "mine": tmp_path / f".f.json.tmp{os.getpid()}",
            "not_temp": tmp_path / "g.json",
            "hidden": tmp_path / ".lock",
        }
        (tmp_path / "sub").mkdir()
        files["dead_in_sub"] = tmp_path / "sub" / f".h.h5.tmp{dead}"
        for p in files.values():
            p.write_text("x")
        removed = clean_temp_files(tmp_path)
        assert sorted(removed) == sorted([files["dead"], files["dead_old_style"]])
        assert clean_temp_files(tmp_path, recursive=True) == [files["dead_in_sub"]]
        # the lock's scope: files whose target the caller's lock covers go, whoever wrote them
        assert sorted(clean_temp_files(tmp_path, scope={"a.json", "e.json"})) == \
            sorted([files["live"], files["no_owner"]])
        assert clean_temp_files(tmp_path, scope=lambda t: t.startswith("b.")) == [files["live_old_style"]]
        assert all(files[k].exists() for k in ("mine", "not_temp", "hidden"))
    finally:
        live.kill()
        live.wait()
    assert parse_temp_name(".x.json.tmp12") == ("x.json", 12)
    assert parse_temp_name(".x.json.12.tmp") == ("x.json", 12)
    assert parse_temp_name(".x.json.tmp") == ("x.json", None)
    assert parse_temp_name("x.json") is None and parse_temp_name(".lock") is None


# ---- race 1: a calibration's cleanup and another calibration's temporary files --------------------

class Curve:
    """Games whose gain follows tanh(ln b - ln 50) (seeded): a calibration that needs no engine."""

    def play(self, budget, k):
        import random
        rng = random.Random(f"{budget}|{k}")
        y = 1 if rng.random() < (1 + math.tanh(math.log(budget) - math.log(50))) / 2 else -1
        return {"budget": budget, "k": k, "a_first": k % 2 == 0, "result": y, "score": 0.5 * y,
                "plies": 10, "opponent": "curve"}


def test_calibration_cleanup_spares_another_live_calibrations_temp_files(tmp_path):
    """Another calibration (another log, so another lock) is writing its result and rewriting its
    log: its temporary files (this version's names and the older ones) survive this calibration's
    cleanup, done under this calibration's lock; a dead writer's and this calibration's own stale
    ones go."""
    from descent.calibrate import Settings, calibrate, lock_log, names
    from training.layout import CALIBRATIONS_DIR as SUBDIR
    game = "breakthrough(rows=5,cols=5)"
    mine = Settings(game, algorithm="minibal_plus:eval=playout,playouts=4", against="random", low=1, high=300)
    other = Settings(game, algorithm="minimax:eval=playout,playouts=4", against="random", low=1, high=300)
    (my_res, my_log), (res, log) = names(mine), names(other)
    assert my_log != log
    out = tmp_path / SUBDIR
    out.mkdir()
    writer = start("import sys; sys.stdin.readline()")          # the other calibration, alive
    try:
        dead = dead_pid()
        theirs = [out / f".{res}.tmp{writer.pid}", out / f".{log}.tmp{writer.pid}",
                  out / f".{res}.{writer.pid}.tmp",               # the names older versions wrote
                  out / f".{log}.tmp"]                            # no owner: not in my lock's scope
        gone = [out / f".{res}.tmp{dead}",                        # its writer died
                out / f".{my_res}.tmp{writer.pid}", out / f".{my_log}.tmp"]   # mine, under my lock
        for p in theirs + gone:
            p.write_text("partial")
        with lock_log(out / log):                     # the other calibration holds its own lock
            res_ = calibrate(mine, tmp_path, players=Curve())
        assert res_["status"] == "done"
        assert all(p.exists() and p.read_text() == "partial" for p in theirs)
        assert not any(p.exists() for p in gone)
        assert json.loads((out / my_res).read_text())["budget"] == res_["budget"]
    finally:
        writer.kill()
        writer.wait()


def test_calibration_result_holds_no_nan(tmp_path):
    """A budget measured by no game has no mean and no interval: null in the result file, not NaN
    or Infinity (two games, then the fit moves the answer to a budget not played yet)."""
    from descent.calibrate import Settings, calibrate, describe, names
    from training.layout import CALIBRATIONS_DIR as SUBDIR
    s = Settings("breakthrough(rows=5,cols=5)", algorithm="minibal_plus:eval=playout,playouts=4",
                 against="random", low=100, high=3000, max_games=2, near_games=30)
    res = calibrate(s, tmp_path, players=Curve())
    text = (tmp_path / SUBDIR / names(s)[0]).read_text()
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text)["points"] == res["points"]
    at = res["at_budget"]
    assert at["games"] == 0 and at["mean"] is None and at["radius"] is None
    assert "games spent" in describe(res) and "NOT converged" in describe(res)


# ---- race 2: two games of one person recorded at once ----------------------------------------------

RECORD = """
    import os, sys, time
    from descent.adaptive import Adaptive
    rungs = [{"algorithm": "minibal_plus", "net": None, "label": "a"},
             {"algorithm": "minimax", "net": None, "label": "b"}]
    go = sys.argv[1]
    a = Adaptive("Sam", "tic_tac_toe", start_iterations=100, rungs=rungs)   # both read the same profile
    print("ready", flush=True)
    while not os.path.exists(go):             # start together
        time.sleep(0.001)
    for i in range(int(sys.argv[2])):
        a.record(float(sys.argv[3]))
"""


def test_two_games_of_one_person_at_once_lose_no_update(tmp_path):
    n = 25
    env = {k: v for k, v in ENV.items() if k != "DESCENT_CRASH_AT"}
    env["DESCENT_DATA_DIR"] = str(tmp_path / "data")
    go = tmp_path / "go"
    ps = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(RECORD), str(go), str(n), score],
                           env=env, stdout=subprocess.PIPE, text=True) for score in ("1", "0")]
    for p in ps:
        assert p.stdout.readline().strip() == "ready"
    go.write_text("")
    assert [p.wait() for p in ps] == [0, 0]
    files = list((tmp_path / "data" / "profiles").glob("*.json"))
    assert len(files) == 1
    entry = json.loads(files[0].read_text())["games"]["tic_tac_toe"]
    assert entry["games"] == 2 * n
    assert sorted(h["score"] for h in entry["history"]) == [0.0] * n + [1.0] * n
    assert no_temp_files(files[0].parent)


def test_profile_update_applies_to_the_latest_profile_on_disk(tmp_path, monkeypatch):
    """In one process, two Adaptive objects of one person (two games begun from the same profile):
    each game's update is applied to what the other saved, in the order they end."""
    from descent import adaptive
    monkeypatch.setenv(adaptive.DATA_ENV, str(tmp_path / "data"))
    rungs = [{"algorithm": "minibal_plus", "net": None, "label": "a"},
             {"algorithm": "minimax", "net": None, "label": "b"}]
    a = adaptive.Adaptive("Kim", "tic_tac_toe", start_iterations=100, rungs=rungs)
    b = adaptive.Adaptive("Kim", "tic_tac_toe", start_iterations=100, rungs=rungs)
    first = a.record(1.0)                        # a person's win: 100 -> 400
    second = b.record(1.0)                       # b began at 100 but updates a's 400
    assert first == {"before": {"iterations": 100, "rung": 0}, "after": {"iterations": 400, "rung": 0}}
    assert second["before"]["iterations"] == 400 and second["after"]["iterations"] > 400
    saved = adaptive.Profile("Kim").data["games"]["tic_tac_toe"]
    assert saved["games"] == 2 and [h["iterations"] for h in saved["history"]] == [100, 100]
    assert b.iterations == second["after"]["iterations"]
