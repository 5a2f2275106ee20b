"""The bench ladders play through the batched driver (``descent.batched.drive``): with iteration
budgets and a test network (a CRC of each state's planes: values that do not depend on the batch),
the games played many in flight are the games played one by one, and the network is called with
larger batches. ``research.ladder.play_tasks`` (used by research.ladder and
research.balance_ladder) and ``research.adaptive_ladder.play_profiles``."""
import statistics

import pytest


from research import adaptive_ladder as bal  # noqa: E402
from research import ladder as bl  # noqa: E402
from tests.test_batched import CALLS, make_agent  # noqa: E402


def without_time(rec):
    return {k: v for k, v in rec.items() if k != "seconds"}


def ladder_games(tasks, in_flight):
    CALLS.clear()
    out = {(a, b, r["index"]): r for a, b, r in bl.play_tasks(tasks, in_flight, worker=bl._Worker(make_agent))}
    return out, list(CALLS)


def same_ladder_games(tasks, in_flight):
    one, calls_one = ladder_games(tasks, 1)
    many, calls_many = ladder_games(tasks, in_flight)
    assert sorted(one) == sorted(many) and len(one) == len(tasks)
    for k in one:
        assert without_time(one[k]) == without_time(many[k]), k
        assert many[k]["seconds"] >= 0
    assert statistics.mean(calls_many) > statistics.mean(calls_one)     # batched across the games
    assert sum(calls_many) <= sum(calls_one)                             # the value cache
    return many


def test_ladder_games_in_flight_are_the_games_played_one_by_one():
    spec = "reversi(size=6)"                     # the ladder is our MCTS: no OpenSpiel needed
    n1 = {"label": "n1", "kind": "net", "agent": "minimax:iterations=15,net=n"}
    n2 = {"label": "n2", "kind": "net", "agent": "minibal_plus:iterations=15,net=n"}
    rung = bl.rung_player(spec, 10)
    tasks = bl.schedule({"matches": {}}, spec, [(n1, rung), (n1, n2)], 3, opening_plies=2)
    many = same_ladder_games(tasks, 4)
    assert {r["a_seat"] for r in many.values()} == {0, 1}


def test_ladder_games_against_openspiel_in_flight():
    pytest.importorskip("pyspiel")
    spec = "breakthrough(rows=6,cols=6)"          # OpenSpiel's bot in lockstep, checked every ply
    n1 = {"label": "n1", "kind": "net", "agent": "descent:iterations=8,net=n"}
    tasks = bl.schedule({"matches": {}}, spec, [(n1, bl.rung_player(spec, 10))], 3)
    same_ladder_games(tasks, 3)


def test_ladder_without_a_network_plays_one_game_at_a_time():
    spec = "reversi(size=6)"
    r = {"label": "r", "kind": "net", "agent": "random"}
    tasks = bl.schedule({"matches": {}}, spec, [(r, bl.rung_player(spec, 5))], 2)
    one = {x[2]["index"]: without_time(x[2]) for x in bl.play_tasks(tasks, 1, worker=bl._Worker(make_agent))}
    many = {x[2]["index"]: without_time(x[2]) for x in bl.play_tasks(tasks, 4, worker=bl._Worker(make_agent))}
    assert one == many and len(one) == 2


def test_adaptive_profiles_in_flight_are_the_profiles_played_one_by_one(tmp_path, monkeypatch):
    """Profiles of the adaptive ladder (the opponent with the test network, our MCTS as the
    simulated person) played four at a time: every game, budget and rung as one by one."""
    import descent.api
    monkeypatch.setattr(descent.api, "make_agent", make_agent)
    game = "reversi(size=6)"
    tasks = [(game, sims, 3, seed) for sims in (5, 20) for seed in (0, 1)]
    monkeypatch.setenv("DESCENT_DATA_DIR", str(tmp_path / "one"))
    CALLS.clear()
    one = {(t[1], t[3]): bal.one_player(*t, echo=lambda *a, **k: None) for t in tasks}
    calls_one = list(CALLS)
    monkeypatch.setenv("DESCENT_DATA_DIR", str(tmp_path / "many"))
    CALLS.clear()
    many = {(sims, seed): run for sims, seed, run in bal.play_profiles(tasks, 4, make_agent=make_agent)}
    assert sorted(one) == sorted(many)
    for k in one:
        assert [without_time(g) for g in one[k]] == [without_time(g) for g in many[k]], k
        assert len(many[k]) == 3
    assert statistics.mean(CALLS) > statistics.mean(calls_one)
    # the profiles were written (each in its own data folder) and followed the same budgets
    assert (tmp_path / "many" / "profiles").is_dir()
