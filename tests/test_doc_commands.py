"""The shell commands that README.md and docs/*.md show a user work as shown.

Every ``descent ...`` line of a ``bash`` block is collected (continuation lines joined, the trailing
``# comment`` dropped). A command that ends in seconds runs, as a user would run it, and must exit 0;
the long ones (training, ranking, evaluating, interactive play, servers) and the synopsis lines
(``[--option ...]``, ``GAME``, ``PATH``) are parsed by the command line itself: the command exists and
each option is one of its options, with a value of the right type where the line gives a concrete one.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from descent.cli import cli

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# commands that take minutes or wait for a person or a client: parsed, not run
LONG = {"train", "pipeline", "experiment", "rank", "evaluate", "calibrate", "ship", "play", "serve",
        "engine", "report", "rate-levels"}
PLACEHOLDER = re.compile(r"\b(GAME|PATH|RUN|DIR|AGENT|SPEC|FILE|NAME|ADDRESS|MILESTONE|N|W|S|M)\b|\[|\.\.\.|XXXXX")


def doc_commands() -> list[tuple[str, str]]:
    out = []
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        for block in re.finditer(r"```(?:bash|sh|shell|console)\n(.*?)```", text, re.S):
            lines = block.group(1).replace("\\\n", " ").splitlines()
            for line in lines:
                line = line.strip()
                m = re.search(r"(?:^|&&\s*|;\s*|'cd [^&]*&&\s*|\s)(?:\.venv/bin/)?descent\s+(.*)$", line)
                if not m or line.startswith("#"):
                    continue
                cmd = m.group(1)
                cmd = re.split(r"\s+#\s", cmd)[0].strip()
                cmd = re.split(r"\s*(?:&&|;|\||\s\d?>|\s&$)\s*", cmd)[0].strip()
                try:
                    shlex.split(cmd)
                except ValueError:          # the end of a quoted `bash -lc '...'` argument
                    cmd = cmd.rstrip("'")
                out.append((f"{path.relative_to(ROOT)}: descent {cmd}", cmd))
    return out


COMMANDS = doc_commands()


def test_the_docs_show_commands():
    assert len(COMMANDS) >= 30
    assert any(c.startswith("show reversi") for _, c in COMMANDS)


def _is_synopsis(cmd: str) -> bool:
    return bool(PLACEHOLDER.search(cmd))


def _parse(cmd: str) -> None:
    """Resolve the subcommand and check its options the way click would, without running it."""
    words = shlex.split(cmd)
    name, args = words[0], words[1:]
    sub = cli.get_command(click.Context(cli), name)
    assert sub is not None, f"no command {name!r}"
    names = {o: p for p in sub.params for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))}
    if _is_synopsis(cmd):
        for word in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", cmd):
            assert word in names, f"descent {name}: no option {word}"
        return
    with sub.make_context(name, list(args), resilient_parsing=False) as ctx:
        assert ctx.command is sub


@pytest.mark.parametrize("where,cmd", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_a_documented_command_works(where, cmd, tmp_path):
    name = shlex.split(cmd)[0]
    if name in LONG or _is_synopsis(cmd):
        _parse(cmd)
        return
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-m", "descent", *shlex.split(cmd)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{where} exited {proc.returncode}: {proc.stderr.strip()[-500:]}"
