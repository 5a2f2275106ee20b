"""Raw throughput of the value network through ONNX Runtime, without TensorFlow.

Builds the ONNX graph of an architecture (``training.architecture.Architecture``, through
``training.inference.onnx_graph``) with random weights of the shapes it gives (throughput does not
depend on their values), so it runs where only onnx, onnxruntime and numpy are installed (e.g. a GPU
machine without TensorFlow):

  python -m bench.bench_onnx [--shape 6,6,2] [--filters 32] [--blocks 2] [--head 64]
      [--kernel 3] [--head-kernel 1]
      [--providers CPUExecutionProvider,CUDAExecutionProvider] [--threads 1,16]
      [--batches 1,5,32,256,1024,4096] [--seconds 2]

Prints states per second (wall-clock) for each provider, thread count and batch size.
"""
from __future__ import annotations

import argparse
import statistics
import time


import numpy as np  # noqa: E402

from training.architecture import Architecture  # noqa: E402
from training.inference import onnx_graph  # noqa: E402  (imports no TensorFlow)


def random_weights(arch: Architecture, shape, seed: int = 0) -> dict:
    """He-normal kernels and zero biases of the shapes ``arch`` gives for ``shape``."""
    rng = np.random.default_rng(seed)
    return {name: [rng.normal(0, (2 / np.prod(k[:-1])) ** 0.5, k).astype(np.float32),
                   np.zeros(b, np.float32)]
            for name, (k, b) in arch.weight_shapes(shape).items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="6,6,2")
    ap.add_argument("--filters", type=int, default=32)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--head", type=int, default=64)
    ap.add_argument("--kernel", type=int, default=3)
    ap.add_argument("--head-kernel", type=int, default=1)
    ap.add_argument("--providers", default="CPUExecutionProvider")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--batches", default="1,5,32,256,1024")
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    import onnxruntime as ort
    shape = tuple(int(v) for v in a.shape.split(","))
    arch = Architecture(a.filters, a.blocks, a.head, kernel=a.kernel, head_kernel=a.head_kernel)
    model = onnx_graph(arch, random_weights(arch, shape), shape)
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
                out = [sess.get_outputs()[0].name]
                sess.run(out, {"planes": x})
                reps = []
                for _ in range(3):
                    n, t0 = 0, time.perf_counter()
                    while time.perf_counter() - t0 < a.seconds / 3:
                        sess.run(out, {"planes": x})
                        n += b
                    reps.append(n / (time.perf_counter() - t0))
                cells.append(f"{statistics.median(reps):,.0f}")
            print(f"| {prov} | {threads} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
