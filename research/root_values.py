"""Root values near a draw: how finely do the trained networks value moves?

The Minibal report (``results/minibal-16core/README.md``) suspected that Minibal_+ stays far above
zero in reversi and breakthrough because "few moves are valued near a draw" by young networks:
Minibal_+ plays the move whose value is the smallest non-negative one, so it can only balance as
finely as the root's values are spread around 0. This script measures that directly.

For each game of ``results/training-runs/`` and each network age there (``untrained``, the 10m and
35m milestones of ``checkpoints.json``) it plays ``--games`` games of Unbounded Minimax against
itself (two agents, ``minimax:iterations=N,net=PATH``, N = 40 as in the ladder; an iteration budget,
never time). Each game starts from its own seeded random opening of ``--opening`` plies (distinct
openings, the same for every age of a game: a deterministic search would otherwise replay one game). After every
search of the agents the root's children are read with ``BestFirstSearch.analyse`` (values from the
mover's point of view, in [-1, 1]; a resolved child carries its exact outcome: 0 for a drawn end,
and in margin-scored games such as reversi a win's value shrinks with its margin).

Recorded per game and age: the number of root moves, the fraction of root moves with |value| below
0.1 and 0.25, the quantiles of the chosen move's value, the moves that had at least one child within
0.1 / 0.25 of a draw (and at least one in [0, 0.1): what Minibal_+'s rule aims at), the value
Minibal_+'s root rule (argmin of (value < 0, |value|)) would pick among these Minimax root values,
the spread of the root values (max - min per position: a flat network puts every move near 0
without telling them apart), the same near-draw counts restricted to positions where the mover is
ahead (chosen value at least 0.25: where a balancing player against a weaker opponent has to give
something back) and a histogram of all root values. Results go to ``--json`` (default
``research/results_root_values.json``, rewritten atomically after each game and age; a cell already
there with the same settings is not played again), figures to ``bench/figures/root_values_<game>.png``.

    python -m research.root_values                 # all games and ages (a few minutes, one core)
    python -m research.root_values --report        # table and figures from the JSON, no games
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
import zlib


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_JSON = os.path.join(HERE, "results_root_values.json")
RUNS = os.path.join(ROOT, "results", "training-runs")
# per game, its training runs (results/training-runs/<slug>) and the network ages measured in each;
# havannah's first run (Adam 1e-3) gave dead networks, its second (3e-4) has the 20m and 70m ones
GAMES = {"reversi(size=6)": [("reversi-6x6", ("untrained", "10m", "35m", "120m"))],
         "breakthrough(rows=6,cols=6)": [("breakthrough-6x6", ("untrained", "10m", "35m", "120m"))],
         "havannah(base=4)": [("havannah-base4", ("untrained", "10m", "35m")),
                              ("havannah-base4-lr3e-4", ("20m", "70m"))]}


def ages_of(spec: str) -> list[str]:
    return [age for _, ages in GAMES[spec] for age in ages]
NEAR = (0.1, 0.25)
BINS = 40                      # histogram of all root values over [-1, 1], 0.05 wide
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
AHEAD = 0.25                   # a position where the mover's chosen value is at least this


def checkpoints(slug: str) -> dict:
    """{age: checkpoint record} of one training run (``checkpoints.json``)."""
    with open(os.path.join(RUNS, slug, "checkpoints.json")) as f:
        rows = json.load(f)
    out = {}
    for r in rows:
        age = r.get("milestone") or r.get("label")
        out[age] = r
    return out


def openings(spec: str, count: int, plies: int) -> list[list[int]]:
    """``count`` distinct seeded random openings of ``plies`` plies (the same for every age; fewer
    when the game has fewer: a search without randomness would replay a repeated opening's game)."""
    import games
    out, seen = [], set()
    for k in range(count * 50):
        rng = random.Random(zlib.crc32(f"{spec}|{k}".encode()))
        state, moves = games.new_state(spec), []
        for _ in range(plies):
            if state.is_game_over():
                break
            moves.append(rng.choice(state.legal_actions_list()))
            state.push(moves[-1])
        if tuple(moves) not in seen:
            seen.add(tuple(moves))
            out.append(moves)
        if len(out) == count:
            break
    return out


def balancing_pick(values: list[float]) -> float:
    """The value Minibal_+'s rule, argmin (1[v < 0], |v|), picks among ``values``."""
    return min(values, key=lambda v: (v < 0, abs(v)))


def play_game(spec: str, agents, index: int, opening: list[int]) -> dict:
    """One self-play game from ``opening``; per searched position a compact record."""
    import games
    state = games.new_state(spec)
    for a in opening:
        state.push(a)
    for i, a in enumerate(agents):
        a.reset(index * 2 + i)
    moves = []
    while not state.is_game_over():
        agent = agents[state.to_move]
        action = agent.choose(state)
        rows = agent.search.analyse(state)
        chosen = [r for r in rows if r["chosen"]]
        if not chosen or chosen[0]["action"] != action:
            raise RuntimeError(f"{spec}: analyse does not name the move played at ply {state.ply}")
        values = [float(r["value"]) for r in rows]
        moves.append({"ply": state.ply, "n": len(values), "chosen": round(chosen[0]["value"], 4),
                      "resolved": sum(1 for r in rows if r["resolved"]),
                      "near": [sum(1 for v in values if abs(v) < t) for t in NEAR],
                      "near_nonneg": sum(1 for v in values if 0 <= v < NEAR[0]),
                      "pick": round(balancing_pick(values), 4),
                      "spread": max(values) - min(values),
                      "hist": histogram(values)})
        state.push(action)
    winner = state.outcome().winner
    return {"index": index, "plies": state.ply, "winner": winner, "moves": moves}


def histogram(values) -> list[int]:
    h = [0] * BINS
    for v in values:
        h[min(BINS - 1, max(0, int((v + 1.0) / 2.0 * BINS)))] += 1
    return h


def quantiles(xs: list[float]) -> list[float]:
    s = sorted(xs)
    if not s:
        return []
    out = []
    for q in QUANTILES:
        pos = q * (len(s) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(s) - 1)
        out.append(round(s[lo] + (s[hi] - s[lo]) * (pos - lo), 4))
    return out


def summarise(games_: list[dict]) -> dict:
    moves = [m for g in games_ for m in g["moves"]]
    roots = sum(m["n"] for m in moves)
    ahead = [m for m in moves if m["chosen"] >= AHEAD]
    hist = [0] * BINS
    for m in moves:
        hist = [a + b for a, b in zip(hist, m["hist"])]
    s = {"games": len(games_), "positions": len(moves), "root_moves": roots,
         "root_moves_per_position": round(roots / len(moves), 2) if moves else None,
         "resolved_fraction": round(sum(m["resolved"] for m in moves) / roots, 4) if roots else None,
         "chosen_quantiles": quantiles([m["chosen"] for m in moves]),
         "chosen_abs_median": quantiles([abs(m["chosen"]) for m in moves])[2] if moves else None,
         "pick_abs_quantiles": quantiles([abs(m["pick"]) for m in moves]),
         "spread_quantiles": quantiles([m["spread"] for m in moves if m["n"] > 1]),
         # where the mover is ahead (chosen value >= AHEAD): what a balancing player meets most
         "ahead_positions": len(ahead),
         "ahead_with_nonneg_near_0.1": round(sum(1 for m in ahead if m["near_nonneg"]) / len(ahead), 4)
         if ahead else None,
         "ahead_pick_abs_median": quantiles([abs(m["pick"]) for m in ahead])[2] if ahead else None,
         "positions_with_nonneg_near_0.1": round(sum(1 for m in moves if m["near_nonneg"]) / len(moves), 4)
         if moves else None,
         "hist_all": hist,
         "hist_chosen": histogram([m["chosen"] for m in moves]),
         "results": {"first": sum(1 for g in games_ if g["winner"] == 0),
                     "second": sum(1 for g in games_ if g["winner"] == 1),
                     "draw": sum(1 for g in games_ if g["winner"] is None)},
         "plies_median": quantiles([g["plies"] for g in games_])[2] if games_ else None}
    for i, t in enumerate(NEAR):
        s[f"root_near_{t}"] = round(sum(m["near"][i] for m in moves) / roots, 4) if roots else None
        s[f"positions_with_near_{t}"] = round(sum(1 for m in moves if m["near"][i]) / len(moves), 4) \
            if moves else None
    return s


def load(path: str) -> dict:
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {"cells": {}}


def save(path: str, data: dict) -> None:
    from training import fileio
    fileio.write_json(path, data)


def run(args) -> dict:
    from descent.networks import make_agent
    data = load(args.json)
    settings = {"games": args.games, "iterations": args.iterations, "opening": args.opening}
    todo = [(spec, slug, age) for spec, runs in GAMES.items() for slug, ages in runs for age in ages
            if not args.game or spec in args.game]
    for spec, slug, age in todo:
        key = f"{spec}|{age}"
        old = data["cells"].get(key)
        if old and old.get("settings") == settings:
            continue
        rec = checkpoints(slug).get(age)
        if rec is None:
            print(f"{spec} {age}: no such checkpoint in {slug}/checkpoints.json yet", flush=True)
            continue
        path = os.path.relpath(os.path.join(RUNS, slug, rec["path"]), ROOT)
        agent = f"minimax:iterations={args.iterations},net={path}"
        agents = [make_agent(agent, spec) for _ in range(2)]
        t0, cpu0 = time.perf_counter(), time.process_time()
        played = [play_game(spec, agents, i, o)
                  for i, o in enumerate(openings(spec, args.games, args.opening))]
        cell = {"game": spec, "age": age, "path": path, "agent": agent, "settings": settings,
                "cpu_hours": rec.get("cpu_hours"), "train_games": rec.get("games"),
                "examples": rec.get("examples"),
                "seconds": round(time.perf_counter() - t0, 1),
                "cpu_seconds": round(time.process_time() - cpu0, 1),
                "summary": summarise(played),
                "per_game": [{"index": g["index"], "plies": g["plies"], "winner": g["winner"]}
                             for g in played]}
        data["cells"][key] = cell
        data["machine"] = {"platform": platform.platform(), "python": platform.python_version(),
                           "cpus": os.cpu_count()}
        save(args.json, data)
        s = cell["summary"]
        print(f"{spec:28s} {age:9s} {s['positions']:4d} positions  root<0.1 {s['root_near_0.1']:.2f}  "
              f"chosen median {s['chosen_quantiles'][2]:+.3f}  {cell['seconds']} s", flush=True)
    return data


def _fmt(x, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def table(data: dict) -> str:
    lines = ["| game | network | CPU-h | positions | root moves / position | root moves |v|<0.1 | "
             "|v|<0.25 | positions with a child |v|<0.1 | with a child in [0, 0.1) | chosen value "
             "5/25/50/75/95% | Minibal_+ root pick |v| median | root spread median | resolved | "
             f"ahead (chosen >= {AHEAD}): positions, with a child in [0, 0.1), pick |v| median |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for spec in GAMES:
        for k, age in enumerate(ages_of(spec)):
            c = data["cells"].get(f"{spec}|{age}")
            if not c:
                continue
            s = c["summary"]
            q = " / ".join(f"{x:+.2f}" for x in s["chosen_quantiles"])
            lines.append(
                f"| {spec if k == 0 else ''} | {age} | {c['cpu_hours']:.3f} | {s['positions']} | "
                f"{s['root_moves_per_position']:.1f} | {s['root_near_0.1']:.2f} | {s['root_near_0.25']:.2f} | "
                f"{s['positions_with_near_0.1']:.2f} | {s['positions_with_nonneg_near_0.1']:.2f} | {q} | "
                f"{s['pick_abs_quantiles'][2]:.3f} | {s['spread_quantiles'][2]:.3f} | "
                f"{s['resolved_fraction']:.2f} | {s['ahead_positions']}, "
                f"{_fmt(s['ahead_with_nonneg_near_0.1'], '.2f')}, {_fmt(s['ahead_pick_abs_median'], '.3f')} |")
    return "\n".join(lines)


def figures(data: dict, folder: str) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(folder, exist_ok=True)
    edges = [-1 + 2 * i / BINS for i in range(BINS + 1)]
    centres = [(a + b) / 2 for a, b in zip(edges, edges[1:])]
    out = []
    for spec, runs in GAMES.items():
        slug = runs[0][0]
        ages = ages_of(spec)
        cells = [data["cells"].get(f"{spec}|{age}") for age in ages]
        if not any(cells):
            continue
        fig, axes = plt.subplots(1, len(ages), figsize=(3 * len(ages) + 1, 3.4), sharex=True, squeeze=False)
        axes = axes[0]
        for ax, age, c in zip(axes, ages, cells):
            ax.axvspan(-0.1, 0.1, color="0.9", zorder=0)
            if c:
                s = c["summary"]
                tot_a, tot_c = sum(s["hist_all"]) or 1, sum(s["hist_chosen"]) or 1
                ax.bar(centres, [h / tot_a for h in s["hist_all"]], width=2 / BINS, alpha=0.55,
                       label=f"all root moves ({s['root_moves']})")
                ax.bar(centres, [h / tot_c for h in s["hist_chosen"]], width=2 / BINS, alpha=0.55,
                       label=f"chosen move ({s['positions']})")
                ax.set_title(f"{age} ({c['cpu_hours']:.3f} CPU-h): |v|<0.1 {s['root_near_0.1']:.0%}",
                             fontsize=9)
            ax.set_xlabel("value, mover's view")
            ax.legend(fontsize=7)
        axes[0].set_ylabel("fraction")
        fig.suptitle(f"{spec}: root values of Unbounded Minimax (40 it.) in self-play; "
                     f"grey band |v| < 0.1", fontsize=10)
        fig.tight_layout()
        name = os.path.join(folder, f"root_values_{slug}.png")
        fig.savefig(name, dpi=100)
        plt.close(fig)
        out.append(name)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=16, help="games per game and network age")
    ap.add_argument("--iterations", type=int, default=40, help="Unbounded Minimax iterations a move")
    ap.add_argument("--opening", type=int, default=4, help="random plies before the agents play")
    ap.add_argument("--game", action="append", help="only this game spec (repeatable)")
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--figures", default=os.path.join(HERE, "figures"))
    ap.add_argument("--report", action="store_true", help="table and figures only, no games")
    args = ap.parse_args(argv)
    if min(args.games, args.iterations) < 1 or args.opening < 0:
        print("error: --games and --iterations must be at least 1, --opening at least 0", file=sys.stderr)
        return 2
    data = load(args.json) if args.report else run(args)
    print(table(data))
    for name in figures(data, args.figures):
        print("figure:", os.path.relpath(name, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
