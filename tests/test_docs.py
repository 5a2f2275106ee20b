"""The documentation ships with the code and stays true to the repository:

* every ``docs/...`` path cited anywhere (code comments and docstrings included) exists, and every
  section of ``docs/ALGORITHMS.md`` cited by number has a heading with that number;
* every relative link (and its anchor) in README.md, BENCHMARKS.md, CHANGELOG.md and docs/*.md
  resolves;
* the README is a front page of at most 200 lines holding the two quick-start commands, and CI
  (``.ci/run``) runs exactly the README's test command;
* no file of the repository names a path outside it.
"""
from __future__ import annotations

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"

# The quick-start commands, verbatim (CI runs the second one).
QUICK_START = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/descent pipeline",
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest -q",
)
MAX_README_LINES = 200

TEXT_SUFFIXES = {".py", ".pyx", ".pxd", ".md", ".toml", ".cfg", ".txt", ".json", ".yml", ".yaml",
                 ".sh", ".ini", ".csv", ""}
SKIP_DIRS = {".git", ".venv", "build", "__pycache__", ".pytest_cache", ".hypothesis"}


def repo_files() -> list[Path]:
    """The repository's files: tracked or new and not ignored (git), else a walk of the tree
    without build outputs and virtual environments."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                             cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
        files = [ROOT / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.SubprocessError):
        files = [p for p in ROOT.rglob("*")
                 if not any(part in SKIP_DIRS or part.endswith(".egg-info")
                            for part in p.relative_to(ROOT).parts)]
    return sorted(p for p in files if p.is_file() and p.suffix in TEXT_SUFFIXES)


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


FILES = {p: t for p in repo_files() if (t := read(p)) is not None}


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# ---- cited docs paths -------------------------------------------------------------------------------

DOCS_PATH = re.compile(r"(?<![\w/.-])docs/[\w./-]*[\w]")


def test_the_docs_folder_holds_the_documents():
    for name in ("ALGORITHMS.md", "GAMES.md", "training.md", "evaluation.md", "cluster.md", "api.md",
                 "errors.md", "architecture.md"):
        assert (DOCS / name).is_file(), f"docs/{name} is missing"


def test_every_cited_docs_path_exists():
    cited = {}
    for path, text in FILES.items():
        if path == Path(__file__).resolve():        # its own patterns are not citations
            continue
        for m in DOCS_PATH.finditer(text):
            cited.setdefault(m.group(0), rel(path))
    assert cited, "no docs/ path is cited anywhere: the scan is broken"
    missing = {p: where for p, where in cited.items() if not (ROOT / p).exists()}
    assert not missing, f"cited but not in the repository (path: first file citing it): {missing}"


ALGO_CITE = re.compile(r"docs/ALGORITHMS\.md,?\s+(?:sections?\s+|§\s*)(\d+)(?:\s*-\s*(\d+))?")


def algorithm_sections() -> set[int]:
    text = (DOCS / "ALGORITHMS.md").read_text(encoding="utf-8")
    return {int(n) for n in re.findall(r"^## (\d+)\. ", text, re.M)}


def test_cited_algorithm_sections_exist():
    sections = algorithm_sections()
    assert {2, 3, 4, 5, 6, 7} <= sections
    bad = []
    count = 0
    for path, text in FILES.items():
        for m in ALGO_CITE.finditer(text):
            lo = int(m.group(1))
            hi = int(m.group(2) or lo)
            count += 1
            bad += [f"{rel(path)}: section {n}" for n in range(lo, hi + 1) if n not in sections]
    assert count, "no numbered section of docs/ALGORITHMS.md is cited: the scan is broken"
    assert not bad, f"cited sections missing from docs/ALGORITHMS.md: {bad}"


# ---- links -------------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (letters, digits, spaces,
    hyphens and underscores kept), spaces to hyphens."""
    text = heading.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out, seen = set(), {}
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(re.sub(r"`", "", m.group(1)))
            n = seen.get(s, 0)
            out.add(s if n == 0 else f"{s}-{n}")
            seen[s] = n + 1
    return out


def linked_documents() -> list[Path]:
    return [README, ROOT / "BENCHMARKS.md", ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("doc", linked_documents(), ids=lambda p: rel(p))
def test_relative_links_resolve(doc):
    assert doc.is_file(), f"{rel(doc)} is missing"
    text = doc.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)     # links in code blocks are code
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):       # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists():
            broken.append(target)
        elif not str(dest).startswith(str(ROOT)):
            broken.append(f"{target} (outside the repository)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{rel(doc)}: broken links {broken}"


def test_slug_follows_github():
    assert slug("4. Unbounded Minibal_n and Minibal_+") == "4-unbounded-minibal_n-and-minibal_"
    assert slug("Descent core (issue 19)") == "descent-core-issue-19"
    assert slug("5.1 The Descent iteration") == "51-the-descent-iteration"


# ---- the front page and CI ---------------------------------------------------------------------------

def test_readme_is_a_front_page_with_the_quick_start():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines (at most {MAX_README_LINES})"
    for command in QUICK_START:
        assert command in lines, f"README.md lacks the quick-start command {command!r}"
    for doc in ("docs/ALGORITHMS.md", "docs/GAMES.md", "docs/training.md", "docs/evaluation.md",
                "docs/api.md", "docs/errors.md", "docs/architecture.md", "docs/cluster.md"):
        assert f"]({doc})" in "\n".join(lines), f"README.md does not link {doc}"


def test_ci_runs_exactly_the_readme_test_command():
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    readme = README.read_text(encoding="utf-8").splitlines()
    i = next(k for k, line in enumerate(readme) if line.startswith("# 2."))
    command = readme[i + 1].strip()
    assert command == QUICK_START[1]
    assert ci[-1] == command, f".ci/run ends with {ci[-1]!r}, not the README's {command!r}"


# ---- nothing points outside the repository -----------------------------------------------------------

# Written in pieces so that this file does not match itself.
OUTSIDE = re.compile("|".join([r"/" + "work/", r"\.\./" + "shared", "shared/" + "docs", r"\bseed" + "s/"]))


def test_no_file_names_a_path_outside_the_repository():
    found = [f"{rel(p)}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0)}"
             for p, text in FILES.items() for m in OUTSIDE.finditer(text)]
    assert not found, f"paths outside the repository: {found}"


# ---- the API examples run -------------------------------------------------------------------------------

def test_the_api_examples_of_games_and_agents_run():
    """The first two Python blocks of docs/api.md (games, then agents on the same state) run as
    written."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "api.md").read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2 and "games.new_state" in blocks[0] and "make_agent" in blocks[1]
    namespace: dict = {}
    exec(compile(blocks[0], "docs/api.md (games)", "exec"), namespace)
    exec(compile(blocks[1], "docs/api.md (agents)", "exec"), namespace)
    assert namespace["state"].ply == 0 and namespace["agent"].last_move["iterations"] > 0
