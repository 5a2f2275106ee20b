"""Game-engine benchmark: perft nodes/s and random games/s, side by side with OpenSpiel.

Both sides run the same algorithm in the same process, interleaved, repeated, and the medians are
reported with their ratio:

* perft: the leaf count of the depth-d tree with bulk counting at the last ply (the number of legal
  actions of each depth-(d-1) node). Ours is the compiled ``games._state.perft``; OpenSpiel's is the
  same recursion driven from Python (``state.child(a)``, ``state.legal_actions()``), which is how a
  Python user drives OpenSpiel.
* random games: uniformly random games to the end. Ours is ``games._state.random_games``;
  OpenSpiel's is ``apply_action(random.choice(legal_actions()))`` in a Python loop.

Usage:  python -m bench.bench_games [--repeats 5] [--quick] [--json OUT]
Needs the bench extra (``pip install -e '.[bench]'``) for OpenSpiel.
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time

import games  # noqa: E402
from games._state import perft, random_games  # noqa: E402

# (our spec, perft depth, random games, OpenSpiel game name and parameters or None, note)
CASES = [
    ("tic_tac_toe", 9, 20000, ("tic_tac_toe", {}), ""),
    ("reversi", 8, 400, ("othello", {}), ""),
    ("breakthrough", 4, 300, ("breakthrough", {"rows": 8, "columns": 8}), ""),
    ("breakthrough(rows=6,cols=6)", 4, 500, ("breakthrough", {"rows": 6, "columns": 6}), ""),
    ("outer_open_gomoku", 3, 100, ("gomoku", {"size": 15, "connect": 5}),
     "perft from the position after the first move a15 (action 0) on both sides: OpenSpiel's gomoku "
     "has no outer-open first-move rule, after the first move the rules coincide; random games "
     "are from the start on both sides"),
    ("reversi(size=6)", 6, 1000, None, "OpenSpiel's othello is 8x8 only"),
    ("connect6(size=19)", 2, 50, None, "not in OpenSpiel"),
]


def _pc_perft(board, depth: int) -> int:
    if depth == 1:
        return board.legal_moves.count()
    total = 0
    for m in list(board.legal_moves):
        board.push(m)
        total += _pc_perft(board, depth - 1)
        board.pop()
    return total


def _pd_perft(board, depth: int) -> int:
    ms = board.legal_moves
    if depth == 1:
        return len(ms)
    total = 0
    for m in ms:
        board.push(m)
        total += _pd_perft(board, depth - 1)
        board.pop()
    return total


def reference_cases():
    """The paper's games against their Python-driven reference libraries (perft only):
    (our spec, depth, reference name, make root, perft)."""
    cases = []
    try:
        import chess
        cases.append(("chess", 4, "python-chess", chess.Board, _pc_perft))
    except ImportError:
        pass
    try:
        import draughts
        cases.append(("international_draughts", 6, "py-draughts", draughts.StandardBoard, _pd_perft))
    except ImportError:
        pass
    try:
        import pyspiel
        for spec, name, params, depth in (("xiangqi", "xiangqi", {}, 4),
                                           ("lines_of_action", "lines_of_action", {}, 4),
                                           ("havannah(swap=false)", "havannah",
                                            {"board_size": 8, "swap": False}, 3)):
            game = pyspiel.load_game(name, params)
            cases.append((spec, depth, f"OpenSpiel {name}", game.new_initial_state, os_perft))
    except ImportError:
        pass
    return cases


def os_perft(state, depth: int) -> int:
    legal = state.legal_actions()
    if depth == 1:
        return len(legal)
    return sum(os_perft(state.child(a), depth - 1) for a in legal)


def os_random_games(game, n: int, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(n):
        s = game.new_initial_state()
        while not s.is_terminal():
            s.apply_action(rng.choice(s.legal_actions()))


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smaller depths and counts (smoke run)")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args()
    try:
        import pyspiel
        os_version = getattr(pyspiel, "__version__", None)
        if os_version is None:
            from importlib.metadata import version
            os_version = version("open_spiel")
    except ImportError:
        print("OpenSpiel is not installed: pip install -e '.[bench]'", file=sys.stderr)
        pyspiel, os_version = None, None

    rows = []
    for spec, depth, n_games, os_game, note in CASES:
        if args.quick:
            depth, n_games = max(1, depth - 2), max(10, n_games // 20)
        ours = games.new_state(spec)
        osg = pyspiel.load_game(*os_game) if (os_game and pyspiel) else None
        opening = [0] if spec.startswith("outer_open_gomoku") else []
        perft_ours = ours.copy()
        for a in opening:
            perft_ours.push(a)

        def os_root():
            st = osg.new_initial_state()
            for a in opening:
                st.apply_action(a)
            return st

        p_ours, p_os, g_ours, g_os = [], [], [], []
        nodes = os_nodes = None
        for rep in range(args.repeats):
            dt, nodes = timed(lambda: perft(perft_ours, depth))
            p_ours.append(nodes / dt)
            dt, _ = timed(lambda: random_games(ours, n_games, rep))
            g_ours.append(n_games / dt)
            if osg is not None:
                dt, os_nodes = timed(lambda: os_perft(os_root(), depth))
                p_os.append(os_nodes / dt)
                n_os = max(5, n_games // 20)
                dt, _ = timed(lambda: os_random_games(osg, n_os, rep))
                g_os.append(n_os / dt)
        row = {
            "game": spec, "depth": depth, "nodes": nodes, "perft_nodes_per_s": statistics.median(p_ours),
            "random_games_per_s": statistics.median(g_ours), "note": note,
        }
        if p_os:
            row.update({
                "openspiel_game": os_game[0], "openspiel_nodes": os_nodes,
                "openspiel_perft_nodes_per_s": statistics.median(p_os),
                "openspiel_random_games_per_s": statistics.median(g_os),
            "same_tree": nodes == os_nodes,
                "perft_ratio": statistics.median(p_ours) / statistics.median(p_os),
                "random_games_ratio": statistics.median(g_ours) / statistics.median(g_os),
            })
        rows.append(row)
        print(_fmt(row), flush=True)

    ref_rows = []
    for spec, depth, ref_name, make_root, ref_perft in reference_cases():
        if args.quick:
            depth = max(1, depth - 1)
        ours = games.new_state(spec)
        po, pr = [], []
        nodes = ref_nodes = None
        for rep in range(args.repeats):
            dt, nodes = timed(lambda: perft(ours, depth))
            po.append(nodes / dt)
            root = make_root()
            dt, ref_nodes = timed(lambda: ref_perft(root, depth))
            pr.append(ref_nodes / dt)
        row = {"game": spec, "depth": depth, "nodes": nodes, "reference": ref_name,
               "reference_nodes": ref_nodes, "perft_nodes_per_s": statistics.median(po),
               "reference_perft_nodes_per_s": statistics.median(pr),
               "perft_ratio": statistics.median(po) / statistics.median(pr), "same_tree": nodes == ref_nodes}
        ref_rows.append(row)
        print(f"{spec:<28} perft d{depth}={nodes}: {row['perft_nodes_per_s']:>14,.0f} n/s "
              f"({ref_name} {row['reference_perft_nodes_per_s']:,.0f}, x{row['perft_ratio']:.0f}"
              f"{'' if row['same_tree'] else ', DIFFERENT LEAF COUNT ' + str(ref_nodes)})", flush=True)

    meta = {"python": sys.version.split()[0], "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "open_spiel": os_version,
            "repeats": args.repeats, "date": time.strftime("%Y-%m-%d")}
    print("\n" + markdown(rows, meta))
    if ref_rows:
        print("\n| game | perft depth (leaves) | ours nodes/s | reference | reference nodes/s | ratio |")
        print("|---|---|---|---|---|---|")
        for r in ref_rows:
            print(f"| {r['game']} | {r['depth']} ({r['nodes']:,}) | {r['perft_nodes_per_s']:,.0f} | "
                  f"{r['reference']} | {r['reference_perft_nodes_per_s']:,.0f} | **{r['perft_ratio']:.0f}x** |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows, "reference_rows": ref_rows}, f, indent=2)
    return 0


def _fmt(r: dict) -> str:
    s = f"{r['game']:<28} perft d{r['depth']}={r['nodes']}: {r['perft_nodes_per_s']:>12,.0f} n/s"
    if "perft_ratio" in r:
        s += f" (OpenSpiel {r['openspiel_perft_nodes_per_s']:,.0f}, x{r['perft_ratio']:.0f})"
    s += f"; random games {r['random_games_per_s']:,.0f}/s"
    if "random_games_ratio" in r:
        s += f" (OpenSpiel {r['openspiel_random_games_per_s']:,.1f}, x{r['random_games_ratio']:.0f})"
    return s


def markdown(rows, meta) -> str:
    out = [f"Machine: {meta['platform']} ({meta['processor']}), Python {meta['python']}, "
           f"OpenSpiel {meta['open_spiel']}; medians of {meta['repeats']} interleaved runs; {meta['date']}.",
           "",
           "| game | perft depth (leaves) | ours nodes/s | OpenSpiel nodes/s | ratio | ours random games/s "
           "| OpenSpiel random games/s | ratio |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "perft_ratio" in r:
            os_cols = (f"{r['openspiel_perft_nodes_per_s']:,.0f} | **{r['perft_ratio']:.0f}x** | "
                       f"{r['random_games_per_s']:,.0f} | {r['openspiel_random_games_per_s']:,.1f} | "
                       f"**{r['random_games_ratio']:.0f}x**")
        else:
            os_cols = f"— | — | {r['random_games_per_s']:,.0f} | — | —"
        out.append(f"| {r['game']} | {r['depth']} ({r['nodes']:,}) | {r['perft_nodes_per_s']:,.0f} | {os_cols} |")
    notes = [f"- {r['game']}: {r['note']}" for r in rows if r["note"]]
    return "\n".join(out + ([""] + notes if notes else []))


if __name__ == "__main__":
    sys.exit(main())
