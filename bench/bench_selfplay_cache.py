"""Self-play with and without the value cache in front of the network, in one run.

``SelfPlayPool`` plays its rounds through the one batcher (``search_ext.batcher``); with
``cache_states`` > 0 a state valued in one game in flight is not asked of the network again (the
games' openings share most of their states, and a compaction's re-expansions find their values).
For each game, the same seeded games are played without the cache (before) and with it (after),
interleaved ``--repeats`` times, with a shipped network through ONNX Runtime (one thread), and
the run reports per side: examples per CPU-second (the process's CPU time, network included),
network calls and states per example, the share of states the cache answered, and whether the
two sides played the same moves (they do when the network's values do not depend on the batch;
ONNX Runtime's may differ in the last bits between batch sizes, which can change a move).

    python -m bench.bench_selfplay_cache --games 8 --in-flight 8 --repeats 3
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import games
from bench.harness import BENCH, ROOT, machine, write_results
from search_ext.selfplay import SelfPlayPool
from training.inference import make_inference
from training.network import read_network

# game -> (shipped network, iterations a move: havannah's Descent iterations run to the end of a long
# game, so fewer)
GAMES = {"reversi(size=6)": ("reversi_size-6", 30), "breakthrough(rows=6,cols=6)": ("breakthrough_rows-6_cols-6", 30),
         "havannah(base=4)": ("havannah_base-4", 5)}


def play(info, values, n_games: int, in_flight: int, iterations: int, cache_states: int) -> dict:
    """``n_games`` seeded games; the side's figures and its games' moves."""
    seeds = list(range(n_games, 0, -1))
    out: list = []
    pool = SelfPlayPool(info, values, iterations=iterations, games_in_flight=in_flight,
                        cache_states=cache_states)
    c0 = time.process_time()
    pool.run(lambda: (seeds.pop(), 0.3, -1.0, len(seeds)) if seeds else None, out.append)
    cpu = time.process_time() - c0
    examples = sum(len(g["y"]) for g in out)
    return {"cpu_seconds": cpu, "examples": examples, "examples_per_cpu_s": examples / cpu,
            "calls_per_example": pool.eval_calls / examples, "net_states_per_example": pool.net_states / examples,
            "cached_share": pool.cached_states / max(1, pool.eval_states), "rounds": pool.rounds,
            "moves": {g["tag"]: g["moves"] for g in out}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=8, help="games per side and repeat")
    ap.add_argument("--in-flight", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=0, help="iterations a move (default: the game's)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cache-states", type=int, default=500_000)
    ap.add_argument("--only", default="", help="these game specs (comma separated)")
    ap.add_argument("--json", default=str(BENCH / "results_selfplay_cache.json"))
    a = ap.parse_args(argv)
    rows = []
    for spec, (slug, iterations) in GAMES.items():
        if a.only and spec not in a.only.split(","):
            continue
        iterations = a.iterations or iterations
        info = games.load(spec)
        net = read_network(ROOT / "checkpoints" / "shipped" / slug / "final.weights.h5", info)
        inf = make_inference(net, "onnx", threads=1)
        sides: dict = {"before": [], "after": []}
        for _ in range(a.repeats):                 # interleaved: the machine's load hits both sides
            sides["before"].append(play(info, inf, a.games, a.in_flight, iterations, 0))
            sides["after"].append(play(info, inf, a.games, a.in_flight, iterations, a.cache_states))
        row = {"game": spec, "iterations": iterations, "backend": getattr(inf, "name", type(inf).__name__)}
        for side, runs in sides.items():
            for k in ("examples_per_cpu_s", "calls_per_example", "net_states_per_example", "cached_share"):
                row[f"{side}_{k}"] = round(statistics.median(r[k] for r in runs), 4)
        row["ratio_examples_per_cpu_s"] = round(statistics.median(
            b["examples_per_cpu_s"] / c["examples_per_cpu_s"] for b, c in zip(sides["after"], sides["before"])), 3)
        before, after = sides["before"][0]["moves"], sides["after"][0]["moves"]
        row["same_moves"] = sum(before[t] == after[t] for t in before) / len(before)
        rows.append(row)
        print({k: v for k, v in row.items()}, flush=True)
    write_results(a.json, {"meta": {**machine(), "games": a.games, "in_flight": a.in_flight,
                                    "repeats": a.repeats, "cache_states": a.cache_states,
                                    "command": "python -m bench.bench_selfplay_cache " + " ".join(argv or sys.argv[1:])},
                           "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
