"""The value network's architecture, described once.

``Architecture`` holds its parameters; ``Architecture.layers()`` turns them into one ordered list of
layer specs (``Conv``, ``Residual``, ``Flatten``, ``Dense``). Every backend is built by walking that
list, never by naming layers of its own:

* ``training.network.build_model``: the Keras model (training, and the ``tf`` backend);
* ``training.inference.onnx_graph``: the ONNX graph run by ONNX Runtime (the ``onnx`` backend);
* ``training.inference.NumpyInference``: the NumPy forward pass (the ``numpy`` backend).

The ONNX and NumPy backends take the weights as a dict (layer name -> [kernel, bias], see
``training.inference.model_weights``) and check them against ``weight_shapes`` before use.

The network: a ``kernel`` x ``kernel`` convolution stem, ``blocks`` residual blocks of two such
convolutions, then the value head: a ``head_kernel`` x ``head_kernel`` convolution to
``head_filters`` planes, a dense layer of ``head_units`` and one tanh unit. Convolutions pad as
Keras' ``"same"`` (for an even kernel, the extra row and column go after). The parameters are
stored in a checkpoint's metadata (``to_meta``); ``from_meta`` reads them back, giving the fields
an old checkpoint lacks the values every network had before they existed (the class defaults).

This module imports neither TensorFlow nor ONNX.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from games import validate as v

ACTIVATIONS = ("relu", "tanh")


class ArchitectureError(ValueError):
    """An architecture parameter out of range, or weights whose shapes do not fit the
    architecture."""


# The fields' checks: the checkpoint metadata schema (``training.network``) is this record.
# filters, blocks and head_units are in every checkpoint; the others came later (optional).
META = v.Record({"filters": v.Int(1, 4096), "blocks": v.Int(0, 256), "head_units": v.Int(1, 65536)},
                {"kernel": v.Int(1, 31), "head_kernel": v.Int(1, 31), "head_filters": v.Int(1, 4096),
                 "activation": v.Str(16, choices=ACTIVATIONS)})


# What each field means, for the config's ``[network]`` keys and docs/options.md (which are derived
# from ``Architecture``'s fields, their defaults, ``META``'s ranges and this text).
HELP = {
    "filters": "convolution filters of the stem and the residual blocks",
    "blocks": "residual blocks (two kernel x kernel convolutions each)",
    "head_units": "units of the dense layer of the value head",
    "kernel": "kernel size of the stem's and the blocks' convolutions",
    "head_kernel": "kernel size of the value head's convolution",
    "head_filters": "planes out of the value head's convolution",
    "activation": "hidden activation (the output is always tanh)",
}


def field_checks() -> dict:
    """Field name -> its check in ``META`` (required and optional alike)."""
    return {**META.required, **META.optional}


@dataclass(frozen=True)
class Conv:
    """A stride-1 convolution with "same" padding; ``activation`` None is linear."""
    name: str
    filters: int
    kernel: int
    activation: str | None
    init: str = "he_normal"


@dataclass(frozen=True)
class Residual:
    """``activation(x + body(x))``, the body a chain of convolutions (the last one linear)."""
    name: str
    body: tuple
    activation: str


@dataclass(frozen=True)
class Flatten:
    """(n, h, w, c) -> (n, h * w * c), in NHWC order (as Keras)."""
    name: str


@dataclass(frozen=True)
class Dense:
    name: str
    units: int
    activation: str | None
    init: str = "he_normal"


@dataclass(frozen=True)
class Architecture:
    """The parameters of the value network (see the module docstring)."""
    filters: int = 32           # convolution filters of the stem and the residual blocks
    blocks: int = 2             # residual blocks (two convolutions each)
    head_units: int = 64        # units of the value head's dense layer
    kernel: int = 3             # kernel size of the stem's and the blocks' convolutions
    head_kernel: int = 1        # kernel size of the value head's convolution
    head_filters: int = 2       # planes out of the value head's convolution
    activation: str = "relu"    # hidden activation (the output is always tanh)

    def __post_init__(self):
        checked = META(asdict(self), "network architecture", ArchitectureError)
        for name, value in checked.items():        # numpy integers become ints (JSON metadata)
            object.__setattr__(self, name, value)

    def layers(self) -> tuple:
        """The network as one ordered list of layer specs; layer names are those of the Keras
        model (and so of the weights)."""
        act = self.activation
        out = [Conv("stem", self.filters, self.kernel, act)]
        for i in range(self.blocks):
            out.append(Residual(f"block{i}", (Conv(f"block{i}_a", self.filters, self.kernel, act),
                                              Conv(f"block{i}_b", self.filters, self.kernel, None)),
                                act))
        out += [Conv("head_conv", self.head_filters, self.head_kernel, act), Flatten("head_flat"),
                Dense("head_dense", self.head_units, act), Dense("value", 1, "tanh", "glorot_uniform")]
        return tuple(out)

    def weight_shapes(self, planes_shape) -> dict:
        """Layer name -> [kernel shape, bias shape] for input planes (h, w, c)."""
        h, w, c = (int(d) for d in planes_shape)
        out = {}

        def conv(spec, cin):
            out[spec.name] = [(spec.kernel, spec.kernel, cin, spec.filters), (spec.filters,)]
            return spec.filters
        width = c
        for spec in self.layers():
            if isinstance(spec, Conv):
                width = conv(spec, width)
            elif isinstance(spec, Residual):
                for inner in spec.body:
                    width = conv(inner, width)
            elif isinstance(spec, Flatten):
                width = h * w * width
            else:
                out[spec.name] = [(width, spec.units), (spec.units,)]
                width = spec.units
        return out

    def check_weights(self, weights: dict, planes_shape) -> None:
        """``ArchitectureError`` unless ``weights`` (layer name -> [kernel, bias]) holds exactly
        the layers of this architecture with their shapes."""
        want = self.weight_shapes(planes_shape)
        if set(weights) != set(want):
            raise ArchitectureError(f"the weights' layers {sorted(weights)} are not those of {self} "
                                    f"{sorted(want)}")
        for name, shapes in want.items():
            got = [tuple(getattr(a, "shape", ())) for a in weights[name]]
            if got != shapes:
                raise ArchitectureError(f"layer {name}: weight shapes {got}, {self} needs {shapes}")

    def to_meta(self) -> dict:
        """Every field, for a checkpoint's metadata (``from_meta`` reads it back)."""
        return asdict(self)

    @classmethod
    def from_meta(cls, meta: dict, error=ArchitectureError, where: str = "network") -> Architecture:
        """The architecture a checkpoint's (or a config's) network record describes, checked
        (``error`` names the entry); missing optional fields take the defaults, which are what
        every network was built with before they were stored. Other keys are ignored."""
        rec = META(meta, where, error)
        return cls(**{f.name: rec[f.name] for f in fields(cls) if f.name in rec})


def padding(kernel: int) -> tuple[int, int]:
    """(before, after) zero padding of a stride-1 "same" convolution, as Keras and TensorFlow pad
    (the extra one after when the kernel is even)."""
    return (kernel - 1) // 2, kernel - 1 - (kernel - 1) // 2
