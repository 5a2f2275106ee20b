"""Games played many at a time (``descent.batched``) are the games played one by one: with
iteration budgets, seeds and an evaluator whose values do not depend on the batch (a CRC of each
state's planes), every move is the same, for several games and algorithms, with a table that fills
mid-batch, and with agents without a network in the mix."""
import zlib

import numpy as np
import pytest

from descent import batched
from descent.match import play_game
from search_ext.agents import make_agent as _make_agent
from search_ext.evaluators import CallableEvaluator


def crc_values(batch):
    """A value in (-0.9, 0.9) per state, a pure function of its planes (ties are rare)."""
    flat = np.ascontiguousarray(batch, np.float32).reshape(len(batch), -1)
    return np.array([(zlib.crc32(r.tobytes()) % 2001 - 1000) / 1000.0 * 0.9 for r in flat], np.float32)


CALLS = []


def counted(batch):
    CALLS.append(len(batch))
    return crc_values(batch)


def make_agent(spec, game):
    return _make_agent(spec, game, network_loader=lambda opts, g: CallableEvaluator(counted, g.planes_shape))


def tasks(game, a, b, n, seed=3, **extra):
    return [dict({"game": game, "agent_a": a, "agent_b": b, "index": i, "seed": seed,
                  "a_first": i % 2 == 0}, **extra) for i in range(n)]


def one_by_one(ts):
    out = {}
    for t in ts:
        out[t["index"]] = play_game(t["game"], make_agent(t["agent_a"], t["game"]),
                                    make_agent(t["agent_b"], t["game"]), t["index"], t["seed"],
                                    t["a_first"], t.get("opening_plies", 0))
    return out


def same_games(ts, in_flight):
    want = one_by_one(ts)
    stats = {}
    got = {t["index"]: rec for t, rec in batched.run_batched(ts, in_flight, stats=stats, make_agent=make_agent)}
    assert sorted(got) == sorted(want)
    for i, rec in want.items():
        g = got[i]
        assert g.moves == rec.moves, i
        assert (g.result, g.score, g.plies) == (rec.result, rec.score, rec.plies)
        assert (g.short_a, g.short_b, g.full_a, g.full_b) == (rec.short_a, rec.short_b, rec.full_a, rec.full_b)
    return got, stats


@pytest.mark.parametrize("game, a, b", [
    ("reversi(size=6)", "minimax:iterations=40,net=n", "minibal_plus:iterations=40,net=n"),
    ("breakthrough(rows=5,cols=5)", "minibal_n:iterations=30,net=n", "descent:iterations=15,net=n"),
    ("havannah(base=4)", "descent:iterations=10,net=n", "minimax:iterations=30,net=n"),
    ("tapatan", "descent:iterations=20,net=n", "minibal_plus:iterations=20,net=n,decision=safe"),
])
def test_batched_games_are_the_games_played_one_by_one(game, a, b):
    got, stats = same_games(tasks(game, a, b, 5, opening_plies=2), 3)
    # batched: fewer network calls than expansions (one per round and network, several games each)
    assert stats["calls"] < stats["states"] and stats["rounds"] > 0


def test_one_network_call_per_round():
    """Both agents value states with one function here: each round makes one call for every game
    waiting, and a state valued once (in any game, by either side) is not asked for again."""
    ts = tasks("reversi(size=6)", "minimax:iterations=20,net=n", "minibal_n:iterations=20,net=n", 6,
               opening_plies=4)
    runs = {}
    for cache in (0, 200_000):
        CALLS.clear()
        stats = {}
        recs = {t["index"]: r.moves for t, r in batched.run_batched(ts, 6, stats=stats, make_agent=make_agent,
                                                                    cache_states=cache)}
        assert stats["calls"] == len(CALLS) <= stats["rounds"] and stats["states"] == sum(CALLS)
        runs[cache] = recs, stats
    (plain, s0), (cached, s1) = runs[0], runs[200_000]
    assert plain == cached
    assert s0["cached"] == 0 and s1["cached"] > 0
    assert s1["states"] + s1["cached"] == s0["states"] and s1["states"] == len(set_of_states(ts))


def set_of_states(ts):
    """The distinct states the games value (their planes), played one by one."""
    seen = set()

    def record(batch):
        seen.update(np.ascontiguousarray(x).tobytes() for x in batch)
        return crc_values(batch)

    def mk(spec, game):
        return _make_agent(spec, game, network_loader=lambda opts, g: CallableEvaluator(record, g.planes_shape))
    for t in ts:
        play_game(t["game"], mk(t["agent_a"], t["game"]), mk(t["agent_b"], t["game"]), t["index"],
                  t["seed"], t["a_first"], t.get("opening_plies", 0))
    return seen


def test_a_full_table_mid_batch_decides_that_games_move_and_the_others_go_on():
    """One side's table is tiny: its moves are cut short (decided from what was searched), the
    other games of the batch go on, and every game is still the game played alone."""
    ts = tasks("reversi(size=6)", "descent:iterations=50,net=n,max_nodes=60",
               "minimax:iterations=60,net=n", 3)
    got, _ = same_games(ts, 3)
    assert sum(r.full_a for r in got.values()) > 0 and sum(r.short_a for r in got.values()) > 0
    assert sum(r.full_b for r in got.values()) == 0


def test_agents_without_a_network_play_in_the_batch():
    same_games(tasks("breakthrough(rows=5,cols=5)", "minimax:iterations=30,net=n", "random", 4), 4)
    same_games(tasks("tic_tac_toe", "mcts:iterations=50", "minibal_n:iterations=20,net=n", 3), 2)


def test_the_memory_cap_is_shared_among_the_tables():
    """``memory_mb`` is split equally among the tables of the games in flight (two a game)."""
    seen = []
    real = batched._Seat.new

    def new(self):
        agent = real(self)
        seen.append(agent.search.node_limit)
        return agent
    batched._Seat.new = new
    try:
        list(batched.run_batched(tasks("tic_tac_toe", "minimax:iterations=5,net=n",
                                       "minimax:iterations=5,net=n", 4), 4, memory_mb=8.0,
                                 make_agent=make_agent))
    finally:
        batched._Seat.new = real
    from search_ext.descent_core import BYTES_PER_STATE
    assert seen and all(n == int(1.0 * 2 ** 20 / BYTES_PER_STATE) for n in seen)


def test_batchable():
    assert batched.batchable(["minimax:net=a", "random"])
    assert batched.batchable(["descent:net=a", "minibal_plus:net=b"])
    assert not batched.batchable(["minimax", "random"])              # no network: nothing to batch
    assert not batched.batchable(["minimax:net=a", "alphabeta:net=a"])  # a network outside best-first


def test_an_interrupted_run_resumes_without_losing_or_repeating_games():
    """Records come out as each game ends: a run stopped after k records (a killed ``evaluate``
    stores each as it comes) and rerun on the tasks not stored plays each game exactly once, and
    they are the games played one by one."""
    ts = tasks("breakthrough(rows=5,cols=5)", "minimax:iterations=20,net=n", "minibal_plus:iterations=20,net=n",
               7, opening_plies=2)
    gen = batched.run_batched(ts, 3, make_agent=make_agent)
    first = [next(gen) for _ in range(3)]
    gen.close()                                  # the games in flight are lost, nothing else
    stored = {t["index"] for t, _ in first}
    second = list(batched.run_batched([t for t in ts if t["index"] not in stored], 3, make_agent=make_agent))
    got = {t["index"]: r for t, r in first + second}
    assert len(first) + len(second) == len(got) == len(ts)
    want = one_by_one(ts)
    assert all(got[i].moves == want[i].moves for i in want)
