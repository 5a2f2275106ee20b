"""Replay memory and sampling cost.

  python -m bench.bench_replay [--games 20] [--examples 15000] [--shape 9,9,3] [--repeats 5]

Fills a replay window with random 0/1 planes (20% ones), then times one update's sampling (sigma =
0.04, batches of 128) the way the trainer did before (concatenate the float32 window, index the
sample) and does now (``sample_indices`` + ``take`` + ``decode`` per minibatch), with the peak of
extra Python memory (tracemalloc) each. Prints the window's memory both ways. Medians of repeats.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np


from training.replay import ReplayBuffer, bytes_per_example  # noqa: E402
from training.trainer import training_batches  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=20)
    ap.add_argument("--examples", type=int, default=15000, help="examples per game")
    ap.add_argument("--shape", default="9,9,3", help="planes shape H,W,C (connect6(size=9): 9,9,3)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    shape = tuple(int(v) for v in args.shape.split(","))
    rng = np.random.default_rng(0)
    games = []
    with tempfile.TemporaryDirectory() as tmp:
        replay = ReplayBuffer(Path(tmp), args.games, shape)
        for g in range(1, args.games + 1):
            x = (rng.random((args.examples, *shape)) < 0.2).astype(np.float32)
            y = rng.uniform(-1, 1, args.examples).astype(np.float32)
            replay.add(g, x, y, np.zeros(args.examples, np.int32), {})
            games.append((x, y))
        n = replay.size
        print(f"window: {args.games} games x {args.examples} examples of planes {shape}")
        print(f"  float32: {bytes_per_example(shape, False)} B/example, "
              f"{sum(x.nbytes + y.nbytes for x, y in games) / 1e6:.1f} MB")
        print(f"  packed:  {bytes_per_example(shape)} B/example, {replay.nbytes / 1e6:.1f} MB")

        def before():
            x = np.concatenate([a for a, _ in games])
            y = np.concatenate([b for _, b in games])
            k = int(round(0.04 * n))
            idx = rng.choice(n, size=k, replace=False)
            bx, by = x[idx], y[idx]
            return sum(len(by[i:i + 128]) for i in range(0, k, 128))

        def now():
            idx = replay.sample_indices(0.04, 128, rng)
            return sum(len(by) for _, by in training_batches(replay, idx, 128, (0,), False, rng))

        for name, fn in (("before (concatenate)", before), ("now (by index, packed)", now)):
            times, peaks = [], []
            for _ in range(args.repeats):
                tracemalloc.start()
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
                peaks.append(tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
            print(f"{name:>24}: {statistics.median(times):.3f} s per update, "
                  f"peak extra {statistics.median(peaks) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
