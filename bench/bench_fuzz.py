"""Generated hostile inputs against a source tree: how many crash, hang, print a traceback, or are
accepted although they are invalid. Every category runs as one batch in a child process
that the harness restarts after a crash or a hang (tests/fuzz/runner.py).

    python -m bench.bench_fuzz                       # this tree, seed 0, 150 inputs per category
    python -m bench.bench_fuzz --tree OTHER_CHECKOUT     # another checkout (its compiled engines)
    python -m bench.bench_fuzz --per 60 --only position,cli --show 10
    python -m bench.bench_fuzz --only api            # every public entry point x every bad value
    python -m bench.bench_fuzz --overhead --json bench/results_entry_checks.json   # cost of the entry-point checks

Prints a table per category and the totals, and writes them as JSON with ``--json PATH``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from tests.fuzz import api, generate, runner  # noqa: E402

# inputs per category relative to --per (file and CLI cases are slower)
WEIGHT = {"spec": 1, "position": 2, "state_api": 2, "agent_spec": 2, "agent_choose": 0.5, "config": 1,
          "duration": 0.5, "json_file": 0.5, "results_db": 0.3, "cli": 1, "checkpoint": 0.5}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", default=str(ROOT), help="source tree under test (default: this one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per", type=int, default=150, help="inputs per category (scaled by WEIGHT)")
    ap.add_argument("--only", default="", help="comma-separated categories")
    ap.add_argument("--show", type=int, default=5, help="wrong results printed per category")
    ap.add_argument("--json", default=None, help="write the counts here")
    ap.add_argument("--overhead", action="store_true",
                    help="time the Python-visible entry points against their unchecked implementations")
    args = ap.parse_args(argv)
    if args.overhead:
        return overhead(args.json)
    cats = [c for c in (args.only.split(",") if args.only else [*generate.ALL, "api"]) if c]
    totals: dict = {}
    report = {}
    print(f"tree {args.tree}, seed {args.seed}")
    print(f"{'category':<13} {'inputs':>6} {'ok':>6} {'crash':>5} {'hang':>5} {'trace':>5} {'multi':>5} "
          f"{'inv':>4} {'accpt':>5} {'refV':>4} {'s':>6}")
    for cat in cats:
        rng = random.Random(f"{args.seed}:{cat}")
        cases = (api.cases() if cat == "api"
                 else generate.ALL[cat](rng, max(1, int(args.per * WEIGHT.get(cat, 1)))))
        t0 = time.monotonic()
        results = runner.run_cases(cases, args.tree)
        dt = time.monotonic() - t0
        t = runner.tally(results)
        report[cat] = t
        for k, v in t.items():
            totals[k] = totals.get(k, 0) + v
        print(f"{cat:<13} {t['inputs']:>6} {t['ok']:>6} {t['crash']:>5} {t['hang']:>5} {t['traceback']:>5} "
              f"{t['multiline']:>5} {t['invariant']:>4} {t['accepted']:>5} {t['refused_valid']:>4} {dt:>6.1f}",
              flush=True)
        if args.show and t["ok"] + t["skipped"] < t["inputs"]:
            print(runner.failures(results, args.show), flush=True)
    t = totals
    print(f"{'TOTAL':<13} {t['inputs']:>6} {t['ok']:>6} {t['crash']:>5} {t['hang']:>5} {t['traceback']:>5} "
          f"{t['multiline']:>5} {t['invariant']:>4} {t['accepted']:>5} {t['refused_valid']:>4}")
    if args.json:
        tree = os.path.relpath(args.tree, ROOT) if os.path.abspath(args.tree).startswith(str(ROOT)) else args.tree
        Path(args.json).write_text(json.dumps({"tree": tree, "seed": args.seed, "per": args.per,
                                               "categories": report, "total": totals}, indent=2))
    return 0


def _median_ns(stmt, number: int, repeats: int = 5) -> float:
    import statistics
    import timeit
    return statistics.median(timeit.repeat(stmt, number=number, repeat=repeats)) / number * 1e9


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _old_square_name(r, c, height):         # games.boardtext.square_name before the entry checks
    return f"{LETTERS[c]}{height - r}"


def _old_map_square(sym, r, c, h, w):       # games.symmetry.map_square before the entry checks (its path for 4)
    if sym == 0:
        return r, c
    if sym == 1:
        return w - 1 - c, r
    if sym == 2:
        return h - 1 - r, w - 1 - c
    if sym == 3:
        return c, h - 1 - r
    if sym == 4:
        return r, w - 1 - c
    raise ValueError(sym)


def overhead(json_path=None) -> int:
    """Per-call cost (ns, median of 5 repeats) of each checked entry point changed when the entry checks were added
    against the unchecked implementation it calls (what a caller paid before), and the search
    wrappers against a 100-iteration search (the cost of one move in match play)."""
    import games
    from games import boardtext, symmetry
    from search_ext.bestfirst import BestFirstSearch
    from search_ext.mcts import MCTS
    info = games.load("chess")
    s = info.new_state()
    a = s.legal_actions_list()[0]
    t = games.new_state("tic_tac_toe")
    bf, mc = BestFirstSearch(info, max_mb=64), MCTS(info, max_mb=64)
    rows = []

    def pair(name, new, old, number):
        n, o = _median_ns(new, number), _median_ns(old, number)
        rows.append({"entry": name, "checked_ns": round(n, 1), "unchecked_ns": round(o, 1),
                     "extra_ns": round(n - o, 1)})

    pair("State.transform_action", lambda: s.transform_action(0, a), lambda: s._transform_action(0, a), 200_000)
    pair("boardtext.square_name", lambda: boardtext.square_name(1, 2, 3), lambda: _old_square_name(1, 2, 3),
         200_000)
    pair("symmetry.map_square", lambda: symmetry.map_square(4, 1, 2, 8, 8),
         lambda: _old_map_square(4, 1, 2, 8, 8), 200_000)
    pair("tic_tac_toe move_to_str", lambda: t.move_to_str(4), lambda: t._move_text(4), 200_000)
    pair("State.push+pop (unchanged)", lambda: (t.push(4), t.pop()), lambda: (t.push(4), t.pop()), 200_000)
    pair("BestFirstSearch.search (1 iteration)", lambda: bf.search(s, iterations=1),
         lambda: bf._search(s, 1, 0.0), 2000)
    pair("MCTS.search (1 iteration)", lambda: mc.search(s, iterations=1), lambda: mc._search(s, 1, 0.0), 2000)
    move = _median_ns(lambda: bf.search(s, iterations=100), 50)
    rows.append({"entry": "BestFirstSearch.search (100 iterations, chess)", "checked_ns": round(move, 1)})
    for r in rows:
        extra = f"{r['extra_ns']:+8.0f} ns" if "extra_ns" in r else ""
        print(f"{r['entry']:<48} {r['checked_ns']:>12.0f} ns  {r.get('unchecked_ns', float('nan')):>12.0f} ns"
              f"  {extra}")
    if json_path:
        Path(json_path).write_text(json.dumps({"what": overhead.__doc__.split(chr(10))[0], "rows": rows},
                                              indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
