"""Self-play progress (issue 20, item 2): the pool reports games in flight, plies, iterations and
table sizes while a long game is played, driven by round counts (never by time)."""
import numpy as np
import pytest

import games
from search_ext.selfplay import SelfPlayPool


def zeros(batch):
    return np.zeros(len(batch), np.float32)


def test_progress_before_the_first_game_ends():
    info = games.load("chess")
    pool = SelfPlayPool(info, zeros, iterations=3, games_in_flight=2, max_nodes=20_000)
    seen, ended = [], []
    seeds = iter(range(100))

    def new_game():
        return (next(seeds), 0.5, -1.0, None)

    def progress(p):
        seen.append(p)

    # stop after 40 progress records of 50 rounds: a chess game takes far more (each Descent
    # iteration runs to a terminal state, one expansion a round)
    pool.run(new_game, ended.append, stop=lambda: len(seen) >= 40, progress=progress,
             progress_every=50)
    assert not ended
    assert len(seen) == 40
    assert seen[0]["plies"] == 0 and seen[0]["rounds"] == 0
    assert [p["rounds"] for p in seen] == [50 * i for i in range(40)]
    last = seen[-1]
    assert last["games_finished"] == 0 and last["games_in_flight"] == 2
    assert last["plies"] > 0 and last["iterations"] >= 3 * last["plies"] // 2
    assert last["table_states"] > 0 and last["table_bytes"] > 0
    assert last["memory_bytes"] >= last["table_bytes"] + last["example_bytes"]
    assert all(a["iterations"] <= b["iterations"] and a["eval_states"] <= b["eval_states"]
               for a, b in zip(seen, seen[1:]))
    assert pool.abandoned == 2 and pool.progress_info()["games_in_flight"] == 0


def test_progress_counts_match_the_games():
    info = games.load("tic_tac_toe")
    pool = SelfPlayPool(info, zeros, iterations=5, games_in_flight=3)
    seen, ended = [], []
    seeds = iter(range(7))

    def new_game():
        s = next(seeds, None)
        return None if s is None else (s, 0.5, -1.0, None)

    pool.run(new_game, ended.append, progress=seen.append, progress_every=1)
    p = pool.progress_info()
    assert len(ended) == 7 and p["games_finished"] == 7 and p["games_in_flight"] == 0
    assert p["plies"] == sum(g["plies"] for g in ended)
    assert p["iterations"] == sum(g["iterations"] for g in ended)
    assert len(seen) == pool.rounds
    assert seen[-1]["games_finished"] <= 7


def test_progress_every_is_checked():
    info = games.load("tic_tac_toe")
    pool = SelfPlayPool(info, zeros, iterations=5)
    with pytest.raises(ValueError, match="progress_every"):
        pool.run(lambda: None, lambda g: None, progress=print,
                 progress_every=0)


def test_member_progress_records(tmp_path):
    """The member's reporter: a record at the first call, then one per interval of its clock (a
    fake clock here), into status.json and ``report``; the counts come from the pool."""
    import json
    from training.progress import ProgressReporter, progress_line
    info = games.load("chess")
    pool = SelfPlayPool(info, zeros, iterations=2, games_in_flight=2, max_nodes=20_000)
    clock = [0.0]
    reports = []
    rep = ProgressReporter(tmp_path, 3, 100.0, 2048.0, timing=lambda: (10.0, 0.0),
                           status=lambda: {"games": 0}, report=reports.append, interval=30.0,
                           clock=lambda: clock[0])

    def progress(p):
        clock[0] += 1.0             # one "second" per callback: a record every 30 callbacks
        rep(p)

    seeds = iter(range(10))
    pool.run(lambda: (next(seeds), 0.5, -1.0, None), lambda g: None,
             stop=lambda: pool.rounds >= 20 * 70, progress=progress, progress_every=20)
    assert [r["train_seconds"] for r in reports] == [11.0, 41.0, 71.0]
    assert all(r["progress"] and r["member"] == 3 and r["games_finished"] == 0 for r in reports)
    last = reports[-1]
    assert last["plies"] > 0 and last["iterations_per_s"] > 0 and last["eta_s"] == 29.0
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["done"] is False and status["games"] == 0
    assert status["progress"]["plies"] == last["plies"]
    line = progress_line(last)
    assert line.startswith("member 3 playing: 2 game(s) in flight") and "ETA 0m29s" in line
