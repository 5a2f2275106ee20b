"""A member whose memory cap is far below its game's needs plays on within it (issue 20, item 3).

``MemberTrainer`` on breakthrough(rows=6,cols=6) at the smallest cap (16 MB): its games would need
far more (the same games without a cap grow their example buffers past the whole cap), yet the
member finishes its game budget, degraded (harvests dropped at the examples' limit), and its
accounted memory (``training.memory``: the self-play pool's tables, examples and batch buffer, the
replay window, the network) stays within the cap and each part within its share, checked after
every round of the pool. Game budgets only; neither RSS nor time is asserted.
"""
from pathlib import Path

import pytest

CONFIG = """
[game]
spec = "breakthrough(rows=6,cols=6)"
[network]
filters = 8
blocks = 1
head_units = 16
[selfplay]
iterations = 10
[training]
replay_games = 4
min_sample = 64
batch_size = 32
"""
CAP_MB = 16.0
GAMES = 3


def watched_member(tmp_path, monkeypatch, memory_mb):
    """Run a member for GAMES games; returns (trainer, pool records of every round, games)."""
    import search_ext.selfplay
    from descent.config import load_config
    from training.run import training_config
    from training.trainer import MemberJob, MemberTrainer
    path = tmp_path / "cap.toml"
    path.write_text(CONFIG)
    cfg = training_config(load_config(path))
    job = MemberJob(str(tmp_path / "run"), 0, "breakthrough(rows=6,cols=6)", cfg, 1e9, [], seed=0,
                    max_games=GAMES, extra={"memory_mb": memory_mb, "games_in_flight": 2,
                                            "inference": "numpy", "learner": "inline"})
    trainer = MemberTrainer(job)
    rounds, ended, pools = [], [], []

    class Watched(search_ext.selfplay.SelfPlayPool):
        def run(self, new_game, on_game, stop=None, progress=None, progress_every=64):
            pools.append(self)

            def every_round(p):
                rounds.append({**p, "replay_bytes": trainer.replay.nbytes})
                if progress is not None and (len(rounds) - 1) % progress_every == 0:
                    progress(p)

            def game_over(g):
                ended.append({k: v for k, v in g.items() if k not in ("x", "y")}
                             | {"examples": len(g["y"])})
                on_game(g)

            return super().run(new_game, game_over, stop, every_round, 1)

    monkeypatch.setattr(search_ext.selfplay, "SelfPlayPool", Watched)
    trainer.run()
    return trainer, rounds, ended, pools[0]


def test_a_member_capped_far_below_its_needs_plays_on_within_the_cap(tmp_path, monkeypatch):
    from training.memory import REPLAY_SHARE, network_bytes
    trainer, rounds, ended, pool = watched_member(tmp_path, monkeypatch, CAP_MB)
    cap = int(CAP_MB * 2 ** 20)
    net = network_bytes(trainer.model)
    assert trainer.progress.games_counted() == GAMES and len(ended) == GAMES   # no exception
    assert all(g["plies"] > 0 and g["examples"] > 0 for g in ended)
    # degraded: the example buffers reached their limit and states were dropped
    assert pool.max_example_bytes > 0
    assert sum(g["dropped_harvests"] for g in ended) > 0
    assert sum(g["dropped_examples"] for g in ended) > 0
    per_example = 4 * (1 + 6 * 6 * 2)
    assert all(g["examples"] * per_example <= pool.max_example_bytes for g in ended)
    # accounted memory after every round: each part within its share, the whole within the cap
    selfplay_share = cap - int(cap * REPLAY_SHARE) - net
    assert len(rounds) > 100
    for p in rounds:
        assert p["memory_bytes"] <= selfplay_share
        assert p["replay_bytes"] <= int(cap * REPLAY_SHARE)
        assert p["memory_bytes"] + p["replay_bytes"] + net <= cap
        assert p["table_states"] <= pool.games_in_flight * pool.max_nodes
    # the log shows it: every game's record is there, with the moves it had to cut short
    from training.layout import LOG_FILE
    import json
    log = [json.loads(line) for line in
           (Path(trainer.mdir) / LOG_FILE).read_text().splitlines() if line.strip()]
    assert [r["game"] for r in log] == list(range(1, GAMES + 1))
    assert all("short_moves" in r for r in log)


def test_the_same_games_without_the_cap_would_need_more(tmp_path, monkeypatch):
    """The same member with a cap it never reaches: its games' examples alone pass the 16 MB cap's
    self-play share (so the cap above is far below the games' needs)."""
    from training.memory import REPLAY_SHARE
    _, rounds, ended, pool = watched_member(tmp_path, monkeypatch, 65536.0)
    cap = int(CAP_MB * 2 ** 20)
    assert sum(g["dropped_harvests"] for g in ended) == 0
    assert max(p["memory_bytes"] for p in rounds) > cap - int(cap * REPLAY_SHARE)
