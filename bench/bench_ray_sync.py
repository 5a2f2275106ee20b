"""Bytes and seconds per copy of a member's state from its worker to the driver (``--ray-ship``)
against shipping the whole member as before (its directory, replay window included, in
one tar each way).

For each game (reversi(size=6), breakthrough(rows=6,cols=6), their default configs), one member
is trained for ``--minutes`` on a local Ray cluster with ``--ray-ship`` and ``sync_every =
--sync-every`` seconds, twice: replay window left on the worker (the default) and shipped too
(``--ray-ship-replay``). Every copy reports its payload bytes, the worker's seconds (reading the
files and putting the message on the run's Ray queue: the learner waits that long) and the
driver's (writing it). The whole-member figure is measured at the end on the driver's directory
of the second run (all files, replay window included): the tar's bytes, and the seconds to pack
it, put it in Ray's object store and read it back, and unpack it: what the driver did at every
start and the worker at every end.

Usage:  python -m bench.bench_ray_sync [--minutes 2] [--sync-every 20] [--out bench/results_ray_sync.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

GAMES = ("reversi(size=6)", "breakthrough(rows=6,cols=6)")


def train(game: str, run: Path, minutes: float, every: float, replay: bool) -> list[dict]:
    import games
    from descent.config import default_config_path, load_config
    from descent.distributed import ray_runner
    from training.run import run_training
    info = games.load(game)
    cfg = load_config(default_config_path(info.spec))
    cfg["run"]["sync_every"] = every
    budget = minutes * 60
    syncs = []
    run_training(info.spec, cfg, 1, budget, [("half", budget / 2), ("end", budget)], 1, run, 0,
                 progress=False, echo=lambda line: None,
                 remote=ray_runner("local", ship=True, ship_replay=replay, on_sync=syncs.append))
    return syncs


def whole_member(mdir: Path, repeats: int = 3) -> dict:
    import ray
    from training.replication import pack as _pack, unpack as _unpack
    rows = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        data = _pack(mdir)
        t1 = time.perf_counter()
        data2 = ray.get(ray.put(data))
        t2 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            _unpack(data2, Path(tmp) / "m")
            t3 = time.perf_counter()
        rows.append((len(data), t1 - t0, t2 - t1, t3 - t2, t3 - t0))
    med = [statistics.median(c) for c in zip(*rows)]
    return {"bytes": int(med[0]), "pack_s": med[1], "transfer_s": med[2], "unpack_s": med[3],
            "seconds": med[4], "replay_files": len(list((mdir / "replay").glob("g*.h5")))}


def summary(syncs: list[dict]) -> dict:
    def med(key, rows=syncs):
        return statistics.median(r[key] for r in rows) if rows else None
    periodic = [s for s in syncs if s["event"] == "game"]
    return {"copies": len(syncs), "periodic": len(periodic), "games": max(s["games"] for s in syncs),
            "bytes_median": med("bytes"), "bytes_max": max(s["bytes"] for s in syncs),
            "periodic_bytes_median": med("bytes", periodic),
            "worker_s_median": med("worker_seconds"), "driver_s_median": med("driver_seconds"),
            "seconds_median": statistics.median(s["worker_seconds"] + s["driver_seconds"]
                                                for s in syncs)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--sync-every", type=float, default=20.0)
    ap.add_argument("--out", default=str(Path(__file__).with_name("results_ray_sync.json")))
    a = ap.parse_args()
    from descent import distributed
    distributed.init("local")
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "minutes": a.minutes,
           "sync_every": a.sync_every, "games": {}}
    for game in GAMES:
        row = {}
        with tempfile.TemporaryDirectory() as tmp:
            for replay in (False, True):
                run = Path(tmp) / ("replay" if replay else "default")
                syncs = train(game, run, a.minutes, a.sync_every, replay)
                row["sync_replay" if replay else "sync"] = summary(syncs)
            row["whole_member"] = whole_member(Path(tmp) / "replay" / "member_00")
        s, w = row["sync"], row["whole_member"]
        row["bytes_ratio_whole_over_sync"] = w["bytes"] / s["bytes_median"]
        row["seconds_ratio_whole_over_sync"] = w["seconds"] / s["seconds_median"]
        out["games"][game] = row
        print(f"{game}: {s['copies']} copies, {s['bytes_median'] / 1e3:.0f} kB and "
              f"{s['seconds_median'] * 1e3:.0f} ms each (median; with the replay window "
              f"{row['sync_replay']['bytes_median'] / 1e3:.0f} kB); whole member "
              f"{w['bytes'] / 1e3:.0f} kB in {w['seconds'] * 1e3:.0f} ms "
              f"(x{row['bytes_ratio_whole_over_sync']:.1f} bytes, "
              f"x{row['seconds_ratio_whole_over_sync']:.1f} seconds)", flush=True)
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
