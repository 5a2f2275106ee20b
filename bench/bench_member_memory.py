"""A whole member under its memory cap: peak RSS against the cap plus the
process's fixed footprint.

Runs ``MemberTrainer`` (the default config of GAME, ``--replay-games`` to fill the window sooner)
for ``--games`` games under ``--memory-mb`` in this process, sampling the RSS every 0.2 s from a
thread. The fixed footprint is the RSS when self-play starts (``MemberTrainer._play``): Python,
TensorFlow, the model and optimizer, the inference session and the traced functions. Prints one
JSON line: footprint, peak RSS, growth (peak − footprint) and its ratio to the cap, the games, their
examples and dropped harvests, the replay window's bytes; ``--json`` merges it under ``--label``.

    PYTHONPATH=. python -m bench.bench_member_memory havannah --memory-mb 256 --games 30 --replay-games 10
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("game")
    ap.add_argument("--memory-mb", type=float, default=256.0)
    ap.add_argument("--games", type=int, default=30)
    ap.add_argument("--replay-games", type=int, default=None)
    ap.add_argument("--label", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    from descent.config import default_config_path, load_config
    from training.progress import rss_mb
    from training.run import training_config
    from training.trainer import MemberJob, MemberTrainer
    raw = load_config(default_config_path(a.game))
    cfg = training_config(raw)
    if a.replay_games:
        cfg["training"]["replay_games"] = a.replay_games
    peak, done, marks = [0.0], threading.Event(), {}

    def sample():
        while not done.wait(0.2):
            peak[0] = max(peak[0], rss_mb() or 0.0)
    games = []
    with tempfile.TemporaryDirectory() as run:
        job = MemberJob(run, 0, raw["game"]["spec"], cfg, 1e9, [], seed=0, max_games=a.games,
                        extra={"memory_mb": a.memory_mb})
        trainer = MemberTrainer(job, lambda r: games.append(r) if "examples" in r else None)
        play = trainer._play

        def timed_play():
            marks["footprint"] = rss_mb()
            threading.Thread(target=sample, daemon=True).start()
            play()
        trainer._play = timed_play
        t0 = time.perf_counter()
        trainer.run()
        done.set()
        peak[0] = max(peak[0], rss_mb() or 0.0)
        replay_mb = trainer.replay.nbytes / 2 ** 20
    foot = marks["footprint"]
    out = {"game": raw["game"]["spec"], "memory_mb": a.memory_mb, "games": len(games),
           "replay_games": cfg["training"]["replay_games"], "footprint_mb": round(foot, 1),
           "peak_rss_mb": round(peak[0], 1), "growth_mb": round(peak[0] - foot, 1),
           "growth_over_cap": round((peak[0] - foot) / a.memory_mb, 3),
           "examples": [r["examples"] for r in games], "replay_mb": round(replay_mb, 1),
           "games_in_flight": games[-1]["games_in_flight"] if games else None,
           "seconds": round(time.perf_counter() - t0, 1),
           "command": "python -m bench.bench_member_memory " + " ".join(sys.argv[1:])}
    print(json.dumps(out))
    if a.json:
        from training.fileio import write_json
        path = Path(a.json)
        results = json.loads(path.read_text()) if path.exists() else {}
        results.setdefault(a.label or "member", {})[f"{a.game}_{int(a.memory_mb)}"] = out
        write_json(path, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
