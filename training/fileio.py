"""Files that survive a kill at any moment: atomic writes, fsync'd appends, locks, temp-file cleanup
and the crash points that tests use to kill a process at an exact place.

Every module that writes a file the project later reads (training, calibration, adaptive
profiles, reports, pools) goes through here. The rules:

* **Atomic write** (``write_bytes``/``write_text``/``write_json``, or ``atomic_target`` for a
  writer that needs a path, such as HDF5): the data goes to a temporary file in the same directory,
  ``.<name>.tmp<PID>``, which is fsynced, renamed over the target and the directory fsynced. A kill
  at any point leaves the old file or the new one, never a torn one; at worst a temporary file
  stays behind. JSON is written with ``allow_nan=False``: NaN or infinity is refused
  (``NonFiniteJSON``) instead of producing a file other readers reject.
* **Append** (``append_line``/``append_json``): one whole line in one ``write`` on a file opened
  with ``O_APPEND``, then fsync; a kill leaves at most a torn last line, which readers drop.
* **Lock** (``FileLock``): ``fcntl.flock`` on a lock file, released by the kernel when the process
  ends (even by SIGKILL). Non-blocking, blocking, or waiting up to a timeout (``LockBusy``).
* **Cleanup** (``clean_temp_files``): temporary files left by writes killed before their rename.
  Call it while holding the lock that covers the files; it removes a temporary file only when its
  owner (the PID in its name) is no longer alive, or when the caller says the file's target is in
  the scope of the lock it holds. A live writer's temporary file is never removed.
* **Crash points** (``crash_point``): ``DESCENT_CRASH_AT=<name>:<n>`` kills the process (SIGKILL)
  the n-th time it reaches ``name``.

This module imports nothing from ``descent`` and not TensorFlow: every layer may use it.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import signal
import time
from pathlib import Path

from games.errors import GameError

CRASH_ENV = "DESCENT_CRASH_AT"


class NonFiniteJSON(ValueError):
    """A JSON record to be written holds NaN or an infinity (JSON has no such numbers)."""


class LockBusy(GameError):
    """A lock held by another process (``FileLock`` with ``timeout`` not ``None``)."""

    def __init__(self, message: str, path: Path | None = None):
        super().__init__(message)
        self.path = path


# ---- crash points ---------------------------------------------------------------------------------

_CRASH_COUNTS: dict = {}


def crash_point(name: str) -> None:
    """A test hook: ``DESCENT_CRASH_AT=<name>:<n>`` kills this process (SIGKILL, like ``kill -9``)
    the n-th time it reaches the point ``name`` (n = 1 if omitted), so kill tests aim at an exact
    point instead of a moment. Points: ``tmp_written`` (a temporary file written and fsynced, not
    yet renamed; ``tmp_written.<file name>`` for one file), ``renamed`` (``renamed.<file name>``:
    renamed, directory not yet fsynced), ``appended`` (``appended.<file name>``: a line appended and
    fsynced), the trainer's ``replay_written``, ``state_saved``, ``log_written`` and
    ``network_published`` (a version published for the actors), an actor's ``actor_writing`` (a
    game written under its temporary name) and ``actor_shipped`` (renamed into the inbox; a
    restarted actor does not inherit the variable), calibration's
    ``calibrate_logged`` (a game appended to its log) and the tournament's ``match_stored`` (a
    match written to ``results.db``). Without the variable it does nothing."""
    spec = os.environ.get(CRASH_ENV)
    if not spec:
        return
    target, _, count = spec.partition(":")
    if target != name:
        return
    _CRASH_COUNTS[name] = _CRASH_COUNTS.get(name, 0) + 1
    if _CRASH_COUNTS[name] == int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)


# ---- atomic writes --------------------------------------------------------------------------------

def temp_path(path) -> Path:
    """The temporary name of ``path`` for this process: ``.<name>.tmp<PID>`` in the same directory."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def fsync_dir(directory) -> None:
    """Make a rename in ``directory`` durable (best effort: some filesystems refuse)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def commit(tmp, path) -> None:
    """Fsync the finished temporary file ``tmp``, rename it to ``path`` and fsync the directory."""
    tmp, path = Path(tmp), Path(path)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    crash_point("tmp_written")
    crash_point(f"tmp_written.{path.name}")
    os.replace(tmp, path)
    crash_point(f"renamed.{path.name}")
    fsync_dir(path.parent)


@contextlib.contextmanager
def atomic_target(path):
    """``with atomic_target(path) as tmp:`` write the whole file to ``tmp`` (a ``Path``); on a
    normal exit it replaces ``path`` atomically (``commit``), on an exception it is removed and
    ``path`` is left as it was."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        yield tmp
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    commit(tmp, path)


def write_bytes(path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically (temporary file, fsync, rename, fsync directory)."""
    with atomic_target(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def write_text(path, text: str) -> None:
    """``write_bytes`` of ``text`` encoded as UTF-8."""
    write_bytes(path, text.encode("utf-8"))


def check_writable_dir(directory, error=GameError, what: str = "folder") -> Path:
    """Create ``directory`` if needed and write (then remove) a probe file in it: ``error`` with one
    line naming it when this process cannot (a read-only mount, no permission, a path under a
    regular file, a full disk). For the check before a long job starts, not after its first result.
    A probe left by a kill is a temporary file of a dead process (``clean_temp_files``)."""
    d = Path(directory)
    probe = temp_path(d / ".write-probe")
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, b"probe")
        finally:
            os.close(fd)
        probe.unlink()
    except OSError as exc:
        raise error(f"{what} {d}: cannot write there ({exc.strerror or exc})") from None
    return d


def json_text(data, indent=2, sort_keys: bool = True, what: str = "JSON record") -> str:
    """``data`` as JSON text; ``NonFiniteJSON`` naming ``what`` if it holds NaN or an infinity."""
    try:
        return json.dumps(data, indent=indent, sort_keys=sort_keys, allow_nan=False)
    except ValueError as exc:
        if "compliant" not in str(exc):
            raise
        raise NonFiniteJSON(f"{what}: refusing to write NaN or infinity "
                            f"(at {_non_finite_key(data) or '?'})") from None


def _non_finite_key(data, where: str = "") -> str | None:
    if isinstance(data, float) and (data != data or data in (float("inf"), float("-inf"))):
        return where or "top level"
    if isinstance(data, dict):
        for k, x in data.items():
            found = _non_finite_key(x, f"{where}.{k}" if where else str(k))
            if found:
                return found
    elif isinstance(data, (list, tuple)):
        for i, x in enumerate(data):
            found = _non_finite_key(x, f"{where}[{i}]")
            if found:
                return found
    return None


def write_json(path, data, indent=2, sort_keys: bool = True) -> None:
    """Replace ``path`` by ``data`` as JSON atomically; ``NonFiniteJSON`` (nothing written) if
    ``data`` holds NaN or an infinity."""
    path = Path(path)
    write_text(path, json_text(data, indent, sort_keys, what=str(path)) + "\n")


# ---- appends --------------------------------------------------------------------------------------

def append_line(path, line: str) -> None:
    """Append ``line`` (a newline is added if missing) to ``path`` in one ``write`` and fsync it:
    after it returns the line is on disk whole; a kill before leaves at most a torn last line."""
    append_bytes(path, (line if line.endswith("\n") else line + "\n").encode("utf-8"))


def append_bytes(path, data: bytes) -> None:
    """Append ``data`` to ``path`` (created if missing) and fsync it (``append_line``'s write:
    a kill before it returns leaves at most a torn tail)."""
    path = Path(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    crash_point(f"appended.{path.name}")


def append_json(path, record, sort_keys: bool = False) -> None:
    """Append ``record`` as one JSON line (``append_line``); ``NonFiniteJSON`` if it holds NaN or
    an infinity (nothing is written)."""
    path = Path(path)
    append_line(path, json_text(record, None, sort_keys, what=f"line of {path}"))


# ---- locks ----------------------------------------------------------------------------------------

class FileLock:
    """An exclusive ``flock`` on ``path`` (created if needed), as a context manager.

    ``timeout=0`` (default): fail at once if another process holds it; ``None``: wait as long as
    it takes; a number: wait up to that many seconds. Failing raises ``error`` (default
    ``LockBusy``) with the message ``busy`` (default: one naming the lock file). The lock belongs to the open file: it excludes other
    processes and other ``FileLock`` objects of this process, and the kernel releases it when the
    process ends, even by SIGKILL. The holder's PID is written in the file (for people reading it).

    ``remove=True``: the holder deletes the lock file before it releases it, so a folder is left as
    it was found; a file left by a killed holder is taken over by the next one and deleted then. A
    waiter that wins a file already deleted under it opens the new one and waits again (only the
    lock on the file at ``path`` counts).
    """

    def __init__(self, path, timeout: float | None = 0, busy: str | None = None, error=LockBusy,
                 poll: float = 0.05, remove: bool = False):
        self.path = Path(path)
        self.timeout, self.busy, self.error, self.poll = timeout, busy, error, poll
        self.remove = remove
        self.fd: int | None = None

    def acquire(self) -> FileLock:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            fd = self._lock_open_file(deadline)
            if not self.remove or _same_file(fd, self.path):
                break
            os.close(fd)                   # its holder deleted it while this process waited
        try:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        except OSError:
            pass
        self.fd = fd
        return self

    def _lock_open_file(self, deadline: float | None) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if deadline is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
                return fd
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return fd
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise self.error(self.busy or f"{self.path}: locked by another process") from None
                    time.sleep(self.poll)
        except BaseException:
            os.close(fd)
            raise

    def release(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            try:
                if self.remove:
                    with contextlib.suppress(FileNotFoundError):
                        self.path.unlink()
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    @property
    def held(self) -> bool:
        return self.fd is not None

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _same_file(fd: int, path: Path) -> bool:
    """Whether the open file ``fd`` is still the file at ``path``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino)


# ---- cleanup of temporary files --------------------------------------------------------------------

# .<name>.tmp<PID> (temp_path); also the older .<name>.<PID>.tmp and .<name>.tmp (no owner known)
_TMP_NAMES = (re.compile(r"^\.(?P<target>.+)\.tmp(?P<pid>\d+)$"),
              re.compile(r"^\.(?P<target>.+)\.(?P<pid>\d+)\.tmp$"),
              re.compile(r"^\.(?P<target>.+)\.tmp$"))


def parse_temp_name(name: str) -> tuple[str, int | None] | None:
    """``(target name, owner PID or None)`` of a temporary file's name, or ``None`` if it is not one."""
    for pattern in _TMP_NAMES:
        m = pattern.match(name)
        if m:
            pid = m.groupdict().get("pid")
            return m.group("target"), int(pid) if pid else None
    return None


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (this process counts as alive)."""
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError as exc:
        return exc.errno != errno.ESRCH
    return True


def clean_temp_files(directory, recursive: bool = False, scope=None) -> list[Path]:
    """Remove the temporary files that writes killed before their rename left in ``directory``.

    Call it while holding the lock that covers the directory's writers. A temporary file is removed
    when the process named in it is dead, or when ``scope`` (a collection of target names, or a
    function of the target name) says its target is covered by the lock the caller holds, so that
    no live writer can own it. A live process's temporary file outside the scope is kept, and so is
    one without an owner PID outside the scope. Returns what was removed."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    if scope is None:
        in_scope = lambda target: False          # noqa: E731
    elif callable(scope):
        in_scope = scope
    else:
        names = set(scope)
        in_scope = names.__contains__
    found = directory.rglob(".*tmp*") if recursive else directory.glob(".*tmp*")
    removed = []
    for p in sorted(found):
        parsed = parse_temp_name(p.name)
        if parsed is None or not p.is_file():
            continue
        target, pid = parsed
        if in_scope(target) or (pid is not None and not pid_alive(pid)):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                removed.append(p)
    return removed
