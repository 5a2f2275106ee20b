"""Minibal_+ against the rungs of the outside ladder that the network beats.

The other half of the balance claim: against opponents *weaker* than the network, Minibal_+ should
bring the game towards a draw on average (binary gain 0) where Unbounded Minimax wins. The
opponents are the rungs of ``research/ladder.py`` (OpenSpiel's C++ MCTS bot at fixed simulation
counts for breakthrough 6x6 and havannah base 4, this project's MCTS for reversi 6x6), played
through its machinery (``play_game``: both engines in lockstep, checked at every ply).

For each checkpoint, the rungs are those it beats under Unbounded Minimax in ``--ladder`` (default
``research/results_ladder.json``): score > 50% over its recorded games against the rung there (the
ladder player is matched by the checkpoint's path, else by its label); ``--rungs`` overrides. Each
checkpoint then plays every such rung with every algorithm of ``--algorithms`` (``net=PATH`` added),
``--games`` games per cell, seats alternating, seeds from ``research.ladder.seed_of``:

- ``minimax:iterations=40``: Unbounded Minimax, the reference (the ladder's own agent, replayed here
  with this file's seeds);
- ``minibal_n:iterations=40``, ``minibal_plus:iterations=10/40/160``: fixed budgets;
- ``calibrated``: ``minibal_plus`` at the budget of the shipped calibration of the game
  (``checkpoints/shipped/<game>/calibration.json``, calibrated to gain 0 against the shipped early
  network), played only by the checkpoint whose weights are the shipped final network (same sha256);
  ``--calibrated-budget N`` plays it at N iterations with every checkpoint instead.

Reported per (game, checkpoint, algorithm, rung): games, wins/draws/losses and the binary gain of
the checkpoint's side in % (win +1, draw 0, loss -1, mean x 100) with its 95% interval
(``descent.stats.cluster_interval``, every game its own unit), and the mean plies; a markdown table,
and the figure ``research/figures/balance_ladder.png`` (per game, one panel per checkpoint: gain
against the rung's simulations, log x, one line per algorithm).

Results go to ``--json`` (default ``research/results_balance_ladder.json``, ``research.ladder``'s format:
players and "A|B" matches per game, A the checkpoint's algorithm, scores A's); games already there are
not played again (a killed run, or a new checkpoint, reruns with the same command), written
atomically. Usage:

    python -m research.balance_ladder --game 'breakthrough(rows=6,cols=6)' --game 'reversi(size=6)'
    python -m research.balance_ladder --report        # table and figure, no games

``--checkpoints`` (one ``--game`` only; default ``results/training-runs/<game>/checkpoints.json``,
its milestones) and ``--net LABEL=PATH`` name the checkpoints; ``--only`` keeps some labels.

**A pool of one** (the Minibal experiment's Table 2 with one network per pool): ``--low LABEL=PATH``
replaces the rungs by one opponent, the low-level network under Unbounded Minimax (``--low-agent``,
default ``minimax:iterations=20``, the experiment files' pool opponent): the high network (a final
checkpoint) plays it with every algorithm at every budget, e.g. the same member's early checkpoint
at 20/70 of its training. Both players are deterministic, so every game starts with
``--opening-plies`` (4) seeded random plies, the same for both seats of a pairing and for every
algorithm (``research.ladder.opening_seed``), as the experiment's openings. Use its own ``--json``; the figure then shows the gain against the
algorithm's budget, one line per algorithm::

    python -m research.balance_ladder --game 'reversi(size=6)' --only m0-35m \
        --low m0-10m=results/training-runs/reversi-6x6/member_00/milestone_10m.weights.h5 \
        --algorithms "$(python -m research.balance_ladder --pool-algorithms)" \
        --json research/results_pool_of_one.json --figure research/figures/pool_of_one.png
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time


from research.ladder import (OPENSPIEL, ROOT, SLUGS, load_results, net_player, rung_player, rung_token, run_tasks, save_results, schedule)

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_JSON = os.path.join(HERE, "results_balance_ladder.json")
DEFAULT_LADDER = os.path.join(HERE, "results_ladder.json")
REFERENCE = "minimax:iterations=40"
DEFAULT_ALGORITHMS = [REFERENCE, "minibal_n:iterations=40", "minibal_plus:iterations=10",
                      "minibal_plus:iterations=40", "minibal_plus:iterations=160", "calibrated"]
LOW_AGENT = "minimax:iterations=20"
# the experiment files' algorithms and budgets (configs/experiments/minibal-16core.toml): the
# pool-of-one runs
POOL_ALGORITHMS = [f"{a}{',' if ':' in a else ':'}iterations={n}"
                   for a in ("minimax", "minibal_n", "minibal_plus", "alphadda",
                             "gaussian:base=minimax,level=custom,mu=0.5,sigma=0.3")
                   for n in (5, 10, 20, 40)]


class BenchError(RuntimeError):
    """Bad input: one line, exit status 2."""


# ---- rungs ----------------------------------------------------------------------------------------

def _norm(path: str) -> str:
    return os.path.normpath(os.path.relpath(os.path.join(ROOT, path), ROOT))


def beaten_rungs(ladder_entry: dict, label: str, path: str) -> dict:
    """{rung label: {"sims", "score", "games"}} for every rung that the checkpoint (matched by path,
    else by label) beats in one game's entry of results_ladder.json: mean score > 1/2."""
    players = ladder_entry.get("players", {})
    by_path = [l for l, p in players.items() if p.get("kind") == "net" and p.get("path")
               and _norm(p["path"]) == _norm(path)]
    names = by_path or ([label] if label in players else [])
    out = {}
    for key, recs in ladder_entry.get("matches", {}).items():
        a, b = key.split("|")
        if a not in names or not recs or players.get(b, {}).get("kind") != "rung":
            continue
        score = sum(r["score"] for r in recs) / len(recs)
        if score > 0.5:
            out[b] = {"sims": players[b]["sims"], "score": round(score, 4), "games": len(recs)}
    return dict(sorted(out.items(), key=lambda kv: (kv[1]["sims"], kv[0].endswith("-ours"))))


# ---- statistics -----------------------------------------------------------------------------------

def cell_stats(recs: list[dict]) -> dict:
    """Binary gain of player A (the checkpoint's algorithm), x100, with its 95% interval (every game
    its own unit), wins/draws/losses and mean plies."""
    from descent.stats import cluster_interval
    gains = [2.0 * r["score"] - 1.0 for r in recs]
    ci = cluster_interval(gains, lo=-1.0, hi=1.0)
    return {"games": len(recs), "wins": sum(r["score"] == 1 for r in recs),
            "draws": sum(r["score"] == 0.5 for r in recs), "losses": sum(r["score"] == 0 for r in recs),
            "gain": round(100 * ci.mean, 2), "low": round(100 * ci.low, 2), "high": round(100 * ci.high, 2),
            "plies": round(sum(r["plies"] for r in recs) / len(recs), 1) if recs else None}


def rows(data: dict) -> list[dict]:
    out = []
    for spec, entry in data["games"].items():
        for key, recs in entry["matches"].items():
            a, b = key.split("|")
            pa, pb = entry["players"].get(a, {}), entry["players"].get(b, {})
            if not recs or "checkpoint" not in pa:
                continue
            ck = entry.get("checkpoints", {}).get(pa["checkpoint"], {})
            agent = pa["agent"].split(",net=")[0]
            family, _, opts = agent.partition(":")
            budget = dict(kv.partition("=")[::2] for kv in opts.split(",") if kv).get("iterations")
            out.append(dict(cell_stats(recs), game=spec, checkpoint=pa["checkpoint"], algorithm=pa["algorithm"],
                            agent=agent, family=family, budget=None if budget is None else int(budget),
                            rung=b, sims=pb.get("sims"),
                            ladder_score=ck.get("beaten", {}).get(b, {}).get("score")))
    order = {a: i for i, a in enumerate(DEFAULT_ALGORITHMS)}
    pool = {a: i for i, a in enumerate(POOL_ALGORITHMS)}
    out.sort(key=lambda r: (r["game"], r["checkpoint"], r["sims"] or 0,
                            (pool if r["sims"] is None else order).get(r["algorithm"], 99), r["algorithm"]))
    return out


def report(data: dict, figure: str | None) -> str:
    out = ["| game | checkpoint | rung (ladder score) | algorithm | games | W/D/L | gain % [95%] | plies |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows(data):
        ls = "" if r["ladder_score"] is None else f" ({100 * r['ladder_score']:.0f}%)"
        alg = r["algorithm"] if r["algorithm"] == r["agent"] else f"{r['algorithm']} ({r['agent']})"
        out.append(f"| {r['game']} | {r['checkpoint']} | {r['rung']}{ls} | {alg} | {r['games']} | "
                   f"{r['wins']}/{r['draws']}/{r['losses']} | {r['gain']:+.0f} [{r['low']:+.0f}, {r['high']:+.0f}] | "
                   f"{r['plies']} |")
    if figure:
        _figure(data, figure)
    return "\n".join(out)


def _figure(data: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rs = rows(data)
    specs = [s for s in data["games"] if any(r["game"] == s for r in rs)]
    if not specs:
        return
    cks = {s: sorted({r["checkpoint"] for r in rs if r["game"] == s}) for s in specs}
    ncol = max(len(v) for v in cks.values())
    fig, axes = plt.subplots(len(specs), ncol, figsize=(5 * ncol, 3.8 * len(specs)), squeeze=False)
    algs = [a for a in DEFAULT_ALGORITHMS if any(r["algorithm"] == a for r in rs)]
    algs += sorted({r["algorithm"] for r in rs} - set(algs))
    for i, spec in enumerate(specs):
        for j in range(ncol):
            ax = axes[i][j]
            if j >= len(cks[spec]):
                ax.axis("off")
                continue
            ck = cks[spec][j]
            mine = [r for r in rs if r["game"] == spec and r["checkpoint"] == ck]
            pool = all(r["sims"] is None for r in mine)       # a pool of one: gain against the budget
            if pool:
                xkey = "budget"
                series = [(f"{fam} vs {opp}", "-", [r for r in mine if r["family"] == fam
                                                    and r["rung"] == opp and r["budget"]])
                          for fam in sorted({r["family"] for r in mine})
                          for opp in sorted({r["rung"] for r in mine})]
            else:
                xkey = "sims"
                series = [(None, "--" if alg == REFERENCE else "-", [r for r in mine if r["algorithm"] == alg])
                          for alg in algs]
            for k, (label, ls, pts) in enumerate(series):
                if not pts:
                    continue
                pts = sorted(pts, key=lambda r: r[xkey])
                if label is None:
                    label = (pts[0]["agent"] if pts[0]["algorithm"] != "calibrated"
                             else f"calibrated ({pts[0]['agent']})")
                x = [r[xkey] * (1.0 + 0.04 * (k - len(series) / 2)) for r in pts]   # a small dodge
                err = [[r["gain"] - r["low"] for r in pts], [r["high"] - r["gain"] for r in pts]]
                ax.errorbar(x, [r["gain"] for r in pts], yerr=err, marker="o", capsize=3,
                            color=f"C{k % 10}", label=label, ls=ls)
            ax.axhline(0, color="grey", lw=0.8, ls=":")
            ax.set_xscale("log")
            ax.set_ylim(-105, 105)
            ax.legend(fontsize=7)
            if pool:
                budgets = sorted({r["budget"] for r in mine if r["budget"]})
                ax.set_xticks(budgets, [str(b) for b in budgets])
                ax.minorticks_off()
                ax.set_title(f"{spec} - high {ck}", fontsize=9)
                ax.set_xlabel("the high network's search budget (iterations)")
                ax.set_ylabel("binary gain % of the high network [95%]")
            else:
                ax.set_title(f"{spec} - {ck}", fontsize=9)
                ax.set_xlabel("rung: MCTS simulations")
                ax.set_ylabel("binary gain % of the checkpoint [95%]")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- players --------------------------------------------------------------------------------------

def checkpoints_of(spec: str, args) -> list[dict]:
    """[{label, path (relative to the repo), meta}] named by --checkpoints / --net, or the game's
    default checkpoints.json (its milestones)."""
    out = []
    listing = args.checkpoints
    if listing is None and not args.net:
        listing = os.path.join(ROOT, "results", "training-runs", SLUGS[spec], "checkpoints.json")
    only = set(filter(None, args.only.split(",")))
    if listing:
        try:
            with open(listing) as f:
                listed = json.load(f)
        except (OSError, ValueError) as e:
            raise BenchError(f"--checkpoints {listing}: {e}")
        base = os.path.dirname(os.path.abspath(listing))
        for c in listed:
            if (only and c["label"] not in only) or (not only and c.get("milestone") is None):
                continue
            path = c["path"] if os.path.isabs(c["path"]) else os.path.join(base, c["path"])
            out.append({"label": c["label"], "path": os.path.relpath(path, ROOT), "meta": c})
    for item in args.net:
        label, _, path = item.partition("=")
        if not label or not path:
            raise BenchError(f"--net {item!r}: expected LABEL=PATH")
        out.append({"label": label, "path": os.path.relpath(os.path.join(ROOT, path), ROOT), "meta": None})
    for c in out:
        if not os.path.isfile(os.path.join(ROOT, c["path"])):
            raise BenchError(f"checkpoint {c['label']}: no file {c['path']}")
    return out


def calibrated_budget(spec: str, path: str, override: int | None):
    """The iterations of ``calibrated`` for this checkpoint, or None when it does not play it."""
    if override is not None:
        return override
    from descent import shipped
    cal = shipped.calibration(spec)
    if cal is None or cal.get("unit") != "iterations":
        return None
    if shipped.sha256(os.path.join(ROOT, path)) != cal.get("networks", {}).get("final"):
        return None
    return int(cal["budget"])


def players_for(spec: str, ck: dict, algorithms: list[str], cal_override) -> list[dict]:
    out = []
    for alg in algorithms:
        agent = alg
        if alg == "calibrated":
            budget = calibrated_budget(spec, ck["path"], cal_override)
            if budget is None:
                continue
            agent = f"minibal_plus:iterations={budget}"
        p = net_player(f"{ck['label']}/{alg}", ck["path"], agent, ck["meta"])
        p.update(checkpoint=ck["label"], algorithm=alg)
        out.append(p)
    return out


def low_player(spec: str, item: str, agent: str) -> dict:
    """The low-level network of a pool of one: ``LABEL=PATH`` under ``agent``."""
    label, _, path = item.partition("=")
    if not label or not path:
        raise BenchError(f"--low {item!r}: expected LABEL=PATH")
    rel = os.path.relpath(os.path.join(ROOT, path), ROOT)
    if not os.path.isfile(os.path.join(ROOT, rel)):
        raise BenchError(f"--low {label}: no file {rel}")
    p = net_player(f"low:{label}", rel, agent)
    p["kind"] = "low"
    return p


# ---- main -----------------------------------------------------------------------------------------

def plan(args, data: dict, ladder: dict) -> list[tuple[str, list]]:
    """Register the players and checkpoints in ``data``; the (game, tasks) still to play."""
    algorithms = [a.strip() for a in args.algorithms.split(";") if a.strip()]
    out = []
    for spec in args.game:
        if spec not in OPENSPIEL:
            raise BenchError(f"--game {spec!r}: the ladder has {', '.join(sorted(OPENSPIEL))}")
        entry = data["games"].setdefault(spec, {"players": {}, "matches": {}})
        entry.setdefault("checkpoints", {})
        lad = ladder.get("games", {}).get(spec, {})
        if "ladder" in lad:
            entry["ladder"] = lad["ladder"]
        pairs = []
        given = [rung_player(spec, s) for s in args.rungs.split(",") if s]
        for ck in checkpoints_of(spec, args):
            if args.low:
                beaten = {}
            elif given:
                beaten = {p["label"]: {"sims": p["sims"]} for p in given}
            else:
                beaten = beaten_rungs(lad, ck["label"], ck["path"])
            entry["checkpoints"][ck["label"]] = {"path": ck["path"], "beaten": beaten,
                                                 "ladder_agent": lad.get("agent")}
            said = ", ".join(f"{r} {100 * v['score']:.0f}%" if "score" in v else r for r in beaten for v in [beaten[r]])
            print(f"{spec} {ck['label']}: rungs {said or 'none beaten'}", flush=True)
            rungs = [rung_player(spec, rung_token(r, v["sims"])) for r, v in beaten.items()]
            if args.low:
                rungs = [low_player(spec, args.low, args.low_agent)]
                entry["checkpoints"][ck["label"]]["low"] = rungs[0]["path"]
                print(f"{spec} {ck['label']}: against the low network {rungs[0]['label']}", flush=True)
            for p in players_for(spec, ck, algorithms, args.calibrated_budget):
                old = entry["players"].get(p["label"])
                if old is not None and old["agent"] != p["agent"]:
                    raise BenchError(f"{spec} {p['label']} was played as {old['agent']!r}, now {p['agent']!r}: "
                                     f"a new agent needs a new --json")
                entry["players"][p["label"]] = p
                pairs += [(p, r) for r in rungs]
            for r in rungs:
                entry["players"].setdefault(r["label"], r)
        opening = args.opening_plies if args.low else 0
        if entry.setdefault("opening_plies", opening) != opening:
            raise BenchError(f"{spec}: {args.json} was played with {entry['opening_plies']} random "
                             f"opening plies, now {opening}: use a new --json")
        out.append((spec, schedule(entry, spec, pairs, args.games, opening)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--game", action="append", default=[], help="game spec (repeatable)")
    ap.add_argument("--checkpoints", help="JSON list of {label, path, ...} (one --game only)")
    ap.add_argument("--net", action="append", default=[], help="LABEL=PATH (repeatable)")
    ap.add_argument("--only", default="", help="comma-separated checkpoint labels to play")
    ap.add_argument("--algorithms", default=";".join(DEFAULT_ALGORITHMS),
                    help="';'-separated agent specs (net= added), 'calibrated' for the shipped calibration")
    ap.add_argument("--calibrated-budget", type=int, default=None,
                    help="play 'calibrated' at these iterations, with every checkpoint")
    ap.add_argument("--rungs", default="", help="these rungs instead of the beaten ones (research.ladder's "
                    "tokens: N, or ours:N for this project's MCTS above OpenSpiel's)")
    ap.add_argument("--ladder", default=DEFAULT_LADDER, help="results of research/ladder.py")
    ap.add_argument("--games", type=int, default=40, help="games per cell (seats alternate)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--figure", default=os.path.join(HERE, "figures", "balance_ladder.png"))
    ap.add_argument("--report", action="store_true", help="only the table and the figure, no games")
    ap.add_argument("--low", default="", help="LABEL=PATH: a pool of one, this low network instead of the rungs")
    ap.add_argument("--low-agent", default=LOW_AGENT, help="the low network's agent (net= added)")
    ap.add_argument("--opening-plies", type=int, default=4,
                    help="with --low: seeded random plies before the players move, the same for both "
                         "seats of a pairing and every algorithm (the experiment files' 4)")
    ap.add_argument("--pool-algorithms", action="store_true",
                    help="print the pool-of-one algorithms (for --algorithms) and exit")
    args = ap.parse_args(argv)
    if args.pool_algorithms:
        print(";".join(POOL_ALGORITHMS))
        return 0
    try:
        data = load_results(args.json)
        if not args.report:
            if not args.game:
                raise BenchError("--game is needed (or --report)")
            if args.checkpoints and len(args.game) > 1:
                raise BenchError("--checkpoints goes with one --game")
            if args.games < 1 or args.workers < 1:
                raise BenchError("--games and --workers must be at least 1")
            ladder = load_results(args.ladder) if args.rungs == "" and not args.low else {"games": {}}
            todo = plan(args, data, ladder)
            data.setdefault("meta", {}).update({
                "python": sys.version.split()[0], "platform": platform.platform(),
                "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                "date": time.strftime("%Y-%m-%d")})
            save_results(args.json, data)
            for spec, tasks in todo:
                t0 = time.time()
                run_tasks(args.json, data, spec, tasks, args.workers)
                print(f"{spec}: {len(tasks)} game(s) played in {time.time() - t0:.0f} s", flush=True)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(report(data, args.figure))
    return 0


if __name__ == "__main__":
    sys.exit(main())
