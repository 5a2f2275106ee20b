"""The Minibal paper's protocol (docs/ALGORITHMS.md section 6): rank a game's networks by a
round-robin tournament, split them into a high-level pool (final checkpoints) and a low-level pool
(reverted to their early checkpoints), then evaluate balancing algorithms with the high nets against
the low nets (or against plain MCTS).

Every match is a row in SQLite (``descent.results``) keyed by what it is; rerunning a stage skips the
keys already there, so a killed stage loses only the matches in progress.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from games import validate as v
from games.errors import GameError
from descent.match import run_tasks
from descent.ratings import ELO, fit
from descent.results import ResultsDB
from descent.stats import MatchSummary


class ProtocolError(GameError):
    """A stage that cannot run: no networks, no pools yet, bad algorithm list."""


@dataclass(frozen=True)
class Net:
    member: int
    milestone: str
    seconds: float
    path: str

    @property
    def label(self) -> str:
        return f"m{self.member:02d}@{self.milestone}"


_POOL_NET = v.Record({"net": v.Str(256, empty=False), "path": v.Str(4096, empty=False)})
POOLS = v.Record({"game": v.Str(256, empty=False), "high": v.List(_POOL_NET, 1),
                  "low": v.List(_POOL_NET, 1)})   # what evaluate reads of pools.json (games.validate)


def find_nets(run_dir: Path, game: str) -> dict[int, list[Net]]:
    """Milestone checkpoints per member, sorted by training time."""
    run_dir = Path(run_dir)
    rec_path = run_dir / "run.json"
    if not rec_path.exists():
        raise ProtocolError(f"{run_dir}: no training run here (run.json missing); train first with "
                            f"`descent train {game} --out {run_dir}`")
    from training.run import read_milestone, read_run_record
    rec = read_run_record(run_dir, ProtocolError)
    if rec.get("game") != game:
        raise ProtocolError(f"{run_dir}: a run of {rec.get('game')}, not of {game}")
    out: dict[int, list[Net]] = {}
    for mj in run_dir.glob("member_*/milestone_*.json"):
        meta = read_milestone(mj, ProtocolError)
        weights = mj.with_suffix(".weights.h5")
        if not weights.exists():
            continue
        out.setdefault(meta["member"], []).append(
            Net(meta["member"], meta["milestone"], meta.get("milestone_seconds", 0.0), str(weights)))
    for nets in out.values():
        nets.sort(key=lambda n: n.seconds)
    return dict(sorted(out.items()))


def _join(spec: str, extra: str) -> str:
    return spec + ("," if ":" in spec else ":") + extra if extra else spec


def _progress(tasks, workers, desc, db, row_fn, progress=True, ray_address=None):
    from tqdm import tqdm
    done = 0
    with tqdm(total=len(tasks), desc=desc, unit="match", disable=not progress) as bar:
        for task, rec in run_tasks(tasks, workers, ray_address):
            db.insert(row_fn(task, rec))
            done += 1
            bar.update(1)
    return done


def _row(task: dict, rec) -> dict:
    return {"match_key": task["key"], "stage": task["stage"], "game": task["game"],
            "algorithm": task.get("algorithm"), "budget": task.get("budget"),
            "agent_a": task["agent_a"], "agent_b": task["agent_b"], "net_a": task.get("net_a"),
            "net_b": task.get("net_b"), "a_first": int(rec.a_first), "moves": " ".join(rec.moves),
            "result": rec.result, "score": rec.score, "a_result": rec.a_result, "a_score": rec.a_score,
            "plies": rec.plies, "seconds_a": rec.seconds_a, "seconds_b": rec.seconds_b,
            "seed": task["seed"]}


# ---- rank ------------------------------------------------------------------------------------------

def rank(run_dir, game: str, agent: str = "minimax:time=1,decision=safe", games_per_pair: int = 2,
         opening_plies: int = 0, workers: int = 1, seed: int = 0, db_path=None, progress=True,
         echo=print, ray_address: str | None = None) -> dict:
    """Round-robin among the final checkpoints; pools written to ``<run>/pools.json``."""
    from search_ext.agents import parse_agent
    from training.network import write_json
    parse_agent(agent)
    run_dir = Path(run_dir)
    nets = find_nets(run_dir, game)
    members = [m for m, ns in nets.items() if ns]
    if len(members) < 2:
        raise ProtocolError(f"{run_dir}: {len(members)} trained network(s); ranking needs at least 2")
    final = {m: nets[m][-1] for m in members}
    early = {m: nets[m][0] for m in members}
    db = ResultsDB(db_path or run_dir / "results.db")
    have = db.keys("rank")
    tasks = []
    for x in range(len(members)):
        for y in range(x + 1, len(members)):
            a, b = final[members[x]], final[members[y]]
            for k in range(games_per_pair):
                key = f"rank|{game}|{agent}|{a.label}|{b.label}|{k}|{seed}|{opening_plies}"
                if key in have:
                    continue
                tasks.append({"key": key, "stage": "rank", "game": game,
                              "agent_a": _join(agent, f"net={a.path}"), "agent_b": _join(agent, f"net={b.path}"),
                              "net_a": a.label, "net_b": b.label, "index": k, "a_first": k % 2 == 0,
                              "seed": seed * 7919 + x * 101 + y, "opening_plies": opening_plies})
    if tasks:
        _progress(tasks, workers, f"rank {game}", db, _row, progress, ray_address)
    rows = [r for r in db.rows("rank", game) if r["match_key"].split("|")[2] == agent]
    idx = {final[m].label: i for i, m in enumerate(members)}
    pair_games, points, played = [], [0.0] * len(members), [0] * len(members)
    for r in rows:
        if r["net_a"] not in idx or r["net_b"] not in idx:
            continue
        i, j = idx[r["net_a"]], idx[r["net_b"]]
        s = (r["a_result"] + 1) / 2.0
        pair_games.append((i, j, s))
        points[i] += s
        points[j] += 1 - s
        played[i] += 1
        played[j] += 1
    ratings, radii = fit(len(members), pair_games)
    order = sorted(range(len(members)), key=lambda i: -ratings[i])
    table = [{"rank": k + 1, "member": members[i], "net": final[members[i]].label,
              "score": points[i] / max(1, played[i]), "games": played[i],
              "elo": float(ELO * ratings[i]), "elo_radius": float(ELO * radii[i])}
             for k, i in enumerate(order)]
    half = len(order) // 2
    high = [members[i] for i in order[: len(order) - half]] if len(order) % 2 else \
        [members[i] for i in order[:half]]
    low = [m for m in members if m not in high]
    pools = {"game": game, "agent": agent, "games_per_pair": games_per_pair, "seed": seed,
             "ranking": table,
             "high": [{"member": m, "net": final[m].label, "path": final[m].path} for m in high],
             "low": [{"member": m, "net": early[m].label, "path": early[m].path,
                      "final": final[m].label} for m in low]}
    # verify that the early checkpoints of the low pool are weaker than their final versions
    have = db.keys("early_vs_final")
    tasks = []
    for m in low:
        e, f = early[m], final[m]
        if e.path == f.path:
            continue
        for k in range(games_per_pair):
            key = f"early_vs_final|{game}|{agent}|{e.label}|{f.label}|{k}|{seed}|{opening_plies}"
            if key in have:
                continue
            tasks.append({"key": key, "stage": "early_vs_final", "game": game,
                          "agent_a": _join(agent, f"net={e.path}"), "agent_b": _join(agent, f"net={f.path}"),
                          "net_a": e.label, "net_b": f.label, "index": k, "a_first": k % 2 == 0,
                          "seed": seed * 7919 + 50_000 + m, "opening_plies": opening_plies})
    if tasks:
        _progress(tasks, workers, f"early vs final {game}", db, _row, progress, ray_address)
    checks = []
    for m in low:
        rs = [r for r in db.rows("early_vs_final", game) if r["net_a"] == early[m].label
              and r["net_b"] == final[m].label and r["match_key"].split("|")[2] == agent]
        if not rs:
            continue
        s = MatchSummary.from_results([r["a_result"] for r in rs], [r["a_score"] for r in rs])
        checks.append({"member": m, "early": early[m].label, "final": final[m].label, "games": s.games,
                       "early_gain": s.gain, "early_gain_radius": s.gain_radius,
                       "early_weaker": s.gain < 0})
    pools["early_vs_final"] = checks
    db.close()
    write_json(run_dir / "pools.json", pools)
    return pools


# ---- evaluate --------------------------------------------------------------------------------------

def parse_budget(text: str) -> str:
    """'0.5' or 'time=0.5' -> 'time=0.5'; 'iterations=50' stays."""
    t = v.text(text, "budget", ProtocolError, max_len=64).strip()
    k, eq, x = t.partition("=")
    if not eq:
        k, x = "time", t
    if k == "time":
        v.parse_real(x, f"budget {text!r}", 0.0, v.MAX_SECONDS, ProtocolError, lo_open=True)
    elif k == "iterations":
        v.parse_int(x, f"budget {text!r}", 1, v.MAX_COUNT, ProtocolError)
    else:
        raise ProtocolError(f"budget {text!r}: expected time=SECONDS or iterations=N")
    return f"{k}={x.strip()}"


def evaluate(run_dir, game: str, algorithms: list[str], budgets: list[str], opponent: str = "pool",
             opponent_budget: str = "time=1", games_per_pair: int = 2, workers: int = 1, seed: int = 0,
             db_path=None, progress=True, ray_address: str | None = None) -> int:
    """Every high net playing each algorithm at each budget against every low net (Unbounded
    Minimax at ``opponent_budget``) or plain MCTS, both seats. Returns the number of matches run."""
    from search_ext.agents import parse_agent
    run_dir = Path(run_dir)
    pools_path = run_dir / "pools.json"
    if not pools_path.exists():
        raise ProtocolError(f"{run_dir}: no pools yet (pools.json missing); run `descent rank {game} "
                            f"--run {run_dir}` first")
    pools = v.load_json(pools_path, POOLS, ProtocolError, f"pools file {pools_path}")
    if pools.get("game") != game:
        raise ProtocolError(f"{pools_path}: pools of {pools.get('game')}, not of {game}")
    budgets = [parse_budget(b) for b in budgets]
    opp_budget = parse_budget(opponent_budget)
    for alg in algorithms:
        parse_agent(_join(alg, budgets[0]))
    if opponent not in ("pool", "mcts"):
        raise ProtocolError(f"opponent {opponent!r}: expected pool or mcts")
    db = ResultsDB(db_path or run_dir / "results.db")
    have = db.keys("evaluate")
    opponents = ([(o["net"], _join(f"minimax:{opp_budget}", f"net={o['path']}")) for o in pools["low"]]
                 if opponent == "pool" else [("mcts", f"mcts:{opp_budget}")])
    tasks = []
    for alg in algorithms:
        for budget in budgets:
            for h in pools["high"]:
                a_spec = _join(_join(alg, budget), f"net={h['path']}")
                for o_label, o_spec in opponents:
                    for k in range(games_per_pair):
                        key = (f"evaluate|{game}|{alg}|{budget}|{h['net']}|{o_label}|{opp_budget}|{k}|"
                               f"{seed}")
                        if key in have:
                            continue
                        tasks.append({"key": key, "stage": "evaluate", "game": game, "algorithm": alg,
                                      "budget": budget, "agent_a": a_spec, "agent_b": o_spec,
                                      "net_a": h["net"], "net_b": o_label, "index": k,
                                      "a_first": k % 2 == 0, "seed": seed * 7919 + k + 1})
    n = _progress(tasks, workers, f"evaluate {game}", db, _row, progress, ray_address) if tasks else 0
    db.close()
    return n
