"""A member's logs on disk, bounded by ``log_max_mb`` (``[run]``; issue 20, item 6).

Half of the cap is the game log's, half TensorBoard's (``LogCaps``); each half is a *segment* (a
quarter of it) that grows and the older part (the other three quarters) that is kept bounded:

* ``log.jsonl``: one JSON line per counted game (``append_json``: one write, fsync). Once it holds
  a segment, ``rotate_log`` moves its records to a gzip archive ``log.<first>-<last>.every<k>.jsonl.gz``
  (games ``first``..``last``, those whose number is a multiple of ``k``: 1 for a new archive)
  and empties ``log.jsonl``. When the archives pass their three quarters they are thinned: all but
  the newest merge into one whose stride ``k`` is twice their largest. So the recent games
  (``log.jsonl`` and the newest archive) are all there, the older ones at a stride (a power of two
  that grows as the run does: the run's whole curve, thinned), and the game log never holds more
  than half the cap plus one line.
* TensorBoard (``RollingWriter``): a new event file once the current one holds a segment, and the
  oldest other event files deleted while they hold more than the three quarters. TensorBoard shows
  the recent games; the whole run's curve is the game log's (``read_history``).

A kill at any moment of a rotation leaves a state ``training.trainer.repair_logs`` completes: an
archive written before ``log.jsonl`` was emptied (crash point ``log_archived``) covers its games,
whose lines are then dropped from ``log.jsonl``; a thinned archive written before the coarser one
it replaces was removed (crash point ``log_thinned``) supersedes it (``archives(clean=True)``).
Every file is written atomically (``training.fileio``).
"""
from __future__ import annotations

import contextlib
import gzip
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from training.fileio import atomic_target, crash_point, write_bytes, write_text
from training.layout import EVENTS, LOG_ARCHIVE as ARCHIVE, log_archive_name as archive_name, log_file
MB = 2 ** 20


@dataclass(frozen=True)
class LogCaps:
    """The bytes of ``log_max_mb``: per half (game log, TensorBoard), the segment that grows (a
    quarter of the half) and what the older part may hold (the rest)."""

    log_max_mb: float

    @property
    def half(self) -> int:
        return max(1, int(self.log_max_mb * MB / 2))

    @property
    def segment(self) -> int:
        return max(1, self.half // 4)

    @property
    def kept(self) -> int:
        return self.half - self.segment


@dataclass(frozen=True)
class Archive:
    path: Path
    first: int
    last: int
    every: int


def archives(mdir, clean: bool = False) -> list[Archive]:
    """The game log's archives, oldest first. One whose games another covers (a kill in a
    thinning, after the merged archive was written and before the ones it merged were removed) is
    superseded; ``clean`` removes it."""
    found = []
    for p in Path(mdir).glob("log.*.jsonl.gz"):
        m = ARCHIVE.match(p.name)
        if m:
            found.append(Archive(p, int(m[1]), int(m[2]), int(m[3])))
    # widest first, then the thinnest: a range inside a kept one is superseded
    found.sort(key=lambda a: (a.first, -a.last, -a.every))
    kept: list[Archive] = []
    superseded: list[Archive] = []
    for a in found:
        if kept and a.last <= kept[-1].last:
            superseded.append(a)
        else:
            kept.append(a)
    if clean:
        for a in superseded:
            with contextlib.suppress(FileNotFoundError):
                a.path.unlink()
    return kept


def archived_through(arcs: list[Archive]) -> int:
    """The last game the archives cover (0: none): its line and those before are not in
    ``log.jsonl`` any more (or thinned out)."""
    return max((a.last for a in arcs), default=0)


def parse_lines(data: bytes) -> tuple[list[dict], bool]:
    """The records of JSON lines ``data`` and whether some line was torn or unreadable (or held
    NaN or an infinity, read as null)."""
    records, damaged = [], False
    constants = []

    def constant(token):               # NaN or Infinity written by an older version: null now
        constants.append(token)
        return None
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line, parse_constant=constant)
            int(rec["game"])
        except (ValueError, KeyError, TypeError):
            damaged = True
            continue
        records.append(rec)
    damaged = damaged or bool(constants)
    if data and not data.endswith(b"\n"):
        damaged = True
    return records, damaged


def read_log(path: Path) -> tuple[list[dict], bool]:
    """The records of a member's ``log.jsonl`` and whether the file needs a rewrite (a torn or
    unreadable line, as a kill in the middle of an append leaves)."""
    path = Path(path)
    if not path.exists():
        return [], False
    return parse_lines(path.read_bytes())


def read_archive(path: Path) -> list[dict]:
    """The records of an archive (an unreadable one: none)."""
    try:
        data = gzip.decompress(Path(path).read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile):
        return []
    return parse_lines(data)[0]


def read_history(mdir, unique: bool = True) -> list[dict]:
    """Every game record a member's log keeps, archives and ``log.jsonl``, in game order: all the
    recent games, the older ones at the archives' stride (see the module). ``unique``: one record
    per game (a line a kill left in ``log.jsonl`` after its archive was written is left out);
    otherwise every record read, to look for repeats."""
    mdir = Path(mdir)
    arcs = archives(mdir)
    out = [r for a in arcs for r in read_archive(a.path)]
    through = archived_through(arcs)
    live = read_log(log_file(mdir))[0]
    out += live if not unique else [r for r in live if int(r["game"]) > through]
    if unique:
        seen: dict = {}
        for r in out:
            seen.setdefault(int(r["game"]), r)
        out = [seen[g] for g in sorted(seen)]
    return out


def cpu_seconds_through(mdir, games: int) -> float | None:
    """The process CPU seconds a member spent on its first ``games`` counted games, from its log:
    the running total of the last of them (``cpu_seconds``), or for a log written before that
    total was recorded, the sum over every game of examples / examples_per_cpu_s. None when the
    log does not hold it (no such game, or older games thinned out of the archives)."""
    recs = [r for r in read_history(mdir) if int(r["game"]) <= games]
    if not recs or int(recs[-1]["game"]) != games:
        return None
    if isinstance(recs[-1].get("cpu_seconds"), (int, float)):
        return float(recs[-1]["cpu_seconds"])
    if [int(r["game"]) for r in recs] != list(range(1, games + 1)):
        return None
    total = 0.0
    for r in recs:
        n, rate = r.get("examples"), r.get("examples_per_cpu_s")
        if not isinstance(n, (int, float)) or not isinstance(rate, (int, float)) or rate <= 0:
            return None
        total += n / rate
    return total


def last_game(mdir) -> int:
    """The number of the last game a member's log holds (archives included; 0: none)."""
    mdir = Path(mdir)
    live = read_log(log_file(mdir))[0]
    return max([archived_through(archives(mdir))] + [int(r["game"]) for r in live])


_GAME = re.compile(rb'"game": *(\d+)')


def _game_of(line: bytes) -> int | None:
    """The game number of a log line (None: not a whole record)."""
    m = _GAME.search(line)
    if m is not None and line.rstrip().endswith(b"}"):
        return int(m[1])
    try:
        return int(json.loads(line)["game"])
    except (ValueError, KeyError, TypeError):
        return None


def rotate_log(mdir, log_max_mb: float) -> bool:
    """Move ``log.jsonl``'s records to a new archive once it holds a segment, then thin the
    archives to their share of the cap. Returns whether it rotated."""
    mdir = Path(mdir)
    caps = LogCaps(log_max_mb)
    path = log_file(mdir)
    try:
        if path.stat().st_size < caps.segment:
            return False
    except FileNotFoundError:
        return False
    through = archived_through(archives(mdir, clean=True))
    lines, games = [], []
    for line in path.read_bytes().split(b"\n"):
        g = _game_of(line) if line.strip() else None
        if g is not None and g > through:
            lines.append(line + b"\n")
            games.append(g)
    if lines:
        name = archive_name(min(games), max(games), 1)
        write_bytes(mdir / name, gzip.compress(b"".join(lines), mtime=0))
        crash_point("log_archived")
    write_text(path, "")
    thin_archives(mdir, caps.kept)
    return True


def thin_archives(mdir, budget: int) -> None:
    """While the archives hold more than ``budget`` bytes, merge all but the newest into one whose
    stride is twice their largest (it keeps the games that are multiples of it)."""
    mdir = Path(mdir)
    arcs = archives(mdir, clean=True)
    while len(arcs) > 1 and sum(a.path.stat().st_size for a in arcs) > budget:
        older = arcs[:-1]
        top = max(a.every for a in older)
        if len(older) == 1 and top > older[0].last:
            return                      # nothing left to thin: the newest archive alone
        every = top * 2
        name = archive_name(older[0].first, older[-1].last, every)
        with atomic_target(mdir / name) as tmp:       # streamed: an archive may be large
            with gzip.GzipFile(tmp, "wb", mtime=0) as out:
                for a in older:
                    try:
                        with gzip.open(a.path, "rb") as f:
                            for line in f:
                                g = _game_of(line)
                                if g is not None and g % every == 0:
                                    out.write(line if line.endswith(b"\n") else line + b"\n")
                    except (OSError, EOFError):        # an unreadable archive: its games go
                        pass
        crash_point("log_thinned")
        for a in older:
            with contextlib.suppress(FileNotFoundError):
                a.path.unlink()
        arcs = archives(mdir, clean=True)


def event_files(directory) -> list[Path]:
    """A TensorBoard directory's event files, oldest first."""
    def key(p):
        try:
            return (p.stat().st_mtime_ns, p.name)
        except FileNotFoundError:
            return (0, p.name)
    return sorted(Path(directory).glob(EVENTS), key=key)


class RollingWriter:
    """A TensorBoard summary writer of bounded size (``tf.summary.create_file_writer`` inside): a
    new event file once the current one holds ``segment`` bytes, and the oldest other event files
    deleted while they hold more than ``kept``. ``as_default(step=...)`` and ``flush()`` as the
    writer's; both threads of a member may use it (a lock: a file never rolls in the middle of a
    record's scalars)."""

    def __init__(self, tf, directory, log_max_mb: float):
        self.tf, self.dir = tf, Path(directory)
        caps = LogCaps(log_max_mb)
        self.segment, self.kept = caps.segment, caps.kept
        self._lock = threading.RLock()
        self._open()
        self.prune()

    def _open(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        before = set(self.dir.glob(EVENTS))
        self.writer = self.tf.summary.create_file_writer(str(self.dir))
        new = [p for p in self.dir.glob(EVENTS) if p not in before]
        self.current = new[0] if len(new) == 1 else None

    @contextlib.contextmanager
    def as_default(self, step=None):
        with self._lock:
            with self.writer.as_default(step=step):
                yield self
            self._roll_if_full()

    def flush(self) -> None:
        with self._lock:
            self.writer.flush()
            self._roll_if_full()

    def close(self) -> None:
        with self._lock:
            self.writer.close()

    def _roll_if_full(self) -> None:
        try:
            size = self.current.stat().st_size if self.current is not None else 0
        except FileNotFoundError:
            size = 0
        if size < self.segment:
            return
        self.writer.flush()
        self.writer.close()
        self._open()
        self.prune()

    def prune(self) -> None:
        with self._lock:
            prune_event_files(self.dir, self.kept, self.current)


def prune_event_files(directory, kept: int, current: Path | None = None) -> None:
    """Delete the oldest event files of a TensorBoard directory (``current`` aside) while they
    hold more than ``kept`` bytes (``LogCaps(log_max_mb).kept``)."""
    others = [p for p in event_files(directory) if p != current]
    sizes = {}
    for p in others:
        with contextlib.suppress(FileNotFoundError):
            sizes[p] = p.stat().st_size
    total = sum(sizes.values())
    for p in others:
        if total <= kept:
            break
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
        total -= sizes.get(p, 0)
