"""Package layering, no import cycles, and quiet output.

Layers, bottom up: ``games`` (the game engines) imports nothing from ``search_ext``, ``training`` or
``descent``; ``search_ext`` (searches, evaluators, agents) nothing from ``training`` or ``descent``;
``training`` (networks, self-play, the learner) nothing from ``descent`` (orchestration, CLI and the
Python API, the layer that composes a search with a network: ``descent.networks``). Checked over
``.py``, ``.pyx`` and ``.pxd`` files, ``import``/``from ... import`` and ``cimport``/``from ...
cimport`` alike, at any indentation (an import inside a function counts).

No import cycles among the project's modules either, deferred (function-level) imports included:
the graph of every module's imports has no strongly connected component of more than one module.
A package's implicit import by its submodules is not an edge (``descent/__init__.py`` may import
``descent.api``); every import written in a file is.
"""
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PACKAGES = ("games", "search_ext", "training", "descent")
FORBIDDEN = {
    "games": {"search_ext", "training", "descent"},
    "search_ext": {"training", "descent"},
    "training": {"descent"},
}
SOURCE_SUFFIXES = (".py", ".pyx", ".pxd")
# Cython: `from X import/cimport ...` and `import/cimport X[, Y]` at any indentation
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+c?import[ \t]+\(?([^#\n]*)", re.M)
_PLAIN = re.compile(r"^[ \t]*c?import[ \t]+([^#\n]+)", re.M)


def module_name(path: Path, root: Path = ROOT) -> str:
    """``descent/api.py`` -> ``descent.api``; ``games/__init__.py`` -> ``games``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(module: str, level: int, importer: str, is_package: bool) -> str:
    if not level:
        return module
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([module] if module else []))


def imports(path: Path, root: Path = ROOT) -> list:
    """``(module, names)`` for every import statement of a file (at any depth: an import inside a
    function counts), relative imports made absolute; ``names`` are those of a ``from`` import."""
    text = path.read_text()
    me = module_name(path, root) if path.is_relative_to(root) else path.stem
    package = path.stem == "__init__"
    found = []
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Import):
                found.extend((a.name, ()) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                found.append((_absolute(node.module or "", node.level, me, package),
                              tuple(a.name for a in node.names)))
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
                if node.args and isinstance(node.args[0], ast.Constant):
                    found.append((str(node.args[0].value), ()))
        return found
    for m in _FROM.finditer(text):                                      # .pyx / .pxd
        raw, names = m.group(1), m.group(2)
        level = len(raw) - len(raw.lstrip("."))
        names = tuple(n.split()[0] for n in names.replace(")", "").split(",") if n.split())
        found.append((_absolute(raw.lstrip("."), level, me, package), names))
    for m in _PLAIN.finditer(text):
        found.extend((item.split()[0], ()) for item in m.group(1).split(",") if item.split())
    return found


def imported_modules(path: Path, root: Path = ROOT) -> set:
    """Every module a file imports (at any depth: lazy imports inside functions count)."""
    return {mod for mod, _ in imports(path, root) if mod}


def source_files(root: Path = ROOT, packages=PACKAGES) -> list:
    return sorted(p for pkg in packages for suffix in SOURCE_SUFFIXES
                  for p in (root / pkg).rglob("*" + suffix) if "build" not in p.relative_to(root).parts)


def import_graph(root: Path = ROOT, packages=PACKAGES) -> dict:
    """Module -> the project modules it imports. A ``.pxd`` belongs to the module of its ``.pyx``; a
    ``from P import N`` is an edge to the submodule ``P.N`` when there is one, else to ``P``."""
    files = source_files(root, packages)
    known = {module_name(p, root) for p in files}
    graph: dict = {m: set() for m in known}
    for path in files:
        me = module_name(path, root)
        for mod, names in imports(path, root):
            targets = [f"{mod}.{n}" for n in names if f"{mod}.{n}" in known] or [mod]
            for target in targets:
                parts = target.split(".")
                while parts and ".".join(parts) not in known:     # a name inside a module
                    parts.pop()
                if parts and ".".join(parts) != me:
                    graph[me].add(".".join(parts))
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict = {}
    low: dict = {}
    stack, on_stack, out = [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def layer_violations(root: Path = ROOT) -> list:
    bad = []
    for package, banned in FORBIDDEN.items():
        files = source_files(root, (package,))
        assert files, package
        for path in files:
            for mod in sorted(imported_modules(path, root)):
                if mod.split(".")[0] in banned:
                    bad.append(f"{path.relative_to(root)} imports {mod}")
    return bad


def private_uses(root: Path = ROOT) -> list:
    """Every use in one package of another package's private name (``_NAME``): imported
    (``from training.replay import _NAME``) or read off an imported module (``validate._INT``)."""
    files = [p for p in source_files(root) if p.suffix == ".py"]
    known = {module_name(p, root) for p in files}
    bad = []
    for path in files:
        me = module_name(path, root)
        mine = me.split(".")[0]
        bound = {}                               # local name -> the other package's module it is
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if node.module.split(".")[0] not in PACKAGES or node.module.split(".")[0] == mine:
                    continue
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        bad.append(f"{path.relative_to(root)} imports {node.module}.{a.name}")
                    if f"{node.module}.{a.name}" in known:
                        bound[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in PACKAGES and a.name.split(".")[0] != mine and a.asname:
                        bound[a.asname] = a.name
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in bound and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                bad.append(f"{path.relative_to(root)} reads {bound[node.value.id]}.{node.attr}")
    return sorted(set(bad))


def test_no_package_uses_another_packages_private_names():
    bad = private_uses()
    assert not bad, "\n".join(bad)


def test_the_private_name_checker_finds_planted_uses(tmp_path):
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "games" / "validate.py").write_text("_INT = 1\n")
    (tmp_path / "training" / "replay.py").write_text("_NAME = 1\nfrom games import validate\n"
                                                     "x = validate._INT\n")
    (tmp_path / "descent" / "distributed.py").write_text("from training.replay import _NAME\n"
                                                         "from games import validate as v\n"
                                                         "y = v._INT\nz = v.__name__\n")
    (tmp_path / "training" / "ok.py").write_text("from training.replay import _NAME\n")
    assert private_uses(tmp_path) == ["descent/distributed.py imports training.replay._NAME",
                                      "descent/distributed.py reads games.validate._INT",
                                      "training/replay.py reads games.validate._INT"]


def test_layers_import_nothing_from_above():
    bad = layer_violations()
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    graph = import_graph()
    assert {"games.tree_game", "search_ext.agents", "training.network", "descent.api"} <= set(graph)
    assert {"games._state", "games._typedefs"} <= graph["games.tic_tac_toe"]   # .pxd cimports are edges
    found = cycles(graph)
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_checker_sees_imports(tmp_path):
    """The scan finds top-level, lazy and Cython imports (so the rules above can fail)."""
    py = tmp_path / "m.py"
    py.write_text("import os\ndef f():\n    from training.network import build_model\n")
    pyx = tmp_path / "m.pyx"
    pyx.write_text("from descent.cli cimport x\ncimport training.selfplay\n"
                   "def f():\n    from search_ext.evaluators import (CallableEvaluator,\n"
                   "        ZeroEvaluator)\n    import numpy as np, descent.api as api\n")
    assert "training.network" in imported_modules(py)
    assert {"descent.cli", "training.selfplay", "search_ext.evaluators", "numpy",
            "descent.api"} <= imported_modules(pyx)


def test_the_checker_finds_a_planted_violation_and_cycle(tmp_path):
    """A tree with a game module that imports a search module inside a function (.pyx), a search
    module that cimports training (.pxd), and a cycle made of deferred imports only."""
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "games" / "g.pyx").write_text("def h():\n    from search_ext.ev import E\n")
    (tmp_path / "search_ext" / "ev.pxd").write_text("from training.net cimport N\n")
    (tmp_path / "search_ext" / "ev.pyx").write_text("from games.g import h\n")
    (tmp_path / "training" / "net.py").write_text("def f():\n    from . import run\n")
    (tmp_path / "training" / "run.py").write_text("def g():\n    import training.net\n")
    (tmp_path / "descent" / "a.py").write_text("from descent import b\n")
    (tmp_path / "descent" / "b.py").write_text("from descent.a import x\n")
    bad = layer_violations(tmp_path)
    assert bad == ["games/g.pyx imports search_ext.ev", "search_ext/ev.pxd imports training.net"]
    graph = import_graph(tmp_path)
    assert graph["games.g"] == {"search_ext.ev"} and graph["search_ext.ev"] == {"games.g", "training.net"}
    assert cycles(graph) == [["descent.a", "descent.b"], ["games.g", "search_ext.ev"],
                             ["training.net", "training.run"]]
    (tmp_path / "descent" / "b.py").write_text("import descent\n")      # the package: no cycle
    (tmp_path / "training" / "run.py").write_text("")
    (tmp_path / "search_ext" / "ev.pyx").write_text("")
    assert cycles(import_graph(tmp_path)) == []


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
