"""Minibal_+ calibrated against an outside engine: balance is only as good as the
opponent it was measured against.

For each Fairy-Stockfish strength (``SKILL:NODES``: its ``Skill Level`` option and a node budget per
move, through ``uci:/usr/games/fairy-stockfish,...``) on breakthrough 6x6, with the shipped network:

1. the check: Unbounded Minimax (``minimax:iterations=--minimax-iterations``, same network) plays
   ``--check-games`` games against it, in seat pairs sharing a seeded 4-ply random opening; its
   binary gain with the 95% interval (pairs as units) says whether Minimax beats this strength;
2. ``descent calibrate`` of Minibal_+ (same network) against it to gain 0 (iterations 1..1000,
   ``--max-games``/``--near-games``/``--precision``; the games and result stay in
   ``results/engine-calibration/skillS_nodesN/calibrations/``), reporting the budget found, the
   fitted gain there with its 95% interval and the gain of the budget's own games;
3. with ``--verify-games N``: N fresh games of Minibal_+ at the budget found (openings of another
   seed), their gain with its 95% interval; ``--curve B1,B2,...``: the same at fixed budgets (the
   gain curve); ``--tag T`` with other ``--max-games``/``--near-games``: a second, stricter
   calibration from the same game log (``calibration_T``, ``verify_T``).

Every budget is in iterations (ours) and nodes (Fairy-Stockfish, one thread): the games do not
depend on the machine's speed. Games are played many at a time (``descent.batched``), with one
engine process per game in flight. Resumable: the JSON is rewritten after every step and a finished
step is skipped; calibrations replay their own logs. Usage, niced (the machine is shared):

    nice -n 10 python -m research.engine_calibration --strengths 20:300,20:1000,20:3000 --tag fit \\
        --max-games 2000 --near-games 60 --precision 0.06 --verify-games 400
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time


GAME = "breakthrough(rows=6,cols=6)"
NET = "checkpoints/shipped/breakthrough_rows-6_cols-6/final.weights.h5"
FSF = "/usr/games/fairy-stockfish"


def engine_spec(skill: int, nodes: int) -> str:
    return f"uci:{FSF},Skill Level={skill},nodes={nodes}"


def _games(me: str, skill: int, nodes: int, n_games: int, seed: int, opening_key: str) -> tuple[dict, int]:
    """``n_games`` games of ``me`` against the engine in seat pairs sharing a seeded 4-ply random
    opening, played many at a time (``descent.batched``: one network call per round of searches,
    one engine process per game in flight): ``({k: result}, aborted)``."""
    from descent.match import make_opening, run_tasks
    tasks = [{"game": GAME, "agent_a": me, "agent_b": engine_spec(skill, nodes), "index": k, "seed": seed,
              "a_first": k % 2 == 0, "opening": make_opening(GAME, 4, f"{opening_key}|{k // 2}")}
             for k in range(n_games)]
    by_k, aborted = {}, 0
    for task, rec in run_tasks(tasks):
        if rec.aborted:                   # never scored
            aborted += 1
            continue
        by_k[task["index"]] = rec.a_result
    return by_k, aborted


def _summary(by_k: dict, n_games: int) -> dict:
    from descent.stats import mean_ci
    results = [by_k[k] for k in sorted(by_k)]
    pairs = [(by_k[k] + by_k[k + 1]) / 2 for k in range(0, n_games, 2) if k in by_k and k + 1 in by_k]
    m, r = mean_ci(pairs)
    return {"games": len(results), "wins": results.count(1), "draws": results.count(0),
            "losses": results.count(-1), "gain_pairs_mean": m, "gain_radius": r}


def check(skill: int, nodes: int, iterations: int, n_games: int, seed: int) -> dict:
    """Unbounded Minimax against the engine, seat pairs sharing a seeded opening."""
    by_k, aborted = _games(f"minimax:iterations={iterations},net={NET}", skill, nodes, n_games, seed,
                           f"{seed}|engine-check")
    out = _summary(by_k, n_games)
    m, r = out["gain_pairs_mean"], out["gain_radius"]
    return {"minimax": f"minimax:iterations={iterations}", **out, "aborted": aborted,
            "gain": sum(by_k.values()) / max(1, len(by_k)), "beats": bool(m - r > 0)}


def verify(skill: int, nodes: int, budget: int, n_games: int, seed: int) -> dict:
    """Fresh games of Minibal_+ at a budget (the calibrated one, or a point of the curve; openings
    of another seed than the calibration's): its gain with the 95% interval over seat pairs."""
    by_k, aborted = _games(f"minibal_plus:iterations={budget},net={NET}", skill, nodes, n_games, seed + 1,
                           f"{seed}|engine-verify")
    out = _summary(by_k, n_games)
    return {"budget": budget, **out, "aborted": aborted, "within_10_points": abs(out["gain_pairs_mean"]) <= 0.10}


def calibrate(skill: int, nodes: int, max_games: int, near_games: int, precision: float, seed: int,
              root: str) -> dict:
    from descent.calibrate import Settings, Unreachable, calibrate as run
    s = Settings(GAME, algorithm=f"minibal_plus:net={NET}", against=engine_spec(skill, nodes), target=0.0,
                 metric="gain", unit="iterations", low=1, high=1000, seed=seed, max_games=max_games,
                 near_games=near_games, precision=precision)
    run_dir = os.path.join(root, f"skill{skill}_nodes{nodes}")
    try:
        res = run(s, run_dir, echo=print)
        status = "converged" if res.get("converged") else "not converged"
    except Unreachable as exc:
        res = exc.result or {}
        status = exc.direction
    at = res.get("at_budget") or {}
    return {"status": status, "budget": res.get("budget"), "interval": res.get("interval"),
            "games": res.get("games"), "at_budget": at, "posterior": res.get("posterior"),
            "design": res.get("design"), "steps": len(res.get("steps") or ()),
            "within_10_points": (abs(at["mean"]) <= 0.10) if at.get("mean") is not None else None,
            "interval_within_10_points": (at["mean"] - at["radius"] >= -0.10 and at["mean"] + at["radius"] <= 0.10)
            if at.get("mean") is not None and at.get("radius") is not None else None,
            "run_dir": run_dir}


def save(out: dict, path: str) -> None:
    from training.fileio import write_json
    write_json(path, out, indent=1, sort_keys=False)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strengths", default="20:1000,20:10000,20:100000", help="SKILL:NODES, comma separated")
    ap.add_argument("--minimax-iterations", type=int, default=300)
    ap.add_argument("--check-games", type=int, default=20)
    ap.add_argument("--max-games", type=int, default=80)
    ap.add_argument("--near-games", type=int, default=24, help="games the answer's own budget must have")
    ap.add_argument("--precision", type=float, default=0.1,
                    help="half-width of the fitted gain's 95%% interval at the answer where calibrate stops")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--root", default="results/engine-calibration")
    ap.add_argument("--json", default="research/results_engine_calibration.json")
    ap.add_argument("--skip-calibration", action="store_true", help="only the Minimax checks")
    ap.add_argument("--verify-games", type=int, default=0,
                    help="fresh games at each calibrated budget (another seed), 0: none")
    ap.add_argument("--curve", default="", help="budgets (iterations) at which to measure Minibal_+'s gain, "
                                               "comma separated (with --curve-games games each)")
    ap.add_argument("--curve-games", type=int, default=40)
    ap.add_argument("--tag", default="", help="a name for a second calibration with other --max-games/"
                                              "--near-games (stored as calibration_TAG, verify_TAG)")
    args = ap.parse_args(argv)
    out = {"game": GAME, "network": NET, "engine": FSF, "strengths": {}}
    if os.path.exists(args.json):
        with open(args.json) as f:
            out = json.load(f)
    out.update(machine=platform.platform(), python=platform.python_version())
    for item in args.strengths.split(","):
        skill, nodes = (int(x) for x in item.split(":"))
        key = f"Skill Level={skill},nodes={nodes}"
        entry = out["strengths"].setdefault(key, {})
        if "check" not in entry:
            t0 = time.perf_counter()
            entry["check"] = check(skill, nodes, args.minimax_iterations, args.check_games, args.seed)
            entry["check"]["seconds"] = round(time.perf_counter() - t0, 1)
            save(out, args.json)
        c = entry["check"]
        print(f"{key}: minimax {c['wins']}-{c['draws']}-{c['losses']}, gain {100 * c['gain_pairs_mean']:+.1f} "
              f"± {100 * c['gain_radius']:.1f} ({'beats' if c['beats'] else 'does not beat'})", flush=True)
        for b in [int(x) for x in args.curve.split(",") if x]:
            curve = entry.setdefault("curve", {})
            if curve.get(str(b), {}).get("games_asked") != args.curve_games:
                t0 = time.perf_counter()
                curve[str(b)] = verify(skill, nodes, b, args.curve_games, args.seed)
                curve[str(b)].update(games_asked=args.curve_games, seconds=round(time.perf_counter() - t0, 1))
                save(out, args.json)
            v = curve[str(b)]
            print(f"{key}: Minibal_+ at {b} iterations: {v['wins']}-{v['draws']}-{v['losses']}, "
                  f"gain {100 * v['gain_pairs_mean']:+.1f} ± {100 * v['gain_radius']:.1f}", flush=True)
        if args.skip_calibration:
            continue
        ck, vk = ("calibration", "verify") if not args.tag else (f"calibration_{args.tag}", f"verify_{args.tag}")
        if ck not in entry:
            t0 = time.perf_counter()
            entry[ck] = calibrate(skill, nodes, args.max_games, args.near_games, args.precision, args.seed,
                                  args.root)
            entry[ck].update(max_games=args.max_games, near_games=args.near_games, precision=args.precision,
                             seconds=round(time.perf_counter() - t0, 1))
            save(out, args.json)
        cal = entry[ck]
        at = cal["at_budget"]
        fitted = (f"fitted {100 * at['fitted']:+.1f} [{100 * at['fitted_low']:+.1f}, {100 * at['fitted_high']:+.1f}], "
                  if at.get("fitted") is not None else "")
        print(f"{key}: Minibal_+ {cal['status']}, budget {cal['budget']} ({cal['games']} games), {fitted}gain "
              f"{100 * (at.get('mean') or float('nan')):+.1f} ± {100 * (at.get('radius') or float('nan')):.1f} "
              f"over {at.get('games')} games there", flush=True)
        if args.verify_games and cal.get("budget") and (
                entry.get(vk, {}).get("games_asked") != args.verify_games or entry[vk]["budget"] != cal["budget"]):
            t0 = time.perf_counter()
            entry[vk] = verify(skill, nodes, int(cal["budget"]), args.verify_games, args.seed)
            entry[vk].update(games_asked=args.verify_games, seconds=round(time.perf_counter() - t0, 1))
            save(out, args.json)
        if vk in entry:
            v = entry[vk]
            print(f"{key}: fresh games at {v['budget']} iterations: {v['wins']}-{v['draws']}-{v['losses']}, "
                  f"gain {100 * v['gain_pairs_mean']:+.1f} ± {100 * v['gain_radius']:.1f}", flush=True)
    save(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
