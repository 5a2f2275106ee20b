"""Search memory (issue 11, item 1): full tables never crash nor stop a game, re-rooting frees the
old tree, short searches are reported, bad parameters are refused; and proven wins within a depth
bound (item 3) follow the shortest forced win. Budgets are iterations, never time."""
import math

import numpy as np
import pytest

import games
from games.errors import GameError
from games.tree_game import make_tree
from descent.match import play_game, run_match
from search_ext.agents import AgentSpecError, make_agent, parse_agent
from search_ext.bestfirst import BestFirstSearch, SearchError
from search_ext.evaluators import CallableEvaluator
from search_ext.mcts import MCTS
from tests.kept_tree import KeptTreeSearch


def full_game(game, spec_a, spec_b="random", seed=1):
    """Play one game and check every move was legal (push checks it)."""
    rec = play_game(game, make_agent(spec_a, game), make_agent(spec_b, game), 0, seed)
    assert rec.plies == len(rec.moves) and rec.result in (-1, 0, 1)
    return rec


# ---- MCTS -------------------------------------------------------------------------------------------

def test_mcts_full_table_plays_a_whole_game():
    # the issue: `mcts:max_nodes=20000` crashed in seconds on reversi 8x8
    rec = full_game("reversi", "mcts:iterations=3000,max_nodes=5000")
    assert rec.full_a > 0 and rec.short_a == 0         # full, yet every move ran its iterations


@pytest.mark.parametrize("max_nodes", [1, 5, 40])
def test_mcts_tiny_tables_still_choose_legal_moves(max_nodes):
    rec = full_game("reversi(size=6)", f"mcts:iterations=200,max_nodes={max_nodes}", seed=max_nodes)
    assert rec.full_a > 0


def test_mcts_runs_every_iteration_with_a_full_table():
    info = games.load("reversi(size=6)")
    m = MCTS(info, seed=1, max_nodes=50)
    s = info.new_state()
    assert m.search(s, iterations=500) == 500 and m.last_iterations == 500
    assert m.memory_full and m.size <= 50
    assert m.best_action(s) in s.legal_actions_list()


def test_mcts_reroot_keeps_only_the_new_subtree():
    info = games.load("reversi(size=6)")
    m = MCTS(info, seed=2)
    s = info.new_state()
    m.search(s, iterations=3000)
    before, bytes_before = m.size, m.memory_bytes
    for _ in range(2):
        s.push(m.best_action(s))
    m.search(s, iterations=1)
    assert m.size == m.subtree_size(s) < before
    assert m.memory_bytes <= bytes_before
    # the kept subtree is the one reached: its root has been visited before
    assert sum(r["count"] for r in m.analyse(s)) > 1


def test_mcts_parameters_are_validated():
    info = games.load("tic_tac_toe")
    for c in (math.nan, math.inf, -1.0):
        with pytest.raises(ValueError):
            MCTS(info, c=c)
    with pytest.raises(ValueError):
        MCTS(info, max_nodes=0)
    with pytest.raises(ValueError):
        MCTS(info, max_mb=0)
    for text in ("mcts:c=nan", "mcts:c=inf", "mcts:max_nodes=0", "mcts:max_mb=-1", "minimax:max_mb=0",
                 "minimax:max_nodes=3"):
        with pytest.raises(AgentSpecError):
            parse_agent(text)


@pytest.mark.parametrize("spec", ["mcts:iterations=10", "minimax:iterations=10", "random",
                                  "alphadda:max_iterations=10"])
def test_choose_in_a_finished_game_raises_the_library_error(spec):
    s = games.new_state("tic_tac_toe")
    s.set_position("xxx/oo1/3 o")
    assert s.is_game_over()
    with pytest.raises(GameError):
        make_agent(spec, "tic_tac_toe").choose(s)


# ---- best-first ---------------------------------------------------------------------------------

def test_bestfirst_issue_reproduction_breakthrough():
    # the issue: `SearchError: cannot expand the root` mid-game
    rec = full_game("breakthrough(rows=6,cols=6)", "minimax:iterations=3000,max_nodes=2000")
    assert rec.full_a > 0


@pytest.mark.parametrize("spec", ["minimax:iterations=400,max_nodes=300",
                                  "minibal_n:iterations=400,max_nodes=300",
                                  "minibal_plus:iterations=400,max_nodes=300,proven_wins=true",
                                  "descent:iterations=100,max_nodes=300",
                                  "alphadda:max_iterations=400,a=1,b=3,max_nodes=300",
                                  "minimax:iterations=300,max_nodes=16",
                                  "descent:iterations=50,max_nodes=16"])
def test_bestfirst_tiny_tables_play_whole_games(spec):
    rec = full_game("reversi(size=6)", spec)
    assert rec.full_a > 0


def test_bestfirst_full_table_is_cut_back_and_search_goes_on():
    info = games.load("reversi(size=6)")
    b = BestFirstSearch(info, max_nodes=400)
    s = info.new_state()
    assert b.search(s, iterations=2000) == 2000
    assert b.memory_full and b.collections > 0 and not b.last_cut_short
    assert b.size <= 400 and b.best_action(s) in s.legal_actions_list()


@pytest.mark.parametrize("game, kw", [
    ("reversi(size=6)", {}),
    ("reversi(size=6)", {"descent": True}),
    ("reversi(size=6)", {"rule": "minibal_plus"}),
    ("breakthrough(rows=6,cols=6)", {"rule": "minibal_n"}),
    ("tapatan", {"descent": True}),
])
def test_bestfirst_table_stays_consistent_through_cut_backs_and_reroots(game, kw):
    """Every edge leads to the node of the state it reaches, terminal values are exact and every
    state is reachable, after many cut-backs and re-roots along a game."""
    info = games.load(game)
    b = BestFirstSearch(info, max_nodes=300, **kw)
    s = info.new_state()
    while not s.is_game_over() and s.ply < 12:
        b.search(s, iterations=300)
        n = b.verify(s)
        assert n == b.size or (b.last_cut_short and n < b.size)
        s.push(b.best_action(s))
    assert b.collections > 0


def test_bestfirst_cut_short_is_reported():
    # a table too small for the root's 20 children: no iteration can run, the move is still legal
    info = games.load("chess")
    a = make_agent("minimax:iterations=500,max_nodes=16", info)
    s = info.new_state()
    assert a.choose(s) in s.legal_actions_list()
    assert a.last_move["cut_short"] and a.last_move["iterations"] < 500
    assert a.last_move["asked"] == 500
    # a small table that holds a few expansions: cut back again and again, never stopped
    a = make_agent("minimax:iterations=500,max_nodes=16", "reversi(size=6)")
    a.choose(games.new_state("reversi(size=6)"))
    assert a.last_move == {"iterations": 500, "asked": 500, "cut_short": False, "memory_full": True}


def test_bestfirst_reroot_frees_the_old_tree():
    info = games.load("reversi(size=6)")
    b = BestFirstSearch(info)
    s = info.new_state()
    b.search(s, iterations=1500)
    before, bytes_before = b.size, b.memory_bytes
    a = b.best_action(s)
    s.push(a)
    s.push(s.legal_actions_list()[0])
    reachable = b.subtree_size(s)
    b.search(s, iterations=1)
    assert b.size <= reachable + info.branching + 1
    assert b.size == b.subtree_size(s) < before
    assert b.memory_bytes < bytes_before


def test_a_kept_tree_keeps_the_whole_game():
    """The tests' KeptTreeSearch (tests/kept_tree.py) keeps every state when the root moves on."""
    info = games.load("reversi(size=6)")
    b = KeptTreeSearch(info)
    s = info.new_state()
    b.search(s, iterations=300)
    size = b.size
    s.push(b.best_action(s))
    b.search(s, iterations=10)
    assert b.size > size


def test_aborted_expansion_leaves_no_child_valued_zero():
    """Children created by an expansion whose evaluation failed must be valued when reused."""
    info = games.load("tic_tac_toe")
    calls = {"n": 0}

    def flaky(batch):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("first call fails")
        return np.full(len(batch), 0.5, dtype=np.float32)

    b = BestFirstSearch(info, evaluator=CallableEvaluator(flaky, info.planes_shape))
    s = info.new_state()
    with pytest.raises(SearchError, match="first call fails"):
        b.search(s, iterations=1)
    b.search(s, iterations=1)
    rows = b.analyse(s)
    assert len(rows) == 9
    # each child is valued 0.5 for its own mover, i.e. -0.5 for the root's mover
    assert all(r["value"] == pytest.approx(-0.5) for r in rows)


def test_match_counts_short_searches():
    records = list(run_match("breakthrough(rows=6,cols=6)", "minimax:iterations=300,max_nodes=16",
                             "mcts:iterations=300,max_nodes=200", 1, seed=3))
    r = records[0]
    assert r.short_a > 0 and r.full_a > 0 and r.short_b == 0 and r.full_b > 0


def test_max_mb_caps_the_table():
    info = games.load("reversi")
    b = BestFirstSearch(info, max_mb=0.05)
    assert b.node_limit == int(0.05 * 2**20 // 80)
    s = info.new_state()
    b.search(s, iterations=3000)
    assert b.size <= b.node_limit and b.memory_full
    assert b.memory_bytes <= 0.05 * 2**20 * 1.1 + 16 * 1024
    m = MCTS(info, max_mb=0.05)
    assert m.node_limit == int(0.05 * 2**20 // 40)
    m.search(s, iterations=3000)
    assert m.size <= m.node_limit and m.memory_bytes <= 0.05 * 2**20


# ---- proven wins within a depth bound (issue 11, item 3) ---------------------------------------------

def test_proven_depth_follows_the_shortest_forced_win():
    """Root (balanced player 0) -> X (opponent, one reply) -> U (player 0): an immediate win
    worth 0.9, or a 3-ply line to a win worth 0.2. Minibal_+ backs up the smaller win (the long
    line), but the win through X is forced within 3 plies; the other root move is a draw (0), which
    Minibal_+ would rather play."""
    u = {"player": 0, "h": 0.5, "children": [0.9, {"player": 1, "h": 0.2, "children": [
        {"player": 0, "h": 0.2, "children": [0.2]}]}]}
    tree = {"player": 0, "h": 0.0, "children": [{"player": 1, "h": 0.5, "children": [u]}, 0.0]}
    info = make_tree(tree)
    for depth, expected in ((3, 0), (2, 1), (-1, 0)):
        s = info.new_state()
        b = BestFirstSearch(info, rule="minibal_plus", take_proven_wins=True, proven_win_depth=depth)
        b.search(s, iterations=200)
        rows = {r["action"]: r for r in b.analyse(s)}
        assert rows[0]["proven"] == 1 and rows[0]["proof_depth"] == 3
        assert rows[0]["resolution_depth"] == 5          # the chosen (Minibal_+) line is longer
        assert b.best_action(s) == expected, depth
