"""One memory cap per member (issue 20, item 3): self-play far below a game's needs plays on within
its share (game and round budgets, never time)."""
import numpy as np
import pytest

import games
from search_ext.descent_core import BYTES_PER_STATE
from search_ext.selfplay import SelfPlayPool
from training.memory import TABLE_HEADROOM, selfplay_caps


def zeros(batch):
    return np.zeros(len(batch), np.float32)


def play(pool, n_games, stop_rounds=None):
    seen, ended = [], []
    seeds = iter(range(n_games))

    def new_game():
        s = next(seeds, None)
        return None if s is None else (s, 0.5, -1.0, None)

    stop = None if stop_rounds is None else (lambda: pool.rounds >= stop_rounds)
    pool.run(new_game, ended.append, stop=stop, progress=seen.append, progress_every=1)
    return seen, ended


def test_a_cap_far_below_the_needs_plays_on_within_it():
    info = games.load("breakthrough")
    caps = selfplay_caps(info, 2, memory_mb=2.0)        # far below a breakthrough game's needs
    share = caps["game_share_bytes"]
    pool = SelfPlayPool(info, zeros, iterations=20, games_in_flight=caps["games_in_flight"],
                        max_nodes=caps["max_nodes"], max_example_bytes=caps["max_example_bytes"])
    seen, ended = play(pool, 3)
    per_example = (info.planes_shape[0] * info.planes_shape[1] * info.planes_shape[2] + 1) * 4
    assert len(ended) == 3 and all(g["plies"] > 0 for g in ended)     # never crashes, games end
    assert all(len(g["y"]) > 0 for g in ended)                        # and none ends empty
    assert sum(g["short_moves"] for g in ended) > 0                   # search degraded ...
    assert sum(g["dropped_harvests"] for g in ended) > 0              # ... and examples dropped
    n = caps["games_in_flight"]
    for p in seen:
        assert p["table_bytes"] <= n * caps["max_nodes"] * TABLE_HEADROOM * BYTES_PER_STATE
        # the buffer never grows past its share (Examples.limit: the states past it are dropped)
        assert p["example_bytes"] <= n * caps["max_example_bytes"]
    # a game's examples: within its share, the dropped ones counted
    assert all(len(g["y"]) * per_example <= caps["max_example_bytes"] for g in ended)
    assert sum(g["dropped_examples"] for g in ended) > 0


def test_without_a_cap_the_same_games_take_more():
    info = games.load("breakthrough")
    caps = selfplay_caps(info, 2, memory_mb=2.0)
    pool = SelfPlayPool(info, zeros, iterations=20, games_in_flight=caps["games_in_flight"])
    seen, ended = play(pool, 3)
    assert max(p["table_bytes"] + p["example_bytes"] for p in seen) > (
        caps["games_in_flight"] * caps["game_share_bytes"])
    assert sum(g["dropped_harvests"] for g in ended) == 0


def test_the_split():
    info = games.load("chess")
    big = selfplay_caps(info, 16, memory_mb=2048)
    assert big["games_in_flight"] == 16
    assert big["max_nodes"] * TABLE_HEADROOM * BYTES_PER_STATE + big["max_example_bytes"] \
        <= big["game_share_bytes"]
    assert 16 * big["game_share_bytes"] <= 2048 * 2 ** 20
    small = selfplay_caps(info, 16, memory_mb=8)                      # fewer games, not a crash
    assert 1 <= small["games_in_flight"] < 16
    assert small["max_nodes"] >= 2 * info.branching + 16
    with pytest.raises(ValueError, match="max_example_bytes"):
        SelfPlayPool(info, zeros, max_example_bytes=-1)



def test_the_value_cache_takes_a_bounded_share_of_the_cap():
    """Self-play's value cache (training.memory.cache_caps): the batcher's default size when it
    fits a sixteenth of the member's cap, halved until it does (for all actors' caches together),
    none below a thousand states; its bytes are those of ValueCache's two power-of-two tables."""
    from search_ext.batcher import DEFAULT_CACHE_STATES
    from training.memory import CACHE_SHARE, cache_bytes, cache_caps
    assert cache_bytes(DEFAULT_CACHE_STATES) == 2 * 2 ** 20 * 16           # 32 MB
    assert cache_caps(1024) == (DEFAULT_CACHE_STATES, cache_bytes(DEFAULT_CACHE_STATES))
    states, total = cache_caps(1024, copies=4)
    assert states < DEFAULT_CACHE_STATES and total == 4 * cache_bytes(states) <= 1024 * 2 ** 20 * CACHE_SHARE
    assert cache_caps(1) == (0, 0)
