"""Issue 15: calibrating the balanced player's budget, and the opponent that adapts to a person.

Every budget here is in iterations and every game seeded: nothing depends on the machine's speed.
"""
import json
import math
import os
import random
import sys

import pytest
from click.testing import CliRunner

from descent import adaptive
from descent.adaptive import Adaptive, Profile, ProfileError, update
from descent.calibrate import Settings, Unreachable, calibrate, find_calibration, names, read_log, snap
from descent.cli import cli
from descent.results import ResultsDB

GAME = "breakthrough(rows=5,cols=5)"
BALANCED = "minibal_plus:eval=playout,playouts=4"


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(adaptive.DATA_ENV, str(tmp_path / "data"))
    return tmp_path / "data"


# ---- calibration: the design on a known curve ------------------------------------------------------

class Curve:
    """Games whose gain follows a known increasing curve of the budget: win with probability
    (1 + tanh(slope (ln b - ln root))) / 2, else loss (or a share ``draws`` of draws); seeded per
    (budget, k, rep)."""

    def __init__(self, root, slope=1.0, rep=0, draws=0.0):
        self.root, self.slope, self.rep, self.draws = root, slope, rep, draws

    def gain(self, b):
        return math.tanh(self.slope * (math.log(b) - math.log(self.root)))

    def play(self, budget, k):
        rng = random.Random(f"{budget}|{k}|{self.rep}")
        if self.draws:      # a draw with probability ``draws`` where the gain allows it, same mean gain
            g = self.gain(budget)
            d = min(self.draws, 1 - abs(g))
            u = rng.random()
            y = 0 if u < d else 1 if u < d + (1 - d + g) / 2 else -1
            return {"budget": budget, "k": k, "a_first": k % 2 == 0, "result": y, "score": 0.5 * y,
                    "plies": 10, "opponent": "curve"}
        y = 1 if rng.random() < (1 + self.gain(budget)) / 2 else -1
        return {"budget": budget, "k": k, "a_first": k % 2 == 0, "result": y, "score": 0.5 * y,
                "plies": 10, "opponent": "curve"}


def test_design_finds_a_known_root_with_its_interval(tmp_path):
    """On a known curve the answer's true gain is within the precision asked, and the fitted interval
    there holds the true gain."""
    close, covered = 0, 0
    for rep in range(4):
        curve = Curve(50, rep=rep)
        s = Settings(GAME, algorithm=BALANCED, against="random", low=1, high=3000, seed=rep, max_games=1500,
                     precision=0.1, near_games=20)
        res = calibrate(s, tmp_path / f"r{rep}", players=curve)
        assert res["status"] == "done" and res["converged"], res["games"]
        at = res["at_budget"]
        assert at["budget"] == res["budget"] and res["near"]["games"] >= 20
        assert res["near"]["low"] <= res["budget"] <= res["near"]["high"]
        assert at["fitted_high"] - at["fitted_low"] <= 0.2 + 1e-9
        true = curve.gain(res["budget"])
        close += abs(true) <= 0.1
        covered += at["fitted_low"] <= true <= at["fitted_high"]
        lo, hi = res["interval"]
        assert lo <= res["budget"] <= hi
    assert close >= 3 and covered >= 3, (close, covered)


def test_design_picks_the_right_whole_budget_on_a_steep_curve(tmp_path):
    """The case that defeated the bisection: the gain jumps between neighbouring whole budgets (-41%
    at 3 iterations, 0 at 4, +32% at 5). Accepting the first budget whose interval holds 0 lands on
    3 or 5 about as often as on 4; the fitted curve does not."""
    picks = []
    for rep in range(4):
        curve = Curve(4, slope=1.5, rep=rep)
        s = Settings(GAME, algorithm=BALANCED, against="random", low=1, high=1000, seed=rep, max_games=600,
                     precision=0.1, near_games=20)
        picks.append(calibrate(s, tmp_path / f"r{rep}", players=curve)["budget"])
    assert picks.count(4) >= 3, picks


def test_design_stops_on_a_flat_curve_whose_answer_moves_between_budgets(tmp_path):
    """Havannah's case: a curve so flat that the root's posterior spans dozens of whole budgets. The
    design spreads its games over them and the answer moves from one to the next as games come in,
    so the answer's own budget rarely gathers its near games; the rule counts the games in the
    root's 95% interval instead, and the calibration stops well inside ``max_games``."""
    for rep in range(2):
        curve = Curve(50, slope=0.2, rep=rep)
        s = Settings(GAME, algorithm=BALANCED, against="random", low=1, high=2000, seed=rep, max_games=1500,
                     precision=0.1, near_games=60)
        res = calibrate(s, tmp_path / f"r{rep}", players=curve)
        assert res["status"] == "done" and res["converged"], res["games"]
        assert res["games"] < 1500
        lo, hi = res["near"]["low"], res["near"]["high"]
        assert hi - lo >= 10 and res["near"]["games"] >= 60
        assert res["at_budget"]["games"] < 60          # the answer's own budget alone would not stop
        assert abs(curve.gain(res["budget"])) <= 0.1


def test_design_counts_draws_at_their_variance(tmp_path):
    """Half the games drawn: the dispersion is estimated (about 1/2), so the interval is not as wide
    as for wins and losses and fewer games reach the same precision."""
    def run(draws, name):
        s = Settings(GAME, algorithm=BALANCED, against="random", low=1, high=1000, seed=1, max_games=2000,
                     precision=0.1, near_games=20)
        return calibrate(s, tmp_path / name, players=Curve(30, rep=1, draws=draws))
    plain, drawn = run(0.0, "plain"), run(0.5, "drawn")
    assert 0.3 < drawn["posterior"]["dispersion"] < 0.75 and plain["posterior"]["dispersion"] > 0.85
    assert drawn["converged"] and drawn["games"] < plain["games"]


def test_design_refuses_a_curve_out_of_range(tmp_path):
    s = Settings(GAME, algorithm=BALANCED, against="random", low=1, high=300)
    with pytest.raises(Unreachable) as e:
        calibrate(s, tmp_path / "strong", players=Curve(5000))
    assert e.value.direction == "too_strong" and "too strong" in str(e.value)
    assert e.value.result["games"] < 100          # far out of range: said after a few rounds
    with pytest.raises(Unreachable) as e:
        calibrate(s, tmp_path / "weak", players=Curve(0.05))
    assert e.value.direction == "too_weak" and "too weak" in str(e.value)
    saved = json.loads(next((tmp_path / "weak" / "calibrations").glob("*.json")).read_text())
    assert saved["status"] == "too_weak"


def test_budgets_snap_to_the_unit_and_the_range_is_validated(tmp_path):
    it = Settings(GAME, low=1, high=10000)
    assert [snap(it, v) for v in (0.2, 1.4, 1.42, 4.4, 4.5, 20000)] == [1, 1, 2, 4, 5, 10000]
    t = Settings(GAME, unit="time", low=0.001, high=10)
    assert snap(t, 0.012345) == 0.0123 and snap(t, 50) == 10
    for bad in (dict(low=10, high=5), dict(low=1.5, high=5), dict(unit="moves")):
        with pytest.raises(Exception):
            calibrate(Settings(GAME, **bad), tmp_path, players=Curve(3))


# ---- calibration: real games -----------------------------------------------------------------------

def _settings(**kw):
    base = dict(algorithm=BALANCED, against="mcts:iterations=100", low=1, high=200, max_games=120,
                near_games=16)
    base.update(kw)
    return Settings(GAME, **base)


def test_calibrate_real_games_resumes_without_duplicates(tmp_path):
    whole = calibrate(_settings(), tmp_path / "whole")
    assert whole["status"] == "done"
    lo, hi = whole["interval"]
    assert lo <= whole["budget"] <= hi
    at = whole["at_budget"]
    assert at["games"] >= 2 and at["budget"] == whole["budget"]
    # the same calibration killed twice (after 7, then 11 more games) and a torn last line
    part = tmp_path / "part"
    assert calibrate(_settings(), part, stop_after=7) is None
    log_path = part / "calibrations" / names(_settings())[1]
    assert len(log_path.read_text().splitlines()) == 7
    with open(log_path, "a") as f:
        f.write('{"budget": 3, "k": ')          # a kill in the middle of a write
    assert calibrate(_settings(), part, stop_after=11) is None
    resumed = calibrate(_settings(), part)
    lines = log_path.read_text().splitlines()
    keys = [(json.loads(x)["budget"], json.loads(x)["k"]) for x in lines]
    assert len(keys) == len(set(keys)) == resumed["games"] == whole["games"]
    assert resumed["budget"] == whole["budget"] and resumed["points"] == whole["points"]
    assert len(read_log(log_path)) == len(lines)
    # the result file is there, complete, and found for calibrated play
    assert find_calibration(GAME, "minibal_plus", run_dir=part)["budget"] == whole["budget"]


def test_calibrate_cli_refuses_an_opponent_too_strong(tmp_path):
    r = CliRunner().invoke(cli, ["calibrate", GAME, "--algorithm", BALANCED, "--against",
                                 "mcts:iterations=1000", "--range", "1:6", "--run", str(tmp_path)])
    assert r.exit_code == 2, r.output
    err = r.output.strip().splitlines()[-1]
    assert err.startswith("Error: no budget in 1..6 iterations reaches gain +0%: the opponent is too strong")


@pytest.mark.parametrize("args, fragment", [
    (["--algorithm", "minibal_plus:iterations=5"], "leave out the budget"),
    (["--algorithm", "nonsense"], "unknown algorithm"),
    (["--against", "mcts:foo=1"], "unknown key"),
    (["--range", "5"], "--range"),
    (["--range", "10:5"], "need 0 < low < high"),
    (["--target", "1.5"], "target"),
    ([], "no pools"),
])
def test_calibrate_bad_input_is_one_line_exit_2(tmp_path, args, fragment):
    base = ["calibrate", GAME, "--run", str(tmp_path)]
    if "--algorithm" not in args:
        base += ["--algorithm", BALANCED]
    if "--against" not in args and args:
        base += ["--against", "random"]
    r = CliRunner().invoke(cli, base + args)
    assert r.exit_code == 2, r.output
    assert fragment in r.output.strip().splitlines()[-1]
    assert not list(tmp_path.glob("calibrations/*.json"))


def test_balanced_level_uses_the_calibrated_budget(tmp_path):
    from descent.api import Opponent
    calibrate(_settings(), tmp_path / "run")
    cal = find_calibration(GAME, root=tmp_path)
    bot = Opponent(GAME, level="balanced", root=tmp_path)
    assert bot.calibration is not None and f"iterations={cal['budget']}" in bot.spec
    assert bot.spec.startswith(BALANCED)
    bot = Opponent(GAME, level="balanced", iterations=7, root=tmp_path)    # an explicit budget wins
    assert bot.calibration is None and "iterations=7" in bot.spec


# ---- the adaptive rule on a known person ----------------------------------------------------------

def simulate(person_log_budget, n_games, reps, sign=1, rungs=None, rung_shift=3.0):
    """Bot score per game over ``reps`` profiles against a person who beats the bot with
    probability 1 / (1 + exp(2.5 (x_eff - person))), x_eff = ln(iterations) + rung_shift * rung."""
    rng = random.Random(7)
    rungs = rungs or [{"algorithm": "minibal_plus", "net": None, "label": "a"},
                      {"algorithm": "minimax", "net": None, "label": "b"}]
    scores = [[0.0] * n_games for _ in range(reps)]
    finals = []
    for r in range(reps):
        entry = {"log_budget": math.log(100), "rung": 0, "k": 0, "last_direction": 0}
        for g in range(n_games):
            x = entry["log_budget"] + rung_shift * entry["rung"]
            p_person = 1 / (1 + math.exp(2.5 * (x - person_log_budget)))
            s = 1.0 if rng.random() < p_person else 0.0
            scores[r][g] = 1 - s
            update(entry, s, len(rungs), 1, 10000, sign=sign)
        finals.append(entry)
    return scores, finals


@pytest.mark.parametrize("person", [math.log(3), math.log(60), math.log(3000), math.log(10000) + 2.0])
def test_rule_settles_near_half_for_every_strength(person):
    scores, finals = simulate(person, 60, 40)
    late = [s for run in scores for s in run[30:]]
    assert abs(sum(late) / len(late) - 0.5) <= 0.06
    if person > math.log(10000):       # only a stronger rung can balance this person
        assert all(f["rung"] == 1 for f in finals)


@pytest.mark.parametrize("person", [math.log(3), math.log(3000)])
def test_mis_specified_rule_does_not_settle(person):
    scores, _ = simulate(person, 60, 40, sign=-1)       # moving the wrong way
    late = [s for run in scores for s in run[30:]]
    assert abs(sum(late) / len(late) - 0.5) > 0.2


def test_steps_shrink_on_changes_of_direction_with_a_floor():
    e = {"log_budget": math.log(100), "rung": 0, "k": 0, "last_direction": 0}
    update(e, 1.0, 2, 1, 10000)
    assert e["log_budget"] == pytest.approx(math.log(400))      # a first win: budget x4
    update(e, 0.5, 2, 1, 10000)                                  # a draw changes nothing
    assert e["log_budget"] == pytest.approx(math.log(400)) and e["k"] == 0
    update(e, 0.0, 2, 1, 10000)
    assert e["k"] == 1 and e["log_budget"] == pytest.approx(math.log(200))
    for _ in range(100):
        update(e, 1.0, 2, 1, 10000)
        update(e, 0.0, 2, 1, 10000)
    assert adaptive.step_size(e["k"]) == adaptive.A_MIN


# ---- the adaptive opponent with real games --------------------------------------------------------

def play_one(bot, person, seat, g):
    bot.new_game()
    person.reset(g)
    while not bot.is_over():
        if bot.state.to_move == seat:
            bot.push(person.choose(bot.state))
        else:
            bot.reply()
    return bot.end_game()


def test_adaptive_opponent_real_games_profile_survives_restart(tmp_path, data_dir):
    from descent.api import Opponent
    from search_ext.agents import make_agent
    person = make_agent("mcts:iterations=200", GAME)
    bot = Opponent(GAME, level="adaptive", player="Ann Example", root=tmp_path)
    assert bot.adaptive.iterations == adaptive.DEFAULT_ITERATIONS and "iterations=100" in bot.spec
    changes = [play_one(bot, person, g % 2, g) for g in range(4)]
    for c, h in zip(changes, bot.adaptive.entry["history"]):
        # the ladder position (rung, then budget) moves up after a person's win, down after a loss
        before = (c["before"]["rung"], c["before"]["iterations"])
        after = (c["after"]["rung"], c["after"]["iterations"])
        assert (after > before) == (h["score"] == 1.0) and (after < before) == (h["score"] == 0.0)
    files = list((data_dir / "profiles").glob("*.json"))
    assert len(files) == 1
    saved = json.loads(files[0].read_text())
    assert saved["player"] == "Ann Example" and saved["games"][GAME]["games"] == 4
    again = Opponent(GAME, level="adaptive", player="Ann Example", root=tmp_path)     # a restart
    assert again.adaptive.iterations == changes[-1]["after"]["iterations"]
    assert f"iterations={again.adaptive.iterations}," in again.spec


def test_corrupt_profile_is_reported_and_replaced(tmp_path, data_dir):
    from descent.api import Opponent
    path = adaptive.profile_path("bob")
    path.parent.mkdir(parents=True)
    path.write_text('{"games": {"x": {"log_budget": "NaN"')
    said = []
    a = Adaptive("bob", GAME, root=tmp_path, warn=said.append)
    assert len(said) == 1 and "unreadable" in said[0] and "\n" not in said[0]
    assert a.iterations == adaptive.DEFAULT_ITERATIONS
    a.record(1.0)
    assert json.loads(path.read_text())["games"][GAME]["games"] == 1
    assert path.with_name(path.name + ".corrupt").exists()
    Opponent(GAME, level="adaptive", player="bob", root=tmp_path)       # reads the new one fine


def test_adaptive_bad_input():
    with pytest.raises(ProfileError):
        adaptive.profile_path("../../etc/passwd")
    from descent.api import Opponent
    from games.errors import GameError
    with pytest.raises(GameError):
        Opponent(GAME, level="adaptive")
    r = CliRunner().invoke(cli, ["play", GAME, "--level", "adaptive"])
    assert r.exit_code == 2 and "--player" in r.output.strip().splitlines()[-1]
    r = CliRunner().invoke(cli, ["play", GAME, "--level", "adaptive", "--player", "a/b"])
    assert r.exit_code == 2 and r.output.strip().splitlines()[-1].startswith("Error: player name")


def test_play_adaptive_in_the_terminal_updates_the_profile(tmp_path, data_dir):
    pexpect = pytest.importorskip("pexpect")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")
    for expected in (25, 6):                    # two resignations: 100 -> 25 -> 6.25 (rounded)
        child = pexpect.spawn(sys.executable, ["-m", "descent", "play", "tic_tac_toe", "--plain", "--net",
                                               "none", "--seat", "second", "--level", "adaptive",
                                               "--player", "pat"], env=env, encoding="utf-8", timeout=300)
        child.expect(r"Opponent: adaptive for pat: minibal_plus at \d+ iterations")
        child.expect(r"Your move \(o\): ")
        child.sendline("resign")
        child.expect(rf"Your profile is updated: next game adaptive for pat: minibal_plus at {expected} iterations")
        child.expect(r"Save the record to a file \(empty: no\)\? ")
        child.sendline("")
        child.expect(pexpect.EOF)
    saved = json.loads(adaptive.profile_path("pat").read_text())
    assert saved["games"]["tic_tac_toe"]["games"] == 2


# ---- with pools: calibrate --against pool, evaluate minibal_plus:calibrated, report, ladder ---------

@pytest.fixture(scope="module")
def pool_run(tmp_path_factory):
    """A run of tic_tac_toe with two members (untrained networks of different seeds, an early and a
    final checkpoint each), ranked into pools."""
    from descent.tournament import rank
    from training.fileio import write_json
    from training.network import build_model, save_weights
    root = tmp_path_factory.mktemp("runs")
    run = root / "tic_tac_toe"
    run.mkdir()
    cfg = {"network": {"filters": 4, "blocks": 1, "head_units": 8}}
    write_json(run / "run.json", {"game": "tic_tac_toe", "config": cfg, "seed": 0, "format": "descent-run-1",
                                  "milestones": [["early", 1.0], ["final", 2.0]]})
    for m in range(2):
        d = run / f"member_{m:02d}"
        d.mkdir()
        for name, secs, seed in (("early", 1.0, 100 + m), ("final", 2.0, m)):
            save_weights(d / f"milestone_{name}.weights.h5", build_model((3, 3, 2), 4, 1, 8, seed=seed),
                         {"game": "tic_tac_toe", "member": m, "milestone": name, "milestone_seconds": secs,
                          "network": cfg["network"], "planes_shape": [3, 3, 2]})
    rank(run, "tic_tac_toe", "minimax:iterations=5", games_per_pair=2, progress=False, echo=lambda *a: None)
    return run


def test_pool_calibration_feeds_evaluate_report_play_and_the_ladder(pool_run, tmp_path):
    from descent.api import Opponent
    from descent.report import make_report
    from descent.tournament import ProtocolError, evaluate
    with pytest.raises(ProtocolError, match="no calibration of minibal_plus"):
        evaluate(pool_run, "tic_tac_toe", ["minibal_plus:calibrated"], ["iterations=3"], progress=False,
                 opponent_budget="iterations=5")
    s = Settings("tic_tac_toe", against="pool", low=1, high=40, opponent_budget="iterations=5", max_games=40,
                 near_games=8)
    res = calibrate(s, pool_run)
    assert res["status"] == "done" and {p["opponent"] for p in read_log(res["log"]).values()} == \
        {lo["net"] for lo in json.loads((pool_run / "pools.json").read_text())["low"]}
    n = evaluate(pool_run, "tic_tac_toe", ["minibal_plus", "minibal_plus:calibrated"], ["iterations=2", "iterations=50"],
                 opponent_budget="iterations=5", games_per_pair=2, progress=False)
    assert n == 3 * 2
    rep = make_report([pool_run / "results.db"], tmp_path / "report")
    cal_rows = [r for r in rep["records"] if r["algorithm"] == "minibal_plus:calibrated"]
    assert [r["budget"] for r in cal_rows] == [f"iterations={res['budget']}"]
    assert "side by side" in rep["table"]
    assert f"calibrated minibal_plus iterations={res['budget']}: gain" in rep["table"]
    assert "uncalibrated iterations=" in rep["table"]
    # play: the balanced level uses the calibrated budget with the best network
    bot = Opponent("tic_tac_toe", level="balanced", root=pool_run.parent)
    assert f"iterations={res['budget']}," in bot.spec and "net=" in bot.spec
    # the adaptive ladder: the playout floor, both low nets and the high net with Minibal_+, then
    # Minimax on top
    a = Adaptive("lee", "tic_tac_toe", root=pool_run.parent)
    assert [r["algorithm"] for r in a.rungs] == ["minibal_plus"] * 3 + ["minimax"]
    assert a.rungs[0]["net"] is None and all(r["net"] for r in a.rungs[1:])
    assert a.entry["rung"] == 2 and a.iterations == res["budget"]
    for _ in range(12):                          # a person who always wins pushes it to the top rung
        a.record(1.0)
    assert a.rung["algorithm"] == "minimax"


def test_mcts_at_equal_cpu_is_measured_once_recorded_and_reported(pool_run, tmp_path):
    """Table 4 as the paper plays it: plain MCTS given the CPU a move of a reference budget; the
    iterations are measured once, recorded in the run, reused by a rerun and shown in the report."""
    from descent.equal_cpu import record_path
    from descent.report import make_report
    from descent.tournament import ProtocolError, evaluate
    for bad in ("equal-cpu=minimax", "equal-cpu=minimax:iterations=3,net=x.h5", "equal-cpu=nope:iterations=3"):
        with pytest.raises(ProtocolError, match="opponent budget"):
            evaluate(pool_run, "tic_tac_toe", ["minibal_plus"], ["iterations=2"], opponent="mcts",
                     opponent_budget=bad, games_per_pair=2, progress=False)
    label = "equal-cpu=minimax:iterations=3"
    n = evaluate(pool_run, "tic_tac_toe", ["minibal_plus"], ["iterations=2", "iterations=6"], opponent="mcts",
                 opponent_budget=label, games_per_pair=2, progress=False)
    assert n == 2 * 2                                   # one high network x 2 budgets x 2 games
    path = record_path(pool_run, "minimax:iterations=3")
    rec = json.loads(path.read_text())
    assert rec["game"] == "tic_tac_toe" and rec["reference"] == "minimax:iterations=3"
    assert rec["mcts_iterations"] == max(1, round(rec["reference_cpu_per_move_median"]
                                                  * rec["mcts_iterations_per_cpu_second"]))
    assert rec["reference_moves"] > 0 and rec["mcts_positions"] > 0
    before = path.read_bytes()
    assert evaluate(pool_run, "tic_tac_toe", ["minibal_plus"], ["iterations=2", "iterations=6"], opponent="mcts",
                    opponent_budget=label, games_per_pair=2, progress=False) == 0
    assert path.read_bytes() == before                  # reused, not measured again
    with ResultsDB(pool_run / "results.db") as db:
        rows = [r for r in db.rows("evaluate") if r["opponent_budget"] == label]
    assert len(rows) == 4 and {r["agent_b"] for r in rows} == {f"mcts:iterations={rec['mcts_iterations']}"}
    rep = make_report([pool_run / "results.db"], tmp_path / "report")
    assert f"mcts:iterations={rec['mcts_iterations']}" in rep["table"] and "equal CPU" in rep["table"]
    cells = [r for r in rep["records"] if r["opponent_budget"] == label]
    assert sorted(r["budget"] for r in cells) == ["iterations=2", "iterations=6"]
    assert all(r["high_networks"] == 1 and r["low_networks"] == 0 for r in cells)


def test_rule_follows_a_person_who_improves(monkeypatch):
    def late_score(reps=60):
        rng = random.Random(3)
        late = []
        for _ in range(reps):
            e = {"log_budget": math.log(100), "rung": 0, "k": 0, "last_direction": 0}
            for g in range(90):
                person = math.log(20) if g < 60 else math.log(3000)       # a jump after 60 games
                s = 1.0 if rng.random() < 1 / (1 + math.exp(2.5 * (e["log_budget"] - person))) else 0.0
                if g >= 70:
                    late.append(1 - s)
                update(e, s, 1, 1, 10000)
        return sum(late) / len(late)
    assert abs(late_score() - 0.5) <= 0.1
    monkeypatch.setattr(adaptive, "RUN_GROW", 10 ** 9)                 # without the growing steps
    assert abs(late_score() - 0.5) > 0.2


def test_a_second_calibration_of_the_same_log_is_refused(tmp_path):
    from descent.calibrate import CalibrationError, lock_log
    from training.layout import CALIBRATIONS_DIR as SUBDIR
    s = Settings(GAME, algorithm=BALANCED, against="random", low=1, high=300)
    (tmp_path / SUBDIR).mkdir()
    with lock_log(tmp_path / SUBDIR / names(s)[1]):      # as another process would hold it
        with pytest.raises(CalibrationError, match="another process is running this calibration"):
            calibrate(s, tmp_path, players=Curve(50))
    assert calibrate(s, tmp_path, players=Curve(50))["status"] == "done"


def test_calibrate_killed_by_sigkill_resumes_to_the_same_answer(tmp_path):
    import signal
    import subprocess
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")
    args = [sys.executable, "-m", "descent", "calibrate", GAME, "--algorithm", BALANCED, "--against",
            "mcts:iterations=100", "--range", "1:200", "--max-games", "120", "--near-games", "16"]
    log = tmp_path / "killed" / "calibrations" / names(_settings())[1]
    # killed (SIGKILL) right after its 5th game is logged: an exact point, not a moment
    p = subprocess.run(args + ["--run", str(tmp_path / "killed")], capture_output=True, text=True,
                       env=dict(env, DESCENT_CRASH_AT="calibrate_logged:5"))
    assert p.returncode == -signal.SIGKILL and len(log.read_text().splitlines()) == 5
    r = subprocess.run(args + ["--run", str(tmp_path / "killed")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    resumed = json.loads((log.parent / names(_settings())[0]).read_text())
    whole = calibrate(_settings(), tmp_path / "whole")                       # never killed
    assert (resumed["budget"], resumed["games"], resumed["points"]) == (whole["budget"], whole["games"],
                                                                        whole["points"])
    keys = [(json.loads(x)["budget"], json.loads(x)["k"]) for x in log.read_text().splitlines()]
    assert len(keys) == len(set(keys))
    assert not list(log.parent.glob(".*.tmp"))


def test_calibration_games_start_from_shared_random_openings(tmp_path):
    """Deterministic players (fixed iterations) would replay one game per seat: every pair of games
    starts from its own seeded opening, the same for both seats, another at every budget."""
    from descent.calibrate import CalibrationError, Players
    s = Settings("tic_tac_toe", algorithm="minibal_plus", against="minimax:iterations=5")
    p = Players(s, tmp_path)
    t = {(b, k): p.task(b, k) for b in (2, 8) for k in range(6)}
    assert all(len(x["opening"]) == 4 for x in t.values())
    assert t[(2, 0)]["opening"] == t[(2, 1)]["opening"] and t[(8, 0)]["opening"] == t[(8, 1)]["opening"]
    assert len({tuple(t[(b, k)]["opening"]) for b in (2, 8) for k in (0, 2, 4)}) == 6
    rec = p.play(2, 0)
    assert rec["plies"] >= 4
    assert "opening_plies" in s.game_key() and Settings("tic_tac_toe", opening_plies=0).game_key() != s.game_key()
    assert Players(Settings("tic_tac_toe", algorithm="minibal_plus", against="minimax:iterations=5",
                            opening_plies=0), tmp_path).task(2, 0)["opening"] == []
    with pytest.raises(CalibrationError, match="opening_plies"):
        calibrate(Settings("tic_tac_toe", algorithm="minibal_plus", against="minimax:iterations=5",
                           opening_plies=-1), tmp_path)
