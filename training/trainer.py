"""Training of one population member: Descent self-play, tree learning, replay, checkpoints.

A member is an independent unit of work (``train_member(job)``): it reads and writes only its own
directory, so it can run in a local worker process or, later, on another machine. Rerunning it
continues where it stopped. Per game:

1. play one self-play game (``training.selfplay.play_game``) with the current network;
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
    for i in range(0, len(idx), batch_size):
        bx, by = replay.gather(idx[i:i + batch_size])
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


def _logged_scalars(tb_dir: Path) -> set:
    """(step, tag) of every scalar in the event files of ``tb_dir`` (a truncated tail is ignored)."""
    import tensorflow as tf
    from tensorflow.core.util import event_pb2
    seen = set()
    if not tb_dir.is_dir():
        return seen
    for path in sorted(tb_dir.glob("events.out.tfevents.*")):
        try:
            for raw in tf.data.TFRecordDataset(str(path)):
                ev = event_pb2.Event.FromString(raw.numpy())
                for v in ev.summary.value:
                    seen.add((int(ev.step), v.tag))
        except Exception:        # a record cut by a kill: the rest of that file is unreadable
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
        import tensorflow as tf
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


def train_member(job: MemberJob, report=None) -> dict:
    """Train one member until its budget (or ``max_games``); returns its final counters.

    ``report(dict)`` is called after every game with a one-line summary record.
    """
    from training.network import (Inference, build_model, clean_temp_files, configure_threads,
                                  crash_point, load_state, make_optimizer, make_train_step,
                                  save_state, save_weights, write_json)
    configure_threads(job.threads)
    import tensorflow as tf
    import games
    from search_ext.bestfirst import BestFirstSearch
    from training.replay import ReplayBuffer
    from training.selfplay import play_game

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
        rng.bit_generator.state = counters["rng"]
    replay = ReplayBuffer(mdir / "replay", tr["replay_games"], info.planes_shape)
    replay.load(counters["games"])
    inference = Inference(model)
    search = BestFirstSearch(info, rule="minimax", descent=True, evaluator=inference.evaluator(),
                             max_nodes=sp["max_nodes"])
    train_step = make_train_step(model, optimizer)
    # trace both compiled functions now, outside the timed loop (nothing is applied)
    spec = tf.TensorSpec((None, *info.planes_shape), tf.float32)
    train_step.get_concrete_function(spec, tf.TensorSpec((None,), tf.float32))
    inference(np.zeros((1, *info.planes_shape), np.float32))
    writer = tf.summary.create_file_writer(str(mdir / "tensorboard"))
    repair_logs(mdir, counters["games"], pending, writer)
    games_this_call = 0
    base_meta = {"game": info.spec, "game_version": info.version, "member": job.member,
                 "seed": job.seed, "config": cfg}
    last = {"record": pending}       # the last counted game's record, saved with the state

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

    write_milestones()     # a milestone reached before a kill but not yet written
    while counters["train_seconds"] < job.budget:
        if job.max_games and games_this_call >= job.max_games:
            break
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        frac = min(1.0, counters["train_seconds"] / job.budget)
        e = max(sp["exploration_floor"], frac)
        epsilon = sp["epsilon"] if sp["exploration"] == "epsilon" else -1.0
        g = play_game(info, search, sp["iterations"] if sp["time"] <= 0 else 0, sp["time"], e,
                      epsilon, int(rng.integers(0, 2**62)))
        game_id = counters["games"] + 1
        x, y = g["x"], g["y"]
        replay.add(game_id, x, y, np.full(len(y), g["plies"], np.int32),
                   {"result": g["result"], "plies": g["plies"], "game": info.spec,
                    "version": info.version})
        crash_point("replay_written")
        t_play = time.perf_counter() - t0
        idx = replay.sample_indices(tr["sample_fraction"], tr["min_sample"], rng)
        losses = [float(train_step(bx, by)) for bx, by in
                  training_batches(replay, idx, tr["batch_size"], info.symmetries, tr["augment"], rng)]
        dt = time.perf_counter() - t0
        # value error of the searched root values against the final outcome (mover's view)
        outcome = np.where(g["movers"] == 0, g["result"], -g["result"]).astype(np.float32)
        value_error = float(np.mean((g["root_values"] - outcome) ** 2)) if len(outcome) else 0.0
        counters["games"] = game_id
        counters["examples"] += int(len(y))
        counters["updates"] += len(losses)
        counters["train_seconds"] += dt
        loss = float(np.mean(losses)) if losses else float("nan")
        cpu = time.process_time() - cpu0
        record = {"member": job.member, "game": game_id, "plies": g["plies"], "result": g["result"],
                  "examples": int(len(y)), "loss": loss, "value_error": value_error,
                  "seconds": dt, "play_seconds": t_play, "train_seconds": counters["train_seconds"],
                  "budget": job.budget, "examples_per_cpu_s": len(y) / max(cpu, 1e-9),
                  "e": e, "replay_size": replay.size, "replay_bytes": replay.nbytes}
        last["record"] = record
        save_state(state_path, model, optimizer, state_meta())    # the game counts from here on
        crash_point("state_saved")
        write_milestones()
        games_this_call += 1
        _append_line(mdir / LOG_FILE, record)
        crash_point("log_written")
        with writer.as_default(step=game_id):
            for k, v in scalars_of(record).items():
                tf.summary.scalar(k, v)
        writer.flush()
        if report is not None:
            report(record)
    writer.flush()
    write_json(mdir / "status.json", {**{k: v for k, v in counters.items() if k != "rng"},
                                      "budget": job.budget, "done": counters["train_seconds"] >= job.budget})
    return {k: v for k, v in counters.items() if k != "rng"}
