"""Reports of balancing evaluations, by experiment.

An experiment is the opponent the balanced players faced: the low-level pool (Unbounded Minimax with
the early networks at a given budget: the Minibal paper's Table 2 and Figures 1-2) or plain MCTS at
a given budget (Table 4 and Figures 3-4). Rows of different experiments are never merged: every
cell is (opponent kind, opponent budget, game, algorithm, budget), per game and averaged over games.

Each cell gives the binary gain (mean b_t, in %), W/D/L, and the score (mean f_t) with 95% intervals
computed over the cell's independent units (network pair x opening; ``descent.stats``), and states
how many units and games stand behind it. Outputs, each written atomically (temporary name, then
rename): ``table.txt``, ``results.csv`` and two PNG figures (gain and score against the budget, one
curve per algorithm with its 95% band) per experiment and game.
"""
from __future__ import annotations

import csv
import io
import json
import math
import statistics
from pathlib import Path

import numpy as np

from games import validate as v
from training import fileio, layout
from descent.calibrate import side_by_side
from descent.equal_cpu import is_equal_cpu, reference_of
from descent.results import ResultsDB
from descent.stats import (average_intervals, cluster_interval, interval_from_bounds, interval_from_variance,
                           network_interval)
from descent.pools import POOLS
from descent.tournament import ProtocolError

EXPERIMENTS = {"pool": "pool experiment (Minibal paper Table 2, Figures 1-2): high-level nets "
                       "against the low-level pool",
               "mcts": "MCTS experiment (Minibal paper Table 4, Figures 3-4): high-level nets "
                       "against plain MCTS"}


# The Minibal paper's own averages over its seven games (seed 000, section 4.3 and its appendix):
# Table 2, 20 s a move against the low pool; against plain MCTS, Table 4 (1 s a move, Minibal_+ only)
# and the text (20 s a move). Per entry: algorithm, conditions, binary gain (%), its 95% radius,
# win/draw/loss (%) and score, each None where the paper gives none. Its per-game figures are in
# its appendix's figures only, so they are not quoted.
PaperEntry = tuple[str, str, float, float | None, tuple[float, float, float] | None, float | None]
PAPER: dict[str, list[PaperEntry]] = {
    "pool": [("minimax", "20 s a move, Table 2", 92.68, 0.91, (94.77, 3.14, 2.09), 0.59),
             ("minibal_plus", "20 s a move, Table 2", -2.96, 1.95, (21.45, 54.14, 24.41), -0.024),
             # the paper prints Minibal_n's win rate as 1.19, a misprint: 0.50 is what its gain
             # (W - L = -68.95), its W + D + L = 100 and its interval fit
             ("minibal_n", "20 s a move, Table 2; its W misprinted 1.19", -68.95, 1.24, (0.50, 30.05, 69.45),
              -0.21)],
    "mcts": [("minimax", "20 s a move, text", 100.0, None, None, None),
             ("minibal_plus", "1 s a move, Table 4", 2.16, 1.89, (27.16, 47.84, 25.0), None),
             ("minibal_plus", "20 s a move, text", 37.95, None, None, None)],
}
_ORDER = ("minimax", "minibal_plus", "minibal_n")


def budget_value(budget: str) -> float:
    return float(budget.split("=", 1)[1])


def _opponent(row) -> tuple[str, str]:
    kind = row.get("opponent") or ("mcts" if str(row.get("agent_b", "")).startswith("mcts") else "pool")
    budget = row.get("opponent_budget")
    if not budget:
        parts = str(row.get("match_key", "")).split("|")
        budget = parts[6] if len(parts) > 6 else "?"
    return kind, budget


def _unit(row) -> str:
    return row.get("unit") or f"{row.get('net_a')}|{row.get('net_b')}|"


def _record(opp, opp_budget, game, alg, budget, g, s, wins, draws, losses, nets=None) -> dict:
    """``nets``: (high networks, low networks, gain interval and score interval over networks as well
    as openings; ``descent.stats.network_interval``), where known."""
    n = max(g.games, 1)
    rec = {"opponent": opp, "opponent_budget": opp_budget, "game": game, "algorithm": alg,
           "budget": budget, "units": g.units, "games": g.games,
           "gain": 100 * g.mean, "gain_low": 100 * g.low, "gain_high": 100 * g.high,
           "win": 100 * wins / n, "draw": 100 * draws / n, "loss": 100 * losses / n,
           "score": s.mean, "score_low": s.low, "score_high": s.high,
           "_g": g, "_s": s}
    if nets is not None:
        high, low, gn, sn = nets
        rec.update(high_networks=high, low_networks=low, gain_net_low=100 * gn.low, gain_net_high=100 * gn.high,
                   score_net_low=sn.low, score_net_high=sn.high, _gn=gn, _sn=sn)
    return rec


def _low_label(row) -> str:
    """The low-level network of an evaluate row ('' when the opponent is no network: MCTS, an engine)."""
    return row["net_b"] if _opponent(row)[0] == "pool" else ""


def summarise(rows) -> list[dict]:
    """One record per (opponent, opponent budget, game, algorithm, budget) of evaluate rows."""
    groups: dict = {}
    for r in rows:
        opp, ob = _opponent(r)
        groups.setdefault((opp, ob, r["game"], r["algorithm"], r["budget"]), []).append(r)
    out = []
    for (opp, ob, game, alg, budget), rs in sorted(groups.items(), key=lambda kv: _order(kv[0])):
        units = [_unit(r) for r in rs]
        b, sc = [r["a_result"] for r in rs], [r["a_score"] for r in rs]
        g = cluster_interval(b, units)
        s = cluster_interval(sc, units, method="t")
        high, low = [r["net_a"] for r in rs], [_low_label(r) for r in rs]
        nets = (len(set(high)), len(set(low) - {""}), network_interval(b, units, high, low),
                network_interval(sc, units, high, low, method="t"))
        out.append(_record(opp, ob, game, alg, budget, g, s, sum(r["a_result"] > 0 for r in rs),
                           sum(r["a_result"] == 0 for r in rs), sum(r["a_result"] < 0 for r in rs), nets))
    return out


def per_pair(rows) -> list[dict]:
    """One record per cell and network pair (high network, low network or the opponent's name): its
    games, gain (%), draws (%) and score, so that a reader sees whether one pair carries a cell."""
    groups: dict = {}
    for r in rows:
        opp, ob = _opponent(r)
        groups.setdefault((opp, ob, r["game"], r["algorithm"], r["budget"], r["net_a"], r["net_b"]), []).append(r)
    out = []
    for key, rs in sorted(groups.items(), key=lambda kv: (_order(kv[0][:5]), kv[0][5:])):
        n = len(rs)
        out.append(dict(zip(_CELL + ["high", "low"], key), games=n,
                        gain=100 * sum(r["a_result"] for r in rs) / n,
                        draw=100 * sum(r["a_result"] == 0 for r in rs) / n,
                        score=sum(r["a_score"] for r in rs) / n))
    return out


def _cells(rows) -> list[tuple[tuple, list]]:
    """The rows grouped by cell (opponent, its budget, game, algorithm, budget), in the tables'
    order."""
    groups: dict = {}
    for r in rows:
        opp, ob = _opponent(r)
        groups.setdefault((opp, ob, r["game"], r["algorithm"], r["budget"]), []).append(r)
    return sorted(groups.items(), key=lambda kv: _order(kv[0]))


def _median(xs):
    return statistics.median(xs) if xs else None


def outcomes(rows) -> list[str]:
    """What each cell's games ended in, for reading a balancing method's behaviour: the median
    length (plies) of its wins, draws and losses, and the median terminal value (f_t, the balanced
    player's view) of its wins and losses: a late win of small value against an early one."""
    out = []
    med = _median

    def show(x, fmt):
        return "-" if x is None else format(x, fmt)
    for cell, rs in _cells(rows):
        opp, ob, game, alg, budget = cell
        by = {k: [r for r in rs if (r["a_result"] > 0, r["a_result"] == 0, r["a_result"] < 0)[i]]
              for i, k in enumerate(("win", "draw", "loss"))}
        out.append(f"  {opp} {ob} | {game} | {alg} {budget}: plies of wins {show(med([r['plies'] for r in by['win']]), '.0f')}, "
                   f"draws {show(med([r['plies'] for r in by['draw']]), '.0f')}, "
                   f"losses {show(med([r['plies'] for r in by['loss']]), '.0f')}; f_t of wins "
                   f"{show(med([r['a_score'] for r in by['win']]), '+.3f')}, of losses "
                   f"{show(med([r['a_score'] for r in by['loss']]), '+.3f')}")
    return out


DECIDED_CSV = "decided.csv"
DECIDED_FIELDS = ["opponent", "opponent_budget", "game", "algorithm", "budget", "games", "recorded",
                  "proven", "proven_win", "proven_loss", "median_ply", "median_plies",
                  "median_fraction", "won_moves", "proven_choices"]


def _proof_of(row) -> dict | None:
    """The balanced player's (seat A's) proof note of an evaluate row (``ProofNote``), or None for
    a game played before it was recorded. ``proofs`` is JSON written by this project; a malformed
    one counts as not recorded."""
    text = row.get("proofs")
    if not text:
        return None
    try:
        note = json.loads(text).get("a")
    except (ValueError, AttributeError):
        return None
    return note if isinstance(note, dict) else None


def decided(rows) -> list[dict]:
    """When each cell's games were decided for the balanced player, as recorded at play time
    (``descent.gamerecord.ProofNote``): how many games' roots held a proven result (win or loss)
    before the end, the median first such ply, the median game length of those games and the
    median of ply / length per game, and of the moves whose root was a proven win, how many chose
    a proven-winning move. Cells without any recorded game are left out."""
    out = []
    med = _median
    for cell, rs in _cells(rows):
        notes = [(r, _proof_of(r)) for r in rs]
        recorded = [(r, n) for r, n in notes if n is not None]
        if not recorded:
            continue
        proven = [(r, n) for r, n in recorded if n.get("ply") is not None]
        opp, ob, game, alg, budget = cell
        out.append({"opponent": opp, "opponent_budget": ob, "game": game, "algorithm": alg, "budget": budget,
                    "games": len(rs), "recorded": len(recorded), "proven": len(proven),
                    "proven_win": sum(1 for _, n in proven if n.get("sign", 0) > 0),
                    "proven_loss": sum(1 for _, n in proven if n.get("sign", 0) < 0),
                    "median_ply": med([n["ply"] for _, n in proven]),
                    "median_plies": med([r["plies"] for r, _ in proven]),
                    "median_fraction": med([n["ply"] / max(1, r["plies"]) for r, n in proven]),
                    "won_moves": sum(int(n.get("won_moves", 0)) for _, n in recorded),
                    "proven_choices": sum(int(n.get("proven_choices", 0)) for _, n in recorded)})
    return out


def format_decided(cells) -> list[str]:
    def show(x, fmt):
        return "-" if x is None else format(x, fmt)
    lines = []
    for c in cells:
        share = (f"{100 * c['proven_choices'] / c['won_moves']:.0f}%" if c["won_moves"] else "-")
        lines.append(f"  {c['opponent']} {c['opponent_budget']} | {c['game']} | {c['algorithm']} {c['budget']}: "
                     f"{c['proven']} of {c['recorded']} games proven at the root ({c['proven_win']} won, "
                     f"{c['proven_loss']} lost), first at ply {show(c['median_ply'], '.0f')} of "
                     f"{show(c['median_plies'], '.0f')} (median {show(c['median_fraction'], '.2f')} of the game); "
                     f"a proven-winning move chosen in {c['proven_choices']} of {c['won_moves']} moves with a "
                     f"proven-won root ({share})"
                     + (f"; {c['games'] - c['recorded']} game(s) played before this was recorded"
                        if c["games"] > c["recorded"] else ""))
    return lines


def write_decided_csv(cells, path: Path) -> None:
    _write_rows(cells, DECIDED_FIELDS, path)


def format_pairs(pairs) -> list[str]:
    """Each cell's gain per network pair on one line."""
    cells: dict = {}
    for p in pairs:
        cells.setdefault(tuple(p[k] for k in _CELL), []).append(p)
    out = []
    for cell, ps in cells.items():
        opp, ob, game, alg, budget = cell
        out.append(f"  {opp} {ob} | {game} | {alg} {budget}: " + ", ".join(
            f"{p['high']}-{p['low']} {p['gain']:+.0f} ({p['games']})" for p in ps))
    return out


def average_over_games(records) -> list[dict]:
    """Mean over games of each (opponent, opponent budget, algorithm, budget) present in two or more
    games; the games are independent estimates (variances add)."""
    groups: dict = {}
    for r in records:
        groups.setdefault((r["opponent"], r["opponent_budget"], r["algorithm"], r["budget"]), []).append(r)
    out = []
    for (opp, ob, alg, budget), rs in sorted(groups.items(), key=lambda kv: (
            kv[0][0] != "pool", kv[0][0], kv[0][1], kv[0][2], budget_value(kv[0][3]))):
        if len(rs) < 2:
            continue
        g = average_intervals([r["_g"] for r in rs])
        s = average_intervals([r["_s"] for r in rs], method="t")
        nets = None
        if all("_gn" in r for r in rs):
            nets = (sum(r["high_networks"] for r in rs), sum(r["low_networks"] for r in rs),
                    average_intervals([r["_gn"] for r in rs]), average_intervals([r["_sn"] for r in rs], method="t"))
        rec = _record(opp, ob, f"average of {len(rs)} games", alg, budget, g, s, 0, 0, 0, nets)
        for k in ("win", "draw", "loss"):
            rec[k] = sum(r[k] for r in rs) / len(rs)
        out.append(rec)
    return out


def _experiments(records) -> list[tuple[str, str]]:
    seen = []
    for r in records:
        k = (r["opponent"], r["opponent_budget"])
        if k not in seen:
            seen.append(k)
    return seen


def _paper_text(entry: PaperEntry) -> str:
    _, where, gain, radius, wdl, score = entry
    text = f"{gain:+.1f}" + (f" ± {radius:.1f}" if radius is not None else "")
    if wdl is not None:
        text += f", W/D/L {wdl[0]:.1f}/{wdl[1]:.1f}/{wdl[2]:.1f}"
    if score is not None:
        text += f", score {score:+.3f}"
    return f"{text} ({where})"


def paper_side_by_side(records, averages) -> list[str]:
    """Each experiment's rows at its largest budget (averaged over games where there are two or
    more, else per game) beside the Minibal paper's averages over its seven games."""
    out = []
    for opp, ob in _experiments(records):
        paper = PAPER.get(opp)
        if not paper:
            continue
        mine = [r for r in averages if r["opponent"] == opp and r["opponent_budget"] == ob] or \
               [r for r in records if r["opponent"] == opp and r["opponent_budget"] == ob]
        top = max((r["budget"] for r in mine), key=budget_value)
        mine = [r for r in mine if r["budget"] == top]
        out.append(f"  {opp} experiment, opponent {ob}: ours at our largest budget, {top}")
        algs = list(_ORDER) + sorted({r["algorithm"] for r in mine} - set(_ORDER))
        for alg in algs:
            ours = [r for r in mine if r["algorithm"] == alg]
            out += [f"    {alg:<26} ours  {r['gain']:>+6.1f} [{r['gain_low']:>+6.1f}, {r['gain_high']:>+6.1f}], "
                    f"W/D/L {r['win']:.1f}/{r['draw']:.1f}/{r['loss']:.1f}, score {r['score']:+.3f} "
                    f"({r['game']}, {r['units']} units)" for r in ours] or [f"    {alg:<26} ours  not evaluated"]
            for e in (e for e in paper if e[0] == alg):
                out.append(f"    {'':<26} paper {_paper_text(e)}")
    return out


def experiment_title(opp: str, opp_budget: str) -> str:
    return f"{EXPERIMENTS.get(opp, opp)} ({'Unbounded Minimax, ' if opp == 'pool' else 'MCTS, '}{opp_budget})"


def format_table(records, title: str | None = None) -> str:
    lines = [title] if title else []
    lines.append(f"{'game':<28} {'algorithm':<26} {'budget':<15} {'units':>5} {'games':>5} "
                 f"{'gain % [95% interval]':>24} {'win %':>6} {'draw %':>6} {'loss %':>6} "
                 f"{'score [95% interval]':>26} {'nets':>5} {'gain, pools of nets':>20}")
    for r in records:
        nets = (f"{r['high_networks']:>2}+{r['low_networks']:<2} [{r['gain_net_low']:>+6.1f},{r['gain_net_high']:>+6.1f}]"
                if "gain_net_low" in r else "")
        lines.append(f"{r['game']:<28} {r['algorithm']:<26} {r['budget']:<15} {r['units']:>5} {r['games']:>5} "
                     f"{r['gain']:>+7.1f} [{r['gain_low']:>+6.1f},{r['gain_high']:>+6.1f}]   "
                     f"{r['win']:>6.1f} {r['draw']:>6.1f} {r['loss']:>6.1f} "
                     f"{r['score']:>+7.3f} [{r['score_low']:>+6.3f},{r['score_high']:>+6.3f}] {nets}".rstrip())
    if any("gain_net_low" in r for r in records):
        lines.append("(units: network pair x opening, the intervals' clusters; nets: high + low networks behind "
                     "the cell, and the gain's interval for pools of such networks, clustered by network as well: "
                     "two-way cluster-robust, min(high, low) - 1 degrees of freedom)")
    return "\n".join(lines)


def ordering_check(records) -> list[str]:
    """The paper's claims, cell by cell: Unbounded Minimax above zero, Minibal_+ nearest zero and
    Minibal_n below it (pool); Minimax near +100 and Minibal_+ far lower (MCTS); 'separated' only
    when the 95% intervals say so."""
    out = []
    cells: dict = {}
    for r in records:
        cells.setdefault((r["opponent"], r["opponent_budget"], r["game"], r["budget"]), {})[r["algorithm"]] = r
    for (opp, ob, game, budget), algs in cells.items():
        mm, mp, mn = algs.get("minimax"), algs.get("minibal_plus"), algs.get("minibal_n")
        if mm is None or mp is None:
            continue
        parts = []
        parts.append(f"minimax {'above 0' if mm['gain_low'] > 0 else 'NOT above 0'}")
        if opp == "pool":
            nearest = min(algs.values(), key=lambda r: abs(r["gain"]))["algorithm"]
            parts.append(f"nearest 0: {nearest}")
            parts.append(f"minibal_plus {'contains 0' if mp['gain_low'] <= 0 <= mp['gain_high'] else 'excludes 0'}")
            if mn is not None:
                parts.append("minibal_n below minibal_plus: " + (
                    "separated" if mn["gain_high"] < mp["gain_low"] else
                    ("point estimate only" if mn["gain"] < mp["gain"] else "no")))
        parts.append("minimax above minibal_plus: " + (
            "separated" if mm["gain_low"] > mp["gain_high"] else
            ("point estimate only" if mm["gain"] > mp["gain"] else "no")))
        out.append(f"  {opp} {ob} | {game} | {budget}: " + "; ".join(parts))
    return out


def pools_summary(run_dir: Path) -> list[str]:
    """The ranking behind a run's pools: split confidence and the early-versus-final check."""
    path = layout.pools_file(run_dir)
    if not path.exists():
        return []
    try:
        p = json.loads(path.read_text())
    except (OSError, ValueError):
        return [f"{path}: unreadable pools.json"]
    given = p.get("given")
    if given:
        return [f"{p['game']}: pools given, not ranked here: high {', '.join(h['net'] for h in p['high'])} / "
                f"low {', '.join(x['net'] for x in p['low'])} ({given.get('source', '?')})"]
    lines = [f"{p['game']}: ranked by {p['agent']}, {p.get('games_per_pair')} games per pair, "
             f"{p.get('opening_plies', 0)} opening plies"]
    def shown(x):
        return "?" if x is None else str(x)
    for r in p["ranking"]:
        lines.append(f"  {r['rank']}. {r['net']:<12} score {r['score']:.3f} over {r['games']} games, "
                     f"Elo {r['elo']:+.0f} ± {r['elo_radius']:.0f} (trained on "
                     f"{shown(r.get('trained_games'))} self-play games, "
                     f"{shown(r.get('trained_examples'))} examples)")
    s = p.get("split")
    if s:
        lines.append(f"  split high {', '.join(h['net'] for h in p['high'])} / low "
                     f"{', '.join(x['final'] for x in p['low'])}: margin (weakest high - strongest low) "
                     f"95% [{s['margin_low']:+.0f}, {s['margin_high']:+.0f}] Elo over {s['units']} units, "
                     f"same split in {100 * s['same_split']:.0f}% of {s['resamples']} resamples; high vs "
                     f"low gain {100 * s['high_vs_low_gain']:+.0f}% [{100 * s['high_vs_low_low']:+.0f}, "
                     f"{100 * s['high_vs_low_high']:+.0f}] -> "
                     f"{'pools separated' if s['separated'] else 'pools NOT separated'}")
    for c in p.get("early_vs_final", []):
        lo, hi = c.get("early_gain_low"), c.get("early_gain_high")
        ci = f"[{100 * lo:+.0f}, {100 * hi:+.0f}]" if lo is not None else f"± {100 * c['early_gain_radius']:.0f}"
        lines.append(f"  {c['early']} vs {c['final']}: early gain {100 * c['early_gain']:+.0f}% {ci} over "
                     f"{c.get('units', '?')} units ({c['games']} games) -> {c.get('verdict', '?')}")
    if p.get("same_state"):
        lines.append(f"  early = final training state (one self-play game spanned both milestones): member(s) "
                     f"{', '.join(str(m) for m in p['same_state'])}")
    for x in p.get("excluded", []):
        lines.append(f"  left out: member {x['member']} (missing milestone(s) {', '.join(x['missing'])})")
    for x in p.get("untrained", []):
        lines.append(f"  left out: member {x['member']} (final checkpoint {x['net']} never saw a "
                     f"self-play game)")
    for x in p.get("undertrained", []):
        lines.append(f"  WARNING: {x['net']} is undertrained ({shown(x['games'])} self-play games, "
                     f"{shown(x['examples'])} examples behind it)")
    return lines


def equal_cpu_summary(run_dir: Path) -> list[str]:
    """The equal-CPU records of a run (the MCTS opponent's iterations and the figures behind them)."""
    out = []
    for path in sorted(layout.calibrations_dir(run_dir).glob("equal-cpu-*.json")):
        try:
            r = json.loads(path.read_text())
            out.append(f"  {r['game']}: {r['reference']} spends a median {1000 * r['reference_cpu_per_move_median']:.2f} "
                       f"ms of CPU a move ({r['reference_moves']} moves, {len(r['networks'])} high networks, "
                       f"unbatched); plain MCTS {r['mcts_iterations_per_cpu_second']:.0f} iterations a CPU-second "
                       f"({r['mcts_positions']} positions) -> mcts:iterations={r['mcts_iterations']} "
                       f"(measured {r['measured_at']}, load {r['machine'].get('load_1min')})")
        except (OSError, ValueError, KeyError, TypeError):
            out.append(f"  {path}: unreadable equal-CPU record")
    return out


def _current_pairs(run_dir: Path):
    """The (high net, opponent) label pairs of a run's current pools, or None without pools.json."""
    path = layout.pools_file(run_dir)
    if not path.exists():
        return None
    p = v.load_json(path, POOLS, ProtocolError, f"pools file {path}")
    highs = [h["net"] for h in p.get("high", [])]
    return {(h, o) for h in highs for o in [x["net"] for x in p.get("low", [])] + ["mcts"]}


_atomic_bytes = fileio.write_bytes
write_text = fileio.write_text


CSV_FIELDS = ["opponent", "opponent_budget", "game", "algorithm", "budget", "units", "games", "gain",
              "gain_low", "gain_high", "win", "draw", "loss", "score", "score_low", "score_high",
              # what an average over games needs of each interval (``descent.stats.average_intervals``):
              # its variance on the [0, 1] scale, effective observations and degrees of freedom
              "gain_var", "gain_n_eff", "gain_df", "score_var", "score_n_eff", "score_df",
              # the networks behind the cell (high, low; 0 low networks against MCTS or an engine) and
              # the intervals that generalise to pools of such networks (``descent.stats.network_interval``)
              "high_networks", "low_networks", "gain_net_low", "gain_net_high", "score_net_low", "score_net_high"]
_CELL = CSV_FIELDS[:5]                      # what names a cell
_NEEDED = CSV_FIELDS[:16]                   # what every results.csv has
_STATS = ("var", "n_eff", "df")             # per interval, in the columns after those
_STATS_FIELDS = CSV_FIELDS[16:22]
_NET_FIELDS = CSV_FIELDS[22:]
PAIRS_CSV = "pairs.csv"
PAIR_FIELDS = _CELL + ["high", "low", "games", "gain", "draw", "score"]


def _order(cell: tuple) -> tuple:
    """The tables' order of cells (opponent, opponent budget, game, algorithm, budget): the pool
    experiment first, budgets by their value."""
    opp, ob, game, alg, budget = cell
    return opp != "pool", opp, ob, game, alg, budget_value(budget)


class ReportError(ProtocolError):
    """An earlier report's ``results.csv`` that cannot be merged (missing, malformed)."""


def _stats_columns(rec: dict) -> dict:
    return {f"{name}_{a}": getattr(rec[key], a) for name, key in (("gain", "_g"), ("score", "_s"))
            if key in rec for a in _STATS}


def read_report_csv(path) -> list[dict]:
    """The per-game cells of an earlier report's ``results.csv`` (its averages over games are left
    out: they are recomputed with the games they are merged with), as records ``make_report`` can
    average. Raises ``ReportError`` for a file that is missing or not such a report."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ReportError(f"earlier report {path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ReportError(f"earlier report {path}: not a results.csv of `descent report` (not text)") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [f for f in _NEEDED if f not in (reader.fieldnames or [])]
    if missing:
        raise ReportError(f"earlier report {path}: not a results.csv of `descent report` "
                          f"(missing column(s) {', '.join(missing)})")
    out = []
    for i, row in enumerate(reader, start=2):
        if row["game"].startswith("average of "):
            continue
        try:
            units, games = int(row["units"]), int(row["games"])
            num = {k: float(row[k]) for k in _NEEDED[len(_CELL) + 2:]}
            stats = {k: float(row[k]) for k in _STATS_FIELDS if row.get(k) not in (None, "")}
            nets = {k: float(row[k]) for k in _NET_FIELDS if row.get(k) not in (None, "")}
        except (ValueError, TypeError) as exc:           # TypeError: a short row (a field is None)
            raise ReportError(f"earlier report {path}, line {i}: {exc}") from None
        if not all(math.isfinite(x) for x in num.values()) or units < 1 or games < units:
            raise ReportError(f"earlier report {path}, line {i}: a value that is not a finite number, "
                              f"or fewer games than units")
        if len(stats) == len(_STATS_FIELDS):
            # drawn again from the variance, under the current rule (an earlier report may have
            # capped the effective observations at the games)
            g = interval_from_variance(num["gain"] / 100, stats["gain_var"], games, units, stats["gain_df"])
            s = interval_from_variance(num["score"], stats["score_var"], games, units, stats["score_df"],
                                       method="t")
            num.update(gain_low=100 * g.low, gain_high=100 * g.high, score_low=s.low, score_high=s.high)
        else:
            g = interval_from_bounds(num["gain"] / 100, num["gain_low"] / 100, num["gain_high"] / 100,
                                     games, units)
            s = interval_from_bounds(num["score"], num["score_low"], num["score_high"], games, units, method="t")
        rec = {k: row[k] for k in _CELL}
        rec.update(units=units, games=games, **num, _g=g, _s=s)
        if len(nets) == len(_NET_FIELDS):
            rec.update({k: (int(x) if k.endswith("_networks") else x) for k, x in nets.items()})
        out.append(rec)
    return out


def write_csv(records, path: Path) -> None:
    _write_rows([{**r, **_stats_columns(r)} for r in records], CSV_FIELDS, path)


def write_pairs_csv(pairs, path: Path) -> None:
    _write_rows(pairs, PAIR_FIELDS, path)


def _write_rows(rows, fields, path: Path) -> None:
    """A CSV of ``rows`` (dicts) with the columns ``fields``, written atomically."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    _atomic_bytes(path, buf.getvalue().encode())


def plot(records, title: str, metric: str, path: Path) -> None:
    """Gain (%) or score against the budget, one curve per algorithm with its 95% band."""
    import matplotlib  # lazy: matplotlib (heavy; only for the figures)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib (heavy; only for the figures)
    algs = sorted({r["algorithm"] for r in records})
    outside = len(algs) > 4          # many curves: the legend beside the axes, not over the lower ones
    fig, ax = plt.subplots(figsize=(8.8 if outside else 6.4, 4.2), dpi=110)
    kinds = set()
    for alg in algs:
        rs = sorted((r for r in records if r["algorithm"] == alg), key=lambda r: budget_value(r["budget"]))
        xs = [budget_value(r["budget"]) for r in rs]
        kinds |= {r["budget"].split("=")[0] for r in rs}
        ys = [r[metric] for r in rs]
        ax.plot(xs, ys, marker="*" if alg.endswith(":calibrated") else "o",
                ms=14 if alg.endswith(":calibrated") else 6, label=alg)
        ax.fill_between(xs, [r[metric + "_low"] for r in rs], [r[metric + "_high"] for r in rs], alpha=0.2)
    ax.axhline(0.0, color="black", lw=0.8)
    from matplotlib.ticker import NullFormatter, ScalarFormatter  # lazy: matplotlib (heavy; only for the figures)
    xs_all = sorted({budget_value(r["budget"]) for r in records})
    if xs_all and xs_all[0] > 0:
        ax.set_xscale("log")
    ax.set_xticks(xs_all)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(*((-105, 105) if metric == "gain" else (-1.05, 1.05)))
    ax.set_xlabel("search time per move (s)" if kinds == {"time"} else "search budget per move")
    obs = {r.get("opponent_budget") for r in records}
    if len(obs) == 1 and xs_all and xs_all[0] > 0:
        ob = next(iter(obs)) or ""
        if is_equal_cpu(ob):     # MCTS at the CPU of a reference budget: the ratio to that budget
            ob = next((x for x in reference_of(ob).partition(":")[2].split(",") if x.startswith("iterations=")), "")
        if "=" in ob and ob.split("=")[0] in kinds and budget_value(ob) > 0:
            # the paper varies the ratio of the two players' budgets: show it on the top axis
            k = budget_value(ob)
            def to_ratio(x):
                return np.asarray(x, dtype=float) / k

            def from_ratio(x):
                return np.asarray(x, dtype=float) * k
            top = ax.secondary_xaxis("top", functions=(to_ratio, from_ratio))
            top.set_xticks([x / k for x in xs_all])
            top.xaxis.set_major_formatter(ScalarFormatter())
            top.xaxis.set_minor_formatter(NullFormatter())
            top.tick_params(labelsize=7)
            top.set_xlabel(f"ratio to the opponent's budget ({ob})", fontsize=8)
    ax.set_ylabel("binary gain (%)" if metric == "gain" else "score (mean f_t)")
    units = sorted({r["units"] for r in records})
    span = (f"{units[0]}" if units[0] == units[-1] else f"{units[0]}-{units[-1]}") if units else "?"
    ax.set_title(f"{title}\n{'binary gain' if metric == 'gain' else 'score'}, 95% bands over {span} "
                 f"independent units per point", fontsize=9)
    ax.grid(alpha=0.3)
    if outside:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    _atomic_bytes(path, buf.getvalue())


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text.replace("=", "-"))


def _cell(r) -> tuple:
    return tuple(r[k] for k in _CELL)


def make_report(db_paths, out_dir, games: list[str] | None = None, merge=()) -> dict:
    """Read evaluate rows from the databases; write table.txt, results.csv and PNG figures, one table
    and one set of figures per experiment (opponent kind and budget). ``merge``: earlier reports'
    ``results.csv`` files whose per-game cells join those of the databases (games evaluated
    elsewhere, whose databases are not at hand); a cell that a database also holds comes from the
    database, and the averages over games are recomputed over all of them."""
    merged: list[tuple[str, dict]] = []
    for path in merge:
        merged.extend((str(path), r) for r in read_report_csv(path))
    rows, stale = [], 0
    for p in db_paths:
        with ResultsDB(p, readonly=True) as db:
            got = db.checked_rows("evaluate")
        current = _current_pairs(Path(p).parent)
        if current is not None:
            keep = [r for r in got if (r["net_a"], r["net_b"]) in current]
            stale += len(got) - len(keep)
            got = keep
        rows.extend(got)
    if games:
        rows = [r for r in rows if r["game"] in games]
    records = summarise(rows)
    pairs = per_pair(rows)
    have = {_cell(r) for r in records}
    added: dict[str, int] = {}
    for path, r in merged:
        if (not games or r["game"] in games) and _cell(r) not in have:
            have.add(_cell(r))
            records.append(r)
            added[path] = added.get(path, 0) + 1
    records.sort(key=lambda r: _order(_cell(r)))
    avg = average_over_games(records)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # the folder's lock (a second report into it waits): a temporary file of a report's output
    # left there was killed; others only if their writer is dead (--out may be a shared folder)
    with fileio.FileLock(out / ".report.lock", timeout=None, remove=True):
        table_file, csv_file = layout.report_files(out)
        fileio.clean_temp_files(out, scope=lambda target: target in (table_file.name, csv_file.name, PAIRS_CSV,
                                                                     DECIDED_CSV)
                                or target.endswith(".png"))
        figures, sections = [], []
        for opp, ob in _experiments(records):
            title = experiment_title(opp, ob)
            recs = [r for r in records + avg if r["opponent"] == opp and r["opponent_budget"] == ob]
            sections.append(format_table(recs, f"== {title}"))
            for g in dict.fromkeys(r["game"] for r in recs):
                for metric in ("gain", "score"):
                    path = out / f"{opp}_{_safe(ob)}_{_safe(g)}_{metric}.png"
                    plot([r for r in recs if r["game"] == g], f"{g}: {opp} experiment, opponent {ob}", metric, path)
                    figures.append(str(path))
        paired = side_by_side(records + avg)
        if paired:
            sections.append("== calibrated and uncalibrated cells, side by side (descent calibrate)\n" + "\n".join(paired))
        if pairs:
            sections.append("== per network pair: each cell's binary gain % per high-low pair (games)\n"
                            + "\n".join(format_pairs(pairs)))
        ends = outcomes(rows)
        if ends:
            sections.append("== how the games ended: median plies of wins, draws and losses, and median terminal "
                            "value f_t of wins and losses (the balanced player's view)\n" + "\n".join(ends))
        proofs = decided(rows)
        if proofs:
            sections.append("== when the game was decided: the balanced player's first root holding a proven "
                            "win or loss (recorded at play time), and how often it then chose a proven win\n"
                            + "\n".join(format_decided(proofs)))
        checks = ordering_check(records + avg)
        if checks:
            sections.append("== the paper's ordering, cell by cell (95% intervals)\n" + "\n".join(checks))
        paper = paper_side_by_side(records, avg)
        if paper:
            sections.append("== side by side with the Minibal paper (its averages over its seven games; budgets "
                            "differ: the paper's are seconds on its machine)\n" + "\n".join(paper))
        equal = [line for p in db_paths for line in equal_cpu_summary(Path(p).parent)]
        if equal:
            sections.append("== plain MCTS at equal CPU: the iterations measured for each game (descent.equal_cpu)\n"
                            + "\n".join(equal))
        ranking = [line for p in db_paths for line in pools_summary(Path(p).parent)]
        if ranking:
            sections.append("== ranking behind the pools\n" + "\n".join(ranking))
        if added:
            sections.append("\n".join(f"({n} cell(s) from the earlier report {path}: their intervals as "
                                      f"that report wrote them)" for path, n in added.items()))
        if stale:
            sections.append(f"({stale} evaluation match(es) of networks no longer in the pools left out: "
                            f"the pools were re-ranked after they were played)")
        table = "\n\n".join(sections)
        write_text(table_file, table + "\n")
        write_csv(records + avg, csv_file)
        write_pairs_csv(pairs, out / PAIRS_CSV)
        if proofs:
            write_decided_csv(proofs, out / DECIDED_CSV)
        clean = [{k: v for k, v in r.items() if not k.startswith("_")} for r in records + avg]
        return {"records": clean, "table": table, "figures": figures, "out": str(out), "matches": len(rows),
                "stale": stale, "merged": sum(added.values())}
