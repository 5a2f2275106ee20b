"""Training of one population member: Descent self-play, tree learning, replay, checkpoints.

A member is an independent unit of work (``train_member(job)``, which runs a ``MemberTrainer``):
it reads and writes only its own directory, so it can run in a local worker process or, later, on
another machine. Rerunning it continues where it stopped. Per game:

1. play self-play games (``search_ext.selfplay.SelfPlayPool``: ``games_in_flight`` games at once,
   one batched network call per round) with the current network; as each game ends:
2. write the game's examples to the replay buffer (one file, atomically);
3. train one pass over a uniform sample of a fraction sigma of the replay window (Adam, MSE),
   decoded and augmented one minibatch at a time;
4. save the rolling state (weights, optimizer, counters, RNG) atomically, with the game's log
   record inside it, then any milestone checkpoint whose training time has been reached;
5. append the record to ``log.jsonl`` and write its TensorBoard scalars (flushed); both stay under
   ``log_max_mb`` (``training.logfiles``: ``log.jsonl`` rotates into gzip archives, thinned when
   they fill up; old event files are deleted).

A kill at any moment loses at most the game in progress. The counted game and its log record are
one atomic unit, ``latest.h5``: on resume (``repair_logs``), a record missing from ``log.jsonl``
(killed between 4 and 5) is appended from the state, a torn last line is dropped, lines of games
past the saved counter or repeated are removed, and every TensorBoard scalar of a logged game that
the event files lack is written again (read back from the event files, so none is lost or
duplicated). Replay files of games past the saved counter and temporary files of killed writes
(``.<name>.tmp<PID>``) are removed. ``DESCENT_CRASH_AT`` (see ``training.fileio.crash_point``)
aims kills at exact points for the tests.
"""
from __future__ import annotations

import dataclasses
import math
import queue
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

import games
from games.python_game import raise_pending
from games.symmetry import transform_planes
from search_ext.descent_core import BYTES_PER_STATE
from search_ext import selfplay  # selfplay.SelfPlayPool read at call time (tests wrap it)
from training import layout
from training.architecture import Architecture
from training.fileio import append_json, clean_temp_files, crash_point, json_text, write_json, write_text
from training.inference import default_games_in_flight, make_inference, model_weights, use_device
from training.layout import member_dir
from training.logfiles import RollingWriter, archived_through, archives, read_log, rotate_log
from training.memory import cache_caps, network_bytes, replay_bytes, selfplay_caps
from training.network import (
    CheckpointError, build_model, configure_threads, load_state, make_optimizer, make_train_step,
    save_state, save_weights)
from training.options import RuntimeOptions
from training.progress import ROUNDS as PROGRESS_ROUNDS, ProgressReporter, exploration
from training.replay import ReplayBuffer

SCALARS = ("loss", "games_per_hour", "examples_per_second", "value_error", "exploration_e",
           "net_spread")


@dataclass
class MemberJob:
    """Everything a worker needs to train one member (plain data, picklable)."""

    run_dir: str
    member: int
    game: str
    config: dict
    budget: float                          # seconds of this member's training time
    milestones: list                       # [(name, seconds)]
    seed: int
    threads: int = 1
    max_games: int = 0                     # stop after this many games in this call (0: no limit)
    extra: dict = field(default_factory=dict)
    min_games: int = 0                     # the floor: games finished before the budget is spent


def milestone_floor(min_games: int, seconds: float, budget: float) -> int:
    """The games a member must have finished before the checkpoint at ``seconds`` of a ``budget``
    with a floor of ``min_games`` is written: the floor's share of the milestone's time, rounded up
    (at least 1 game when there is a floor; 0 without one). A budget is a time *and* a floor of
    finished games, whichever is reached later, so that a slow or busy machine trains each network
    on at least that many games (docs/training.md, "Budgets on a slow machine")."""
    if min_games <= 0:
        return 0
    return max(1, math.ceil(min_games * min(1.0, seconds / budget) - 1e-9)) if budget > 0 else min_games


def _augment(x: np.ndarray, symmetries, rng: np.random.Generator) -> np.ndarray:
    """Apply a random exact symmetry of the game to each example."""
    if len(symmetries) <= 1:
        return x
    choice = rng.integers(0, len(symmetries), size=len(x))
    out = np.empty_like(x)
    for k, sym in enumerate(symmetries):
        mask = choice == k
        if mask.any():
            out[mask] = transform_planes(x[mask], sym)
    return out


def training_batches(replay, idx: np.ndarray, batch_size: int, symmetries, augment: bool,
                     rng: np.random.Generator):
    """The minibatches of one update pass over the sampled window indices ``idx``: each decoded
    from the compact replay only when needed and, with ``augment``, every example replaced by a
    random exact symmetric copy (the identity included)."""
    rows, y, packed = replay.take(idx)
    for i in range(0, len(idx), batch_size):
        bx, by = replay.decode(rows[i:i + batch_size], packed), y[i:i + batch_size]
        if augment:
            bx = _augment(bx, symmetries, rng)
        yield bx, by


def scalars_of(record: dict) -> dict:
    """The TensorBoard scalars of one game's log record."""
    def value(x):                      # None before the first pass (NaN in older logs): 0
        return float(x) if x is not None and math.isfinite(x) else 0.0
    dt = max(record["seconds"], 1e-9)
    return {"loss": value(record["loss"]), "games_per_hour": 3600.0 / dt,
            "examples_per_second": record["examples"] / dt,
            "value_error": value(record["value_error"]), "exploration_e": value(record["e"]),
            "net_spread": value(record.get("net_spread"))}


def _event_records(path: Path):
    """The records of a TFRecord event file (u64 length, u32 crc, data, u32 crc), read directly
    (40x faster than a tf.data pipeline); stops at a record cut short by a kill."""
    data = path.read_bytes()
    pos, n = 0, len(data)
    while pos + 12 <= n:
        (length,) = struct.unpack_from("<Q", data, pos)
        end = pos + 12 + length + 4
        if end > n:
            return
        yield data[pos + 12:pos + 12 + length]
        pos = end


def _logged_scalars(tb_dir: Path) -> set:
    """(step, tag) of every scalar in the event files of ``tb_dir`` (a truncated tail is ignored)."""
    from training import import_tensorflow  # lazy: TensorFlow
    import_tensorflow()                 # quietly, before tensorflow.core loads it
    from tensorflow.core.util import event_pb2  # lazy: TensorFlow
    seen: set[tuple[int, str]] = set()
    if not tb_dir.is_dir():
        return seen
    for path in sorted(tb_dir.glob(layout.EVENTS)):
        try:
            for raw in _event_records(path):
                ev = event_pb2.Event.FromString(raw)
                for v in ev.summary.value:
                    seen.add((int(ev.step), v.tag))
        except Exception:        # a damaged record: the rest of that file is unreadable
            continue
    return seen


def repair_logs(mdir: Path, games_done: int, pending: dict | None, writer=None,
                log_max_mb: float | None = None) -> list[dict]:
    """Make ``log.jsonl`` and its archives (``training.logfiles``) hold exactly one record per
    counted game 1..``games_done`` that has one (``pending``: the last game's record saved in the
    state; a game an archive covers is there, or thinned out), and the TensorBoard event files
    every scalar of the records of ``log.jsonl`` (those of games older than the event files kept
    aside). ``log_max_mb``: then rotate ``log.jsonl`` if it is due (a kill before its rotation).
    Returns the records appended to the log."""
    path = layout.log_file(mdir)
    records, damaged = read_log(path)
    through = archived_through(archives(mdir, clean=True))   # a kill in a rotation: see logfiles
    kept, seen = [], set()
    for rec in records:
        g = int(rec["game"])
        if g > games_done or g in seen or g <= through:
            damaged = True
            continue
        seen.add(g)
        kept.append(rec)
    added = []
    if (pending is not None and through < int(pending["game"]) <= games_done
            and int(pending["game"]) not in seen):
        kept.append(pending)
        added.append(pending)
    if damaged or added:
        write_text(path, "".join(json_text(finite_record(r), indent=None, sort_keys=False,
                                           what=f"{path} record") + "\n" for r in kept))
    if writer is not None and kept:
        from training import import_tensorflow  # lazy: TensorFlow
        tf = import_tensorflow()
        have = _logged_scalars(layout.tensorboard_dir(mdir))
        # games older than every per-game scalar kept: their event files rolled out (logfiles)
        floor = min((s for s, tag in have if tag in SCALARS), default=0)
        for rec in kept:
            if int(rec["game"]) < floor:
                continue
            g = int(rec["game"])
            missing = {k: v for k, v in scalars_of(rec).items() if (g, k) not in have}
            if missing:
                with writer.as_default(step=g):
                    for k, v in missing.items():
                        tf.summary.scalar(k, v)
        writer.flush()
    if log_max_mb is not None:
        rotate_log(mdir, log_max_mb)
    return added


def runtime_options(job: MemberJob) -> RuntimeOptions:
    """How a member's self-play runs (``job.extra``, from the config's [run] section; other keys of
    ``extra`` are ignored): these change its speed, not what a game is, so a run can change them
    between reruns. See ``training.options.RuntimeOptions``."""
    return RuntimeOptions.from_mapping(job.extra)


class _Learner:
    """Consumes finished games in order: replay, one training pass, state, milestones, log.

    ``mode = "thread"``: in a thread beside self-play (a queue of at most one waiting game, so
    self-play runs ahead of the learner by at most the games in flight plus one, and waits for it
    when it is slower); ``"async"``: in a thread that self-play never waits for: every finished game
    is counted as it comes (replay, state, log), and one training pass is run for all the games that
    arrived during the previous pass (``process(g, train=False)`` for the others), so self-play keeps
    its pace and the learner trains as often as it can; ``"inline"``: in the caller. After each pass
    the weights are snapshotted for self-play's inference."""

    ASYNC_BACKLOG = 64          # games waiting at most (then self-play waits: bounded memory)

    def __init__(self, process, mode: str):
        self.process = process
        self.mode = mode
        self.error: BaseException | None = None
        self.snapshot = None
        self.skipped = 0            # games counted without a pass of their own (async)
        self._closing = False       # set before the end-of-queue marker is queued
        self._lock = threading.Lock()
        if mode in ("thread", "async"):
            self.queue: queue.Queue = queue.Queue(maxsize=1 if mode == "thread" else self.ASYNC_BACKLOG)
            self.thread = threading.Thread(target=self._loop, name="learner", daemon=True)
            self.thread.start()

    def _loop(self):
        remaining = 0       # async: games of the current backlog not yet taken (its last one trains)
        while True:
            g = self.queue.get()
            if g is None:
                return
            if self.error is not None:
                continue
            try:
                if self.mode == "async" and remaining == 0:
                    # a new backlog: this game and those queued behind it now (not the end marker).
                    # Fixed when it starts, so games that keep arriving never postpone its pass.
                    remaining = 1 + max(0, self.queue.qsize() - (1 if self._closing else 0))
                remaining = max(0, remaining - 1)
                if self.mode == "async" and remaining > 0:
                    self.process(g, train=False)       # the backlog's last game trains
                    self.skipped += 1
                else:
                    self._post(self.process(g))
            except BaseException as exc:           # surfaced in the self-play thread
                self.error = exc

    def _post(self, weights):
        with self._lock:
            self.snapshot = weights

    def take_snapshot(self):
        with self._lock:
            w, self.snapshot = self.snapshot, None
        return w

    def submit(self, g):
        self.check()
        if self.mode in ("thread", "async"):
            while True:
                try:
                    self.queue.put(g, timeout=0.5)
                    return
                except Exception:
                    self.check()
                    if not self.thread.is_alive():
                        raise RuntimeError("the learner thread ended") from None
        self._post(self.process(g))

    def check(self):
        if self.error is not None:
            raise self.error

    def close(self):
        if self.mode in ("thread", "async"):
            self._closing = True
            self.queue.put(None)
            self.thread.join()
        self.check()


@dataclass
class _Progress:
    """A member's counters and clock: the one structure that the self-play thread (``new_game``,
    the budget check) and the learner thread (a game counted, milestones) share. Every read and
    write holds ``_lock`` and goes through a method; a read returns copies taken together, so
    neither thread sees the other's update half done (the budget check never adds a new clock to
    an old training time)."""

    seed: int
    games: int = 0
    examples: int = 0
    train_seconds: float = 0.0
    cpu_seconds: float = 0.0     # process CPU seconds counted with train_seconds (all threads)
    updates: int = 0
    milestones_done: list = field(default_factory=list)
    abandoned_games: int | None = None    # once a budget ran out with games in flight
    other: dict = field(default_factory=dict)   # saved counters this version does not use
    clock: float = 0.0           # perf_counter() when the last game was counted (or play began)
    cpu: float = 0.0             # process_time() then
    started: int = 0             # games started by this call (``max_games``)
    next_game: int = 0           # the number of the last game started (its seed)
    record: dict | None = None   # the last counted game's log record, saved with the state
    loss: float | None = None    # the mean loss of the last training pass (None: none yet)
    network_version: int = 0     # training passes so far: the version of the weights
    actor_games: dict = field(default_factory=dict)   # actor -> the last of its games counted
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    KNOWN = ("games", "examples", "train_seconds", "cpu_seconds", "updates", "milestones_done", "rng", "seed",
             "abandoned_games", "network_version", "actor_games")

    @classmethod
    def restore(cls, seed: int, counters: dict | None, record: dict | None) -> _Progress:
        """The progress of a fresh member, or of the saved ``counters`` (``rng`` aside)."""
        c = dict(counters or {})
        p = cls(seed=c.get("seed", seed), games=c.get("games", 0), examples=c.get("examples", 0),
                train_seconds=c.get("train_seconds", 0.0), cpu_seconds=c.get("cpu_seconds", 0.0),
                updates=c.get("updates", 0),
                milestones_done=list(c.get("milestones_done", [])),
                abandoned_games=c.get("abandoned_games"),
                network_version=c.get("network_version", 0),
                actor_games={int(a): int(s) for a, s in c.get("actor_games", {}).items()},
                other={k: v for k, v in c.items() if k not in cls.KNOWN}, record=record)
        p.next_game = p.games
        p.loss = _finite((record or {}).get("loss"))      # a resumed member keeps its last loss
        return p

    def counters(self, rng=None) -> dict:
        """The counters as the state saves them (``rng``: the generator's state, or left out)."""
        with self._lock:
            c = {"games": self.games, "examples": self.examples,
                 "train_seconds": self.train_seconds, "cpu_seconds": self.cpu_seconds,
                 "updates": self.updates, "milestones_done": list(self.milestones_done),
                 "network_version": self.network_version,
                 "actor_games": {str(a): s for a, s in sorted(self.actor_games.items())}}
            c.update({"rng": rng} if rng is not None else {})
            c.update({"seed": self.seed, **self.other})
            if self.abandoned_games is not None:
                c["abandoned_games"] = self.abandoned_games
            return c

    def last_record(self) -> dict | None:
        with self._lock:
            return self.record

    def games_counted(self) -> int:
        with self._lock:
            return self.games

    def timing(self) -> tuple[float, float]:
        """(training seconds counted, ``perf_counter()`` when they were), read together."""
        with self._lock:
            return self.train_seconds, self.clock

    def reset_clock(self) -> None:
        with self._lock:
            self.clock, self.cpu = time.perf_counter(), time.process_time()

    def start_game(self, budget: float, max_games: int, min_games: int = 0) -> tuple[int, float] | None:
        """Start a game unless the budget or ``max_games`` is reached: (its number, the training
        seconds so far). The budget is reached once its time is spent and ``min_games`` games
        have been started (the floor; those in flight are played to their end)."""
        with self._lock:
            if ((self.train_seconds >= budget and self.next_game >= min_games)
                    or (max_games and self.started >= max_games)):
                return None
            self.started += 1
            self.next_game += 1
            return self.next_game, self.train_seconds

    def count_game(self, game_id: int, examples: int, losses: list, now: float,
                   actor: tuple[int, int] | None = None, other_cpu: float = 0.0) -> dict:
        """Count a finished game whose learning ended at ``now``: the time since the previous one
        counts, and ``other_cpu`` (the CPU seconds of the actor that played it). ``actor``: (actor,
        its sequence number) of a game an actor played. Returns what its record needs (``dt``,
        ``cpu``, ``train_seconds``, ``loss``, ``network_version``)."""
        cpu_now = time.process_time()
        with self._lock:
            dt, cpu = now - self.clock, cpu_now - self.cpu + other_cpu
            self.clock, self.cpu = now, cpu_now
            self.games = game_id
            if actor is not None:
                self.actor_games[actor[0]] = max(self.actor_games.get(actor[0], 0), actor[1])
            if losses:
                self.network_version += 1
            self.examples += examples
            self.updates += len(losses)
            self.train_seconds += dt
            self.cpu_seconds += cpu
            if losses:
                self.loss = _finite(float(np.mean(losses)))
            return {"dt": dt, "cpu": cpu, "train_seconds": self.train_seconds,
                    "cpu_seconds": self.cpu_seconds, "loss": self.loss,
                    "network_version": self.network_version}

    def version(self) -> int:
        with self._lock:
            return self.network_version

    def actor_counted(self, actor: int) -> int:
        """The sequence number of the last game of ``actor`` counted (0: none)."""
        with self._lock:
            return self.actor_games.get(actor, 0)

    def keep_record(self, record: dict) -> None:
        with self._lock:
            self.record = record

    def claim_milestone(self, name: str, seconds: float, min_games: int = 0) -> dict | None:
        """Mark milestone ``name`` done if its time and its floor of ``min_games`` finished games
        are reached and it is not yet: the counters its record holds, or None."""
        with self._lock:
            if self.train_seconds < seconds or self.games < min_games or name in self.milestones_done:
                return None
            self.milestones_done.append(name)
            return {"train_seconds": self.train_seconds, "cpu_seconds": self.cpu_seconds,
                    "games": self.games,
                    "examples": self.examples, "updates": self.updates}

    def abandon(self, games: int) -> None:
        """Games in flight dropped at the budget: the time since the last counted game counts."""
        now, cpu_now = time.perf_counter(), time.process_time()
        with self._lock:
            self.train_seconds += now - self.clock
            self.cpu_seconds += cpu_now - self.cpu
            self.abandoned_games = (self.abandoned_games or 0) + games
            self.clock, self.cpu = now, cpu_now

    def done(self, budget: float, min_games: int = 0) -> bool:
        with self._lock:
            return self.train_seconds >= budget and self.games >= min_games


def _finite(x) -> float | None:
    """``x`` if it is a finite number, else None (log lines and metadata hold no NaN)."""
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def finite_record(record: dict) -> dict:
    """``record`` with every non-finite float (NaN, an infinity) replaced by None: a metric
    without a value is null, never NaN, in a log line or a checkpoint's metadata."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in record.items()}


def note(message: str) -> None:
    """A one-line note of a member on stderr (a repair made on resume), on a line of its own
    under a progress bar (``tqdm.write``)."""
    tqdm.write(f"note: {message}", file=sys.stderr)


def _ranges(ids: list[int]) -> str:
    """[1, 2, 3, 7] -> 'games 1-3, 7'."""
    return ("game " if len(ids) == 1 else "games ") + id_ranges(ids)


def id_ranges(ids: list[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7' (sorted ids)."""
    parts, start = [], None
    for i, g in enumerate(ids):
        if start is None:
            start = g
        if i + 1 == len(ids) or ids[i + 1] != g + 1:
            parts.append(f"{start}" if start == g else f"{start}-{g}")
            start = None
    return ", ".join(parts)


class MemberTrainer:
    """Trains one member (``MemberJob``) until its budget or ``max_games``; ``run()`` returns its
    final counters and calls ``report(record)`` after every counted game.

    ``run`` = ``_build`` (model, optimizer) -> ``_resume`` (state, RNG, replay, log repair) ->
    ``_start`` (inference backend, learner) -> ``_play`` (the self-play pool, stopped at the
    budget) -> ``_finish`` (status). The self-play thread calls ``new_game``, ``on_game``,
    ``evaluate`` and ``out_of_budget``; the learner (``_Learner``, often a thread) calls
    ``process`` for each finished game. What both threads change lives in ``self.progress``
    (``_Progress``, under its lock); the model, optimizer, replay and RNG belong to the learner.

    Self-play: ``SelfPlayPool`` with ``games_in_flight`` games and the inference backend of
    ``training.inference`` (``runtime_options``). The learner (``learner = "async"``, the default,
    or ``"thread"``) trains beside self-play, whose weights are refreshed after every pass (see
    ``_Learner`` for how far behind they may be); with the ``tf`` backend it runs inline.
    """

    def __init__(self, job: MemberJob, report=None, on_saved=None):
        self.job = job
        self.report = report
        self.on_saved = on_saved
        self.options = runtime_options(job)
        self.mdir = member_dir(job.run_dir, job.member)
        self.state_path = layout.state_file(self.mdir)
        self._progress: _Progress | None = None        # set up by the first steps of ``run``
        self._learner: _Learner | None = None
        self.net_spread: float | None = None             # of the last training pass (_check_spread)
        self.target_spread: float | None = None
        self.collapsed_passes = 0
        self.actors = max(1, self.options.actors)     # 0 (auto) is resolved by training.run
        self.play_version = 0                          # of the weights self-play uses (one actor)

    @property
    def progress(self) -> _Progress:
        """The counters (``_Progress``), set up by ``_resume``."""
        if self._progress is None:
            raise RuntimeError("the trainer's progress is not set up yet (run() sets it up)")
        return self._progress

    @property
    def learner(self) -> _Learner:
        """The learner (``_Learner``), set up by ``_start``."""
        if self._learner is None:
            raise RuntimeError("the trainer's learner is not set up yet (run() sets it up)")
        return self._learner

    def run(self) -> dict:
        if layout.exported(self.mdir):     # ``run_training`` keeps the finished ones before this
            raise CheckpointError(f"{self.mdir}: milestone checkpoints but no resume state "
                                  f"({layout.STATE_FILE}): an exported member cannot train further")
        self._build()
        self._resume()
        self._start()
        self._play()
        return self._finish()

    # ---- set-up ------------------------------------------------------------------------------
    def _build(self) -> None:
        """TensorFlow on the chosen device, the game, the model and its optimizer."""
        from training import import_tensorflow  # lazy: TensorFlow
        self.tf = import_tensorflow()
        self.device = use_device(self.options.device)
        configure_threads(self.job.threads)
        self.cfg = self.job.config
        self.info = games.load(self.job.game)
        net = self.cfg["network"]
        self.model = build_model(self.info.planes_shape, Architecture.from_meta(net),
                                 seed=self.job.seed)
        self.optimizer = make_optimizer(self.model, self.cfg["training"]["learning_rate"])
        self.base_meta = {"game": self.info.spec, "game_version": self.info.version,
                          "member": self.job.member, "seed": self.job.seed, "config": self.cfg}

    def _resume(self) -> None:
        """The saved state (weights, optimizer, counters, RNG), the replay window, and the log and
        TensorBoard scalars repaired to match the counted games; leftovers of killed writes go."""
        self.mdir.mkdir(parents=True, exist_ok=True)
        clean_temp_files(self.mdir, recursive=True)       # writes killed before their rename
        counters, pending = None, None
        if self.state_path.exists():
            meta = load_state(self.state_path, self.model, self.optimizer)
            counters, pending = meta["counters"], meta.get("record")
        self._progress = _Progress.restore(self.job.seed, counters, pending)
        self.rng = np.random.default_rng(self.job.seed)
        if counters is not None and counters.get("rng") is not None:
            try:
                self.rng.bit_generator.state = counters["rng"]
            except (TypeError, ValueError, KeyError) as exc:
                raise CheckpointError(f"{self.state_path}: meta.counters.rng is not a random "
                                      f"generator state ({exc})") from None
        self.replay = ReplayBuffer(layout.replay_dir(self.mdir), self.cfg["training"]["replay_games"],
                                   self.info.planes_shape, replay_bytes(self.options.memory_mb))
        done = self.progress.games_counted()
        missing = self.replay.load(done)
        if missing:
            note(f"member {self.job.member}: the replay window of game {done} lacks the files of "
                 f"{len(missing)} of its last {min(done, self.replay.window)} games "
                 f"({_ranges(missing)}); continuing from the weights with the "
                 f"{len(self.replay.games)} game(s) there")
        self.pending = pending

    def _start(self) -> None:
        """The inference backend and games in flight, both compiled functions traced (outside the
        timed loop), the TensorBoard writer, the log repaired, the learner."""
        tf, shape = self.tf, self.info.planes_shape
        self.inference = make_inference(self.model, self.options.inference, self.device,
                                        threads=self.job.threads)
        mode = "inline" if self.inference.name == "tf" else self.options.learner  # tf: live weights
        self.in_flight = (self.options.games_in_flight
                          or default_games_in_flight(self.info.branching, self.device))
        self.train_step = make_train_step(self.model, self.optimizer)
        self.train_step.get_concrete_function(tf.TensorSpec((None, *shape), tf.float32),
                                              tf.TensorSpec((None,), tf.float32))
        self.inference(np.zeros((1, *shape), np.float32))
        self.writer = RollingWriter(tf, layout.tensorboard_dir(self.mdir), self.options.log_max_mb)
        repair_logs(self.mdir, self.progress.games_counted(), self.pending, self.writer,
                    self.options.log_max_mb)
        self._learner = _Learner(self.process, mode)

    # ---- the self-play thread ----------------------------------------------------------------
    def _play(self) -> None:
        """Self-play until the budget or ``max_games``; games in flight at the budget are dropped
        and their time counts (the member stops at its budget and writes the milestones due)."""
        if self.actors > 1:
            return self._play_actors()
        self.play_version = self.progress.version()
        sp = self.cfg["selfplay"]
        self.write_milestones()     # a milestone reached before a kill but not yet written
        self.progress.reset_clock()
        # the member's memory cap (training.memory), shared by the games in flight
        cache_states, cache_b = cache_caps(self.options.memory_mb)
        caps = selfplay_caps(self.info, self.in_flight, self.options.memory_mb,
                             network_bytes(self.model) + cache_b,
                             min(sp["max_nodes"], int(sp["max_mb"] * 2 ** 20 / BYTES_PER_STATE)))
        self.in_flight = caps["games_in_flight"]
        reporter = ProgressReporter(self.mdir, self.job.member, self.job.budget,
                                    self.options.memory_mb, self.progress.timing,
                                    self.progress.counters, self.report, self.writer, self.tf,
                                    self.options.progress_seconds)
        try:
            pool = selfplay.SelfPlayPool(self.info, self.evaluate,
                                         iterations=sp["iterations"] if sp["time"] <= 0 else 0,
                                         seconds=sp["time"], games_in_flight=self.in_flight,
                                         max_nodes=max(16, min(sp["max_nodes"], caps["max_nodes"],
                                                               int(sp["max_mb"] * 2 ** 20 / BYTES_PER_STATE))),
                                         max_example_bytes=caps["max_example_bytes"],
                                         cache_states=cache_states, refresh=self.refresh_network)
            stopped = pool.run(self.new_game, self.on_game, stop=self.out_of_budget,
                               progress=reporter, progress_every=PROGRESS_ROUNDS)
        finally:
            self.learner.close()
        if stopped and self.learner.error is None:
            self.progress.abandon(stopped)
            self._save_state()
            self.write_milestones()

    def new_game(self):
        """The next game's (seed, e, epsilon, tag), or None once the budget, ``max_games`` or a
        learner error stops self-play."""
        if self.learner.error is not None:
            return None
        started = self.progress.start_game(self.job.budget, self.job.max_games, self.job.min_games)
        if started is None:
            return None
        number, trained = started
        sp = self.cfg["selfplay"]
        e = exploration(sp, trained, self.job.budget)
        epsilon = sp["epsilon"] if sp["exploration"] == "epsilon" else -1.0
        seq = np.random.SeedSequence([self.job.seed, number])
        return int(seq.generate_state(1, np.uint64)[0]), e, epsilon, e

    def out_of_budget(self) -> bool:
        """True once the budget is spent, counting the time since the last counted game (games in
        flight then stop at once instead of overrunning the budget by up to a game's length), and
        once the floor of ``min_games`` finished games is reached (until then the games in flight
        play on)."""
        if self.learner.error is not None:
            return True
        trained, since = self.progress.timing()       # read together (never a torn update)
        return (trained + (time.perf_counter() - since) >= self.job.budget
                and (not self.job.min_games or self.progress.games_counted() >= self.job.min_games))

    def on_game(self, g: dict) -> None:
        raise_pending()         # a Python game's error in this game: it stops training, unrecorded
        g["e"] = g.get("tag", 0.0)
        g["network_version"] = self.play_version
        self.learner.submit(g)

    def refresh_network(self) -> bool:
        """Before every round of self-play: take the learner's newest weights, if any (the value
        cache in front of ``evaluate`` is then emptied)."""
        w = self.learner.take_snapshot()
        if w is None:
            return False
        weights, self.play_version = w
        self.inference.refresh(weights)
        return True

    def evaluate(self, batch):
        return self.inference(batch)

    # ---- actors (training.actors) --------------------------------------------------------------
    def _play_actors(self) -> None:
        """Self-play in ``actors`` processes (``training.actors``): this process publishes the
        network, counts the games of the inbox in order of arrival (the learner) and restarts an
        actor killed by a signal, until the budget or ``max_games``."""
        from training import actors as act  # lazy: only members with actors
        sp = self.cfg["selfplay"]
        self.write_milestones()
        self.progress.reset_clock()
        k = self.actors
        table_cap = min(sp["max_nodes"], int(sp["max_mb"] * 2 ** 20 / BYTES_PER_STATE))
        # the member's cap covers every actor: their games in flight share its self-play part
        cache_states, cache_b = cache_caps(self.options.memory_mb, copies=k)
        caps = selfplay_caps(self.info, k * self.in_flight, self.options.memory_mb,
                             network_bytes(self.model) + cache_b, table_cap)
        self.in_flight = max(1, caps["games_in_flight"] // k)
        inbox = layout.inbox_dir(self.mdir)
        inbox.mkdir(parents=True, exist_ok=True)
        act.clean_inbox(inbox)
        self.publish()
        job = act.ActorJob(self.job.run_dir, self.job.member, 0, self.job.game, dict(sp),
                           self.job.seed, self.job.budget, self.in_flight,
                           max(16, min(table_cap, caps["max_nodes"])), caps["max_example_bytes"],
                           inference=self.options.inference, backlog=2 * self.in_flight + 2,
                           progress_seconds=self.options.progress_seconds, cache_states=cache_states)

        def job_of(actor: int) -> act.ActorJob:
            first = act.first_seq(inbox, actor, lambda: self.progress.actor_counted(actor))
            return dataclasses.replace(job, actor=actor, first_seq=first)

        runner = (self.job.extra["actor_runner"](k, job_of, note) if "actor_runner" in self.job.extra
                  else act.LocalActors(k, job_of, note))
        reporter = ProgressReporter(self.mdir, self.job.member, self.job.budget,
                                    self.options.memory_mb, self.progress.timing,
                                    self.progress.counters, self.report, self.writer, self.tf,
                                    self.options.progress_seconds)
        submitted: set[str] = set()
        arrived = 0
        stopped = False
        try:
            runner.start()
            reporter(self._actors_progress(k, arrived, runner))
            while self.learner.error is None:
                if self.out_of_budget():
                    stopped = True
                    break
                runner.check()
                waiting = act.inbox_arrivals(inbox)
                submitted &= {p.name for _, _, p in waiting}
                new = 0
                for actor, seq, path in waiting:
                    if path.name in submitted:
                        continue
                    if seq <= self.progress.actor_counted(actor):
                        path.unlink(missing_ok=True)     # counted before a kill: never twice
                        continue
                    if self.progress.start_game(self.job.budget, self.job.max_games,
                                                self.job.min_games) is None:
                        break
                    submitted.add(path.name)
                    self.learner.submit({"inbox": path, "actor": actor, "seq": seq})
                    arrived += 1
                    new += 1
                else:
                    if not new:
                        time.sleep(act.POLL_SECONDS)
                    reporter(self._actors_progress(k, arrived, runner))
                    continue
                break                                   # max_games reached
        finally:
            runner.stop()
            self.learner.close()
        act.clean_inbox(inbox)
        if stopped and self.learner.error is None:
            left = [p for _, _, p in act.inbox_arrivals(inbox) if p.name not in submitted]
            spent = self.progress.done(self.job.budget, self.job.min_games)
            if spent:
                for path in left:            # finished after the budget: dropped, as in flight
                    path.unlink(missing_ok=True)
            self.progress.abandon(len(left) if spent else 0)
            self._save_state()
            self.write_milestones()

    def _actors_progress(self, k: int, arrived: int, runner) -> dict:
        """The pool counts summed over the actors' last states, with the games arrived."""
        from training import actors as act  # lazy: only members with actors
        states = act.actor_states(self.mdir, k)
        keys = ("games_in_flight", "plies", "iterations", "table_states", "table_bytes",
                "example_bytes", "memory_bytes", "eval_states", "rounds")
        p: dict = {key: sum(int(st.get(key, 0)) for st in states) for key in keys}
        p["longest_game"] = max([int(st.get("longest_game", 0)) for st in states] or [0])
        p["games_finished"] = arrived
        p["actors"] = [{key: st.get(key) for key in ("actor", "pid", "network_version", "games",
                                                      "games_in_flight", "plies")}
                       for st in states]
        p["actors_alive"] = runner.alive()
        return p

    def publish(self) -> None:
        """Publish the network for the actors (``network.h5``, atomically) with its version."""
        if self.actors <= 1:
            return
        counters = self.progress.counters()
        save_weights(layout.network_file(self.mdir), self.model,
                     {**self.base_meta, "network": self.model.architecture.to_meta(),
                      "planes_shape": list(self.info.planes_shape),
                      "network_version": counters["network_version"],
                      "train_seconds": counters["train_seconds"]}, record=False)
        crash_point("network_published")

    # ---- the learner -------------------------------------------------------------------------
    def process(self, g: dict, train: bool = True):
        """One finished game: replay, a training pass (unless ``train`` is false: the async
        learner's backlog, whose last game trains for all), the state, milestones, the log.
        Returns (the weights, their version) for self-play's inference. A game of an actor
        (``{"inbox": path, "actor": a, "seq": s}``) is read from its file, counted unless it was
        already (its sequence number), and its file deleted once the state counts it."""
        inbox = g.get("inbox")
        if inbox is not None:
            if g["seq"] <= self.progress.actor_counted(g["actor"]):
                inbox.unlink(missing_ok=True)
                return None
            g = self._arrival(inbox)
        game_id = self.progress.games_counted() + 1
        attrs = {"result": g["result"], "plies": g["plies"], "game": self.info.spec,
                 "version": self.info.version, "actor": g.get("actor", 0),
                 "network_version": g.get("network_version", 0)}
        if inbox is not None:
            attrs.update(actor_game=g["seq"], network_version_first=g["network_version_first"])
        self.replay.add(game_id, g["x"], g["y"], np.full(len(g["y"]), g["plies"], np.int32), attrs)
        crash_point("replay_written")
        t_learn = time.perf_counter()
        losses = self._train_pass() if train else []
        now = time.perf_counter()
        counted = (self.progress.count_game(game_id, len(g["y"]), losses, now) if inbox is None
                   else self.progress.count_game(game_id, len(g["y"]), losses, now,
                                                 actor=(g["actor"], g["seq"]),
                                                 other_cpu=float(g.get("actor_cpu", 0.0))))
        record = self._record(game_id, g, counted, bool(losses), now - t_learn)
        self.progress.keep_record(record)
        self._commit(record, inbox)
        if losses:
            self.publish()
        return model_weights(self.model), counted["network_version"]

    def _arrival(self, path: Path) -> dict:
        """A game of the inbox (``training.actors.read_game``), as ``process`` counts it."""
        from training.actors import read_game  # lazy: only members with actors
        g = read_game(path, self.info.planes_shape)
        g["tag"] = g["e"]
        return g

    # passes in a row with one output for every position of the pass's last full batch: a note
    # (a live network's output can be nearly flat for a few passes early on)
    COLLAPSED_PASSES = 25

    def _train_pass(self) -> list[float]:
        """One pass over a uniform sample of the replay window; the minibatches' losses. Then the
        spread (standard deviation) of the network's outputs on the pass's last full batch, against
        its targets' (``net_spread``, ``target_spread`` in the log): a network whose units all died
        answers one constant for every position (its loss stays at the targets' variance) and
        learns nothing more; after ``COLLAPSED_PASSES`` such passes in a row, one note says so."""
        tr = self.cfg["training"]
        idx = self.replay.sample_indices(tr["sample_fraction"], tr["min_sample"], self.rng)
        losses, last = [], None
        for bx, by in training_batches(self.replay, idx, tr["batch_size"], self.info.symmetries,
                                       tr["augment"], self.rng):
            losses.append(float(self.train_step(bx, by)))
            if last is None or len(by) >= len(last[1]):      # the last full batch, not a remainder
                last = (bx, by)
        if last is not None:
            self._check_spread(*last)
        return losses

    def _check_spread(self, bx: np.ndarray, by: np.ndarray) -> None:
        out = np.asarray(self.model(bx, training=False), np.float64).ravel()
        self.net_spread, self.target_spread = float(np.std(out)), float(np.std(by))
        collapsed = self.target_spread > 0 and self.net_spread < 1e-4 * self.target_spread
        self.collapsed_passes = self.collapsed_passes + 1 if collapsed else 0
        if self.collapsed_passes == self.COLLAPSED_PASSES:
            note(f"member {self.job.member}: the value network has given one value "
                 f"({out[0]:+.4f}) to every position after each of its last "
                 f"{self.COLLAPSED_PASSES} training passes while its targets spread "
                 f"{self.target_spread:.4f}: its units have likely died, and it learns nothing "
                 f"more. Lower [training] learning_rate (docs/training.md, \"A network that "
                 f"stopped learning\") and train the member again from scratch")

    def _record(self, game_id: int, g: dict, counted: dict, trained: bool, learn: float) -> dict:
        """A counted game's log record (``loss``: the last pass's when it had none of its own,
        None before the first)."""
        n, dt = int(len(g["y"])), counted["dt"]
        # value error of the searched root values against the final outcome (mover's view)
        outcome = np.where(g["movers"] == 0, g["result"], -g["result"]).astype(np.float32)
        value_error = float(np.mean((g["root_values"] - outcome) ** 2)) if len(outcome) else 0.0
        actor = {"actor": int(g.get("actor", 0)), "network_version": int(g.get("network_version", 0))}
        if "seq" in g:
            actor.update(actor_game=int(g["seq"]), network_version_first=int(g["network_version_first"]))
        return finite_record({"member": self.job.member, "game": game_id, "plies": g["plies"],
                "result": g["result"], "examples": n, "loss": counted["loss"],
                "value_error": value_error, "seconds": dt,
                "play_seconds": float(g.get("seconds", dt - learn)), "learn_seconds": learn,
                "train_seconds": counted["train_seconds"], "cpu_seconds": counted["cpu_seconds"],
                "budget": self.job.budget,
                "examples_per_cpu_s": n / max(counted["cpu"], 1e-9), "e": g["e"],
                "short_moves": int(g.get("short_moves", 0)), "games_in_flight": self.in_flight,
                "evaluations": int(self.inference.states), "inference": self.inference.name,
                "trained": trained, "replay_size": self.replay.size,
                "net_spread": self.net_spread, "target_spread": self.target_spread,
                "replay_bytes": self.replay.nbytes, "actors": self.actors, **actor})

    def _commit(self, record: dict, inbox: Path | None = None) -> None:
        """The game counts once the state holding it is saved; then its inbox file (an actor's
        game) goes, then milestones, its log line and TensorBoard scalars, and the report."""
        self._save_state()
        crash_point("state_saved")
        if inbox is not None:
            inbox.unlink(missing_ok=True)
        self.replay.trim_files()          # the games that left the window: only now
        milestones = self.write_milestones()
        append_json(layout.log_file(self.mdir), record)
        crash_point("log_written")
        with self.writer.as_default(step=record["game"]):
            for k, v in scalars_of(record).items():
                self.tf.summary.scalar(k, v)
        self.writer.flush()
        rotate_log(self.mdir, self.options.log_max_mb)     # log.jsonl bounded (logfiles)
        if self.on_saved is not None:
            self.on_saved("milestone" if milestones else "game")
        if self.report is not None:
            self.report(record)

    def _save_state(self) -> None:
        meta = {**self.base_meta, "counters": self.progress.counters(self.rng.bit_generator.state),
                "record": self.progress.last_record()}
        save_state(self.state_path, self.model, self.optimizer, meta)

    def write_milestones(self) -> int:
        """Every milestone whose training time is reached and not yet written: its weights, then
        the state that marks it done (returns how many were written). Its JSON records the games and examples behind it, and
        ``undertrained: true`` when it saw fewer than ``min_milestone_games`` games (a game longer
        than the budget writes milestones of a network that never learned)."""
        least = self.options.min_milestone_games
        written = 0
        for name, secs in self.job.milestones:
            counts = self.progress.claim_milestone(
                name, secs, milestone_floor(self.job.min_games, secs, self.job.budget))
            if counts is None:
                continue
            written += 1
            if counts["games"] < least:
                note(f"member {self.job.member}: milestone {name} written after "
                     f"{counts['games']} self-play game(s) ({counts['examples']} examples), fewer "
                     f"than min_milestone_games = {least}: flagged undertrained")
            meta = {**self.base_meta, "milestone": name, "milestone_seconds": secs, **counts,
                    "undertrained": counts["games"] < least, "min_milestone_games": least,
                    "network": self.model.architecture.to_meta(),
                    "planes_shape": list(self.info.planes_shape),
                    "written": time.strftime("%Y-%m-%dT%H:%M:%S")}
            save_weights(layout.milestone_weights(self.mdir, name), self.model, meta)
            self._save_state()
        return written

    # ---- the end -----------------------------------------------------------------------------
    def _finish(self) -> dict:
        """``status.json`` (counters, budget, done) and the final counters."""
        self.writer.flush()
        counters = self.progress.counters()
        write_json(layout.status_file(self.mdir),
                   {**counters, "budget": self.job.budget, "min_games": self.job.min_games,
                    "done": self.progress.done(self.job.budget, self.job.min_games)})
        if self.on_saved is not None:
            self.on_saved("end")
        return counters


def train_member(job: MemberJob, report=None, on_saved=None) -> dict:
    """Train one member until its budget (or ``max_games``); returns its final counters.
    ``report(dict)`` is called after every game with its log record. ``on_saved(event)`` is called
    whenever the member's directory is consistent and resumable as it stands (state, log line,
    TensorBoard scalars and milestones written): ``"game"`` after a counted game, ``"milestone"``
    after one that wrote a milestone, ``"end"`` after ``status.json`` at the end; it runs in the
    learner's thread, which waits for it (``descent.distributed`` copies the files to the driver
    from there). See ``MemberTrainer``."""
    return MemberTrainer(job, report, on_saved).run()
