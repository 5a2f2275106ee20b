"""Inference of the value network inside the search: low per-call cost for the batches it makes.

Three backends compute the same function, each built from the network's one description
(``training.architecture``: ``Architecture.layers()``, the ordered layer specs):

* ``"onnx"`` (the default on CPU): ONNX Runtime running a graph built from the layer specs and the
  network's weights with ``onnx.helper`` (no converter, no file): ~20 us per call, and its
  convolution kernels match oneDNN's at large batches, so it beats ``tf.function`` at every batch
  size (BENCHMARKS.md, "Inference").
* ``"numpy"`` (the fallback when onnxruntime is not installed): the layer specs evaluated with NumPy
  over a copy of the weights, im2col + one matrix product per convolution (NumPy's BLAS), into
  buffers kept between calls. A few tens of microseconds per call against ~400 us for a
  ``tf.function`` call.
* ``"tf"``: one fixed-signature ``tf.function`` of the Keras model (used on a GPU).

All equal the Keras model within 1e-4 for any architecture (tests/test_architecture.py).

The ONNX and NumPy backends are built from (architecture, weights, planes shape): ``Network``, what
``training.network.read_network`` reads from a checkpoint file without TensorFlow (playing and
evaluation), or the same three taken from a Keras model that ``training.network.build_model`` built
(``Network.of_model``: training). Both go through one constructor, so the architecture is read in
one place. ``make_inference`` takes either a ``Network`` or a Keras model; only the ``tf`` backend
(and the GPU probe of ``auto`` for a Keras model) imports TensorFlow.

Weights: the ONNX and NumPy backends hold a snapshot, taken by ``refresh()`` and checked against
the architecture's weight shapes (``ArchitectureError`` if they do not fit). The trainer calls
``refresh()`` after every training pass, so self-play never uses weights more than one pass old.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from search_ext.evaluators import CallableEvaluator
from training.architecture import (
    Architecture, ArchitectureError, Conv, Dense, Flatten, Residual, padding as same_padding)

BACKENDS = ("auto", "onnx", "numpy", "tf")


def architecture_of(model) -> Architecture:
    """The ``Architecture`` a model was built from (``build_model`` attaches it)."""
    arch = getattr(model, "architecture", None)
    if not isinstance(arch, Architecture):
        raise ArchitectureError("the model carries no architecture (build it with "
                                "training.network.build_model)")
    return arch


@dataclass(frozen=True)
class Network:
    """A value network for inference, without TensorFlow: its ``architecture``, its ``weights``
    (layer name -> [kernel, bias], float32, checked against ``architecture.weight_shapes``) and
    the ``planes_shape`` (h, w, c) it reads; ``meta`` is the checkpoint's metadata when it was read
    from a file (``training.network.read_network``)."""
    architecture: Architecture
    weights: dict
    planes_shape: tuple
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "planes_shape", tuple(int(d) for d in self.planes_shape))
        self.architecture.check_weights(self.weights, self.planes_shape)

    @classmethod
    def of_model(cls, model, weights: dict | None = None) -> Network:
        """The network of a Keras model built by ``build_model``: its architecture, ``weights``
        (default: a snapshot of its current ones, ``model_weights``) and its input shape."""
        return cls(architecture_of(model), model_weights(model) if weights is None else weights,
                   tuple(model.input_shape[1:]))


class InferenceBase(ABC):
    """``inference(batch) -> values`` (float32, shape (n,)); counts calls and states."""

    def __init__(self, planes_shape):
        self.shape = tuple(int(d) for d in planes_shape)
        self.calls = 0
        self.states = 0

    def refresh(self, weights: dict | None = None) -> None:  # noqa: B027 (a no-op by default)
        """Take a weight snapshot (``model_weights``; default: the model's current weights).
        A no-op for backends that read the live weights."""

    @abstractmethod
    def __call__(self, batch: np.ndarray) -> np.ndarray:
        """The values of a batch of planes (n, h, w, c): float32, shape (n,)."""

    def evaluator(self):
        return CallableEvaluator(self, self.shape)


class SnapshotInference(InferenceBase, ABC):
    """A backend over a weight snapshot, built from a ``Network`` (architecture, weights, planes
    shape), or from a Keras model, which is the same as ``Network.of_model(model)`` and lets
    ``refresh()`` with no argument take the model's current weights."""

    def __init__(self, network):
        self.model = None
        if not isinstance(network, Network):
            self.model = network
            network = Network.of_model(network)
        super().__init__(network.planes_shape)
        self.architecture = network.architecture
        self._build(network.weights)

    def refresh(self, weights: dict | None = None) -> None:
        """Take a weight snapshot (layer name -> [kernel, bias], as ``model_weights``; default: the
        model's current weights), checked against the architecture."""
        if weights is None:
            if self.model is None:
                raise ValueError("refresh() needs the weights: this backend was built from a "
                                 "Network, not from a model")
            weights = model_weights(self.model)
        self.architecture.check_weights(weights, self.shape)
        self._build(weights)

    @abstractmethod
    def _build(self, weights: dict) -> None:
        """Make the backend's state (a graph, a plan) from checked weights."""


class TFInference(InferenceBase):
    """One fixed-signature ``tf.function`` (no retracing, no ``model.predict``); reads the live
    weights."""

    name = "tf"

    def __init__(self, model):
        super().__init__(model.input_shape[1:])
        self.model = model
        from training import import_tensorflow  # lazy: TensorFlow
        tf = import_tensorflow()
        self._fn = tf.function(lambda x: model(x, training=False),
                               input_signature=[tf.TensorSpec((None, *self.shape), tf.float32)],
                               reduce_retracing=True)

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.states += len(batch)
        return self._fn(batch).numpy().reshape(-1)


def _activate(x: np.ndarray, activation: str | None) -> None:
    """Apply a hidden or output activation in place."""
    if activation == "relu":
        np.maximum(x, 0.0, out=x)
    elif activation == "tanh":
        np.tanh(x, out=x)
    elif activation is not None:
        raise ArchitectureError(f"no NumPy activation {activation!r}")


class NumpyInference(SnapshotInference):
    """The network's layer specs evaluated with NumPy on a weight snapshot (``refresh()`` to
    update). Activations are kept as (n * h * w, c) matrices in NHWC order."""

    name = "numpy"

    def __init__(self, network):
        self._plan: list = []
        self._bufs: dict = {}
        super().__init__(network)

    def _build(self, w: dict) -> None:
        def conv(spec):
            k, b = w[spec.name]
            return spec, np.ascontiguousarray(k.reshape(-1, k.shape[-1]), np.float32), np.asarray(b, np.float32)
        plan = []
        for spec in self.architecture.layers():
            if isinstance(spec, Conv):
                plan.append(("conv", conv(spec)))
            elif isinstance(spec, Residual):
                plan.append(("residual", (spec, [conv(c) for c in spec.body])))
            elif isinstance(spec, Flatten):
                plan.append(("flatten", spec))
            elif isinstance(spec, Dense):
                plan.append(("dense", (spec, np.asarray(w[spec.name][0], np.float32),
                                       np.asarray(w[spec.name][1], np.float32))))
            else:
                raise ArchitectureError(f"no NumPy layer for {spec!r}")
        self._plan = plan

    def _buf(self, key, shape):
        b = self._bufs.get(key)
        if b is None or b.shape != shape:
            b = np.empty(shape, np.float32)
            self._bufs[key] = b
        return b

    def _conv(self, x, dims, layer, key):
        """"same" convolution of x ((n*h*w, c), NHWC rows) -> (n*h*w, f), bias added and
        activated, in the buffer ``key``."""
        spec, w, b = layer
        n, h, wd = dims
        c, k = x.shape[1], spec.kernel
        out = self._buf(("out", key), (n * h * wd, w.shape[1]))
        if k == 1:
            np.matmul(x, w, out=out)
        else:
            top, bottom = same_padding(k)
            pad = self._buf(("pad", c, k), (n, h + k - 1, wd + k - 1, c))
            pad[:, :top] = 0.0
            pad[:, top + h:] = 0.0
            pad[:, :, :top] = 0.0
            pad[:, :, top + wd:] = 0.0
            pad[:, top:top + h, top:top + wd, :] = x.reshape(n, h, wd, c)
            s = pad.strides
            win = np.lib.stride_tricks.as_strided(pad, (n, h, wd, k, k, c),
                                                  (s[0], s[1], s[2], s[1], s[2], s[3]),
                                                  writeable=False)
            cols = self._buf(("cols", c, k), (n * h * wd, k * k * c))
            np.copyto(cols.reshape(n, h, wd, k, k, c), win)
            np.matmul(cols, w, out=out)
        out += b
        _activate(out, spec.activation)
        return out

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        self.calls += 1
        n = len(batch)
        self.states += n
        if n == 0:
            return np.zeros(0, np.float32)
        x = np.asarray(batch, dtype=np.float32)
        _, h, wd, c = x.shape
        dims = (n, h, wd)
        cur, owned = x.reshape(n * h * wd, c), False      # owned: a buffer of ours, writable
        for kind, layer in self._plan:
            if kind == "conv":
                cur, owned = self._conv(cur, dims, layer, layer[0].name), True
            elif kind == "residual":
                spec, body = layer
                if not owned:
                    cur = np.array(cur, np.float32)
                    owned = True
                y = cur
                for j, inner in enumerate(body):
                    y = self._conv(y, dims, inner, ("body", j))
                cur += y
                _activate(cur, spec.activation)
            elif kind == "flatten":
                cur = cur.reshape(n, -1)
            else:
                spec, w, b = layer
                out = self._buf(("out", spec.name), (n, w.shape[1]))
                np.matmul(cur, w, out=out)
                out += b
                _activate(out, spec.activation)
                cur, owned = out, True
        return cur.reshape(-1).copy()


def model_weights(model) -> dict:
    """A snapshot of the network's weights: layer name -> list of float32 arrays (safe to hand to
    another thread, unlike the live variables)."""
    return {layer.name: [np.asarray(w, np.float32) for w in layer.get_weights()]
            for layer in model.layers if layer.get_weights()}


_ONNX_ACTIVATIONS = {"relu": "Relu", "tanh": "Tanh"}


def onnx_graph(arch: Architecture, weights: dict, planes_shape) -> bytes:
    """The serialized ONNX model (opset 17) of ``arch``'s layer specs with ``weights``
    (``model_weights(model)``, checked against ``arch``) as initializers. NHWC input as in Keras;
    transposed to NCHW for the convolutions and back before the flatten so the dense layers see
    Keras' order. The output is the last layer's name (``value``)."""
    from onnx import TensorProto, helper, numpy_helper  # lazy: onnx (heavy; only to build the graph)
    arch.check_weights(weights, planes_shape)
    h, wd, c = planes_shape
    inits, nodes = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr, np.float32), name))

    def activate(inp, out, activation):
        if activation not in _ONNX_ACTIVATIONS:
            raise ArchitectureError(f"no ONNX activation {activation!r}")
        nodes.append(helper.make_node(_ONNX_ACTIVATIONS[activation], [inp], [out]))
        return out

    def conv(inp, spec):
        k, b = weights[spec.name]
        init(spec.name + "_w", k.transpose(3, 2, 0, 1))
        init(spec.name + "_b", b)
        top, bottom = same_padding(spec.kernel)
        pre = spec.name + "_pre" if spec.activation else spec.name
        nodes.append(helper.make_node("Conv", [inp, spec.name + "_w", spec.name + "_b"], [pre],
                                      kernel_shape=[spec.kernel, spec.kernel],
                                      pads=[top, top, bottom, bottom]))
        return activate(pre, spec.name, spec.activation) if spec.activation else pre

    nodes.append(helper.make_node("Transpose", ["planes"], ["planes_nchw"], perm=[0, 3, 1, 2]))
    x = "planes_nchw"
    for spec in arch.layers():
        if isinstance(spec, Conv):
            x = conv(x, spec)
        elif isinstance(spec, Residual):
            y = x
            for inner in spec.body:
                y = conv(y, inner)
            nodes.append(helper.make_node("Add", [x, y], [spec.name + "_add"]))
            x = activate(spec.name + "_add", spec.name + "_out", spec.activation)
        elif isinstance(spec, Flatten):
            nodes.append(helper.make_node("Transpose", [x], [spec.name + "_nhwc"], perm=[0, 2, 3, 1]))
            nodes.append(helper.make_node("Flatten", [spec.name + "_nhwc"], [spec.name], axis=1))
            x = spec.name
        elif isinstance(spec, Dense):
            init(spec.name + "_w", weights[spec.name][0])
            init(spec.name + "_b", weights[spec.name][1])
            pre = spec.name + "_pre" if spec.activation else spec.name
            nodes.append(helper.make_node("Gemm", [x, spec.name + "_w", spec.name + "_b"], [pre]))
            x = activate(pre, spec.name, spec.activation) if spec.activation else pre
        else:
            raise ArchitectureError(f"no ONNX node for {spec!r}")
    out_units = arch.weight_shapes(planes_shape)[arch.layers()[-1].name][1][0]
    graph = helper.make_graph(
        nodes, "value_net",
        [helper.make_tensor_value_info("planes", TensorProto.FLOAT, ["n", h, wd, c])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["n", out_units])], inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx_model.ir_version = 8
    return onnx_model.SerializeToString()


def onnx_available() -> bool:
    try:
        # lazy: onnx (heavy; only to build the graph)
        import onnx  # noqa: F401
        # lazy: onnxruntime (loaded only by its inference backend)
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class OnnxInference(SnapshotInference):
    """ONNX Runtime (CPU execution provider, ``threads`` intra-op threads) on a weight snapshot;
    ``refresh()`` rebuilds the session (a few milliseconds)."""

    name = "onnx"

    def __init__(self, network, threads: int = 1):
        self.threads = threads
        self._sess: Any = None         # an onnxruntime.InferenceSession (untyped package)
        super().__init__(network)

    def _build(self, weights: dict) -> None:
        import onnxruntime as ort  # lazy: onnxruntime (loaded only by its inference backend)
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        self._sess = ort.InferenceSession(onnx_graph(self.architecture, weights, self.shape), so,
                                          providers=["CPUExecutionProvider"])
        self._output = self._sess.get_outputs()[0].name

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.states += len(batch)
        if len(batch) == 0:
            return np.zeros(0, np.float32)
        x = np.ascontiguousarray(batch, dtype=np.float32)
        return self._sess.run([self._output], {"planes": x})[0].reshape(-1)


def gpu_available() -> bool:
    from training import import_tensorflow  # lazy: TensorFlow
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
    from training import import_tensorflow  # lazy: TensorFlow
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


def make_inference(network, backend: str = "auto", device: str = "auto", threads: int = 1):
    """The inference object for ``backend`` over ``network``: a ``Network`` (read from a file by
    ``training.network.read_network``) or a Keras model (training).

    ``auto``: for a Keras model, ``tf`` when TensorFlow runs on a GPU (device ``gpu``, or ``auto``
    with a GPU present); then ``onnx`` when onnxruntime is installed, else ``numpy``. For a
    ``Network``, ``auto`` never looks for a GPU (that would import TensorFlow): it is ``onnx`` or
    ``numpy``; ``backend="tf"`` needs the Keras model (``training.network.keras_model(network)``)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown inference backend {backend!r} (known: {', '.join(BACKENDS)})")
    if backend == "auto":
        on_gpu = not isinstance(network, Network) and (
            device == "gpu" or (device == "auto" and gpu_available()))
        backend = "tf" if on_gpu else ("onnx" if onnx_available() else "numpy")
    if backend == "tf":
        if isinstance(network, Network):
            raise ValueError("the tf backend runs a Keras model: build it with "
                             "training.network.keras_model(network)")
        return TFInference(network)
    if backend == "onnx":
        return OnnxInference(network, threads)
    return NumpyInference(network)
