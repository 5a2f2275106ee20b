"""Inference of the value network inside the search: low per-call cost for the batches it makes.

Three backends compute the same function (``training.network.build_model``):

* ``"onnx"`` (the default on CPU): ONNX Runtime running a graph built from the network's weights
  with ``onnx.helper`` (no converter, no file): ~20 us per call, and its convolution kernels match
  oneDNN's at large batches, so it beats ``tf.function`` at every batch size (BENCHMARKS.md,
  "Self-play throughput").
* ``"numpy"`` (the fallback when onnxruntime is not installed): a hand-written forward pass over a copy of the Keras weights,
  im2col + one matrix product per convolution (NumPy's BLAS), into buffers kept between calls.
  Its cost per call is a few tens of microseconds against ~400 us for a ``tf.function`` call, so
  the small batches of a search are not dominated by framework overhead. Outputs equal the Keras
  model's within 1e-4 (tests/test_inference.py).
* ``"tf"``: one fixed-signature ``tf.function`` (the previous path; used on a GPU, and kept for
  comparison).

Weights: the ONNX and NumPy backends hold a snapshot, taken by ``refresh()``. The trainer calls ``refresh()``
after every training pass, so self-play never uses weights more than one pass old (see README,
"Self-play throughput").
"""
from __future__ import annotations

import numpy as np

BACKENDS = ("auto", "onnx", "numpy", "tf")


class InferenceBase:
    """``inference(batch) -> values`` (float32, shape (n,)); counts calls and states."""

    def __init__(self, model):
        self.model = model
        self.shape = tuple(model.input_shape[1:])
        self.calls = 0
        self.states = 0

    def refresh(self, weights: dict | None = None) -> None:
        """Take a weight snapshot (``model_weights``; default: the model's current weights).
        A no-op for backends that read the live weights."""

    def evaluator(self):
        from search_ext.evaluators import CallableEvaluator
        return CallableEvaluator(self, self.shape)


class TFInference(InferenceBase):
    """One fixed-signature ``tf.function`` (no retracing, no ``model.predict``); reads the live
    weights."""

    name = "tf"

    def __init__(self, model):
        super().__init__(model)
        from training import import_tensorflow
        tf = import_tensorflow()
        self._fn = tf.function(lambda x: model(x, training=False),
                               input_signature=[tf.TensorSpec((None, *self.shape), tf.float32)],
                               reduce_retracing=True)

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.states += len(batch)
        return self._fn(batch).numpy().reshape(-1)


class NumpyInference(InferenceBase):
    """The residual CNN evaluated with NumPy on a weight snapshot (``refresh()`` to update)."""

    name = "numpy"

    def __init__(self, model):
        super().__init__(model)
        self._layers = None
        self._bufs: dict = {}
        self.refresh()

    def refresh(self, weights: dict | None = None) -> None:
        """Take a weight snapshot (``model_weights``; default: the model's current weights)."""
        w = model_weights(self.model) if weights is None else weights

        def conv(name):
            k, b = w[name]
            kh, kw, cin, cout = k.shape
            return np.ascontiguousarray(k.reshape(kh * kw * cin, cout)), b, kh
        blocks = []
        i = 0
        while f"block{i}_a" in w:
            blocks.append((conv(f"block{i}_a"), conv(f"block{i}_b")))
            i += 1
        d1 = w["head_dense"]
        d2 = w["value"]
        self._layers = {"stem": conv("stem"), "blocks": blocks, "head": conv("head_conv"),
                        "dense": d1, "value": d2}

    def _buf(self, key, shape):
        b = self._bufs.get(key)
        if b is None or b.shape != shape:
            b = np.empty(shape, np.float32)
            self._bufs[key] = b
        return b

    def _conv3(self, x, w, b, tag):
        """3x3 'same' convolution of x (n, h, w, c) -> (n*h*w, f), bias added (no activation)."""
        n, h, wd, c = x.shape
        pad = self._buf(("pad", c), (n, h + 2, wd + 2, c))
        pad[:, 0, :, :] = 0.0
        pad[:, h + 1, :, :] = 0.0
        pad[:, :, 0, :] = 0.0
        pad[:, :, wd + 1, :] = 0.0
        pad[:, 1:h + 1, 1:wd + 1, :] = x
        s = pad.strides
        win = np.lib.stride_tricks.as_strided(pad, (n, h, wd, 3, 3, c),
                                              (s[0], s[1], s[2], s[1], s[2], s[3]), writeable=False)
        cols = self._buf(("cols", c), (n * h * wd, 9 * c))
        np.copyto(cols.reshape(n, h, wd, 3, 3, c), win)
        out = self._buf(("out", tag), (n * h * wd, w.shape[1]))
        np.matmul(cols, w, out=out)
        out += b
        return out

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        self.calls += 1
        n = len(batch)
        self.states += n
        if n == 0:
            return np.zeros(0, np.float32)
        L = self._layers
        x = np.asarray(batch, dtype=np.float32)
        _, h, wd, _ = x.shape
        (w, b, _) = L["stem"]
        y = self._conv3(x, w, b, "stem")
        np.maximum(y, 0.0, out=y)
        f = y.shape[1]
        cur = self._buf("x0", y.shape)
        np.copyto(cur, y)
        for (wa, ba, _), (wb, bb, _) in L["blocks"]:
            t = self._conv3(cur.reshape(n, h, wd, f), wa, ba, "a")
            np.maximum(t, 0.0, out=t)
            u = self._conv3(t.reshape(n, h, wd, f), wb, bb, "b")
            cur += u
            np.maximum(cur, 0.0, out=cur)
        hw, hb, _ = L["head"]
        head = cur @ hw
        head += hb
        np.maximum(head, 0.0, out=head)
        d1w, d1b = L["dense"]
        z = head.reshape(n, -1) @ d1w
        z += d1b
        np.maximum(z, 0.0, out=z)
        vw, vb = L["value"]
        v = z @ vw
        v += vb
        return np.tanh(v).reshape(-1)


def model_weights(model) -> dict:
    """A snapshot of the network's weights: layer name -> list of float32 arrays (safe to hand to
    another thread, unlike the live variables)."""
    return {layer.name: [np.asarray(w, np.float32) for w in layer.get_weights()]
            for layer in model.layers if layer.get_weights()}


def onnx_graph(weights: dict, planes_shape) -> bytes:
    """The serialized ONNX model of ``training.network.build_model``'s network (opset 17) with
    ``weights`` (``model_weights(model)``) as initializers. NHWC input as in Keras; transposed to
    NCHW for the convolutions and back before the flatten so the dense layer sees Keras' order."""
    from onnx import TensorProto, helper, numpy_helper
    w = weights
    h, wd, c = planes_shape
    inits, nodes = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr, np.float32), name))

    def conv(inp, lname, out, relu):
        k, b = w[lname]
        init(lname + "_w", k.transpose(3, 2, 0, 1))
        init(lname + "_b", b)
        p = k.shape[0] // 2
        pre = out + "_pre" if relu else out
        nodes.append(helper.make_node("Conv", [inp, lname + "_w", lname + "_b"], [pre],
                                      pads=[p, p, p, p]))
        if relu:
            nodes.append(helper.make_node("Relu", [pre], [out]))
        return out

    nodes.append(helper.make_node("Transpose", ["planes"], ["x0"], perm=[0, 3, 1, 2]))
    x = conv("x0", "stem", "stem_out", True)
    i = 0
    while f"block{i}_a" in w:
        a = conv(x, f"block{i}_a", f"a{i}", True)
        b = conv(a, f"block{i}_b", f"b{i}", False)
        nodes.append(helper.make_node("Add", [x, b], [f"add{i}"]))
        nodes.append(helper.make_node("Relu", [f"add{i}"], [f"r{i}"]))
        x = f"r{i}"
        i += 1
    conv(x, "head_conv", "hc", True)
    nodes.append(helper.make_node("Transpose", ["hc"], ["hct"], perm=[0, 2, 3, 1]))
    nodes.append(helper.make_node("Flatten", ["hct"], ["flat"], axis=1))
    for lname, inp, out, act in (("head_dense", "flat", "d1", "Relu"), ("value", "d1", "value", "Tanh")):
        init(lname + "_w", w[lname][0])
        init(lname + "_b", w[lname][1])
        nodes.append(helper.make_node("Gemm", [inp, lname + "_w", lname + "_b"], [out + "_pre"]))
        nodes.append(helper.make_node(act, [out + "_pre"], [out]))
    graph = helper.make_graph(
        nodes, "value_net",
        [helper.make_tensor_value_info("planes", TensorProto.FLOAT, ["n", h, wd, c])],
        [helper.make_tensor_value_info("value", TensorProto.FLOAT, ["n", 1])], inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx_model.ir_version = 8
    return onnx_model.SerializeToString()


def onnx_available() -> bool:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class OnnxInference(InferenceBase):
    """ONNX Runtime (CPU execution provider, ``threads`` intra-op threads) on a weight snapshot."""

    name = "onnx"

    def __init__(self, model, threads: int = 1):
        super().__init__(model)
        self.threads = threads
        self._sess = None
        self.refresh()

    def refresh(self, weights: dict | None = None) -> None:
        """Rebuild the session from a weight snapshot (``model_weights``; default: the model's
        current weights). A few milliseconds."""
        import onnxruntime as ort
        if weights is None:
            weights = model_weights(self.model)
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        self._sess = ort.InferenceSession(onnx_graph(weights, self.shape), so,
                                          providers=["CPUExecutionProvider"])

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.states += len(batch)
        if len(batch) == 0:
            return np.zeros(0, np.float32)
        x = np.ascontiguousarray(batch, dtype=np.float32)
        return self._sess.run(["value"], {"planes": x})[0].reshape(-1)


def gpu_available() -> bool:
    from training import import_tensorflow
    tf = import_tensorflow()
    try:
        return bool(tf.config.list_physical_devices("GPU"))
    except Exception:
        return False


DEVICES = ("auto", "cpu", "gpu")


class DeviceError(RuntimeError):
    """``device = "gpu"`` asked for, but TensorFlow sees no GPU."""


def use_device(device: str = "auto") -> str:
    """Set TensorFlow's device for this process (before building models): ``cpu`` hides every GPU,
    ``gpu`` requires one, ``auto`` uses a GPU when TensorFlow sees one. Returns "cpu" or "gpu"."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r} (known: {', '.join(DEVICES)})")
    from training import import_tensorflow
    tf = import_tensorflow()
    if device == "cpu":
        try:
            tf.config.set_visible_devices([], "GPU")
        except (RuntimeError, ValueError):
            pass            # already initialised: nothing was placed on a GPU unless one was asked
        return "cpu"
    found = gpu_available()
    if device == "gpu" and not found:
        raise DeviceError("device = \"gpu\" but TensorFlow sees no GPU (install the GPU build with "
                          "`pip install -e '.[gpu]'`, check the driver, or use device = \"auto\")")
    if found:
        for g in tf.config.list_physical_devices("GPU"):
            try:
                tf.config.experimental.set_memory_growth(g, True)
            except (RuntimeError, ValueError):
                pass
    return "gpu" if found else "cpu"


def default_games_in_flight(branching: int, device: str = "cpu") -> int:
    """Games per self-play process when the config says 0 (auto): enough for batches of a few
    hundred states on a CPU (the per-call cost is then negligible), a few thousand on a GPU."""
    target = 2048 if device == "gpu" else 256
    top = 128 if device == "gpu" else 16
    return max(2, min(top, target // max(1, branching)))


def make_inference(model, backend: str = "auto", device: str = "auto", threads: int = 1):
    """The inference object for ``backend``. ``auto``: ``tf`` when TensorFlow runs on a GPU (device
    ``gpu``, or ``auto`` with a GPU present), else ``onnx`` when onnxruntime is installed, else
    ``numpy``."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown inference backend {backend!r} (known: {', '.join(BACKENDS)})")
    if backend == "auto":
        on_gpu = device == "gpu" or (device == "auto" and gpu_available())
        backend = "tf" if on_gpu else ("onnx" if onnx_available() else "numpy")
    if backend == "tf":
        return TFInference(model)
    if backend == "onnx":
        return OnnxInference(model, threads)
    return NumpyInference(model)
