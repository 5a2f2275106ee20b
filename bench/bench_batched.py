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

    python bench/bench_batched.py [--repeats 3] [--only reversi] [--levels 100,1000]
    python bench/bench_batched.py --network --out bench/results_batched_network.json

Results go to bench/results_batched.json (written atomically after every repeat; a rerun continues
from the repeats already there).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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
    return tasks, agents


def before(tasks, agents):
    from descent.match import play_game
    out = {}
    c0 = time.process_time()
    for t in tasks:
        out[t["index"]] = play_game(t["game"], agents["a"], agents["b"], t["index"], t["seed"],
                                    t["a_first"], t["opening_plies"])
    return time.process_time() - c0, out


def after(tasks, agents):
    from descent.batched import run_batched
    built = iter([agents["a"], agents["b"]])
    protos = {}

    def make(spec, game):                  # the agents built outside the clock (one per side)
        key = len(protos)
        protos[key] = next(built)
        return protos[key]
    stats = {}
    c0 = time.process_time()
    out = {t["index"]: rec for t, rec in run_batched(tasks, len(tasks), stats=stats, make_agent=make)}
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
        results["network_us_per_state"] = network_cost(a.repeats)
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
                        cb, ob = before(tasks, agents)
                        ca, oa, st = after(tasks, agents)
                    else:
                        ca, oa, st = after(tasks, agents)
                        cb, ob = before(tasks, agents)
                    row["before_cpu"].append(cb)
                    row["after_cpu"].append(ca)
                    row["same_moves"].append(sum(ob[i].moves == oa[i].moves for i in ob))
                    row["calls"].append(st["calls"])
                    row["states"].append(st["states"])
                    row["cached"].append(st["cached"])
                    write_json(out, results, indent=1)
                    print(f"repeat {rep + 1}: {key}: before {cb:.2f} s, after {ca:.2f} s CPU "
                          f"({cb / ca:.2f}x), same moves {row['same_moves'][-1]}/{n_games}",
                          file=sys.stderr, flush=True)
    print("| workload | games | before: games per CPU-s (median) | after | after/before | repeats | "
          "same moves |")
    print("|---|---|---|---|---|---|---|")
    for key, row in results.items():
        if key == "network_us_per_state" or not row["before_cpu"]:
            continue
        n = row["games"]
        b = statistics.median(n / c for c in row["before_cpu"])
        f = statistics.median(n / c for c in row["after_cpu"])
        print(f"| {key} | {n} | {b:.2f} | {f:.2f} | {f / b:.2f}x | {len(row['before_cpu'])} | "
              f"{min(row['same_moves'])}-{max(row['same_moves'])}/{n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
