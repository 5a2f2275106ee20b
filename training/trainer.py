"""Training of one population member: Descent self-play, tree learning, replay, checkpoints.

A member is an independent unit of work (``train_member(job)``): it reads and writes only its own
directory, so it can run in a local worker process or, later, on another machine. Rerunning it
continues where it stopped. Per game:

1. play self-play games (``training.selfplay.SelfPlayPool``: ``games_in_flight`` games at once,
   one batched network call per round) with the current network; as each game ends:
2. write the game's examples to the replay buffer (one file, atomically);
3. train one pass over a uniform sample of a fraction sigma of the replay window (Adam, MSE),
   decoded and augmented one minibatch at a time;
4. save the rolling state (weights, optimizer, counters, RNG) atomically, with the game's log
   record inside it, then any milestone checkpoint whose training time has been reached;
5. append the record to ``log.jsonl`` and write its TensorBoard scalars (flushed).

A kill at any moment loses at most the game in progress. The counted game and its log record are
one atomic unit, ``latest.h5``: on resume (``repair_logs``), a record missing from ``log.jsonl``
(killed between 4 and 5) is appended from the state, a torn last line is dropped, lines of games
past the saved counter or repeated are removed, and every TensorBoard scalar of a logged game that
the event files lack is written again (read back from the event files, so none is lost or
duplicated). Replay files of games past the saved counter and temporary files of killed writes
(``.<name>.tmp<PID>``) are removed. ``DESCENT_CRASH_AT`` (see ``training.network.crash_point``)
aims kills at exact points for the tests.
"""
from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

STATE_FILE = "latest.h5"
LOG_FILE = "log.jsonl"
SCALARS = ("loss", "games_per_hour", "examples_per_second", "value_error", "exploration_e")


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


def member_dir(run_dir, member: int) -> Path:
    return Path(run_dir) / f"member_{member:02d}"


def _augment(x: np.ndarray, symmetries, rng: np.random.Generator) -> np.ndarray:
    """Apply a random exact symmetry of the game to each example."""
    from games.symmetry import transform_planes
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
    loss = record["loss"]
    dt = max(record["seconds"], 1e-9)
    return {"loss": loss if loss == loss else 0.0, "games_per_hour": 3600.0 / dt,
            "examples_per_second": record["examples"] / dt, "value_error": record["value_error"],
            "exploration_e": record["e"]}


def read_log(path: Path) -> tuple[list[dict], bool]:
    """The records of a member's ``log.jsonl`` and whether the file needs a rewrite (a torn or
    unreadable line, as a kill in the middle of an append leaves)."""
    if not path.exists():
        return [], False
    records, damaged = [], False
    data = path.read_bytes()
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            int(rec["game"])
        except (ValueError, KeyError, TypeError):
            damaged = True
            continue
        records.append(rec)
    if data and not data.endswith(b"\n"):
        damaged = True
    return records, damaged


def _event_records(path: Path):
    """The records of a TFRecord event file (u64 length, u32 crc, data, u32 crc), read directly
    (40x faster than a tf.data pipeline); stops at a record cut short by a kill."""
    import struct
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
    from training import import_tensorflow
    import_tensorflow()                 # quietly, before tensorflow.core loads it
    from tensorflow.core.util import event_pb2
    seen = set()
    if not tb_dir.is_dir():
        return seen
    for path in sorted(tb_dir.glob("events.out.tfevents.*")):
        try:
            for raw in _event_records(path):
                ev = event_pb2.Event.FromString(raw)
                for v in ev.summary.value:
                    seen.add((int(ev.step), v.tag))
        except Exception:        # a damaged record: the rest of that file is unreadable
            continue
    return seen


def repair_logs(mdir: Path, games_done: int, pending: dict | None, writer=None) -> list[dict]:
    """Make ``log.jsonl`` hold exactly one record per counted game 1..``games_done`` that has one
    (``pending``: the last game's record saved in the state), and the TensorBoard event files every
    scalar of those records. Returns the records appended to the log."""
    path = mdir / LOG_FILE
    records, damaged = read_log(path)
    kept, seen = [], set()
    for rec in records:
        g = int(rec["game"])
        if g > games_done or g in seen:
            damaged = True
            continue
        seen.add(g)
        kept.append(rec)
    added = []
    if pending is not None and int(pending["game"]) <= games_done and int(pending["game"]) not in seen:
        kept.append(pending)
        added.append(pending)
    if damaged or added:
        from training.network import _fsync_replace, atomic_path
        tmp = atomic_path(path)
        tmp.write_text("".join(json.dumps(r) + "\n" for r in kept))
        _fsync_replace(tmp, path)
    if writer is not None and kept:
        from training import import_tensorflow
        tf = import_tensorflow()
        have = _logged_scalars(mdir / "tensorboard")
        for rec in kept:
            g = int(rec["game"])
            missing = {k: v for k, v in scalars_of(rec).items() if (g, k) not in have}
            if missing:
                with writer.as_default(step=g):
                    for k, v in missing.items():
                        tf.summary.scalar(k, v)
        writer.flush()
    return added


def _append_line(path: Path, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


RUNTIME_DEFAULTS = {"games_in_flight": 0, "inference": "auto", "device": "auto",
                    "learner": "async", "engine": "pool"}


def runtime_options(job: MemberJob) -> dict:
    """How a member's self-play runs (``job.extra``, from the config's [run] section): these change
    its speed, not what a game is, so a run can change them between reruns. ``engine = "legacy"``
    (the one-game path, deleted) is accepted from old settings and means the pool."""
    opts = dict(RUNTIME_DEFAULTS)
    opts.update({k: v for k, v in job.extra.items() if k in RUNTIME_DEFAULTS})
    if opts["engine"] == "legacy":
        import warnings
        warnings.warn("runtime option engine = 'legacy' is deprecated: the one-game path is gone, "
                      "self-play uses the pool", DeprecationWarning, stacklevel=2)
        opts["engine"] = "pool"
    return opts


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
        import queue
        import threading
        self.process = process
        self.mode = mode
        self.error = None
        self.snapshot = None
        self.skipped = 0            # games counted without a pass of their own (async)
        self._closing = False       # set before the end-of-queue marker is queued
        self._lock = threading.Lock()
        if mode in ("thread", "async"):
            self.queue = queue.Queue(maxsize=1 if mode == "thread" else self.ASYNC_BACKLOG)
            self.thread = threading.Thread(target=self._loop, name="learner", daemon=True)
            self.thread.start()

    def _loop(self):
        while True:
            g = self.queue.get()
            if g is None:
                return
            if self.error is not None:
                continue
            try:
                if self.mode == "async" and self.queue.qsize() > (1 if self._closing else 0):
                    self.process(g, train=False)       # a later game of the backlog trains
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


NODE_BYTES = 80     # a self-play table's state with its edges and hash slot, about (``[selfplay] max_mb``)


def train_member(job: MemberJob, report=None) -> dict:
    """Train one member until its budget (or ``max_games``); returns its final counters.

    ``report(dict)`` is called after every game with a one-line summary record.

    Self-play: ``SelfPlayPool`` with ``games_in_flight`` games and the inference backend of
    ``training.inference`` (``job.extra``, see ``runtime_options``). The learner
    (``learner = "async"``, the default, or ``"thread"``) trains beside self-play: self-play's
    weights are refreshed after every pass (see ``_Learner`` for how far behind they may be).
    """
    from training.network import (build_model, clean_temp_files, configure_threads,
                                  crash_point, load_state, make_optimizer, make_train_step,
                                  save_state, save_weights, write_json)
    from training import import_tensorflow
    from training.inference import default_games_in_flight, make_inference, model_weights, use_device
    rt = runtime_options(job)
    tf = import_tensorflow()
    device = use_device(rt["device"])
    configure_threads(job.threads)
    import games
    from training.replay import ReplayBuffer
    try:
        from search_ext.selfplay import SelfPlayPool
    except ImportError:          # temporary, until the pool has moved to search_ext
        from training.selfplay import SelfPlayPool

    cfg = job.config
    info = games.load(job.game)
    mdir = member_dir(job.run_dir, job.member)
    mdir.mkdir(parents=True, exist_ok=True)
    clean_temp_files(mdir, recursive=True)       # writes killed before their rename
    net_cfg, sp, tr = cfg["network"], cfg["selfplay"], cfg["training"]
    model = build_model(info.planes_shape, net_cfg["filters"], net_cfg["blocks"],
                        net_cfg["head_units"], seed=job.seed)
    optimizer = make_optimizer(model, tr["learning_rate"])
    state_path = mdir / STATE_FILE
    counters = {"games": 0, "examples": 0, "train_seconds": 0.0, "updates": 0,
                "milestones_done": [], "rng": None, "seed": job.seed}
    pending = None
    if state_path.exists():
        meta = load_state(state_path, model, optimizer)
        counters.update(meta["counters"])
        pending = meta.get("record")
    rng = np.random.default_rng(job.seed)
    if counters["rng"] is not None:
        try:
            rng.bit_generator.state = counters["rng"]
        except (TypeError, ValueError, KeyError) as exc:
            from training.network import CheckpointError
            raise CheckpointError(f"{state_path}: meta.counters.rng is not a random generator state "
                                  f"({exc})") from None
    replay = ReplayBuffer(mdir / "replay", tr["replay_games"], info.planes_shape)
    replay.load(counters["games"])
    inference = make_inference(model, rt["inference"], device, threads=job.threads)
    learner_mode = rt["learner"]
    if inference.name == "tf":
        learner_mode = "inline"                  # the tf backend reads the live weights
    in_flight = rt["games_in_flight"] or default_games_in_flight(info.branching, device)
    train_step = make_train_step(model, optimizer)
    # trace both compiled functions now, outside the timed loop (nothing is applied)
    spec = tf.TensorSpec((None, *info.planes_shape), tf.float32)
    train_step.get_concrete_function(spec, tf.TensorSpec((None,), tf.float32))
    inference(np.zeros((1, *info.planes_shape), np.float32))
    writer = tf.summary.create_file_writer(str(mdir / "tensorboard"))
    repair_logs(mdir, counters["games"], pending, writer)
    base_meta = {"game": info.spec, "game_version": info.version, "member": job.member,
                 "seed": job.seed, "config": cfg}
    last = {"record": pending}       # the last counted game's record, saved with the state
    clock = {"t": time.perf_counter(), "cpu": time.process_time()}
    started = {"n": 0, "next": counters["games"]}

    def state_meta() -> dict:
        return {**base_meta, "counters": snapshot(), "record": last["record"]}

    def snapshot() -> dict:
        c = dict(counters)
        c["rng"] = rng.bit_generator.state
        return c

    def write_milestones():
        for name, secs in job.milestones:
            if counters["train_seconds"] >= secs and name not in counters["milestones_done"]:
                counters["milestones_done"].append(name)
                meta = {**base_meta, "milestone": name, "milestone_seconds": secs,
                        "train_seconds": counters["train_seconds"], "games": counters["games"],
                        "examples": counters["examples"], "updates": counters["updates"],
                        "network": net_cfg, "planes_shape": list(info.planes_shape),
                        "written": time.strftime("%Y-%m-%dT%H:%M:%S")}
                save_weights(mdir / f"milestone_{name}.weights.h5", model, meta)
                save_state(state_path, model, optimizer, state_meta())

    last_loss = {"v": float("nan")}

    def process(g, train: bool = True):
        """One finished game: replay, a training pass (unless ``train`` is false: the async
        learner's backlog, whose last game trains for all), the state, milestones, the log."""
        game_id = counters["games"] + 1
        x, y = g["x"], g["y"]
        replay.add(game_id, x, y, np.full(len(y), g["plies"], np.int32),
                   {"result": g["result"], "plies": g["plies"], "game": info.spec,
                    "version": info.version})
        crash_point("replay_written")
        t_learn = time.perf_counter()
        losses = []
        if train:
            idx = replay.sample_indices(tr["sample_fraction"], tr["min_sample"], rng)
            losses = [float(train_step(bx, by)) for bx, by in
                      training_batches(replay, idx, tr["batch_size"], info.symmetries, tr["augment"],
                                       rng)]
        now = time.perf_counter()
        learn = now - t_learn
        dt = now - clock["t"]                    # wall time since the previous counted game
        cpu_now = time.process_time()
        cpu = cpu_now - clock["cpu"]
        clock["t"], clock["cpu"] = now, cpu_now
        # value error of the searched root values against the final outcome (mover's view)
        outcome = np.where(g["movers"] == 0, g["result"], -g["result"]).astype(np.float32)
        value_error = float(np.mean((g["root_values"] - outcome) ** 2)) if len(outcome) else 0.0
        counters["games"] = game_id
        counters["examples"] += int(len(y))
        counters["updates"] += len(losses)
        counters["train_seconds"] += dt
        if losses:
            last_loss["v"] = float(np.mean(losses))
        loss = last_loss["v"]                    # a game without its own pass: the last pass's
        record = {"member": job.member, "game": game_id, "plies": g["plies"], "result": g["result"],
                  "examples": int(len(y)), "loss": loss, "value_error": value_error,
                  "seconds": dt, "play_seconds": float(g.get("seconds", dt - learn)),
                  "learn_seconds": learn, "train_seconds": counters["train_seconds"],
                  "budget": job.budget, "examples_per_cpu_s": len(y) / max(cpu, 1e-9),
                  "e": g["e"], "short_moves": int(g.get("short_moves", 0)),
                  "games_in_flight": in_flight, "evaluations": int(inference.states),
                  "inference": inference.name, "trained": bool(losses), "replay_size": replay.size,
                  "replay_bytes": replay.nbytes}
        last["record"] = record
        save_state(state_path, model, optimizer, state_meta())    # the game counts from here on
        crash_point("state_saved")
        write_milestones()
        _append_line(mdir / LOG_FILE, record)
        crash_point("log_written")
        with writer.as_default(step=game_id):
            for k, v in scalars_of(record).items():
                tf.summary.scalar(k, v)
        writer.flush()
        if report is not None:
            report(record)
        return model_weights(model)

    learner = _Learner(process, learner_mode)

    def new_game():
        if learner.error is not None:
            return None
        if counters["train_seconds"] >= job.budget:
            return None
        if job.max_games and started["n"] >= job.max_games:
            return None
        started["n"] += 1
        started["next"] += 1
        frac = min(1.0, counters["train_seconds"] / job.budget)
        e = max(sp["exploration_floor"], frac)
        epsilon = sp["epsilon"] if sp["exploration"] == "epsilon" else -1.0
        seed = int(np.random.SeedSequence([job.seed, started["next"]]).generate_state(1, np.uint64)[0])
        return seed, e, epsilon, e

    stopped = {"games": 0}

    def out_of_budget():
        """True once the budget is spent, counting the time since the last counted game (games in
        flight then stop at once instead of overrunning the budget by up to a game's length)."""
        return (learner.error is not None
                or counters["train_seconds"] + (time.perf_counter() - clock["t"]) >= job.budget)

    def on_game(g):
        g["e"] = g.get("tag", 0.0)
        learner.submit(g)

    def evaluate(batch):
        w = learner.take_snapshot()
        if w is not None:
            inference.refresh(w)
        return inference(batch)

    write_milestones()     # a milestone reached before a kill but not yet written
    clock["t"], clock["cpu"] = time.perf_counter(), time.process_time()
    try:
        pool = SelfPlayPool(info, evaluate, iterations=sp["iterations"] if sp["time"] <= 0 else 0,
                            seconds=sp["time"], games_in_flight=in_flight,
                            max_nodes=max(16, min(sp["max_nodes"], int(sp["max_mb"] * 2 ** 20 / NODE_BYTES))))
        stopped["games"] = pool.run(new_game, on_game, stop=out_of_budget)
    finally:
        learner.close()
    if stopped["games"] and learner.error is None:
        # the budget ran out with games in flight: they are dropped (a game counts only once it
        # ends), and the time spent on them counts, so the member stops at its budget and writes
        # the milestones that fall due there
        now = time.perf_counter()
        counters["train_seconds"] += now - clock["t"]
        counters["abandoned_games"] = counters.get("abandoned_games", 0) + stopped["games"]
        clock["t"], clock["cpu"] = now, time.process_time()
        save_state(state_path, model, optimizer, state_meta())
        write_milestones()
    writer.flush()
    write_json(mdir / "status.json", {**{k: v for k, v in counters.items() if k != "rng"},
                                      "budget": job.budget, "done": counters["train_seconds"] >= job.budget})
    return {k: v for k, v in counters.items() if k != "rng"}
