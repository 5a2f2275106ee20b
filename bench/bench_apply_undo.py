"""Move generation and apply/undo speed of every game engine, two builds side by side.

Compares two checkouts of the project whose extensions are built in place (for example the code
before and after a change to the game base class): for each repeat, a fresh worker process per
checkout (the order alternates between repeats) times, for every game,

* perft: leaves of the depth-d tree with bulk counting at the last ply (``games._state.perft``):
  move generation at every node, apply/undo at every inner node;
* random games: uniformly random games to the end, each taken back move by move
  (``games._state.random_games``): move generation, apply and undo at every ply;
* full tree (tic-tac-toe only): every complete game (``games._state.count_games``): apply/undo at
  every node of the whole game tree.

Times are process CPU time (``time.process_time``), so a loaded machine slows the wall clock more
than the figures. The report gives, per game and measure, the median rate of each checkout and
the ratio of the medians (second checkout / first). Both checkouts must count the same trees
(checked: the leaf counts and game lengths must agree).

Usage:  python -m bench.bench_apply_undo BEFORE_DIR AFTER_DIR [--repeats 5] [--json OUT]
The JSON is rewritten (atomically) after every repeat, and a rerun with the same checkouts and
cases continues from the repeats it holds.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# (game spec, perft depth, perft runs, random games): each timing takes about 0.2 s of CPU.
CASES = [
    ("tic_tac_toe", 9, 20, 400000),
    ("tapatan", 9, 1, 100000),
    ("tsoro_yematatu", 12, 10, 100000),
    ("five_field_kono", 7, 2, 3000),
    ("alquerque", 12, 3, 10000),
    ("breakthrough", 5, 8, 40000),
    ("reversi", 9, 4, 30000),
    ("reversi(size=6)", 9, 6, 50000),
    ("outer_open_gomoku", 3, 100, 5000),
    ("connect6(size=19)", 3, 4, 2000),
    ("havannah", 3, 100, 5000),
    ("lines_of_action", 4, 10, 2000),
    ("chess", 5, 3, 2000),
    ("xiangqi", 4, 3, 400),
    ("international_draughts", 7, 8, 10000),
]
FULL_TREE = ["tic_tac_toe"]
FULL_TREE_RUNS = 5


def worker() -> None:
    """Time every case once in this process (the checkout is the one on PYTHONPATH)."""
    import games
    from games._state import count_games, perft, random_games
    out = {"games_module": games.__file__, "rows": {}}
    for spec, depth, runs, n_games in CASES:
        s = games.new_state(spec)
        perft(s, max(1, depth - 2))                 # warm up (tables, caches)
        nodes = 0
        t0 = time.process_time()
        for _ in range(runs):
            nodes += perft(s, depth)
        t_perft = time.process_time() - t0
        t0 = time.process_time()
        _, plies = random_games(s, n_games, 12345)
        t_games = time.process_time() - t0
        row = {"perft_leaves": nodes, "perft_leaves_per_s": nodes / t_perft,
               "random_plies": int(plies.sum()), "random_plies_per_s": int(plies.sum()) / t_games}
        if spec in FULL_TREE:
            t0 = time.process_time()
            n = sum(count_games(s) for _ in range(FULL_TREE_RUNS))
            row["full_tree_games"] = n
            row["full_tree_games_per_s"] = n / (time.process_time() - t0)
        out["rows"][spec] = row
    print(json.dumps(out))


def run_worker(tree: str) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker"], env=env,
                          capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = os.path.realpath(os.path.join(tree, "games"))
    if os.path.dirname(os.path.realpath(out["games_module"])) != expected:
        raise SystemExit(f"bench_apply_undo: {tree}: imported {out['games_module']}, not its own games")
    return out["rows"]


def commit_of(tree: str) -> str:
    """The checkout's git commit (with '+changes' when its work tree differs), or '' outside git."""
    try:
        head = subprocess.run(["git", "-C", tree, "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", tree, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("+changes" if dirty else "")


def summarize(samples: dict, trees: list[str]) -> list[dict]:
    rows = []
    first, second = trees
    for spec, _, _, _ in CASES:
        for rate, count in (("perft_leaves_per_s", "perft_leaves"), ("random_plies_per_s", "random_plies"),
                            ("full_tree_games_per_s", "full_tree_games")):
            runs = {t: [r[spec] for r in samples[t]] for t in trees}
            if rate not in runs[first][0]:
                continue
            counts = {r[count] for t in trees for r in runs[t]}
            if len(counts) != 1:
                raise SystemExit(f"bench_apply_undo: {spec}: the checkouts count different trees: {counts}")
            med = {t: statistics.median(r[rate] for r in runs[t]) for t in trees}
            rows.append({"game": spec, "measure": rate, "count": counts.pop(),
                         "before": med[first], "after": med[second], "ratio": med[second] / med[first],
                         "repeats": len(runs[first])})
    return rows


def main() -> int:
    if "--worker" in sys.argv:
        worker()
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before", help="checkout with its extensions built in place (the baseline)")
    ap.add_argument("after", help="checkout with its extensions built in place (the candidate)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None, help="write the samples and medians to this JSON file")
    args = ap.parse_args()
    paths = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    trees = ["before", "after"]
    # the JSON names the checkouts by their commits, not their paths (which are this machine's)
    config = {"commits": {t: commit_of(paths[t]) for t in trees}, "cases": CASES,
              "full_tree": FULL_TREE, "full_tree_runs": FULL_TREE_RUNS}
    samples = {t: [] for t in trees}
    if args.json and os.path.exists(args.json):
        with open(args.json) as f:
            old = json.load(f)
        if old.get("config") == json.loads(json.dumps(config)):
            samples = old["samples"]
            print(f"continuing from {len(samples[trees[0]])} repeats in {args.json}", flush=True)
    while len(samples[trees[0]]) < args.repeats:
        rep = len(samples[trees[0]])
        order = trees if rep % 2 == 0 else trees[::-1]
        got = {t: run_worker(paths[t]) for t in order}
        for t in trees:
            samples[t].append(got[t])
        print(f"repeat {rep + 1}/{args.repeats} done", flush=True)
        if args.json:
            from training.fileio import write_json
            write_json(args.json, {"config": config, "samples": samples}, indent=None, sort_keys=False)
    rows = summarize(samples, trees)
    for r in rows:
        print(f"{r['game']:<24} {r['measure']:<22} {r['before']:>14,.0f} {r['after']:>14,.0f}  "
              f"x{r['ratio']:.3f}")
    ratios = [r["ratio"] for r in rows]
    print(f"median ratio x{statistics.median(ratios):.3f} (min x{min(ratios):.3f}, max x{max(ratios):.3f})")
    if args.json:
        from training.fileio import write_json
        write_json(args.json, {"config": config, "samples": samples, "rows": rows,
                               "median_ratio": statistics.median(ratios),
                               "cpu": os.cpu_count(), "python": sys.version.split()[0]},
                   indent=1, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
