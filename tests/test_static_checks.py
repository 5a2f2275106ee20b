"""The static checks of the test command: ruff on the Python packages and cython-lint on the
compiled sources, with the settings of pyproject.toml ([tool.ruff], [tool.cython-lint]), and zero
findings. (mypy on the packages with the compiled modules' stubs: tests/test_stubs.py.)"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("descent", "training", "games", "search_ext")
BIN = Path(sys.executable).parent          # the environment's tools (cython-lint runs pycodestyle)


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return found


def _run(args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    r = _run([_tool("ruff"), "check", "--no-cache", *PACKAGES])
    assert r.returncode == 0, r.stdout + r.stderr


def test_cython_lint_finds_nothing():
    sources = sorted(str(p.relative_to(ROOT)) for pkg in PACKAGES
                     for pattern in ("*.pyx", "*.pxd") for p in (ROOT / pkg).glob(pattern))
    assert len(sources) > 20
    r = _run([_tool("cython-lint"), *sources])
    assert r.returncode == 0 and not r.stdout.strip(), r.stdout + r.stderr
