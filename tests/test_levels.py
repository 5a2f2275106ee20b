"""``descent rate-levels`` (descent.levels) end to end on tic-tac-toe: the table it writes is the one
``descent levels`` and ``--elo`` read, a killed run resumes without replaying a stored game, a
changed level plays anew, an outside reference is recorded and shown, errors are one line.

Budgets are games and iterations (never time), and every game is seeded, so nothing here depends
on the machine's speed."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from descent import shipped, strength
from descent.cli import cli

ROOT = Path(__file__).resolve().parent.parent
GAME = "tic_tac_toe"
SMALL = ["--games", "10", "--rung-games", "4", "--rungs", "1,3,10", "--anchor", "3", "--h2h-games", "2",
         "--bootstrap", "20", "--phase", "rate,h2h,reference", "--reference", "mcts:iterations=5",
         "--reference-games", "2"]
ENV = {k: x for k, x in os.environ.items() if k != "DESCENT_CRASH_AT"}


def _base(tmp_path, name="shipped") -> Path:
    base = tmp_path / name
    base.mkdir()
    shutil.copytree(shipped.entry_dir(GAME), base / shipped.entry_dir(GAME).name)
    (base / shipped.entry_dir(GAME).name / strength.TABLE_FILE).unlink(missing_ok=True)
    return base


def _run(base, db, *extra, crash=None):
    env = dict(ENV, DESCENT_CRASH_AT=crash) if crash else ENV
    return subprocess.run([sys.executable, "-m", "descent", "rate-levels", GAME, "--shipped", str(base),
                           "--db", str(db), *SMALL, *extra], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)


def _keys(db) -> list[str]:
    with sqlite3.connect(db) as c:
        return sorted(r[0] for r in c.execute("SELECT match_key FROM matches"))


def test_rate_levels_writes_the_table_that_levels_and_elo_read_and_resumes_after_a_kill(tmp_path):
    whole, killed = _base(tmp_path, "whole"), _base(tmp_path, "killed")
    r = _run(whole, tmp_path / "whole.db")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "game(s) played; table written to" in r.stdout
    t = strength.load_table(whole / shipped.entry_dir(GAME).name / strength.TABLE_FILE, GAME)
    assert {"easy", "medium", "hard", "strongest", "balanced", "adaptive"} <= set(t["levels"])
    assert t["anchor"] == "this project's MCTS 3 iterations = 0" and t["anchor_label"] == "mcts3"
    assert t["head_to_head"] and {x["level"] for x in t["reference"]} == {"easy", "medium", "hard",
                                                                          "strongest", "balanced"}
    assert all(x["games"] == 2 and x["engine"] == "mcts:iterations=5" for x in t["reference"])
    card = shipped.read_card(whole / shipped.entry_dir(GAME).name)
    assert card["strength"] == strength.card_levels(t)
    # what --elo and descent levels read is this table
    pick = strength.level_for_elo(GAME, t["settings"][0]["elo"], base=whole)
    assert pick["elo"] == t["settings"][0]["elo"]
    out = CliRunner().invoke(cli, ["levels", GAME, "--shipped", str(whole)])
    assert out.exit_code == 0, out.output
    assert "against this project's MCTS 3 iterations = 0" in out.output
    assert "against mcts:iterations=5 (2 games)" in out.output

    # killed (SIGKILL) after the 25th stored game, then rerun: the stored games are not played again
    r = _run(killed, tmp_path / "killed.db", crash="match_stored:25")
    assert r.returncode != 0
    stored = _keys(tmp_path / "killed.db")
    assert len(stored) == 25
    r = _run(killed, tmp_path / "killed.db")
    assert r.returncode == 0, r.stderr[-2000:]
    assert _keys(tmp_path / "killed.db") == _keys(tmp_path / "whole.db")
    played = int(r.stdout.split(" game(s) played")[0].rsplit(" ", 1)[-1])
    assert played == len(_keys(tmp_path / "whole.db")) - 25
    # and a third run plays nothing
    r = _run(killed, tmp_path / "killed.db")
    assert r.returncode == 0 and ": 0 game(s) played" in r.stdout


def test_a_changed_level_plays_anew_and_the_others_keep_their_games(tmp_path):
    base = _base(tmp_path)
    db = tmp_path / "levels.db"
    assert _run(base, db).returncode == 0
    before = _keys(db)
    cal = base / shipped.entry_dir(GAME).name / shipped.CALIBRATION_FILE
    data = json.loads(cal.read_text())
    data["spec"] = data["spec"].replace(f"iterations={data['budget']}", "iterations=7")
    assert "iterations=7" in data["spec"]
    cal.write_text(json.dumps(data))
    r = _run(base, db)
    assert r.returncode == 0, r.stderr[-2000:]
    after = _keys(db)
    new = sorted(set(after) - set(before))
    assert set(before) <= set(after) and new
    assert all("level-balanced=minibal_plus:net=final.weights.h5,iterations=7" in k for k in new)
    t = strength.load_table(base / shipped.entry_dir(GAME).name / strength.TABLE_FILE, GAME)
    assert t["levels"]["balanced"]["spec"].endswith("iterations=7")
    assert t["levels"]["balanced"]["games"] == 10


@pytest.mark.parametrize("args, says", [
    (["reversi(size=8)"], "has no shipped network to rate"),
    ([GAME, "--rungs", "1,3", "--anchor", "100"], "the anchor 100 is not one of the rungs"),
    ([GAME, "--phase", "reference"], "needs an opponent: --reference"),
    ([GAME, "--phase", "sideways"], "phase 'sideways': expected rate, h2h, reference"),
    ([GAME, "--phase", "h2h"], "no rated level yet"),
    ([GAME, "--phase", "reference", "--reference", "nosuch:x=1"], "nosuch"),
])
def test_errors_are_one_line(tmp_path, args, says):
    base = _base(tmp_path)
    r = CliRunner().invoke(cli, ["rate-levels", *args, "--shipped", str(base), "--db", str(tmp_path / "x.db")])
    assert r.exit_code == 2, r.output
    assert says in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_a_reference_is_recorded_beside_a_table_rated_earlier(tmp_path):
    """--phase reference on a game whose table was rated before keeps its levels, head to head and
    source, and adds the levels' scores against the reference."""
    base = _base(tmp_path)
    d = base / shipped.entry_dir(GAME).name
    assert _run(base, tmp_path / "first.db").returncode == 0
    t0 = json.loads((d / strength.TABLE_FILE).read_text())
    del t0["reference"]
    (d / strength.TABLE_FILE).write_text(json.dumps(t0))
    r = CliRunner().invoke(cli, ["rate-levels", GAME, "--shipped", str(base), "--db", str(tmp_path / "ref.db"),
                                 "--phase", "reference", "--reference", "random", "--reference-games", "2"])
    assert r.exit_code == 0, r.output
    t = strength.load_table(d / strength.TABLE_FILE, GAME)
    for k in ("levels", "settings", "head_to_head", "anchor"):
        assert t[k] == t0[k], k
    assert t["source"].startswith(t0["source"]) and "ref.db" in t["source"]
    assert {x["engine"] for x in t["reference"]} == {"random"}


def test_no_module_of_the_package_reads_bench():
    for p in (ROOT / "descent").rglob("*.py"):
        text = p.read_text()
        assert "from bench" not in text and "import bench" not in text, p
    assert not (ROOT / "bench" / "bench_strength.py").exists()
