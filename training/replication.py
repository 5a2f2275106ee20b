"""Replicating a member's training state between two directories, whatever carries the bytes.

A member trained away from its run directory (``descent train --ray-ship``: in a scratch directory
on a worker without the driver's file system) starts from a copy of the driver's files and sends
its state back while it trains. This module is that protocol, without a cluster: the transport
(``send(message)`` on the worker, the messages handed to ``ShippedMembers.receive`` on the driver)
is the caller's (``descent.distributed`` uses a Ray queue; tests/test_replication.py a function).

* ``ShippedMembers.ship(job)`` (driver): the member's copy made consistent (``prepare_member``), and
  what the worker needs: the job, the archive of ``shipped_files`` (``pack``), the sync settings.
* ``train_shipped`` (worker): unpacks into a scratch directory and trains there, with a
  ``MemberSync`` as the member's ``on_saved`` hook: after a counted game once ``sync_every``
  seconds have passed, after every milestone and at the end it sends what the driver lacks.
* ``ShippedMembers.receive(message)`` (driver): ``apply_sync`` writes it, each file atomically and
  in an order that keeps the member resumable at every moment, so a member lost with its worker
  is shipped again from its last copy, and a driver killed and rerun continues from there.

The files are ``training.layout``'s; the log repair and rotation ``training.logfiles``' and
``training.trainer``'s, as a local resume does them.
"""
from __future__ import annotations

import dataclasses
import io
import json
import tarfile
import tempfile
import time
from pathlib import Path

from games.errors import GameError
from training import layout
from training.fileio import append_bytes, clean_temp_files, json_text, write_bytes
from training.logfiles import (
    LogCaps, archived_through, archives, event_files, prune_event_files, read_archive, rotate_log)
from training.network import read_meta
from training.trainer import MemberJob, repair_logs, runtime_options, train_member


def pack(directory: Path, keep=None) -> bytes:
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
    return lambda rel: str(rel) == layout.STATE_FILE or (replay and rel.parts[0] == layout.REPLAY_DIR)


def unpack(data: bytes, directory: Path) -> None:
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


def games_of(mdir: Path) -> tuple[int, dict | None]:
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
        self.base = games_of(self.mdir)[0]     # the driver has the games up to here
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
        games = games_of(self.mdir)[0]
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
            files = sorted(tb.glob(layout.EVENTS))
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
                    sent[f"{layout.REPLAY_DIR}/{p.name}"] = p.read_bytes()
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
    games, pending = games_of(mdir)
    repair_logs(mdir, games, pending, log_max_mb=log_max_mb)
    return games


def is_sync_message(rec: dict) -> bool:
    """Whether a record that came back from a shipped member's worker is a ``MemberSync`` copy
    (else it is one of the member's progress records)."""
    return "sync" in rec


def train_shipped(job: MemberJob, shipped: bytes, report, send, attempt: int = 0, replay: bool = False,
                  node: str | None = None) -> dict:
    """Train a shipped member (the worker's side): ``shipped`` (``ShippedMembers.ship``'s archive)
    unpacked into a scratch directory, trained there with ``report`` for its progress records and
    a ``MemberSync`` that sends its copies through ``send``; returns its counters."""
    with tempfile.TemporaryDirectory(prefix="descent-member-") as scratch:
        mdir = layout.member_dir(scratch, job.member)
        unpack(shipped, mdir)
        job.run_dir = scratch
        syncer = MemberSync(mdir, job.member, runtime_options(job).sync_every, send, attempt, replay, node)
        return train_member(job, report, syncer)


@dataclasses.dataclass
class Shipment:
    """What ``ShippedMembers.ship`` hands to the transport: the job to run on the worker (its game
    budget what is left of it), the archive of the member's files, and ``train_shipped``'s
    ``attempt`` and ``replay``; or, for a member that has played all its games, its counters in
    ``done`` and nothing to send."""
    job: MemberJob | None = None
    archive: bytes = b""
    attempt: int = 0
    replay: bool = False
    done: dict | None = None


class ShippedMembers:
    """The driver's side of shipped members: what each was shipped with, what it has synced since.

    ``ship(job)`` before each attempt (the first and after a loss), ``receive(message)`` for each
    copy that comes back (a lost attempt's late copies are ignored), ``lost(member)`` when an
    attempt was lost with its worker: it returns the losses in a row without a game synced between.
    """

    def __init__(self, replay: bool = False):
        self.replay = replay
        self.jobs: dict[int, MemberJob] = {}
        self.start: dict[int, int] = {}         # games each member had when it was first shipped
        self.last_game: dict[int, int] = {}     # the driver's last logged game of each member
        self.synced: dict[int, int] = {}        # the games of each member's synced state
        self.attempt: dict[int, int] = {}
        self.failures: dict[int, int] = {}

    def ship(self, job: MemberJob) -> Shipment:
        m = job.member
        self.jobs[m] = job
        mdir = layout.member_dir(job.run_dir, m)
        games = prepare_member(mdir, runtime_options(job).log_max_mb)
        self.start.setdefault(m, games)
        self.last_game[m] = self.synced[m] = games
        self.attempt[m] = self.attempt.get(m, -1) + 1
        left = job.max_games - (games - self.start[m]) if job.max_games else 0
        if job.max_games and left <= 0:           # its games were played and synced; the end lost
            counters = read_meta(layout.state_file(mdir))["counters"]
            return Shipment(done={k: v for k, v in counters.items() if k != "rng"})
        return Shipment(dataclasses.replace(job, max_games=left), pack(mdir, shipped_files(self.replay)),
                        self.attempt[m], self.replay)

    def receive(self, msg: dict) -> dict | None:
        """Write a copy into the driver's member directory; returns what it was (member, attempt,
        event, node, games, bytes, worker_seconds, driver_seconds), or None for a late copy of a
        lost attempt."""
        m = msg["sync"]
        if msg["attempt"] != self.attempt.get(m):
            return None
        t = time.perf_counter()
        job = self.jobs[m]
        self.last_game[m] = apply_sync(layout.member_dir(job.run_dir, m), msg, self.last_game[m],
                                       job.config["training"]["replay_games"],
                                       runtime_options(job).log_max_mb)
        if msg["games"] > self.synced[m]:
            self.failures[m] = 0
        self.synced[m] = msg["games"]
        return {"member": m, "attempt": msg["attempt"], "event": msg["event"], "node": msg["node"],
                "games": msg["games"], "bytes": message_bytes(msg), "worker_seconds": msg["worker_seconds"],
                "driver_seconds": time.perf_counter() - t}

    def lost(self, member: int) -> int:
        """An attempt of ``member`` was lost with its worker: the losses in a row since a game was
        last synced (ship it again from what was synced)."""
        self.failures[member] = self.failures.get(member, 0) + 1
        return self.failures[member]
