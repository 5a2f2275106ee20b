"""A game shipped in a package of its own: the worked example (examples/connect_four.py) made an
installable package in a temporary folder, with a ``descent.games`` entry point, installed by pip
(offline: no index, no build isolation, the environment's own setuptools) into a folder put on
``PYTHONPATH``. The game is then found by its entry point's name, not by ``module:Class``: listed by
``descent games``, matched, trained for a few seconds, ranked, and played in a scripted terminal
session. Every random choice is seeded; no test asserts what a time budget achieves beyond the
games ``--min-games`` guarantees."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAME = "c4_plugin"                  # the entry point's name: the game's name
MODULE = "c4_plugin_game"           # the package's module (a copy of examples/connect_four.py)

PYPROJECT = f"""\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "descent-c4-plugin"
version = "0.1"
description = "Connect Four for descent, as a plugin package"

[project.entry-points."descent.games"]
{NAME} = "{MODULE}:ConnectFour"

[tool.setuptools]
py-modules = ["{MODULE}"]
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The package built from examples/ and installed by pip into a folder of its own."""
    pytest.importorskip("setuptools", reason="pip's setuptools backend is needed to build the package")
    base = tmp_path_factory.mktemp("plugin")
    src, target = base / "src", base / "site"
    src.mkdir()
    shutil.copy(ROOT / "examples" / "connect_four.py", src / f"{MODULE}.py")
    (src / "pyproject.toml").write_text(PYPROJECT)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                        "--disable-pip-version-check", "--quiet", "--target", str(target), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (points,) = target.glob("descent_c4_plugin-0.1.dist-info/entry_points.txt")
    assert f"{NAME} = {MODULE}:ConnectFour" in points.read_text()
    return target


def env_with(site):
    """The environment of a command run elsewhere (a temporary folder: nothing of the repository's
    directory is on the path but the package itself, through PYTHONPATH)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]), TF_CPP_MIN_LOG_LEVEL="3")


def descent(site, *args, cwd):
    return subprocess.run([sys.executable, "-m", "descent", *args], cwd=cwd, env=env_with(site),
                          capture_output=True, text=True, timeout=600)


def test_the_installed_package_is_found_by_its_entry_point(site, tmp_path):
    r = descent(site, "games", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"{NAME}  (version 1; written in Python: {MODULE}:ConnectFour)" in r.stdout
    assert "players red (first), yellow; actions 7; ply cap 42; planes 6x7x2" in r.stdout
    r = descent(site, "games", NAME, cwd=tmp_path)
    assert r.returncode == 0 and "written in Python" in r.stdout
    r = descent(site, "check-game", f"{NAME}(rows=5,columns=5)", "--games", "3", "--depth", "2", cwd=tmp_path)
    assert r.returncode == 0 and "8 of 8 checks passed" in r.stdout, r.stdout + r.stderr
    without = subprocess.run([sys.executable, "-m", "descent", "games", NAME], cwd=tmp_path, capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert without.returncode == 2 and without.stderr.startswith(f"Error: unknown game '{NAME}'")


def test_a_seeded_match_on_the_installed_game(site, tmp_path):
    args = ["match", NAME, "--first", "minimax:iterations=40", "--second", "mcts:iterations=40", "--games", "2",
            "--seed", "4", "--verbose"]
    first, again = descent(site, *args, cwd=tmp_path), descent(site, *args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    played = [re.findall(r"game \d+: [^\r\n]*", r.stdout) for r in (first, again)]
    assert len(played[0]) == 2 and played[0] == played[1]
    assert "2 games, seats alternating" in first.stdout


def test_the_installed_game_is_trained_and_ranked(site, tmp_path):
    out = tmp_path / "run"
    r = descent(site, "train", NAME, "--population", "2", "--budget", "4s", "--milestones", "2s,4s",
                "--min-games", "3", "--workers", "1", "--seed", "2", "--out", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    for member in ("member_00", "member_01"):
        meta = json.loads((out / member / "milestone_4s.json").read_text())
        assert meta["games"] >= 3 and meta["game"] == NAME
    r = descent(site, "rank", NAME, "--run", str(out), "--agent", "minimax:iterations=10", "--games-per-pair", "2",
                "--opening-plies", "1", "--seed", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (out / "pools.json").is_file()


def test_a_scripted_terminal_game_on_the_installed_game(site, tmp_path):
    pexpect = pytest.importorskip("pexpect")
    record = tmp_path / "game.txt"
    child = pexpect.spawn(sys.executable, ["-m", "descent", "play", NAME, "--plain", "--iterations", "30", "--net",
                                           "none", "--seed", "3", "--save", str(record)],
                          cwd=str(tmp_path), env=env_with(site), encoding="utf-8", timeout=300)
    child.expect("you play red")
    child.sendline("z")                                  # not a column: refused, asked again
    child.expect("That move is not possible")
    while True:
        i = child.expect([r"Your move \(red\): ", "Result: "])
        if i == 1:
            break
        child.sendline("moves")
        child.expect(r"Legal moves: ([^\r\n]*)")
        legal = child.match.group(1).split(", ")
        child.expect(r"Your move \(red\): ")
        child.sendline(legal[len(legal) // 2])          # the middlemost open column
    child.expect(r"Game record: 1\.")
    child.expect(pexpect.EOF)
    text = record.read_text()
    assert text.startswith(f'[Game "{NAME}"]\n[You "red"]\n[Result "')
    moves = text.strip().splitlines()[-1].split()
    assert moves[0] == "d" and set(moves) <= set("abcdefg")          # the first move: the middle column
