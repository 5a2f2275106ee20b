"""Ranking, balancing evaluation, results database and reports (the Minibal protocol).

Values, not only counts: interval coverage on simulated clustered data, extreme cells, Bradley-Terry
recovery and the pool split on synthetic results with known strengths, openings shared by both
seats, the report's grouping by experiment, schema migration, milestone selection.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from descent.ratings import fit
from descent.stats import MatchSummary, average_intervals, cluster_interval, mean_ci

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")


def descent(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout)


# ---- statistics ------------------------------------------------------------------------------------

def _clustered(rng, n_units, per_unit, sd, base):
    """Games in {-1, 0, 1} whose win probability shifts by a random effect shared within a unit."""
    eff = rng.normal(0.0, sd, n_units)
    vals, units = [], []
    for g in range(n_units):
        p = 1.0 / (1.0 + np.exp(-(base + eff[g])))
        u = rng.random(per_unit)
        vals += list(np.where(u < 0.9 * p, 1, np.where(u < 0.9 * p + 0.1, 0, -1)))
        units += [g] * per_unit
    return vals, units


def _true_gain(sd, base):
    e = np.random.default_rng(99).normal(0.0, sd, 400_000)
    p = 1.0 / (1.0 + np.exp(-(base + e)))
    return float(np.mean(0.9 * p - (1 - 0.9 * p - 0.1)))


@pytest.mark.parametrize("n_units,per_unit,sd,base", [(16, 4, 1.5, 0.5), (8, 8, 2.0, 1.0), (32, 2, 1.0, 0.0)])
def test_cluster_intervals_cover_the_truth_at_the_nominal_rate(n_units, per_unit, sd, base):
    rng = np.random.default_rng(n_units * 1000 + per_unit)
    truth = _true_gain(sd, base)
    reps, hit, hit_naive = 600, 0, 0
    for _ in range(reps):
        vals, units = _clustered(rng, n_units, per_unit, sd, base)
        iv = cluster_interval(vals, units)
        hit += iv.low <= truth <= iv.high
        naive = cluster_interval(vals)             # every game its own unit
        hit_naive += naive.low <= truth <= naive.high
        assert -1.0 <= iv.low <= iv.mean <= iv.high <= 1.0
        assert iv.units == n_units and iv.games == n_units * per_unit
    assert 0.92 <= hit / reps <= 0.99, hit / reps
    if per_unit >= 4:
        # treating clustered games as independent under-covers: the reason for clusters
        assert hit_naive / reps < 0.90


def test_score_intervals_cover_continuous_clustered_data():
    """Scores (f_t) are continuous and much less variable than win/loss: the t interval on units."""
    rng = np.random.default_rng(7)
    hit, reps = 0, 500
    for _ in range(reps):
        eff = rng.normal(0.0, 0.05, 12)
        vals = np.clip(-0.1 + np.repeat(eff, 4) + rng.normal(0.0, 0.03, 48), -1, 1)
        iv = cluster_interval(vals, np.repeat(np.arange(12), 4), method="t")
        hit += iv.low <= -0.1 <= iv.high
        assert iv.radius < 0.1                      # not the width of a win/loss interval
    assert 0.92 <= hit / reps <= 0.99, hit / reps
    same = cluster_interval([-0.2] * 8, [0, 0, 1, 1, 2, 2, 3, 3], method="t")
    assert same.low < -0.2 < same.high and -1.0 <= same.low


@pytest.mark.parametrize("seed", range(6))
def test_intervals_come_back_from_their_bounds(seed):
    """``interval_from_bounds`` inverts ``cluster_interval``: the variance, effective observations and
    degrees of freedom an average over games needs, from an older report's mean, bounds, games and
    units (exact unless the interval was capped at one observation per game)."""
    from descent.stats import interval_from_bounds
    rng = np.random.default_rng(seed)
    units = [i // 4 for i in range(int(rng.integers(16, 200)))]
    bias = rng.normal(0, 0.6, size=len(set(units)))
    b = [int(np.sign(rng.normal(bias[u], 1.0))) if rng.random() > 0.2 else 0 for u in units]
    sc = np.clip([0.3 * x + rng.normal(bias[u] * 0.2, 0.1) for x, u in zip(b, units)], -1, 1)
    for x, method in ((cluster_interval(b, units), "wilson"), (cluster_interval(sc, units, method="t"), "t")):
        back = interval_from_bounds(x.mean, x.low, x.high, x.games, x.units, method=method)
        assert back.df == x.df and back.units == x.units
        assert back.var == pytest.approx(x.var, rel=1e-6) and back.n_eff == pytest.approx(x.n_eff, rel=1e-6)
    allwin = cluster_interval([1] * 64, [i // 4 for i in range(64)])
    back = interval_from_bounds(allwin.mean, allwin.low, allwin.high, 64, 16)
    assert (back.var, back.n_eff) == (0.0, 16.0)


def test_draws_are_not_capped_at_one_observation_per_game():
    """A cell rich in draws varies less than that many win/loss trials: its effective number of
    observations exceeds its games, its interval is as narrow as its variance says, and it still
    covers the truth at the nominal rate."""
    rng = np.random.default_rng(11)
    hit, reps, wider = 0, 500, 0
    for _ in range(reps):
        eff = rng.normal(0.0, 0.05, 64)                   # 64 units of 2 games, 80% draws
        u = rng.random(128)
        pw = 0.1 + np.repeat(eff, 2)
        vals = np.where(u < 0.8, 0, np.where(u < 0.8 + pw, 1, -1))
        iv = cluster_interval(vals, np.repeat(np.arange(64), 2))
        hit += iv.low <= 0.0 <= iv.high                  # the truth: wins and losses equally likely
        wider += iv.n_eff > iv.games
    assert 0.92 <= hit / reps <= 0.99, hit / reps
    assert wider / reps > 0.9
    # 78% draws: narrower than the Wilson interval of one observation per game (the old cap)
    from descent.stats import _critical, _wilson
    cell = cluster_interval([0] * 200 + [1] * 20 + [-1] * 36, [i // 2 for i in range(256)])
    a, b = _wilson((cell.mean + 1) / 2, 256, _critical(0.95, cell.df))
    assert cell.n_eff > 256 and cell.high - cell.low < 0.7 * 2 * (b - a)


def _pools(rng, n_high, n_low, openings, sd_net, base=0.0):
    """Games between pools: every high network and every low network has an effect of its own."""
    eh, el = rng.normal(0, sd_net, n_high), rng.normal(0, sd_net, n_low)
    vals, units, high, low = [], [], [], []
    for h in range(n_high):
        for o in range(n_low):
            for k in range(openings):
                pk = 1.0 / (1.0 + np.exp(-(base + eh[h] - el[o] + rng.normal(0, 0.5))))
                for _ in range(2):
                    vals.append(1 if rng.random() < pk else -1)
                    units.append(f"{h}|{o}|{k}")
                    high.append(f"h{h}")
                    low.append(f"l{o}")
    return vals, units, high, low


def test_network_intervals_generalise_to_pools_of_networks():
    """The pair x opening interval describes these networks; the network interval covers the mean
    over pools of such networks at about the nominal rate, where the former does not."""
    from descent.stats import network_interval
    rng = np.random.default_rng(12)
    truth_rng = np.random.default_rng(13)
    eh, el = truth_rng.normal(0, 1.0, 200_000), truth_rng.normal(0, 1.0, 200_000)
    e = truth_rng.normal(0, 0.5, 200_000)
    truth = float(np.mean(2.0 / (1.0 + np.exp(-(eh - el + e))) - 1.0))
    reps, hit, hit_units = 300, 0, 0
    for _ in range(reps):
        vals, units, high, low = _pools(rng, 6, 6, 4, 1.0)
        iv = network_interval(vals, units, high, low)
        hit += iv.low <= truth <= iv.high
        hit_units += cluster_interval(vals, units).low <= truth <= cluster_interval(vals, units).high
        assert iv.units == 36 and iv.df == 5
    assert 0.90 <= hit / reps <= 1.0, hit / reps
    assert hit_units / reps < 0.75, hit_units / reps
    # two networks a pool: one degree of freedom, and an interval that says so
    vals, units, high, low = _pools(np.random.default_rng(1), 2, 2, 16, 1.0)
    two = network_interval(vals, units, high, low)
    assert two.df == 1 and two.radius > cluster_interval(vals, units).radius
    # one opponent (MCTS): clustered by the high networks alone
    vals, units, high, _ = _pools(np.random.default_rng(2), 4, 1, 16, 1.0)
    one = network_interval(vals, units, high, [""] * len(vals))
    assert one.df == 3


def test_extreme_cells_get_sensible_intervals():
    one = cluster_interval([1])
    assert one.mean == 1.0 and one.high == 1.0 and -0.7 < one.low < -0.5     # Wilson, n = 1
    allwin = cluster_interval([1] * 64, [i // 4 for i in range(64)])
    assert allwin.units == 16 and allwin.high == 1.0 and 0.4 < allwin.low < 0.7
    # more independent units, narrower interval; the same games in fewer units, wider
    more = cluster_interval([1] * 64)
    assert allwin.low < more.low < 1.0
    allloss = cluster_interval([-1] * 10, [0] * 10)                           # one unit only
    assert allloss.high > -1.0 + 0.5 and allloss.low == -1.0
    # seat pairs that split win/loss every time: a balanced cell, never a degenerate radius
    split = cluster_interval([1, -1] * 8, [i // 2 for i in range(16)])
    assert split.mean == 0.0 and 0.0 < split.radius < 0.6
    s = MatchSummary.from_results([1, 1, 0, -1, 1], [0.5, 0.7, 0.0, -0.4, 0.9])
    assert (s.games, s.wins, s.draws, s.losses) == (5, 3, 1, 1)
    assert s.gain == pytest.approx(0.4) and s.score == pytest.approx(0.34)
    assert s.gain_ci.low < 0.4 < s.gain_ci.high and s.gain_radius == pytest.approx(s.gain_ci.radius)
    m, r = mean_ci([1, -1, 0, 1])
    assert m == pytest.approx(0.25) and r == pytest.approx(1.959964 * np.sqrt(0.9166667 / 4), rel=1e-5)


def test_average_over_games_narrows_and_stays_in_bounds():
    rng = np.random.default_rng(5)
    parts = [cluster_interval(*_clustered(rng, 16, 4, 1.0, b)) for b in (0.0, 0.5, 1.0)]
    avg = average_intervals(parts)
    assert avg.mean == pytest.approx(np.mean([p.mean for p in parts]))
    assert avg.radius < min(p.radius for p in parts)
    assert avg.units == 48 and avg.games == 192
    top = average_intervals([cluster_interval([1] * 8, [0, 0, 1, 1, 2, 2, 3, 3])] * 2)
    assert top.high == 1.0 and top.low < 1.0


def test_bradley_terry_recovers_the_true_order():
    rng = np.random.default_rng(3)
    true = np.array([0.9, -1.2, 0.1, 1.6, -0.5, 0.4])
    games = []
    for _ in range(3000):
        i, j = rng.choice(len(true), 2, replace=False)
        p = 1 / (1 + np.exp(-(true[i] - true[j])))
        u = rng.random()
        games.append((i, j, 1.0 if u < p * 0.9 else (0.5 if u < p * 0.9 + 0.1 else 0.0)))
    r, radii = fit(len(true), games)
    assert list(np.argsort(r)) == list(np.argsort(true))
    assert np.all(radii > 0) and np.all(radii < 0.3)
    assert abs(r.mean()) < 1e-9
    # the spread matches the truth (draws count half; strengths are shrunk, not inflated)
    assert 0.6 < np.polyfit(true, r, 1)[0] < 1.1


def test_split_confidence_on_synthetic_results():
    from descent.tournament import _split_confidence
    rng = np.random.default_rng(11)

    def simulate(true, per_pair):
        games, units = [], []
        for i in range(len(true)):
            for j in range(i + 1, len(true)):
                for k in range(per_pair):
                    p = 1 / (1 + np.exp(-(true[i] - true[j])))
                    games.append((i, j, float(rng.random() < p)))
                    units.append(f"{i}|{j}|{k // 2}")
        return games, units
    # clearly separated pools, many games: the split holds with confidence
    true = np.array([2.0, 1.8, -1.8, -2.0])
    g, u = simulate(true, 32)
    r, _ = fit(4, g)
    order = list(np.argsort(-r))
    assert sorted(order[:2]) == [0, 1]
    conf = _split_confidence(4, g, u, order[:2], order[2:], seed=0, resamples=200)
    assert conf["margin_low"] > 0 and conf["same_split"] > 0.95
    # four equal networks: whatever split comes out is not separated
    g, u = simulate(np.zeros(4), 4)
    r, _ = fit(4, g)
    order = list(np.argsort(-r))
    conf = _split_confidence(4, g, u, order[:2], order[2:], seed=0, resamples=200)
    assert conf["margin_low"] <= 0 < conf["margin_high"] and conf["same_split"] < 0.9


# ---- openings and the protocol on a small run ---------------------------------------------------

def test_openings_are_reproducible_legal_and_not_finished():
    import games
    from descent.tournament import make_opening
    a = make_opening("reversi(size=6)", 4, "0|rank|m00@a|m01@a|3")
    assert a == make_opening("reversi(size=6)", 4, "0|rank|m00@a|m01@a|3") and len(a) == 4
    others = {tuple(make_opening("reversi(size=6)", 4, f"0|rank|m00@a|m01@a|{j}")) for j in range(12)}
    assert len(others) > 3
    state = games.load("reversi(size=6)").new_state()
    for mv in a:
        state.push(state.parse_move(mv))
    assert not state.is_game_over()
    # tic-tac-toe cannot end in 4 plies; 9 plies would end it, so the opening is shortened
    t = make_opening("tic_tac_toe", 9, "x")
    s = games.load("tic_tac_toe").new_state()
    for mv in t:
        s.push(s.parse_move(mv))
    assert 0 < len(t) < 9 and not s.is_game_over()
    assert make_opening("tic_tac_toe", 0, "x") == []


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    """A run directory with four complete members (an early and a final checkpoint each) and one
    partial member (early only), with the milestones recorded in run.json (untrained networks of
    different seeds: enough to exercise the protocol quickly)."""
    from training.fileio import write_json
    from training.network import build_model, save_weights
    run = tmp_path_factory.mktemp("run")
    cfg = {"network": {"filters": 4, "blocks": 1, "head_units": 8}}
    write_json(run / "run.json", {"game": "tic_tac_toe", "config": cfg, "seed": 0, "format": "descent-run-1",
                                  "milestones": [["early", 1.0], ["final", 2.0]]})
    for m in range(5):
        d = run / f"member_{m:02d}"
        d.mkdir()
        for name, secs, seed in (("early", 1.0, 100 + m), ("final", 2.0, m)):
            if m == 4 and name == "final":
                continue
            model = build_model((3, 3, 2), 4, 1, 8, seed=seed)
            save_weights(d / f"milestone_{name}.weights.h5", model,
                         {"game": "tic_tac_toe", "member": m, "milestone": name, "milestone_seconds": secs,
                          "network": cfg["network"], "planes_shape": [3, 3, 2]})
    return run


RANK = ["--agent", "minimax:iterations=10,decision=safe", "--games-per-pair", "4", "--opening-plies", "2"]


def test_rank_shares_openings_between_seats_and_flags_partial_members(fake_run):
    from descent.tournament import select_members
    sel = select_members(fake_run, "tic_tac_toe")
    assert sorted(sel["final"]) == [0, 1, 2, 3] and sel["excluded"] == [
        {"member": 4, "has": ["early"], "missing": ["final"]}]
    assert {n.milestone for n in sel["early"].values()} == {"early"}
    r = descent("rank", "tic_tac_toe", "--run", str(fake_run), *RANK)
    assert r.returncode == 0, r.stderr
    assert "left out: member 4 has not reached milestone(s) final" in r.stdout
    pools = json.loads((fake_run / "pools.json").read_text())
    assert len(pools["high"]) == 2 and len(pools["low"]) == 2
    assert {p["net"].split("@")[1] for p in pools["high"]} == {"final"}
    assert {p["net"].split("@")[1] for p in pools["low"]} == {"early"}
    assert all(p["member"] != 4 for p in pools["high"] + pools["low"])
    split = pools["split"]
    assert split["units"] == 6 * 2 and split["margin_low"] <= split["margin_high"]
    assert ("pools separated" if split["separated"] else "pools NOT separated") in r.stdout
    for c in pools["early_vs_final"]:
        assert c["units"] == 2 and c["games"] == 4
        assert c["early_gain_low"] <= c["early_gain"] <= c["early_gain_high"]
        # "weaker" only when the whole interval is below zero
        assert c["early_weaker"] == (c["early_gain_high"] < 0)
        assert c["verdict"] in ("weaker", "stronger", "not separated")
    with sqlite3.connect(fake_run / "results.db") as c:
        rows = c.execute("SELECT net_a, net_b, opening_index, opening, a_first, moves, unit FROM matches "
                         "WHERE stage='rank'").fetchall()
    assert len(rows) == 6 * 4
    by_pair: dict = {}
    for net_a, net_b, j, opening, a_first, moves, unit in rows:
        assert len(opening.split()) == 2 and moves.startswith(opening)
        assert unit == f"{net_a}|{net_b}|{opening}"
        by_pair.setdefault((net_a, net_b, j), []).append((a_first, opening))
    for games_ in by_pair.values():                    # both seats, one opening
        assert sorted(a for a, _ in games_) == [0, 1] and games_[0][1] == games_[1][1]
    # rerun: nothing new is played, the pools are the same
    r2 = descent("rank", "tic_tac_toe", "--run", str(fake_run), *RANK)
    assert r2.returncode == 0
    with sqlite3.connect(fake_run / "results.db") as c:
        assert c.execute("SELECT COUNT(*) FROM matches WHERE stage='rank'").fetchone()[0] == 24
    assert json.loads((fake_run / "pools.json").read_text())["high"] == pools["high"]


def test_evaluate_resumes_after_a_kill_without_duplicates(fake_run):
    if not (fake_run / "pools.json").exists():
        test_rank_shares_openings_between_seats_and_flags_partial_members(fake_run)
    args = ["evaluate", "tic_tac_toe", "--run", str(fake_run), "--iterations", "3,30",
            "--algorithms", "minimax,minibal_n,minibal_plus", "--algorithm", "minibal_plus:proven_wins=true",
            "--opponent-time", "iterations=10", "--games-per-pair", "2", "--opening-plies", "1"]
    expected = 4 * 2 * 2 * 2 * 2          # algorithms x budgets x high x low x games per pair
    db = fake_run / "results.db"
    # SIGKILL right after the 5th match is stored: a crash point, an exact point rather than a
    # moment (a kill after some seconds would depend on how fast the machine is)
    killed = subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                            timeout=600, env=dict(ENV, DESCENT_CRASH_AT="match_stored:5"))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    with sqlite3.connect(db) as c:
        partial = c.execute("SELECT COUNT(*) FROM matches WHERE stage='evaluate'").fetchone()[0]
    assert partial == 5 < expected
    r = descent(*args)
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(db) as c:
        keys = [k for (k,) in c.execute("SELECT match_key FROM matches WHERE stage='evaluate'")]
        # the same opening for every algorithm and budget of a pairing (a paired comparison)
        per_pair = c.execute("SELECT net_a, net_b, COUNT(DISTINCT opening) FROM matches WHERE "
                             "stage='evaluate' GROUP BY net_a, net_b").fetchall()
    assert len(keys) == expected == len(set(keys))
    assert len(per_pair) == 4 and all(n == 1 for _, _, n in per_pair)
    r = descent(*args)
    assert "0 match(es) played" in r.stdout
    # the MCTS experiment into the same database
    r = descent("evaluate", "tic_tac_toe", "--run", str(fake_run), "--iterations", "3,30", "--algorithms",
                "minimax,minibal_plus", "--opponent", "mcts", "--opponent-time", "iterations=20",
                "--games-per-pair", "2", "--opening-plies", "1")
    assert r.returncode == 0, r.stderr
    (fake_run / "report").mkdir(exist_ok=True)
    (fake_run / "report" / ".table.txt.tmp123").write_text("torn")        # a killed earlier report
    rep = descent("report", "--run", str(fake_run), "--out", str(fake_run / "report"))
    assert rep.returncode == 0, rep.stderr
    assert "minibal_plus:proven_wins=true" in rep.stdout
    assert "== pool experiment" in rep.stdout and "== MCTS experiment" in rep.stdout
    assert "ranking behind the pools" in rep.stdout
    assert not list((fake_run / "report").glob(".*tmp*"))
    figs = sorted(p.name for p in (fake_run / "report").glob("*.png"))
    assert figs == ["mcts_iterations-20_tic_tac_toe_gain.png", "mcts_iterations-20_tic_tac_toe_score.png",
                    "pool_iterations-10_tic_tac_toe_gain.png", "pool_iterations-10_tic_tac_toe_score.png"]


def _insert(db, game, alg, budget, opp, opp_budget, k, b, unit):
    return db.insert({"match_key": f"evaluate|{game}|{alg}|{budget}|{opp}|{opp_budget}|{k}", "stage": "evaluate",
                      "game": game, "algorithm": alg, "budget": budget, "agent_a": alg,
                      "agent_b": "mcts:x" if opp == "mcts" else "minimax:x", "a_first": k % 2, "moves": "",
                      "result": b, "score": 0.3 * b, "a_result": b, "a_score": 0.3 * b, "plies": 30,
                      "opponent": opp, "opponent_budget": opp_budget, "unit": unit, "net_a": "h", "net_b": "l"})


def test_report_keeps_experiments_apart_with_true_values(tmp_path):
    from descent.report import make_report
    from descent.results import ResultsDB
    rng = np.random.default_rng(0)
    truth = {("pool", "minimax"): 0.9, ("pool", "minibal_plus"): 0.0, ("pool", "minibal_n"): -0.6,
             ("mcts", "minimax"): 1.0, ("mcts", "minibal_plus"): 0.2, ("mcts", "minibal_n"): -0.2}
    with ResultsDB(tmp_path / "results.db") as db:
        for game in ("reversi(size=6)", "breakthrough(rows=6,cols=6)"):
            for (opp, alg), mean in truth.items():
                for budget in ("iterations=10", "iterations=100"):
                    for k in range(48):
                        b = int(rng.choice([1, -1], p=[(1 + mean) / 2, (1 - mean) / 2]))
                        _insert(db, game, alg, budget, opp, "time=1", k, b, f"u{k // 4}")
        assert not _insert(db, "reversi(size=6)", "minimax", "iterations=10", "pool", "time=1", 0, 0, "x")
    rep = make_report([tmp_path / "results.db"], tmp_path / "out")
    recs = rep["records"]
    assert rep["matches"] == 2 * 6 * 2 * 48
    assert len(recs) == 2 * 6 * 2 + 6 * 2               # per game cells, and their averages
    assert len(rep["figures"]) == 2 * 3 * 2              # experiments x (2 games + average) x metrics
    for r in recs:
        assert r["units"] == (12 if not r["game"].startswith("average") else 24)
        assert -100 <= r["gain_low"] <= r["gain"] <= r["gain_high"] <= 100
        t = 100 * truth[(r["opponent"], r["algorithm"])]
        assert r["gain_low"] - 15 < t < r["gain_high"] + 15
    # the two experiments are never merged: the same algorithm differs between them
    mm = {r["opponent"]: r for r in recs if r["algorithm"] == "minimax" and r["game"] == "reversi(size=6)"
          and r["budget"] == "iterations=10"}
    assert mm["mcts"]["gain"] == 100.0 and mm["pool"]["gain"] < 100.0 and mm["mcts"]["games"] == 48
    table = rep["table"]
    pool_part, mcts_part = table.split("== MCTS experiment")
    assert "== pool experiment" in pool_part and "average of 2 games" in pool_part
    assert "nearest 0: minibal_plus" in table
    # beside the paper's averages: ours at the largest budget, averaged over the two games
    paper = table.split("== side by side with the Minibal paper")[1].split("\n== ")[0]
    assert "pool experiment, opponent time=1: ours at our largest budget, iterations=100" in paper
    assert "paper +92.7 ± 0.9, W/D/L 94.8/3.1/2.1, score +0.590 (20 s a move, Table 2)" in paper
    assert "paper +2.2 ± 1.9, W/D/L 27.2/47.8/25.0 (1 s a move, Table 4)" in paper
    avg_mm = next(r for r in recs if r["game"] == "average of 2 games" and r["opponent"] == "pool"
                  and r["algorithm"] == "minimax" and r["budget"] == "iterations=100")
    assert (f"minimax                    ours  {avg_mm['gain']:>+6.1f} [{avg_mm['gain_low']:>+6.1f}, "
            f"{avg_mm['gain_high']:>+6.1f}]") in paper and "(average of 2 games, 24 units)" in paper
    assert paper.count(" ours  ") == 6 and paper.count(" paper ") == 6
    csv = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert csv[0].startswith("opponent,opponent_budget,game,algorithm,budget,units,games,gain,gain_low")
    assert len(csv) == 1 + len(recs)


def _two_game_dbs(tmp_path):
    from descent.results import ResultsDB
    rng = np.random.default_rng(1)
    paths = []
    for game, shift in (("reversi(size=6)", 0.0), ("breakthrough(rows=6,cols=6)", 0.3)):
        path = tmp_path / game.split("(")[0] / "results.db"
        path.parent.mkdir()
        with ResultsDB(path) as db:
            for opp, alg, mean in (("pool", "minimax", 0.6), ("pool", "minibal_plus", 0.0), ("mcts", "minimax", 0.9)):
                for k in range(40):
                    m = max(-1.0, min(1.0, mean - shift))
                    b = int(rng.choice([1, 0, -1], p=[(1 + m) / 2 * 0.8, 0.2, (1 - m) / 2 * 0.8]))
                    _insert(db, game, alg, "iterations=10", opp, "time=1", k, b, f"u{k // 4}")
        paths.append(path)
    return paths


def test_report_leaves_no_lock_behind(tmp_path):
    """A report killed mid-write left its folder's ``.report.lock``: the next report takes it over
    and deletes it, as an uninterrupted one deletes its own."""
    from descent.report import make_report
    db1, _ = _two_game_dbs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".report.lock").write_text("999999999")      # a killed report's (flock died with it)
    make_report([db1], out)
    assert not (out / ".report.lock").exists() and (out / "results.csv").exists()
    make_report([db1], out)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []


def test_report_merges_an_earlier_reports_cells(tmp_path):
    """A game whose database is elsewhere joins the report through its results.csv: its cells and the
    averages over games come out as they would from both databases; an older results.csv without the
    interval columns is inverted from its bounds; a bad file is one clear error."""
    from click.testing import CliRunner
    from descent.cli import cli
    from descent.report import ReportError, make_report
    db1, db2 = _two_game_dbs(tmp_path)
    both = make_report([db1, db2], tmp_path / "both")["records"]
    first = make_report([db1], tmp_path / "first")
    assert first["merged"] == 0 and not any(r["game"].startswith("average") for r in first["records"])
    merged = make_report([db2], tmp_path / "merged", merge=[tmp_path / "first" / "results.csv"])
    assert merged["merged"] == 3 and "cell(s) from the earlier report" in merged["table"]
    key = lambda r: (r["opponent"], r["game"], r["algorithm"], r["budget"])          # noqa: E731
    want = {key(r): r for r in both}
    assert {key(r) for r in merged["records"]} == set(want)
    for r in merged["records"]:
        for k in ("gain", "gain_low", "gain_high", "score", "score_low", "score_high", "units", "games", "win", "draw"):
            assert r[k] == pytest.approx(want[key(r)][k], abs=1e-9), (key(r), k)
    # an older results.csv (no interval columns): the intervals are recovered from the bounds
    import csv
    rows = list(csv.reader((tmp_path / "first" / "results.csv").open()))
    old = tmp_path / "old.csv"
    with old.open("w", newline="") as f:
        csv.writer(f).writerows(row[:16] for row in rows)
    again = make_report([db2], tmp_path / "again", merge=[old])["records"]
    for r in again:
        w = want[key(r)]
        # the cells themselves come back exactly; an average differs where a cell's Wilson interval was
        # capped at one observation per game (its variance, below that cap, is not in its bounds)
        tol = 2.0 if r["game"].startswith("average") else 1e-6
        assert (r["gain_low"], r["gain_high"]) == pytest.approx((w["gain_low"], w["gain_high"]), abs=tol), key(r)
        for k in ("score_low", "score_high"):
            assert r[k] == pytest.approx(want[key(r)][k], abs=1e-6), (key(r), k)
    # a cell the database holds comes from the database, not from the file
    same = make_report([db1], tmp_path / "same", merge=[tmp_path / "first" / "results.csv"])
    assert same["merged"] == 0
    # bad files: one clear error, at the API and at the CLI; the report folder is not touched
    with pytest.raises(ReportError, match="not text"):
        make_report([db2], tmp_path / "x", merge=[db1])
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ReportError, match="missing column"):
        make_report([db2], tmp_path / "x", merge=[tmp_path / "other.csv"])
    with pytest.raises(ReportError, match="cannot read"):
        make_report([db2], tmp_path / "x", merge=[tmp_path / "nope.csv"])
    r = CliRunner().invoke(cli, ["report", "--run", str(db2.parent), "--merge", str(tmp_path / "other.csv"),
                                 "--out", str(tmp_path / "cli")])
    assert r.exit_code != 0 and "missing column" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "cli" / "table.txt").exists()
    r = CliRunner().invoke(cli, ["report", "--run", str(db2.parent), "--merge", str(tmp_path / "first" / "results.csv"),
                                 "--out", str(tmp_path / "cli")])
    assert r.exit_code == 0, r.output
    assert "average of 2 games" in (tmp_path / "cli" / "table.txt").read_text()


def test_old_results_databases_are_migrated(tmp_path):
    from descent.results import LEGACY_COLUMNS, ResultsDB
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as c:
        c.execute(f"CREATE TABLE matches (id INTEGER PRIMARY KEY, {', '.join(LEGACY_COLUMNS)})")
        for agent_b, ob in [("minimax:time=1,net=x", "time=1"), ("mcts:time=0.5", "time=0.5")]:
            c.execute(f"INSERT INTO matches ({', '.join(LEGACY_COLUMNS)}) VALUES "
                      f"({', '.join('?' * len(LEGACY_COLUMNS))})",
                      (f"evaluate|g|minimax|time=1|h|o|{ob}|0|0", "evaluate", "g", "minimax", "time=1", "a",
                       agent_b, "h", "o", 1, "", 1, 0.5, 1, 0.5, 10, 0, 0, 0, ""))
    expected = [("pool", "time=1", "h|o|"), ("mcts", "time=0.5", "h|o|")]
    before = path.read_bytes()
    with ResultsDB(path, readonly=True) as db:            # report's way: derived, nothing written
        rows = db.checked_rows("evaluate")
    assert [(r["opponent"], r["opponent_budget"], r["unit"]) for r in rows] == expected
    assert path.read_bytes() == before
    with ResultsDB(path) as db:
        rows = db.rows("evaluate")
    assert [(r["opponent"], r["opponent_budget"], r["unit"]) for r in rows] == expected


def test_protocol_errors_are_one_line(tmp_path):
    r = descent("rank", "tic_tac_toe", "--run", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "no training run here" in r.stderr and r.stderr.count("\n") == 1
    r = descent("evaluate", "tic_tac_toe", "--run", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "pools.json missing" in r.stderr
    r = descent("report", "--run", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "no results database" in r.stderr


def test_pipeline_end_to_end(tmp_path):
    out = tmp_path / "run"
    # a game budget (--max-games), not a time one: on a loaded machine a first game can take longer
    # than a few seconds, and a member that never saw a game is not ranked. The milestones (a
    # millisecond or two of training) are reached by the first counted game on any machine.
    r = descent("pipeline", "tic_tac_toe", "--population", "2", "--budget", "1h", "--milestones",
                "0.001s,0.002s", "--max-games", "2", "--workers", "1",
                "--rank-agent", "minimax:iterations=10,decision=safe",
                "--iterations", "3,20", "--opponent-time", "iterations=10", "--games-per-pair", "2",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "[4/4] report" in r.stdout and "minibal_plus" in r.stdout
    assert (out / "report" / "pool_iterations-10_tic_tac_toe_gain.png").exists()
    with sqlite3.connect(out / "results.db") as c:
        n = c.execute("SELECT COUNT(*) FROM matches WHERE stage='evaluate'").fetchone()[0]
    assert n == 3 * 2 * 1 * 1 * 2


def test_pipeline_on_a_machine_too_slow_for_its_budget_ends_with_a_report(tmp_path):
    """README command 1 on a machine so slow or busy that no game fits in a member's budget (issue
    58, item 8), made so on every machine by a 2 ms budget: the floor of finished games
    (``--min-games``) trains every member on that many games, so rank finds trained networks and
    the pipeline ends with a report (before the floor: '0 network(s) reached every milestone ...
    with a trained final checkpoint (2 never saw a game)', exit 2)."""
    out = tmp_path / "run"
    r = descent("pipeline", "tic_tac_toe", "--population", "2", "--budget", "0.002s", "--milestones",
                "0.001s,0.002s", "--min-games", "3", "--min-milestone-games", "1", "--workers", "1",
                "--rank-agent", "minimax:iterations=10,decision=safe",
                "--iterations", "3", "--opponent-time", "iterations=10", "--games-per-pair", "2",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "at least 3 self-play games each" in r.stdout and "[4/4] report" in r.stdout
    for member in ("member_00", "member_01"):
        status = json.loads((out / member / "status.json").read_text())
        assert status["games"] >= 3 and status["done"] is True
        assert json.loads((out / member / "milestone_0.001s.json").read_text())["games"] == 2
    assert (out / "report").is_dir()


def test_experiment_file_resumes_every_stage(fake_run, tmp_path):
    """The experiment command on a finished run: training is skipped (every member of the population
    reached every milestone), rank and evaluate find their matches played, the report is written."""
    if not (fake_run / "pools.json").exists():
        test_evaluate_resumes_after_a_kill_without_duplicates(fake_run)
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "tic_tac_toe").symlink_to(fake_run)
    exp = tmp_path / "exp.toml"
    exp.write_text(f"""
[experiment]
name = "t"
runs = "{runs}"
report = "{tmp_path / 'report'}"
[train]
population = 4
budget = "2s"
milestones = "early,final"
[rank]
agent = "minimax:iterations=10,decision=safe"
games_per_pair = 4
opening_plies = 2
[evaluate]
algorithms = ["minimax", "minibal_n", "minibal_plus"]
budgets = ["iterations=3", "iterations=30"]
opening_plies = 1
[[opponents]]
kind = "pool"
budget = "iterations=10"
games_per_pair = 2
[[games]]
spec = "tic_tac_toe"
""")
    r = descent("experiment", str(exp))
    assert r.returncode == 2 and "training plan: bad duration 'early'" in r.stderr
    exp.write_text(exp.read_text().replace('"early,final"', '"1s,2s"'))
    with sqlite3.connect(fake_run / "results.db") as c:
        before = c.execute("SELECT COUNT(*) FROM matches").fetchone()[0]
    r = descent("experiment", str(exp), "--stage", "rank", "--stage", "evaluate", "--stage", "report")
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(fake_run / "results.db") as c:
        assert c.execute("SELECT COUNT(*) FROM matches").fetchone()[0] == before
    assert "== pool experiment" in r.stdout and (tmp_path / "report" / "table.txt").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text(exp.read_text().replace("[rank]", "[rank]\nplies = 3"))
    r = descent("experiment", str(bad))
    assert r.returncode == 2 and "unknown key 'rank.plies'" in r.stderr and r.stderr.count("\n") == 1
    # [[games]] from: an exported run is copied to an empty runs folder by the first run, then used
    fresh = tmp_path / "fresh"
    restored = tmp_path / "restored.toml"
    restored.write_text(exp.read_text().replace(f'runs = "{runs}"', f'runs = "{fresh}"')
                        .replace('spec = "tic_tac_toe"', f'spec = "tic_tac_toe"\nfrom = "{fake_run}"'))
    r = descent("experiment", str(restored), "--stage", "rank")
    assert r.returncode == 0, r.stderr
    assert f"[restore] {fake_run} -> {fresh / 'tic_tac_toe'}" in r.stdout
    assert (fresh / "tic_tac_toe" / "pools.json").exists() and not (fresh / "tic_tac_toe").is_symlink()
    assert not list(fresh.glob("*.restoring"))
    r = descent("experiment", str(restored), "--stage", "rank")
    assert r.returncode == 0 and "[restore]" not in r.stdout          # a run is there: nothing copied
    # [rank] early = final: the low pool keeps its final networks (pools closer together)
    restored.write_text(restored.read_text().replace("[rank]", '[rank]\nearly = "final"\nfinal = "final"'))
    r = descent("experiment", str(restored), "--stage", "rank")
    assert r.returncode == 0, r.stderr
    pools = json.loads((fresh / "tic_tac_toe" / "pools.json").read_text())
    assert {p["net"].split("@")[1] for p in pools["low"] + pools["high"]} == {"final"}
    missing = tmp_path / "missing.toml"
    missing.write_text(restored.read_text().replace(f'runs = "{fresh}"', f'runs = "{tmp_path / "other"}"')
                       .replace(f'from = "{fake_run}"', f'from = "{tmp_path / "nowhere"}"'))
    r = descent("experiment", str(missing), "--stage", "rank")
    assert r.returncode == 2 and "is not an exported run" in r.stderr and r.stderr.count("\n") == 1


def test_milestones_from_the_run_record_and_same_state_flag(tmp_path):
    from descent.tournament import ProtocolError, select_members
    (tmp_path / "run.json").write_text(json.dumps({"game": "tic_tac_toe", "seed": 0, "config": {}, "milestones": [["a", 1], ["b", 2]]}))
    for m, games_ in ((0, (1, 5)), (1, (1, 1)), (2, (3,))):
        d = tmp_path / f"member_{m:02d}"
        d.mkdir()
        for name, g in zip("ab", games_):
            (d / f"milestone_{name}.weights.h5").write_bytes(b"")
            (d / f"milestone_{name}.json").write_text(json.dumps(
                {"game": "tic_tac_toe", "member": m, "milestone": name, "milestone_seconds": 1.0 if name == "a" else 2.0, "games": g}))
    sel = select_members(tmp_path, "tic_tac_toe")
    assert sorted(sel["final"]) == [0, 1] and sel["same_state"] == [1]
    assert sel["excluded"] == [{"member": 2, "has": ["a"], "missing": ["b"]}]
    assert sel["early"][0].milestone == "a" and sel["final"][0].milestone == "b" and sel["note"] is None
    with pytest.raises(ProtocolError, match="a run of tic_tac_toe, not of reversi"):
        select_members(tmp_path, "reversi")


def test_experiment_trains_every_game_then_skips_training(tmp_path):
    """The train stage of an experiment file really trains (a run with no earlier state): every
    member reaches both milestones, and a rerun finds nothing to train."""
    exp = tmp_path / "exp.toml"
    exp.write_text(f"""
[experiment]
name = "t"
runs = "{tmp_path / 'runs'}"
report = "{tmp_path / 'report'}"
[train]
population = 2
budget = "2s"
milestones = "1s,2s"
[rank]
agent = "minimax:iterations=5,decision=safe"
[evaluate]
algorithms = ["minimax"]
budgets = ["iterations=3"]
[[opponents]]
kind = "pool"
budget = "iterations=3"
[[games]]
spec = "tic_tac_toe"
""")
    r = descent("experiment", str(exp), "--stage", "train")
    assert r.returncode == 0, r.stderr
    run = tmp_path / "runs" / "tic_tac_toe"
    for m in range(2):
        for name in ("1s", "2s"):
            assert (run / f"member_{m:02d}" / f"milestone_{name}.weights.h5").exists()
    assert json.loads((run / "run.json").read_text())["milestones"] == [["1s", 1.0], ["2s", 2.0]]
    r = descent("experiment", str(exp), "--stage", "train")
    assert r.returncode == 0 and "nothing to train" in r.stdout
    # a game's own budget and milestones: raised, they continue the same members, and run.json
    # (what rank and evaluate read) names the new early and final checkpoints
    exp.write_text(exp.read_text().replace('spec = "tic_tac_toe"', 'spec = "tic_tac_toe"\nbudget = "3s"\n'
                                                                    'milestones = "1s,3s"'))
    r = descent("experiment", str(exp), "--stage", "train")
    assert r.returncode == 0, r.stderr
    assert "early and final checkpoints are now 1s and 3s" in r.stdout
    for m in range(2):
        assert (run / f"member_{m:02d}" / "milestone_3s.weights.h5").exists()
    rec = json.loads((run / "run.json").read_text())
    assert rec["milestones"] == [["1s", 1.0], ["3s", 3.0]] and rec["budget"] == 3.0
    # the shorter [train] budget again leaves the longer run's record as it is
    exp.write_text(exp.read_text().replace('budget = "3s"\nmilestones = "1s,3s"', ""))
    r = descent("experiment", str(exp), "--stage", "train")
    assert r.returncode == 0 and "nothing to train" in r.stdout
    assert json.loads((run / "run.json").read_text())["milestones"] == [["1s", 1.0], ["3s", 3.0]]


def test_alphadda_budget_is_its_cap():
    """An iteration budget joined to AlphaDDA's spec (evaluate, calibrate) sets its cap N_max."""
    from search_ext.agents import AgentSpecError, parse_agent
    name, opts = parse_agent("alphadda:a=-1,iterations=7")
    assert opts["max_iterations"] == 7 and opts["a"] == -1 and "iterations" not in opts
    assert parse_agent("alphadda")[1]["max_iterations"] == 2000
    with pytest.raises(AgentSpecError, match="not both"):
        parse_agent("alphadda:iterations=7,max_iterations=9")
    with pytest.raises(AgentSpecError, match="unknown key 'time'"):
        parse_agent("alphadda:time=1")
    g = "gaussian:base=minimax,level=custom,mu=0.5,sigma=0.3"
    assert parse_agent(g + ",iterations=5")[1]["base_options"] == {"iterations": 5}


def test_rank_leaves_out_untrained_members_and_flags_undertrained_checkpoints(tmp_path):
    """A member whose final checkpoint saw 0 self-play games is left out (unless allowed); early
    or final checkpoints under min_milestone_games are listed; older records without the new fields
    count as unknown, never as untrained."""
    from descent.report import pools_summary
    from descent.tournament import ProtocolError, select_members
    (tmp_path / "run.json").write_text(json.dumps({"game": "tic_tac_toe", "seed": 0, "config": {},
                                                   "milestones": [["a", 1], ["b", 2]]}))
    members = {0: ((0, 0), (0, 0)),          # never saw a game: left out
               1: ((3, 300), (40, 4000)),    # early undertrained (flag derived from games)
               2: ((20, 2000), (50, 5000)),  # fine
               3: (None, None)}              # an older record: unknown
    for m, counts in members.items():
        d = tmp_path / f"member_{m:02d}"
        d.mkdir()
        for name, c in zip("ab", counts):
            (d / f"milestone_{name}.weights.h5").write_bytes(b"")
            rec = {"game": "tic_tac_toe", "member": m, "milestone": name,
                   "milestone_seconds": 1.0 if name == "a" else 2.0}
            if c is not None:
                rec.update(games=c[0], examples=c[1])
                if m == 0:
                    rec["undertrained"] = True
            (d / f"milestone_{name}.json").write_text(json.dumps(rec))
    sel = select_members(tmp_path, "tic_tac_toe")
    assert sorted(sel["final"]) == [1, 2, 3]
    assert sel["untrained"] == [{"member": 0, "net": "m00@b", "games": 0, "examples": 0}]
    assert sel["undertrained"] == [{"member": 1, "net": "m01@a", "games": 3, "examples": 300}]
    assert sel["final"][3].behind() == "? games, ? examples" and sel["final"][3].undertrained is None
    allowed = select_members(tmp_path, "tic_tac_toe", allow_untrained=True)
    assert sorted(allowed["final"]) == [0, 1, 2, 3] and allowed["untrained"] == []
    assert {x["net"] for x in allowed["undertrained"]} == {"m00@a", "m00@b", "m01@a"}
    for m in (2, 3):
        for p in (tmp_path / f"member_{m:02d}").glob("*"):
            p.unlink()
    with pytest.raises(ProtocolError, match="1 never saw a game"):
        from descent.tournament import rank
        rank(tmp_path, "tic_tac_toe", "minimax:iterations=5", echo=lambda *_: None)
    # the report shows what pools.json records
    (tmp_path / "pools.json").write_text(json.dumps({
        "game": "tic_tac_toe", "agent": "x", "ranking": [
            {"rank": 1, "net": "m01@b", "score": 0.5, "games": 4, "elo": 0.0, "elo_radius": 1.0,
             "trained_games": 40, "trained_examples": 4000}],
        "high": [], "low": [], "untrained": sel["untrained"], "undertrained": sel["undertrained"]}))
    text = "\n".join(pools_summary(tmp_path))
    assert "trained on 40 self-play games, 4000 examples" in text
    assert "member 0 (final checkpoint m00@b never saw a self-play game)" in text
    assert "m01@a is undertrained (3 self-play games, 300 examples" in text


def test_rank_early_and_final_milestones_by_name(tmp_path):
    """A run with milestones a, b, c: --early b --final c ranks the c networks with b as the low
    pool (a member lacking a is kept); a milestone the run lacks, or early after final, is one line."""
    from descent.tournament import ProtocolError, select_members
    from training.fileio import write_json
    from training.network import build_model, save_weights
    cfg = {"network": {"filters": 4, "blocks": 1, "head_units": 8}}
    write_json(tmp_path / "run.json", {"game": "tic_tac_toe", "config": cfg, "seed": 0, "format": "descent-run-1",
                                       "milestones": [["a", 1.0], ["b", 2.0], ["c", 3.0]]})
    for m in range(2):
        d = tmp_path / f"member_{m:02d}"
        d.mkdir()
        for i, name in enumerate("abc"):
            if m == 1 and name == "a":
                continue
            save_weights(d / f"milestone_{name}.weights.h5", build_model((3, 3, 2), 4, 1, 8, seed=10 * m + i),
                         {"game": "tic_tac_toe", "member": m, "milestone": name, "milestone_seconds": i + 1.0,
                          "network": cfg["network"], "planes_shape": [3, 3, 2]})
    default = select_members(tmp_path, "tic_tac_toe")
    assert sorted(default["final"]) == [0] and default["excluded"][0]["missing"] == ["a"]
    sel = select_members(tmp_path, "tic_tac_toe", early="b")
    assert sorted(sel["final"]) == [0, 1] and sel["milestones"] == ["b", "c"]
    assert {n.milestone for n in sel["early"].values()} == {"b"}
    assert {n.milestone for n in sel["final"].values()} == {"c"}
    assert select_members(tmp_path, "tic_tac_toe", early="a", final="b")["milestones"] == ["a", "b"]
    with pytest.raises(ProtocolError, match="must not come after"):
        select_members(tmp_path, "tic_tac_toe", early="c", final="b")
    close = select_members(tmp_path, "tic_tac_toe", early="c", final="c")    # the low pool not reverted
    assert all(close["early"][m].path == close["final"][m].path for m in close["final"]) and not close["same_state"]
    r = descent("rank", "tic_tac_toe", "--run", str(tmp_path), "--early", "20d", *RANK)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "--early '20d' is not a milestone of the run (it has a, b, c)" in r.stderr
    assert not (tmp_path / "pools.json").exists()
    r = descent("rank", "tic_tac_toe", "--run", str(tmp_path), "--early", "b", "--final", "c", *RANK)
    assert r.returncode == 0, r.stderr
    pools = json.loads((tmp_path / "pools.json").read_text())
    assert {p["net"].split("@")[1] for p in pools["high"]} == {"c"}
    assert {p["net"].split("@")[1] for p in pools["low"]} == {"b"}


def test_a_given_split_is_evaluated_without_ranking(fake_run, tmp_path):
    """An exported run that keeps only the checkpoints its pools use (the high members' final, the
    low members' early: its ranking cannot be replayed) is evaluated with the split given, by
    ``descent rank --high --low --source`` or an experiment's [[games]] high/low/split_source: no
    rank game is played, pools.json and the report say where the split comes from, bad splits are
    one-line errors that leave the pools file as it was."""
    import shutil
    run = tmp_path / "export"
    shutil.copytree(fake_run, run, ignore=shutil.ignore_patterns("pools.json", "results.db*", "calibrations"))
    for m, gone in ((1, "early"), (2, "early"), (0, "final"), (3, "final")):
        (run / f"member_{m:02d}" / f"milestone_{gone}.weights.h5").unlink()
    shutil.rmtree(run / "member_04")
    r = descent("rank", "tic_tac_toe", "--run", str(run), *RANK)          # a rank needs every final
    assert r.returncode == 2 and "ranking needs at least 2" in r.stderr
    r = descent("rank", "tic_tac_toe", "--run", str(run), "--high", "1,2", "--low", "0,3",
                "--source", "an earlier rank: 1, 2 over 3, 0")
    assert r.returncode == 0, r.stderr
    assert "pools given, not ranked (no game played): an earlier rank: 1, 2 over 3, 0" in r.stdout
    pools = json.loads((run / "pools.json").read_text())
    assert [p["net"] for p in pools["high"]] == ["m01@final", "m02@final"]
    assert [p["net"] for p in pools["low"]] == ["m00@early", "m03@early"]
    assert pools["given"] == {"source": "an earlier rank: 1, 2 over 3, 0"} and pools["ranking"] == []
    assert not (run / "results.db").exists()
    written = (run / "pools.json").read_bytes()
    for args, message in ((["--high", "0,1", "--low", "2,3", "--source", "x"], "needs member 0's final checkpoint"),
                          (["--high", "1,2", "--low", "2,3", "--source", "x"], "names a member twice (2)"),
                          (["--high", "1,9", "--low", "0,3", "--source", "x"], "names member 9"),
                          (["--high", "1,2", "--low", "0,3", "--source", " "], "needs its source"),
                          (["--high", "1,2", "--low", "0,3"], "--high, --low and --source go together")):
        r = descent("rank", "tic_tac_toe", "--run", str(run), *args)
        assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
        assert (run / "pools.json").read_bytes() == written
    exp = tmp_path / "exp.toml"
    exp.write_text(f"""
[experiment]
name = "t"
runs = "{tmp_path / 'runs'}"
report = "{tmp_path / 'report'}"
[train]
population = 4
budget = "2s"
milestones = "1s,2s"
[rank]
agent = "minimax:iterations=10,decision=safe"
[evaluate]
algorithms = ["minimax", "minibal_plus"]
budgets = ["iterations=3"]
opening_plies = 1
[[opponents]]
kind = "pool"
budget = "iterations=10"
games_per_pair = 2
[[games]]
spec = "tic_tac_toe"
from = "{run}"
high = [1, 2]
low = [0, 3]
split_source = "the export's README"
""")
    r = descent("experiment", str(exp), "--stage", "rank", "--stage", "evaluate", "--stage", "report")
    assert r.returncode == 0, r.stderr
    assert "[rank] tic_tac_toe: pools given, not ranked: high [1, 2], low [0, 3] (the export's README)" in r.stdout
    with sqlite3.connect(tmp_path / "runs" / "tic_tac_toe" / "results.db") as c:
        stages = dict(c.execute("SELECT stage, COUNT(*) FROM matches GROUP BY stage").fetchall())
    assert stages == {"evaluate": 2 * 2 * 2 * 2}          # algorithms x high x low x games per pair
    table = (tmp_path / "report" / "table.txt").read_text()
    assert "pools given, not ranked here: high m01@final, m02@final / low m00@early, m03@early" in table
    bad = tmp_path / "bad.toml"
    bad.write_text(exp.read_text().replace('split_source = "the export\'s README"\n', ""))
    r = descent("experiment", str(bad), "--stage", "rank")
    assert r.returncode == 2 and "high, low and split_source go together" in r.stderr
    bad.write_text(exp.read_text().replace("low = [0, 3]", 'low = ["a"]'))
    r = descent("experiment", str(bad), "--stage", "rank")
    assert r.returncode == 2 and "'low' must be a list of member numbers" in r.stderr


def test_a_larger_rank_beside_the_runs_own_leaves_its_pools_and_results_alone(fake_run, tmp_path):
    """``descent rank --db --pools-out``: a rank with more games a pair played into another
    database and written to another pools file; the run's pools.json and results.db are as they
    were, and a rerun finds every game in its database and plays none."""
    if not (fake_run / "pools.json").exists():
        test_rank_shares_openings_between_seats_and_flags_partial_members(fake_run)
    pools_before = (fake_run / "pools.json").read_bytes()
    with sqlite3.connect(fake_run / "results.db") as c:
        before = c.execute("SELECT COUNT(*) FROM matches").fetchone()[0]
    db, out = tmp_path / "larger" / "rank.db", tmp_path / "larger" / "pools.json"
    args = ["rank", "tic_tac_toe", "--run", str(fake_run), "--agent", "minimax:iterations=10,decision=safe",
            "--games-per-pair", "6", "--opening-plies", "2", "--db", str(db), "--pools-out", str(out)]
    r = descent(*args)
    assert r.returncode == 0, r.stderr
    assert f"pools written to {out}; results in {db}" in r.stdout and "rank tic_tac_toe" in r.stderr
    assert (fake_run / "pools.json").read_bytes() == pools_before
    with sqlite3.connect(fake_run / "results.db") as c:
        assert c.execute("SELECT COUNT(*) FROM matches").fetchone()[0] == before
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM matches WHERE stage='rank'").fetchone()[0] == 6 * 6
    pools = json.loads(out.read_text())
    assert pools["games_per_pair"] == 6 and sum(r_["games"] for r_ in pools["ranking"]) == 2 * 6 * 6
    r = descent(*args)
    assert r.returncode == 0 and "rank tic_tac_toe" not in r.stderr      # no progress bar: nothing played
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM matches WHERE stage='rank'").fetchone()[0] == 6 * 6
    r = descent("rank", "tic_tac_toe", "--run", str(fake_run), "--high", "1", "--low", "0", "--source", "x",
                "--pools-out", str(out))
    assert r.returncode == 2 and "--db and --pools-out are for a rank" in r.stderr


@pytest.mark.parametrize("n_algs, width", [(3, 704), (8, 968)])
def test_a_figure_with_many_curves_puts_its_legend_beside_the_axes(tmp_path, n_algs, width):
    """Up to 4 algorithms the legend sits inside a 6.4-inch figure; more widen it to 8.8 inches so the
    legend stands beside the axes instead of over the curves (110 dpi: 704 and 968 pixels)."""
    from matplotlib.image import imread
    from descent.report import plot
    records = [{"algorithm": f"alg{a}", "budget": f"iterations={b}", "opponent_budget": "iterations=10",
                "units": 128, "gain": 10.0 * a - 20, "gain_low": 10.0 * a - 30, "gain_high": 10.0 * a - 10}
               for a in range(n_algs) for b in (1, 10, 100)]
    path = tmp_path / "f.png"
    plot(records, "test", "gain", path)
    assert imread(path).shape[1] == width
