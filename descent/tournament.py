"""The Minibal paper's protocol (docs/ALGORITHMS.md section 6): rank a game's networks by a
round-robin tournament, split them into a high-level pool (final checkpoints) and a low-level pool
(reverted to their early checkpoints), then evaluate balancing algorithms with the high nets against
the low nets (or against plain MCTS).

Every match is a row in SQLite (``descent.results``) keyed by what it is; rerunning a stage skips the
keys already there, so a killed stage loses only the matches in progress.

Independent units. The searches are deterministic, so two games of the same network pair from the
same position are near-duplicates. Every pairing therefore plays ``games_per_pair`` games in seat
pairs: games 2j and 2j+1 start from the same seeded random opening j (``opening_plies`` uniformly
random plies, the same for both seats; the opening depends on the seed, the stage, the pair and j,
never on the algorithm or budget under test, so that algorithms are compared on the same openings).
The opening is recorded with each match, and the unit of independent information is the pair x
opening (``unit`` column); intervals (``descent.stats``) are computed over those units.

Milestones. The early and final checkpoints are the first and last milestones recorded in
``run.json`` (``milestones``); when the run record has none, those found in the members' directories
are used, with a note. A member that has not reached every milestone is left out and flagged.
"""
from __future__ import annotations

import json

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from games.errors import GameError
from search_ext.agents import parse_agent
from search_ext.engine_spec import is_engine_spec
from training import layout
from training.fileio import check_writable_dir, crash_point, write_json
from training.run import milestone_undertrained, read_milestone, read_run_record
from descent.budgets import parse_budget as _parse_budget
from descent.calibrate import find_calibration
from descent.equal_cpu import equal_cpu_budget, is_equal_cpu
from descent.match import make_opening, run_tasks
from descent.pools import read_pools
from descent.ratings import ELO, fit
from descent.results import ResultsDB
from descent.stats import MatchSummary, cluster_interval

DEFAULT_RANK_GAMES = 16        # games per pair in rank and in the early-versus-final check
DEFAULT_EVAL_GAMES = 8         # games per pair in evaluate
DEFAULT_OPENING_PLIES = 4
BOOTSTRAP = 400                # cluster-bootstrap resamples behind the confidence of the pool split


class ProtocolError(GameError):
    """A stage that cannot run: no networks, no pools yet, bad algorithm list."""


@dataclass(frozen=True)
class Net:
    member: int
    milestone: str
    seconds: float
    path: str
    games: int | None = None       # self-play games behind the checkpoint (from its metadata)
    examples: int | None = None    # training examples behind it (None: an older record)
    undertrained: bool | None = None   # fewer games than min_milestone_games (None: unknown)

    @property
    def label(self) -> str:
        return f"m{self.member:02d}@{self.milestone}"

    @property
    def untrained(self) -> bool:
        """A network that never saw a self-play game (its milestone came before the first)."""
        return self.games == 0

    def behind(self) -> str:
        """'N games, M examples' ('?' where an older record does not say)."""
        return (f"{'?' if self.games is None else self.games} games, "
                f"{'?' if self.examples is None else self.examples} examples")


def _run_record(run_dir: Path, game: str) -> dict:
    if not layout.is_run(run_dir):
        raise ProtocolError(f"{run_dir}: no training run here (run.json missing); train first with "
                            f"`descent train {game} --out {run_dir}`")
    rec = read_run_record(run_dir, ProtocolError)
    if rec.get("game") != game:
        raise ProtocolError(f"{run_dir}: a run of {rec.get('game')}, not of {game}")
    return rec


def find_nets(run_dir: Path, game: str) -> dict[int, list[Net]]:
    """Milestone checkpoints per member, sorted by training time."""
    run_dir = Path(run_dir)
    _run_record(run_dir, game)
    out: dict[int, list[Net]] = {}
    for mj in layout.milestone_records(run_dir):
        meta = read_milestone(mj, ProtocolError)
        weights = layout.weights_of_record(mj)
        if not weights.exists() or "member" not in meta or "milestone" not in meta:
            continue
        out.setdefault(meta["member"], []).append(
            Net(meta["member"], meta["milestone"], meta.get("milestone_seconds", 0.0), str(weights),
                meta.get("games"), meta.get("examples"), milestone_undertrained(meta)))
    for nets in out.values():
        nets.sort(key=lambda n: n.seconds)
    return dict(sorted(out.items()))


def _milestone_names(run_dir: Path, game: str, nets: dict[int, list[Net]], early: str | None,
                     final: str | None) -> tuple[list[str], str | None]:
    """The milestones a rank reads (the run's, or ``early`` and ``final`` of them) and a note when
    run.json records none (``select_members``)."""
    rec = _run_record(run_dir, game)
    note = None
    recorded = rec.get("milestones")
    if recorded:
        names = [m[0] if isinstance(m, (list, tuple)) else str(m) for m in recorded]
    else:
        seen: dict[str, float] = {}
        for ns in nets.values():
            for n in ns:
                seen[n.milestone] = max(seen.get(n.milestone, 0.0), n.seconds)
        names = sorted(seen, key=lambda x: seen[x])
        note = (f"{run_dir}/run.json records no milestones; using those found in the members: "
                f"{', '.join(names) or 'none'}")
    if early is not None or final is not None:
        chosen = [early or (names[0] if names else None), final or (names[-1] if names else None)]
        for opt, x in zip(("--early", "--final"), chosen):
            if x not in names:
                raise ProtocolError(f"{run_dir}: {opt} {x!r} is not a milestone of the run (it has "
                                    f"{', '.join(names) or 'none'})")
        if names.index(chosen[0]) > names.index(chosen[1]):
            raise ProtocolError(f"{run_dir}: --early {chosen[0]!r} must not come after --final {chosen[1]!r} "
                                f"(the run's milestones: {', '.join(names)})")
        names = [x for x in chosen if x is not None]      # all of them (checked above)
    return names, note


def select_members(run_dir: Path, game: str, allow_untrained: bool = False, early: str | None = None,
                   final: str | None = None) -> dict:
    """The early and final checkpoint of every member that reached all the run's milestones and
    whose final checkpoint saw at least one self-play game (unless ``allow_untrained``). ``early``
    and ``final`` name two of the run's milestones instead of its first and last (a run with
    milestones 10m,35m,120m ranks its 120m networks with the 35m ones as the low pool: 35:120 is
    the Minibal paper's 20:70); a member then needs only those two. ``ProtocolError`` when the run
    has no such milestone or ``early`` comes after ``final``; ``early`` equal to ``final`` keeps the
    low pool at its final networks (pools as close as the ranking alone makes them: the strength
    gap without the training time between the milestones).

    Returns ``{"milestones": [...], "early": {m: Net}, "final": {m: Net}, "excluded": [{member,
    has, missing}], "untrained": [{member, net, games, examples}], "undertrained": [{member, net,
    games, examples}], "note": str | None}``: ``untrained`` are the members left out because
    their final network never saw a game, ``undertrained`` the checkpoints kept that saw fewer
    games than ``min_milestone_games`` when they were written.
    """
    run_dir = Path(run_dir)
    nets = find_nets(run_dir, game)
    names, note = _milestone_names(run_dir, game, nets, early, final)
    early_nets: dict[int, Net] = {}
    final_nets: dict[int, Net] = {}
    excluded = []
    members = sorted(set(nets) | set(layout.member_dirs(run_dir)))
    for m in members:
        have = {n.milestone: n for n in nets.get(m, [])}
        missing = [x for x in names if x not in have]
        if missing or not names:
            excluded.append({"member": m, "has": sorted(have), "missing": missing})
            continue
        early_nets[m], final_nets[m] = have[names[0]], have[names[-1]]
    untrained, undertrained = [], []

    def row(m, n):
        return {"member": m, "net": n.label, "games": n.games, "examples": n.examples}
    for m in list(final_nets):
        if final_nets[m].untrained and not allow_untrained:
            untrained.append(row(m, final_nets[m]))
            del early_nets[m], final_nets[m]
            continue
        e, f = early_nets[m], final_nets[m]
        for n in (e, f) if e.path != f.path else (f,):
            if n.undertrained or n.untrained:
                undertrained.append(row(m, n))
    # a game longer than the gap between milestones writes both from the same training state
    same = [m for m, e in early_nets.items() if e.games is not None and e.games == final_nets[m].games
            and e.path != final_nets[m].path]
    return {"milestones": names, "early": early_nets, "final": final_nets, "excluded": excluded,
            "note": note, "same_state": same, "untrained": untrained, "undertrained": undertrained}


def _join(spec: str, extra: str) -> str:
    return spec + ("," if ":" in spec else ":") + extra if extra else spec


class _Openings:
    def __init__(self, game: str, plies: int, seed: int, stage: str):
        self.game, self.plies, self.seed, self.stage = game, plies, seed, stage
        self.cache: dict = {}

    def __call__(self, a: str, b: str, j: int) -> list[str]:
        k = (a, b, j)
        if k not in self.cache:
            self.cache[k] = (make_opening(self.game, self.plies, f"{self.seed}|{self.stage}|{a}|{b}|{j}")
                             if self.plies > 0 else [])
        return self.cache[k]


def store_matches(tasks, workers, desc, db, row_fn, progress=True, ray_address=None) -> int:
    """Play ``tasks`` (``descent.match.run_tasks``) and insert each finished match into ``db`` as
    ``row_fn(task, record)`` the moment it ends (an aborted one into its ``aborted`` table, never
    scored); a progress bar unless ``progress`` is False. Returns the matches stored."""
    done = 0
    with tqdm(total=len(tasks), desc=desc, unit="match", disable=not progress) as bar:
        for task, rec in run_tasks(tasks, workers, ray_address):
            if getattr(rec, "aborted", None):       # an outside engine failed: recorded, not scored
                db.insert_aborted(row_fn(task, rec), rec.aborted)
                tqdm.write(f"match {task['key']} aborted, not scored: {rec.aborted}")
                bar.update(1)
                continue
            db.insert(row_fn(task, rec))
            crash_point("match_stored")
            done += 1
            bar.update(1)
    return done


def match_row(task: dict, rec) -> dict:
    """The results row of a finished match task."""
    opening = task.get("opening") or []
    return {"match_key": task["key"], "stage": task["stage"], "game": task["game"],
            "algorithm": task.get("algorithm"), "budget": task.get("budget"),
            "agent_a": task["agent_a"], "agent_b": task["agent_b"], "net_a": task.get("net_a"),
            "net_b": task.get("net_b"), "a_first": int(rec.a_first), "moves": " ".join(rec.moves),
            "result": rec.result, "score": rec.score, "a_result": rec.a_result, "a_score": rec.a_score,
            "plies": rec.plies, "seconds_a": rec.seconds_a, "seconds_b": rec.seconds_b,
            "seed": task["seed"], "opponent": task.get("opponent"),
            "opponent_budget": task.get("opponent_budget"), "opening": " ".join(opening),
            "opening_index": task["index"] // 2,
            "unit": f"{task.get('net_a')}|{task.get('net_b')}|{' '.join(opening)}",
            "proofs": json.dumps(rec.proofs, sort_keys=True) if getattr(rec, "proofs", None) else None}


def unit_of(row: dict) -> str:
    """The independent unit of a match row (pair x opening; the pair for rows without one)."""
    return row.get("unit") or f"{row.get('net_a')}|{row.get('net_b')}|"


def _pair_tasks(stage, game, agent, a: Net, b: Net, games_per_pair, seed, opening_plies, openings,
                match_seed, have):
    tasks = []
    for k in range(games_per_pair):
        key = f"{stage}|{game}|{agent}|{a.label}|{b.label}|{k}|{seed}|op{opening_plies}"
        if key in have:
            continue
        tasks.append({"key": key, "stage": stage, "game": game,
                      "agent_a": _join(agent, f"net={a.path}"), "agent_b": _join(agent, f"net={b.path}"),
                      "net_a": a.label, "net_b": b.label, "index": k, "a_first": k % 2 == 0,
                      "seed": match_seed, "opening": openings(a.label, b.label, k // 2)})
    return tasks


# ---- rank ------------------------------------------------------------------------------------------

def _split_confidence(n: int, games: list, units: list, high_idx: list[int], low_idx: list[int],
                      seed: int, resamples: int = BOOTSTRAP) -> dict:
    """Cluster bootstrap of the Bradley-Terry fit: resample the independent units (pair x opening)
    with replacement, refit, and record the margin between the weakest high and the strongest low
    network (in Elo) and whether the same networks come out on top."""
    by_unit: dict = {}
    for gm, u in zip(games, units):
        by_unit.setdefault(u, []).append(gm)
    keys = sorted(by_unit)
    rng = np.random.default_rng(seed)
    margins, same = [], 0
    hs = set(high_idx)
    for _ in range(resamples):
        pick = rng.integers(0, len(keys), len(keys))
        sample = [gm for i in pick for gm in by_unit[keys[i]]]
        r, _ = fit(n, sample)
        margins.append(ELO * (min(r[i] for i in high_idx) - max(r[i] for i in low_idx)))
        top = set(np.argsort(-r)[: len(high_idx)].tolist())
        same += top == hs
    lo, hi = np.percentile(margins, [2.5, 97.5]) if margins else (float("nan"), float("nan"))
    return {"margin_low": float(lo), "margin_high": float(hi), "same_split": same / max(1, resamples),
            "resamples": resamples, "units": len(keys)}


def rank(run_dir, game: str, agent: str = "minimax:time=1,decision=safe",
         games_per_pair: int = DEFAULT_RANK_GAMES, opening_plies: int = DEFAULT_OPENING_PLIES,
         workers: int = 1, seed: int = 0, db_path=None, progress=True, echo=print,
         ray_address: str | None = None, allow_untrained: bool = False, early: str | None = None,
         final: str | None = None, pools_path=None) -> dict:
    """Round-robin among the final checkpoints; pools written to ``<run>/pools.json`` with the
    confidence of the split and the early-versus-final check of the low pool. A member whose final
    checkpoint never saw a self-play game is left out (``allow_untrained`` keeps it); checkpoints
    flagged undertrained are kept with a warning. ``early``/``final``: two milestones of the run
    instead of its first and last (``select_members``). ``db_path`` and ``pools_path``: another
    results database and pools file than the run's (a larger rank beside the run's own, which
    stays as it is)."""
    parse_agent(agent)
    run_dir = Path(run_dir)
    sel = select_members(run_dir, game, allow_untrained, early, final)
    for x in sel["untrained"]:
        echo(f"left out: member {x['member']}'s final checkpoint {x['net']} never saw a self-play "
             f"game (0 games, {x['examples'] if x['examples'] is not None else '?'} examples): an "
             f"untrained network; train longer, or rank it anyway with --allow-untrained")
    for x in sel["undertrained"]:
        echo(f"warning: {x['net']} was written after {x['games']} self-play game(s) "
             f"({'?' if x['examples'] is None else x['examples']} examples): undertrained")
    if sel["note"]:
        echo(f"note: {sel['note']}")
    for x in sel["excluded"]:
        echo(f"left out: member {x['member']} has not reached milestone(s) {', '.join(x['missing'])} "
             f"(has {', '.join(x['has']) or 'none'}); continue its training with `descent train`")
    for m in sel["same_state"]:
        echo(f"warning: member {m}'s {sel['early'][m].milestone} and {sel['final'][m].milestone} checkpoints "
             f"come from the same training state ({sel['early'][m].games} self-play game(s)): its early "
             f"checkpoint is not weaker")
    final_nets: dict[int, Net] = sel["final"]
    early_nets: dict[int, Net] = sel["early"]
    members = sorted(final_nets)
    if len(members) < 2:
        raise ProtocolError(f"{run_dir}: {len(members)} network(s) reached every milestone "
                            f"({', '.join(sel['milestones']) or 'none recorded'})"
                            + (f" with a trained final checkpoint ({len(sel['untrained'])} never "
                               f"saw a game)" if sel["untrained"] else "")
                            + "; ranking needs at least 2")
    pools_path = Path(pools_path or layout.pools_file(run_dir))
    db_path = Path(db_path or layout.results_db(run_dir))
    folders = {db_path.parent: "results folder", pools_path.parent: "pools folder"}   # one probe a folder
    for d, what in folders.items():
        check_writable_dir(d, ProtocolError, "run directory" if d == run_dir else what)   # before any match
    db = ResultsDB(db_path)
    have = db.keys("rank")
    openings = _Openings(game, opening_plies, seed, "rank")
    tasks = []
    for x in range(len(members)):
        for y in range(x + 1, len(members)):
            tasks += _pair_tasks("rank", game, agent, final_nets[members[x]], final_nets[members[y]], games_per_pair,
                                 seed, opening_plies, openings, seed * 7919 + x * 101 + y, have)
    if tasks:
        store_matches(tasks, workers, f"rank {game}", db, match_row, progress, ray_address)
    rows = [r for r in db.rows("rank", game) if r["match_key"].split("|")[2] == agent]
    idx = {final_nets[m].label: i for i, m in enumerate(members)}
    pair_games, units, points, played = [], [], [0.0] * len(members), [0] * len(members)
    for r in rows:
        if r["net_a"] not in idx or r["net_b"] not in idx:
            continue
        i, j = idx[r["net_a"]], idx[r["net_b"]]
        s = (r["a_result"] + 1) / 2.0
        pair_games.append((i, j, s))
        units.append(unit_of(r))
        points[i] += s
        points[j] += 1 - s
        played[i] += 1
        played[j] += 1
    ratings, radii = fit(len(members), pair_games)
    order = sorted(range(len(members)), key=lambda i: -ratings[i])
    table = [{"rank": k + 1, "member": members[i], "net": final_nets[members[i]].label,
              "trained_games": final_nets[members[i]].games,
              "trained_examples": final_nets[members[i]].examples,
              "score": points[i] / max(1, played[i]), "games": played[i],
              "elo": float(ELO * ratings[i]), "elo_radius": float(ELO * radii[i])}
             for k, i in enumerate(order)]
    n_high = (len(order) + 1) // 2
    high_idx, low_idx = order[:n_high], order[n_high:]
    high = [members[i] for i in high_idx]
    low = [members[i] for i in low_idx]
    split = _split_confidence(len(members), pair_games, units, high_idx, low_idx, seed)
    # the high pool's gain against the low pool in the round robin, over its independent units
    cross_b, cross_u = [], []
    for (i, j, s), u in zip(pair_games, units):
        if (i in high_idx) != (j in high_idx):
            cross_b.append(2 * s - 1 if i in high_idx else 1 - 2 * s)
            cross_u.append(u)
    cross = cluster_interval(cross_b, cross_u)
    split.update({"high_vs_low_gain": cross.mean, "high_vs_low_low": cross.low,
                  "high_vs_low_high": cross.high, "high_vs_low_games": cross.games,
                  "high_vs_low_units": cross.units, "separated": bool(split["margin_low"] > 0)})
    pools = {"game": game, "agent": agent, "games_per_pair": games_per_pair, "opening_plies": opening_plies,
             "seed": seed, "milestones": sel["milestones"], "excluded": sel["excluded"],
             "same_state": sel["same_state"], "untrained": sel["untrained"],
             "undertrained": sel["undertrained"],
             "ranking": table, "split": split,
             "high": [{"member": m, "net": final_nets[m].label, "path": final_nets[m].path} for m in high],
             "low": [{"member": m, "net": early_nets[m].label, "path": early_nets[m].path,
                      "final": final_nets[m].label} for m in low]}
    # verify that the early checkpoints of the low pool are weaker than their final versions
    have = db.keys("early_vs_final")
    openings = _Openings(game, opening_plies, seed, "early_vs_final")
    tasks = []
    for m in low:
        e, f = early_nets[m], final_nets[m]
        if e.path == f.path:
            continue
        tasks += _pair_tasks("early_vs_final", game, agent, e, f, games_per_pair, seed, opening_plies,
                             openings, seed * 7919 + 50_000 + m, have)
    if tasks:
        store_matches(tasks, workers, f"early vs final {game}", db, match_row, progress, ray_address)
    checks = []
    for m in low:
        rs = [r for r in db.rows("early_vs_final", game) if r["net_a"] == early_nets[m].label
              and r["net_b"] == final_nets[m].label and r["match_key"].split("|")[2] == agent]
        if not rs:
            continue
        s = MatchSummary.from_results([r["a_result"] for r in rs], [r["a_score"] for r in rs],
                                      [unit_of(r) for r in rs])
        ci = s.gain_ci
        assert ci is not None               # from_results always sets it
        side = ci.separated_from(0.0)
        checks.append({"member": m, "early": early_nets[m].label, "final": final_nets[m].label, "games": s.games,
                       "units": ci.units, "early_gain": s.gain, "early_gain_low": ci.low,
                       "early_gain_high": ci.high, "early_gain_radius": s.gain_radius,
                       "early_weaker": side < 0,
                       "verdict": {-1: "weaker", 1: "stronger", 0: "not separated"}[side]})
    pools["early_vs_final"] = checks
    db.close()
    write_json(pools_path, pools)
    return pools


def given_pools(run_dir, game: str, high: list[int], low: list[int], source: str, early: str | None = None,
                final: str | None = None, echo=print) -> dict:
    """Pools given instead of ranked: the ``high`` members' final checkpoints against the ``low``
    members' early ones, no game played; ``source`` says where the split comes from (an earlier
    rank whose networks are not all kept: an exported run holds only the checkpoints its pools use).
    Written to ``<run>/pools.json`` like a rank's, with ``given`` in place of the ranking, so every
    stage that reads pools reads it. ``ProtocolError`` for an empty or overlapping split, a member
    the run does not have, or a checkpoint it lacks; nothing is written then."""
    run_dir = Path(run_dir)
    high, low = [int(m) for m in high], [int(m) for m in low]
    if not high or not low:
        raise ProtocolError(f"{run_dir}: a given split needs at least one high and one low member "
                            f"(high {high or 'none'}, low {low or 'none'})")
    both = sorted(set(high) & set(low))
    if both or len(set(high)) < len(high) or len(set(low)) < len(low):
        raise ProtocolError(f"{run_dir}: a given split names a member twice "
                            f"({', '.join(str(m) for m in both) or 'within one pool'})")
    if not source.strip():
        raise ProtocolError(f"{run_dir}: a given split needs its source (where the split comes from)")
    nets = find_nets(run_dir, game)
    names, note = _milestone_names(run_dir, game, nets, early, final)
    if not names:
        raise ProtocolError(f"{run_dir}: no milestone checkpoints; train the run first")
    members = sorted(set(nets) | set(layout.member_dirs(run_dir)))
    chosen: dict[int, Net] = {}
    for pool, ms, milestone in (("high", high, names[-1]), ("low", low, names[0])):
        for m in ms:
            if m not in members:
                raise ProtocolError(f"{run_dir}: the given {pool} pool names member {m}; the run has "
                                    f"members {', '.join(str(x) for x in members) or 'none'}")
            have = {n.milestone: n for n in nets.get(m, [])}
            if milestone not in have:
                raise ProtocolError(f"{run_dir}: the given {pool} pool needs member {m}'s {milestone} "
                                    f"checkpoint; it has {', '.join(sorted(have)) or 'none'}")
            chosen[m] = have[milestone]
    if note:
        echo(f"note: {note}")
    check_writable_dir(run_dir, ProtocolError, "run directory")
    pools = {"game": game, "agent": None, "games_per_pair": 0, "opening_plies": 0, "seed": None,
             "milestones": names, "excluded": [], "same_state": [], "untrained": [], "undertrained": [],
             "ranking": [], "split": None, "given": {"source": source.strip()},
             "high": [{"member": m, "net": chosen[m].label, "path": chosen[m].path} for m in high],
             "low": [{"member": m, "net": chosen[m].label, "path": chosen[m].path,
                      "final": Net(m, names[-1], 0.0, "").label} for m in low],
             "early_vs_final": []}
    write_json(layout.pools_file(run_dir), pools)
    return pools


# ---- evaluate --------------------------------------------------------------------------------------

def parse_budget(text: str) -> str:
    """'0.5' or 'time=0.5' -> 'time=0.5'; 'iterations=50' stays (``ProtocolError`` otherwise)."""
    return _parse_budget(text, ProtocolError)


def _calibrated_plan(run_dir, game: str, alg: str, opponent: str):
    """``ALGORITHM:calibrated`` -> (ALGORITHM, [its calibrated budget]) from ``descent calibrate``'s
    results in the run (issue 15); None for any other algorithm."""
    base, _, opt = alg.partition(":")
    if opt.strip() != "calibrated":
        return None
    cal = find_calibration(game, base, run_dir=run_dir, prefer_against="pool" if opponent == "pool" else "mcts")
    if cal is None:
        raise ProtocolError(f"{alg}: no calibration of {base} for {game} in {Path(run_dir) / 'calibrations'}; "
                            f"run `descent calibrate {game} --algorithm {base} --run {run_dir}` first")
    return base, [f"{cal['unit']}={cal['budget']}"]


def evaluate(run_dir, game: str, algorithms: list[str], budgets: list[str], opponent: str = "pool",
             opponent_budget: str = "time=1", games_per_pair: int = DEFAULT_EVAL_GAMES, workers: int = 1,
             seed: int = 0, db_path=None, progress=True, ray_address: str | None = None,
             opening_plies: int = DEFAULT_OPENING_PLIES) -> int:
    """Every high net playing each algorithm at each budget against every low net (Unbounded
    Minimax at ``opponent_budget``) or plain MCTS, ``games_per_pair`` games per pairing (seat pairs
    sharing a random opening). Returns the number of matches run."""
    run_dir = Path(run_dir)
    pools_path = layout.pools_file(run_dir)
    pools = read_pools(run_dir, game, ProtocolError)
    for p in pools["high"] + pools["low"]:
        if not Path(p["path"]).exists():
            raise ProtocolError(f"{pools_path}: checkpoint {p['path']} of {p['net']} is missing; "
                                f"rerun `descent rank {game} --run {run_dir}`")
    budgets = [parse_budget(b) for b in budgets]
    opp_label = None               # equal-cpu=SPEC: plain MCTS at the iterations measured for SPEC's CPU
    if opponent == "mcts" and is_equal_cpu(opponent_budget):
        opp_label = opponent_budget.strip()
        opp_budget, _ = equal_cpu_budget(run_dir, game, opp_label, [h["path"] for h in pools["high"]], seed,
                                         echo=tqdm.write, error=ProtocolError)
    else:
        opp_budget = parse_budget(opponent_budget)
    plan = {alg: _calibrated_plan(run_dir, game, alg, opponent) or (alg, budgets) for alg in algorithms}
    for spec, alg_budgets in plan.values():
        parse_agent(_join(spec, alg_budgets[0]))
    engine = is_engine_spec(opponent)
    if engine:
        kind, eopts = parse_agent(opponent)     # an outside engine, with its own budget
        opp_budget = opponent.partition(",")[2] or "movetime=1"
        engine_label = f"{kind}-{Path(eopts['command'][0]).name}"
    elif opponent not in ("pool", "mcts"):
        raise ProtocolError(f"opponent {opponent!r}: expected pool, mcts or an engine (uci:COMMAND,... "
                            f"or gtp:COMMAND,...)")
    db_path = Path(db_path or layout.results_db(run_dir))
    check_writable_dir(db_path.parent, ProtocolError, "run directory")   # before any match
    db = ResultsDB(db_path)
    have = db.keys("evaluate")
    opponents = ([(o["net"], _join(f"minimax:{opp_budget}", f"net={o['path']}")) for o in pools["low"]]
                 if opponent == "pool" else [(engine_label, opponent)] if engine
                 else [("mcts", f"mcts:{opp_budget}")])
    openings = _Openings(game, opening_plies, seed, "evaluate")
    tasks = []
    for alg in algorithms:
        spec, alg_budgets = plan[alg]
        for budget in alg_budgets:
            for h in pools["high"]:
                a_spec = _join(_join(spec, budget), f"net={h['path']}")
                for o_label, o_spec in opponents:
                    for k in range(games_per_pair):
                        key = (f"evaluate|{game}|{alg}|{budget}|{h['net']}|{o_label}|"
                               f"{opp_budget if opp_label is None else f'{opp_label}->{opp_budget}'}|{k}|"
                               f"{seed}|{opponent}|op{opening_plies}")
                        if key in have:
                            continue
                        tasks.append({"key": key, "stage": "evaluate", "game": game, "algorithm": alg,
                                      "budget": budget, "agent_a": a_spec, "agent_b": o_spec,
                                      "net_a": h["net"], "net_b": o_label, "index": k,
                                      "a_first": k % 2 == 0, "seed": seed * 7919 + k + 1,
                                      "opponent": engine_label if engine else opponent,
                                      "opponent_budget": opp_label or opp_budget,
                                      "opening": openings(h["net"], o_label, k // 2)})
    n = store_matches(tasks, workers, f"evaluate {game}", db, match_row, progress, ray_address) if tasks else 0
    db.close()
    return n
