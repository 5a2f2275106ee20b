"""Evaluation games per CPU-hour at the Minibal sweep's largest budget, batched, per game.

So that a reader can plan the sweep (configs/experiments/minibal-sweep.toml) on a bigger machine:
each game's high networks play Unbounded Minimax, Minibal_n and Minibal_+ at ``--budget`` against
the low pool (Unbounded Minimax at ``--opponent``), exactly as ``descent evaluate`` plays them
(batched evaluation, one worker process, the shared random openings), into a scratch results
database. The CPU time is the process's and its children's (user + system, ``resource``), so it
does not depend on what else the machine runs as much as wall time does; medians over
``--repeats`` runs of the same games.

  python -m bench.bench_sweep_cost --runs checkpoints/experiments/minibal-sweep \
      [--games 'havannah(base=4)' ...] [--budget iterations=200] [--opponent iterations=10] \
      [--games-per-pair 2] [--repeats 3] [--out bench/results_sweep_cost.json]

The run directories must hold ranked pools (the sweep's own, restored as
results/minibal-sweep/README.md says).
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
from pathlib import Path

from bench.harness import BENCH, machine, read_results, write_results
from descent.tournament import evaluate
from training import layout

ALGORITHMS = ["minimax", "minibal_n", "minibal_plus"]


def cpu_seconds() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(run_dir: Path, game: str, alg: str, budget: str, opponent: str, gpp: int) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = cpu_seconds()
        n = evaluate(run_dir, game, [alg], [budget], "pool", opponent, gpp, workers=1, seed=0,
                     db_path=Path(tmp) / "results.db", progress=False)
        return n, cpu_seconds() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="checkpoints/experiments/minibal-sweep")
    ap.add_argument("--games", nargs="*", default=None, help="game specs (default: every run with pools)")
    ap.add_argument("--budget", default="iterations=200")
    ap.add_argument("--opponent", default="iterations=10")
    ap.add_argument("--games-per-pair", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(BENCH / "results_sweep_cost.json"))
    a = ap.parse_args()
    runs = [p.parent for p in layout.pools_below(a.runs)]
    if not runs:
        print(f"error: no ranked run (pools.json) under {a.runs}", file=sys.stderr)
        return 2
    rows = []
    for run in runs:
        game = json.loads(layout.pools_file(run).read_text())["game"]
        if a.games and game not in a.games:
            continue
        for alg in ALGORITHMS:
            cpu, n = [], 0
            for _ in range(a.repeats):
                n, c = measure(run, game, alg, a.budget, a.opponent, a.games_per_pair)
                cpu.append(c)
            med = statistics.median(cpu)
            row = {"game": game, "algorithm": alg, "budget": a.budget, "opponent": a.opponent, "games": n,
                   "cpu_seconds": cpu, "cpu_seconds_median": med,
                   "games_per_cpu_hour": 3600.0 * n / med if med > 0 else None}
            rows.append(row)
            print(f"{game:<28} {alg:<13} {a.budget} vs {a.opponent}: {n} games, CPU {med:.1f} s (median of "
                  f"{a.repeats}: {', '.join(f'{x:.1f}' for x in cpu)}) -> {row['games_per_cpu_hour']:.0f} games "
                  f"a CPU-hour", flush=True)
    command = "python -m bench.bench_sweep_cost " + " ".join(sys.argv[1:])
    for row in rows:
        row["command"] = command
    # a run for some games keeps the file's rows of the others (each row names its command)
    measured = {r["game"] for r in rows}
    old = read_results(a.out) or {}
    earlier = [dict(r, command=r.get("command", old.get("command")))
               for r in old.get("rows", []) if r.get("game") not in measured]
    write_results(a.out, {"machine": machine(), "rows": earlier + rows, "command": command})
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
