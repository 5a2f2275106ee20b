"""What the benchmarks (``bench/``) and the research experiments (``research/``) share.

Run one from the repository root as a module, ``python -m bench.bench_games`` or ``python -m
research.ladder``: the checkout's packages are then the ones imported, without editing
``sys.path``, and a script reaches another's helpers as ``bench.<name>`` or ``research.<name>``.

* ``ROOT``, ``BENCH``, ``RESEARCH``: the checkout and the two folders (a script's results file lies
  beside it: ``bench/results_<name>.json``, ``research/results_<name>.json``);
* ``machine()``: the facts recorded with a measurement (Python, platform, processor, cores, date);
* ``write_results(path, data)``: a results file written atomically (``training.fileio``), so an
  interrupted run leaves the previous file whole; ``read_results(path)``: its earlier contents, for
  a run that measures part of what the file holds and keeps the rest.
"""
from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

from training.fileio import write_json

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESEARCH = ROOT / "research"


def machine() -> dict:
    """The machine a measurement ran on."""
    return {"python": sys.version.split()[0], "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d")}


def write_results(path, data: dict, indent: int = 2) -> Path:
    """Write a results file (JSON, keys sorted) atomically; returns its path."""
    path = Path(path)
    write_json(path, data, indent=indent)
    return path


def read_results(path) -> dict | None:
    """A results file's earlier contents (a JSON object), or None when it is missing or unreadable."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
