"""What an 8-bit network would save: the shipped networks in ONNX Runtime, float32 against int8.

Networked evaluation spends most of its time in the network's arithmetic (BENCHMARKS.md, "Batched
evaluation"), so the next lever is a cheaper network per state. This measures one such lever,
ONNX Runtime's static int8 quantization (QOperator format: unsigned 8-bit activations, signed
8-bit weights), on each shipped final network, without changing anything in the tool:

* CPU microseconds per state at a batch of ``--batch`` states (the batched driver's typical
  round), float32 and int8 timed alternately, median of ``--repeats``;
* how far int8's values are from float32's, on positions the calibration did not see (mean and
  largest absolute difference, value range [-1, 1]), and how often the two agree on which of a
  position's children is best for the player to move (the decision a search takes from them).

Calibration and test positions come from seeded random playouts of the game (``--positions`` of
each). Imports no TensorFlow:

  python -m bench.bench_int8 [--repeats 7] [--batch 96] [--positions 1000] [--out bench/results_int8.json]
"""
from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time


import numpy as np  # noqa: E402

import games  # noqa: E402
from training.inference import make_inference, onnx_graph  # noqa: E402  (imports no TensorFlow)
from training.network import read_network  # noqa: E402

SHIPPED = {"reversi(size=6)": "reversi_size-6", "breakthrough(rows=6,cols=6)": "breakthrough_rows-6_cols-6",
           "havannah(base=4)": "havannah_base-4"}


def playout_positions(spec: str, n: int, seed: int) -> list:
    """``n`` non-terminal positions of seeded random playouts (every ply of each game)."""
    rng = np.random.default_rng(seed)
    out: list = []
    while len(out) < n:
        s = games.new_state(spec)
        while not s.is_game_over() and len(out) < n:
            out.append(s.copy())
            acts = s.legal_actions_list()
            s.push(acts[int(rng.integers(len(acts)))])
    return out


def children_planes(state) -> list:
    """The planes of every non-terminal child of ``state``."""
    planes = []
    for a in state.legal_actions_list():
        c = state.copy()
        c.push(a)
        if not c.is_game_over():
            planes.append(c.encode_planes())
    return planes


def int8_session(path: str):
    """The quantized graph at ``path`` in ONNX Runtime, set up as the tool's ``OnnxInference``."""
    import onnxruntime as ort  # lazy: only this bench needs it
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    out = s.get_outputs()[0].name
    return lambda x: s.run([out], {"planes": np.ascontiguousarray(x, np.float32)})[0].reshape(-1)


def cpu_us_per_state(run, x: np.ndarray, calls: int) -> float:
    t = time.process_time()
    for _ in range(calls):
        run(x)
    return (time.process_time() - t) / calls / len(x) * 1e6


def measure(spec: str, folder: str, a) -> dict:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    net = read_network(os.path.join("checkpoints", "shipped", folder, "final.weights.h5"))
    shape = tuple(net.planes_shape)
    calib = np.stack([p.encode_planes() for p in playout_positions(spec, a.positions, seed=1)])

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.chunks = iter([{"planes": calib[i:i + 64]} for i in range(0, len(calib), 64)])

        def get_next(self):
            return next(self.chunks, None)

    with tempfile.TemporaryDirectory() as d:
        f32, q8 = os.path.join(d, "f32.onnx"), os.path.join(d, "int8.onnx")
        with open(f32, "wb") as f:
            f.write(onnx_graph(net.architecture, net.weights, shape))
        logging.getLogger().setLevel(logging.ERROR)     # ORT's advice to pre-process the graph
        quantize_static(f32, q8, Reader(), quant_format=QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        run32, run8 = make_inference(net, backend="onnx"), int8_session(q8)   # float32: the tool's own
        test = playout_positions(spec, a.positions, seed=2)
        x = np.stack([p.encode_planes() for p in test])
        v32, v8 = run32(x), run8(x)
        diff = np.abs(v32 - v8)
        same = total = 0
        for p in test[:200]:
            planes = children_planes(p)
            if len(planes) < 2:
                continue
            total += 1
            x_children = np.stack(planes)
            same += int(np.argmin(run32(x_children)) == np.argmin(run8(x_children)))  # child values: opponent to move
        batch = x[:a.batch]
        t32, t8 = [], []
        for _ in range(a.repeats):
            t32.append(cpu_us_per_state(run32, batch, a.calls))
            t8.append(cpu_us_per_state(run8, batch, a.calls))
    m32, m8 = statistics.median(t32), statistics.median(t8)
    return {"game": spec, "batch": a.batch, "repeats": a.repeats, "us_per_state_float32": round(m32, 1),
            "us_per_state_int8": round(m8, 1), "ratio": round(m32 / m8, 2),
            "value_mean_abs_diff": round(float(diff.mean()), 4), "value_max_abs_diff": round(float(diff.max()), 4),
            "best_child_agrees": round(same / max(total, 1), 3), "positions_compared": total}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--batch", type=int, default=96)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--positions", type=int, default=1000)
    ap.add_argument("--games", nargs="*", default=list(SHIPPED), choices=list(SHIPPED), help="shipped networks")
    ap.add_argument("--out", default="bench/results_int8.json")
    a = ap.parse_args()
    import onnxruntime as ort  # lazy: only this bench needs it
    rows = []
    print("| network | float32 µs/state | int8 µs/state | ratio | mean / max value diff | best child agrees |")
    print("|---|---|---|---|---|---|")
    for spec in a.games:
        r = measure(spec, SHIPPED[spec], a)
        rows.append(r)
        print(f"| {spec} | {r['us_per_state_float32']} | {r['us_per_state_int8']} | {r['ratio']}x | "
              f"{r['value_mean_abs_diff']} / {r['value_max_abs_diff']} | "
              f"{100 * r['best_child_agrees']:.1f}% of {r['positions_compared']} |", flush=True)
    from training.fileio import write_json
    write_json(a.out, {"onnxruntime": ort.__version__, "date": time.strftime("%Y-%m-%d"), "rows": rows},
               indent=1, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
