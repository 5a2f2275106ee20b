"""Raw throughput of the value network through ONNX Runtime, without TensorFlow (issue 13).

Builds the graph of ``training.network.build_model`` (``training.inference.onnx_graph``) with random
weights of the right shapes (throughput does not depend on their values), so it runs where only
onnx, onnxruntime and numpy are installed (e.g. a GPU machine without TensorFlow):

  python bench/bench_onnx.py [--shape 6,6,2] [--filters 32] [--blocks 2] [--head 64]
      [--providers CPUExecutionProvider,CUDAExecutionProvider] [--threads 1,16]
      [--batches 1,5,32,256,1024,4096] [--seconds 2]

Prints states per second (wall-clock) for each provider, thread count and batch size.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from training.inference import onnx_graph  # noqa: E402  (imports no TensorFlow)


def random_weights(shape, filters: int, blocks: int, head: int, seed: int = 0) -> dict:
    h, w, c = shape
    rng = np.random.default_rng(seed)

    def conv(k, cin, cout):
        return [rng.normal(0, (2 / (k * k * cin)) ** 0.5, (k, k, cin, cout)).astype(np.float32),
                np.zeros(cout, np.float32)]
    out = {"stem": conv(3, c, filters)}
    for i in range(blocks):
        out[f"block{i}_a"] = conv(3, filters, filters)
        out[f"block{i}_b"] = conv(3, filters, filters)
    out["head_conv"] = conv(1, filters, 2)
    out["head_dense"] = [rng.normal(0, 0.1, (h * w * 2, head)).astype(np.float32), np.zeros(head, np.float32)]
    out["value"] = [rng.normal(0, 0.1, (head, 1)).astype(np.float32), np.zeros(1, np.float32)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="6,6,2")
    ap.add_argument("--filters", type=int, default=32)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--head", type=int, default=64)
    ap.add_argument("--providers", default="CPUExecutionProvider")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--batches", default="1,5,32,256,1024")
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    import onnxruntime as ort
    shape = tuple(int(v) for v in a.shape.split(","))
    model = onnx_graph(random_weights(shape, a.filters, a.blocks, a.head), shape)
    print(f"onnxruntime {ort.__version__}, available: {', '.join(ort.get_available_providers())}")
    print("| provider | threads | " + " | ".join(f"batch {b}" for b in a.batches.split(",")) + " |")
    print("|---|---|" + "---|" * len(a.batches.split(",")))
    for prov in a.providers.split(","):
        if prov not in ort.get_available_providers():
            print(f"| {prov} | - | not available |")
            continue
        for threads in (int(t) for t in a.threads.split(",")):
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.log_severity_level = 3
            sess = ort.InferenceSession(model, so, providers=[prov])
            cells = []
            for b in (int(x) for x in a.batches.split(",")):
                x = np.random.default_rng(1).integers(0, 2, (b, *shape)).astype(np.float32)
                sess.run(["value"], {"planes": x})
                reps = []
                for _ in range(3):
                    n, t0 = 0, time.perf_counter()
                    while time.perf_counter() - t0 < a.seconds / 3:
                        sess.run(["value"], {"planes": x})
                        n += b
                    reps.append(n / (time.perf_counter() - t0))
                cells.append(f"{statistics.median(reps):,.0f}")
            print(f"| {prov} | {threads} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
