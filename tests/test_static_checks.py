"""The static checks of the test command: ruff on the Python packages and cython-lint on the
compiled sources, with the settings of pyproject.toml ([tool.ruff], [tool.cython-lint]), and zero
findings; mypy ([tool.mypy]) on descent/ and training/ with zero findings (on games/ and search_ext/
with the compiled modules' stubs: tests/test_stubs.py); and no import inside a function without a
comment saying why it is lazy."""
import ast
import os
import re
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


def test_mypy_finds_nothing_in_descent_and_training():
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    r = subprocess.run([sys.executable, "-m", "mypy", "-p", "descent", "-p", "training"],
                       cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert r.returncode == 0 and "Success: no issues found" in r.stdout, r.stdout[-6000:] + r.stderr[-2000:]


def _deferred_imports_without_reason(files) -> list[str]:
    """``path:line: statement`` of each import inside a function whose line (or the line above)
    has no ``# lazy: ...`` comment saying why it is not at the module's top."""
    out = []
    for path in files:
        text = path.read_text()
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    here = lines[node.lineno - 1]
                    above = lines[node.lineno - 2] if node.lineno > 1 else ""
                    if not re.search(r"#\s*lazy: \S", here) and not re.search(r"^\s*#\s*lazy: \S", above):
                        out.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:"
                                   f"{node.lineno}: {here.strip()}")
    return sorted(set(out))


def test_imports_are_at_module_top_unless_a_comment_says_why():
    files = [p for pkg in ("descent", "training") for p in sorted((ROOT / pkg).rglob("*.py"))]
    files += [p for pkg in ("games", "search_ext") for p in sorted((ROOT / pkg).glob("*.py"))]
    assert len(files) > 50
    found = _deferred_imports_without_reason(files)
    assert not found, "\n".join(
        ["imports inside functions without a '# lazy: why' comment (move them to the top):", *found])


def test_the_lazy_import_check_finds_a_planted_import(tmp_path):
    src = tmp_path / "planted.py"
    src.write_text("import os\n\n\ndef f():\n    import json\n    # lazy: TensorFlow\n"
                   "    import tensorflow\n    import ray  # lazy: Ray\n    return json, os\n\n\n"
                   "class C:\n    def m(self):\n        from pathlib import Path\n        return Path\n")
    found = _deferred_imports_without_reason([src])
    assert sorted(f.split(":", 2)[1:] for f in found) == [["14", " from pathlib import Path"],
                                                          ["5", " import json"]]


def test_compiler_directives_are_set_once_in_the_build():
    """setup.py sets the Cython directives (``DESCENT_DEBUG=1`` turns bounds checks back on); a
    ``# cython:`` header in a source would override them, so a debug build would not check it."""
    headers = [f"{p.relative_to(ROOT)}:{n}: {line}" for pkg in PACKAGES
               for p in sorted((ROOT / pkg).glob("*.p[yx][xd]"))
               for n, line in enumerate(p.read_text().splitlines(), 1) if re.match(r"#\s*cython\s*:", line)]
    assert not headers, "\n".join(headers)


def test_benchmarks_and_shipped_configs_cite_no_issue_numbers_and_edit_no_import_path():
    """bench/ holds benchmarks run as modules (``python -m bench.NAME``) through one harness: no
    script edits ``sys.path``, and neither a benchmark nor a shipped config cites the tracker's
    issue numbers (what they measure or set is said in words)."""
    issue = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)
    path_edit = re.compile(r"sys\.path\s*(\.\w+\(|\[|\+?=)")
    found = []
    files = sorted((ROOT / "bench").glob("*.py")) + sorted((ROOT / "configs").rglob("*.toml"))
    assert len(files) > 20
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if issue.search(line) or (path.suffix == ".py" and path_edit.search(line)):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
