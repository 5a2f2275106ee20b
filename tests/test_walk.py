"""The one walk's decisions (docs/ALGORITHMS.md, "One walk"), on BestFirstSearch (synchronous) and
the self-play pool and the batched driver (resumable), which run the same ``descent_core.Walk``."""
import zlib

import numpy as np
import pytest

import games
from search_ext.bestfirst import BestFirstSearch
from search_ext.evaluators import CallableEvaluator, RandomValueEvaluator
from tests.kept_tree import KeptTreeSearch


def crc_values(batch):
    flat = np.ascontiguousarray(batch, np.float32).reshape(len(batch), -1)
    return np.array([(zlib.crc32(r.tobytes()) % 2001 - 1000) / 1000.0 * 0.9 for r in flat], np.float32)


@pytest.mark.parametrize("kw, first", [({"descent": True}, 0), ({"rule": "minimax"}, 1),
                                       ({"rule": "minibal_plus"}, 1)])
def test_walk_counts_only_completed_iterations(kw, first):
    """An edge's count rises when the walk passes it and falls back when the iteration is undone
    (the table is full): from a fresh root the root's counts add up to the iterations completed
    (less the first without Descent: it expands the root and passes no edge), however many
    iterations were undone. (Descent used to keep the counts of an undone iteration.)"""
    info = games.load("reversi(size=6)")
    for max_nodes in (120, 300, 1000):
        b = BestFirstSearch(info, evaluator=RandomValueEvaluator(3), max_nodes=max_nodes, **kw)
        s = info.new_state()
        b.search(s, iterations=500)
        assert b.memory_full
        assert sum(r["count"] for r in b.analyse(s)) == b.last_iterations - first


def test_walk_values_each_state_once():
    """No state is valued twice in one tree: the children of an expansion are queued once (two
    actions reaching one state), and a transposition reuses its node's value."""
    info = games.load("tic_tac_toe")
    seen = []

    def record(batch):
        seen.extend(bytes(np.ascontiguousarray(x).tobytes()) for x in batch)
        return crc_values(batch)
    b = BestFirstSearch(info, evaluator=CallableEvaluator(record, info.planes_shape))
    b.search(info.new_state(), iterations=3000)
    assert len(seen) > 1000 and len(seen) == len(set(seen)) == b.evaluations


@pytest.mark.parametrize("descent", [False, True])
def test_walk_relinked_children_are_valued(descent):
    """With history-dependent keys (tapatan's repetitions) an edge's stored child is relinked to
    the node of the state its action now reaches; that child is valued before the walk goes on, so
    every state the tree reaches has a value (``verify`` checks it) after every move."""
    info = games.load("tapatan")
    b = KeptTreeSearch(info, descent=descent,
                        evaluator=CallableEvaluator(crc_values, info.planes_shape))
    s = info.new_state()
    while not s.is_game_over() and s.ply < 30:
        b.search(s, iterations=60)
        b.verify(s)
        s.push(b.best_action(s))


def test_stepped_search_equals_the_synchronous_one_and_can_be_dropped():
    """``search_begin``/``search_step``/``search_supply`` run the walk that ``search`` runs: same
    analysis; a stepped search left waiting for values and begun again leaves no child queued
    (every state of the tree is valued: ``verify``)."""
    info = games.load("reversi(size=6)")
    ev = CallableEvaluator(crc_values, info.planes_shape)
    s = info.new_state()
    sync = BestFirstSearch(info, rule="minibal_plus", evaluator=ev)
    sync.search(s, iterations=200)
    stepped = BestFirstSearch(info, rule="minibal_plus", evaluator=ev)
    batch = np.zeros((info.branching,) + tuple(info.planes_shape), np.float32)
    assert stepped.search_begin(s, iterations=200)
    while (n := stepped.search_step(batch, 0)) > 0:
        stepped.search_supply(crc_values(batch[:n]), 0)
    assert stepped.analyse(s) == sync.analyse(s) and stepped.evaluations == sync.evaluations
    # dropped half-way: begun again, the search forgets the waiting expansion
    stepped.search_begin(s, iterations=50)
    assert stepped.search_step(batch, 0) > 0 and stepped.searching
    stepped.search_begin(s, iterations=50)
    while (n := stepped.search_step(batch, 0)) > 0:
        stepped.search_supply(crc_values(batch[:n]), 0)
    assert not stepped.searching
    stepped.verify(s)
