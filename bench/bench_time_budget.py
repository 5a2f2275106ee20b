"""How far past its deadline a time-budgeted search stops (what tests/test_search.py's
test_time_budget_is_used leaves out: it depends on the machine's load).

For each agent and budget: ``--repeats`` first moves of reversi (8x8) from a fresh agent, the wall
time of ``choose`` minus the budget; medians and the worst, in milliseconds.

    PYTHONPATH=. .venv/bin/python -m bench.bench_time_budget --repeats 7 --json bench/results_time_budget.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import games
from search_ext.agents import make_agent

AGENTS = ["minimax", "descent", "mcts", "alphabeta", "hybrid", "minibal_plus"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--budgets", default="0.2,1.0")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    rows = []
    for agent in AGENTS:
        for budget in (float(b) for b in args.budgets.split(",")):
            over = []
            for _ in range(args.repeats):
                a = make_agent(f"{agent}:time={budget}", "reversi")
                s = games.new_state("reversi")
                t0 = time.perf_counter()
                a.choose(s)
                over.append((time.perf_counter() - t0 - budget) * 1000)
            row = {"agent": agent, "budget_s": budget, "median_over_ms": round(statistics.median(over), 2),
                   "max_over_ms": round(max(over), 2), "min_over_ms": round(min(over), 2)}
            rows.append(row)
            print(row, flush=True)
    if args.json:
        out = {"rows": rows, "repeats": args.repeats, "load1": os.getloadavg()[0],
               "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count()}
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
