"""The manifest of the network weights kept under results/ (``results/MANIFEST.json``): every
``.h5`` file with its size and sha256, so that a figure's networks can be checked (or fetched from
elsewhere and checked) without trusting their names. ``tests/test_results_policy.py`` checks that
the manifest matches the files and that no run state (resume files, full logs, replay windows) is
kept under results/.

    python -m tools.results_manifest            # print what the manifest would hold
    python -m tools.results_manifest --write    # rewrite results/MANIFEST.json
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
MANIFEST = RESULTS / "MANIFEST.json"
MAX_BYTES = 1 << 20            # a kept network stays small (the shipped ones are ~180 kB)


def entries() -> dict:
    out = {}
    for p in sorted(RESULTS.rglob("*.h5")):
        data = p.read_bytes()
        out[p.relative_to(RESULTS).as_posix()] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return out


def main(argv) -> int:
    text = json.dumps({"format": "descent-results-manifest-1", "files": entries()}, indent=1) + "\n"
    if "--write" in argv:
        tmp = MANIFEST.with_name(f".{MANIFEST.name}.tmp")
        tmp.write_text(text)
        tmp.replace(MANIFEST)
        print(f"{MANIFEST}: {len(entries())} file(s)")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
