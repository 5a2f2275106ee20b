"""A value network that gives one value to every position (its units died) is noticed: the trainer
logs its output spread after every pass and says so in one note after COLLAPSED_PASSES passes."""
import types

import numpy as np
import pytest

from training.trainer import MemberTrainer


def _trainer(model):
    t = MemberTrainer.__new__(MemberTrainer)
    t.job = types.SimpleNamespace(member=3)
    t.model = model
    t.net_spread = t.target_spread = None
    t.collapsed_passes = 0
    return t


@pytest.fixture(scope="module")
def models():
    import games
    from training.network import build_model
    info = games.load("tic_tac_toe")
    live = build_model(info.planes_shape, 4, 1, 8, seed=0)
    dead = build_model(info.planes_shape, 4, 1, 8, seed=0)
    out = dead.layers[-1]
    out.set_weights([np.zeros_like(w) for w in out.get_weights()[:-1]] + [np.full_like(out.get_weights()[-1], 0.3)])
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, size=(64, *info.planes_shape)).astype(np.float32)
    y = rng.uniform(-1, 1, 64).astype(np.float32)
    return live, dead, x, y


def test_a_dead_network_is_named_once_after_three_passes(models, capsys):
    _, dead, x, y = models
    t = _trainer(dead)
    for k in range(1, MemberTrainer.COLLAPSED_PASSES + 3):
        t._check_spread(x, y)
        assert t.net_spread == pytest.approx(0.0, abs=1e-7) and t.target_spread == pytest.approx(float(np.std(y)))
        err = capsys.readouterr().err
        if k == MemberTrainer.COLLAPSED_PASSES:
            assert err.count("note:") == 1 and "member 3" in err and "+0.2913" in err \
                and "learning_rate" in err
        else:
            assert "note:" not in err
    assert t.collapsed_passes == MemberTrainer.COLLAPSED_PASSES + 2


def test_a_live_network_or_constant_targets_say_nothing(models, capsys):
    live, dead, x, y = models
    t = _trainer(live)
    for _ in range(MemberTrainer.COLLAPSED_PASSES + 1):
        t._check_spread(x, y)
    assert t.net_spread > 0 and t.collapsed_passes == 0
    t = _trainer(dead)                      # nothing to tell apart: not a collapse
    for _ in range(MemberTrainer.COLLAPSED_PASSES + 1):
        t._check_spread(x, np.zeros_like(y))
    assert t.collapsed_passes == 0 and capsys.readouterr().err == ""


def test_the_spread_is_measured_on_a_full_batch_not_the_remainder(models, monkeypatch):
    """A pass's last batch can be a remainder of one example, whose spread is 0 by definition."""
    import training.trainer as tt
    live, _, x, y = models
    t = _trainer(live)
    t.cfg = {"training": {"sample_fraction": 1.0, "min_sample": 1, "batch_size": 32, "augment": False}}
    t.info = types.SimpleNamespace(symmetries=(0,))
    t.rng = np.random.default_rng(0)
    t.replay = types.SimpleNamespace(sample_indices=lambda *a: np.arange(33))
    t.train_step = lambda bx, by: 0.5
    monkeypatch.setattr(tt, "training_batches", lambda *a: iter([(x[:32], y[:32]), (x[32:33], y[32:33])]))
    assert t._train_pass() == [0.5, 0.5]
    assert t.target_spread == pytest.approx(float(np.std(y[:32]))) and t.net_spread > 0
