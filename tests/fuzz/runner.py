"""Parent side of the generated-input harness: runs a batch of cases in one child process
(``child.py``) and survives it: a case that kills the child is a ``crash``, one that does not answer
within its time limit a ``hang``; the child is restarted at the next case.

``run_cases(cases, tree)`` returns one result per case (``outcome``, ``detail``, the case);
``tally(results)`` counts what went wrong:

* ``crash``, ``hang``, ``traceback``, ``multiline``, ``invariant``: always wrong;
* ``accepted``: a case generated as invalid (``expect == "refuse"``) that was accepted;
* ``refused_valid``: a case generated as valid (``expect == "accept"``) that was refused.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

CHILD = Path(__file__).resolve().parent / "child.py"
PYTHON = sys.executable
BAD = ("crash", "hang", "traceback", "multiline", "invariant", "accepted", "refused_valid")


def _spawn(cases_path: str, first: int, tree: str):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env["PYTHONHASHSEED"] = "0"
    env.pop("PYTEST_CURRENT_TEST", None)
    return subprocess.Popen([PYTHON, str(CHILD), cases_path, str(first)], cwd=str(tree), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
                            start_new_session=True)


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _readline(proc, timeout: float) -> str | None:
    """One line of the child's stdout, or None when none came within ``timeout`` seconds."""
    r, _, _ = select.select([proc.stdout], [], [], timeout)
    if not r:
        return None
    return proc.stdout.readline()


def run_cases(cases: list[dict], tree, timeout: float = 20.0, startup: float = 120.0) -> list[dict]:
    """Run ``cases`` against the source tree ``tree``; one result dict per case, in order.

    ``timeout``: seconds a case may take (a case may carry its own ``timeout``); ``startup``:
    seconds the child may take before its first case starts (imports)."""
    results: list[dict | None] = [None] * len(cases)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cases.json")
        Path(path).write_text(json.dumps(cases))
        i = 0
        while i < len(cases):
            proc = _spawn(path, i, tree)
            current, limit = None, startup
            t0 = time.monotonic()
            try:
                while True:
                    line = _readline(proc, max(0.05, limit - (time.monotonic() - t0)))
                    if line is None:            # nothing in time: the current case hangs
                        k = current if current is not None else i
                        results[k] = {"outcome": "hang", "detail": f"no answer within {limit:.0f} s"}
                        i = k + 1
                        break
                    if line == "":              # the child died
                        proc.wait()
                        k = current if current is not None else i
                        results[k] = {"outcome": "crash", "detail": f"exit status {proc.returncode}"}
                        i = k + 1
                        break
                    msg = json.loads(line)
                    if "start" in msg:
                        current = msg["start"]
                        limit = cases[current].get("timeout", timeout)
                        t0 = time.monotonic()
                    elif "i" in msg:
                        results[msg["i"]] = {"outcome": msg["outcome"], "detail": msg["detail"]}
                        current = None
                        i = msg["i"] + 1
                    elif msg.get("done"):
                        i = len(cases)
                        break
            finally:
                _kill(proc)
    out = []
    for case, r in zip(cases, results):
        r = dict(r or {"outcome": "crash", "detail": "no result"})
        r["case"] = case
        r["verdict"] = verdict(case, r["outcome"])
        out.append(r)
    return out


def verdict(case: dict, outcome: str) -> str:
    """``ok`` or the name of what went wrong (see the module docstring)."""
    expect = case.get("expect", "any")
    if outcome == "hang" and case.get("slow_ok"):
        outcome = "accepted"          # a command that starts long work: it was accepted
    if outcome in ("crash", "hang", "traceback", "multiline", "invariant"):
        return outcome
    if outcome == "accepted" and expect == "refuse":
        return "accepted"
    if outcome == "refused" and expect == "accept":
        return "refused_valid"
    return "ok"


def tally(results: list[dict]) -> dict:
    c = Counter(r["verdict"] for r in results)
    return {"inputs": len(results), **{k: c.get(k, 0) for k in ("ok",) + BAD},
            "skipped": sum(1 for r in results if r["outcome"] == "skip")}


def failures(results: list[dict], limit: int = 20) -> str:
    """A readable list of the wrong results (for assertion messages)."""
    bad = [r for r in results if r["verdict"] != "ok"]
    lines = [f"{len(bad)} wrong result(s) of {len(results)}:"]
    for r in bad[:limit]:
        case = {k: v for k, v in r["case"].items() if k not in ("timeout",)}
        lines.append(f"  {r['verdict']}: {json.dumps(case)[:300]} -> {r['detail'][:300]}")
    return "\n".join(lines)
