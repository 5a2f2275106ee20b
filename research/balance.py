"""Balance benchmark: the adaptive opponent against simulated people, and calibration.

Part A, adaptive: for each simulated person (MCTS at 100, 1,000 and 10,000 iterations per move, and
seed 002's noisy player) and each of ``--seeds`` independent profiles, play ``--games`` games of the
game against ``Opponent(level="adaptive")`` starting from the default (no profile, no calibration),
seats alternating; the opponent's profile is updated after every game by the documented rule
(``descent.adaptive``). Reported: the opponent's score (win 1, draw 1/2, loss 0) over the second
half of the games, pooled over seeds, with its 95% radius; and a figure per person of the score
against games played (mean over seeds, moving window) and of the budget.

Part B, calibration: ``descent.calibrate`` of Minibal_+ (random-playout leaves) to gain 0 against
some of the same opponents, then ``--verify`` fresh games at the budget found (another seed): is the
target inside the 95% interval of the gain measured at the end of the calibration, and of the fresh
games' gain?

Every budget is in iterations: results do not depend on the machine's speed (only the time taken
does). Usage (about 1,800 games with the defaults; run it niced, the machine is shared):

    nice -n 10 python -m research.balance --json research/results_balance.json --figures bench/figures
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time


GAME = "breakthrough(rows=5,cols=5)"
PERSONS = {
    "mcts100": "mcts:iterations=100",
    "mcts1000": "mcts:iterations=1000",
    "mcts10000": "mcts:iterations=10000",
    "noisy": "noisy:noise=1.0,depth=2,eval=playout,playouts=4",
}
CAL_AGAINST = ["mcts100", "mcts1000", "noisy"]


def adaptive_run(game: str, person_spec: str, name: str, n_games: int, seed: int, root) -> list[dict]:
    """One simulated person, one fresh profile: per game the opponent's budget, rung and score."""
    from descent.api import Opponent
    from search_ext.agents import make_agent
    person = make_agent(person_spec, game)
    bot = Opponent(game, level="adaptive", player=f"{name}-{seed}", seed=seed, root=root)
    out = []
    for g in range(n_games):
        bot.new_game()
        seat = g % 2
        person.reset(seed * 100_003 + g)
        its, rung = bot.adaptive.iterations, bot.adaptive.entry["rung"]
        t0 = time.perf_counter()
        while not bot.is_over():
            if bot.state.to_move == seat:
                bot.push(person.choose(bot.state))
            else:
                bot.reply()
        w = bot.outcome().winner
        bot_score = 0.5 if w is None else 0.0 if w == seat else 1.0
        bot.end_game(seat)
        out.append({"game": g, "person_seat": seat, "iterations": its, "rung": rung,
                    "rung_label": bot.adaptive.rungs[rung]["label"], "bot_score": bot_score,
                    "plies": bot.state.ply, "seconds": round(time.perf_counter() - t0, 3)})
    return out


def settle(runs: list[list[dict]], start: int) -> dict:
    from descent.stats import mean_ci
    xs = [g["bot_score"] for run in runs for g in run[start:]]
    m, r = mean_ci(xs)
    return {"from_game": start + 1, "games": len(xs), "score": m, "radius": r,
            "within_10_points": abs(m - 0.5) <= 0.10}


def settled_at(runs: list[list[dict]], window: int, band: float = 0.10) -> int | None:
    """The first game from which the opponent's score, averaged over the profiles and the last
    ``window`` games, stays within 50 +- band*100 points to the end (None: it never does)."""
    n = min(len(r) for r in runs)
    mean = [sum(r[g]["bot_score"] for r in runs) / len(runs) for g in range(n)]
    smooth = [sum(mean[g - window + 1: g + 1]) / window for g in range(window - 1, n)]
    start = None
    for i, v in enumerate(smooth):
        if abs(v - 0.5) <= band:
            start = i + window if start is None else start
        else:
            start = None
    return start


def plot_person(name: str, runs: list[list[dict]], path: str, window: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = min(len(r) for r in runs)
    mean = [sum(r[g]["bot_score"] for r in runs) / len(runs) for g in range(n)]
    smooth = [sum(mean[max(0, g - window + 1): g + 1]) / len(mean[max(0, g - window + 1): g + 1])
              for g in range(n)]
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(6.4, 5.6), dpi=100, sharex=True)
    xs = list(range(1, n + 1))
    ax.axhspan(40, 60, color="green", alpha=0.12, label="50 ± 10 points")
    ax.plot(xs, [100 * v for v in smooth], lw=2, label=f"mean of {len(runs)} profiles, last {window} games")
    ax.axhline(50, color="black", lw=0.8)
    ax.set_ylim(0, 100)
    ax.set_ylabel("opponent's score (%)")
    ax.set_title(f"adaptive opponent vs simulated person {name} ({PERSONS.get(name, name)})", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    for i, r in enumerate(runs):
        bx.plot(xs, [g["iterations"] for g in r[:n]], lw=1, label=f"profile {i}")
        changes = [g["game"] + 1 for k, g in enumerate(r[:n]) if k and g["rung"] != r[k - 1]["rung"]]
        for c in changes:
            bx.axvline(c, color="grey", lw=0.5, ls=":")
    bx.set_yscale("log")
    bx.set_ylabel("iterations per move")
    bx.set_xlabel("games played (dotted: the opponent changed rung)")
    bx.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def calibration_run(game: str, name: str, spec: str, run_dir: str, verify: int, max_games: int) -> dict:
    from descent.calibrate import Settings, Unreachable, calibrate
    from descent.match import run_match
    from descent.stats import MatchSummary
    s = Settings(game, algorithm="minibal_plus:eval=playout,playouts=4", against=spec, target=0.0,
                 metric="gain", low=1, high=10000, max_games=max_games)
    t0 = time.perf_counter()
    try:
        res = calibrate(s, run_dir)
    except Unreachable as exc:
        return {"person": name, "refused": str(exc), "games_spent": exc.result["games"],
                "direction": exc.direction, "seconds": time.perf_counter() - t0}
    at = res["at_budget"]
    recs = list(run_match(game, res["spec"], spec, verify, seed=12345))
    v = MatchSummary.from_results([r.a_result for r in recs], [r.a_score for r in recs])
    return {"person": name, "opponent": spec, "budget": res["budget"], "interval": res["interval"],
            "games_spent": res["games"], "converged": res["converged"],
            "gain_at_end": at["mean"], "radius_at_end": at["radius"], "games_at_end": at["games"],
            "target_inside_at_end": abs(at["mean"]) <= at["radius"],
            "verify_games": v.games, "verify_gain": v.gain, "verify_radius": v.gain_radius,
            "target_inside_verify": abs(v.gain) <= v.gain_radius,
            "steps": len(res["steps"]), "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", default=GAME)
    ap.add_argument("--games", type=int, default=60, help="games per simulated person and profile")
    ap.add_argument("--seeds", type=int, default=5, help="independent profiles per person")
    ap.add_argument("--persons", default=",".join(PERSONS))
    ap.add_argument("--calibrate", default=",".join(CAL_AGAINST), help="persons to calibrate against ('' none)")
    ap.add_argument("--verify", type=int, default=40, help="fresh games at each calibrated budget")
    ap.add_argument("--cal-max-games", type=int, default=300)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--json", default=None)
    ap.add_argument("--figures", default=None, help="folder for the PNG figures")
    ap.add_argument("--summarise", default=None, metavar="JSON",
                    help="only print the summary of (and redraw the figures from) an earlier run's JSON")
    args = ap.parse_args()
    if args.summarise:
        with open(args.summarise) as f:
            old = json.load(f)
        for name, a in old["adaptive"].items():
            res = a["settled"]
            print(f"{name:<10} score over games {res['from_game']}..{old['games_per_profile']} "
                  f"({res['games']} games): {100 * res['score']:.1f}% ± {100 * res['radius']:.1f}; "
                  f"{args.window}-game mean over profiles within 50 ± 10 from game "
                  f"{settled_at(a['runs'], args.window)} on; {a['seconds']:.0f} s")
            if args.figures:
                plot_person(name, a["runs"], os.path.join(args.figures, f"balance_adaptive_{name}.png"),
                            args.window)
        return
    work = tempfile.mkdtemp(prefix="bench_balance_")
    os.environ["DESCENT_DATA_DIR"] = os.path.join(work, "data")     # fresh profiles: start from the default
    root = os.path.join(work, "runs")                               # no pools, no calibrations: the defaults
    os.makedirs(root)
    out = {"game": args.game, "games_per_profile": args.games, "seeds": args.seeds, "adaptive": {},
           "calibration": [], "machine": platform.platform(), "python": platform.python_version()}
    total_games = 0
    for name in [p for p in args.persons.split(",") if p]:
        t0 = time.perf_counter()
        runs = [adaptive_run(args.game, PERSONS[name], name, args.games, seed, root) for seed in range(args.seeds)]
        total_games += sum(len(r) for r in runs)
        res = settle(runs, args.games // 2)
        res["settled_at"] = settled_at(runs, args.window)
        out["adaptive"][name] = {"person": PERSONS[name], "settled": res, "runs": runs,
                                 "seconds": time.perf_counter() - t0}
        print(f"{name:<10} opponent's score over games {res['from_game']}..{args.games} "
              f"({res['games']} games, {args.seeds} profiles): {100 * res['score']:.1f}% ± "
              f"{100 * res['radius']:.1f}  -> {'within' if res['within_10_points'] else 'NOT within'} "
              f"50 ± 10 (window mean from game {res['settled_at']} on); final budgets {[r[-1]['iterations'] for r in runs]} "
              f"rungs {[r[-1]['rung_label'] for r in runs]}  [{time.perf_counter() - t0:.0f} s]", flush=True)
        if args.figures:
            os.makedirs(args.figures, exist_ok=True)
            plot_person(name, runs, os.path.join(args.figures, f"balance_adaptive_{name}.png"), args.window)
    for name in [p for p in args.calibrate.split(",") if p]:
        r = calibration_run(args.game, name, PERSONS[name], os.path.join(root, f"cal_{name}"), args.verify,
                            args.cal_max_games)
        out["calibration"].append(r)
        if "refused" in r:
            total_games += r["games_spent"]
            print(f"calibrate vs {name}: refused: {r['refused']}", flush=True)
            continue
        total_games += r["games_spent"] + r["verify_games"]
        print(f"calibrate vs {name:<9}: iterations={r['budget']} (interval {r['interval'][0]}..{r['interval'][1]}), "
              f"{r['games_spent']} games; gain at the end {100 * r['gain_at_end']:+.1f}% ± "
              f"{100 * r['radius_at_end']:.1f} ({r['games_at_end']} games) target inside: "
              f"{r['target_inside_at_end']}; {r['verify_games']} fresh games {100 * r['verify_gain']:+.1f}% ± "
              f"{100 * r['verify_radius']:.1f} target inside: {r['target_inside_verify']}  [{r['seconds']:.0f} s]",
              flush=True)
    out["total_games"] = total_games
    print(f"{total_games} games in all")
    if args.json:
        from training.fileio import write_json
        write_json(args.json, out, indent=None, sort_keys=False)


if __name__ == "__main__":
    main()
