"""The value network: a residual CNN over the game's planes with a tanh output, trained with MSE;
its architecture is described once, in ``training.architecture``.

For playing and evaluation, ``read_network`` reads a checkpoint's architecture and weights
without TensorFlow (h5py and NumPy only) into a ``training.inference.Network``, which the ONNX
Runtime and NumPy backends run; ``load_network`` builds the Keras model of the same file (training,
and the ``tf`` backend), through the same reading and checks.

Files are HDF5 written under a temporary name and renamed, and read without executing code:
* ``save_state``/``load_state``: weights, optimizer variables and a JSON metadata record in one file
  (the rolling "latest" state used to resume);
* ``save_weights``/``load_weights``: weights only (milestone checkpoints; metadata in a JSON beside).
Both store the weights as the group ``weights`` of arrays ``0000``, ``0001``, ... in the order of the
Keras model's ``model.weights``: the layers of ``Architecture.layers()`` in order, kernel then bias
(``weight_order``).
Writes go through ``training.fileio`` (temporary name, fsync, rename).
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import h5py
import numpy as np

import games
from games import validate as v
from games.errors import GameError
from training import fileio, layout
from training.architecture import (
    Architecture, ArchitectureError, Conv, Dense, Flatten, META as ARCHITECTURE_META, Residual)
from training.inference import Network, TFInference

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


class CheckpointError(GameError):
    """A missing, truncated or incompatible checkpoint file."""


# ---- metadata schemas (games.validate): what a checkpoint may hold, checked before it is used ----
NETWORK_META = ARCHITECTURE_META          # the network's architecture (training.architecture)
_RNG_STATE = v.Record({"bit_generator": v.Str(64, empty=False), "state": v.Map(v.Int(0, 2 ** 256)),
                       "has_uint32": v.Int(0, 1), "uinteger": v.Int(0, 2 ** 64 - 1)})
COUNTERS_META = v.Record({"games": v.Int(0, v.MAX_COUNT), "examples": v.Int(0, 10 ** 15),
                          "train_seconds": v.Real(0.0, 1e10), "updates": v.Int(0, 10 ** 15),
                          "milestones_done": v.List(v.Str(64, empty=False), max_len=1000)},
                         {"rng": v.Opt(_RNG_STATE), "seed": v.Int(0, 2 ** 64),
                          "cpu_seconds": v.Real(0.0, 1e12), "network_version": v.Int(0, 10 ** 15),
                          "actor_games": v.Map(v.Int(0, 10 ** 15))})
_COMMON_META: dict[str, v.Check] = {"game": v.Str(256, empty=False)}
_OPTIONAL_META = {"network": NETWORK_META, "config": v.Record({}, {"network": NETWORK_META}),
                  "planes_shape": v.List(v.Int(1, 4096), 3, 3), "member": v.Int(0, 100_000),
                  "game_version": v.Int(0, 10 ** 6)}
STATE_META = v.Record({**_COMMON_META, "counters": COUNTERS_META}, _OPTIONAL_META)
WEIGHTS_META = v.Record(_COMMON_META, {**_OPTIONAL_META, "milestone": v.Str(64, empty=False),
                                       "milestone_seconds": v.Real(0.0, 1e10),
                                       "train_seconds": v.Real(0.0, 1e10),
                                       "cpu_seconds": v.Real(0.0, 1e12),
                                       "games": v.Int(0, v.MAX_COUNT),
                                       "examples": v.Int(0, 10 ** 15),
                                       "undertrained": v.Bool(),
                                       "network_version": v.Int(0, 10 ** 15)})
_FORMATS = {"descent-state-1": STATE_META, "descent-weights-1": WEIGHTS_META}
# Every failure while reading an HDF5 file (h5py raises these for truncated files, wrong objects,
# link loops, bad attributes)
H5_ERRORS = (OSError, KeyError, ValueError, TypeError, RuntimeError, AttributeError)


@contextlib.contextmanager
def read_h5(path, what: str = "checkpoint", missing: str | None = None):
    """An HDF5 file open for reading: the one error path of every HDF5 read of the project
    (checkpoints, replay files, shipped networks). A ``CheckpointError`` raised inside passes
    unchanged; a missing file is ``"<path>: <missing or what> not found"``; any other failure
    while reading (a truncated file, a wrong object, a link loop, a bad attribute) is one line,
    ``"<path>: corrupt or truncated <what> (<detail>)"``."""
    try:
        with h5py.File(path, "r") as f:
            yield f
    except CheckpointError:
        raise
    except FileNotFoundError:
        raise CheckpointError(f"{path}: {missing or what} not found") from None
    except H5_ERRORS as exc:
        raise CheckpointError(v.one_line(f"{path}: corrupt or truncated {what} ({exc})")) from None


def _meta_of(f, path: Path, formats=tuple(_FORMATS)) -> tuple[str, dict]:
    """(format, checked metadata) of an open checkpoint; ``CheckpointError`` naming the entry."""
    fmt = f.attrs.get("format")
    if isinstance(fmt, bytes):
        fmt = fmt.decode("ascii", "replace")
    if not isinstance(fmt, str) or fmt not in formats:
        raise CheckpointError(v.one_line(f"{path}: not a descent checkpoint of the expected kind "
                                         f"(format {fmt!r}, expected {' or '.join(formats)})"))
    raw = f.attrs.get("meta")
    if isinstance(raw, np.ndarray) or not isinstance(raw, (str, bytes)):
        raise CheckpointError(f"{path}: the metadata attribute is missing or not text")
    return fmt, parse_meta(raw, _FORMATS[fmt], f"checkpoint {path}: meta")


# Sections of a checkpoint's metadata that hold metrics (a game's log record): a NaN or an infinity
# there (older versions wrote ``"loss": NaN`` for a game counted before the first training pass) is
# read as null. Anywhere else (counters, config, architecture) it is a corrupt checkpoint.
METRIC_SECTIONS = ("record",)


class _NonFinite(str):
    """A NaN or infinity constant met while parsing metadata (its token)."""


def parse_meta(raw, schema, name: str) -> dict:
    """Checkpoint metadata (JSON text) checked against ``schema``. Non-standard constants (NaN,
    Infinity) inside ``METRIC_SECTIONS`` become None; elsewhere they are ``CheckpointError``."""
    try:
        obj = json.loads(raw, parse_constant=_NonFinite)
    except (ValueError, RecursionError) as exc:     # JSONDecodeError and UnicodeDecodeError too
        raise CheckpointError(v.one_line(f"{name}: is not valid JSON ({exc})")) from None

    def walk(x, where, metric):
        if isinstance(x, _NonFinite):
            if metric:
                return None
            raise CheckpointError(f"{name}{where}: {str(x)} is not a value a checkpoint may hold")
        if isinstance(x, dict):
            return {k: walk(y, f"{where}.{k}", metric or (where == "" and k in METRIC_SECTIONS))
                    for k, y in x.items()}
        if isinstance(x, list):
            return [walk(y, f"{where}[{i}]", metric) for i, y in enumerate(x)]
        return x
    return schema(walk(obj, "", False), name, CheckpointError)


def meta_text(meta: dict, path) -> str:
    """Metadata as strict JSON (``training.fileio.json_text``): ``NonFiniteJSON`` naming the
    entry if it holds NaN or an infinity, so no checkpoint is written that could not be read."""
    return fileio.json_text(meta, indent=None, sort_keys=False, what=f"{path} metadata")


def configure_threads(threads: int) -> None:
    """Limit TensorFlow's thread pools (call before building any model)."""
    from training import import_tensorflow  # lazy: TensorFlow
    tf = import_tensorflow()
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:
        pass        # already initialised in this process


def build_model(planes_shape, *sizes, seed: int = 0, **fields):
    """The Keras model of an ``Architecture`` (``training.architecture``), built by walking its
    layer specs: ``build_model(shape, arch, seed=)``, or ``build_model(shape, filters, blocks,
    head_units, seed=, kernel=, ...)`` with the Architecture's fields (defaults for the rest).
    The model carries its description as ``model.architecture``. Weights are initialised from
    ``seed`` (He normal, Glorot uniform for the output unit)."""
    if len(sizes) == 1 and isinstance(sizes[0], Architecture) and not fields:
        arch = sizes[0]
    else:
        arch = Architecture(*sizes, **fields)
    from training import import_tensorflow  # lazy: TensorFlow
    import_tensorflow()
    import keras  # lazy: TensorFlow
    from keras import layers  # lazy: TensorFlow
    keras.utils.set_random_seed(seed)
    he = keras.initializers.HeNormal(seed=seed)     # one object, drawn from in layer order

    def init(spec):
        return he if spec.init == "he_normal" else spec.init

    def conv(spec):
        return layers.Conv2D(spec.filters, spec.kernel, padding="same", activation=spec.activation,
                             kernel_initializer=init(spec), name=spec.name)
    inp = x = keras.Input(tuple(planes_shape), name="planes")
    for spec in arch.layers():
        if isinstance(spec, Conv):
            x = conv(spec)(x)
        elif isinstance(spec, Residual):
            y = x
            for inner in spec.body:
                y = conv(inner)(y)
            x = layers.Activation(spec.activation, name=f"{spec.name}_out")(
                layers.Add(name=f"{spec.name}_add")([x, y]))
        elif isinstance(spec, Flatten):
            x = layers.Flatten(name=spec.name)(x)
        elif isinstance(spec, Dense):
            x = layers.Dense(spec.units, activation=spec.activation, kernel_initializer=init(spec),
                             name=spec.name)(x)
        else:
            raise TypeError(f"no Keras layer for {spec!r}")
    model = keras.Model(inp, x, name="value_net")
    model.architecture = arch
    return model


def make_optimizer(model, learning_rate: float):
    from training import import_tensorflow  # lazy: TensorFlow
    import_tensorflow()
    import keras  # lazy: TensorFlow
    opt = keras.optimizers.Adam(learning_rate=learning_rate)
    opt.build(model.trainable_variables)
    return opt


# The tf.function backend under its former name (the backends live in training.inference).
Inference = TFInference


def make_train_step(model, optimizer):
    """A compiled training step on one batch: returns the MSE loss."""
    from training import import_tensorflow  # lazy: TensorFlow
    tf = import_tensorflow()

    @tf.function(reduce_retracing=True)
    def step(x, y):
        with tf.GradientTape() as tape:
            pred = tf.reshape(model(x, training=True), [-1])
            loss = tf.reduce_mean(tf.square(pred - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return step


# ---- files ----------------------------------------------------------------------------------------

def _write_vars(group, variables) -> None:
    for i, var in enumerate(variables):
        group.create_dataset(f"{i:04d}", data=np.asarray(var.numpy() if hasattr(var, "numpy") else var))


def _read_arrays(group, shapes, path: Path, what: str) -> list:
    """The arrays of a group written by ``_write_vars``, checked against ``shapes`` (in order):
    count, numeric, shape and finite; float32, read-only. ``CheckpointError`` naming the entry."""
    if not isinstance(group, h5py.Group):
        raise CheckpointError(f"{path}: '{what}' is not a group of arrays")
    keys = sorted(group.keys())
    if len(keys) != len(shapes):
        raise CheckpointError(f"{path}: {what} holds {len(keys)} arrays, the model needs {len(shapes)} "
                              f"(different network size?)")
    out = []
    for k, shape in zip(keys, shapes):
        ds = group[k]
        if not isinstance(ds, h5py.Dataset) or ds.dtype.kind not in "fiu":
            raise CheckpointError(f"{path}: {what} entry {k!r} is not a numeric array")
        arr = ds[()]
        if tuple(np.shape(arr)) != tuple(shape):
            raise CheckpointError(f"{path}: {what} array {k} has shape {np.shape(arr)}, expected "
                                  f"{tuple(shape)} (different network size?)")
        if not np.isfinite(arr).all():
            raise CheckpointError(f"{path}: {what} array {k} holds NaN or infinite values")
        arr = np.asarray(arr, np.float32)
        arr.setflags(write=False)
        out.append(arr)
    return out


def _read_vars(group, variables, path: Path, what: str) -> None:
    for arr, var in zip(_read_arrays(group, [tuple(var.shape) for var in variables], path, what), variables):
        var.assign(arr)


def weight_order(arch: Architecture, planes_shape) -> list[tuple[str, int, tuple]]:
    """(layer name, index in the layer's [kernel, bias], shape) of each array a checkpoint's
    ``weights`` group holds, in its order (that of the Keras model's ``model.weights``)."""
    return [(name, i, tuple(shape)) for name, shapes in arch.weight_shapes(planes_shape).items()
            for i, shape in enumerate(shapes)]


def save_state(path: Path, model, optimizer, meta: dict) -> None:
    """Weights, optimizer variables and metadata in one HDF5 file, atomically."""
    with fileio.atomic_target(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs["format"] = "descent-state-1"
        f.attrs["meta"] = meta_text(meta, path)
        _write_vars(f.create_group("weights"), model.weights)
        if optimizer is not None:
            _write_vars(f.create_group("optimizer"), optimizer.variables)


def read_meta(path: Path) -> dict:
    """The checked metadata of a rolling state file (counters included); ``CheckpointError``."""
    path = Path(path)
    with read_h5(path) as f:
        return _meta_of(f, path, ("descent-state-1",))[1]


def load_state(path: Path, model, optimizer) -> dict:
    """Restore what ``save_state`` wrote; returns the metadata. Raises ``CheckpointError``."""
    path = Path(path)
    meta = read_meta(path)
    with read_h5(path) as f:
        _read_vars(f["weights"], model.weights, path, "weights")
        if optimizer is not None and "optimizer" in f:
            _read_vars(f["optimizer"], optimizer.variables, path, "optimizer state")
    return meta


def save_weights(path: Path, model, meta: dict, record: bool = True) -> None:
    """A milestone checkpoint: weights (HDF5) and metadata (JSON beside it, unless ``record`` is
    false: the network a learner publishes for its actors), both atomically."""
    path = Path(path)
    with fileio.atomic_target(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs["format"] = "descent-weights-1"
        f.attrs["meta"] = meta_text(meta, path)
        _write_vars(f.create_group("weights"), model.weights)
    if record:
        fileio.write_json(layout.record_of_weights(path), meta)


def load_weights(path: Path, model) -> dict:
    path = Path(path)
    with read_h5(path) as f:
        meta = _meta_of(f, path, ("descent-weights-1",))[1]
        _read_vars(f["weights"], model.weights, path, "weights")
        return meta


_NET_CACHE: dict = {}
_READ_CACHE: dict = {}


def _checkpoint_key(path) -> tuple[Path, tuple]:
    """The checked path of a network checkpoint and its cache key (path, inode, size and
    modification time: a file replaced by another is read again)."""
    path = v.file_path(path, "network checkpoint path", CheckpointError)
    if path.is_dir():
        raise CheckpointError(f"{path}: a directory, not a network checkpoint file (give its "
                              f"latest.h5 or a milestone_*.weights.h5)")
    try:
        st = path.stat()
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = None
    return path, (str(path.resolve()), stamp)


def read_network(path, game_info=None, cache: bool = True) -> Network:
    """A checkpoint's network for inference, read without TensorFlow: its architecture (from the
    metadata), its weights (layer name -> [kernel, bias], float32, read-only) checked against the
    architecture's weight shapes, its planes shape and metadata, as a ``training.inference.Network``
    (``make_inference`` runs it in ONNX Runtime or NumPy).

    ``path`` is a milestone ``.weights.h5`` or a rolling ``latest.h5`` state; with ``game_info``
    the network must be of that game. Cached per process (``_checkpoint_key``). Raises
    ``CheckpointError`` naming the file: missing, corrupt, of another game, or weights that do not
    fit the architecture its metadata describes. ``cache=False``: read it again and keep nothing
    (an actor reading each version its learner publishes)."""
    path, key = _checkpoint_key(path)
    net = _READ_CACHE.get(key) if cache else None
    if net is None:
        with read_h5(path, missing="network checkpoint") as f:
            meta = _meta_of(f, path)[1]
            arch, shape = _network_of_meta(meta, path)
            order = weight_order(arch, shape)
            arrays = _read_arrays(f["weights"], [o[2] for o in order], path, "weights")
        weights: dict = {}
        for (name, _, _), arr in zip(order, arrays):
            weights.setdefault(name, []).append(arr)
        try:
            net = Network(arch, weights, shape, meta)
        except ArchitectureError as exc:
            raise CheckpointError(v.one_line(f"{path}: {exc}")) from None
        if cache:
            _READ_CACHE[key] = net
    if game_info is not None and net.meta.get("game") != game_info.spec:
        raise CheckpointError(f"{path}: a network of {net.meta.get('game')}, not of {game_info.spec}")
    return net


def _network_of_meta(meta: dict, path: Path) -> tuple[Architecture, tuple]:
    """The architecture and planes shape a checkpoint's metadata describes, checked against its
    game; ``CheckpointError`` naming the entry."""
    net_cfg = meta.get("network") or meta.get("config", {}).get("network")
    if net_cfg is None:
        raise CheckpointError(f"{path}: not a descent network checkpoint (no network sizes in its metadata)")
    try:
        game_shape = tuple(games.load(meta["game"]).planes_shape)
    except GameError as exc:
        raise CheckpointError(v.one_line(f"{path}: meta.game: {exc}")) from None
    shape = tuple(meta.get("planes_shape") or game_shape)
    if shape != game_shape:
        raise CheckpointError(f"{path}: meta.planes_shape {list(shape)} is not the planes shape of "
                              f"{meta['game']} {list(game_shape)}")
    return Architecture.from_meta(net_cfg, CheckpointError, f"{path}: meta.network"), shape


def keras_model(net: Network):
    """The Keras model of a ``Network`` (``read_network``), with its weights (imports TensorFlow)."""
    model = build_model(net.planes_shape, net.architecture)
    for name, arrays in net.weights.items():
        model.get_layer(name).set_weights(arrays)
    return model


def load_network(path, game_info=None):
    """The Keras model of a checkpoint (training, and the ``tf`` backend; imports TensorFlow): the
    network ``read_network`` reads, as ``keras_model`` builds it.

    ``path`` is a milestone ``.weights.h5`` or a rolling ``latest.h5`` state. Cached per process.
    Returns ``(model, meta)``; raises ``CheckpointError`` naming the file.
    """
    path, key = _checkpoint_key(path)
    if key in _NET_CACHE:
        model, meta = _NET_CACHE[key]
    else:
        net = read_network(path)
        model, meta = keras_model(net), net.meta
        _NET_CACHE[key] = (model, meta)
    if game_info is not None and meta.get("game") != game_info.spec:
        raise CheckpointError(f"{path}: a network of {meta.get('game')}, not of {game_info.spec}")
    return model, meta
