"""Search benchmark: iterations/s of UBFM, Descent and MCTS with the zero evaluator, the search's own
cost per evaluated child, and MCTS playouts/s side by side with OpenSpiel's MCTS bot (random
rollouts, driven from Python) in the same run.

* iterations/s: a fresh search from the start position with an iteration budget, timed.
* cost per evaluated child (µs): the search's time divided by the number of children it sent to
  the (zero) evaluator; this is everything but the network: move generation, copies, hashing, the
  table, selection and backup. A network evaluation costs far more, so it should dominate.
* MCTS: our UCT (one random playout per iteration) against ``open_spiel.python.algorithms.mcts``'s
  ``MCTSBot`` with a ``RandomRolloutEvaluator(n_rollouts=1)``, both with ``c = sqrt 2``, the same
  number of simulations from the same position, reported as simulations per second.

Usage:  python -m bench.bench_search [--repeats 5] [--quick] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time

import games  # noqa: E402
from search_ext.bestfirst import BestFirstSearch  # noqa: E402
from search_ext.mcts import MCTS  # noqa: E402
from search_ext.evaluators import RandomValueEvaluator, ZeroEvaluator  # noqa: E402

CASES = [("reversi", "othello", {}), ("breakthrough", "breakthrough", {"rows": 8, "columns": 8})]


def bench_bestfirst(spec: str, descent: bool, iterations: int, random_values: bool):
    info = games.load(spec)
    ev = RandomValueEvaluator(1) if random_values else ZeroEvaluator()
    b = BestFirstSearch(info, descent=descent, evaluator=ev)
    s = info.new_state()
    t0 = time.perf_counter()
    done = b.search(s, iterations=iterations)
    dt = time.perf_counter() - t0
    return done / dt, dt / max(1, b.evaluations) * 1e6, b.evaluations / max(1, done)


def bench_mcts(spec: str, iterations: int, seed: int):
    info = games.load(spec)
    m = MCTS(info, seed=seed)
    s = info.new_state()
    t0 = time.perf_counter()
    m.search(s, iterations=iterations)
    return iterations / (time.perf_counter() - t0)


def bench_openspiel_mcts(name: str, params: dict, iterations: int, seed: int):
    import numpy as np
    import pyspiel
    from open_spiel.python.algorithms import mcts
    game = pyspiel.load_game(name, params)
    rng = np.random.RandomState(seed)
    bot = mcts.MCTSBot(game, math.sqrt(2), iterations, mcts.RandomRolloutEvaluator(1, rng),
                       random_state=rng, solve=False)
    s = game.new_initial_state()
    t0 = time.perf_counter()
    bot.mcts_search(s)
    return iterations / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    n_ubfm, n_descent, n_mcts, n_os = (20000, 2000, 20000, 1000)
    if args.quick:
        n_ubfm, n_descent, n_mcts, n_os = (2000, 200, 2000, 100)
    try:
        import pyspiel  # noqa: F401
        have_os = True
    except ImportError:
        have_os = False
    rows = []
    for spec, os_name, os_params in CASES:
        r = {"game": spec}
        ub, de, mc, mo, ubr, der = [], [], [], [], [], []
        for rep in range(args.repeats):
            ub.append(bench_bestfirst(spec, False, n_ubfm, False))
            de.append(bench_bestfirst(spec, True, n_descent, False))
            ubr.append(bench_bestfirst(spec, False, n_ubfm, True))
            der.append(bench_bestfirst(spec, True, n_descent, True))
            mc.append(bench_mcts(spec, n_mcts, rep))
            if have_os:
                mo.append(bench_openspiel_mcts(os_name, os_params, n_os, rep))
        r["ubfm_iterations_per_s"] = statistics.median(x[0] for x in ub)
        r["ubfm_us_per_child"] = statistics.median(x[1] for x in ub)
        r["ubfm_children_per_iteration"] = statistics.median(x[2] for x in ub)
        r["descent_iterations_per_s"] = statistics.median(x[0] for x in de)
        r["descent_us_per_child"] = statistics.median(x[1] for x in de)
        r["descent_children_per_iteration"] = statistics.median(x[2] for x in de)
        r["ubfm_rv_iterations_per_s"] = statistics.median(x[0] for x in ubr)
        r["ubfm_rv_us_per_child"] = statistics.median(x[1] for x in ubr)
        r["descent_rv_iterations_per_s"] = statistics.median(x[0] for x in der)
        r["descent_rv_us_per_child"] = statistics.median(x[1] for x in der)
        r["mcts_simulations_per_s"] = statistics.median(mc)
        if mo:
            r["openspiel_mcts_simulations_per_s"] = statistics.median(mo)
            r["mcts_ratio"] = r["mcts_simulations_per_s"] / r["openspiel_mcts_simulations_per_s"]
        rows.append(r)
        print(json.dumps(r), flush=True)
    meta = {"python": sys.version.split()[0], "platform": platform.platform(),
            "repeats": args.repeats, "date": time.strftime("%Y-%m-%d"),
            "budgets": {"ubfm": n_ubfm, "descent": n_descent, "mcts": n_mcts, "openspiel_mcts": n_os}}
    print()
    print("| game | evaluator | UBFM it/s | UBFM µs/child | Descent it/s | Descent µs/child |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        for tag, name in (("", "zero"), ("_rv", "random values")):
            print(f"| {r['game']} | {name} | {r['ubfm' + tag + '_iterations_per_s']:,.0f} | "
                  f"{r['ubfm' + tag + '_us_per_child']:.2f} | {r['descent' + tag + '_iterations_per_s']:,.0f} | "
                  f"{r['descent' + tag + '_us_per_child']:.2f} |")
    print()
    print("| game | MCTS sims/s | OpenSpiel MCTS sims/s | ratio |")
    print("|---|---|---|---|")
    for r in rows:
        os_cols = (f"{r['openspiel_mcts_simulations_per_s']:,.0f} | **{r['mcts_ratio']:.0f}x**"
                   if "mcts_ratio" in r else "— | —")
        print(f"| {r['game']} | {r['mcts_simulations_per_s']:,.0f} | {os_cols} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
