"""Search algorithms: definitions on hand-built trees, solved positions, play, budgets, determinism."""
import math
import time

import numpy as np
import pytest

import games
from games.tree_game import make_tree
from search_ext.agents import AgentSpecError, GaussianAgent, make_agent, parse_agent
from search_ext.alphabeta import AlphaBeta
from search_ext.bestfirst import BestFirstSearch
from search_ext.evaluators import PlayoutEvaluator, heuristic_evaluator
from search_ext.mcts import MCTS
from descent.match import run_match


def decide(tree, rule, iterations=200, **kw):
    info = make_tree(tree)
    s = info.new_state()
    b = BestFirstSearch(info, rule=rule, evaluator=heuristic_evaluator(info), **kw)
    b.search(s, iterations=iterations)
    return b.best_action(s), b.root_info(s), b


# ---- definitions on hand-built trees -------------------------------------------------------------

@pytest.mark.parametrize("leaves, expected", [
    ([-0.5, 0.2, 0.6, -0.1], {"minimax": 2, "minibal_n": 3, "minibal_plus": 1}),
    ([-0.5, -0.3, -0.9], {"minimax": 1, "minibal_n": 1, "minibal_plus": 1}),
    ([0.7, 0.4, 0.05], {"minimax": 0, "minibal_n": 2, "minibal_plus": 2}),
    ([-0.05, 0.4], {"minimax": 1, "minibal_n": 0, "minibal_plus": 1}),
])
@pytest.mark.parametrize("rule", ["minimax", "minibal_n", "minibal_plus"])
def test_best_action_over_terminal_children(leaves, expected, rule):
    action, root, _ = decide(leaves, rule)
    assert action == expected[rule]
    assert root["resolved"]
    assert root["value"] == pytest.approx(leaves[action])


@pytest.mark.parametrize("rule, expected, value", [
    ("minimax", 0, 0.3),        # max over the opponent's minima (0.3, -0.2)
    ("minibal_n", 1, -0.2),     # smallest |value|
    ("minibal_plus", 0, 0.3),   # smallest non-negative value
])
def test_opponent_minimises(rule, expected, value):
    action, root, _ = decide([[0.3, 0.9], [-0.2, 0.8]], rule)
    assert action == expected and root["value"] == pytest.approx(value)


def test_minimax_resolves_on_a_proven_win_despite_a_better_heuristic():
    tree = [0.5, {"h": 0.9, "children": [-1.0, 1.0]}]
    action, root, b = decide(tree, "minimax", iterations=1)
    assert action == 0 and root["resolved"] and root["completion"] == 1


def test_minimax_all_children_lost_is_a_resolved_loss():
    _, root, _ = decide([-0.5, -0.2], "minimax")
    assert root["resolved"] and root["completion"] == -1


def test_minimax_proven_draw_needs_every_child_resolved():
    tree = [{"value": 0.0, "result": 0}, {"h": -0.5, "children": [-0.6, -0.7]}]
    action, root, b = decide(tree, "minimax", iterations=1)
    assert not root["resolved"]          # the second child is unexplored
    action, root, b = decide(tree, "minimax", iterations=50)
    assert root["resolved"] and root["completion"] == 0 and action == 0


def test_minibal_balanced_node_resolves_on_a_resolved_draw():
    tree = [{"value": 0.0, "result": 0}, {"h": 0.3, "children": [0.4, 0.6]}]
    for rule in ("minibal_n", "minibal_plus"):
        # the draw (|v| = 0) is chosen and resolved, though the other child is unexplored
        action, root, _ = decide(tree, rule, iterations=1)
        assert action == 0 and root["resolved"] and root["completion"] == 0
    # minimax prefers the heuristic 0.3 and is not resolved after one iteration
    _, root, _ = decide(tree, "minimax", iterations=1)
    assert not root["resolved"]


def test_minibal_opponent_node_resolves_on_a_resolved_loss():
    # root (balanced) -> X (opponent) -> [loss for the balanced player, unexplored 0.5]
    tree = [{"h": 0.0, "children": [-0.4, {"h": 0.5, "children": [0.5, 0.7]}]}]
    info = make_tree(tree)
    s = info.new_state()
    b = BestFirstSearch(info, rule="minibal_plus", evaluator=heuristic_evaluator(info))
    b.search(s, iterations=2)
    s.push(0)
    x = b.root_info(s)
    assert x["resolved"] and x["value"] == pytest.approx(0.4)   # opponent's view: +0.4


def test_take_proven_wins_and_depth_bound():
    tree = [0.9, {"h": 0.1, "children": [0.1, 0.2]}]
    a, _, _ = decide(tree, "minibal_plus", iterations=1)
    assert a == 1                               # smallest non-negative: the 0.1 heuristic
    a, _, _ = decide(tree, "minibal_plus", iterations=1, take_proven_wins=True)
    assert a == 0
    a, _, _ = decide(tree, "minibal_plus", iterations=1, take_proven_wins=True, proven_win_depth=0)
    assert a == 1
    deep = [{"h": 0.8, "children": [0.8]}, {"h": 0.1, "children": [0.1, 0.2]}]   # win in 2 plies
    for d, expected in ((1, 1), (2, 0), (-1, 0)):
        a, _, _ = decide(deep, "minibal_plus", iterations=50, take_proven_wins=True, proven_win_depth=d)
        assert a == expected, d


def test_minibal_swing_is_minibal_plus_until_the_root_is_proven_won_then_its_mirror():
    # a terminal win (0.6), an unexplored line valued -0.1, a terminal 0.2 and a terminal loss -0.5
    tree = [0.6, {"h": -0.1, "children": [-0.1, 0.3]}, 0.2, -0.5]
    info = make_tree(tree)
    s = info.new_state()
    b = BestFirstSearch(info, rule="minibal_swing", evaluator=heuristic_evaluator(info))
    b.search(s, iterations=1)
    assert b.lean == 1 and b.best_action(s) == 2   # as Minibal_+: the smallest non-negative value
    b.search(s, iterations=1)                   # the root is a proven win now: lean to values <= 0
    assert b.lean == -1 and b.best_action(s) == 1  # the largest of them (-0.1, before -0.5)
    assert b.root_info(s)["value"] == pytest.approx(-0.1)
    # only proven losses at or below 0: the nearest to 0 of them
    info = make_tree([-0.5, 0.2, 0.6, -0.1])
    b = BestFirstSearch(info, rule="minibal_swing", evaluator=heuristic_evaluator(info))
    s = info.new_state()
    b.search(s, iterations=5)
    b.search(s, iterations=5)
    assert b.lean == -1 and b.best_action(s) == 3
    # no proven win (heuristic children): it stays Minibal_+, search after search
    tree = [{"h": -0.5, "children": [-0.5]}, {"h": 0.2, "children": [0.2, 0.3]}]
    info = make_tree(tree)
    s = info.new_state()
    b = BestFirstSearch(info, rule="minibal_swing", evaluator=heuristic_evaluator(info))
    b.search(s, iterations=1)
    b.search(s, iterations=1)
    assert b.best_action(s) == 1 and b.lean == 1
    # a new game (reset) starts leaning to values >= 0 again
    b.reset()
    assert b.lean == 1


def test_safe_decision_prefers_the_most_selected_action():
    # A looks best at first (0.9, then 0.8, 0.7) and is selected three times before its value drops
    # to 0.3 below B's 0.5: the best action is then B, the safe decision (most selected) A
    chain = {"h": 0.9, "children": [{"h": 0.8, "children": [{"h": 0.7, "children": [
        {"h": 0.3, "children": [0.3, 0.3]}]}]}]}
    tree = [chain, {"h": 0.5, "children": [{"h": 0.5, "children": [0.5, 0.5]}]}]
    info = make_tree(tree)
    chosen = {}
    for decision in ("best", "safe"):
        b = BestFirstSearch(info, evaluator=heuristic_evaluator(info), decision=decision)
        s = info.new_state()
        b.search(s, iterations=4)
        rows = {r["action"]: r for r in b.analyse(s)}
        assert rows[0]["count"] == 3 and rows[1]["count"] == 0
        assert rows[0]["value"] == pytest.approx(0.3) and rows[1]["value"] == pytest.approx(0.5)
        chosen[decision] = b.best_action(s)
    assert chosen == {"best": 1, "safe": 0}


def test_descent_reaches_terminal_states_each_iteration():
    info = games.load("tic_tac_toe")
    s = info.new_state()
    d = BestFirstSearch(info, descent=True)
    d.search(s, iterations=1)
    u = BestFirstSearch(info)
    u.search(s, iterations=1)
    assert d.size > 9 * 4 and u.size == 10      # descent expanded a whole line, UBFM one state


# ---- solved games -------------------------------------------------------------------------------

@pytest.mark.parametrize("descent", [False, True])
def test_complete_search_proves_tic_tac_toe_a_draw(descent):
    info = games.load("tic_tac_toe")
    s = info.new_state()
    b = BestFirstSearch(info, descent=descent)
    b.search(s, iterations=1_000_000)
    root = b.root_info(s)
    assert root["resolved"] and root["completion"] == 0 and root["value"] == 0.0


@pytest.mark.parametrize("position, win", [
    ("xx1/oo1/3 x", "c3"),          # win in 1
    ("x1o/1o1/x2 x", "a2"),         # must block... and it wins: a3 a2 a1 column
])
@pytest.mark.parametrize("agent", ["minimax:iterations=5000", "descent:iterations=5000",
                                   "alphabeta:depth=9", "minibal_plus:iterations=5000,proven_wins=true"])
def test_forced_wins_are_played(position, win, agent):
    s = games.new_state("tic_tac_toe")
    s.set_position(position)
    a = make_agent(agent, "tic_tac_toe")
    assert s.move_to_str(a.choose(s)) == win


def test_forced_win_in_breakthrough():
    s = games.new_state("breakthrough(rows=6,cols=6)")
    s.set_position("ooo1oo/3x2/6/6/xxxxxx/xxxxx1 x 6")      # x on d5: any step to row 6 wins
    b = BestFirstSearch(s.game)
    b.search(s, iterations=20000)
    move = s.move_to_str(b.best_action(s))
    s.push(move)
    assert s.is_game_over() and s.outcome().winner == 0


@pytest.mark.parametrize("opponent", ["random", "mcts:iterations=300"])
def test_minimax_never_loses_tic_tac_toe(opponent):
    records = list(run_match("tic_tac_toe", "minimax:iterations=20000", opponent, 16, seed=5))
    assert all(r.a_result >= 0 for r in records)
    if opponent == "random":
        assert sum(r.a_result for r in records) >= 10


def _tic_tac_toe_positions():
    """Every non-terminal tic-tac-toe position reachable from the start (by position text)."""
    info = games.load("tic_tac_toe")
    seen, out, stack = set(), [], [info.new_state()]
    while stack:
        s = stack.pop()
        if s.position() in seen:
            continue
        seen.add(s.position())
        if s.is_game_over():
            continue
        out.append(s)
        for a in s.legal_actions_list():
            c = s.copy()
            c.push(a)
            stack.append(c)
    return out


def _immediate_wins(s):
    out = []
    for a in s.legal_actions_list():
        c = s.copy()
        c.push(a)
        if c.is_game_over() and c.result() != "1/2-1/2":
            out.append(a)
    return out


@pytest.mark.parametrize("spec", ["hybrid:depth=1", "hybrid:depth=2"])
def test_hybrid_takes_every_immediate_win(spec):
    """Playout estimates lie strictly inside the terminal values, so a win at once (f_t = 3/9 at
    ply 7, say) beats any estimate, even all 15 playouts won (before: 955 of 2358 positions with
    an immediate win missed at depth 1, 454 at depth 2)."""
    info = games.load("tic_tac_toe")
    agent = make_agent(spec, info)
    s = info.new_state()
    s.set_position("2o/oox/x1x x")
    assert s.move_to_str(agent.choose(s)) == "b1"
    positions = [p for p in _tic_tac_toe_positions() if _immediate_wins(p)]
    assert len(positions) == 2358
    missed = 0
    for p in positions:
        agent.reset(0)
        missed += agent.choose(p) not in _immediate_wins(p)
    assert missed == 0


def test_hybrid_uses_playouts():
    """The hybrid values its frontier by random playouts (seed 003): on the empty board at depth 1
    the estimates differ by move, the centre is best, all lie strictly inside the decided terminal
    values and none counts as proven; and at depth 1 the playouts make it a far better player
    against random than the same alpha-beta with every leaf worth 0."""
    from search_ext.evaluators import decided_floor, estimate_scale
    info = games.load("tic_tac_toe")
    s = info.new_state()
    ab = AlphaBeta(info, PlayoutEvaluator(2000, 100, False, 1))
    action, value, depth = ab.search(s, max_depth=9, nodes=1)
    assert depth == 1 and s.move_to_str(action) == "b2" and 0 < value < decided_floor(info)
    rows = ab.analyse(s, 1)
    values = [r["value"] for r in rows]
    assert len(set(values)) >= 5 and not any(r["proven"] or r["resolved"] for r in rows)
    assert max(abs(v) for v in values) <= estimate_scale(info) < decided_floor(info)
    assert s.move_to_str(rows[0]["action"]) == "b2"
    zero = AlphaBeta(info)
    assert {r["value"] for r in zero.analyse(s, 1)} == {0.0}

    def points(spec):
        return sum(r.a_result for r in run_match("tic_tac_toe", spec, "random", 30, seed=1))
    assert points("hybrid:depth=1,playouts=15") >= points("alphabeta:depth=1") + 8


def test_hybrid_against_uct_at_tic_tac_toe_draws():
    """seed 003, Table 3: Hybrid Minimax-MCTS against UCT at tic-tac-toe, all draws; at depth 3 (not
    9, where the whole game is searched and no playout is ever run) its frontier is valued by the
    playouts: from the start no root value is resolved."""
    info = games.load("tic_tac_toe")
    rows = AlphaBeta(info, PlayoutEvaluator(15, 100, False, 1)).analyse(info.new_state(), 3)
    assert not any(r["resolved"] or r["proven"] for r in rows)
    records = list(run_match("tic_tac_toe", "hybrid:depth=3,playouts=15", "mcts:iterations=20000", 6,
                             seed=1))
    assert all(r.result == 0 for r in records)


def test_hybrid_deepens_until_proven():
    """A playout mean of +-1 no longer stops the iterative deepening: only a proof does. In a
    position won at once, depth 1 proves it; in a drawn one (all children estimated), the search
    goes on to the depth limit (an exact draw needs the whole tree: depth 7 from x2/1o1/3)."""
    info = games.load("tic_tac_toe")
    s = info.new_state()
    s.set_position("xx1/oo1/3 x")
    ab = AlphaBeta(info, PlayoutEvaluator(15, 100, False, 2))
    action, value, depth = ab.search(s, max_depth=9)
    assert s.move_to_str(action) == "c3" and value == pytest.approx(5 / 9) and depth == 1
    s.set_position("x2/1o1/3 x")
    action, value, depth = ab.search(s, max_depth=9)
    assert value == 0.0 and depth == 7
    # an estimate of +-1 (one playout, won) at depth 1 is not a proof: depth 2 still runs
    s = info.new_state()
    ab = AlphaBeta(info, PlayoutEvaluator(1, 100, False, 0))
    _, _, depth = ab.search(s, max_depth=2)
    assert depth == 2


@pytest.mark.parametrize("spec", ["tic_tac_toe", "reversi(size=6)", "breakthrough(rows=5,cols=5)",
                                  "connect6(size=9)"])
def test_playout_estimates_lie_inside_the_terminal_values(spec):
    """The best-first search with the playout evaluator (the `descent play` fallback): on positions
    of random games, every proven loss is below every estimate and every proven win above, and the
    decided terminal values of random playouts are never below the floor the scaling uses."""
    from search_ext.evaluators import decided_floor
    info = games.load(spec)
    floor = decided_floor(info)
    rng = np.random.default_rng(0)
    for g in range(3):
        s = info.new_state()
        b = BestFirstSearch(info, evaluator=PlayoutEvaluator(4, 200, False, g))
        while not s.is_game_over():
            b.search(s, iterations=12)
            rows = b.analyse(s)
            est = [r["value"] for r in rows if not r["resolved"]]
            for r in rows:
                if r["resolved"] and r["value"] != 0:
                    assert abs(r["value"]) >= floor - 1e-6
                    assert all((r["value"] > e) == (r["value"] > 0) for e in est)
            assert all(abs(e) < floor for e in est)
            moves = s.legal_actions_list()
            s.push(moves[rng.integers(len(moves))])
        o = s.outcome()
        if o.binary != 0:
            assert abs(o.score) >= floor - 1e-9


def test_alphabeta_agrees_with_minimax_value():
    info = games.load("tic_tac_toe")
    ab = AlphaBeta(info)
    s = info.new_state()
    s.set_position("x2/1o1/3 x")
    action, value, depth = ab.search(s, max_depth=9)
    assert value == 0.0 and depth == 7
    s.set_position("xx1/oo1/3 x")
    action, value, depth = ab.search(s, max_depth=9)
    assert s.move_to_str(action) == "c3" and value == pytest.approx((9 - 5 + 1) / 9)


def test_mcts_prefers_the_winning_move():
    info = games.load("tic_tac_toe")
    s = info.new_state()
    s.set_position("xx1/oo1/x2 o")
    m = MCTS(info, seed=3)
    m.search(s, iterations=3000)
    assert s.move_to_str(m.best_action(s)) == "c2"


# ---- Gaussian difficulty ---------------------------------------------------------------------------

@pytest.mark.parametrize("level, table", [
    # seed 003, Table 2: probabilities (%) of choosing the values 0, 0.5, 1
    ("easy", (30.85, 56.98, 12.17)),
    ("medium", (12.17, 56.98, 30.85)),
    ("hard", (0.62, 19.61, 79.77)),
])
def test_gaussian_selector_reproduces_table_2(level, table):
    agent = make_agent(f"gaussian:level={level},seed=11", "tic_tac_toe")
    assert isinstance(agent, GaussianAgent)
    n = 100_000
    counts = np.zeros(3)
    for _ in range(n):
        counts[agent.select([0.0, 0.5, 1.0])] += 1
    p = np.array(table) / 100
    radius = 4 * np.sqrt(p * (1 - p) / n) + 1e-4     # 4 standard errors
    assert np.all(np.abs(counts / n - p) <= radius), counts / n


@pytest.mark.parametrize("level, p_win", [("easy", 0.1217), ("medium", 0.3085), ("hard", 0.7977)])
def test_gaussian_levels_see_a_small_proven_win_as_a_win(level, p_win):
    """x wins with a3 only at ply 9 (f_t = 1/9), a2 and b2 draw: the level map gives the proven win 1
    and the draws 0.5 (before: 0.556 and 0.5, a draw and a half), so the win is chosen with Table 2's
    probability of the value 1 (x > 0.75)."""
    agent = make_agent(f"gaussian:level={level},depth=9,seed=4", "tic_tac_toe")
    s = games.new_state("tic_tac_toe")
    s.set_position("1xo/2o/xox x")
    rows = agent.base.analyse(s)
    mapped = {s.move_to_str(r["action"]): v for r, v in zip(rows, agent.level_values(rows))}
    assert mapped == {"a3": 1.0, "a2": 0.5, "b2": 0.5}
    n = 400
    wins = sum(s.move_to_str(agent.choose(s)) == "a3" for _ in range(n))
    assert abs(wins / n - p_win) <= 4 * math.sqrt(p_win * (1 - p_win) / n)


def test_gaussian_level_map_keeps_estimates_inside():
    """Over a hybrid base (playout estimates): a win at once maps to 1, every estimate strictly
    inside [0.01, 0.99], spread back over the playout means (not squeezed onto 0.5)."""
    agent = make_agent("gaussian:level=medium,base=hybrid,depth=1,playouts=200,seed=1", "tic_tac_toe")
    s = games.new_state("tic_tac_toe")
    s.set_position("xx1/oo1/3 x")
    rows = agent.base.analyse(s)
    mapped = {s.move_to_str(r["action"]): v for r, v in zip(rows, agent.level_values(rows))}
    assert mapped.pop("c3") == 1.0
    assert all(0.01 <= v <= 0.99 for v in mapped.values())
    assert max(mapped.values()) - min(mapped.values()) > 0.2


# ---- budgets and determinism ----------------------------------------------------------------------

@pytest.mark.parametrize("agent", ["minimax:iterations=200", "minibal_plus:iterations=200",
                                   "descent:iterations=50", "mcts:iterations=300",
                                   "alphabeta:nodes=3000", "hybrid:nodes=300,playouts=3",
                                   "gaussian:level=medium,depth=2", "minimax:iterations=100,eval=playout,playouts=2"])
def test_same_seed_same_moves(agent):
    def moves(seed):
        return [r.moves for r in run_match("reversi(size=6)", agent, "random", 2, seed=seed)]
    assert moves(3) == moves(3)


@pytest.mark.parametrize("agent", ["minimax", "descent", "mcts", "alphabeta", "hybrid"])
def test_time_budget_is_used(agent):
    """A time budget searches until its deadline and then moves (a legal move). How far past the
    deadline it stops depends on the machine's load: measured in bench/bench_search.py, not here."""
    a = make_agent(f"{agent}:time=0.2", "reversi")
    s = games.new_state("reversi")
    t0 = time.perf_counter()
    move = a.choose(s)
    assert time.perf_counter() - t0 >= 0.18
    assert move in s.legal_actions_list()


def test_tree_is_kept_across_moves_and_reset_between_games():
    info = games.load("reversi(size=6)")
    b = BestFirstSearch(info)
    s = info.new_state()
    b.search(s, iterations=300)
    size = b.size
    s.push(b.best_action(s))
    kept = b.subtree_size(s)            # the new root's subtree, searched during the first move
    assert info.branching < kept < size
    b.search(s, iterations=10)
    # the subtree was reused (10 iterations add at most 10 expansions) and the rest freed
    assert kept <= b.size <= kept + 10 * info.branching
    assert b.size == b.subtree_size(s)
    b.reset()
    assert b.size == 0


def test_evaluator_errors_surface():
    from search_ext.bestfirst import SearchError
    from search_ext.evaluators import CallableEvaluator
    info = games.load("tic_tac_toe")

    def broken(batch):
        raise ValueError("boom")
    b = BestFirstSearch(info, evaluator=CallableEvaluator(broken, info.planes_shape))
    with pytest.raises(SearchError, match="boom"):
        b.search(info.new_state(), iterations=3)


def test_playout_evaluator_values_winning_children():
    info = games.load("tic_tac_toe")
    s = info.new_state()
    s.set_position("xx1/oo1/3 x")
    b = BestFirstSearch(info, evaluator=PlayoutEvaluator(8, 100, False, 1))
    b.search(s, iterations=1)
    rows = {s.move_to_str(r["action"]): r for r in b.analyse(s)}
    assert rows["c3"]["resolved"] and rows["c3"]["completion"] == 1


# ---- agent specs ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, fragment", [
    ("minimaxx", "unknown algorithm 'minimaxx'"),
    ("minimax:iterationz=3", "unknown key 'iterationz'"),
    ("minimax:iterations=x", "is not an integer"),
    ("minimax:iterations", "malformed option"),
    ("minimax:time=-1", "time: -1.0 is out of range"),
    ("minibal_plus:proven_wins=maybe", "is not a boolean"),
    ("gaussian:level=insane", "is not one of"),
    ("gaussian:level=custom", "needs mu and sigma"),
    ("gaussian:base=random", "must be an algorithm giving values"),
    ("", "empty agent spec"),
])
def test_bad_agent_specs(text, fragment):
    with pytest.raises(AgentSpecError, match=fragment):
        parse_agent(text)


def test_agent_spec_defaults_and_passthrough():
    name, opts = parse_agent("gaussian:level=easy,base=alphabeta,depth=3")
    assert name == "gaussian" and opts["base_options"] == {"depth": 3}
    name, opts = parse_agent("minibal_plus:time=0.5,proven_wins=true,proven_depth=4")
    assert opts["time"] == 0.5 and opts["proven_wins"] is True and opts["proven_depth"] == 4


def test_alphadda_budget_follows_the_mean_value():
    a = make_agent("alphadda:a=-1.5,b=-1.5,history=2,max_iterations=500", "tic_tac_toe")
    assert a.budget() == math.ceil(10 ** (-1.5 * -1.5))           # no history: v = 0
    a.values = [1.0, 1.0]
    assert a.budget() == math.ceil(10 ** (-1.5 * (1.0 - 1.5)))     # ahead: few iterations
    a.values = [-1.0, -1.0]
    assert a.budget() == 500                                       # behind: the cap
    records = list(run_match("tic_tac_toe", "alphadda:max_iterations=3000", "random", 4, seed=1))
    assert all(r.a_result >= 0 for r in records)
