"""Every figure the user docs quote comes from one result file, and says what that file says.

``tests/data/quoted_figures.toml`` is the registry. Each ``[[figure]]`` names the document(s) that
quote it, the text as the document prints it (a ``str.format`` template), the result file it comes
from and the expressions that compute each value from that file (JSON, TOML or CSV). This test loads every result file,
computes the values, formats the text and checks that the document holds it word for word; a
``[[covered]]`` region (a section's table columns) must hold no number that no registered figure
explains. The shipped networks' model cards are checked against the ladder's results file the same
way (``test_cards_agree_with_the_ladder``).

Expressions: Python arithmetic (``+ - * /``, unary minus, numbers) over
* ``{PATH}``: a value of the entry's ``source``; ``{FILE::PATH}`` one of another file. PATH is
  ``/``-separated keys and list indexes; ``*`` takes every element (a list), ``[key=value]`` (or
  ``[k1=v1&k2=v2]``) the one element of a list of records with those values; a key that holds a
  ``/`` is written ``<a/b>``;
* ``$name``: an expression of the registry's ``[names]`` table;
* ``min``, ``max``, ``median``, ``mean``, ``sum``, ``len``, ``abs``, ``cat`` (lists joined).
Arithmetic between a list and a number works element by element.
"""
from __future__ import annotations

import ast
import csv
import json
import operator
import re
import statistics
import string
import tomllib
from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "tests" / "data" / "quoted_figures.toml"

_REG = tomllib.loads(REGISTRY.read_text())
FIGURES = _REG.get("figure", [])
COVERED = _REG.get("covered", [])
NAMES = _REG.get("names", {})


class FigureError(Exception):
    pass


# ---- the result files ----------------------------------------------------------------------------

@cache
def _load(rel: str):
    path = ROOT / rel
    if not path.is_file():
        raise FigureError(f"result file {rel} does not exist")
    if path.suffix == ".json":
        return json.loads(path.read_text())
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text())
    if path.suffix == ".csv":                              # a list of records, numbers as numbers
        with path.open(newline="") as f:
            return [{k: _number_or_text(v) for k, v in row.items()} for row in csv.DictReader(f)]
    raise FigureError(f"result file {rel}: only .json, .toml and .csv result files are read")


def _number_or_text(v: str):
    try:
        return float(v)
    except ValueError:
        return v


def _step(node, seg: str, where: str):
    if seg == "*":
        if isinstance(node, dict):
            return list(node.values()), True
        if isinstance(node, list):
            return list(node), True
        raise FigureError(f"{where}: '*' on a {type(node).__name__}")
    if seg.startswith("[") and seg.endswith("]"):
        conds = [c.partition("=") for c in seg[1:-1].split("&")]
        if not isinstance(node, list) or any(not eq for _, eq, _ in conds):
            raise FigureError(f"{where}: {seg} needs a list of records and key=value conditions")
        hits = [x for x in node if isinstance(x, dict) and all(str(x.get(k)) == v for k, _, v in conds)]
        if len(hits) != 1:
            raise FigureError(f"{where}: {len(hits)} records match {seg}")
        return hits[0], False
    if isinstance(node, dict):
        if seg not in node:
            raise FigureError(f"{where}: no key {seg!r} (keys: {', '.join(sorted(map(str, node))[:12])})")
        return node[seg], False
    if isinstance(node, list):
        try:
            return node[int(seg)], False
        except (ValueError, IndexError):
            raise FigureError(f"{where}: no index {seg!r} in a list of {len(node)}") from None
    raise FigureError(f"{where}: {seg!r} below a {type(node).__name__}")


def _segments(path: str) -> list[str]:
    """``a/<b/c>/d`` -> ``a``, ``b/c``, ``d``: a key holding ``/`` is written between ``<`` and ``>``."""
    return [a or b for a, b in re.findall(r"<([^<>]*)>(?:/|$)|([^/<>]+)(?:/|$)", path)]


def resolve(data, path: str, where: str = ""):
    """The value at ``path`` (see the module's docstring); a list where the path has ``*``."""
    nodes, many = [data], False
    for seg in _segments(path):
        out = []
        for n in nodes:
            v, fan = _step(n, seg, f"{where} {path}")
            out.extend(v) if fan else out.append(v)
        nodes, many = out, many or seg == "*"
    return nodes if many else nodes[0]


# ---- expressions ---------------------------------------------------------------------------------

def _median(x):
    return statistics.median(_seq(x))


def _seq(x):
    if not isinstance(x, list):
        raise FigureError(f"expected a list, got {x!r}")
    return x


def _agg(f):
    return lambda *a: f(_seq(a[0])) if len(a) == 1 else f(a)


FUNCS = {"min": _agg(min), "max": _agg(max), "median": _median, "mean": lambda x: statistics.fmean(_seq(x)),
         "sum": lambda x: sum(_seq(x)), "len": lambda x: len(_seq(x)), "abs": abs,
         "cat": lambda *a: [v for x in a for v in _seq(x)]}
OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _num(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise FigureError(f"not a number: {v!r}")
    return v


def _binop(op, a, b):
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            raise FigureError("element-wise arithmetic on lists of different lengths")
        return [op(_num(x), _num(y)) for x, y in zip(a, b)]
    if isinstance(a, list):
        return [op(_num(x), _num(b)) for x in a]
    if isinstance(b, list):
        return [op(_num(a), _num(y)) for y in b]
    return op(_num(a), _num(b))


def _eval(node, env):
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in OPS:
        return _binop(OPS[type(node.op)], _eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, env)
        sign = -1 if isinstance(node.op, ast.USub) else 1
        return [sign * _num(x) for x in v] if isinstance(v, list) else sign * _num(v)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCS
            and not node.keywords):
        return FUNCS[node.func.id](*[_eval(a, env) for a in node.args])
    raise FigureError(f"not allowed in an expression: {ast.dump(node)[:80]}")


def _expand(expr: str, depth=0) -> str:
    if depth > 10:
        raise FigureError(f"names nested too deep in {expr!r}")

    def name(m):
        if m.group(1) not in NAMES:
            raise FigureError(f"no name ${m.group(1)} in [names]")
        return "(" + _expand(NAMES[m.group(1)], depth + 1) + ")"
    return re.sub(r"\$([A-Za-z_][A-Za-z0-9_]*)", name, expr)


def evaluate(expr: str, source: str | None, where: str = ""):
    """The value of one expression of the registry."""
    env = {}

    def path(m):
        ref = m.group(1)
        rel, _, p = ref.rpartition("::")
        rel = rel or source
        if not rel:
            raise FigureError(f"{where}: {{{ref}}} without a source file")
        key = f"_p{len(env)}"
        v = resolve(_load(rel), p, f"{where} {rel}:")
        env[key] = [_num(x) for x in v] if isinstance(v, list) else v
        return key
    code = re.sub(r"\{([^{}]+)\}", path, _expand(expr))
    return _eval(ast.parse(code, mode="eval"), env)


def formatted(fig: dict) -> str:
    """The figure's text with its values from the result file(s)."""
    where = f"[{fig.get('text', '?')[:50]!r}]"
    values = [evaluate(e, fig.get("source"), where) for e in fig.get("values", [])]
    return fig["text"].format(*values)


_FORMATTED: dict[int, str] = {}


def _formatted_once(fig: dict) -> str:
    if id(fig) not in _FORMATTED:
        _FORMATTED[id(fig)] = formatted(fig)
    return _FORMATTED[id(fig)]


def _docs(fig) -> list[str]:
    d = fig["doc"]
    return [d] if isinstance(d, str) else list(d)


def _closest(text: str, want: str) -> str:
    import difflib
    lines = text.splitlines()
    best = difflib.get_close_matches(want, lines, n=1, cutoff=0.0)
    return best[0][:300] if best else ""


# ---- the tests -----------------------------------------------------------------------------------

def test_the_registry_is_well_formed():
    assert FIGURES, "no figures registered"
    for fig in FIGURES:
        assert set(fig) <= {"doc", "text", "source", "values", "note"}, fig
        assert fig.get("doc") and fig.get("text"), fig
        for doc in _docs(fig):
            assert (ROOT / doc).is_file(), f"{doc}: no such document"
        n = len(fig.get("values", []))
        assert n >= 1, f"{fig['text']!r}: a quoted figure with no value from a result file"
        fields = {f for _, f, _, _ in string.Formatter().parse(fig["text"]) if f is not None}
        assert fields == {str(i) for i in range(n)}, f"{fig['text']!r}: fields {sorted(fields)} for {n} values"


def test_every_result_file_named_exists():
    named = set()
    for fig in FIGURES:
        if fig.get("source"):
            named.add(fig["source"])
        for e in fig.get("values", []):
            named.update(m.group(1) for m in re.finditer(r"\{([^{}:]+)::", _expand(e)))
    missing = sorted(f for f in named if not (ROOT / f).is_file())
    assert not missing, f"result files named in {REGISTRY.name} that do not exist: {missing}"
    assert len(named) >= 20


def _id(fig):
    return f"{_docs(fig)[0]}: {fig['text'][:60]}"


@pytest.mark.parametrize("fig", FIGURES, ids=[_id(f) for f in FIGURES])
def test_the_documents_quote_what_the_result_files_say(fig):
    want = formatted(fig)
    for doc in _docs(fig):
        text = (ROOT / doc).read_text()
        assert want in text, (f"{doc} should quote {want!r} (from {fig.get('source')}); "
                              f"nearest line: {_closest(text, want)!r}")


_NUMBER = re.compile(r"(?<![\w.])[+\-−]?\d[\d,]*(?:\.\d+)?")


def _section(text: str, heading: str) -> list[str]:
    """The lines under ``heading`` up to the next heading (its subsections are not part of it)."""
    lines = text.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == heading)
    except StopIteration:
        raise FigureError(f"no heading {heading!r}") from None
    out, fence = [], False
    for line in lines[start + 1:]:
        fence ^= line.startswith("```")
        if not fence and re.match(r"#+ ", line):
            break
        out.append(line)
    return out


def _cells(line: str) -> list[tuple[int, int]]:
    """(start, end) of each cell of a table row, by column (1-based list index + 1)."""
    bounds = [m.start() for m in re.finditer(r"(?<!\\)\|", line)]
    return [(a + 1, b) for a, b in pairwise(bounds)]


@pytest.mark.parametrize("region", COVERED, ids=[f"{r['doc']} {r['section']}" for r in COVERED])
def test_every_number_of_a_covered_table_is_registered(region):
    """In a covered table, each number lies inside the text of a registered figure of its document."""
    doc = region["doc"]
    text = (ROOT / doc).read_text()
    quotes = []
    for f in FIGURES:
        if doc in _docs(f):
            try:
                quotes.append(_formatted_once(f))
            except FigureError:
                pass                                       # that figure's own test fails
    lines = _section(text, region["section"])
    sep = re.compile(r"\|[-| :]+\|$")
    rows = [l for i, l in enumerate(lines) if l.startswith("|") and not sep.match(l)
            and not (i + 1 < len(lines) and sep.match(lines[i + 1]))]       # a header row names columns
    assert rows, f"{doc} {region['section']}: no table"
    missing = []
    for line in rows:
        spans = [(m.start(), m.start() + len(q)) for q in quotes for m in re.finditer(re.escape(q), line)]
        masked = re.sub(r"\]\([^)]*\)", lambda m: " " * len(m.group()), line)       # link targets
        cells = _cells(line)
        for col in region["columns"]:
            if col > len(cells):
                continue
            a, b = cells[col - 1]
            for m in _NUMBER.finditer(masked, a, b):
                if not any(s <= m.start() and m.end() <= e for s, e in spans):
                    missing.append(f"{m.group()!r} in {line[a:b].strip()[:90]!r}")
    assert not missing, f"{doc} {region['section']}: numbers no registered figure explains:\n" + "\n".join(missing)


def test_cards_agree_with_the_ladder():
    """Each shipped card's Elo, CPU-hours, games and examples are the ladder results file's (an
    unbeaten network: the top rung's rating, marked as a lower bound)."""
    ladder = _load("research/results_ladder.json")["games"]
    checked = 0
    for card_path in sorted((ROOT / "checkpoints" / "shipped").glob("*/card.json")):
        card = json.loads(card_path.read_text())
        for role, net in card["networks"].items():
            elo = net.get("elo")
            if not elo:
                continue
            assert elo["source"].startswith("research/results_ladder.json"), card_path
            entry = ladder[card["game"]]
            label = f"m{net.get('member', 0)}-{net['milestone']}"
            where = f"{card_path.relative_to(ROOT)} {role} ({label})"
            pairs = {p["b"]: [p["score"], p["low"], p["high"], p["games"]] for p in entry["pairs"] if p["a"] == label}
            assert elo["scores"] == pairs, f"{where}: scores differ from the ladder's"
            player = entry["players"][label]
            for key in ("cpu_hours", "games", "examples"):
                assert net[key] == player[key], \
                    f"{where}: {key} {net[key]} on the card, {player[key]} in the ladder's file"
            if all(s[0] >= 1.0 for s in pairs.values()):
                top = max(pairs, key=lambda k: int(re.sub(r"\D", "", k)))
                r = entry["elo"][top]["elo"]
                assert elo.get("at_least") is True and elo["elo"] == elo["low"] == r, \
                    f"{where}: unbeaten, so its Elo is the top rung's ({top}: {r}) as a lower bound"
            else:
                e = entry["elo"][label]
                assert not elo.get("at_least"), where
                assert (elo["elo"], elo["low"], elo["high"]) == (e["elo"], e["lo"], e["hi"]), where
            checked += 1
    assert checked >= 6


def test_a_wrong_figure_fails():
    """The check can fail: a figure formatted from another value is not in the document."""
    fig = next(f for f in FIGURES if f.get("source") == "research/results_ladder.json")
    good = formatted(fig)
    bad = dict(fig, values=[f"({e}) + 1" for e in fig["values"]])
    assert formatted(bad) != good
    text = "".join((ROOT / d).read_text() for d in _docs(fig))
    assert good in text and formatted(bad) not in text


def test_expressions():
    data = {"rows": [{"g": "a", "x": 2.0}, {"g": "b", "x": 4.0}], "m": {"p": [1, 2, 3]}}
    assert resolve(data, "rows/[g=b]/x") == 4.0
    assert resolve(data, "rows/[g=b&x=4.0]/x") == 4.0
    assert resolve(data, "rows/*/x") == [2.0, 4.0]
    assert resolve(data, "m/p/2") == 3
    assert resolve({"a/b": {"c": 1}}, "<a/b>/c") == 1
    env_src = "tests/data/quoted_figures.toml"
    with pytest.raises(FigureError):
        resolve(data, "rows/[g=c]/x")
    with pytest.raises(FigureError):
        evaluate("__import__('os')", env_src)
    with pytest.raises(FigureError):
        evaluate("{no/such/key}", env_src)
    with pytest.raises(FigureError):
        _load("bench/no_such_results.json")
