"""Calibrations read back: one paragraph for the terminal (``describe``), the result to use for a
game and algorithm (``find_calibration``), and the report's side-by-side view (``side_by_side``)."""
from __future__ import annotations

import json
from pathlib import Path

from training import layout
from training.run import DEFAULT_ROOT
from descent.calibrate.design import fmt_metric

def _measured(at: dict, metric: str, gain_digits: int, score_digits: int) -> str:
    """``mean ± radius`` of a budget's own games (``?`` for what one game cannot tell)."""
    m, r = at["mean"], at["radius"]
    if metric == "gain":
        return (f"{100 * m:+.{gain_digits}f}%" if m is not None else "?") + \
            (f" ± {100 * r:.{gain_digits}f}" if r is not None else " ± ?")
    return (f"{m:+.{score_digits}f}" if m is not None else "?") + \
        (f" ± {r:.{score_digits}f}" if r is not None else " ± ?")


def describe(result: dict) -> str:
    """One paragraph for the terminal."""
    at = result["at_budget"]
    unit = result["unit"]
    lo, hi = result["interval"]
    olo, ohi = result.get("interval_open", [False, False])
    metric = result["metric"]
    fitted = ""
    if at.get("fitted") is not None:
        fitted = (f"fitted there: {metric} {fmt_metric(metric, at['fitted'])} [{fmt_metric(metric, at['fitted_low'])}, "
                  f"{fmt_metric(metric, at['fitted_high'])}]; ")
    val = f"{metric} {_measured(at, metric, 1, 3)}"
    tgt = f"{100 * result['target']:+.0f}%" if metric == "gain" else f"{result['target']:+.3f}"
    conv = "" if result["converged"] else " (NOT converged: the game budget ran out; rerun with more --max-games)"
    word = "s" if unit == "time" else unit
    n = result.get("near")          # results of the first fitted design have none
    near = f", {n['games']} of them at {n['low']} .. {n['high']} {word}" if n else ""
    return (f"{result['game']}: {result['algorithm']} against {result['against']} reaches {metric} {tgt} at "
            f"{unit}={result['budget']} (root interval {'<=' if olo else ''}{lo} .. {'>=' if ohi else ''}{hi} {word}); "
            f"{fitted}measured there: {val} over {at['games']} games (95%); {result['games']} games spent"
            f"{near}{conv}")


def find_calibration(game: str, algorithm: str = "minibal_plus", root=None, run_dir=None,
                     against: str | None = None, prefer_against: str = "pool") -> dict | None:
    """The calibrated result to use for ``game`` and ``algorithm`` (its name, without options), or
    None. Looks in ``run_dir``, else in every run under ``root``; prefers, in order: calibrations
    against an opponent starting with ``prefer_against``, target 0 with the gain metric, converged
    ones, iterations, the newest."""
    dirs = [Path(run_dir)] if run_dir else sorted(Path(root or DEFAULT_ROOT).glob("*"))
    best, best_key = None, None
    for d in dirs:
        for p in sorted(layout.calibrations_dir(d).glob("*.json")):
            try:
                r = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            if not isinstance(r, dict) or r.get("status") != "done" or r.get("game") != game:
                continue
            if str(r.get("algorithm", "")).partition(":")[0] != algorithm:
                continue
            if against is not None and r.get("against") != against:
                continue
            key = (str(r.get("against", "")).startswith(prefer_against), r.get("target") == 0 and r.get("metric") == "gain",
                   bool(r.get("converged")), r.get("unit") == "iterations", r.get("finished", ""))
            if best_key is None or key > best_key:
                best, best_key = dict(r, path=str(p)), key
    return best


def side_by_side(records) -> list[str]:
    """For ``descent report``: each calibrated cell (algorithm ``X:calibrated``) next to the
    uncalibrated cells of X in the same experiment and game at the nearest budgets of the same unit
    (one below, one above)."""
    out = []
    for c in records:
        base, _, opt = c["algorithm"].partition(":")
        if opt != "calibrated":
            continue
        unit, value = c["budget"].split("=", 1)
        same = [r for r in records if r["algorithm"] == base and r["game"] == c["game"]
                and r["opponent"] == c["opponent"] and r["opponent_budget"] == c["opponent_budget"]
                and r["budget"].split("=", 1)[0] == unit]
        below = [r for r in same if float(r["budget"].split("=", 1)[1]) <= float(value)]
        above = [r for r in same if float(r["budget"].split("=", 1)[1]) > float(value)]
        near = ([max(below, key=lambda r: float(r["budget"].split("=", 1)[1]))] if below else []) + \
               ([min(above, key=lambda r: float(r["budget"].split("=", 1)[1]))] if above else [])

        def cell(r):
            return (f"{r['budget']}: gain {r['gain']:+.1f}% [{r['gain_low']:+.1f}, {r['gain_high']:+.1f}], "
                    f"score {r['score']:+.3f} ({r['games']} games)")
        out.append(f"  {c['opponent']} {c['opponent_budget']} | {c['game']} | calibrated {base} {cell(c)}  <->  "
                   + ("uncalibrated " + "; ".join(cell(r) for r in near) if near else
                      f"no uncalibrated {base} cell in {unit}"))
    return out
