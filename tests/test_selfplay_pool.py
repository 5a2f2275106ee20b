"""Self-play throughput (issue 13) and its correctness: the inference backends equal the Keras
model, the many-games pool plays exactly the games of the plain-Python reference Descent
(tests/test_descent_reference.py), a full node table never raises, and the move choice follows the
ordinal distribution / epsilon-greedy frequencies. Iteration budgets only; seconds each."""
import numpy as np
import pytest

import games
from search_ext.selfplay import SelfPlayPool, ordinal_probabilities, sample_ranks


# ---- inference --------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,blocks", [("reversi(size=6)", 2), ("connect6(size=9)", 1)])
def test_inference_backends_equal_keras(spec, blocks):
    from training.inference import (NumpyInference, OnnxInference, TFInference, make_inference,
                                    model_weights)
    from training.network import build_model, make_optimizer, make_train_step
    info = games.load(spec)
    model = build_model(info.planes_shape, filters=16, blocks=blocks, head_units=16, seed=3)
    rng = np.random.default_rng(0)
    backends = [OnnxInference(model), NumpyInference(model), TFInference(model)]
    for n in (1, 5, 33):
        x = rng.integers(0, 2, (n, *info.planes_shape)).astype(np.float32)
        ref = model(x, training=False).numpy().reshape(-1)
        for b in backends:
            np.testing.assert_allclose(b(x), ref, atol=1e-4, err_msg=b.name)
    # a training step changes the weights: the snapshot backends see them after refresh()
    step = make_train_step(model, make_optimizer(model, 0.05))
    x = rng.integers(0, 2, (64, *info.planes_shape)).astype(np.float32)
    step(x, np.ones(64, np.float32))
    ref = model(x, training=False).numpy().reshape(-1)
    stale = backends[0](x)
    assert np.abs(stale - ref).max() > 1e-3, "the step did not change the outputs"
    w = model_weights(model)
    for b in backends[:2]:
        b.refresh(w)
        np.testing.assert_allclose(b(x), ref, atol=1e-4, err_msg=b.name)
    assert make_inference(model, "auto", "cpu").name == "onnx"
    assert make_inference(model, "numpy").name == "numpy"
    with pytest.raises(ValueError, match="unknown inference backend"):
        make_inference(model, "tflite")


# ---- the pool against the reference -----------------------------------------------------------

def fixed_net(shape):
    """A deterministic value function of each state alone (batch composition cannot matter)."""
    w = np.random.default_rng(7).normal(size=int(np.prod(shape))) / 4

    def f(batch):
        b = np.asarray(batch, np.float64).reshape(len(batch), -1)
        return np.tanh(np.array([row @ w for row in b])).astype(np.float32)
    return f


def pool_games(info, f, seeds, e=0.3, epsilon=-1.0, **kw):
    out = []
    queue = [(s, e, epsilon, s) for s in reversed(seeds)]
    pool = SelfPlayPool(info, f, **kw)
    pool.run(lambda: queue.pop() if queue else None, out.append)
    return sorted(out, key=lambda g: g["tag"]), pool


@pytest.mark.parametrize("spec", ["reversi(size=6)", "tapatan"])
def test_pool_plays_the_games_of_the_reference(spec):
    """One game in flight, no compaction before the end: the same moves, root values and
    tree-learning examples (states and values, same depth-first order) as the plain-Python
    reference Descent (passes in reversi, long games in tapatan)."""
    from test_descent_reference import reference_selfplay
    info = games.load(spec)
    f = fixed_net(info.planes_shape)
    for seed in (1, 2):
        old = reference_selfplay(info, f, 12, 0.3, -1.0, seed, max_plies=40)
        (new,), _ = pool_games(info, f, [seed], iterations=12, games_in_flight=1)
        assert new["moves"][:len(old["moves"])] == old["moves"]
        np.testing.assert_array_equal(new["root_values"][:len(old["moves"])], old["root_values"])
        if len(old["moves"]) == new["plies"]:         # the whole game: its examples too
            assert new["result"] == old["result"] and new["short_moves"] == 0
            np.testing.assert_array_equal(new["x"], old["x"])
            np.testing.assert_array_equal(new["y"], old["y"])


def test_games_in_flight_play_the_same_games_as_one_at_a_time():
    info = games.load("reversi(size=6)")
    f = fixed_net(info.planes_shape)
    seeds = [11, 12, 13, 14, 15]
    one, _ = pool_games(info, f, seeds, iterations=8, games_in_flight=1)
    many, pool = pool_games(info, f, seeds, iterations=8, games_in_flight=3)
    assert [g["tag"] for g in many] == seeds
    for a, b in zip(one, many):
        assert a["moves"] == b["moves"] and a["result"] == b["result"]
        np.testing.assert_array_equal(a["x"], b["x"])
        np.testing.assert_array_equal(a["y"], b["y"])
    # their expansions were evaluated together: larger batches than one game alone makes
    _, alone = pool_games(info, f, seeds, iterations=8, games_in_flight=1)
    assert pool.eval_states == alone.eval_states
    assert pool.eval_states / pool.eval_calls > 1.5 * alone.eval_states / alone.eval_calls


def test_the_value_cache_plays_the_same_games_with_fewer_network_states():
    """With the batcher's value cache in front of the network (``cache_states``), the games in
    flight play the same games (the network's values do not depend on the batch here) and the
    network is asked for fewer states: the games' openings share theirs. A ``refresh`` that says
    the values changed empties the cache before every round: the same games again (here the
    games in flight meet their shared states in the same rounds, so the savings stay)."""
    info = games.load("reversi(size=6)")
    f = fixed_net(info.planes_shape)
    seeds = [21, 22, 23, 24]
    plain, p0 = pool_games(info, f, seeds, iterations=8, games_in_flight=4)
    cached, p1 = pool_games(info, f, seeds, iterations=8, games_in_flight=4, cache_states=100_000)
    refreshed, p2 = pool_games(info, f, seeds, iterations=8, games_in_flight=4, cache_states=100_000,
                               refresh=lambda: True)
    for a, b, c in zip(plain, cached, refreshed):
        assert a["moves"] == b["moves"] == c["moves"]
        np.testing.assert_array_equal(a["x"], b["x"])
        np.testing.assert_array_equal(a["y"], b["y"])
        np.testing.assert_array_equal(a["root_values"], b["root_values"])
    assert p0.cached_states == 0 and p0.net_states == p0.eval_states
    assert p1.eval_states == p0.eval_states == p1.net_states + p1.cached_states
    assert p1.net_states < p0.net_states and p2.net_states <= p0.net_states
    assert p1.memory_bytes() > p0.memory_bytes()          # the cache and its buffer are counted
    # what refresh does to the cache: every value forgotten, asked for again
    from search_ext.valuecache import ValueCache
    cache = ValueCache(1000)
    rows = np.arange(12, dtype=np.float32).reshape(3, 4)
    values, ask = np.zeros(3, np.float32), np.zeros((3, 4), np.float32)
    assert cache.lookup(rows, values, ask) == 3
    cache.store(np.array([0.1, 0.2, 0.3], np.float32), values)
    assert cache.lookup(rows, values, ask) == 0 and cache.size == 3
    cache.clear()
    assert cache.size == 0 and cache.lookup(rows, values, ask) == 3


def test_a_full_table_never_raises_and_is_counted():
    """breakthrough(rows=6,cols=6) with a table far too small for the budget: the game ends
    normally, the short-searched moves are counted, examples are valid."""
    info = games.load("breakthrough(rows=6,cols=6)")
    f = fixed_net(info.planes_shape)
    (g,), _ = pool_games(info, f, [3], iterations=300, games_in_flight=1, max_nodes=300)
    assert g["plies"] == len(g["moves"]) > 0
    assert g["result"] in (-1, 0, 1)
    assert g["short_moves"] > 0
    assert g["peak_nodes"] <= 300
    assert len(g["y"]) > 0 and np.all(np.abs(g["y"]) <= 1) and np.all(np.isfinite(g["x"]))
    with pytest.raises(ValueError, match="max_nodes must be >="):
        SelfPlayPool(info, f, max_nodes=100)


def test_compaction_bounds_the_table():
    """Compacting after every move keeps only the live subtree: a smaller peak, every expanded
    state still emitted once as an example."""
    info = games.load("reversi(size=6)")
    f = fixed_net(info.planes_shape)
    (full,), _ = pool_games(info, f, [5], iterations=20, games_in_flight=1)
    (small,), _ = pool_games(info, f, [5], iterations=20, games_in_flight=1, compact_at=0)
    assert small["compactions"] == small["plies"] and full["compactions"] == 1
    assert small["peak_nodes"] < full["peak_nodes"]
    assert len(small["y"]) >= small["plies"]
    assert np.all(np.abs(small["y"]) <= 1)


# ---- move choice ------------------------------------------------------------------------------

@pytest.mark.parametrize("n,e", [(5, 0.0), (5, 0.3), (7, 0.8), (3, 1.0)])
def test_ordinal_distribution_frequencies(n, e):
    p = np.array(ordinal_probabilities(n, e))
    assert p.sum() == pytest.approx(1.0)
    assert np.all(np.diff(p) <= 1e-12), "better ranks are never less likely"
    if e == 0.0:
        np.testing.assert_allclose(p, 1.0 / n)
    if e == 1.0:
        np.testing.assert_allclose(p, [1.0] + [0.0] * (n - 1))
    draws = 100_000
    counts = sample_ranks(n, e, -1.0, 42, draws)
    sd = np.sqrt(draws * p * (1 - p))
    assert np.all(np.abs(counts - draws * p) <= 5 * sd + 1), (counts, draws * p)


@pytest.mark.parametrize("n,eps", [(4, 0.2), (10, 0.5), (3, 0.0)])
def test_epsilon_greedy_frequencies(n, eps):
    draws = 100_000
    counts = sample_ranks(n, 0.0, eps, 9, draws)
    p = np.full(n, eps / n)
    p[0] += 1 - eps
    sd = np.sqrt(draws * p * (1 - p))
    assert np.all(np.abs(counts - draws * p) <= 5 * sd + 1), (counts, draws * p)


def test_best_move_with_e_one():
    """e = 1 (and epsilon = 0): always the best root action by (completion, value) - a win in one
    at tic-tac-toe, from every seed."""
    info = games.load("tic_tac_toe")
    f = fixed_net(info.planes_shape)
    for epsilon in (-1.0, 0.0):
        gs, _ = pool_games(info, f, list(range(6)), e=1.0, epsilon=epsilon, iterations=200,
                           games_in_flight=2)
        for g in gs:
            s = info.new_state()
            for a in g["moves"]:
                wins = []
                for b in s.legal_actions_list():
                    c = s.copy()
                    c.push(b)
                    if c.result() in ("1-0", "0-1"):
                        wins.append(b)
                if wins:
                    assert a in wins
                s.push(a)


def test_stop_abandons_the_games_in_flight_and_the_pool_plays_on():
    """``stop()`` is checked once per round: the games in flight are dropped at once (no
    ``on_game`` for them, counted in ``abandoned``), and the same pool then plays new games exactly
    as a fresh pool does."""
    info = games.load("reversi(size=6)")
    f = fixed_net(info.planes_shape)
    queue = [(s, 0.3, -1.0, s) for s in (6, 5, 4, 3, 2, 1)]
    pool = SelfPlayPool(info, f, iterations=8, games_in_flight=3)
    rounds = {"n": 0}

    def stop():
        rounds["n"] += 1
        return rounds["n"] > 40          # a few plies into the first games

    out = []
    dropped = pool.run(lambda: queue.pop() if queue else None, out.append, stop=stop)
    assert dropped == 3 and pool.abandoned == 3 and out == []
    assert len(queue) == 3               # no game was started after the stop
    again = []
    assert pool.run(lambda: queue.pop() if queue else None, again.append) == 0
    fresh, _ = pool_games(info, f, [4, 5, 6], iterations=8, games_in_flight=3)
    again.sort(key=lambda g: g["tag"])
    assert [g["moves"] for g in again] == [g["moves"] for g in fresh]
    for a, b in zip(again, fresh):
        np.testing.assert_array_equal(a["y"], b["y"])


def test_device_choice():
    """device = "gpu" without a GPU is one clear error; "cpu" and "auto" run on the CPU here."""
    from training.inference import DeviceError, gpu_available, use_device
    if gpu_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(DeviceError, match="TensorFlow sees no GPU"):
        use_device("gpu")
    assert use_device("auto") == "cpu" and use_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="unknown device"):
        use_device("tpu")
