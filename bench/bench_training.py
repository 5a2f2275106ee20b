"""Training benchmarks.

  python -m bench.bench_training inference [--repeats 5]
      In-search inference throughput (states evaluated per second while a Descent search runs with
      the network evaluator) against the raw throughput of the same network called directly on
      batches of the same (mean) size.
  python -m bench.bench_training selfplay [--games 4]
      Training examples produced per CPU-second and self-play games per hour on reversi(size=6),
      for the default network and a larger one.
  python -m bench.bench_training throughput [--repeats 3] [--games-list reversi,...]
      Self-play throughput of one game at a time (SelfPlayPool with one game in flight,
      tf.function, training between games; before the one walk this was the separate one-game path
      through BestFirstSearch, now deleted) against the default (SelfPlayPool with games_in_flight
      games, ONNX Runtime, learner thread), in the same run, medians over repeats: examples per
      CPU-second, games per hour, network states per second in self-play; the in-search states per
      CPU-second as a fraction of the same network's best raw throughput; the machine-normalised
      figure (examples/s of training divided by tf.function states/s at batch 256); the learner's
      share with a full replay window; memory of the pool per worker.
  python -m bench.bench_training learning --run DIR [--games 100]
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


THROUGHPUT_GAMES = {                       # game -> (self-play iterations per move, games per run)
    "reversi(size=6)": (50, 12),
    "breakthrough(rows=6,cols=6)": (50, 6),
    "connect6(size=9)": (3, 6),
}
ONE_GAME = {"inference": "tf", "learner": "inline", "games_in_flight": 1}
NEW = {"inference": "onnx", "learner": "thread", "games_in_flight": 0}


def _raw_rates(inf, shape, batches, seconds=1.0, wall=False):
    """States per CPU-second (or per second of wall-clock time) of ``inf`` on random 0/1 batches
    of each size (median of 3)."""
    rng = np.random.default_rng(0)
    clock = time.perf_counter if wall else time.process_time
    out = {}
    for b in batches:
        x = rng.integers(0, 2, (b, *shape)).astype(np.float32)
        inf(x)
        reps = []
        for _ in range(3):
            n, c0 = 0, clock()
            while clock() - c0 < seconds / 3:
                inf(x)
                n += b
            reps.append(n / (clock() - c0))
        out[b] = statistics.median(reps)
    return out


def _member_run(game, cfg, extra, n_games, seed):
    from training.trainer import MemberJob, train_member
    recs = []
    with tempfile.TemporaryDirectory() as d:
        job = MemberJob(d, 0, game, cfg, 1e9, [], seed=seed, threads=1, max_games=n_games,
                        extra=extra)
        train_member(job, recs.append)
    ex = sum(r["examples"] for r in recs)
    cpu = sum(r["examples"] / r["examples_per_cpu_s"] for r in recs if r["examples_per_cpu_s"] > 0)
    wall = sum(r["seconds"] for r in recs)
    return {"ex_cpu": ex / cpu, "games_h": 3600 * len(recs) / wall, "ex_s": ex / wall,
            "states_s": recs[-1]["evaluations"] / wall, "ex_game": ex / len(recs),
            "in_flight": recs[-1]["games_in_flight"], "learn_share": sum(r["learn_seconds"] for r in recs) / wall}


def _pool_alone(info, model, iterations, in_flight, n_games):
    """Self-play alone (no learner): states per CPU-second inside the search, mean batch, memory."""
    from training.inference import make_inference
    from search_ext.selfplay import SelfPlayPool
    inf = make_inference(model, "onnx")
    seeds = list(range(n_games))
    out = []
    pool = SelfPlayPool(info, inf, iterations=iterations, games_in_flight=in_flight)
    c0 = time.process_time()
    pool.run(lambda: (seeds.pop(), 0.3, -1.0, None) if seeds else None, out.append)
    cpu = time.process_time() - c0
    return {"states_cpu": pool.eval_states / cpu, "batch": pool.eval_states / pool.eval_calls,
            "mem": pool.memory_bytes(), "peak_nodes": max(g["peak_nodes"] for g in out),
            "ex_game": statistics.mean(len(g["y"]) for g in out), "ex_cpu": sum(len(g["y"]) for g in out) / cpu}


def _learner_full_window(info, model, cfg, ex_game):
    """CPU seconds of one training pass with a full replay window (``replay_games`` games of
    ``ex_game`` examples): sample sigma of the window, decode, augment, train."""
    from training.network import make_optimizer, make_train_step
    from training.replay import ReplayBuffer
    from training.trainer import training_batches
    tr = cfg["training"]
    rng = np.random.default_rng(0)
    n = int(ex_game)
    x = rng.integers(0, 2, (n, *info.planes_shape)).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    step = make_train_step(model, make_optimizer(model, tr["learning_rate"]))
    with tempfile.TemporaryDirectory() as d:
        replay = ReplayBuffer(os.path.join(d, "replay"), tr["replay_games"], info.planes_shape)
        for g in range(1, tr["replay_games"] + 1):
            replay.add(g, x, y, np.zeros(n, np.int32), {"result": 0, "plies": 1})
        idx = replay.sample_indices(tr["sample_fraction"], tr["min_sample"], rng)
        batches = list(training_batches(replay, idx[:tr["batch_size"] * 2], tr["batch_size"],
                                        info.symmetries, tr["augment"], rng))
        step(*batches[0])
        c0 = time.process_time()
        steps = 0
        for bx, by in training_batches(replay, idx, tr["batch_size"], info.symmetries, tr["augment"], rng):
            step(bx, by)
            steps += 1
        return time.process_time() - c0, len(idx), steps


def bench_throughput(repeats: int, names) -> None:
    from descent.config import default_config_path, load_config
    from training.inference import OnnxInference, TFInference, default_games_in_flight
    from training.network import build_model, configure_threads
    from training.run import training_config
    configure_threads(1)
    rows, extra_rows = [], []
    for game in names:
        iterations, n_games = THROUGHPUT_GAMES[game]
        info = games.load(game)
        cfg = training_config(load_config(default_config_path(game)))
        cfg["selfplay"]["iterations"] = iterations
        net = cfg["network"]
        model = build_model(info.planes_shape, net["filters"], net["blocks"], net["head_units"], seed=0)
        res = {"one game": [], "new": []}
        tf256, tf256w = [], []
        for rep in range(repeats):
            tf256.append(_raw_rates(TFInference(model), info.planes_shape, [256])[256])
            tf256w.append(_raw_rates(TFInference(model), info.planes_shape, [256], wall=True)[256])
            res["one game"].append(_member_run(game, cfg, ONE_GAME, max(2, n_games // 3), rep + 1))
            res["new"].append(_member_run(game, cfg, NEW, n_games, rep + 1))
        tf_rate, tf_wall = statistics.median(tf256), statistics.median(tf256w)
        for path in ("one game", "new"):
            med = {k: statistics.median(r[k] for r in res[path]) for k in res[path][0]}
            rows.append(f"| {game} ({iterations} it/move) | {path} | {med['in_flight']:.0f} | "
                        f"{med['ex_cpu']:,.0f} | {med['games_h']:,.0f} | {med['states_s']:,.0f} | "
                        f"{med['ex_s']:,.0f} | **{med['ex_cpu'] / tf_rate:.3f}** / {med['ex_s'] / tf_wall:.3f} | "
                        f"{100 * med['learn_share']:.0f}% |")
            print(rows[-1], flush=True)
        # in-search fraction and memory (self-play alone), learner share with a full window
        g_auto = default_games_in_flight(info.branching)
        alone = _pool_alone(info, model, iterations, g_auto, g_auto)
        raw = _raw_rates(OnnxInference(model), info.planes_shape, [1, 5, 32, 256, round(alone["batch"])])
        best = max(raw.values())
        learn_cpu, sample, steps = _learner_full_window(info, model, cfg, alone["ex_game"])
        play_cpu = alone["ex_game"] / alone["ex_cpu"]
        extra_rows.append(
            f"| {game} | {g_auto} | {alone['batch']:.0f} | {alone['states_cpu']:,.0f} | {best:,.0f} | "
            f"**{100 * alone['states_cpu'] / best:.0f}%** | {alone['mem'] / 2**20:.1f} MiB "
            f"({alone['peak_nodes']:,} nodes) | {learn_cpu:.1f} s / {play_cpu:.1f} s "
            f"(**{100 * learn_cpu / (learn_cpu + play_cpu):.0f}%**) | {tf_rate:,.0f} |")
        print(extra_rows[-1], flush=True)
    print()
    print("| game | path | games in flight | examples per CPU-s | games/hour | states/s | examples/s "
          "| normalised: examples per CPU-s / tf.function@256 states per CPU-s, and the same per wall-clock s "
          "| time in training passes (wall) |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print("| game | games in flight | mean batch | in-search states per CPU-s | best raw (ONNX) | fraction "
          "| pool memory | learner CPU per game, full window / self-play CPU per game | tf.function @256 states per CPU-s |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(extra_rows))


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
    ap.add_argument("what", choices=("inference", "selfplay", "learning", "throughput"))
    ap.add_argument("--quick", action="store_true", help="throughput: a smoke run (2 iterations, 2 games)")
    ap.add_argument("--games-list", default=",".join(THROUGHPUT_GAMES),
                    help="throughput: games to measure (comma separated specs; keys of THROUGHPUT_GAMES)")
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
    elif a.what == "throughput":
        if a.quick:
            for k, (it, n) in THROUGHPUT_GAMES.items():
                THROUGHPUT_GAMES[k] = (2, 2)
        names = [g for g in THROUGHPUT_GAMES if g in a.games_list or g.split("(")[0] in a.games_list.split(",")]
        bench_throughput(min(a.repeats, 3) if a.repeats == 5 else a.repeats, names)
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
