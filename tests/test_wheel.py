"""A non-editable install works from any directory.

The test builds descent's wheel from this checkout, installs it into a fresh virtual environment
(its dependencies, TensorFlow included, are borrowed from the test's own environment by a plain
path entry, so the checkout's editable install is not on the path), and from an empty directory:
lists the shipped networks (found inside the installed package), plays a move against the shipped
reversi 6x6 network, and trains two tic-tac-toe games, whose run lands in ``./checkpoints/`` and
never in site-packages.
"""
from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _run(args, cwd, env, stdin=None, timeout=900):
    proc = subprocess.run(args, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr[-2000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    # the build runs in this environment (Cython, numpy and setuptools come from the test extra)
    # DESCENT_DEBUG: compiled at -O0, about 4x faster to build than the release's -O3 (this test
    # checks what the wheel holds and where it runs, not its speed)
    env = dict(os.environ, DESCENT_BUILD_JOBS="2", DESCENT_DEBUG="1")
    env.pop("DESCENT_DATA", None)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist),
          str(ROOT)], cwd=base, env=env, timeout=3600)
    wheel = next(dist.glob("descent-*.whl"))
    venv = base / "env"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base, env=env)
    python = venv / "bin" / "python"
    target = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       cwd=base, env=env).strip())
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
         cwd=base, env=env)
    # the dependencies: this environment's site-packages as a plain path (its .pth files, the
    # editable install of this checkout among them, are not processed from there)
    deps = [p for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                        *site.getsitepackages()} if Path(p).is_dir()]
    (target / "zz_borrowed_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")
    work = base / "work"
    work.mkdir()
    run_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DESCENT_DATA")}
    run_env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return {"python": python, "site": target, "work": work, "env": run_env}


def descent(installed, *args, stdin=None):
    return _run([str(installed["python"]), "-m", "descent", *args], cwd=installed["work"],
                env=installed["env"], stdin=stdin)


def test_the_installed_package_is_the_wheel_not_the_checkout(installed):
    where = _run([str(installed["python"]), "-c", "import descent, games; print(descent.__file__); "
                  "print(games.__file__)"], cwd=installed["work"], env=installed["env"])
    for line in where.split():
        assert Path(line).resolve().is_relative_to(installed["site"].resolve()), where
        assert not Path(line).resolve().is_relative_to(ROOT)


def test_type_information_travels_with_the_wheel(installed):
    """py.typed in every package and the stubs of the compiled modules (tests/test_stubs.py checks
    that they agree with the modules), so that a type checker reads the installed package."""
    for pkg in ("games", "search_ext", "descent", "training"):
        assert (installed["site"] / pkg / "py.typed").is_file(), pkg
    stubs = [p.relative_to(ROOT) for pkg in ("games", "search_ext") for p in (ROOT / pkg).glob("*.pyi")]
    assert stubs and sorted(str(s) for s in stubs if not (installed["site"] / s).is_file()) == []


def test_shipped_networks_and_configs_travel_with_the_wheel(installed):
    out = descent(installed, "checkpoints")
    assert "SHIPPED" in out and "reversi(size=6)" in out
    assert str(installed["site"] / "descent" / "data" / "shipped") in out
    out = descent(installed, "play", "reversi(size=6)", "--level", "strongest", "--iterations", "5",
                  "--plain", stdin="moves\nresign\n")
    assert "shipped with descent" in out
    assert "No trained network found" not in out


def test_a_run_lands_in_the_current_directory(installed):
    # a game budget (2 games), not a time budget: what lands does not depend on the machine's speed
    out = descent(installed, "train", "tic_tac_toe", "--population", "1", "--budget", "10m", "--max-games", "2")
    run = installed["work"] / "checkpoints" / "tic_tac_toe"
    assert (run / "run.json").is_file(), out
    assert (run / "member_00" / "latest.h5").is_file()
    status = json.loads((run / "member_00" / "status.json").read_text())
    assert status["games"] == 2
    assert not (installed["site"] / "checkpoints").exists()
    assert not any(installed["site"].glob("descent/data/shipped/tic_tac_toe/member_*"))
