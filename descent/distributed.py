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
milestone and at the end, through the run's Ray queue. What is copied, and the order that keeps the
driver's copy resumable at every moment, is ``training.replication``'s (no Ray there); this module
carries its messages. A member lost with its node is shipped again by the driver from its last
copy, so it loses at most one interval; a driver killed and rerun continues every member from its
last copy. See docs/cluster.md, "What is synced where".
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from games import validate
from games.errors import GameError
from training.fileio import write_bytes
from training.replication import ShippedMembers, is_sync_message, train_shipped
from training.trainer import train_member

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


def _node_id() -> str | None:
    try:
        import ray  # lazy: Ray
        return ray.get_runtime_context().get_node_id()
    except Exception:        # not in a Ray worker
        return None


def _train_remote(job, queue, shipped: bytes | None, sync: dict | None = None):
    """A member trained by a Ray task: in place (a shared file system), or, with ``shipped`` (the
    driver's copy of its files), in a scratch directory whose state goes back to the driver through
    ``queue`` (``training.replication.train_shipped``; ``sync``: ``attempt``, ``replay``)."""

    def report(rec):
        if queue is not None:
            queue.put(rec)
    if shipped is None:
        return train_member(job, report)
    sync = sync or {}
    return train_shipped(job, shipped, report, queue.put if queue is not None else (lambda msg: None),
                         sync.get("attempt", 0), sync.get("replay", False), _node_id())


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
    on its worker, which sends its state back every ``sync_every`` seconds, at every milestone and
    at the end (``training.replication``: ``ShippedMembers`` writes it; ``on_sync(info)`` is then
    called with the member, attempt, event, node, games, bytes and seconds). A member whose task is lost with its
    node is shipped again from what was synced and continues (at most ``MEMBER_FAILURES`` losses
    in a row without a synced game); an error of the member itself is raised. Without ``ship``,
    Ray retries a lost member, which resumes from the shared files."""
    ray = init(address)
    from ray.exceptions import RayError, RayTaskError  # lazy: Ray
    from ray.util.queue import Queue  # lazy: Ray
    queue = Queue(actor_options=_driver_actor_options(ray))
    remote = ray.remote(max_retries=0 if ship else 2, num_cpus=1)(_train_remote)
    members = ShippedMembers(ship_replay)
    results: dict[int, dict] = {}
    played: dict[int, int] = {}         # the last game number each member reported
    refs = {}

    def submit(job) -> None:
        if not ship:
            refs[remote.remote(job, queue, None)] = job
            return
        sent = members.ship(job)
        if sent.done is not None:
            results[job.member] = sent.done
            return
        refs[remote.remote(sent.job, queue, sent.archive, {"attempt": sent.attempt, "replay": sent.replay})] = job

    def drain() -> None:
        while not queue.empty():
            rec = queue.get()
            if not is_sync_message(rec):
                if not rec.get("progress") and isinstance(rec.get("game"), int):
                    played[rec["member"]] = max(played.get(rec["member"], 0), rec["game"])
                on_record(rec)
                continue
            info = members.receive(rec)
            if info is not None and on_sync is not None:
                on_sync(info)

    for job in jobs:
        if int(job.extra.get("actors", 1)) > 1:       # the member's actors are Ray actors
            job.extra = dict(job.extra, actor_runner=RayActors)
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
                failures = members.lost(job.member)
                if failures > MEMBER_FAILURES:
                    raise RayUnavailable(validate.one_line(
                        f"member {job.member} was lost {failures} times in a row "
                        f"without a game synced ({type(exc).__name__}: {exc})")) from None
                drain()
                _note_member_lost(job.member, members.synced[job.member], played.get(job.member, 0), exc)
                submit(job)                        # from what the driver has now
    drain()
    return [results[j.member] for j in jobs]


# ---- a member's actors ------------------------------------------------------------------------------

class _ActorBody:
    """One self-play actor of a member (``training.actors.Actor``) as a Ray actor: it plays in a
    thread with the network last given to ``set_network`` (its bytes, written to a scratch file
    on its node) and keeps its finished games until ``take`` returns them."""

    def __init__(self, job: dict):
        from training.actors import Actor, ActorJob  # lazy: on the actor's node
        self.dir = Path(tempfile.mkdtemp(prefix="descent-actor-"))
        self.cond = threading.Condition()
        self.games: list = []
        self.error: BaseException | None = None
        self.stopping = False
        self.actor = Actor(ActorJob(**dict(job, network=str(self.dir / "network.h5"), parent=0)),
                           ship=self._ship, waiting=self._waiting, stop=lambda: self.stopping)
        self.thread = threading.Thread(target=self._run, name="actor", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.actor.run(write_status=False)
        except BaseException as exc:         # returned by the next take()
            with self.cond:
                self.error = exc
                self.cond.notify_all()

    def _ship(self, rec: dict) -> None:
        with self.cond:
            self.games.append(rec)
            self.cond.notify_all()

    def _waiting(self) -> int:
        with self.cond:
            return len(self.games)

    def set_network(self, data: bytes) -> None:
        write_bytes(self.dir / "network.h5", data)

    def take(self, wait: float = 1.0) -> list:
        """The games finished since the last call (waiting up to ``wait`` seconds for one)."""
        with self.cond:
            self.cond.wait_for(lambda: self.games or self.error is not None or self.stopping,
                               timeout=wait)
            out, self.games = self.games, []
            if self.error is not None and not out:
                raise self.error
            return out

    def state(self) -> dict:
        return self.actor.status()

    def stop(self) -> list:
        """Stop playing (the games in flight are dropped); the games not yet taken."""
        self.stopping = True
        self.thread.join(60)
        with self.cond:
            out, self.games = self.games, []
            self.cond.notify_all()
        import shutil  # lazy: only at the end
        shutil.rmtree(self.dir, ignore_errors=True)
        return out


class RayActors:
    """A member's K actors as Ray actors (one CPU each, anywhere on the cluster), with the
    interface of ``training.actors.LocalActors``: ``check()`` sends a newly published network to
    every actor, writes the games they return into the member's inbox (where the learner counts
    them as it counts a local actor's) and starts an actor lost with its node again (its games in
    flight are lost; a note); ``stop()`` takes their last games and ends them."""

    MAX_RESTARTS = 100
    TAKE_SECONDS = 1.0

    def __init__(self, k: int, job, note=None):
        import ray  # lazy: Ray
        self.ray = ray
        self.k, self.job, self.note = k, job, note or (lambda msg: None)
        self.cls: Any = ray.remote(_ActorBody)       # one CPU; take() beside set_network()
        self.handles: dict = {}
        self.pending: dict = {}             # take() ref -> actor
        self.restarts = 0
        self.stamp: tuple | None = None
        self.net_ref: Any = None
        self.inbox: Path | None = None
        self.net: Path | None = None

    def _spawn(self, actor: int) -> None:
        from training import layout  # lazy: only members with actors on Ray
        job = self.job(actor)
        mdir = layout.member_dir(job.run_dir, job.member)
        self.inbox, self.net = layout.inbox_dir(mdir), layout.network_file(mdir)
        import dataclasses  # lazy: only members with actors on Ray
        h = self.cls.options(num_cpus=1, max_restarts=0, max_concurrency=4).remote(
            dataclasses.asdict(job))
        self.handles[actor] = h
        if self.net_ref is not None:
            h.set_network.remote(self.net_ref)
        self.pending[h.take.remote(self.TAKE_SECONDS)] = actor

    def start(self) -> None:
        for a in range(self.k):
            self._spawn(a)
        self._publish()

    def _publish(self) -> None:
        try:
            st = self.net.stat() if self.net is not None else None
        except FileNotFoundError:
            return
        if st is None:
            return
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if stamp == self.stamp:
            return
        assert self.net is not None
        self.stamp, self.net_ref = stamp, self.ray.put(self.net.read_bytes())
        for h in self.handles.values():
            h.set_network.remote(self.net_ref)

    def _receive(self, actor: int, games: list) -> None:
        from training.actors import write_game  # lazy: only members with actors on Ray
        assert self.inbox is not None
        for rec in games:
            write_game(self.inbox, actor, rec["seq"], rec)

    def check(self) -> None:
        from ray.exceptions import RayError, RayTaskError  # lazy: Ray
        self._publish()
        if not self.pending:
            return
        done, _ = self.ray.wait(list(self.pending), num_returns=len(self.pending), timeout=0)
        for ref in done:
            actor = self.pending.pop(ref)
            try:
                games = self.ray.get(ref)
            except RayTaskError as exc:       # the actor's own error
                raise RuntimeError(validate.one_line(
                    f"actor {actor}: {type(exc.cause).__name__}: {exc.cause}")) from None
            except RayError as exc:
                self.handles.pop(actor, None)
                if self.restarts >= self.MAX_RESTARTS:
                    self.note(f"actor {actor} lost ({type(exc).__name__}); going on with "
                              f"{len(self.handles)} actor(s)")
                    continue
                self.restarts += 1
                self.note(f"actor {actor} lost with its node ({type(exc).__name__}); its games in "
                          f"flight are lost, starting it again")
                self._spawn(actor)
                continue
            self._receive(actor, games)
            self.pending[self.handles[actor].take.remote(self.TAKE_SECONDS)] = actor

    def alive(self) -> int:
        return len(self.handles)

    def stop(self) -> None:
        from ray.exceptions import RayError  # lazy: Ray
        for ref, actor in list(self.pending.items()):
            try:
                self._receive(actor, self.ray.get(ref, timeout=60))
            except RayError:
                pass
        self.pending.clear()
        for actor, h in list(self.handles.items()):
            try:
                self._receive(actor, self.ray.get(h.stop.remote(), timeout=120))
            except RayError:
                pass
            with contextlib.suppress(Exception):
                self.ray.kill(h)
        self.handles.clear()
