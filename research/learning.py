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

Actors (``descent train --actors K``): ``actors1`` and ``actors2`` are today's defaults (ONNX
Runtime, the async learner) with one self-play process and with two. ``--sequential`` trains A and
then B, each alone on the machine (side by side, two actors and a learner would share the cores
with the other run: not the question "what do the spare cores buy"). ``--rung AGENT`` adds a fixed
opponent that both final networks play GAMES games against (same openings), and the summary gives
Elo with 95% intervals (``descent.ratings``: Bradley-Terry, bootstrap over each match's games),
the rung at 0:

    python -m research.learning --a actors2 --b actors1 --sequential --minutes 30 \
        --rung mcts:iterations=1000 --out runs/actors-learning
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
from pathlib import Path

from training.fileio import write_json

PATHS = {
    "single": {"inference": "tf", "learner": "inline", "games_in_flight": 1},
    "new": {"inference": "onnx", "learner": "thread", "games_in_flight": 0},
    "async": {"inference": "onnx", "learner": "async", "games_in_flight": 0},
    "actors1": {"inference": "onnx", "learner": "async", "games_in_flight": 0, "actors": 1},
    "actors2": {"inference": "onnx", "learner": "async", "games_in_flight": 0, "actors": 2},
}


def _train(game: str, runtime: dict, minutes: float, run_dir: str, seed: int) -> None:
    from descent.config import default_config_path, load_config
    from training.run import run_training
    cfg = load_config(default_config_path(game))
    budget = minutes * 60.0
    run_training(game, cfg, 1, budget, [("final", budget)], 1, Path(run_dir), seed, threads=1,
                 progress=False, echo=lambda *_: None, runtime=runtime)


def _games_and_examples(run_dir: Path) -> dict:
    """The member's totals: from its status.json (exact counters, whatever the log rotation thinned)
    where it has them, else summed over its game log."""
    from training import layout
    from training.logfiles import read_history     # log.jsonl and its archives
    mdir = run_dir / "member_00"
    recs = read_history(mdir)
    st_path = layout.status_file(mdir)
    st = json.loads(st_path.read_text()) if st_path.exists() else {}
    last = recs[-1] if recs else {}
    return {"games": st.get("games", last.get("game", 0)),
            "examples": st.get("examples", sum(r["examples"] for r in recs)),
            "train_seconds": st.get("train_seconds", last.get("train_seconds", 0.0)),
            "cpu_seconds": st.get("cpu_seconds", last.get("cpu_seconds", 0.0)),
            "actors": last.get("actors", 1),
            # the learner: networks published (one a pass over the replay window) and minibatch updates
            "learner_passes": st.get("network_version", sum(bool(r.get("trained")) for r in recs)),
            "updates": st.get("updates")}


def _match(game: str, a, b, n: int, seed: int, opening_plies: int, record: Path) -> list[int]:
    """``n`` games of agent ``a`` against ``b`` (seats alternating, a seat pair sharing its seeded
    opening); ``a``'s results. Resumable: the games in ``record`` (JSONL, one line a game, fsync'd)
    are kept, a torn last line is replayed."""
    from descent.match import play_game
    from descent.tournament import make_opening
    done: dict[int, int] = {}
    if record.exists():
        for line in record.read_text().splitlines():
            try:
                r = json.loads(line)
                done[r["index"]] = r["result_a"] if "result_a" in r else r["result_new"]
            except (json.JSONDecodeError, KeyError):
                pass            # a torn last line of a killed run: that game is replayed
    with record.open("a") as f:
        for i in range(n):
            if i in done:
                continue
            opening = make_opening(game, opening_plies, f"{seed}|{i // 2}")
            rec = play_game(game, a, b, i, seed, a_first=i % 2 == 0, opening=opening)
            done[i] = rec.a_result
            f.write(json.dumps({"index": i, "result_a": rec.a_result, "score_a": rec.a_score,
                                "plies": rec.plies, "a_first": rec.a_first}) + "\n")
            f.flush()
            os.fsync(f.fileno())
    return [done[i] for i in range(n)]


def _wdl(results: list[int], units: list[int]) -> dict:
    from descent.stats import cluster_interval
    w, d, losses = (sum(s > 0 for s in results), sum(s == 0 for s in results), sum(s < 0 for s in results))
    ci = cluster_interval([(s + 1) / 2 for s in results], units, lo=0.0, hi=1.0)
    return {"wins": w, "draws": d, "losses": losses, "score": (w + 0.5 * d) / len(results),
            "score_interval": [ci.low, ci.high], "units": ci.units}


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
    ap.add_argument("--sequential", action="store_true",
                    help="train A, then B, each alone on the machine (default: side by side)")
    ap.add_argument("--rung", default="", help="a fixed opponent both final networks play (an agent "
                    "spec, e.g. mcts:iterations=1000): Elo of both with the rung at 0")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.a == args.b:
        ap.error("--a and --b must differ")
    if args.games < 2 or args.games % 2:
        ap.error("--games must be even and at least 2 (seat pairs)")
    runs = {"a": (PATHS[args.a], out / args.a), "b": (PATHS[args.b], out / args.b)}
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_train, args=(args.game, rt, args.minutes, str(d), args.seed))
             for rt, d in runs.values()]
    # sequential: each run alone on the machine; otherwise both at once, seeing the same load
    batches = [[p] for p in procs] if args.sequential else [procs]
    print(f"training {'A, then B, each alone' if args.sequential else 'both paths side by side'} for "
          f"{args.minutes:g} min each ...", flush=True)
    for batch in batches:
        for p in batch:
            p.start()
        for p in batch:
            p.join()
        if any(p.exitcode for p in batch):
            print("a training process failed", file=sys.stderr)
            return 1
    nets = {k: d / "member_00" / "milestone_final.weights.h5" for k, (_, d) in runs.items()}
    from descent import make_agent
    spec = f"minimax:iterations={args.iterations}"
    a = make_agent(f"{spec},net={nets['a']}", args.game)
    b = make_agent(f"{spec},net={nets['b']}", args.game)
    units = [i // 2 for i in range(args.games)]          # a seat pair shares its opening
    print(f"A against B, {args.games} games ...", flush=True)
    ab = _match(args.game, a, b, args.games, args.seed, args.opening_plies, out / "match.jsonl")
    head = _wdl(ab, units)
    summary = {"game": args.game, "minutes": args.minutes, "sequential": args.sequential,
               "match": f"{spec}, {args.games} games, {args.opening_plies} opening plies",
               "a": {"path": args.a, **_games_and_examples(runs["a"][1])},
               "b": {"path": args.b, **_games_and_examples(runs["b"][1])},
               "wins": head["wins"], "draws": head["draws"], "losses": head["losses"],
               "score_a": head["score"], "score_interval": head["score_interval"], "units": head["units"]}
    if args.rung:
        from descent.ratings import elo_intervals
        rung = make_agent(args.rung, args.game)
        against = {}
        for k in ("a", "b"):
            print(f"{k.upper()} against the rung {args.rung}, {args.games} games ...", flush=True)
            against[k] = _match(args.game, a if k == "a" else b, rung, args.games, args.seed,
                                args.opening_plies, out / f"rung_{k}.jsonl")
        # players: 0 the rung, 1 A, 2 B; scores in [0, 1] of the first player of each pair
        pairs = [(1, 0, [(r + 1) / 2 for r in against["a"]]), (2, 0, [(r + 1) / 2 for r in against["b"]]),
                 (1, 2, [(r + 1) / 2 for r in ab])]
        elo = elo_intervals(3, pairs, anchor=0, boot=500, seed=args.seed)
        summary["rung"] = {"agent": args.rung, "a": _wdl(against["a"], units), "b": _wdl(against["b"], units),
                           "elo_a": list(elo[1]), "elo_b": list(elo[2]),
                           "elo_method": "Bradley-Terry over the three matches, the rung at 0; 95% "
                                         "intervals from 500 bootstrap resamples of each match's games"}
    write_json(out / "summary.json", summary)          # temporary name, then renamed
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
