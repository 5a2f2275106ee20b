"""Reports of balancing evaluations: the Minibal paper's Table 2 columns per algorithm and budget,
per game and averaged over games, its Figures 1-4 (gain and score against the search budget, one
curve per algorithm, 95% confidence bands) as PNG files, and a CSV export.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

from descent.results import ResultsDB
from descent.stats import MatchSummary


def budget_value(budget: str) -> float:
    return float(budget.split("=", 1)[1])


def summarise(rows) -> list[dict]:
    """One record per (game, algorithm, budget) of evaluate rows."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["game"], r["algorithm"], r["budget"]), []).append(r)
    out = []
    for (game, alg, budget), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                          budget_value(kv[0][2]))):
        s = MatchSummary.from_results([r["a_result"] for r in rs], [r["a_score"] for r in rs])
        out.append({"game": game, "algorithm": alg, "budget": budget, "games": s.games,
                    "gain": 100 * s.gain, "gain_radius": 100 * s.gain_radius,
                    "win": 100 * s.wins / s.games, "draw": 100 * s.draws / s.games,
                    "loss": 100 * s.losses / s.games, "score": s.score, "score_radius": s.score_radius})
    return out


def average_over_games(records) -> list[dict]:
    """Mean over games of each (algorithm, budget); radii combine as independent estimates."""
    groups: dict = {}
    for r in records:
        groups.setdefault((r["algorithm"], r["budget"]), []).append(r)
    out = []
    for (alg, budget), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], budget_value(kv[0][1]))):
        n = len(rs)

        def mean(k):
            return sum(r[k] for r in rs) / n

        def comb(k):
            return math.sqrt(sum(r[k] ** 2 for r in rs if math.isfinite(r[k]))) / n
        out.append({"game": f"average of {n} game(s)", "algorithm": alg, "budget": budget,
                    "games": sum(r["games"] for r in rs), "gain": mean("gain"), "gain_radius": comb("gain_radius"),
                    "win": mean("win"), "draw": mean("draw"), "loss": mean("loss"), "score": mean("score"),
                    "score_radius": comb("score_radius")})
    return out


def format_table(records) -> str:
    lines = [f"{'game':<26} {'algorithm':<24} {'budget':<16} {'games':>5} {'gain %':>14} "
             f"{'win %':>6} {'draw %':>6} {'loss %':>6} {'score':>16}"]
    for r in records:
        lines.append(f"{r['game']:<26} {r['algorithm']:<24} {r['budget']:<16} {r['games']:>5} "
                     f"{r['gain']:>+7.1f} ± {r['gain_radius']:<5.1f} {r['win']:>6.1f} {r['draw']:>6.1f} "
                     f"{r['loss']:>6.1f} {r['score']:>+7.3f} ± {r['score_radius']:<6.3f}")
    return "\n".join(lines)


def write_csv(records, path: Path) -> None:
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(records[0].keys()) if records else ["game"])
        w.writeheader()
        w.writerows(records)
    tmp.replace(path)


def plot(records, game: str, metric: str, path: Path) -> None:
    """Gain (%) or score against the budget, one curve per algorithm with its 95% band."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    algs = sorted({r["algorithm"] for r in records if r["game"] == game})
    kinds = set()
    for alg in algs:
        rs = sorted((r for r in records if r["game"] == game and r["algorithm"] == alg),
                    key=lambda r: budget_value(r["budget"]))
        xs = [budget_value(r["budget"]) for r in rs]
        kinds |= {r["budget"].split("=")[0] for r in rs}
        ys = [r[metric] for r in rs]
        rad = [r[metric + "_radius"] if math.isfinite(r[metric + "_radius"]) else 0.0 for r in rs]
        ax.plot(xs, ys, marker="o", label=alg)
        ax.fill_between(xs, [y - e for y, e in zip(ys, rad)], [y + e for y, e in zip(ys, rad)], alpha=0.2)
    ax.axhline(0.0, color="black", lw=0.8)
    if all(r["budget"] for r in records):
        from matplotlib.ticker import NullFormatter, ScalarFormatter
        ax.set_xscale("log")
        xs_all = sorted({budget_value(r["budget"]) for r in records if r["game"] == game})
        ax.set_xticks(xs_all)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("search time per move (s)" if kinds == {"time"} else "search budget per move")
    ax.set_ylabel("binary gain (%)" if metric == "gain" else "score (mean f_t)")
    ax.set_title(f"{game}: {'binary gain' if metric == 'gain' else 'score'} of the balanced player")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)


def make_report(db_paths, out_dir, games: list[str] | None = None) -> dict:
    """Read evaluate rows from the databases; write table.txt, results.csv and PNG figures."""
    rows = []
    for p in db_paths:
        with ResultsDB(p, readonly=True) as db:
            rows.extend(db.checked_rows("evaluate"))
    if games:
        rows = [r for r in rows if r["game"] in games]
    records = summarise(rows)
    games_seen = sorted({r["game"] for r in records})
    avg = average_over_games(records) if len(games_seen) > 1 else []
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = []
    for g in games_seen + ([avg[0]["game"]] if avg else []):
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in g)
        for metric in ("gain", "score"):
            path = out / f"{safe}_{metric}.png"
            plot(records + avg, g, metric, path)
            figures.append(str(path))
    table = format_table(records + avg)
    (out / "table.txt").write_text(table + "\n")
    write_csv(records + avg, out / "results.csv")
    return {"records": records + avg, "table": table, "figures": figures, "out": str(out),
            "matches": len(rows)}
