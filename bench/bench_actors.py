"""Self-play actors: examples per wall-second of one member with K actor processes.

  python -m bench.bench_actors [--game 'reversi(size=6)'] [--actors 1,2] [--repeats 3]
                               [--seconds 30] [--out bench/results_actors.json]

A fixed-network mode that needs no TensorFlow (so it runs on any machine with the package's
compiled core and ONNX Runtime or NumPy): a network of the game's config architecture with seeded
random weights is published as a learner publishes one (``network.h5``), K actor processes
(``python -m training.actors``, exactly what ``descent train --actors K`` starts) play with it and
write their games into an inbox, and this process stands in for the learner: it counts each
game's examples as it arrives and deletes the file. After every actor shipped a first game (start
up and warm caches excluded), it counts for ``--seconds`` of wall time: examples per wall-second.
Each repeat runs every K once, the Ks interleaved (a load that changes during the run falls on all
of them alike); the table gives medians over repeats and each K's ratio to K = 1 (the goal is 0.8 x
K up to the core count), with the actors' CPU seconds per wall-second (how many cores they got:
on a machine others load, fewer than K) and examples per actor CPU-second (the per-core cost,
which stays flat when the actors scale and only the cores available limit them). Games in flight
finish in bursts, so a window holds whole numbers of bursts: longer ``--seconds`` smooth it.

It also times what a learner's publication costs: the bytes of ``network.h5``, the milliseconds to
write it (temporary name, fsync, rename) and for an actor to load it (read and rebuild its
inference), medians over 20. With ``--ray``, what shipping a finished game from a Ray actor costs
(``descent train --ray ... --actors K``: an actor's ``take()`` returns its games, the learner's
process writes each into the inbox): real game records played by one actor with the fixed network,
their serialized bytes (pickle protocol 5 with the arrays out of band, as Ray serializes them), a
Ray call's round trip returning one game against the same call returning nothing, and the inbox
write on the learner's side; medians over 20. On Ray's local cluster (one machine), so it measures
serialization and the object store, not a network link.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np

import games
from bench.harness import BENCH, ROOT, read_results, write_results
from descent.config import default_config_path, load_config
from search_ext.descent_core import BYTES_PER_STATE
from training import layout
from training.actors import Actor, ActorJob, LocalActors, inbox_arrivals, read_game
from training.architecture import Architecture
from training.fileio import atomic_target
from training.inference import default_games_in_flight
from training.memory import selfplay_caps
from training.network import weight_order


def publish_fixed(mdir: Path, game: str, arch: Architecture, seed: int, version: int = 0) -> Path:
    """A network with seeded random weights (He-scaled), written as the learner publishes one,
    without TensorFlow."""
    info = games.load(game)
    rng = np.random.default_rng(seed)
    path = layout.network_file(mdir)
    meta = {"game": info.spec, "network": arch.to_meta(), "planes_shape": list(info.planes_shape),
            "network_version": version, "train_seconds": 0.0}
    with atomic_target(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs["format"] = "descent-weights-1"
        f.attrs["meta"] = json.dumps(meta)
        g = f.create_group("weights")
        for i, (_, k, shape) in enumerate(weight_order(arch, info.planes_shape)):
            fan_in = int(np.prod(shape[:-1])) if k == 0 else 1
            w = (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32) if k == 0 \
                else np.zeros(shape, np.float32)
            g.create_dataset(f"{i:04d}", data=w)
    return path


def one_run(game: str, cfg: dict, k: int, seconds: float, seed: int) -> dict:
    """K actors for ``seconds`` of wall time after every one shipped a game."""
    info = games.load(game)
    tmp = Path(tempfile.mkdtemp(prefix="bench-actors-"))
    try:
        mdir = layout.member_dir(tmp, 0)
        inbox = layout.inbox_dir(mdir)
        inbox.mkdir(parents=True)
        publish_fixed(mdir, game, Architecture.from_meta(cfg["network"]), seed)
        sp = cfg["selfplay"]
        in_flight = default_games_in_flight(info.branching)
        table_cap = min(sp["max_nodes"], int(sp["max_mb"] * 2 ** 20 / BYTES_PER_STATE))
        caps = selfplay_caps(info, k * in_flight, 2048.0, 0, table_cap)
        job = ActorJob(str(tmp), 0, 0, info.spec, dict(sp), seed, 3600.0, in_flight,
                       max(16, min(table_cap, caps["max_nodes"])), caps["max_example_bytes"],
                       inference="auto", progress_seconds=1e9)
        runner = LocalActors(k, lambda a: dataclasses.replace(job, actor=a))
        shipped: set[int] = set()
        examples, games_n, t0 = 0, 0, None
        cpu0 = None
        runner.start()
        try:
            while True:
                runner.check()
                for a, _, path in inbox_arrivals(inbox):
                    n = len(read_game(path, info.planes_shape)["y"])
                    path.unlink()
                    if t0 is not None:
                        examples += n
                        games_n += 1
                    shipped.add(a)
                if t0 is None and len(shipped) == k:
                    t0, cpu0 = time.perf_counter(), _children_cpu(runner)
                if t0 is not None and time.perf_counter() - t0 >= seconds:
                    break
                time.sleep(0.02)
            assert t0 is not None and cpu0 is not None      # set before the loop can end
            wall = time.perf_counter() - t0
            cpu = _children_cpu(runner) - cpu0
        finally:
            runner.stop()
        return {"actors": k, "examples_per_s": examples / wall, "games": games_n,
                "examples": examples, "wall_s": wall, "actor_cpu_per_wall_s": cpu / wall,
                "examples_per_actor_cpu_s": examples / cpu if cpu > 0 else None,
                "games_in_flight_per_actor": in_flight}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _children_cpu(runner: LocalActors) -> float:
    """CPU seconds (user + system) of the runner's live actor processes, from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for p in runner.procs.values():
        try:
            fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
    return total


def publish_cost(game: str, cfg: dict, repeats: int = 20) -> dict:
    """Bytes of a published network, ms to write it and ms for an actor to load it."""
    info = games.load(game)
    tmp = Path(tempfile.mkdtemp(prefix="bench-publish-"))
    try:
        mdir = layout.member_dir(tmp, 0)
        mdir.mkdir(parents=True)
        arch = Architecture.from_meta(cfg["network"])
        sp = cfg["selfplay"]
        job = ActorJob(str(tmp), 0, 0, info.spec, dict(sp), 0, 3600.0, 1, 4096, 1 << 20)
        actor = Actor(job)
        write, load = [], []
        for i in range(repeats):
            t = time.perf_counter()
            path = publish_fixed(mdir, game, arch, i, version=i)
            write.append(time.perf_counter() - t)
            t = time.perf_counter()
            actor.load()
            load.append(time.perf_counter() - t)
        return {"bytes": path.stat().st_size, "write_ms": 1000 * statistics.median(write),
                "load_ms": 1000 * statistics.median(load[1:]), "first_load_ms": 1000 * load[0],
                "backend": actor.inference.name}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def play_records(game: str, cfg: dict, n: int, seed: int = 0) -> list[dict]:
    """``n`` finished games as an actor ships them (``game_record``), played by one in-process
    actor with the fixed network."""
    info = games.load(game)
    tmp = Path(tempfile.mkdtemp(prefix="bench-records-"))
    recs: list[dict] = []
    try:
        mdir = layout.member_dir(tmp, 0)
        mdir.mkdir(parents=True)
        publish_fixed(mdir, game, Architecture.from_meta(cfg["network"]), seed)
        in_flight = default_games_in_flight(info.branching)
        job = ActorJob(str(tmp), 0, 0, info.spec, dict(cfg["selfplay"]), seed, 3600.0, in_flight,
                       1 << 20, 1 << 28, inference="auto", progress_seconds=1e9)
        Actor(job, ship=recs.append, waiting=lambda: 0, stop=lambda: len(recs) >= n).run(write_status=False)
        return recs[:n]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class _Holder:
    """A Ray actor that hands back the games it was given, as an actor's ``take()`` does."""

    def __init__(self, recs: list):
        self.recs = recs

    def take(self, i: int) -> list:
        return [self.recs[i % len(self.recs)]]

    def nothing(self, i: int) -> list:
        return []


def ray_ship_cost(game: str, cfg: dict, repeats: int = 20) -> dict:
    """Bytes of a shipped game and ms to ship one from a Ray actor and write it into the inbox."""
    import pickle  # lazy: only with --ray
    import ray  # lazy: the optional Ray extra
    from training.actors import write_game  # lazy: beside the Ray measurement
    recs = play_records(game, cfg, max(4, repeats // 4))
    sizes = []
    for rec in recs:
        buffers: list = []
        head = pickle.dumps(rec, protocol=5, buffer_callback=buffers.append)
        sizes.append(len(head) + sum(b.raw().nbytes for b in buffers))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        h: Any = ray.remote(_Holder).remote(recs)
        ray.get(h.nothing.remote(0))               # started
        with_game, empty = [], []
        for i in range(repeats + 2):
            t = time.perf_counter()
            ray.get(h.take.remote(i))
            t1 = time.perf_counter()
            ray.get(h.nothing.remote(i))
            t2 = time.perf_counter()
            if i >= 2:                            # warm
                with_game.append(t1 - t)
                empty.append(t2 - t1)
    finally:
        ray.shutdown()
    tmp = Path(tempfile.mkdtemp(prefix="bench-inbox-"))
    try:
        writes = []
        for i in range(repeats):
            t = time.perf_counter()
            write_game(tmp, 0, i + 1, recs[i % len(recs)])
            writes.append(time.perf_counter() - t)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"games": len(recs), "examples_per_game_median": statistics.median(len(r["y"]) for r in recs),
            "bytes_median": statistics.median(sizes), "bytes": sizes,
            "round_trip_with_game_ms": 1000 * statistics.median(with_game),
            "round_trip_empty_ms": 1000 * statistics.median(empty),
            "inbox_write_ms": 1000 * statistics.median(writes), "repeats": repeats,
            "ray": ray.__version__, "where": "Ray's local cluster, one machine"}


def _shown(path: Path) -> str:
    """A path as the results file records it: relative to the checkout when inside it."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return Path(path).name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--game", default="reversi(size=6)")
    ap.add_argument("--actors", default="1,2", help="comma-separated K values")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--out", default=str(BENCH / "results_actors.json"))
    ap.add_argument("--ray", action="store_true", help="also time shipping a game from a Ray actor")
    ap.add_argument("--only-ray", action="store_true",
                    help="only the Ray measurement, merged into --out's earlier results")
    args = ap.parse_args()
    info = games.load(args.game)
    cfg_path = default_config_path(info.spec)
    cfg = load_config(cfg_path)
    if args.only_ray:
        only = ray_ship_cost(info.spec, cfg)
        _print_ship(only)
        old = _earlier(args.out, info.spec)
        if old is None:
            raise SystemExit(f"error: {args.out} holds no actor runs of {info.spec}: run without --only-ray first")
        write_results(args.out, {**old, "ray_ship": only})
        print(f"results: {args.out}")
        return
    ks = [int(x) for x in args.actors.split(",")]
    runs: dict[int, list] = {k: [] for k in ks}
    for rep in range(args.repeats):
        for k in ks:
            r = one_run(info.spec, cfg, k, args.seconds, seed=rep)
            runs[k].append(r)
            print(f"repeat {rep + 1}/{args.repeats}, {k} actor(s): {r['examples_per_s']:.0f} examples/s "
                  f"({r['games']} games in {r['wall_s']:.1f} s, actors' CPU {r['actor_cpu_per_wall_s']:.2f} "
                  f"per wall-second)", flush=True)
    base = statistics.median(r["examples_per_s"] for r in runs[ks[0]])
    rows = []
    for k in ks:
        med = statistics.median(r["examples_per_s"] for r in runs[k])
        rows.append({"actors": k, "examples_per_s_median": med,
                     "examples_per_s": [r["examples_per_s"] for r in runs[k]],
                     "ratio_to_first": med / base if base else None,
                     "goal_ratio": 0.8 * k / ks[0],
                     "actor_cpu_per_wall_s_median": statistics.median(
                         r["actor_cpu_per_wall_s"] for r in runs[k]),
                     "examples_per_actor_cpu_s_median": statistics.median(
                         r["examples_per_actor_cpu_s"] or 0.0 for r in runs[k]),
                     "games": sum(r["games"] for r in runs[k]),
                     "games_in_flight_per_actor": runs[k][0]["games_in_flight_per_actor"]})
    publish = publish_cost(info.spec, cfg)
    print(f"\n{'actors':>6} {'examples/s (median)':>20} {'x K=' + str(ks[0]):>8} {'goal':>6} "
          f"{'actor CPU/wall-s':>17} {'examples/actor CPU-s':>21}")
    for row in rows:
        print(f"{row['actors']:>6} {row['examples_per_s_median']:>20.0f} {row['ratio_to_first']:>8.2f} "
              f"{row['goal_ratio']:>6.1f} {row['actor_cpu_per_wall_s_median']:>17.2f} "
              f"{row['examples_per_actor_cpu_s_median']:>21.0f}")
    print(f"publishing the network: {publish['bytes']} bytes, write {publish['write_ms']:.1f} ms, "
          f"load by an actor {publish['load_ms']:.1f} ms ({publish['backend']})")
    ship: dict | None = ray_ship_cost(info.spec, cfg) if args.ray else None
    if ship:
        _print_ship(ship)
    else:               # keep the Ray measurement an earlier run (--only-ray) made of the same game
        ship = (_earlier(args.out, info.spec) or {}).get("ray_ship")
    load = os.getloadavg()
    write_results(args.out, {
        "game": info.spec, "config": _shown(cfg_path), "seconds": args.seconds,
        "repeats": args.repeats, "network": "fixed (seeded random weights, the config's architecture)",
        "rows": rows, "publish": publish, **({"ray_ship": ship} if ship else {}),
        "machine": {"cpus": len(os.sched_getaffinity(0)), "load_1min_at_end": load[0],
                    "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d")})
    print(f"results: {args.out}")


def _earlier(out: str, spec: str) -> dict | None:
    """The results file's earlier contents when they are of ``spec``; None otherwise."""
    old = read_results(out)
    return old if old is not None and old.get("game") == spec else None


def _print_ship(ship: dict) -> None:
    print(f"shipping a game on Ray: {ship['bytes_median']:.0f} bytes ({ship['examples_per_game_median']:.0f} "
          f"examples), round trip {ship['round_trip_with_game_ms']:.2f} ms against "
          f"{ship['round_trip_empty_ms']:.2f} ms empty, inbox write {ship['inbox_write_ms']:.2f} ms")


if __name__ == "__main__":
    main()
