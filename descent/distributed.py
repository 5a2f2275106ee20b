"""Running matches and population members on a Ray cluster (optional: ``pip install -e '.[ray]'``).

``--ray ADDRESS`` on ``train``, ``rank``, ``evaluate``, ``match`` and ``pipeline``: ``auto`` (the
cluster this machine belongs to), ``ray://host:10001`` or ``host:6379`` (an existing cluster), or
``local`` (a cluster started for the run on this machine). The work units are unchanged: a match is
one Ray task, a population member one Ray task; results reach the driver, which alone writes the
SQLite database, so resumption and "no duplicates" work exactly as with the process pool. A task
lost with its worker is retried by Ray (``max_retries``); a retried match is keyed like the original,
and the database keeps one row per key.

Files: training writes checkpoints and replay files under the run directory, which must be a path
every node sees (a shared file system: NFS, a cluster volume). Without one, pass ``--ray-ship``: each
member is trained in a scratch directory on its worker, which receives the member's files at the
start and sends them back to the driver at the end (the replay window included).
"""
from __future__ import annotations

import io
import os
import tarfile
import tempfile
from pathlib import Path

from games import validate
from games.errors import GameError
from training.fileio import write_bytes

CONNECT_TIMEOUT = 10.0     # seconds to reach a cluster's address before giving up
INIT_TIMEOUT = float(os.environ.get("DESCENT_RAY_TIMEOUT", 120))   # seconds for ray.init to connect


class RayUnavailable(GameError):
    """Ray is requested but not installed or the cluster cannot be reached."""


def init(address: str | None):
    """Connect to (or start) a Ray cluster; returns the ``ray`` module."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray: install it with `pip install -e '.[ray]'` "
                             "(or `pip install ray`)") from None
    if ray.is_initialized():
        return ray
    if address not in (None, "", "local", "auto"):
        check_reachable(address)
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
    root = str(Path(__file__).resolve().parent.parent)
    runtime_env = {"env_vars": {"PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""),
                                "TF_CPP_MIN_LOG_LEVEL": "3"}}
    import threading
    outcome: list = []

    def connect():
        try:
            if address in (None, "", "local"):
                ray.init(runtime_env=runtime_env, **kwargs)
            else:
                ray.init(address=address, runtime_env=runtime_env, **kwargs)
            outcome.append(None)
        except Exception as exc:  # ConnectionError, RuntimeError, ValueError from ray.init
            outcome.append(exc)

    if address in (None, "", "local"):
        connect()          # a cluster of our own: started in the main thread (Ray's signal handlers)
    else:
        # ray.init may wait forever on an address where something answers but no cluster does
        t = threading.Thread(target=connect, daemon=True)
        t.start()
        t.join(INIT_TIMEOUT)
    if not outcome:
        raise RayUnavailable(f"the Ray cluster {address!r} did not answer within {INIT_TIMEOUT:.0f} s "
                             f"(wrong address?)")
    if outcome[0] is not None:
        raise RayUnavailable(validate.one_line(
            f"cannot start or reach the Ray cluster {address!r}: {outcome[0]}")) from None
    return ray


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Refuse an address that is malformed or where nothing answers within ``timeout`` seconds
    (``ray.init`` would wait forever): ``RayUnavailable`` naming it."""
    import socket
    text = validate.text(address, "Ray address", RayUnavailable, max_len=256)
    hostport = text.strip().removeprefix("ray://").rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host:
        raise RayUnavailable(f"Ray address {address!r}: expected auto, local, HOST:PORT or "
                             f"ray://HOST:PORT")
    port = validate.parse_int(port, f"Ray address {address!r}: port", 1, 65535, RayUnavailable)
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=timeout):
            pass
    except (OSError, UnicodeError) as exc:
        raise RayUnavailable(validate.one_line(
            f"cannot reach the Ray cluster at {address!r} within {timeout:.0f} s ({exc})")) from None


def run_tasks_ray(tasks: list[dict], address: str | None, play, max_retries: int = 3):
    """Yield ``play(task)`` for every task as the Ray tasks finish. ``play`` is a module-level
    function (``descent.match.play_task``): Ray sends it by reference, each worker imports its
    module."""
    ray = init(address)
    remote = ray.remote(max_retries=max_retries, num_cpus=1)(play)
    pending = [remote.remote(t) for t in tasks]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            yield ray.get(ref)


# ---- training --------------------------------------------------------------------------------------

def _pack(directory: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        if directory.exists():
            for p in sorted(directory.rglob("*")):
                if p.is_file() and ".tmp" not in p.name:
                    tar.add(p, arcname=str(p.relative_to(directory)))
    return buf.getvalue()


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
            write_bytes(target, tar.extractfile(m).read())


def _train_remote(job, queue, shipped: bytes | None):
    from training.trainer import member_dir, train_member

    def report(rec):
        if queue is not None:
            queue.put(rec)
    if shipped is None:
        return train_member(job, report), None
    with tempfile.TemporaryDirectory() as scratch:
        mdir = member_dir(scratch, job.member)
        _unpack(shipped, mdir)
        job.run_dir = scratch
        result = train_member(job, report)
        return result, _pack(mdir)


def ray_runner(address: str | None, ship: bool = False):
    """The ``remote`` of ``training.run.run_training`` that trains the members on Ray."""
    def remote(jobs, on_record):
        return train_members_ray(jobs, address, on_record, ship)
    return remote


def train_members_ray(jobs, address: str | None, on_record, ship: bool = False) -> list[dict]:
    """Train members as Ray tasks; progress records come back through a Ray queue."""
    ray = init(address)
    from ray.util.queue import Queue
    from training.trainer import member_dir
    queue = Queue()
    remote = ray.remote(max_retries=2, num_cpus=1)(_train_remote)
    refs = {}
    for job in jobs:
        shipped = _pack(member_dir(job.run_dir, job.member)) if ship else None
        refs[remote.remote(job, queue, shipped)] = job
    results: dict[int, dict] = {}
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1, timeout=0.2)
        while not queue.empty():
            on_record(queue.get())
        for ref in done:
            job = refs[ref]
            result, packed = ray.get(ref)
            if packed is not None:
                _unpack(packed, member_dir(job.run_dir, job.member))
            results[job.member] = result
    while not queue.empty():
        on_record(queue.get())
    return [results[j.member] for j in jobs]
