"""The type stubs of the compiled modules agree with the modules, and mypy finds nothing in games
and search_ext.

Every compiled module (a ``.pyx`` of games/, search_ext/ or training/) has a hand-written ``.pyi``
beside it. The stub is parsed with ``ast`` and compared with the imported module, both ways:

* module level: every public name of the module (a class or function defined in it, a constant,
  a name of its ``__all__``) is declared in the stub, and every public name of the stub (explicit
  re-exports ``import X as X`` included) exists in the module; ``__all__`` is the same;
* per class: the same bases; every public method, property and attribute of the class (and the
  protocol methods it defines: ``__init__``, ``__len__``, ``__iter__`` ...) is declared in the stub's
  class, and every name of the stub's class exists on the class; a method is a method in both, a
  property or attribute a data descriptor in both;
* signatures: the parameter names, in order, and which of them have defaults, of every function and
  method (from the compiled function's signature; for ``__init__``, from the signature Cython embeds
  in the class docstring; a constructor that is only a ``__cinit__`` has none to compare).

Types themselves are read from the .pyx by a person; mypy (run here on the stubs and on the Python
modules of games and search_ext, with the configuration of pyproject.toml) checks that the stubs are
well-formed and that the Python code agrees with them.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("games", "search_ext", "training")
COMPILED = sorted(f"{p.parent.name}.{p.stem}" for pkg in PACKAGES for p in (ROOT / pkg).glob("*.pyx"))

# Dunder methods that a stub must declare when the class defines them (they change what a type
# checker accepts: construction, len(), iteration, `in`, truth, calls ...). The rest (__repr__,
# comparisons, pickling support Cython adds) are object's as far as typing goes.
PROTOCOL = {"__init__", "__len__", "__iter__", "__next__", "__contains__", "__bool__", "__getitem__",
            "__setitem__", "__delitem__", "__call__", "__enter__", "__exit__", "__copy__"}


def _stub_path(module: str) -> Path:
    return ROOT / (module.replace(".", "/") + ".pyi")


class Stub:
    """The names a .pyi declares: module level, and per class its bases and members."""

    def __init__(self, path: Path):
        self.tree = ast.parse(path.read_text(), str(path))
        self.names: dict[str, ast.AST] = {}
        self.all: list[str] | None = None
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                self.names[node.name] = node
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                self.names[node.target.id] = node
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.names[target.id] = node
                        if target.id == "__all__":
                            self.all = ast.literal_eval(node.value)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:      # only explicit re-exports (`import X as X`) count
                    if alias.asname is not None and alias.asname == alias.name.rpartition(".")[2]:
                        self.names[alias.asname] = node

    def public(self) -> set[str]:
        return {n for n in self.names if not n.startswith("_")}

    def classes(self) -> dict[str, ast.ClassDef]:
        return {n: node for n, node in self.names.items() if isinstance(node, ast.ClassDef)}


def _members(cls_node: ast.ClassDef) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for node in cls_node.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            out.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
    return out


def _is_property(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef) and any(
        isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)


def _defined_here(value, module: str) -> bool:
    return getattr(value, "__module__", None) == module


def _runtime_public(mod: types.ModuleType) -> set[str]:
    """Classes and functions defined in the module, constants, and the names of its ``__all__``
    (not the modules, classes and functions it imports)."""
    out = set(getattr(mod, "__all__", ()))
    for name, value in vars(mod).items():
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        if inspect.isclass(value) or callable(value):
            if _defined_here(value, mod.__name__):
                out.add(name)
        else:
            out.add(name)
    return out


def _class_public(cls: type) -> set[str]:
    return {n for n in vars(cls) if not n.startswith("_") or n in PROTOCOL}


def _stub_params(fn: ast.FunctionDef) -> list[tuple[str, bool]]:
    """(name, has a default) of each parameter after ``self``, *args and **kwargs as '*name'."""
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [False] * (len(positional) - len(a.defaults)) + [True] * len(a.defaults)
    out = list(zip((p.arg for p in positional), defaults, strict=True))
    if a.vararg:
        out.append(("*" + a.vararg.arg, False))
    out += [(p.arg, d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        out.append(("**" + a.kwarg.arg, False))
    return out


def _runtime_params(fn) -> list[tuple[str, bool]] | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    out = []
    for p in sig.parameters.values():
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        out.append((prefix + p.name, p.default is not p.empty))
    return out


def _init_params(cls: type) -> list[tuple[str, bool]] | None:
    """The parameters of ``cls.__init__`` from the signature Cython embeds in the class docstring
    (``Name(a, bool b=False, c=None)``), or None when the class has none."""
    first = (cls.__doc__ or "").split("\n", 1)[0]
    m = re.fullmatch(rf"{re.escape(cls.__name__)}\((.*)\)", first.strip())
    if not m:
        return None
    params, depth, cur = [], 0, ""
    for ch in m.group(1) + ",":
        if ch == "," and depth == 0:
            if cur.strip():
                params.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        cur += ch
    out = []
    for p in params:
        head, eq, _ = p.partition("=")
        out.append((head.split()[-1], bool(eq)))
    return [("self", False)] + out


def _signature(cls: type, name: str) -> list[tuple[str, bool]] | None:
    if name == "__init__":
        return _init_params(cls) if "__init__" in vars(cls) else None
    return _runtime_params(inspect.getattr_static(cls, name))


def _plain_override(cls: type, name: str) -> bool:
    """``name`` overrides a base's method of the same signature (the base's stub declares it)."""
    return any(hasattr(base, name) and callable(getattr(base, name))
               and _signature(base, name) == _signature(cls, name) for base in cls.__bases__)


@pytest.mark.parametrize("module", COMPILED)
def test_stub_declares_what_the_module_has(module):
    path = _stub_path(module)
    assert path.is_file(), f"{module} is compiled but has no stub {path.relative_to(ROOT)}"
    stub = Stub(path)
    mod = importlib.import_module(module)

    runtime = _runtime_public(mod)
    assert sorted(runtime - stub.public()) == [], f"{module}: public names missing from the stub"
    assert sorted(n for n in stub.public() if not hasattr(mod, n)) == [], \
        f"{module}: the stub declares names the module does not have"
    if hasattr(mod, "__all__"):
        assert stub.all == list(mod.__all__), f"{module}: __all__ differs"

    for name, node in stub.classes().items():
        cls = getattr(mod, name)
        assert inspect.isclass(cls), f"{module}.{name} is not a class"
        bases = [b.id if isinstance(b, ast.Name) else ast.unparse(b).rpartition(".")[2] for b in node.bases]
        assert bases == [b.__name__ for b in cls.__bases__ if b is not object], f"{module}.{name}: bases"
        members = _members(node)
        missing = [n for n in _class_public(cls) - set(members) if not _plain_override(cls, n)]
        assert sorted(missing) == [], f"{module}.{name}: members missing from the stub"
        assert sorted(n for n in members if not hasattr(cls, n)) == [], \
            f"{module}.{name}: the stub declares members the class does not have"
        for member, mnode in members.items():
            value = inspect.getattr_static(cls, member)
            is_method = isinstance(mnode, ast.FunctionDef) and not _is_property(mnode)
            if is_method:
                assert callable(value), f"{module}.{name}.{member}: a method in the stub, not in the class"
                runtime_sig = _signature(cls, member)
            else:
                assert inspect.isdatadescriptor(value) or not callable(value), \
                    f"{module}.{name}.{member}: a property or attribute in the stub, a method in the class"
                continue
            if runtime_sig is not None:
                assert _stub_params(mnode) == runtime_sig, f"{module}.{name}.{member}: signature"

    for name, node in stub.names.items():
        if isinstance(node, ast.FunctionDef):
            runtime_sig = _runtime_params(getattr(mod, name))
            assert runtime_sig is not None, f"{module}.{name}: no signature to compare"
            assert _stub_params(node) == runtime_sig, f"{module}.{name}: signature"


def test_every_stub_belongs_to_a_compiled_module():
    stubs = sorted(f"{p.parent.name}.{p.stem}" for pkg in PACKAGES for p in (ROOT / pkg).glob("*.pyi"))
    assert [s for s in stubs if s not in COMPILED] == []


def test_packages_are_marked_typed():
    for pkg in ("games", "search_ext", "descent", "training"):
        assert (ROOT / pkg / "py.typed").is_file(), pkg


def test_mypy_finds_nothing_in_games_and_search_ext():
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    proc = subprocess.run([sys.executable, "-m", "mypy", "-p", "games", "-p", "search_ext"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
