"""Copy a training run's networks (not its replay window) into results/training-runs/<slug>/ and
write checkpoints.json: per checkpoint its games, examples, training seconds and CPU-hours.

    python -m tools.export_run RUN_DIR SLUG [--cpu CPU.json] [--cpu-before H] [--keep m1-35m,m0-10m]
                                            [--finished]

``untrained.weights.h5`` in the folder (the config's architecture, ``build_model(seed=0)``, never
trained) is listed first, at 0 CPU-hours. Copied per member: every milestone_<D>.weights.h5 and
.json, and status.json; and run.json. Not copied (results/ holds reports, not run state):
latest.h5 (the resume state), log.jsonl, replay/, tensorboard/, .lock. ``--keep`` copies only the
named checkpoints' weights (results/ allows 1.5 MiB a network: a draughts 8x8 one is 1.24 MB, so
only those a report needs are kept); the others are listed with ``path: null``, their sha256 and
size. ``--finished`` exports only the members whose ``status.json`` says they are done (a run
still training: a member exported half-way cannot be continued from the export, since its resume
state stays behind, and training refuses it). Afterwards, update the weights manifest: ``python -m tools.results_manifest --write``.

CPU-hours are the training process's own CPU seconds up to each checkpoint, as the run recorded
them (a milestone's ``cpu_seconds``, or its member's log). ``--cpu`` overrides them with a JSON
object {"member_NN/milestone_<D>.json": {"cpu_s": S}, ...} (CPU seconds,
user+sys of the training process tree, when that file appeared) plus optionally {"total_cpu_s": S}
for latest.h5; ``--cpu-before`` adds the CPU-hours of earlier sessions of the same run. A
checkpoint already in the folder's checkpoints.json (same label and games: exported by an earlier
session, or a member that did not train in this one) keeps the CPU-hours recorded then.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

from bench.harness import ROOT
from training import logfiles

HERE = ROOT / "results" / "training-runs"


def _recorded_cpu(member: Path, meta: dict) -> dict | None:
    """The CPU seconds the run itself recorded for a milestone: its JSON's ``cpu_seconds``, or the
    member's log up to the milestone's games (see training.logfiles.cpu_seconds_through)."""
    s = meta.get("cpu_seconds")
    if not isinstance(s, (int, float)):
        s = logfiles.cpu_seconds_through(member, int(meta["games"]))
    return None if s is None else {"cpu_s": float(s)}


def _finished(member: Path) -> bool:
    """Whether a member's status.json says it reached its budget."""
    try:
        return json.loads((member / "status.json").read_text()).get("done") is True
    except (OSError, ValueError, AttributeError):
        return False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("slug")
    ap.add_argument("--cpu", help="CPU seconds per milestone file (JSON)")
    ap.add_argument("--cpu-before", type=float, default=0.0, help="CPU-hours of earlier sessions")
    ap.add_argument("--session", default="", help="a note on where and when (README, checkpoints.json)")
    ap.add_argument("--keep", help="comma-separated checkpoint labels whose weights are copied (default: all)")
    ap.add_argument("--finished", action="store_true", help="only the members whose status.json says done")
    args = ap.parse_args(argv)
    keep = set(args.keep.split(",")) if args.keep else None
    run, out = Path(args.run_dir), HERE / args.slug
    if not (run / "run.json").is_file():
        print(f"error: {run}: not a run directory (no run.json)", file=sys.stderr)
        return 2
    cpu = json.loads(Path(args.cpu).read_text()) if args.cpu else {}
    out.mkdir(parents=True, exist_ok=True)
    # milestones exported by an earlier session keep the CPU-hours measured then
    before = {}
    if (out / "checkpoints.json").is_file():
        before = {r["label"]: r for r in json.loads((out / "checkpoints.json").read_text())
                  if r.get("cpu_hours") is not None}
    shutil.copy2(run / "run.json", out / "run.json")
    rows = []
    if (out / "untrained.weights.h5").is_file():      # the architecture with initial weights: CPU 0
        rows.append({"label": "untrained", "member": 0, "milestone": "untrained", "path": "untrained.weights.h5",
                     "games": 0, "examples": 0, "train_seconds": 0.0, "cpu_hours": 0.0})
    for member in sorted(run.glob("member_*")):
        if args.finished and not _finished(member):
            print(f"{member.name}: not finished, not exported")
            continue
        dest = out / member.name
        dest.mkdir(exist_ok=True)
        for name in ("status.json",):          # resume states and full logs stay out of git
            if (member / name).is_file():
                shutil.copy2(member / name, dest / name)
        status = json.loads((member / "status.json").read_text()) if (member / "status.json").is_file() else {}
        for js in sorted(member.glob("milestone_*.json"), key=lambda p: json.loads(p.read_text())["train_seconds"]):
            meta = json.loads(js.read_text())
            weights = js.with_suffix(".weights.h5")
            label = f"m{int(member.name[7:])}-{meta['milestone']}"
            shutil.copy2(js, dest / js.name)
            row = {"label": label, "member": int(member.name[7:]), "milestone": meta["milestone"],
                   "path": f"{member.name}/{weights.name}", "games": meta["games"],
                   "examples": meta["examples"], "train_seconds": round(meta["train_seconds"], 1)}
            if keep is None or label in keep:
                shutil.copy2(weights, dest / weights.name)
            else:                                # listed, not kept: what it was, to check a copy against
                (dest / weights.name).unlink(missing_ok=True)
                data = weights.read_bytes()
                row.update(path=None, kept=False, sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
            if label in before and before[label]["games"] == meta["games"]:
                row["cpu_hours"] = before[label]["cpu_hours"]
            else:
                c = cpu.get(f"{member.name}/{js.name}") or _recorded_cpu(member, meta)
                row["cpu_hours"] = None if c is None else round(args.cpu_before + c["cpu_s"] / 3600, 4)
            rows.append(row)
        latest = f"m{int(member.name[7:])}-latest"
        if status and latest in before and before[latest]["games"] == status.get("games"):
            rows.append(before[latest])          # a member that did not train this session
        elif status:
            total = cpu.get(f"{member.name}/total_cpu_s")
            if total is None and isinstance(status.get("games"), int):
                total = logfiles.cpu_seconds_through(member, status["games"])
            rows.append({"label": f"m{int(member.name[7:])}-latest", "member": int(member.name[7:]),
                         "milestone": None, "path": None, "games": status.get("games"),
                         "examples": status.get("examples"),
                         "train_seconds": round(status.get("train_seconds", 0.0), 1),
                         "cpu_hours": None if total is None else round(args.cpu_before + total / 3600, 4)})
    from training import fileio
    fileio.write_json(out / "checkpoints.json", rows, indent=1, sort_keys=False)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {len(rows)} checkpoint(s), {size / 2**20:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
