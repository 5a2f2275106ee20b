"""One training plan (``descent.plan``) for the three drivers that train: ``descent train``,
``descent pipeline`` and ``descent experiment`` refuse the same bad plan with the same one line
(exit 2, nothing written) and accept the same good one. Budgets of the runs here are games
(``--max-games``), never seconds of a machine: the milestones (a millisecond or two of training)
are reached by the first counted game on any machine."""
import json
import os
import subprocess
import sys

import pytest

from descent.plan import PlanError, build_plan, check_schedule

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")

TINY = """
[game]
spec = "tic_tac_toe"
[network]
filters = 8
blocks = 1
head_units = 16
[selfplay]
iterations = 20
[training]
replay_games = 30
min_sample = 64
batch_size = 32
[run]
population = 1
learner = "inline"
inference = "numpy"
"""

EXPERIMENT = """
[experiment]
name = "plan"
runs = "{runs}"
report = "{report}"
[train]
population = {population}
budget = "{budget}"
milestones = "{milestones}"
[rank]
agent = "minimax:iterations=10,decision=safe"
[evaluate]
algorithms = ["minimax"]
budgets = ["iterations=3"]
[[opponents]]
kind = "pool"
budget = "iterations=10"
[[games]]
spec = "tic_tac_toe"
config = "{config}"
"""

GOOD = ("1h", "0.001s,0.002s")


def descent(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout)


@pytest.fixture
def files(tmp_path):
    config = tmp_path / "tiny.toml"
    config.write_text(TINY)
    return {"config": config, "runs": tmp_path / "runs", "report": tmp_path / "report",
            "experiment": tmp_path / "experiment.toml"}


def run_drivers(files, budget, milestones, population=2, pipeline_args=(), experiment_args=()):
    """The three drivers on one plan (train and pipeline into the experiment's run directory)."""
    run = files["runs"] / "tic_tac_toe"
    files["experiment"].write_text(EXPERIMENT.format(budget=budget, milestones=milestones,
                                                     population=population, **files))
    common = ["--budget", budget, "--milestones", milestones, "--population", str(population),
              "--out", str(run), "--max-games", "1"]
    return {"train": descent("train", "tic_tac_toe", "--config", str(files["config"]), *common),
            "pipeline": descent("pipeline", "tic_tac_toe", *common, *pipeline_args),
            "experiment": descent("experiment", str(files["experiment"]), *experiment_args)}


@pytest.mark.parametrize("budget, milestones, line", [
    ("10s", "5s,20s", "training plan: milestone(s) 20s lie beyond the budget 10s"),
    ("10s", "20s,30s", "training plan: milestone(s) 20s, 30s lie beyond the budget 10s"),
    ("soon", "1s,2s", "training plan: bad duration 'soon' (expected a number with s, m, h or d, e.g. 20m)"),
    ("10s", "5s,5.0s", "training plan: milestones '5s,5.0s': 5s and 5.0s are the same milestone"),
    ("10s", "5s,,8s", "training plan: milestones: '5s,,8s' has an empty item (expected a comma-separated list)"),
])
def test_the_drivers_refuse_a_bad_plan_with_the_same_line(files, budget, milestones, line):
    out = run_drivers(files, budget, milestones)
    for driver, r in out.items():
        assert r.returncode == 2, (driver, r.stdout, r.stderr)
        assert r.stderr == f"Error: {line}\n", (driver, r.stderr)
        assert "Traceback" not in r.stdout + r.stderr
    assert not files["runs"].exists()                 # refused before anything is written


def test_a_ranked_driver_needs_two_milestones(files):
    """pipeline and experiment rank an early against a final checkpoint: one milestone is refused
    alike; train (which ranks nothing) takes it."""
    out = run_drivers(files, "10s", "10s")
    line = "Error: training plan: milestones '10s': a ranked run needs two, an early and a final checkpoint\n"
    assert out["pipeline"].returncode == out["experiment"].returncode == 2
    assert out["pipeline"].stderr == out["experiment"].stderr == line
    assert build_plan("tic_tac_toe", config=files["config"], budget="10s", milestones="10s",
                      out=files["runs"] / "x").milestones == (("10s", 10.0),)


def test_the_drivers_accept_the_same_good_plan(files):
    """train trains it (one game a member); experiment finds the same run complete (the same plan:
    config, population, seed, milestones) and trains nothing; pipeline goes past the plan to its
    next check (a rank agent that does not exist here, so that it stops before training)."""
    run = files["runs"] / "tic_tac_toe"
    out = run_drivers(files, *GOOD, pipeline_args=("--rank-agent", "nosuch"),
                      experiment_args=("--stage", "train"))
    assert out["train"].returncode == 0, out["train"].stderr
    for m in (0, 1):
        assert (run / f"member_0{m}" / "milestone_0.002s.weights.h5").is_file()
    # train records the milestones it chose, where rank reads the early and final checkpoints
    assert json.loads((run / "run.json").read_text())["milestones"] == [["0.001s", 0.001], ["0.002s", 0.002]]
    r = out["experiment"]
    assert r.returncode == 0, r.stderr
    assert "every member has reached 0.001s, 0.002s; nothing to train" in r.stdout, r.stdout + r.stderr
    assert "checkpoints are now" not in r.stdout            # already recorded by train
    r = out["pipeline"]
    assert r.returncode == 2 and "training plan" not in r.stderr and "nosuch" in r.stderr, r.stderr


def test_check_schedule_is_the_rule():
    assert check_schedule("2m", "30s,2m", ranked=True) == (120.0, [("30s", 30.0), ("2m", 120.0)])
    assert check_schedule("2m", "30s") == (120.0, [("30s", 30.0)])
    with pytest.raises(PlanError, match="lie beyond the budget 2m"):
        check_schedule("2m", "30s,3m")
    with pytest.raises(PlanError, match="a ranked run needs two"):
        check_schedule("2m", "2m", ranked=True)


def test_a_config_of_another_game_is_refused_by_every_plan(files):
    other = files["config"].with_name("other.toml")
    other.write_text(TINY.replace('"tic_tac_toe"', '"reversi(size=6)"'))
    with pytest.raises(Exception, match="a config for reversi"):
        build_plan("tic_tac_toe", config=other, budget="1m", milestones="30s,1m")
