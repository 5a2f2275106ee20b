"""The network's architecture is described once (training.architecture) and every backend is built
from that description: for architectures other than the default (other kernel sizes, even ones
included, other depth, width, head and activation) the ONNX Runtime graph, the NumPy forward pass
and the tf.function equal the Keras model on several games' planes; a checkpoint of such a network
loads back as the same network, and a checkpoint written before the architecture had more than
three fields still loads as the network it was. Seconds each."""
import json
from pathlib import Path

import numpy as np
import pytest

import games
from training.architecture import Architecture, ArchitectureError

DATA = Path(__file__).parent / "data"

ARCHS = {
    "default": Architecture(8, 1, 8),
    "5x5 deep, 3x3 head": Architecture(6, 3, 12, kernel=5, head_kernel=3, head_filters=3),
    "1x1 trunk, 2x2 head, tanh": Architecture(5, 0, 7, kernel=1, head_kernel=2, activation="tanh"),
    "4x4 trunk, wide head": Architecture(4, 2, 5, kernel=4, head_filters=6),
}
SPECS = ["tic_tac_toe", "breakthrough(rows=6,cols=5)", "connect6(size=9)"]


def backends(model):
    from training.inference import NumpyInference, OnnxInference, TFInference
    return [OnnxInference(model), NumpyInference(model), TFInference(model)]


@pytest.mark.parametrize("arch_name", list(ARCHS))
@pytest.mark.parametrize("spec", SPECS)
def test_every_backend_equals_keras(spec, arch_name):
    from training.inference import model_weights
    from training.network import build_model
    arch, shape = ARCHS[arch_name], games.load(spec).planes_shape
    model = build_model(shape, arch, seed=4)
    assert model.architecture == arch
    # the Keras model has exactly the layers and shapes of the description (no size assumed)
    assert {k: [tuple(a.shape) for a in w] for k, w in model_weights(model).items()} == \
        arch.weight_shapes(shape)
    assert model.get_layer("stem").kernel.shape[:2] == (arch.kernel, arch.kernel)
    assert model.get_layer("head_conv").kernel.shape[:2] == (arch.head_kernel, arch.head_kernel)
    rng = np.random.default_rng(1)
    inf = backends(model)
    for n in (1, 5, 17):
        x = rng.integers(0, 2, (n, *shape)).astype(np.float32)
        ref = model(x, training=False).numpy().reshape(-1)
        assert ref.std() > 0 or n == 1
        for b in inf:
            np.testing.assert_allclose(b(x), ref, atol=1e-4, err_msg=f"{b.name} {arch}")
    # new weights: the snapshot backends see them after refresh(), and only then
    model.set_weights([w + rng.normal(0, 0.2, w.shape).astype(np.float32) for w in model.get_weights()])
    x = rng.integers(0, 2, (9, *shape)).astype(np.float32)
    ref = model(x, training=False).numpy().reshape(-1)
    assert np.abs(inf[0](x) - ref).max() > 1e-3, "the new weights did not change the outputs"
    w = model_weights(model)
    for b in inf:
        b.refresh(w)
        np.testing.assert_allclose(b(x), ref, atol=1e-4, err_msg=f"{b.name} {arch} after refresh")


def test_default_architecture_is_the_networks_of_before():
    """The defaults are the network every checkpoint had before the fields existed."""
    arch = Architecture()
    assert (arch.filters, arch.blocks, arch.head_units, arch.kernel, arch.head_kernel,
            arch.head_filters, arch.activation) == (32, 2, 64, 3, 1, 2, "relu")
    assert Architecture.from_meta({"filters": 32, "blocks": 2, "head_units": 64}) == arch
    assert Architecture.from_meta(arch.to_meta()) == arch


def test_snapshot_backends_refuse_weights_of_another_architecture():
    from training.inference import NumpyInference, OnnxInference, model_weights
    from training.network import build_model
    shape = games.load("tic_tac_toe").planes_shape
    five = model_weights(build_model(shape, Architecture(4, 1, 8, kernel=5)))
    for backend in (NumpyInference, OnnxInference):
        b = backend(build_model(shape, Architecture(4, 1, 8)))
        with pytest.raises(ArchitectureError, match=r"layer stem: weight shapes \[\(5, 5, 2, 4\)"):
            b.refresh(five)


@pytest.mark.parametrize("fields,message", [
    ({"kernel": 0}, r"network architecture\.kernel: 0 is out of range"),
    ({"activation": "gelu"}, r"network architecture\.activation: 'gelu' is not one of relu, tanh"),
    ({"head_kernel": 2.0}, r"network architecture\.head_kernel: must be an integer"),
])
def test_bad_architecture_is_one_clear_error(fields, message):
    with pytest.raises(ArchitectureError, match=message):
        Architecture(4, 1, 8, **fields)


def _save(path, model, arch, spec):
    from training.network import save_weights
    meta = {"game": spec, "milestone": "final", "network": arch.to_meta(),
            "planes_shape": list(games.load(spec).planes_shape)}
    save_weights(path, model, meta)


@pytest.mark.parametrize("state", [False, True], ids=["milestone", "state"])
def test_checkpoint_of_another_architecture_round_trips(tmp_path, state):
    from training.inference import make_inference
    from training.network import build_model, load_network, make_optimizer, save_state
    spec = "breakthrough(rows=6,cols=5)"
    shape = games.load(spec).planes_shape
    arch = Architecture(6, 3, 12, kernel=5, head_kernel=3, head_filters=3, activation="tanh")
    model = build_model(shape, arch, seed=9)
    if state:           # a rolling state: the architecture comes from the config in its meta
        path = tmp_path / "latest.h5"
        counters = {"games": 1, "examples": 2, "train_seconds": 0.5, "updates": 1,
                    "milestones_done": []}
        save_state(path, model, make_optimizer(model, 0.01),
                   {"game": spec, "counters": counters, "config": {"network": arch.to_meta()}})
    else:
        path = tmp_path / "milestone_final.weights.h5"
        _save(path, model, arch, spec)
        assert json.loads(path.with_name("milestone_final.json").read_text())["network"] == \
            arch.to_meta()
    loaded, _ = load_network(path)
    assert loaded.architecture == arch
    x = np.random.default_rng(2).integers(0, 2, (6, *shape)).astype(np.float32)
    ref = model(x, training=False).numpy().reshape(-1)
    np.testing.assert_allclose(loaded(x, training=False).numpy().reshape(-1), ref, atol=1e-6)
    np.testing.assert_allclose(make_inference(loaded)(x), ref, atol=1e-4)


def test_checkpoint_whose_weights_do_not_fit_its_architecture_is_refused(tmp_path):
    from training.network import CheckpointError, build_model, load_network
    spec = "tic_tac_toe"
    path = tmp_path / "milestone_final.weights.h5"
    model = build_model(games.load(spec).planes_shape, Architecture(4, 1, 8))     # 3x3 kernels
    _save(path, model, Architecture(4, 1, 8, kernel=5), spec)                      # says 5x5
    with pytest.raises(CheckpointError, match="different network size"):
        load_network(path)


def test_checkpoint_with_a_bad_architecture_field_is_refused(tmp_path):
    from training.network import CheckpointError, build_model, load_network, save_weights
    spec = "tic_tac_toe"
    path = tmp_path / "milestone_final.weights.h5"
    save_weights(path, build_model(games.load(spec).planes_shape, Architecture(4, 1, 8)),
                 {"game": spec, "network": {"filters": 4, "blocks": 1, "head_units": 8,
                                            "kernel": -3}})
    with pytest.raises(CheckpointError, match=r"meta\.network\.kernel: -3 is out of range"):
        load_network(path)


def test_checkpoint_written_before_the_architecture_fields_loads_as_it_was():
    """tests/data/old_network.weights.h5 was written by training/network.py as of commit 5ba09fd
    (metadata network = filters, blocks, head_units only; 3x3 kernels, 1x1 head, fixed in the
    code): it loads as that network and gives the outputs it gave then."""
    from training.inference import make_inference
    from training.network import load_network
    model, meta = load_network(DATA / "old_network.weights.h5")
    assert set(meta["network"]) == {"filters", "blocks", "head_units"}
    assert model.architecture == Architecture(4, 1, 8, kernel=3, head_kernel=1, head_filters=2)
    x = np.random.default_rng(0).integers(0, 2, (4, *games.load(meta["game"]).planes_shape))
    x = x.astype(np.float32)
    then = [-0.9268239736557007, -0.974440336227417, -0.7756562232971191, -0.9335850477218628]
    np.testing.assert_allclose(model(x, training=False).numpy().reshape(-1), then, atol=1e-6)
    for backend in ("onnx", "numpy", "tf"):
        np.testing.assert_allclose(make_inference(model, backend)(x), then, atol=1e-4)


@pytest.mark.parametrize("backend", ["onnx", "numpy"])
def test_member_trains_and_checkpoints_another_architecture(tmp_path, backend):
    """The trainer builds the network its config's [network] describes, self-play runs it through
    the inference backend, and the milestone checkpoint stores every architecture field, so it
    loads back as the same network (two games of tic-tac-toe)."""
    from descent.config import load_config
    from training.network import load_network, read_meta
    from training.run import training_config
    from training.trainer import MemberJob, train_member
    cfg = training_config(load_config(Path(__file__).parents[1] / "configs" / "tic_tac_toe.toml"))
    arch = Architecture(4, 1, 6, kernel=2, head_kernel=3, head_filters=1, activation="tanh")
    cfg["network"] = {**cfg["network"], **arch.to_meta()}
    job = MemberJob(str(tmp_path), 0, "tic_tac_toe", cfg, 1e9, [("first", 1e-9)], seed=0,
                    max_games=2, extra={"games_in_flight": 2, "inference": backend})
    assert train_member(job)["games"] == 2
    milestone = tmp_path / "member_00" / "milestone_first.weights.h5"
    assert json.loads(milestone.with_name("milestone_first.json").read_text())["network"] == \
        arch.to_meta()
    for path in (milestone, tmp_path / "member_00" / "latest.h5"):
        assert load_network(path)[0].architecture == arch
    assert read_meta(tmp_path / "member_00" / "latest.h5")["counters"]["updates"] > 0
