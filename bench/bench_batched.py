"""Networked games per CPU-second: one by one (before) against many in flight with one network call
per round (after, ``descent.batched``), in one run.

The workloads: the shipped networks of reversi 6x6, breakthrough 6x6 and havannah(base=4)
(``checkpoints/shipped/*/final.weights.h5``, the default inference backend), Unbounded Minimax and
Minibal_+ against themselves at 100 and 1,000 iterations a move. Before: ``descent.match.play_game``
one game after the other (what ``descent match`` did), each expansion one network call. After:
``descent.batched.run_batched`` with every game of the workload in flight (and its value cache:
a state valued once in any game, by either side, is not asked for again). Both sides play the same
games (same seeds, agents built before the clock starts), measured in process CPU time
(``time.process_time``: the machine is shared), alternating which side goes first, ``--repeats``
times; the table gives medians, the ratio after/before, and how many games had the same moves on
both sides (the production backend's values may depend on the batch in the last bits, so a few games
can differ; tests/test_batched.py proves equality with a batch-independent evaluator).

    python -m bench.bench_batched [--repeats 3] [--only reversi] [--levels 100,1000]
    python -m bench.bench_batched --network --out bench/results_batched_network.json

Results go to bench/results_batched.json (written atomically after every repeat; a rerun continues
from the repeats already there).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")     # one thread, like the inference sessions

from training.fileio import write_json  # noqa: E402

GAMES = [("reversi(size=6)", "reversi_size-6"), ("breakthrough(rows=6,cols=6)", "breakthrough_rows-6_cols-6"),
         ("havannah(base=4)", "havannah_base-4")]
ALGORITHMS = ["minimax", "minibal_plus"]
LEVELS = [(100, 12), (1000, 4)]          # iterations a move, games a workload


def workload(game: str, shipped: str, algo: str, iterations: int, n_games: int):
    """The tasks and the agents (built now, outside the clock) of one workload."""
    from descent.networks import make_agent
    net = ROOT / "checkpoints" / "shipped" / shipped / "final.weights.h5"
    spec = f"{algo}:iterations={iterations},net={net}"
    agents = {"a": make_agent(spec, game), "b": make_agent(spec, game)}
    tasks = [{"game": game, "agent_a": spec, "agent_b": spec, "index": i, "seed": 11, "a_first": i % 2 == 0,
              "opening_plies": 2} for i in range(n_games)]
    for agent in agents.values():
        _time_network(agent.search.evaluator.fn)
    return tasks, agents


NET = {"cpu": 0.0}      # process CPU inside ONNX Runtime's run, over every timed network
TIMED = []              # the timed inference objects (their own ``states`` count what they valued)


def _time_network(fn) -> None:
    """Count the process CPU spent inside the inference session's ``run`` (the network itself), so
    each side's time splits into network and everything else."""
    if not hasattr(fn, "_sess"):
        raise SystemExit(f"bench_batched: the network runs on {type(fn).__name__}, not ONNX Runtime "
                         "(install onnxruntime: the split times its session's run)")
    run = fn._sess.run

    def timed(names, feeds):
        c0 = time.process_time()
        out = run(names, feeds)
        NET["cpu"] += time.process_time() - c0
        return out
    fn._sess.run = timed
    TIMED.append(fn)


def _net_mark() -> tuple:
    return NET["cpu"], sum(fn.states for fn in TIMED)


def _net_since(mark: tuple) -> tuple:
    now = _net_mark()
    return now[0] - mark[0], now[1] - mark[1]


def before(tasks, agents):
    from descent.match import play_game
    out = {}
    mark = _net_mark()
    c0 = time.process_time()
    for t in tasks:
        out[t["index"]] = play_game(t["game"], agents["a"], agents["b"], t["index"], t["seed"],
                                    t["a_first"], t["opening_plies"])
    cpu = time.process_time() - c0
    return cpu, out, _net_since(mark)


def after(tasks, agents):
    from descent.batched import run_batched
    built = iter([agents["a"], agents["b"]])
    protos = {}

    def make(spec, game):                  # the agents built outside the clock (one per side)
        key = len(protos)
        protos[key] = next(built)
        return protos[key]
    stats = {}
    mark = _net_mark()
    c0 = time.process_time()
    out = {t["index"]: rec for t, rec in run_batched(tasks, len(tasks), stats=stats, make_agent=make)}
    stats["net_cpu"], stats["net_states"] = _net_since(mark)
    return time.process_time() - c0, out, stats


def network_cost(repeats: int) -> dict:
    """CPU microseconds per state of each shipped network's call at several batch sizes (random
    planes; medians of ``repeats``): what batching can save is the part of a call that does not
    grow with its states."""
    import numpy as np
    from descent.networks import make_agent
    out = {}
    for game, shipped in GAMES:
        net = ROOT / "checkpoints" / "shipped" / shipped / "final.weights.h5"
        fn = make_agent(f"minimax:iterations=1,net={net}", game).search.evaluator.fn
        row = {}
        for n in (1, 8, 32, 128, 512):
            x = np.random.default_rng(0).random((n,) + tuple(fn.shape)).astype(np.float32)
            fn(x)
            reps = max(3, 2000 // n)
            runs = []
            for _ in range(repeats):
                c0 = time.process_time()
                for _ in range(reps):
                    fn(x)
                runs.append((time.process_time() - c0) / reps / n * 1e6)
            row[str(n)] = statistics.median(runs)
        out[game] = row
        print(f"{game}: " + ", ".join(f"batch {k}: {v:.1f} us/state" for k, v in row.items()), file=sys.stderr)
    return out


def network_mflop(shipped: str) -> float:
    """Multiply-adds of one state through a shipped network, counted from its weights' shapes (a
    convolution with 'same' padding costs 2 kh kw cin cout per board cell; a dense layer 2 a b), in
    millions of floating-point operations."""
    from training.network import read_network
    net = read_network(ROOT / "checkpoints" / "shipped" / shipped / "final.weights.h5")
    cells = net.planes_shape[0] * net.planes_shape[1]
    flop = 0
    for kernel, _bias in net.weights.values():
        flop += 2 * kernel.size * (cells if kernel.ndim == 4 else 1)
    return flop / 1e6


def sgemm_gflops(repeats: int) -> float:
    """This machine's single-precision matrix-product rate on one thread (NumPy's BLAS, 2048 x 2048
    x 2048): the arithmetic ceiling a network's convolutions can approach."""
    import numpy as np
    a = np.random.default_rng(0).random((2048, 2048), dtype=np.float32)
    a @ a
    runs = []
    for _ in range(max(3, repeats)):
        c0 = time.process_time()
        a @ a
        runs.append(2 * 2048 ** 3 / (time.process_time() - c0) / 1e9)
    return statistics.median(runs)


def winograd_gemm_gflops(repeats: int) -> dict:
    """The rate of the matrix products a Winograd F(2x2,3x3) convolution of 32 filters would run
    instead of the direct one: 16 products (one per point of a 4x4 tile) of (tiles x 32) by
    (32 x 32), as one batched ``matmul``, for 288, 1,152 and 2,048 tiles (32 to 128 states of 9 or
    16 tiles); GFLOP/s on one thread, medians of ``repeats``. The inner dimension of 32 keeps them far
    below a large product's rate, which takes back much of Winograd's saving."""
    import numpy as np
    rng = np.random.default_rng(0)
    out = {}
    for tiles in (288, 1152, 2048):
        a = rng.random((16, tiles, 32), dtype=np.float32)
        b = rng.random((16, 32, 32), dtype=np.float32)
        a @ b
        runs = []
        for _ in range(max(3, repeats)):
            c0 = time.process_time()
            for _ in range(50):
                a @ b
            runs.append(2 * 16 * tiles * 32 * 32 * 50 / (time.process_time() - c0) / 1e9)
        out[str(tiles)] = statistics.median(runs)
    return out


def _share(row: dict, side: str) -> float:
    """The network's share of one side's CPU, in percent (median over the repeats)."""
    return 100 * statistics.median(x / c for x, c in zip(row[f"{side}_net_cpu"], row[f"{side}_cpu"]))


def _per_state(row: dict, side: str) -> float:
    """The network's CPU microseconds per state it valued on one side (median over the repeats)."""
    return 1e6 * statistics.median(x / k for x, k in zip(row[f"{side}_net_cpu"], row[f"{side}_net_states"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="", help="only the workloads whose game contains this text")
    ap.add_argument("--levels", default="100,1000", help="iteration levels to run")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results_batched.json"))
    ap.add_argument("--network", action="store_true", help="only the networks' CPU per state by batch size")
    a = ap.parse_args(argv)
    if a.network:
        out = Path(a.out)
        results = json.loads(out.read_text()) if out.exists() else {}
        # the whole set of measures once per repeat, so a slow spell of the (shared) machine
        # falls on all of them alike; each figure is the median of its repeats
        runs = []
        for rep in range(a.repeats):
            runs.append({"network": network_cost(1), "sgemm": sgemm_gflops(3),
                         "winograd": winograd_gemm_gflops(3)})
            print(f"repeat {rep + 1}: one-thread sgemm {runs[-1]['sgemm']:.1f} GFLOP/s; Winograd's "
                  f"products {runs[-1]['winograd']}", file=sys.stderr, flush=True)
        med = statistics.median
        results["network_us_per_state"] = {game: {n: med(r["network"][game][n] for r in runs)
                                                  for n in runs[0]["network"][game]} for game, _ in GAMES}
        results["network_mflop_per_state"] = {game: network_mflop(shipped) for game, shipped in GAMES}
        results["sgemm_gflops_one_thread"] = med(r["sgemm"] for r in runs)
        results["winograd_gemm_gflops_one_thread"] = {t: med(r["winograd"][t] for r in runs)
                                                      for t in runs[0]["winograd"]}
        results["network_repeats"] = runs
        write_json(out, results, indent=1)
        return 0
    out = Path(a.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    levels = [lv for lv in LEVELS if str(lv[0]) in a.levels.split(",")]
    for rep in range(a.repeats):
        for iterations, n_games in levels:
            for game, shipped in GAMES:
                if a.only and a.only not in game:
                    continue
                for algo in ALGORITHMS:
                    key = f"{game} {algo} {iterations}"
                    row = results.setdefault(key, {"games": n_games, "before_cpu": [], "after_cpu": [],
                                                   "same_moves": [], "calls": [], "states": [],
                                                   "cached": []})
                    if len(row["before_cpu"]) > rep:
                        continue
                    tasks, agents = workload(game, shipped, algo, iterations, n_games)
                    if rep % 2 == 0:
                        cb, ob, bnet = before(tasks, agents)
                        ca, oa, st = after(tasks, agents)
                    else:
                        ca, oa, st = after(tasks, agents)
                        cb, ob, bnet = before(tasks, agents)
                    row["before_cpu"].append(cb)
                    row["after_cpu"].append(ca)
                    row["same_moves"].append(sum(ob[i].moves == oa[i].moves for i in ob))
                    row["calls"].append(st["calls"])
                    row["states"].append(st["states"])
                    row["cached"].append(st["cached"])
                    for k, v in (("before_net_cpu", bnet[0]), ("before_net_states", bnet[1]),
                                 ("after_net_cpu", st["net_cpu"]), ("after_net_states", st["net_states"])):
                        row.setdefault(k, []).append(v)
                    write_json(out, results, indent=1)
                    print(f"repeat {rep + 1}: {key}: before {cb:.2f} s (network {bnet[0]:.2f}), "
                          f"after {ca:.2f} s (network {st['net_cpu']:.2f}) CPU "
                          f"({cb / ca:.2f}x), same moves {row['same_moves'][-1]}/{n_games}",
                          file=sys.stderr, flush=True)
    print("| workload | games | before: games per CPU-s | after | after/before (range) | cached | network's "
          "share of CPU, before / after | network us a state, before / after | ceiling | same moves |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    med = statistics.median
    for key, row in results.items():
        if not isinstance(row, dict) or not row.get("before_cpu"):
            continue
        n = row["games"]
        ratios = [b / f for b, f in zip(row["before_cpu"], row["after_cpu"])]
        cached = row["cached"][0] / (row["cached"][0] + row["states"][0])
        split = "- | - | -"            # files written before the bench timed the network
        if row.get("before_net_cpu"):
            ceiling = med(b / x for b, x in zip(row["before_cpu"], row["after_net_cpu"]))
            split = (f"{_share(row, 'before'):.0f}% / {_share(row, 'after'):.0f}% | "
                     f"{_per_state(row, 'before'):.1f} / {_per_state(row, 'after'):.1f} | {ceiling:.2f}x")
        print(f"| {key} | {n} | {med(n / c for c in row['before_cpu']):.2f} | "
              f"{med(n / c for c in row['after_cpu']):.2f} | **{med(ratios):.2f}x** ({min(ratios):.2f}-"
              f"{max(ratios):.2f}) | {cached:.0%} | {split} | {min(row['same_moves'])}-{max(row['same_moves'])}/{n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
