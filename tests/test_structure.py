"""Package layering and quiet output.

Layers: ``search_ext`` (searches) imports nothing from ``training`` or ``descent``; ``training``
(networks, self-play) nothing from ``descent`` (orchestration, CLI), the layer that composes a
search with a network (``descent.networks``).
"""
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FORBIDDEN = {
    "search_ext": {"training", "descent"},
    "training": {"descent"},
}
_CIMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+(?:c?import)|c?import\s+([\w.]+))", re.M)


def imported_modules(path: Path) -> set:
    """Every module a file imports (at any depth: lazy imports inside functions count)."""
    text = path.read_text()
    if path.suffix == ".py":
        found = set()
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
                if node.args and isinstance(node.args[0], ast.Constant):
                    found.add(str(node.args[0].value))
        return found
    return {m for pair in _CIMPORT.findall(text) for m in pair if m}    # .pyx / .pxd


def test_layers_import_nothing_from_above():
    bad = []
    for package, banned in FORBIDDEN.items():
        files = [p for ext in ("*.py", "*.pyx", "*.pxd") for p in (ROOT / package).rglob(ext)]
        assert files, package
        for path in files:
            for mod in imported_modules(path):
                if mod.split(".")[0] in banned:
                    bad.append(f"{path.relative_to(ROOT)} imports {mod}")
    assert not bad, "\n".join(bad)


def test_the_checker_sees_imports(tmp_path):
    """The scan finds top-level, lazy and Cython imports (so the rule above can fail)."""
    py = tmp_path / "m.py"
    py.write_text("import os\ndef f():\n    from training.network import build_model\n")
    pyx = tmp_path / "m.pyx"
    pyx.write_text("from descent.cli cimport x\ncimport training.selfplay\n")
    assert "training.network" in imported_modules(py)
    assert {"descent.cli", "training.selfplay"} <= imported_modules(pyx)


BANNERS = ("oneDNN custom operations", "absl::InitializeLog", "cuda_", "TF-TRT",
           "This TensorFlow binary is optimized", "port.cc", "cpu_feature_guard")


def test_no_tensorflow_banners_in_command_output(tmp_path):
    """A training run with two worker processes: nothing from TensorFlow's start-up in the output
    (the environment has no TF_CPP_MIN_LOG_LEVEL of its own)."""
    cfg = tmp_path / "tiny.toml"
    cfg.write_text('[game]\nspec = "tic_tac_toe"\n[network]\nfilters = 4\nblocks = 1\nhead_units = 4\n'
                   '[selfplay]\niterations = 3\n[training]\nmin_sample = 8\nbatch_size = 8\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "ABSL"))}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    r = subprocess.run([sys.executable, "-m", "descent", "train", "tic_tac_toe", "--config", str(cfg),
                        "--out", str(tmp_path / "run"), "--population", "2", "--workers", "2",
                        "--budget", "1h", "--milestones", "1h", "--max-games", "1"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    assert "member 1" in out and "member 0" in out
    lines = [line for line in out.splitlines() if any(b in line for b in BANNERS)]
    assert not lines, "\n".join(lines)
