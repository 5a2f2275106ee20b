"""Matches per minute with the process pool and with Ray on this machine (1 and 2 workers), so the
overhead of the distributed path is known.

The workload: reversi(size=6) with
``minimax:iterations=3000`` against ``mcts:iterations=3000`` (about 0.3-1 s a game), the same match
list on every path. For Ray, "workers" is the number of CPUs the local cluster is started with. Cluster
start-up is excluded (timed separately); each path first plays one warm-up batch; the process
pool is created per batch, as each stage of the CLI does, so its start-up (spawn, imports) is included.

Usage:  python -m bench.bench_distributed [--games 40] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from descent.match import run_tasks  # noqa: E402

GAME = "reversi(size=6)"


def tasks(n, seed, iterations=3000):
    return [{"game": GAME, "agent_a": f"minimax:iterations={iterations}",
             "agent_b": f"mcts:iterations={iterations}", "index": i, "seed": seed,
             "a_first": i % 2 == 0} for i in range(n)]


def timed(n, seed, workers, ray_address=None, iterations=3000):
    """Matches per minute of ``n`` reversi(size=6) matches on ``workers`` (or on Ray)."""
    t0 = time.perf_counter()
    out = list(run_tasks(tasks(n, seed, iterations), workers, ray_address))
    assert len(out) == n
    return 60.0 * n / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rows = []
    for workers in (1, 2):
        timed(4, 99, workers)
        rates = [timed(a.games, r, workers) for r in range(a.repeats)]
        rows.append(("process pool", workers, statistics.median(rates), None))
    import ray
    for workers in (1, 2):
        t0 = time.perf_counter()
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.path.dirname(os.path.dirname(
                     os.path.abspath(__file__)))}})
        start = time.perf_counter() - t0
        timed(4, 99, 1, "local")
        rates = [timed(a.games, r, 1, "local") for r in range(a.repeats)]
        rows.append(("Ray (local cluster)", workers, statistics.median(rates), start))
        ray.shutdown()
    base = {w: r for name, w, r, _ in rows if name == "process pool"}
    print("| path | workers | matches/min | vs process pool | cluster start (s) |")
    print("|---|---|---|---|---|")
    for name, w, r, start in rows:
        print(f"| {name} | {w} | {r:,.1f} | {100 * r / base[w]:.0f}% | "
              f"{'' if start is None else f'{start:.1f}'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
