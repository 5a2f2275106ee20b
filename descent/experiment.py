"""An experiment file: the whole Minibal protocol on several games, run by one resumable command.

``descent experiment FILE`` trains a population per game (``descent train``), ranks it
(``descent rank``), evaluates the balancing algorithms against the low-level pool and against plain
MCTS (``descent evaluate``) and writes one report over all games (``descent report``). Every stage
resumes where it stopped: training continues from each member's latest state and is skipped once
every member has reached every milestone, rank and evaluate skip the matches already in each run's
``results.db``, and the report is rewritten (atomically) from the databases.

The file (TOML; see ``configs/experiments/minibal-cpu.toml``)::

    extends       (optional, before any section) another experiment file, relative to this one's
                  folder: its settings are this file's except those given here. A section
                  ([experiment], [train], [rank], [evaluate]) overrides the base's key by key; an
                  array of tables ([[opponents]], [[games]]) replaces the base's whole array. A
                  variant (other budgets, a given split, its own runs folder) is then its differences
                  (``configs/experiments/minibal-sweep-methods.toml``).
    [experiment]  name, seed, workers (match worker processes), runs (folder of the run
                  directories, one per game, named as ``descent train`` names them), report (folder)
    [train]       population, budget, milestones, workers, min_games (the budget's floor of finished
                  self-play games per network; default: the game config's [run] min_games)
    [rank]        agent, games_per_pair, opening_plies, early and final (two milestones of the runs
                  instead of their first and last, as ``descent rank --early/--final``: the same one
                  twice keeps the low pool at its final networks)
    [evaluate]    algorithms (list of specs), budgets (list: 'time=S' or 'iterations=N'),
                  opening_plies
    [[opponents]] kind ('pool' or 'mcts'), budget, games_per_pair  (one table per opponent)
    [[games]]     spec, config (default: configs/<game>.toml), budget, milestones and min_games (this game's
                  own, instead of [train]'s: a game that needs longer training; raising them later
                  continues the same members, and rank and evaluate then use the new milestones),
                  from (an exported run, e.g. results/training-runs/NAME: copied to the game's run
                  directory when that holds no run yet, so that an experiment on committed networks
                  needs no step by hand), high, low and split_source (a split given instead of
                  ranked, as ``descent rank --high --low --source``: for an exported run that keeps
                  only the checkpoints its pools use, so that its ranking cannot be replayed)
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import games
import games as _games
from games.errors import GameError
from training import layout
from descent.config import read_toml
from descent.plan import build_plan
from descent.report import make_report, pools_summary
from descent.tournament import evaluate, given_pools, rank

_KEYS: dict[str, dict[str, type]] = {
    "experiment": {"name": str, "seed": int, "workers": int, "runs": str, "report": str},
    "train": {"population": int, "budget": str, "milestones": str, "workers": int, "min_games": int},
    "rank": {"agent": str, "games_per_pair": int, "opening_plies": int, "early": str, "final": str},
    "evaluate": {"algorithms": list, "budgets": list, "opening_plies": int},
}
_LISTS: dict[str, dict[str, type]] = {"opponents": {"kind": str, "budget": str, "games_per_pair": int},
          "games": {"spec": str, "config": str, "budget": str, "milestones": str, "min_games": int,
                    "from": str,
                    "high": list, "low": list, "split_source": str}}
_DEFAULTS: dict[str, dict[str, object]] = {"experiment": {"seed": 0, "workers": 1, "runs": "checkpoints/experiments", "report": "results"},
             "train": {"workers": 1, "min_games": None},     # None: the game config's [run] min_games
             "rank": {"games_per_pair": 16, "opening_plies": 4, "early": "", "final": ""},
             "evaluate": {"opening_plies": 4}}


class ExperimentError(GameError):
    """An experiment file that is missing, malformed or names something unknown."""


def _read_layers(path, chain: tuple = ()) -> tuple[Path, dict]:
    """(the file's path, its sections over those of the files it extends): every file of the chain
    checked against the format with its own path in the message. ``extends`` (a top-level key: a
    path relative to the extending file's folder) names the base; a section table of the file
    overrides the base's key by key, an array of tables (``[[opponents]]``, ``[[games]]``) replaces
    the base's whole array."""
    path, raw = read_toml(path, "experiment file", ExperimentError)
    here = path.resolve()
    if here in chain:
        raise ExperimentError(f"{path}: 'extends' goes round in a circle "
                              f"({' -> '.join(p.name for p in chain + (here,))})")
    base_name = raw.pop("extends", None)
    _check_sections(path, raw)
    if base_name is None:
        return path, raw
    if not isinstance(base_name, str) or not base_name:
        raise ExperimentError(f"{path}: 'extends' must be the path of another experiment file, got {base_name!r}")
    base_path = path.parent / base_name
    if not base_path.is_file():
        raise ExperimentError(f"{path}: extends {base_name!r}: no such file ({base_path})")
    _, merged = _read_layers(base_path, chain + (here,))
    for section, value in raw.items():
        merged[section] = {**merged.get(section, {}), **value} if section in _KEYS else value
    return path, merged


def _check_sections(path, raw: dict) -> None:
    """Every section and key of one file known and of its type."""
    for section, value in raw.items():
        if section in _KEYS:
            keys, items = _KEYS[section], [value]
        elif section in _LISTS:
            keys, items = _LISTS[section], value
            if not isinstance(value, list) or not value:
                raise ExperimentError(f"{path}: '{section}' must be one or more [[{section}]] tables")
        else:
            raise ExperimentError(f"{path}: unknown section [{section}] "
                                  f"(known: {', '.join(list(_KEYS) + list(_LISTS))})")
        for item in items:
            if not isinstance(item, dict):
                raise ExperimentError(f"{path}: '{section}' must be a table")
            for k, v in item.items():
                if k not in keys:
                    raise ExperimentError(f"{path}: unknown key '{section}.{k}' (known: {', '.join(keys)})")
                if not isinstance(v, keys[k]) or isinstance(v, bool):
                    raise ExperimentError(f"{path}: '{section}.{k}' must be {keys[k].__name__}, got {v!r}")


def load_experiment(path) -> dict:
    """Read and check an experiment file (and the files it ``extends``); returns its sections with
    defaults filled in."""
    path, out = _read_layers(path)
    for section, keys in _KEYS.items():
        merged = dict(_DEFAULTS.get(section, {}))
        merged.update(out.get(section, {}))
        missing = [k for k in keys if k not in merged]
        if missing:
            raise ExperimentError(f"{path}: missing key(s) {', '.join(f'{section}.{k}' for k in missing)}")
        out[section] = merged
    for section in _LISTS:
        if section not in out:
            raise ExperimentError(f"{path}: no [[{section}]] table")
    for o in out["opponents"]:
        if o.get("kind") not in ("pool", "mcts") or "budget" not in o:
            raise ExperimentError(f"{path}: every [[opponents]] needs kind = 'pool' or 'mcts' and a budget")
    for g in out["games"]:
        if "spec" not in g:
            raise ExperimentError(f"{path}: every [[games]] needs a spec")
        try:
            g["spec"] = games.load(g["spec"]).spec
        except GameError as exc:
            raise ExperimentError(f"{path}: games.spec {g['spec']!r}: {exc}") from None
        given = [k for k in ("high", "low", "split_source") if k in g]
        if given and len(given) < 3:
            raise ExperimentError(f"{path}: games {g['spec']}: high, low and split_source go together "
                                  f"(a given split and where it comes from), got only {', '.join(given)}")
        for k in ("high", "low"):
            if k in g and (not g[k] or not all(isinstance(m, int) and not isinstance(m, bool) and m >= 0
                                                for m in g[k])):
                raise ExperimentError(f"{path}: games {g['spec']}: '{k}' must be a list of member "
                                      f"numbers, got {g[k]!r}")
    return out


def _restore(src: Path, run_dir: Path, path, echo) -> None:
    """Copy an exported run (``[[games]] from``) to ``run_dir``: under a temporary name, then
    renamed, so that an interrupted copy is never taken for a run."""
    if not layout.is_run(src):
        raise ExperimentError(f"{path}: games.from {str(src)!r} is not an exported run (no run.json there)")
    if run_dir.exists() and any(run_dir.iterdir()):
        raise ExperimentError(f"{run_dir}: not empty and not a run; move it aside to restore {src} there")
    tmp = run_dir.with_name(run_dir.name + ".restoring")
    if tmp.exists():
        shutil.rmtree(tmp)                 # a copy interrupted earlier
    shutil.copytree(src, tmp)
    if run_dir.exists():
        run_dir.rmdir()
    tmp.rename(run_dir)
    echo(f"[restore] {src} -> {run_dir}")


def run_experiment(path, runs: str | None = None, report: str | None = None, stages=("train", "rank",
                   "evaluate", "report"), echo=print, ray_address: str | None = None,
                   only_games: list[str] | None = None, ray_ship: bool = False,
                   ray_ship_replay: bool = False, warn=None) -> dict:
    """Run the stages of an experiment file (``only_games``: these game specs only; the report
    always covers every game of the file that has results). Every game's training is a
    ``descent.plan`` training plan, checked before any stage runs; ``warn``: where its notes go
    (default: stderr)."""
    exp = load_experiment(path)
    e, t, r, ev = exp["experiment"], exp["train"], exp["rank"], exp["evaluate"]
    runs_root = Path(runs or e["runs"])
    wanted = {_games.load(x).spec for x in only_games} if only_games else None
    if wanted and not wanted <= {g["spec"] for g in exp["games"]}:
        raise ExperimentError(f"{path}: no [[games]] entry for {', '.join(sorted(wanted))}")
    for g in exp["games"]:             # exported runs first: the plans read what is there
        run_dir = runs_root / layout.run_dir_name(g["spec"])
        if g.get("from") and (not wanted or g["spec"] in wanted) and not layout.is_run(run_dir):
            _restore(Path(g["from"]), run_dir, path, echo)
    plans = {g["spec"]: build_plan(g["spec"], config=g.get("config"), population=t["population"],
                                   budget=g.get("budget", t["budget"]),
                                   milestones=g.get("milestones", t["milestones"]), workers=t["workers"],
                                   seed=e["seed"], out=runs_root / layout.run_dir_name(g["spec"]),
                                   ray=ray_address, ray_ship=ray_ship, ray_ship_replay=ray_ship_replay,
                                   ranked=True, min_games=g.get("min_games", t.get("min_games")))
             for g in exp["games"] if not wanted or g["spec"] in wanted}
    dbs = []
    for g in exp["games"]:
        spec = g["spec"]
        run_dir = runs_root / layout.run_dir_name(spec)
        dbs.append(layout.results_db(run_dir))
        if spec not in plans:
            continue
        plan = plans[spec]
        for note in plan.notes:
            (warn or (lambda m: print(m, file=sys.stderr)))(note)
        if "train" in stages:
            if plan.trained():
                echo(f"[train] {spec}: every member has reached {', '.join(plan.milestone_names)}; "
                     f"nothing to train")
            else:
                echo(f"[train] {spec}: {plan.population} networks for {plan.budget_text} each in {run_dir}")
                plan.run()
        if layout.is_run(run_dir) and plan.record_milestones():
            echo(f"[train] {spec}: early and final checkpoints are now "
                 f"{' and '.join(plan.milestone_names[i] for i in (0, -1))}")
        if "rank" in stages and "high" in g:
            echo(f"[rank] {spec}: pools given, not ranked: high {g['high']}, low {g['low']} "
                 f"({g['split_source']})")
            given_pools(run_dir, spec, g["high"], g["low"], g["split_source"], early=r["early"] or None,
                        final=r["final"] or None, echo=echo)
            echo("\n".join(pools_summary(run_dir)))
        elif "rank" in stages:
            echo(f"[rank] {spec}: {r['agent']}, {r['games_per_pair']} games per pair, "
                 f"{r['opening_plies']} opening plies")
            rank(run_dir, spec, r["agent"], r["games_per_pair"], r["opening_plies"], e["workers"], e["seed"],
                 echo=echo, ray_address=plan.ray, early=r["early"] or None, final=r["final"] or None)
            echo("\n".join(pools_summary(run_dir)))
        if "evaluate" in stages:
            for o in exp["opponents"]:
                gpp = o.get("games_per_pair", 8)
                echo(f"[evaluate] {spec}: {', '.join(ev['algorithms'])} at {', '.join(ev['budgets'])} against "
                     f"{'the low pool' if o['kind'] == 'pool' else 'plain MCTS'} ({o['budget']}), "
                     f"{gpp} games per pair")
                evaluate(run_dir, spec, ev["algorithms"], ev["budgets"], o["kind"], o["budget"], gpp,
                         e["workers"], e["seed"], ray_address=plan.ray, opening_plies=ev["opening_plies"])
    rep = None
    if "report" in stages:
        have = [d for d in dbs if d.exists()]
        if not have:
            raise ExperimentError(f"{path}: no results database under {runs_root} yet")
        out = Path(report or e["report"])
        rep = make_report(have, out)
        echo(rep["table"])
        echo(f"[report] {out}/{layout.REPORT_TABLE}, {layout.REPORT_CSV} and {len(rep['figures'])} figure(s)")
    return {"experiment": exp, "report": rep}
