"""Training benchmarks (issue 4).

  python bench/bench_training.py inference [--repeats 5]
      In-search inference throughput (states evaluated per second while a Descent search runs with
      the network evaluator) against the raw throughput of the same network called directly on
      batches of the same (mean) size.
  python bench/bench_training.py selfplay [--games 4]
      Training examples produced per CPU-second and self-play games per hour on reversi(size=6),
      for the default network and a larger one.
  python bench/bench_training.py learning --run DIR [--games 100]
      After `descent train "reversi(size=6)" --budget 30m --milestones 5m,30m --out DIR`: the final
      network against its own 5-minute checkpoint and against MCTS with 1000 iterations per move,
      fixed iteration budgets, seats alternating.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

import games  # noqa: E402

GAME = "reversi(size=6)"


def bench_inference(repeats: int, iterations: int) -> None:
    from search_ext.bestfirst import BestFirstSearch
    from training.network import Inference, build_model, configure_threads
    configure_threads(1)
    info = games.load(GAME)
    for filters, blocks in ((32, 2), (64, 4)):
        model = build_model(info.planes_shape, filters, blocks, 64, seed=0)
        inf = Inference(model)
        inf(np.zeros((1, *info.planes_shape), np.float32))
        ins, raw, batch = [], [], []
        for rep in range(repeats):
            inf.calls = inf.states = 0
            b = BestFirstSearch(info, descent=True, evaluator=inf.evaluator())
            s = info.new_state()
            t0 = time.perf_counter()
            b.search(s, iterations=iterations)
            dt = time.perf_counter() - t0
            mean_batch = inf.states / inf.calls
            ins.append(inf.states / dt)
            batch.append(mean_batch)
            k = max(1, round(mean_batch))
            x = np.random.default_rng(rep).integers(0, 2, (k, *info.planes_shape)).astype(np.float32)
            n_calls = inf.calls
            t0 = time.perf_counter()
            for _ in range(n_calls):
                inf(x)
            raw.append(k * n_calls / (time.perf_counter() - t0))
        r_in, r_raw = statistics.median(ins), statistics.median(raw)
        print(f"| {GAME} | {filters}x{blocks} | {statistics.median(batch):.1f} | {r_in:,.0f} | "
              f"{r_raw:,.0f} | **{100 * r_in / r_raw:.0f}%** |", flush=True)


def bench_selfplay(n_games: int) -> None:
    from descent.config import default_config_path, load_config
    from training.run import training_config
    from training.trainer import MemberJob, train_member
    cfg = training_config(load_config(default_config_path(GAME)))
    for filters, blocks in ((cfg["network"]["filters"], cfg["network"]["blocks"]), (64, 4)):
        c = {k: dict(v) for k, v in cfg.items()}
        c["network"].update(filters=filters, blocks=blocks)
        recs = []
        with tempfile.TemporaryDirectory() as d:
            job = MemberJob(d, 0, GAME, c, 1e9, [], seed=1, threads=1, max_games=n_games)
            train_member(job, recs.append)
        ex_cpu = statistics.median(r["examples_per_cpu_s"] for r in recs)
        sec = statistics.median(r["seconds"] for r in recs)
        play = statistics.median(r["play_seconds"] for r in recs)
        ex = statistics.median(r["examples"] for r in recs)
        print(f"| {GAME} | {filters}x{blocks} | {ex:,.0f} | {ex_cpu:,.0f} | {3600 / sec:,.0f} | "
              f"{100 * play / sec:.0f}% |", flush=True)


def bench_learning(run: str, n_games: int, workers: int, opening_plies: int, against=("early", "mcts"),
                   partial: str | None = None) -> None:
    import json
    from descent.match import run_tasks
    from descent.stats import MatchSummary
    final = os.path.join(run, "member_00", "milestone_30m.weights.h5")
    early = os.path.join(run, "member_00", "milestone_5m.weights.h5")
    net = f"minimax:iterations=300,net={final}"
    opponents = {"early": f"minimax:iterations=300,net={early}", "mcts": "mcts:iterations=1000"}
    for opp in (opponents[k] for k in against):
        # fixed iteration budgets make both players deterministic: random opening plies (seeded per
        # game) give the 100 games different starts
        tasks = [{"game": GAME, "agent_a": net, "agent_b": opp, "index": i, "seed": 7,
                  "a_first": i % 2 == 0, "opening_plies": opening_plies} for i in range(n_games)]
        recs = []
        for _, rec in run_tasks(tasks, workers):
            recs.append(rec)
            if partial:
                with open(partial, "a") as f:
                    f.write(json.dumps({"opponent": opp, "index": rec.index, "a_result": rec.a_result,
                                        "a_score": rec.a_score, "moves": rec.moves}) + "\n")
        s = MatchSummary.from_results([r.a_result for r in recs], [r.a_score for r in recs])
        score = (s.wins + 0.5 * s.draws) / s.games
        print(f"| final (30 min) vs {opp.split(',net=')[0] + (' + 5-min net' if 'net=' in opp else '')} | "
              f"{s.games} | {s.wins}/{s.draws}/{s.losses} | **{100 * score:.1f}%** | "
              f"{100 * s.gain:+.1f} ± {100 * s.gain_radius:.1f} |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("inference", "selfplay", "learning"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--games", type=int, default=None)
    ap.add_argument("--run", default=None)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--opening-plies", type=int, default=4)
    ap.add_argument("--against", default="early,mcts", help="early, mcts or both (comma separated)")
    ap.add_argument("--partial", default=None, help="append each finished game to this JSONL file")
    a = ap.parse_args()
    if a.what == "inference":
        print("| game | net (filters x blocks) | mean batch | in-search states/s | raw states/s | ratio |")
        print("|---|---|---|---|---|---|")
        bench_inference(a.repeats, a.iterations)
    elif a.what == "selfplay":
        print("| game | net | examples/game | examples per CPU-s | games/hour | share of time in self-play |")
        print("|---|---|---|---|---|---|")
        bench_selfplay(a.games or 4)
    else:
        if not a.run:
            ap.error("learning needs --run DIR")
        print("| match | games | W/D/L | score | binary gain % (95%) |")
        print("|---|---|---|---|---|")
        bench_learning(a.run, a.games or 100, a.workers, a.opening_plies, a.against.split(","), a.partial)
    return 0


if __name__ == "__main__":
    sys.exit(main())
