"""Playing and evaluating with a network never import TensorFlow: a checkpoint is read with h5py
(``training.network.read_network``) and run by ONNX Runtime or NumPy, and the values equal the
Keras model's that training builds from the same file.

Every path runs in a fresh interpreter (a subprocess), with two checks: after the command,
``tensorflow``/``keras`` are not in ``sys.modules`` (commands are run in-process there with
``click.testing.CliRunner``), and a tripwire package named ``tensorflow`` (and ``keras``) placed
first on ``PYTHONPATH`` records any attempt to import them, from the command's process or from
any worker process it spawns. ``test_the_tripwire_catches_the_keras_path`` shows the tripwire fires.
Iteration and game budgets only; a few seconds each.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import games

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "checkpoints" / "shipped"
REVERSI = SHIPPED / "reversi_size-6" / "final.weights.h5"
NETWORKS = {"reversi(size=6)": "reversi_size-6", "breakthrough(rows=6,cols=6)": "breakthrough_rows-6_cols-6",
            "havannah(base=4)": "havannah_base-4"}

# Runs a CLI command in this fresh interpreter and reports its exit, output and the TensorFlow modules.
CLI_PROBE = r"""
import json, sys
from click.testing import CliRunner
from descent.cli import cli
r = CliRunner().invoke(cli, json.loads(sys.argv[1]), input=sys.argv[2])
print("PROBE " + json.dumps({"exit": r.exit_code, "output": r.output[-4000:],
      "exception": None if r.exit_code == 0 else repr(r.exception),
      "tf_modules": sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras"))}))
"""

TRIPWIRE = """import os, traceback
with open(os.environ["DESCENT_TF_TRIPWIRE"], "a") as f:
    f.write(f"pid {os.getpid()} imported {__name__}:\\n" + "".join(traceback.format_stack()) + "\\n")
raise ImportError("tensorflow is not to be imported here (tests/test_no_tensorflow.py)")
"""


@pytest.fixture(scope="module")
def tripwire(tmp_path_factory):
    """(environment, marker file): ``tensorflow`` and ``keras`` packages first on PYTHONPATH that
    append the importing process's stack to the marker and raise ImportError."""
    d = tmp_path_factory.mktemp("tripwire")
    for name in ("tensorflow", "keras"):
        (d / name).mkdir()
        (d / name / "__init__.py").write_text(TRIPWIRE)
    marker = d / "imports.txt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(d), *sys.path]),
               DESCENT_TF_TRIPWIRE=str(marker), TF_CPP_MIN_LOG_LEVEL="3")
    return env, marker


def _run(tripwire, code, *args, cwd=None, timeout=300):
    env, marker = tripwire
    if marker.exists():
        marker.unlink()
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=timeout)
    attempts = marker.read_text() if marker.exists() else ""
    assert not attempts, f"TensorFlow was imported:\n{attempts}"
    return p


def _cli(tripwire, args, stdin="", cwd=None) -> dict:
    p = _run(tripwire, CLI_PROBE, json.dumps([str(a) for a in args]), stdin, cwd=cwd)
    assert p.returncode == 0, p.stderr
    line = [x for x in p.stdout.splitlines() if x.startswith("PROBE ")][-1]
    out = json.loads(line[len("PROBE "):])
    assert out["exit"] == 0, (out["output"], out["exception"])
    assert out["tf_modules"] == [], out["tf_modules"]
    return out


def test_the_tripwire_catches_the_keras_path(tripwire):
    """The old loading path (a Keras model) trips the check, so the checks below can fail."""
    env, marker = tripwire
    code = ("from training.network import load_network\n"
            "try:\n    load_network(%r)\nexcept ImportError as e:\n    print('refused:', e)\n" % str(REVERSI))
    if marker.exists():
        marker.unlink()
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "refused: tensorflow is not to be imported here" in p.stdout, p.stdout + p.stderr
    assert "imported tensorflow" in marker.read_text()


def test_make_agent_without_tensorflow(tripwire):
    code = r"""
import sys, json
import descent, games
out = {}
for spec, slug in json.loads(sys.argv[1]).items():
    info = games.load(spec)
    agent = descent.make_agent(f"minimax:iterations=10,seed=1,net={sys.argv[2]}/{slug}/final.weights.h5", info)
    state = info.new_state()
    out[spec] = state.move_to_str(agent.choose(state))
    assert agent.analyse(state)
print("MOVES", json.dumps(out))
print("TF", sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras")))
"""
    p = _run(tripwire, code, json.dumps(NETWORKS), str(SHIPPED))
    assert p.returncode == 0, p.stderr
    assert "TF []" in p.stdout, p.stdout
    moves = json.loads([x for x in p.stdout.splitlines() if x.startswith("MOVES ")][0][6:])
    for spec, move in moves.items():
        state = games.new_state(spec)
        assert state.is_legal(move), (spec, move)


def test_play_without_tensorflow(tripwire):
    out = _cli(tripwire, ["play", "reversi(size=6)", "--seat", "second", "--iterations", "5", "--plain"],
               "resign\n")
    assert "The computer uses the network" in out["output"] and "final.weights.h5" in out["output"]
    assert "The computer (x) plays" in out["output"]
    assert "x wins by resignation" in out["output"]


@pytest.mark.parametrize("workers", [1, 2])
def test_match_with_a_shipped_network_without_tensorflow(tripwire, workers):
    out = _cli(tripwire, ["match", "reversi(size=6)", "--first", f"minimax:iterations=10,net={REVERSI}",
                          "--second", "mcts:iterations=10", "--games", "2", "--workers", workers])
    assert "2 games, seats alternating" in out["output"]


def _tiny_run(run: Path) -> None:
    """A run directory of four members whose early and final milestones are copies of the shipped
    tic-tac-toe networks (a member's final is the shipped early network for odd members)."""
    src = SHIPPED / "tic_tac_toe"
    arch = json.loads((src / "card.json").read_text())["architecture"]
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"game": "tic_tac_toe", "config": {"network": arch}, "seed": 0,
                                              "format": "descent-run-1",
                                              "milestones": [["early", 1.0], ["final", 2.0]]}))
    for m in range(4):
        d = run / f"member_{m:02d}"
        d.mkdir()
        roles = ("early", "final") if m % 2 == 0 else ("final", "early")
        for name, role, secs in (("early", roles[0], 1.0), ("final", roles[1], 2.0)):
            shutil.copy(src / f"{role}.weights.h5", d / f"milestone_{name}.weights.h5")
            (d / f"milestone_{name}.json").write_text(json.dumps(
                {"game": "tic_tac_toe", "member": m, "milestone": name, "milestone_seconds": secs,
                 "network": arch, "planes_shape": [3, 3, 2], "games": 200, "examples": 1000}))


@pytest.fixture(scope="module")
def ranked_run(tripwire, tmp_path_factory):
    run = tmp_path_factory.mktemp("tiny") / "run"
    _tiny_run(run)
    out = _cli(tripwire, ["rank", "tic_tac_toe", "--run", run, "--agent", "minimax:iterations=10,decision=safe",
                          "--games-per-pair", "2", "--opening-plies", "1"])
    return run, out


def test_rank_without_tensorflow(ranked_run):
    run, out = ranked_run
    assert "pools written to" in out["output"]
    pools = json.loads((run / "pools.json").read_text())
    assert len(pools["high"]) == 2 and len(pools["low"]) == 2


def test_evaluate_without_tensorflow(tripwire, ranked_run):
    run, _ = ranked_run
    out = _cli(tripwire, ["evaluate", "tic_tac_toe", "--run", run, "--iterations", "3",
                          "--algorithms", "minimax,minibal_plus", "--opponent-time", "iterations=5",
                          "--games-per-pair", "2", "--opening-plies", "1"])
    assert "16 match(es) played" in out["output"]


def test_calibrate_without_tensorflow(tripwire, ranked_run):
    run, _ = ranked_run
    out = _cli(tripwire, ["calibrate", "tic_tac_toe", "--run", run, "--opponent-budget", "iterations=5",
                          "--range", "1:20", "--max-games", "4", "--near-games", "2", "--opening-plies", "1"])
    assert "minibal_plus against pool reaches" in out["output"]
    assert list((run / "calibrations").glob("*.json"))


# ---- the values: the file read without TensorFlow is the network training builds ----------------

def _positions(spec, n, seed):
    """Planes of ``n`` positions reached by uniformly random moves (0 to 30 plies)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        state = games.new_state(spec)
        for _ in range(int(rng.integers(0, 31))):
            if state.outcome() is not None:
                break
            moves = list(state.legal_moves)
            state.push(int(moves[rng.integers(len(moves))]))
        out.append(state.encode_planes())
    return np.stack(out).astype(np.float32)


@pytest.mark.parametrize("spec", list(NETWORKS))
def test_read_network_equals_the_keras_model(spec):
    from training.inference import NumpyInference, OnnxInference, make_inference, model_weights
    from training.network import keras_model, load_network, read_network
    path = SHIPPED / NETWORKS[spec] / "final.weights.h5"
    net = read_network(path, games.load(spec))
    model, meta = load_network(path)
    assert net.architecture == model.architecture and net.meta == meta
    assert net.planes_shape == tuple(games.load(spec).planes_shape)
    keras_w = model_weights(model)
    assert list(net.weights) == list(keras_w)
    for name, arrays in net.weights.items():
        for a, b in zip(arrays, keras_w[name]):
            np.testing.assert_array_equal(a, b)
    x = _positions(spec, 48, seed=len(spec))
    ref = model(x, training=False).numpy().reshape(-1)
    assert ref.std() > 1e-3, "positions too alike to tell networks apart"
    for inf in (OnnxInference(net), NumpyInference(net), make_inference(net)):
        np.testing.assert_allclose(inf(x), ref, atol=1e-5, err_msg=inf.name)
    assert make_inference(net).name == "onnx"
    np.testing.assert_allclose(make_inference(keras_model(net), "tf")(x), ref, atol=1e-5)
    with pytest.raises(ValueError, match="the tf backend runs a Keras model"):
        make_inference(net, "tf")


def test_read_network_of_a_rolling_state_and_another_architecture(tmp_path):
    """A ``latest.h5`` (weights and optimizer state; the architecture in its config) reads as the
    network the trainer saved; a backend built from it refreshes only from given weights."""
    from training.architecture import Architecture
    from training.inference import NumpyInference, OnnxInference, model_weights
    from training.network import build_model, make_optimizer, read_network, save_state
    spec = "breakthrough(rows=6,cols=5)"
    shape = games.load(spec).planes_shape
    arch = Architecture(6, 3, 12, kernel=5, head_kernel=3, head_filters=3, activation="tanh")
    model = build_model(shape, arch, seed=9)
    counters = {"games": 1, "examples": 2, "train_seconds": 0.5, "updates": 1, "milestones_done": []}
    save_state(tmp_path / "latest.h5", model, make_optimizer(model, 0.01),
               {"game": spec, "counters": counters, "config": {"network": arch.to_meta()}})
    net = read_network(tmp_path / "latest.h5")
    assert net.architecture == arch
    x = _positions(spec, 20, seed=3)
    ref = model(x, training=False).numpy().reshape(-1)
    for cls in (OnnxInference, NumpyInference):
        inf = cls(net)
        np.testing.assert_allclose(inf(x), ref, atol=1e-5)
        with pytest.raises(ValueError, match="refresh\\(\\) needs the weights"):
            inf.refresh()
        other = build_model(shape, arch, seed=10)
        inf.refresh(model_weights(other))
        np.testing.assert_allclose(inf(x), other(x, training=False).numpy().reshape(-1), atol=1e-5)


def _edited_copy(tmp_path, name, edit) -> Path:
    import h5py
    p = tmp_path / f"{name}.weights.h5"          # no model card beside it
    shutil.copy(REVERSI, p)
    with h5py.File(p, "r+") as f:
        meta = json.loads(f.attrs["meta"])
        edit(meta)
        f.attrs["meta"] = json.dumps(meta)
    return p


def test_weights_that_do_not_fit_their_architecture_are_one_clear_error(tmp_path, tripwire):
    from descent import make_agent
    from training.network import CheckpointError, read_network
    p = _edited_copy(tmp_path, "kernel5", lambda m: m["network"].update(kernel=5))
    message = r"weights array 0000 has shape \(3, 3, 2, 32\), expected \(5, 5, 2, 32\) \(different network size\?\)"
    with pytest.raises(CheckpointError, match=message):
        read_network(p)
    with pytest.raises(CheckpointError, match=message):
        make_agent(f"minimax:iterations=5,net={p}", "reversi(size=6)")
    q = _edited_copy(tmp_path, "blocks3", lambda m: m["network"].update(blocks=3))
    with pytest.raises(CheckpointError, match=r"weights holds 16 arrays, the model needs 20 \(different network size\?\)"):
        read_network(q)
    with pytest.raises(CheckpointError, match=r"a network of reversi\(size=6\), not of breakthrough"):
        make_agent(f"minimax:iterations=5,net={REVERSI}", "breakthrough(rows=6,cols=6)")
    # at the command line: one line, exit 2, no traceback, and still no TensorFlow
    env, _ = tripwire
    r = subprocess.run([sys.executable, "-m", "descent", "match", "reversi(size=6)", "--first",
                        f"minimax:iterations=5,net={p}", "--second", "random", "--games", "1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: ") and "(different network size?)" in last, r.stderr


def test_read_network_of_a_checkpoint_from_before_the_architecture_fields():
    """tests/data/old_network.weights.h5 (metadata with filters, blocks and head_units only) reads
    as the network it was and gives the outputs it gave then (tests/test_architecture.py)."""
    from training.architecture import Architecture
    from training.inference import make_inference
    from training.network import read_network
    net = read_network(ROOT / "tests" / "data" / "old_network.weights.h5")
    assert net.architecture == Architecture(4, 1, 8, kernel=3, head_kernel=1, head_filters=2)
    x = np.random.default_rng(0).integers(0, 2, (4, *games.load(net.meta["game"]).planes_shape))
    then = [-0.9268239736557007, -0.974440336227417, -0.7756562232971191, -0.9335850477218628]
    for backend in ("onnx", "numpy"):
        np.testing.assert_allclose(make_inference(net, backend)(x.astype(np.float32)), then, atol=1e-5)
