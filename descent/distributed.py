"""Running matches and population members on a Ray cluster (optional: ``pip install -e '.[ray]'``).

``--ray ADDRESS`` on ``train``, ``rank``, ``evaluate``, ``calibrate``, ``match``, ``pipeline`` and
``experiment``: ``auto`` (the cluster this machine belongs to), ``ray://host:10001`` or
``host:6379`` (an existing cluster), or ``local`` (a cluster started for the run on this
machine). The work units are unchanged: a match is
one Ray task, a population member one Ray task; results reach the driver, which alone writes the
SQLite database, so resumption and "no duplicates" work exactly as with the process pool. A task
lost with its worker is retried by Ray (``max_retries``); a retried match is keyed like the original,
and the database keeps one row per key. On connecting, every alive node must import the driver's
version of the package (``check_workers``): one line naming the node otherwise.

Files: training writes checkpoints and replay files under the run directory, a path every node sees
(a shared file system: NFS, a cluster volume; Ray retries a lost member, which resumes from there),
or, with ``--ray-ship``, the driver's disk alone: each member is trained in a scratch directory on
its worker, which receives the member's ``latest.h5`` (its replay window too with
``--ray-ship-replay``) and sends its state back every ``[run] sync_every`` seconds, after every
milestone and at the end (``MemberSync``, the member's ``on_saved`` hook, through the run's Ray
queue); the driver writes each copy atomically, in an order that keeps the member resumable at every
moment (``apply_sync``). A member lost with its node is shipped again by the driver from its last
copy, so it loses at most one interval; a driver killed and rerun continues every member from its
last copy. See docs/cluster.md, "What is synced where".
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import os
import re
import socket
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from games import validate
from games.errors import GameError
from training import layout
from training.fileio import append_bytes, clean_temp_files, json_text, write_bytes
from training.layout import REPLAY_DIR, STATE_FILE, member_dir
from training.logfiles import (
    LogCaps, archived_through, archives, event_files, prune_event_files, read_archive, rotate_log)
from training.network import read_meta
from training.trainer import repair_logs, runtime_options, train_member

CONNECT_TIMEOUT = 10.0     # seconds to reach a cluster's address before giving up
INIT_TIMEOUT = float(os.environ.get("DESCENT_RAY_TIMEOUT", 120))   # seconds for ray.init to connect


class RayUnavailable(GameError):
    """Ray is requested but not installed or the cluster cannot be reached."""


class _NoSigtermWarning:
    """A logging filter: drops ``ray.init``'s warning that, called outside the main thread, it does
    not install its SIGTERM handler (the driver keeps the default one)."""

    def filter(self, record) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


_NO_SIGTERM_WARNING = _NoSigtermWarning()


MESSAGES_LOG = "descent-driver-messages.log"


def _append_messages(lines: list) -> None:
    """Append ``lines`` to ``MESSAGES_LOG`` in the connected Ray session's log folder."""
    try:
        import ray._private.worker  # lazy: Ray (the connected driver's session folder)
        logs = Path(ray._private.worker._global_node.get_logs_dir_path())  # type: ignore[attr-defined]
        with open(logs / MESSAGES_LOG, "a", encoding="utf-8") as fh:
            fh.writelines(line + "\n" for line in lines)
    except Exception:   # no session folder, or another layout of Ray's private modules: dropped
        pass


def _print_to_log(data, ignore_prefix=False) -> None:
    """Stands in for Ray's private ``ray._private.worker.print_to_stdstream`` (Ray 2.x) in the
    driver. Ray's driver prints the cluster's error messages with it on stdout from a background
    thread (``listen_error_messages``), whatever ``log_to_driver`` says: a lost node's "Raylet is
    terminated" with the last lines of its log and state dump, dozens of lines. The driver says
    what it does about a loss in one line of its own; those messages go to ``MESSAGES_LOG`` in the
    session's log folder (``/tmp/ray/session_latest/logs/`` by default), beside Ray's own logs."""
    _append_messages([f"({data.get('pid', '?')}) {line}" for line in data.get("lines", [])])


class _RayLogToFile(logging.Handler):
    """Ray's Python loggers in the driver (``configure_logging=False`` leaves them without a
    handler, so Python's last-resort handler printed their warnings on stderr, a node loss's
    among them): written to ``MESSAGES_LOG`` as well."""

    def emit(self, record) -> None:
        _append_messages([f"({record.name}) {record.levelname} {record.getMessage()}"])


_RAY_LOG_TO_FILE = _RayLogToFile(logging.WARNING)


def init(address: str | None, check: bool = True):
    """Connect to (or start) a Ray cluster; returns the ``ray`` module. On connecting, with
    ``check``, every alive node must import the same version of this package as the driver
    (``check_workers``)."""
    try:
        import ray  # lazy: Ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray: install it with `pip install -e '.[ray]'` "
                             "(or `pip install ray`)") from None
    if ray.is_initialized():
        return ray
    if address not in (None, "", "local", "auto"):
        check_reachable(address)
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    try:
        import ray._private.worker  # lazy: Ray (its driver's printer of cluster messages)
        if hasattr(ray._private.worker, "print_to_stdstream"):
            ray._private.worker.print_to_stdstream = _print_to_log
    except ImportError:     # another layout of Ray's private modules: its messages stay as they are
        pass
    kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
    root = str(Path(__file__).resolve().parent.parent)
    # the node's own PYTHONPATH first (what is installed there), then this checkout (a local
    # cluster, or a path every node sees); check_workers then verifies what each node imports
    runtime_env = {"env_vars": {"PYTHONPATH": "${PYTHONPATH}" + os.pathsep + root,
                                "TF_CPP_MIN_LOG_LEVEL": "3"}}
    outcome: list = []

    def connect():
        try:
            if address in (None, "", "local"):
                # "local": a new cluster, never one found through RAY_ADDRESS or a stale address file
                ray.init(address="local", runtime_env=runtime_env, **kwargs)
            else:
                ray.init(address=address, runtime_env=runtime_env, **kwargs)
            outcome.append(None)
        except Exception as exc:  # ConnectionError, RuntimeError, ValueError from ray.init
            outcome.append(exc)

    if address in (None, "", "local"):
        connect()          # a cluster of our own: started in the main thread (Ray's signal handlers)
    else:
        # ray.init may wait forever on an address where something answers but no cluster does;
        # in a thread, it warns that it leaves SIGTERM alone (the CLI's errors stay one line)
        logging.getLogger("ray._private.worker").addFilter(_NO_SIGTERM_WARNING)
        t = threading.Thread(target=connect, daemon=True)
        t.start()
        t.join(INIT_TIMEOUT)
    if not outcome:
        raise RayUnavailable(f"the Ray cluster {address!r} did not answer within {INIT_TIMEOUT:.0f} s "
                             f"(wrong address?)")
    if outcome[0] is not None:
        raise RayUnavailable(validate.one_line(
            f"cannot start or reach the Ray cluster {address!r}: {outcome[0]}")) from None
    ray_logger = logging.getLogger("ray")
    if _RAY_LOG_TO_FILE not in ray_logger.handlers:
        ray_logger.addHandler(_RAY_LOG_TO_FILE)
    if check:
        try:
            check_workers(ray)
        except RayUnavailable:
            ray.shutdown()          # a later init checks again (the user may fix the node)
            raise
    return ray


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Refuse an address that is malformed or where nothing answers within ``timeout`` seconds
    (``ray.init`` would wait forever): ``RayUnavailable`` naming it."""
    text = validate.text(address, "Ray address", RayUnavailable, max_len=256)
    hostport = text.strip().removeprefix("ray://").rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host:
        raise RayUnavailable(f"Ray address {address!r}: expected auto, local, HOST:PORT or "
                             f"ray://HOST:PORT")
    port_number = validate.parse_int(port, f"Ray address {address!r}: port", 1, 65535,
                                     RayUnavailable)
    try:
        with socket.create_connection((host.strip("[]"), port_number), timeout=timeout):
            pass
    except (OSError, UnicodeError) as exc:
        raise RayUnavailable(validate.one_line(
            f"cannot reach the Ray cluster at {address!r} within {timeout:.0f} s ({exc})")) from None


def _fingerprint_fn():
    """A function returning what its process imports as the package: the version and a digest of
    the sources (``.py``, ``.pyx``, ``.pxd`` of every top-level package), or the import error.
    Nested, hence pickled by value: ``check_workers`` runs it on nodes where ``descent`` does not
    import."""
    def fingerprint() -> dict:
        # lazy: fingerprint is pickled by value and runs on each Ray node (its imports too)
        import hashlib
        import importlib.util  # lazy: pickled by value, runs on each Ray node
        from pathlib import Path  # lazy: pickled by value, runs on each Ray node
        try:
            import descent  # lazy: the import that is checked on each node
            where = str(Path(descent.__file__).resolve().parent)
        except Exception as exc:            # ImportError, or a broken installation
            return {"error": f"{type(exc).__name__}: {exc}"}
        try:
            from importlib.metadata import version  # lazy: pickled by value, runs on each Ray node
            ver = version("descent")
        except Exception:
            ver = "unknown"
        h = hashlib.sha1()
        for name in ("descent", "games", "search_ext", "training"):
            spec = importlib.util.find_spec(name)
            for loc in (spec.submodule_search_locations or []) if spec else []:
                root = Path(loc)
                for p in sorted(root.rglob("*")):
                    if p.suffix in (".py", ".pyx", ".pxd") and "__pycache__" not in p.parts:
                        h.update(f"{name}/{p.relative_to(root).as_posix()}\n".encode())
                        h.update(p.read_bytes())
        return {"version": ver, "digest": h.hexdigest()[:12], "where": where}
    return fingerprint


def check_workers(ray=None, timeout: float | None = None, nodes: list | None = None) -> list[dict]:
    """Run a tiny task on every alive node (pinned to it) that imports the package and reports its
    version and source digest; ``RayUnavailable`` naming the first node (IP and node id) that cannot
    import it, runs another version, or does not answer within ``timeout`` seconds (default
    ``DESCENT_RAY_TIMEOUT``). Returns the nodes' reports. A node that leaves the cluster during the
    check (listed alive, gone when its task is placed or run) is skipped with one ``note:`` line on
    stderr. Nodes that join later are not checked. ``nodes``: the node records to check (default
    ``ray.nodes()``, the alive ones)."""
    if ray is None:
        import ray  # lazy: Ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # lazy: Ray
    timeout = INIT_TIMEOUT if timeout is None else timeout
    fingerprint = _fingerprint_fn()
    mine = fingerprint()
    remote = ray.remote(num_cpus=0, max_retries=0)(fingerprint)
    nodes = [n for n in (ray.nodes() if nodes is None else nodes) if n.get("Alive")]
    refs = {remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
            .remote(): n for n in nodes}
    done, pending = ray.wait(list(refs), num_returns=len(refs), timeout=timeout)
    reports = []
    for ref in list(refs):
        n = refs[ref]
        name = f"Ray node {n.get('NodeManagerAddress', '?')} (node id {n['NodeID'][:12]})"
        if ref not in done:
            if not _alive(ray, n["NodeID"]):
                _note_left(name)
                continue
            raise RayUnavailable(f"{name} did not run the package check within {timeout:.0f} s "
                                 f"(a node that cannot start workers?)")
        try:
            got = ray.get(ref)
        except Exception as exc:        # the node died meanwhile, or the task could not start
            if not _alive(ray, n["NodeID"]) or "doesn't exist any more" in str(exc):
                _note_left(name)        # a node the cluster still listed as alive a moment ago
                continue
            raise RayUnavailable(validate.one_line(f"{name}: the package check failed ({exc})")) from None
        if got.get("error"):
            raise RayUnavailable(validate.one_line(
                f"{name} cannot import descent ({got['error']}): install this package there, the "
                f"same version as the driver's ({mine.get('version')}, sources {mine.get('digest')})"))
        for _ in range(2):
            # the same files read at two moments while an edit was under way: read both again
            if (got["version"], got["digest"]) == (mine.get("version"), mine.get("digest")):
                break
            time.sleep(1.0)
            mine = fingerprint()
            try:
                got = ray.get(remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
                    n["NodeID"], soft=False)).remote(), timeout=timeout)
            except Exception as exc:
                raise RayUnavailable(validate.one_line(f"{name}: the package check failed ({exc})")) from None
        if got.get("error") or (got["version"], got["digest"]) != (mine.get("version"), mine.get("digest")):
            raise RayUnavailable(validate.one_line(
                f"{name} runs descent {got.get('version')} (sources {got.get('digest')}, {got.get('where')}) but "
                f"the driver runs {mine.get('version')} (sources {mine.get('digest')}, "
                f"{mine.get('where')}): install the same version on every node"))
        reports.append(dict(got, node=n["NodeID"], ip=n.get("NodeManagerAddress")))
    return reports


def _alive(ray, node_id: str) -> bool:
    """Whether the cluster lists ``node_id`` as alive now."""
    try:
        return any(n.get("NodeID") == node_id and n.get("Alive") for n in ray.nodes())
    except Exception:               # the cluster cannot be asked: treat the node as there
        return True


def _note_left(name: str) -> None:
    """One line on stderr for a node that left the cluster during the package check (not fatal:
    nothing is scheduled on a dead node)."""
    print(f"note: {name} left the cluster during the package check; it is skipped", file=sys.stderr)


def member_lost_line(member: int, synced: int, played: int, exc) -> str:
    """The one line the driver prints when a member is lost with its node."""
    node = getattr(exc, "node_id", None) or ""
    lost = max(0, played - synced)
    return validate.one_line(
        f"note: member {member} was lost with its node{f' {str(node)[:12]}' if node else ''} "
        f"({type(exc).__name__}); it resumes from its last copy, after game {synced}: "
        f"{lost} game(s) played since that copy are lost and will be played again")


def _note_member_lost(member: int, synced: int, played: int, exc) -> None:
    tqdm.write(member_lost_line(member, synced, played, exc), file=sys.stderr)


def run_tasks_ray(tasks: list[dict], address: str | None, play, max_retries: int = 3):
    """Yield ``play(task)`` for every task as the Ray tasks finish. ``play`` is a module-level
    function (``descent.match.play_task``): Ray sends it by reference, each worker imports its
    module, and returns ``(task, result)``. A task lost with its node is run again elsewhere
    (``max_retries`` times): the caller keys its results, so a retry never counts twice. The
    checkpoints the tasks name (``net=PATH`` in ``agent_a``/``agent_b``) are read by the driver
    and reach the workers through the object store (``_play_shipped``): the nodes need not see the
    driver's run directory."""
    ray = init(address)
    nets = _put_nets(ray, tasks)
    if nets:                          # networks travel with the tasks: no shared file system needed
        remote = ray.remote(max_retries=max_retries, num_cpus=1)(_play_shipped)
        pending = [remote.remote(play, t, {p: nets[p] for p in _net_paths(t) if p in nets}) for t in tasks]
    else:
        remote = ray.remote(max_retries=max_retries, num_cpus=1)(play)
        pending = [remote.remote(t) for t in tasks]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            yield ray.get(ref)


_NET = re.compile(r"(?<![\w])net=([^,]+)")


def _net_paths(task: dict) -> list[str]:
    """The checkpoint paths (``net=PATH``) of a match task's two agents."""
    return sorted({m.group(1).strip() for k in ("agent_a", "agent_b")
                   for m in _NET.finditer(str(task.get(k, "")))})


def _put_nets(ray, tasks: list[dict]) -> dict:
    """{path: (digest, object ref of its bytes)} of every checkpoint file the tasks name, each read
    once by the driver and put in the object store once (a name that is no file here, such as
    ``net=best``, is left to the worker)."""
    out = {}
    for path in sorted({p for t in tasks for p in _net_paths(t)}):
        if not Path(path).is_file():
            continue
        data = Path(path).read_bytes()
        out[path] = (hashlib.sha1(data).hexdigest()[:16], ray.put(data))
    return out


def _play_shipped(play, task: dict, nets: dict):
    """``play(task)`` on a worker with the task's checkpoints taken from the object store into a
    node-local cache (``<tmp>/descent-nets/<digest>/<name>``, written atomically, once per node);
    returns ``(task, result)`` with the driver's task, so rows keep the driver's paths."""
    import ray  # lazy: Ray
    local = {}
    for path, (digest, ref) in nets.items():
        target = Path(tempfile.gettempdir()) / "descent-nets" / digest / Path(path).name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(target, ray.get(ref))
        local[path] = str(target)
    played = dict(task)
    for k in ("agent_a", "agent_b"):
        if k in played:
            played[k] = _NET.sub(lambda m: "net=" + local.get(m.group(1).strip(), m.group(1)), played[k])
    _, result = play(played)
    return task, result


def cluster_cpus(address: str | None) -> int:
    """The CPUs of the cluster at ``address`` (connecting to it): how many tasks run at once."""
    ray = init(address)
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


# ---- training --------------------------------------------------------------------------------------

MEMBER_FAILURES = 3        # a member lost with its node this many times in a row, no game synced between


def _pack(directory: Path, keep=None) -> bytes:
    """The files of a directory as a gzipped tar (temporary files left out; ``keep(relative
    path)``: which to take, default all)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        if directory.exists():
            for p in sorted(directory.rglob("*")):
                rel = p.relative_to(directory)
                if p.is_file() and ".tmp" not in p.name and (keep is None or keep(rel)):
                    tar.add(p, arcname=str(rel))
    return buf.getvalue()


def shipped_files(replay: bool):
    """What the driver ships to a member's worker: ``latest.h5`` (weights, optimizer, counters,
    RNG, the last game's record), and the replay window only with ``replay`` (else the worker
    rebuilds it by self-play, as a resume without replay files does). The log, TensorBoard files
    and milestones stay with the driver: the worker sends back what it adds."""
    return lambda rel: str(rel) == STATE_FILE or (replay and rel.parts[0] == REPLAY_DIR)


def _unpack(data: bytes, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for m in tar.getmembers():
            target = (directory / m.name).resolve()
            if not str(target).startswith(str(directory.resolve())) or not m.isfile():
                raise GameError(f"refusing to unpack {m.name!r} outside {directory}")
        for m in tar.getmembers():          # file by file, each atomically: a kill leaves whole files
            target = directory / m.name
            target.parent.mkdir(parents=True, exist_ok=True)
            member = tar.extractfile(m)
            if member is None:              # cannot happen: every member was checked to be a file
                raise GameError(f"cannot read {m.name!r} from the archive")
            write_bytes(target, member.read())


def _games_of(mdir: Path) -> tuple[int, dict | None]:
    """The games counted by a member's ``latest.h5`` (0 without one) and the last one's record."""
    path = layout.state_file(mdir)
    if not path.exists():
        return 0, None
    meta = read_meta(path)
    return int(meta["counters"]["games"]), meta.get("record")


def _line_game(line: bytes) -> int | None:
    try:
        return int(json.loads(line)["game"])
    except (ValueError, KeyError, TypeError):
        return None


class MemberSync:
    """The worker's side of a shipped member (``train_member``'s ``on_saved``): after a counted
    game once ``sync_every`` seconds have passed since the last copy, after every milestone and at
    the end, ``send`` gets what the driver lacks, read from the member's scratch directory while
    it is consistent: ``latest.h5`` (weights, optimizer, counters, RNG), ``status.json``, the
    ``log.jsonl`` lines of the games after the last copy, the new bytes of the TensorBoard event
    files, new or changed milestone files and, with ``replay``, the replay files of the new games.
    ``apply_sync`` writes a message into the driver's copy."""

    def __init__(self, mdir: Path, member: int, every: float, send, attempt: int = 0,
                 replay: bool = False, node: str | None = None):
        self.mdir, self.member, self.every, self.send = Path(mdir), member, every, send
        self.attempt, self.replay, self.node = attempt, replay, node
        self.base = _games_of(self.mdir)[0]     # the driver has the games up to here
        self.last_game = self.replay_sent = self.base
        self.log_offset = 0
        self.through: int | None = None         # the last game of the log's archives
        self.tb_offsets: dict[str, int] = {}
        self.stamps: dict[str, tuple] = {}      # milestone file -> (size, mtime) sent
        self.last = time.monotonic()            # when the last copy was sent (or the member began)
        self.sent = 0

    def __call__(self, event: str) -> None:
        now = time.monotonic()
        if event == "game" and now - self.last < self.every:
            return
        msg = self.collect(event)
        msg["worker_seconds"] = time.monotonic() - now
        self.send(msg)
        self.last = time.monotonic()
        self.sent += 1

    def _rotated(self) -> list[bytes]:
        """The lines not yet sent that a rotation of ``log.jsonl`` moved to an archive
        (``training.logfiles``); ``log.jsonl`` is then read from its start."""
        self.log_offset = 0
        lines = []
        for arc in archives(self.mdir):
            if arc.last > self.last_game:
                for rec in read_archive(arc.path):
                    if int(rec["game"]) > self.last_game:
                        lines.append((json_text(rec, indent=None, sort_keys=False) + "\n").encode())
                        self.last_game = int(rec["game"])
        return lines

    def collect(self, event: str) -> dict:
        """The message of one copy (see the class)."""
        games = _games_of(self.mdir)[0]
        tensorboard: dict[str, tuple[int, bytes]] = {}
        sent: dict[str, bytes] = {}
        msg = {"sync": self.member, "attempt": self.attempt, "event": event, "node": self.node,
               "games": games, "log": b"", "tensorboard": tensorboard, "files": sent}
        log = layout.log_file(self.mdir)
        lines = []
        through = archived_through(archives(self.mdir))
        if through != self.through or (log.exists() and log.stat().st_size < self.log_offset):
            lines = self._rotated()              # log.jsonl was rotated since the last copy
            self.through = through
        if log.exists():                        # appended only (repaired before the first game)
            with open(log, "rb") as f:
                f.seek(self.log_offset)
                data = f.read()
            data = data[:data.rfind(b"\n") + 1]
            self.log_offset += len(data)
            for line in data.splitlines(keepends=True):
                g = _line_game(line)
                if g is not None and self.last_game < g <= games:
                    lines.append(line)
                    self.last_game = g
        msg["log"] = b"".join(lines)
        tb = layout.tensorboard_dir(self.mdir)
        if tb.is_dir():
            files = sorted(tb.glob("events.out.tfevents.*"))
            self.tb_offsets = {p.name: self.tb_offsets.get(p.name, 0) for p in files}
            for p in files:
                off = self.tb_offsets.get(p.name, 0)
                with open(p, "rb") as f:
                    f.seek(off)
                    data = f.read()
                if data:
                    tensorboard[p.name] = (off, data)
                    self.tb_offsets[p.name] = off + len(data)
        for p in layout.milestone_files(self.mdir):
            st = p.stat()
            if ".tmp" not in p.name and self.stamps.get(p.name) != (st.st_size, st.st_mtime_ns):
                sent[p.name] = p.read_bytes()
                self.stamps[p.name] = (st.st_size, st.st_mtime_ns)
        replay = layout.replay_dir(self.mdir)
        if self.replay and replay.is_dir():
            for p in sorted(replay.iterdir()):
                game = layout.replay_game(p.name)
                if game is not None and self.replay_sent < game <= games:
                    sent[f"{REPLAY_DIR}/{p.name}"] = p.read_bytes()
            self.replay_sent = games
        msg["state"] = layout.state_file(self.mdir).read_bytes()
        status = layout.status_file(self.mdir)
        msg["status"] = status.read_bytes() if status.exists() else None
        return msg


def message_bytes(msg: dict) -> int:
    """The payload of a sync message (file contents)."""
    return (len(msg["log"]) + len(msg["state"]) + len(msg["status"] or b"")
            + sum(len(d) for _, d in msg["tensorboard"].values())
            + sum(len(d) for d in msg["files"].values()))


def apply_sync(mdir: Path, msg: dict, last_game: int, window: int,
               log_max_mb: float | None = None) -> int:
    """Write a ``MemberSync`` message into the driver's member directory, each file atomically and
    in an order that keeps it resumable at every moment: replay files and milestones, the log lines
    after ``last_game`` (the driver's last logged game), the TensorBoard bytes, then ``latest.h5``
    (the state that counts them: a kill before it leaves lines and files of uncounted games, which
    a resume removes, as after a local kill), ``status.json``, and last the replay files that left
    the window (``window`` games) and, with ``log_max_mb``, the log's rotation and the oldest event
    files past the cap (``training.logfiles``, as the member does). Returns the new last logged
    game."""
    mdir.mkdir(parents=True, exist_ok=True)
    for rel, data in msg["files"].items():
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise GameError(f"refusing to write {rel!r} outside {mdir}")
        (mdir / rel).parent.mkdir(parents=True, exist_ok=True)
        write_bytes(mdir / rel, data)
    lines = []
    for line in msg["log"].splitlines(keepends=True):
        g = _line_game(line)
        if g is not None and g > last_game:
            lines.append(line)
            last_game = g
    if lines:
        append_bytes(layout.log_file(mdir), b"".join(lines))
    for name, (off, data) in msg["tensorboard"].items():
        path = layout.tensorboard_dir(mdir) / Path(name).name
        path.parent.mkdir(parents=True, exist_ok=True)
        if (path.stat().st_size if path.exists() else 0) == off:
            append_bytes(path, data)            # else a file this attempt did not start: skipped
    write_bytes(layout.state_file(mdir), msg["state"])
    if msg["status"] is not None:
        write_bytes(layout.status_file(mdir), msg["status"])
    replay = layout.replay_dir(mdir)
    if replay.is_dir():
        for p in replay.iterdir():
            game = layout.replay_game(p.name)
            if game is not None and game <= msg["games"] - window:
                p.unlink(missing_ok=True)
    if log_max_mb is not None:
        rotate_log(mdir, log_max_mb)
        tb = layout.tensorboard_dir(mdir)
        if tb.is_dir():
            files = event_files(tb)
            prune_event_files(tb, LogCaps(log_max_mb).kept, files[-1] if files else None)
    return last_game


def prepare_member(mdir: Path, log_max_mb: float | None = None) -> int:
    """The driver's copy of a member made consistent before it is shipped (temporary files of
    killed writes removed, ``log.jsonl`` repaired to the games ``latest.h5`` counts, as a local
    resume does): returns those games, after which the synced log lines are appended."""
    if not mdir.exists():
        return 0
    clean_temp_files(mdir, recursive=True)
    games, pending = _games_of(mdir)
    repair_logs(mdir, games, pending, log_max_mb=log_max_mb)
    return games


def _node_id() -> str | None:
    try:
        import ray  # lazy: Ray
        return ray.get_runtime_context().get_node_id()
    except Exception:        # not in a Ray worker
        return None


def _train_remote(job, queue, shipped: bytes | None, sync: dict | None = None):
    """A member trained by a Ray task: in place (a shared file system), or, with ``shipped`` (the
    driver's copy of its files), in a scratch directory whose state goes back to the driver through
    ``queue`` (``MemberSync``; ``sync``: ``attempt``, ``replay``)."""

    def report(rec):
        if queue is not None:
            queue.put(rec)
    if shipped is None:
        return train_member(job, report)
    sync = sync or {}
    with tempfile.TemporaryDirectory(prefix="descent-member-") as scratch:
        mdir = member_dir(scratch, job.member)
        _unpack(shipped, mdir)
        job.run_dir = scratch
        syncer = MemberSync(mdir, job.member, runtime_options(job).sync_every,
                            queue.put if queue is not None else (lambda msg: None),
                            sync.get("attempt", 0), sync.get("replay", False), _node_id())
        return train_member(job, report, syncer)


def ray_runner(address: str | None, ship: bool = False, ship_replay: bool = False, on_sync=None):
    """The ``remote`` of ``training.run.run_training`` that trains the members on Ray."""
    def remote(jobs, on_record):
        return train_members_ray(jobs, address, on_record, ship or ship_replay, ship_replay, on_sync)
    return remote


def _driver_actor_options(ray) -> dict:
    """A helper actor's options: no CPU, on the head node (the cluster's own, whose loss ends the
    cluster anyway), else on the driver's node if it is alive: never on a worker node that may go.
    (The driver's node alone is not enough: a driver attached to a worker node's raylet that died
    since would have its actor placed anywhere.) The affinity is hard: Ray 2.60 places a soft one
    on any node even when the target is alive and idle, and a queue on a worker node that is lost
    ends the run with ActorUnavailableError."""
    options: dict[str, object] = {"num_cpus": 0}
    try:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # lazy: Ray
        alive = [n for n in ray.nodes() if n.get("Alive")]
        mine = ray.get_runtime_context().get_node_id()
        head = next((n["NodeID"] for n in alive
                     if "node:__internal_head__" in n.get("Resources", {})), None)
        target = head or next((n["NodeID"] for n in alive if n["NodeID"] == mine), None)
        if target is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(target, soft=False)
    except Exception:        # a client connection or an older Ray: anywhere
        pass
    return options


def train_members_ray(jobs, address: str | None, on_record, ship: bool = False,
                      ship_replay: bool = False, on_sync=None) -> list[dict]:
    """Train members as Ray tasks; progress records come back through a Ray queue.

    With ``ship`` (no shared file system): each member is shipped from the driver's run directory
    (``latest.h5``; its replay window too with ``ship_replay``) and trained in a scratch directory
    on its worker, whose ``MemberSync`` sends its state back every ``sync_every`` seconds, at every
    milestone and at the end (``apply_sync`` writes it; ``on_sync(info)`` is then called with the
    member, attempt, event, node, games, bytes and seconds). A member whose task is lost with its
    node is shipped again from what was synced and continues (at most ``MEMBER_FAILURES`` losses
    in a row without a synced game); an error of the member itself is raised. Without ``ship``,
    Ray retries a lost member, which resumes from the shared files."""
    ray = init(address)
    from ray.exceptions import RayError, RayTaskError  # lazy: Ray
    from ray.util.queue import Queue  # lazy: Ray
    queue = Queue(actor_options=_driver_actor_options(ray))
    remote = ray.remote(max_retries=0 if ship else 2, num_cpus=1)(_train_remote)
    by_member = {job.member: job for job in jobs}
    start: dict[int, int] = {}          # games each member had when this call began
    last_game: dict[int, int] = {}      # the driver's last logged game of each member
    synced: dict[int, int] = {}         # the games of each member's synced state
    attempt: dict[int, int] = {}
    failures: dict[int, int] = {}
    results: dict[int, dict] = {}
    played: dict[int, int] = {}         # the last game number each member reported
    refs = {}

    def submit(job) -> None:
        if not ship:
            refs[remote.remote(job, queue, None)] = job
            return
        mdir = member_dir(job.run_dir, job.member)
        games = prepare_member(mdir, runtime_options(job).log_max_mb)
        start.setdefault(job.member, games)
        last_game[job.member] = synced[job.member] = games
        attempt[job.member] = attempt.get(job.member, -1) + 1
        left = job.max_games - (games - start[job.member]) if job.max_games else 0
        if job.max_games and left <= 0:           # its games were played and synced; the end lost
            results[job.member] = {k: v for k, v in read_meta(layout.state_file(mdir))["counters"].items()
                                   if k != "rng"}
            return
        shipped = _pack(mdir, shipped_files(ship_replay))
        sent = dataclasses.replace(job, max_games=left)
        refs[remote.remote(sent, queue, shipped,
                           {"attempt": attempt[job.member], "replay": ship_replay})] = job

    def drain() -> None:
        while not queue.empty():
            rec = queue.get()
            if "sync" not in rec:
                if not rec.get("progress") and isinstance(rec.get("game"), int):
                    played[rec["member"]] = max(played.get(rec["member"], 0), rec["game"])
                on_record(rec)
                continue
            m = rec["sync"]
            if rec["attempt"] != attempt.get(m):        # a lost attempt's late message
                continue
            t = time.perf_counter()
            job = by_member[m]
            last_game[m] = apply_sync(member_dir(job.run_dir, m), rec, last_game[m],
                                      job.config["training"]["replay_games"],
                                      runtime_options(job).log_max_mb)
            if rec["games"] > synced[m]:
                failures[m] = 0
            synced[m] = rec["games"]
            if on_sync is not None:
                on_sync({"member": m, "attempt": rec["attempt"], "event": rec["event"],
                         "node": rec["node"], "games": rec["games"], "bytes": message_bytes(rec),
                         "worker_seconds": rec["worker_seconds"],
                         "driver_seconds": time.perf_counter() - t})

    for job in jobs:
        submit(job)
    while refs:
        done, _ = ray.wait(list(refs), num_returns=1, timeout=0.2)
        drain()
        for ref in done:
            job = refs.pop(ref)
            try:
                results[job.member] = ray.get(ref)
            except RayTaskError as exc:           # the member's own error: not a lost node
                if isinstance(exc.cause, GameError):
                    raise exc.cause from None
                raise RuntimeError(validate.one_line(
                    f"member {job.member}: {type(exc.cause).__name__}: {exc.cause}")) from None
            except RayError as exc:
                if not ship:
                    raise
                failures[job.member] = failures.get(job.member, 0) + 1
                if failures[job.member] > MEMBER_FAILURES:
                    raise RayUnavailable(validate.one_line(
                        f"member {job.member} was lost {failures[job.member]} times in a row "
                        f"without a game synced ({type(exc).__name__}: {exc})")) from None
                drain()
                _note_member_lost(job.member, synced[job.member], played.get(job.member, 0), exc)
                submit(job)                        # from what the driver has now
    drain()
    return [results[j.member] for j in jobs]
