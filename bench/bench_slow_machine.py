"""README command 1 (`descent pipeline`) on a machine ten times slower than a quiet 2-core one.

The slow machine is made, not found: the pipeline runs in a Linux cgroup whose CPU quota is
``--cpus`` CPUs (cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, or v2 ``cpu.max``), 0.2 by
default: a tenth of two cores, whatever else the machine does. Recorded: the exit status, the wall
time, whether the report was written, and per network the self-play games behind its final
checkpoint, the games it had finished when its 2 minutes were spent, its training seconds and CPU
seconds, and whether the floor (``--min-games``, the pipeline's 16) decided its budget (fewer games
than the floor in the 2 minutes). Needs root (to make
the cgroup); without it the run is refused, never measured elsewhere.

    sudo .venv/bin/python -m bench.bench_slow_machine --cpus 0.2 --json bench/results_slow_machine.json

A measurement, not a test: the tests make a slow machine with a budget shorter than any game
(tests/test_protocol.py::test_pipeline_on_a_machine_too_slow_for_its_budget_ends_with_a_report).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import ROOT, machine, write_results

PERIOD_US = 100_000


def make_cgroup(cpus: float) -> tuple[Path, str]:
    """A new cgroup limited to ``cpus`` CPUs: (its folder, the file to write a pid to)."""
    name = f"descent-bench-{os.getpid()}"
    quota = max(1000, int(cpus * PERIOD_US))
    v1 = Path("/sys/fs/cgroup/cpu")
    if (v1 / "cpu.cfs_quota_us").exists():
        d = v1 / name
        d.mkdir()
        (d / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (d / "cpu.cfs_quota_us").write_text(str(quota))
        return d, "tasks"
    v2 = Path("/sys/fs/cgroup")
    if (v2 / "cgroup.controllers").exists():
        d = v2 / name
        d.mkdir()
        (d / "cpu.max").write_text(f"{quota} {PERIOD_US}")
        return d, "cgroup.procs"
    raise SystemExit("no cgroup CPU controller found (/sys/fs/cgroup/cpu or cgroup v2)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpus", type=float, default=0.2, help="CPU quota of the slow machine")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    try:
        group, procs = make_cgroup(args.cpus)
    except PermissionError:
        raise SystemExit("making a cgroup needs root: run with sudo") from None
    data = Path(tempfile.mkdtemp(prefix="descent-slow-"))
    exe = Path(sys.executable).with_name("descent")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "descent"]
    # the child joins the cgroup before it execs the pipeline (every process it starts inherits it)
    script = f'echo $$ > "{group / procs}" && exec "$@"'
    t0 = time.perf_counter()
    try:
        r = subprocess.run(["/bin/sh", "-c", script, "sh", *cmd, "pipeline"], cwd=data,
                           env=dict(os.environ, DESCENT_DATA=str(data / "data")),
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        run = data / "data" / "reversi_size-6"
        nets = []
        for mdir in sorted(run.glob("member_*")):
            status = json.loads((mdir / "status.json").read_text())
            final = json.loads((mdir / "milestone_2m.json").read_text())
            log = [json.loads(line) for line in (mdir / "log.jsonl").read_text().splitlines() if line]
            in_time = sum(1 for rec in log if rec["train_seconds"] <= 120)
            nets.append({"member": mdir.name, "games": status["games"], "final_games": final["games"],
                         "games_in_the_2_minutes": in_time,
                         "train_seconds": round(status["train_seconds"], 1),
                         "cpu_seconds": round(status["cpu_seconds"], 1),
                         "floor_decided": in_time < 16})
        out = {"machine": machine(), "cpus": args.cpus, "command": "descent pipeline", "exit_status": r.returncode,
               "wall_seconds": round(wall, 1), "report": (run / "report" / "table.txt").is_file(),
               "networks": nets, "stderr_tail": r.stderr[-400:] if r.returncode else ""}
    finally:
        shutil.rmtree(data, ignore_errors=True)
        try:
            group.rmdir()
        except OSError:
            pass
    print(json.dumps(out, indent=2))
    if args.json:
        write_results(ROOT / args.json if not os.path.isabs(args.json) else args.json, out)


if __name__ == "__main__":
    main()
