"""Seed 002 (Reibman & Ballard): the noise-based imperfect player, predictive *-minimax, and the
reproduction of their Table 1 on random arc-sum trees."""
import numpy as np
import pytest

import games
from descent.match import run_match
from examples.arc_sum.trees import arc_sum_nested, make_arc_sum_tree, random_arc_sum_trees
from games.tree_game import make_tree
from examples.arc_sum import play as P
from search_ext.agents import AgentSpecError, make_agent, parse_agent
from search_ext.evaluators import heuristic_evaluator
from search_ext.predictive import StarMinimax, star_value
from search_ext.predictive_agents import NoisyAgent, PredictiveAgent


# ---- the *-minimax backup ---------------------------------------------------------------------------

def test_star_value_weights():
    # PS 1: the opponent's best (the min); PS 0: the plain average; otherwise PS (1-PS)^k, normalized
    assert star_value([3.0, 1.0, 2.0], 1.0) == 1.0
    assert star_value([3.0, 1.0, 2.0], 0.0) == pytest.approx(2.0)
    w = 0.5 * 0.5 ** np.arange(3)
    assert star_value([3.0, 1.0, 2.0], 0.5) == pytest.approx(np.dot(w, [1, 2, 3]) / w.sum())
    assert star_value([7.0], 0.3) == 7.0
    for ps in (0.1, 0.5, 0.9):
        vals = np.random.default_rng(1).random(6)
        assert star_value(vals, ps) == pytest.approx(float(np.sort(vals) @ P.star_weights(ps, 6)))
    with pytest.raises(ValueError):
        star_value([1.0], 1.5)


def test_figure_2_backed_up_values():
    # seed 002, Figure 2: Min nodes (2, 3) and (1, 20); Min errs with probability .1. The *-minimax
    # values are 2.1 and 2.9 (minimax: 2 and 1). Two sorted children get the weights .9 and .1 when
    # PS / (PS + PS (1 - PS)) = .9, i.e. PS = 8/9.
    ps = 8 / 9
    assert star_value([2, 3], ps) == pytest.approx(2.1)
    assert star_value([1, 20], ps) == pytest.approx(2.9)
    info = make_tree([[2 / 20, 3 / 20], [1 / 20, 20 / 20]])
    s = info.new_state()
    acts, vals, _ = StarMinimax(info, ps=ps).search(s, max_depth=2)
    assert vals == pytest.approx([2.1 / 20, 2.9 / 20])
    acts, vals, _ = StarMinimax(info, ps=1.0).search(s, max_depth=2)
    assert vals == pytest.approx([2 / 20, 1 / 20])


@pytest.mark.parametrize("ps", [0.9, 0.5, 0.1])
def test_figure_1_forced_loss_tie_break(ps):
    # seed 002, Figure 1: a forced loss (every Min node has a 0 child): minimax sees two zeros, the
    # predictive player takes the branch where an error by Min wins.
    info = make_tree([[0.0, 0.0], [1.0, 0.0]])
    agent = make_agent(f"predictive:ps={ps}", info)
    assert agent.choose(info.new_state()) == 1
    rows = agent.analyse(info.new_state())
    assert rows[0]["action"] == 1 and rows[0]["value"] > 0 and rows[1]["value"] == 0


def test_players_are_read_from_the_state_not_from_parity():
    # the root player moves twice, then the opponent (its first turn: averaged, PS 0.5 -> 2/3, 1/3)
    twice = [{"player": 0, "children": [{"player": 1, "children": [0.0, 0.9]}]}, 0.2]
    # the opponent moves twice in its first turn: both of its nodes are averaged
    opp_twice = [{"player": 1, "children": [{"player": 1, "children": [0.0, 0.9]},
                                            {"player": 1, "children": [0.6, 0.6]}]}, 0.3]
    # the opponent's second turn (after the root player moved again): min, unless star=all
    later = [{"player": 1, "children": [{"player": 0, "children": [
        {"player": 1, "children": [0.0, 0.9]}]}]}, 0.2]
    cases = [(twice, "first", [0.3, 0.2]), (opp_twice, "first", [0.4, 0.3]),
             (later, "first", [0.0, 0.2]), (later, "all", [0.3, 0.2])]
    for tree, star, expected in cases:
        info = make_tree(tree)
        acts, vals, depth = StarMinimax(info, ps=0.5, star_all=star == "all").search(
            info.new_state(), max_depth=10)
        assert vals == pytest.approx(expected), (tree, star)
        assert depth < 10          # the whole tree was searched: stopped early


def test_star_minimax_matches_the_vectorized_arc_sum_search():
    # the compiled search on make_tree arc-sum trees == the numpy search used for Table 1
    trees = random_arc_sum_trees(3, seed=3)
    rng = np.random.default_rng(0)
    for t in range(trees.n):
        info = make_arc_sum_tree(trees, t)
        ev = heuristic_evaluator(info)
        s = info.new_state()
        nodes = np.zeros(trees.n, dtype=np.int64)
        for level in range(trees.depth):
            sign = 1 if level % 2 == 0 else -1          # values are the mover's view
            for ps in (1.0, 0.9, 0.5, 0.1, 0.0):
                for depth in (1, 2, 3):
                    _, vals, _ = StarMinimax(info, ev, ps).search(s, max_depth=depth)
                    ref = P.child_values(trees, level, nodes, depth, None if ps == 1.0 else ps)[t]
                    np.testing.assert_allclose(sign * np.array(vals), ref)
            c = int(rng.integers(trees.branching))
            s.push(c)
            nodes = nodes * trees.branching + c


# ---- arc-sum trees ----------------------------------------------------------------------------------

def test_arc_sum_trees():
    a = random_arc_sum_trees(200, seed=9)
    b = random_arc_sum_trees(200, seed=9)
    assert all(np.array_equal(x, y) for x, y in zip(a.sums, b.sums))
    assert [s.shape for s in a.sums] == [(200, 4 ** k) for k in range(6)]
    arcs = np.concatenate([x.ravel() for x in a.arcs[1:]])
    assert arcs.min() == 0 and arcs.max() == 10 and abs(arcs.mean() - 5.0) < 0.05
    # a node's static value is the sum of the arcs from the root; leaves range over 0..50
    assert np.array_equal(a.sums[3][:, 37], a.arcs[1][:, 37 // 16] + a.arcs[2][:, 37 // 4] + a.arcs[3][:, 37])
    nested = arc_sum_nested(a, 5)
    assert nested["h"] == 0 and nested["children"][2]["children"][1]["h"] == a.sums[2][5, 9]
    assert nested["children"][0]["children"][0]["children"][0]["children"][0]["children"][3] \
        == a.sums[5][5, 3]


# ---- Table 1 ---------------------------------------------------------------------------------------

# seed 002 (Reibman & Ballard), Table 1: average payoff to Max over 5000 random trees (Br=4, D=5,
# V=10, game values 0-50) against 2-ply Min opponents with noise ranges 0, .25, .5, .75, 1, 2, 6.
# Two cells are misread in the scanned text and corrected here: the 2-ply minimax noise-free value
# reads "20.15" (Table 2's 7.2% = (28.21 - x) / (28.98 - x) gives x = 28.15), and PS = 0.3 at noise 2
# reads "34.99" (Table 2's 211% = (34.85 - 34.47) / (34.65 - 34.47) needs the column's best to be
# 34.85, so 34.79, between its neighbours 34.72 and 34.83).
PAPER_TABLE1 = {
    "1-ply minimax": (27.23, 30.60, 32.34, 33.13, 33.62, 34.14, 34.58),
    "2-ply minimax": (28.15, 31.29, 32.90, 33.46, 33.90, 34.47, 34.76),
    "3-ply minimax": (28.98, 32.05, 33.36, 33.96, 34.31, 34.65, 35.01),
    "2-ply PS = 0.9": (28.21, 31.40, 33.03, 33.62, 34.03, 34.58, 34.91),
    "2-ply PS = 0.8": (28.21, 31.40, 33.03, 33.62, 34.03, 34.58, 34.92),
    "2-ply PS = 0.7": (28.21, 31.40, 33.02, 33.62, 34.04, 34.58, 34.92),
    "2-ply PS = 0.6": (28.21, 31.40, 33.02, 33.62, 34.05, 34.60, 34.95),
    "2-ply PS = 0.5": (28.20, 31.41, 33.05, 33.66, 34.10, 34.66, 35.00),
    "2-ply PS = 0.4": (28.20, 31.42, 33.10, 33.70, 34.15, 34.72, 35.07),
    "2-ply PS = 0.3": (28.17, 31.41, 33.11, 33.75, 34.19, 34.79, 35.12),
    "2-ply PS = 0.2": (28.13, 31.40, 33.13, 33.77, 34.22, 34.83, 35.16),
    "2-ply PS = 0.1": (28.08, 31.39, 33.14, 33.79, 34.24, 34.85, 35.19),
}
PAPER_TRIALS = 5000
N_TREES = 20000          # about 4 s; the paper's 5000 trees dominate the sampling error anyway


@pytest.fixture(scope="module")
def table1():
    names, payoffs = P.table1(N_TREES, seed=2024, scale=P.DEFAULT_SCALE)
    assert names == list(PAPER_TABLE1)
    return payoffs           # (rows, noise levels, trees)


def _row(name):
    return list(PAPER_TABLE1).index(name)


def test_table_1_matches_the_paper_within_sampling_error(table1):
    ours = table1.mean(-1)
    paper = np.array(list(PAPER_TABLE1.values()))
    sd = table1.std(-1, ddof=1)                      # per-tree spread: 3.4 to 5.4 game points
    se = np.sqrt(sd ** 2 / PAPER_TRIALS + sd ** 2 / N_TREES)     # theirs and ours, 0.06 to 0.09
    z = (ours - paper) / se
    # the minimax rows (all columns; the noisy ones with the child values divided by 72 game points)
    # and the noise-free column (all rows: no scale involved) agree within 3.5 standard errors
    assert np.abs(z[:3]).max() < 3.5, z[:3]
    assert np.abs(z[:, 0]).max() < 3.5, z[:, 0]
    # The predictive rows agree less well: our PS 0.4-0.7 players gain more than the paper's against
    # noisy opponents (up to +0.3 points, 4 standard errors, at noise 0.75-6), and lose a little more
    # at PS 0.1-0.3 against the perfect one; the paper's PS 0.6-0.9 rows are nearly identical in
    # every column, ours are not (see the notes in examples/arc_sum/play.py).
    assert np.abs(z).max() < 5.0, z


def test_table_1_deeper_minimax_is_better(table1):
    one, two, three = table1[_row("1-ply minimax")], table1[_row("2-ply minimax")], table1[_row("3-ply minimax")]
    for better, worse in ((two, one), (three, two)):
        d = better - worse
        assert np.all(d.mean(-1) > 0)
        # significant up to noise 1; against near-random opponents the extra ply is worth little
        assert np.all((d.mean(-1) / (d.std(-1) / np.sqrt(N_TREES)))[:5] > 4)


def test_table_1_predictive_beats_minimax(table1):
    n = np.sqrt(N_TREES)
    two = table1[_row("2-ply minimax")]
    three = table1[_row("3-ply minimax")]
    ps_rows = table1[3:]                                        # PS = 0.9 ... 0.1
    # against the perfect 2-ply Min (first column), PS = 0.9 beats 2-ply minimax (paper: +0.06) ...
    d = ps_rows[0, 0] - two[0]
    assert d.mean() > 0.02 and d.mean() / (d.std() / n) > 4
    # ... and overestimating the opponent's fallibility costs: PS = 0.1 does worse than PS = 0.9
    d = ps_rows[0, 0] - ps_rows[-1, 0]
    assert d.mean() / (d.std() / n) > 4
    # against every noisy opponent, the best predictive player beats 2-ply minimax, significantly
    for j in range(1, len(P.TABLE1_NOISE)):
        best = ps_rows[:, j].mean(-1).argmax()
        d = ps_rows[best, j] - two[j]
        assert d.mean() > 0.05 and d.mean() / (d.std() / n) > 4, P.TABLE1_NOISE[j]
    # against the weakest opponents (noise 2 and 6) it beats even 3-ply minimax (paper: 211% of the
    # third ply's gain at noise 2), and the lower the predicted strength the better (PS 0.1 > 0.5 > 0.9)
    for j in (5, 6):
        assert ps_rows[:, j].mean(-1).max() > three[j].mean()
        col = ps_rows[:, j].mean(-1)
        assert col[-1] > col[4] > col[0]


def test_table_1_is_reproducible_and_scale_matters():
    names, a = P.table1(300, seed=5, noise_levels=(0.0, 1.0))
    _, b = P.table1(300, seed=5, noise_levels=(0.0, 1.0))
    assert np.array_equal(a, b)
    # the noise-free column does not depend on the scale; a larger scale is a weaker opponent
    _, c = P.table1(300, seed=5, scale=20.0, noise_levels=(0.0, 1.0))
    assert np.array_equal(a[:, 0], c[:, 0])
    assert c[:, 1].mean() < a[:, 1].mean()


# ---- the noise-based player --------------------------------------------------------------------------

def test_noisy_choice_probability():
    # two moves valued 0.5 and 0 (mover's view), scale 1, noise S = 1: the worse one wins the noisy
    # comparison when u2 - u1 > 0.5, with probability (1 - 0.5)^2 / 2 = 0.125
    info = make_tree([0.5, 0.0])
    agent = make_agent("noisy:noise=1,scale=1,depth=1,seed=4", info)
    assert isinstance(agent, NoisyAgent)
    s = info.new_state()
    n = 8000
    worse = sum(agent.choose(s) == 1 for _ in range(n))
    assert abs(worse / n - 0.125) < 4 * np.sqrt(0.125 * 0.875 / n)
    assert all(make_agent("noisy:noise=0,depth=1", info).choose(s) == 0 for _ in range(20))


@pytest.mark.parametrize("agent", ["noisy:noise=0,depth=9", "predictive:ps=1,depth=9"])
def test_full_depth_players_never_lose_tic_tac_toe(agent):
    records = list(run_match("tic_tac_toe", agent, "random", 8, seed=3, progress=False))
    assert all(r.a_result >= 0 for r in records)


# ---- agents on the games ---------------------------------------------------------------------------

def _replay(game, moves):
    s = games.new_state(game)
    for m in moves:
        s.push(m)                    # raises on an illegal move
    assert s.is_game_over()
    return s


@pytest.mark.parametrize("game, first, second", [
    ("tic_tac_toe", "predictive:ps=0.5,depth=2", "noisy:noise=0.5"),
    ("tic_tac_toe", "noisy:noise=2,depth=3,seed=1", "predictive:ps=0.1,star=all"),
    ("reversi(size=6)", "predictive:ps=0.5,depth=2", "noisy:noise=0.5"),
    ("reversi(size=6)", "predictive:ps=0.3,nodes=2000,eval=playout,playouts=2", "noisy:noise=0.25,depth=1"),
    ("connect6(size=9)", "predictive:ps=0.5,depth=2", "noisy:noise=0.5,depth=2"),
    ("breakthrough(rows=6,cols=5)", "predictive:ps=0.7,depth=2", "noisy:noise=1"),
])
def test_agents_play_legal_complete_games(game, first, second):
    records = list(run_match(game, first, second, 2, seed=7, progress=False))
    assert len(records) == 2
    for r in records:
        s = _replay(game, r.moves)
        assert s.outcome().binary == r.result


@pytest.mark.parametrize("agent", ["predictive:ps=0.5,depth=2", "noisy:noise=0.5,depth=2",
                                   "predictive:ps=0.2,nodes=1500,eval=playout,playouts=2"])
def test_same_seed_same_moves(agent):
    def moves(seed):
        return [r.moves for r in run_match("reversi(size=6)", agent, "noisy:noise=1", 2, seed=seed,
                                           progress=False)]
    assert moves(3) == moves(3)
    assert moves(3) != moves(4)


def test_time_budget_deepens_iteratively():
    """A time budget searches depth 1, 2, ... and answers with the deepest depth it completed:
    exactly the values of a search limited to that depth. How deep it gets, and how far past the
    deadline it stops, depend on the machine's load (bench/bench_search.py measures them); what is
    checked here does not."""
    a = make_agent("predictive:ps=0.5,time=0.2", "reversi(size=6)")
    assert isinstance(a, PredictiveAgent)
    s = games.new_state("reversi(size=6)")
    timed = a.values(s)
    depth = a.search.depth_reached
    assert depth >= 1                               # depth 1 always completes
    fixed = make_agent(f"predictive:ps=0.5,depth={depth}", "reversi(size=6)")
    assert fixed.values(s) == timed and fixed.search.depth_reached == depth
    # the same deepening under a node budget, which does not depend on the machine
    deep = make_agent("predictive:ps=0.5,nodes=20000", "reversi(size=6)")
    deep.values(s)
    assert deep.search.depth_reached >= 3


@pytest.mark.parametrize("text, fragment", [
    ("predictive:ps=1.5", "ps: 1.5 is out of range"),
    ("predictive:star=some", "is not one of"),
    ("noisy:noise=-1", "noise: -1.0 is out of range"),
    ("noisy:scale=0", "scale: 0.0 is out of range"),
    ("noisy:depth=0", "depth: 0 is out of range"),
    ("predictive:noise=1", "unknown key 'noise'"),
])
def test_bad_specs(text, fragment):
    with pytest.raises(AgentSpecError, match=fragment):
        parse_agent(text)
