"""results/ holds reports: tables, figures, small JSON and the few networks a figure needs, each
listed in results/MANIFEST.json with its sha256 (tools/results_manifest.py); never a run's resume
state, full logs or replay window."""
import hashlib
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
FORBIDDEN = ("latest.h5", "log.jsonl")


def _files():
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "results"],
                             cwd=ROOT, capture_output=True, text=True, check=True, timeout=60).stdout
        return [ROOT / p for p in out.splitlines() if (ROOT / p).is_file()]
    except (OSError, subprocess.SubprocessError):
        return [p for p in RESULTS.rglob("*") if p.is_file()]


def test_no_run_state_under_results():
    bad = [p.relative_to(ROOT).as_posix() for p in _files()
           if p.name in FORBIDDEN or "replay" in p.parts or "tensorboard" in p.parts]
    assert not bad, f"run state kept under results/: {bad}"


def test_every_kept_network_is_in_the_manifest_and_small():
    manifest = json.loads((RESULTS / "MANIFEST.json").read_text())["files"]
    kept = {p.relative_to(RESULTS).as_posix(): p for p in _files() if p.suffix == ".h5"}
    assert set(kept) == set(manifest), "results/MANIFEST.json is stale: python -m tools.results_manifest --write"
    for name, p in kept.items():
        data = p.read_bytes()
        # 1.5 MiB: a draughts 8x8 network (64 filters, 4 blocks) is 1.24 MB; the other games' are 0.2-0.5 MB
        assert len(data) == manifest[name]["bytes"] <= 3 << 19, name
        assert hashlib.sha256(data).hexdigest() == manifest[name]["sha256"], name


def test_listed_checkpoints_exist():
    for listing in RESULTS.glob("training-runs/*/checkpoints.json"):
        for row in json.loads(listing.read_text()):
            if row.get("path") is not None:
                assert (listing.parent / row["path"]).is_file(), f"{listing}: {row['label']}"
