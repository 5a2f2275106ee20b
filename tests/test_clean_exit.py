"""A command ends without runtime warnings: a short pipeline (training with 2 worker processes,
rank, evaluate and report, each with a process pool) leaves nothing for the interpreter to warn
about at exit (leaked semaphores of a terminated pool, unclosed files, threads)."""
import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_a_short_pipeline_ends_without_warnings(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3",
               DESCENT_DATA=str(tmp_path / "data"), PYTHONWARNINGS="default")
    # a game budget (--max-games 2 a member), not a time one: the milestones (a millisecond or two
    # of training) are written by the first counted game on any machine
    proc = subprocess.run([sys.executable, "-m", "descent", "pipeline", "tic_tac_toe", "--population", "2",
                           "--budget", "1h", "--milestones", "0.001s,0.002s", "--max-games", "2",
                           "--min-milestone-games", "1", "--workers", "2",
                           "--iterations", "5", "--opponent-time", "iterations=5", "--games-per-pair", "2"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = tmp_path / "data" / "tic_tac_toe"
    assert (run / "report").is_dir()
    for member in ("member_00", "member_01"):          # the game budget, whatever the machine's speed
        assert json.loads((run / member / "status.json").read_text())["games"] == 2
    bad = [line for line in proc.stderr.splitlines()
           if re.search(r"Warning|leaked|Traceback|Exception ignored|ResourceWarning", line)]
    assert not bad, "\n".join(bad)
    # the pipeline recorded the milestones it chose: rank found them in run.json
    assert "records no milestones" not in proc.stdout + proc.stderr
