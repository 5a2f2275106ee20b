"""Training of one population member: Descent self-play, tree learning, replay, checkpoints.

A member is an independent unit of work (``train_member(job)``): it reads and writes only its own
directory, so it can run in a local worker process or, later, on another machine. Rerunning it
continues where it stopped. Per game:

1. play one self-play game (``training.selfplay.play_game``) with the current network;
2. write the game's examples to the replay buffer (one file, atomically);
3. train one pass over a uniform sample of a fraction sigma of the replay window (Adam, MSE);
4. save the rolling state (weights, optimizer, counters, RNG) atomically, then any milestone
   checkpoint whose training time has been reached.

A kill at any moment loses at most the game in progress: on resume, replay files of games past the
saved counter are discarded.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

STATE_FILE = "latest.h5"


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


def train_member(job: MemberJob, report=None) -> dict:
    """Train one member until its budget (or ``max_games``); returns its final counters.

    ``report(dict)`` is called after every game with a one-line summary record.
    """
    from training.network import (Inference, build_model, configure_threads, load_state,
                                  make_optimizer, make_train_step, save_state, save_weights,
                                  write_json)
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
    net_cfg, sp, tr = cfg["network"], cfg["selfplay"], cfg["training"]
    model = build_model(info.planes_shape, net_cfg["filters"], net_cfg["blocks"],
                        net_cfg["head_units"], seed=job.seed)
    optimizer = make_optimizer(model, tr["learning_rate"])
    state_path = mdir / STATE_FILE
    counters = {"games": 0, "examples": 0, "train_seconds": 0.0, "updates": 0,
                "milestones_done": [], "rng": None, "seed": job.seed}
    if state_path.exists():
        meta = load_state(state_path, model, optimizer)
        counters.update(meta["counters"])
    rng = np.random.default_rng(job.seed)
    if counters["rng"] is not None:
        rng.bit_generator.state = counters["rng"]
    replay = ReplayBuffer(mdir / "replay", tr["replay_games"], info.planes_shape)
    replay.load(counters["games"])
    inference = Inference(model)
    search = BestFirstSearch(info, rule="minimax", descent=True, evaluator=inference.evaluator(),
                             max_nodes=sp["max_nodes"], max_mb=sp.get("max_mb", 1024.0),
                             keep_tree=True)     # tree learning collects the whole game's tree
    train_step = make_train_step(model, optimizer)
    # trace both compiled functions now, outside the timed loop (nothing is applied)
    spec = tf.TensorSpec((None, *info.planes_shape), tf.float32)
    train_step.get_concrete_function(spec, tf.TensorSpec((None,), tf.float32))
    inference(np.zeros((1, *info.planes_shape), np.float32))
    writer = tf.summary.create_file_writer(str(mdir / "tensorboard"))
    games_this_call = 0
    base_meta = {"game": info.spec, "game_version": info.version, "member": job.member,
                 "seed": job.seed, "config": cfg}

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
                save_state(state_path, model, optimizer, {**base_meta, "counters": snapshot()})

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
        t_play = time.perf_counter() - t0
        bx, by = replay.sample(tr["sample_fraction"], tr["min_sample"], rng)
        losses = []
        if bx is not None:
            if tr["augment"]:
                bx = _augment(bx, info.symmetries, rng)
            bs = tr["batch_size"]
            for i in range(0, len(by), bs):
                losses.append(float(train_step(bx[i:i + bs], by[i:i + bs])))
        dt = time.perf_counter() - t0
        # value error of the searched root values against the final outcome (mover's view)
        outcome = np.where(g["movers"] == 0, g["result"], -g["result"]).astype(np.float32)
        value_error = float(np.mean((g["root_values"] - outcome) ** 2)) if len(outcome) else 0.0
        counters["games"] = game_id
        counters["examples"] += int(len(y))
        counters["updates"] += len(losses)
        counters["train_seconds"] += dt
        loss = float(np.mean(losses)) if losses else float("nan")
        save_state(state_path, model, optimizer, {**base_meta, "counters": snapshot()})
        write_milestones()
        games_this_call += 1
        cpu = time.process_time() - cpu0
        record = {"member": job.member, "game": game_id, "plies": g["plies"], "result": g["result"],
                  "examples": int(len(y)), "loss": loss, "value_error": value_error,
                  "seconds": dt, "play_seconds": t_play, "train_seconds": counters["train_seconds"],
                  "budget": job.budget, "examples_per_cpu_s": len(y) / max(cpu, 1e-9),
                  "e": e, "replay_size": replay.size}
        with writer.as_default(step=game_id):
            tf.summary.scalar("loss", loss if losses else 0.0)
            tf.summary.scalar("games_per_hour", 3600.0 / max(dt, 1e-9))
            tf.summary.scalar("examples_per_second", len(y) / max(dt, 1e-9))
            tf.summary.scalar("value_error", value_error)
            tf.summary.scalar("exploration_e", e)
        with open(mdir / "log.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
        if report is not None:
            report(record)
    writer.flush()
    write_json(mdir / "status.json", {**{k: v for k, v in counters.items() if k != "rng"},
                                      "budget": job.budget, "done": counters["train_seconds"] >= job.budget})
    return {k: v for k, v in counters.items() if k != "rng"}
