"""Generated hostile inputs against a source tree: how many crash, hang, print a traceback, or are
accepted although they are invalid (issue 12). Every category runs as one batch in a child process
that the harness restarts after a crash or a hang (tests/fuzz/runner.py).

    python bench/bench_fuzz.py                       # this tree, seed 0, 150 inputs per category
    python bench/bench_fuzz.py --tree OTHER_CHECKOUT     # another checkout (its compiled engines)
    python bench/bench_fuzz.py --per 60 --only position,cli --show 10

Prints a table per category and the totals, and writes them as JSON with ``--json PATH``.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzz import generate, runner  # noqa: E402

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
    args = ap.parse_args(argv)
    cats = [c for c in (args.only.split(",") if args.only else generate.ALL) if c]
    totals: dict = {}
    report = {}
    print(f"tree {args.tree}, seed {args.seed}")
    print(f"{'category':<13} {'inputs':>6} {'ok':>6} {'crash':>5} {'hang':>5} {'trace':>5} {'multi':>5} "
          f"{'inv':>4} {'accpt':>5} {'refV':>4} {'s':>6}")
    for cat in cats:
        rng = random.Random(f"{args.seed}:{cat}")
        cases = generate.ALL[cat](rng, max(1, int(args.per * WEIGHT.get(cat, 1))))
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
        Path(args.json).write_text(json.dumps({"tree": args.tree, "seed": args.seed, "per": args.per,
                                               "categories": report, "total": totals}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
