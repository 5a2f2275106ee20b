"""Without a network: which search should a level play in a game that ships none (chess, xiangqi)?

Each network-free candidate (Unbounded Minimax over random playouts, the former default; Unbounded
Minimax with the zero evaluation; alpha-beta with iterative deepening; MCTS) plays ``--games``
games at ``--seconds`` a move against Fairy-Stockfish at Skill Level 0 and ``--fsf-seconds`` a move
(seats alternating), and each candidate then plays alpha-beta head to head at equal time. Reported
per pairing: wins, draws, losses, the mean score and the mean game length in plies (against an
engine that wins every game, the length a candidate survives is what tells them apart). A measure
of time, so a benchmark, not a test; ``descent.api.NETWORK_FREE_ALPHABETA`` is the choice it backs.

    .venv/bin/python -m bench.bench_network_free --games 4 --json bench/results_network_free.json
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics

from descent.match import run_match
from training.fileio import json_text, write_text

CANDIDATES = {"minimax-playouts": "minimax:time={t},eval=playout,playouts=4",
              "minimax-zero": "minimax:time={t},eval=zero",
              "alphabeta": "alphabeta:time={t}",
              "mcts": "mcts:time={t}"}


def pairing(game: str, a: str, b: str, n: int, seed: int) -> dict:
    recs = [r for r in run_match(game, a, b, n, 1, seed, progress=False) if not r.aborted]
    return {"a": a, "b": b, "games": len(recs), "wins": sum(r.a_result > 0 for r in recs),
            "draws": sum(r.a_result == 0 for r in recs), "losses": sum(r.a_result < 0 for r in recs),
            "mean_score": round(statistics.fmean(r.a_score for r in recs), 3) if recs else None,
            "mean_plies": round(statistics.fmean(r.plies for r in recs), 1) if recs else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=0.1)
    ap.add_argument("--fsf-seconds", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    fsf = shutil.which("fairy-stockfish") or "/usr/games/fairy-stockfish"
    out: dict = {"seconds": args.seconds, "fsf_seconds": args.fsf_seconds, "games": args.games, "rows": []}
    for game in ("chess", "xiangqi"):
        ref = f"uci:{fsf},Skill Level=0,movetime={args.fsf_seconds}"
        for name, spec in CANDIDATES.items():
            row = {"game": game, "candidate": name, "against": "fairy-stockfish skill 0",
                   **pairing(game, spec.format(t=args.seconds), ref, args.games, args.seed)}
            out["rows"].append(row)
            print(json.dumps(row), flush=True)
        for name, spec in CANDIDATES.items():
            if name == "alphabeta":
                continue
            row = {"game": game, "candidate": name, "against": "alphabeta",
                   **pairing(game, spec.format(t=args.seconds), CANDIDATES["alphabeta"].format(t=args.seconds),
                             args.games, args.seed)}
            out["rows"].append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        write_text(args.json, json_text(out))


if __name__ == "__main__":
    main()
