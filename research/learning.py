"""Learning per wall-clock: two self-play paths, same budget.

Trains one network of GAME with path A and one with path B (by default: the pool with games in
flight, ONNX Runtime and the learner thread, against one game at a time through TensorFlow with
training between games, the nearest to the one-game path that the one walk replaced), both for MINUTES of wall-clock time and side by side
(the two processes share the machine, so both see the same load), then plays GAMES games between the
two final networks: ``minimax:iterations=ITERATIONS,net=...`` on both sides, seeded random openings
of OPENING_PLIES plies shared by the two seats of a pair, seats alternating.

    python -m research.learning --minutes 30 --games 100 --out runs/learning
    python -m research.learning --a async --b new ...     # the async learner against the thread

Paths: ``single`` (one game in flight, ``tf`` inference, inline learner), ``new`` (pool, ONNX Runtime, learner thread), ``async`` (the same with
``learner = "async"``). The summary gives the games and examples of A and B, and A's score against B.

Resumable: rerun the same command after an interruption; training continues from each run's
latest state, and the match is replayed from its JSONL record (finished games are kept).
Prints and writes OUT/summary.json: games and examples each path produced, the score of the new
network (path A) with a cluster-robust Wilson interval over the seat pairs.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
from pathlib import Path


PATHS = {
    "single": {"inference": "tf", "learner": "inline", "games_in_flight": 1},
    "new": {"inference": "onnx", "learner": "thread", "games_in_flight": 0},
    "async": {"inference": "onnx", "learner": "async", "games_in_flight": 0},
}


def _train(game: str, runtime: dict, minutes: float, run_dir: str, seed: int) -> None:
    from descent.config import default_config_path, load_config
    from training.run import run_training
    cfg = load_config(default_config_path(game))
    budget = minutes * 60.0
    run_training(game, cfg, 1, budget, [("final", budget)], 1, Path(run_dir), seed, threads=1,
                 progress=False, echo=lambda *_: None, runtime=runtime)


def _games_and_examples(run_dir: Path) -> dict:
    from training.logfiles import read_history     # log.jsonl and its archives
    recs = read_history(run_dir / "member_00")
    return {"games": recs[-1]["game"] if recs else 0, "examples": sum(r["examples"] for r in recs),
            "train_seconds": recs[-1]["train_seconds"] if recs else 0.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", default="reversi(size=6)")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--games", type=int, default=100, help="match games (even: seat pairs)")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--opening-plies", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="bench/results/learning")
    ap.add_argument("--a", default="new", choices=sorted(PATHS), help="the path under test")
    ap.add_argument("--b", default="single", choices=sorted(PATHS), help="the path it is compared with")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.a == args.b:
        ap.error("--a and --b must differ")
    runs = {"a": (PATHS[args.a], out / args.a), "b": (PATHS[args.b], out / args.b)}
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_train, args=(args.game, rt, args.minutes, str(d), args.seed))
             for rt, d in runs.values()]
    print(f"training both paths side by side for {args.minutes:g} min ...", flush=True)
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode for p in procs):
        print("a training process failed", file=sys.stderr)
        return 1
    nets = {k: d / "member_00" / "milestone_final.weights.h5" for k, (_, d) in runs.items()}
    from descent.match import play_game
    from descent.tournament import make_opening
    from descent import make_agent
    spec = f"minimax:iterations={args.iterations}"
    a = make_agent(f"{spec},net={nets['a']}", args.game)
    b = make_agent(f"{spec},net={nets['b']}", args.game)
    record = out / "match.jsonl"
    done = {}
    if record.exists():
        for line in record.read_text().splitlines():
            try:
                r = json.loads(line)
                done[r["index"]] = r
            except (json.JSONDecodeError, KeyError):
                pass            # a torn last line of a killed run: that game is replayed
    with record.open("a") as f:
        for i in range(args.games):
            if i in done:
                continue
            opening = make_opening(args.game, args.opening_plies, f"{args.seed}|{i // 2}")
            rec = play_game(args.game, a, b, i, args.seed, a_first=i % 2 == 0, opening=opening)
            r = {"index": i, "result_new": rec.a_result, "score_new": rec.a_score, "plies": rec.plies,
                 "new_first": rec.a_first}
            done[i] = r
            f.write(json.dumps(r) + "\n")
            f.flush()
            os.fsync(f.fileno())
    from descent.stats import cluster_interval
    scores = [done[i]["result_new"] for i in range(args.games)]
    units = [i // 2 for i in range(args.games)]          # a seat pair shares its opening
    w, d, l = sum(s > 0 for s in scores), sum(s == 0 for s in scores), sum(s < 0 for s in scores)
    score = (w + 0.5 * d) / len(scores)
    ci = cluster_interval([(s + 1) / 2 for s in scores], units, lo=0.0, hi=1.0)
    summary = {"game": args.game, "minutes": args.minutes, "match": f"{spec}, {args.games} games, "
               f"{args.opening_plies} opening plies", "a": {"path": args.a, **_games_and_examples(runs["a"][1])},
               "b": {"path": args.b, **_games_and_examples(runs["b"][1])}, "wins": w, "draws": d, "losses": l,
               "score_a": score, "score_interval": [ci.low, ci.high], "units": ci.units}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
