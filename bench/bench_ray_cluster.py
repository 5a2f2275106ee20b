"""Matches per minute on a simulated multi-node Ray cluster (``ray.cluster_utils.Cluster``: a head
with no CPU for tasks and 1, 2 or 4 worker nodes of 1 CPU each, every node its own raylet) against the
process pool with as many worker processes, in one run. With 1 worker the "pool" is the
stages' serial path (matches played in the driver's process, as ``--workers 1`` does).

The workload is an evaluate-like batch: reversi(size=6), ``minimax:iterations=N`` against
``mcts:iterations=N``, the same match list on every path, through ``descent.match.run_tasks`` (the
stages' path). Each configuration first plays a warm-up batch (worker start-up and imports excluded
on Ray, where workers live as long as the driver's job); the process pool is created per batch, as
each stage of the CLI does, so its start-up is included. Cluster start-up (raylets, the package
check on every node) is timed separately. Medians over ``--repeats`` batches, the pool's and Ray's
interleaved (their order alternating) while the cluster is up, so that a drifting machine load
weighs on both alike.

On a machine with fewer cores than nodes the "nodes" share the cores: the figures measure the
overhead of the Ray path and its scaling up to the core count, not a real cluster's network.

Usage:  python -m bench.bench_ray_cluster [--games 40] [--repeats 3] [--iterations 1000] [--nodes 1,2,4]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

from bench.bench_distributed import GAME, timed  # the same batch of matches
from bench.harness import ROOT
from training.fileio import write_json

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def rate(n, seed, iterations, workers, ray_address=None) -> float:
    return timed(n, seed, workers, ray_address, iterations)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--nodes", default="1,2,4")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results_ray_cluster.json"))
    a = ap.parse_args()
    import ray
    from ray.cluster_utils import Cluster
    from descent import distributed
    rows = []
    for nodes in [int(x) for x in a.nodes.split(",")]:
        t0 = time.perf_counter()
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        for _ in range(nodes):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        distributed.init(cluster.address)               # connects and checks the package on every node
        start = time.perf_counter() - t0
        pool, on_ray = [], []
        try:
            rate(2 * nodes, 99, a.iterations, 1, cluster.address)      # a worker started on every node
            rate(max(2, nodes), 99, a.iterations, nodes)                # the file caches warm
            for r in range(a.repeats):      # interleaved, the order alternating: the load drifts
                for path in (("pool", "ray") if r % 2 == 0 else ("ray", "pool")):
                    if path == "pool":
                        pool.append(rate(a.games, r, a.iterations, nodes))
                    else:
                        on_ray.append(rate(a.games, r, a.iterations, 1, cluster.address))
        finally:
            ray.shutdown()
            cluster.shutdown()
        row = {"nodes": nodes, "worker_processes": nodes,
               "pool_matches_per_min": statistics.median(pool), "pool_runs": pool,
               "ray_matches_per_min": statistics.median(on_ray), "ray_runs": on_ray,
               "cluster_start_s": start}
        row["ray_vs_pool"] = row["ray_matches_per_min"] / row["pool_matches_per_min"]
        rows.append(row)
        print(f"{nodes} node(s): pool {row['pool_matches_per_min']:.1f}/min, Ray "
              f"{row['ray_matches_per_min']:.1f}/min ({100 * row['ray_vs_pool']:.0f}%), "
              f"cluster start {start:.1f} s", flush=True)
    base = rows[0]["ray_matches_per_min"]
    for row in rows:
        row["ray_scaling_vs_1_node"] = row["ray_matches_per_min"] / base
    print("| nodes (= worker processes) | process pool, matches/min | Ray cluster, matches/min | "
          "Ray vs pool | Ray vs 1 node | cluster start (s) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['nodes']} | {r['pool_matches_per_min']:.1f} | {r['ray_matches_per_min']:.1f} | "
              f"{100 * r['ray_vs_pool']:.0f}% | {r['ray_scaling_vs_1_node']:.2f}x | {r['cluster_start_s']:.1f} |")
    write_json(a.out, {"benchmark": "bench_ray_cluster", "game": GAME, "games_per_batch": a.games,
                       "repeats": a.repeats, "iterations": a.iterations, "cpus": os.cpu_count(),
                       "machine": platform.machine(), "ray": ray.__version__, "rows": rows,
                       "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return 0


if __name__ == "__main__":
    sys.exit(main())
