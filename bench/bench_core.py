"""The Descent core before and after it was written once (the one walk), in one run (no loss of speed).

Before the one walk the Descent search was written twice (``search_ext/bestfirst.pyx`` and
``training/selfplay.pyx``); since, both drive one core (``search_ext/descent_core``). This script
measures, on the same machine and in the same run, a checkout of the code before (its extensions
built in place) against this tree:

- self-play examples per CPU-second: ``SelfPlayPool`` with a cheap deterministic numpy evaluator
  (a fixed linear map and tanh) on reversi(size=6) and breakthrough(rows=6,cols=6);
- search nodes per CPU-second: ``BestFirstSearch`` (minimax, Minibal_+, Descent) with
  ``RandomValueEvaluator`` (the network's cost removed), a fixed number of iterations from a fixed
  set of positions; nodes = states valued by the evaluator;
- batched evaluation, games per CPU-second: ``descent.batched.run_batched`` (``BATCHED_GAMES``),
  the same games, network calls, states and cached states on both sides (when the before side has
  the batched games at all).

Each side runs in its own child process (its own ``PYTHONPATH`` and working directory), the sides
alternate (before, after, after, before, ...), ``--repeats`` times; the table gives medians and the
after/before ratios, and checks that both sides did the same work (same games, same trees).

    git worktree add ../core-before 5ba09fd
    (cd ../core-before && python setup.py build_ext --inplace -q)
    python -m bench.bench_core --before ../core-before [--repeats 5]

Results go to bench/results_core.json (written atomically).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POOL_GAMES = [("reversi(size=6)", 100, 6), ("breakthrough(rows=6,cols=6)", 40, 3)]   # game, iterations, games
SEARCH_GAMES = ["reversi(size=6)", "breakthrough(rows=6,cols=6)"]
SEARCH_CASES = [("minimax", {"rule": "minimax"}), ("minibal_plus", {"rule": "minibal_plus"}),
                ("descent", {"rule": "minimax", "descent": True})]
# iterations per searched position (about a second of CPU per workload)
SEARCH_ITERATIONS = {("reversi(size=6)", "minimax"): 40000, ("reversi(size=6)", "minibal_plus"): 40000,
                     ("reversi(size=6)", "descent"): 20000,
                     ("breakthrough(rows=6,cols=6)", "minimax"): 30000,
                     ("breakthrough(rows=6,cols=6)", "minibal_plus"): 30000,
                     ("breakthrough(rows=6,cols=6)", "descent"): 1500}
POSITIONS = 4            # the start and three positions along a fixed line
# batched evaluation (descent.batched): 16 games of Unbounded Minimax against Minibal_+, 100
# iterations a move each, the shipped network (ONNX Runtime), 8 in flight, 4 random opening plies
BATCHED_GAMES = [("reversi(size=6)", "reversi_size-6"), ("breakthrough(rows=6,cols=6)", "breakthrough_rows-6_cols-6")]


# ---- one side, in a child process ---------------------------------------------------------------------

def _pool_class():
    try:
        from search_ext.selfplay import SelfPlayPool
    except ImportError:                     # before the one walk
        from training.selfplay import SelfPlayPool
    return SelfPlayPool


def _evaluator(shape):
    import numpy as np
    w = (np.random.default_rng(5).normal(size=int(np.prod(shape))) / 8).astype(np.float32)

    def f(batch):
        return np.tanh(batch.reshape(len(batch), -1) @ w).astype(np.float32)
    return f


def worker() -> dict:
    import numpy as np
    from games.registry import load
    from search_ext.bestfirst import BestFirstSearch
    from search_ext.evaluators import RandomValueEvaluator
    SelfPlayPool = _pool_class()
    out = {}
    for spec, iterations, n_games in POOL_GAMES:
        info = load(spec)
        f = _evaluator(info.planes_shape)
        seeds = list(range(n_games, 0, -1))
        games = []
        pool = SelfPlayPool(info, f, iterations=iterations, games_in_flight=3)
        c0 = time.process_time()
        pool.run(lambda: (seeds.pop(), 0.3, -1.0, None) if seeds else None, games.append)
        cpu = time.process_time() - c0
        ex = sum(len(g["y"]) for g in games)
        work = hashlib.sha256(json.dumps(sorted([int(a) for a in g["moves"]] for g in games)).encode())
        out[f"selfplay {spec}"] = {"rate": ex / cpu, "unit": "examples per CPU-s", "cpu": cpu,
                                   "work": work.hexdigest()[:16] + f"/{ex}"}
    for spec in SEARCH_GAMES:
        info = load(spec)
        line = info.new_state()
        rng = np.random.default_rng(3)
        positions = []
        for _ in range(POSITIONS):
            positions.append(line.copy())
            for _ in range(3):
                if not line.is_game_over():
                    legal = line.legal_actions_list()
                    line.push(legal[int(rng.integers(len(legal)))])
        for name, kw in SEARCH_CASES:
            iterations = SEARCH_ITERATIONS[spec, name]
            nodes, cpu, sizes = 0, 0.0, []
            for s in positions:
                b = BestFirstSearch(info, evaluator=RandomValueEvaluator(7), **kw)
                c0 = time.process_time()
                b.search(s, iterations=iterations)
                cpu += time.process_time() - c0
                nodes += b.evaluations
                sizes.append(b.size)
            out[f"search {spec} {name}"] = {"rate": nodes / cpu, "unit": "nodes per CPU-s", "cpu": cpu,
                                            "work": f"{nodes}/{sizes}"}
    try:
        from descent.batched import run_batched
    except ImportError:                     # before the batched games
        return out
    for spec, slug in BATCHED_GAMES:
        net = str(ROOT / "checkpoints" / "shipped" / slug / "final.weights.h5")
        tasks = [{"game": spec, "agent_a": f"minimax:iterations=100,net={net}",
                  "agent_b": f"minibal_plus:iterations=100,net={net}", "index": i, "seed": 3,
                  "a_first": i % 2 == 0, "opening_plies": 4} for i in range(16)]
        stats: dict = {}
        c0 = time.process_time()
        recs = sorted((t["index"], r.moves) for t, r in run_batched(tasks, 8, stats=stats))
        cpu = time.process_time() - c0
        work = hashlib.sha256(json.dumps(recs).encode()).hexdigest()[:16]
        out[f"batched {spec}"] = {"rate": len(recs) / cpu, "unit": "games per CPU-s", "cpu": cpu,
                                  "work": f"{work}/{stats['calls']}/{stats['states']}/{stats['cached']}"}
    return out


# ---- the comparison ---------------------------------------------------------------------------------

def run_side(root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker"], cwd=root, env=env,
                       capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"the worker in {root} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="../core-before", help="checkout of the code before, built in place")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results_core.json"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        print(json.dumps(worker()))
        return 0
    before = Path(a.before).resolve()
    if not (before / "search_ext").is_dir():
        print(f"error: {before} is not a checkout of this project (see the docstring)", file=sys.stderr)
        return 2
    sides = {"before": before, "after": ROOT}
    runs = {"before": [], "after": []}
    for rep in range(a.repeats):
        order = ("before", "after") if rep % 2 == 0 else ("after", "before")
        for side in order:
            runs[side].append(run_side(sides[side]))
            print(f"repeat {rep + 1}/{a.repeats}: {side} done", file=sys.stderr, flush=True)
    rows = {}
    for key in runs["before"][0]:
        works = {side: {r[key]["work"] for r in runs[side]} for side in runs}
        med = {side: statistics.median(r[key]["rate"] for r in runs[side]) for side in runs}
        rows[key] = {"unit": runs["before"][0][key]["unit"], "before": med["before"], "after": med["after"],
                     "ratio": med["after"] / med["before"],
                     "before_all": [r[key]["rate"] for r in runs["before"]],
                     "after_all": [r[key]["rate"] for r in runs["after"]],
                     "same_work": works["before"] == works["after"] and len(works["before"]) == 1}
    result = {"before": str(before), "repeats": a.repeats, "machine": os.uname().machine,
              "cpus": os.cpu_count(), "python": sys.version.split()[0],
              "command": "python -m bench.bench_core --before ../core-before --repeats %d" % a.repeats,
              "rows": rows}
    from training.fileio import write_json
    write_json(a.out, result, indent=1)
    print("| workload | unit | before (median) | after (median) | after/before | same work |")
    print("|---|---|---|---|---|---|")
    for key, r in rows.items():
        print(f"| {key} | {r['unit']} | {r['before']:,.0f} | {r['after']:,.0f} | **{r['ratio']:.3f}** | "
              f"{'yes' if r['same_work'] else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
