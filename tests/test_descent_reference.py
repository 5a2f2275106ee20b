"""The Descent core against an independent reference: a plain-Python best-first search written from
the rules' definitions (docs/ALGORITHMS.md sections 3-5: Unbounded Minimax with completion,
Minibal_n, Minibal_+, Descent, the minimax proof, the ordinal move choice, tree learning).

The reference shares no code with ``search_ext``: it keeps its tree in a dict keyed by (search key,
terminal flag), defines each rule as a sort key, and draws its random numbers with its own
SplitMix64. Both ``search_ext.bestfirst.BestFirstSearch`` and ``search_ext.selfplay.SelfPlayPool``
(the two drivers of the core) must give exactly its values, completions, resolutions, selection
counts, proofs, chosen moves and tree-learning examples: on random tiny trees (``games.tree_game``)
whose values are drawn from a few numbers so that ties (and so the tie-breaks) are frequent, and on
tic-tac-toe (transpositions). Iteration budgets only."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import games
from games.tree_game import make_tree
from search_ext.bestfirst import BestFirstSearch
from search_ext.evaluators import CallableEvaluator
from search_ext.selfplay import SelfPlayPool

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


# ---- the reference ---------------------------------------------------------------------------------

def f32(x) -> float:
    """Values are stored as 32-bit floats: round like the table does."""
    return float(np.float32(x))


class SplitMix:
    """SplitMix64 (Steele, Lea & Flood 2014), seeded as the self-play games are."""

    def __init__(self, seed: int):
        self.state = (seed * GOLDEN + 1) & MASK

    def next(self) -> int:
        self.state = (self.state + GOLDEN) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self) -> float:
        return (self.next() >> 11) / float(1 << 53)

    def below(self, n: int) -> int:
        return ((self.next() >> 32) * n) >> 32


def draw_rank(n: int, e: float, epsilon: float, rng: SplitMix) -> int:
    """The ordinal distribution (epsilon < 0) or epsilon-greedy, over ranks 0 (best) .. n-1."""
    if n <= 1:
        return 0
    u = rng.uniform()
    if epsilon >= 0:
        return rng.below(n) if u < epsilon else 0
    probs, rest = [], 1.0                # P(rank i) = (e + (1 - e) / (n - i)) * (1 - sum_{j<i} P(j))
    for i in range(n):
        probs.append((e + (1.0 - e) / (n - i)) * rest)
        rest -= probs[-1]
    for i, p in enumerate(probs):        # the first rank whose share holds u
        if u < p:
            return i
        u -= p
    return n - 1


class RefNode:
    def __init__(self, player: int, terminal: bool):
        self.player, self.terminal = player, terminal
        self.v, self.c, self.r = 0.0, 0, False
        self.expanded = False
        self.edges: list[list] = []       # [action, child key, count]
        self.proven: int | None = None
        self.proof_depth = 0
        self.res_depth = 0


def key_of(s) -> tuple:
    return (s.search_key, s.is_game_over())


def terminal_score(s) -> float:
    return s.outcome().score


class Reference:
    """Plain-Python best-first search: values in the first player's view, one node per (key,
    terminal flag), the tree kept across moves (pruned to the new root's reach unless keep_tree)."""

    def __init__(self, f, rule="minimax", descent=False, keep_tree=False):
        self.f, self.rule, self.descent, self.keep_tree = f, rule, descent, keep_tree
        self.nodes: dict[tuple, RefNode] = {}
        self.balanced = None
        self.root = None

    # -- the rules, as sort keys (larger is better) --
    def rank_key(self, mover: int, edge):
        ch = self.nodes[edge[1]]
        if self.rule == "minimax":
            s = 1 if mover == 0 else -1
            return (s * ch.c, s * ch.v, edge[2])
        sb = 1 if self.balanced == 0 else -1
        v = sb * ch.v
        if mover != self.balanced:
            return (-v, edge[2])                       # the opponent minimises the value
        if self.rule == "minibal_plus":
            return (-(v < 0), -abs(v), edge[2])        # non-negative first, then the smallest
        return (-abs(v), edge[2])                      # minibal_n: the smallest |v|

    def best_edge(self, node: RefNode, unresolved_only: bool):
        edges = [ed for ed in node.edges if not (unresolved_only and self.nodes[ed[1]].r)]
        if not edges:
            return None
        return max(edges, key=lambda ed: self.rank_key(node.player, ed))   # first of equals

    def backup(self, node: RefNode):
        best = self.best_edge(node, False)
        ch = self.nodes[best[1]]
        node.v, node.c = ch.v, ch.c
        if self.rule == "minimax":
            resolved = ch.c != 0
        elif node.player == self.balanced:
            resolved = ch.r and ch.c == 0
        else:
            resolved = ch.r and ch.c == (-1 if self.balanced == 0 else 1)
        node.r = resolved or all(self.nodes[ed[1]].r for ed in node.edges)
        if node.r:
            node.res_depth = ch.res_depth + 1
        s = 1 if node.player == 0 else -1
        outcomes = [(s * self.nodes[ed[1]].proven, self.nodes[ed[1]].proof_depth)
                    for ed in node.edges if self.nodes[ed[1]].proven is not None]
        wins = [d for o, d in outcomes if o > 0]
        if wins:
            node.proven, node.proof_depth = s, min(wins) + 1
        elif outcomes and len(outcomes) == len(node.edges):
            o = max(o for o, _ in outcomes)
            node.proven, node.proof_depth = s * o, max(d for oo, d in outcomes if oo == o) + 1
        else:
            node.proven = None

    def node_for(self, s) -> tuple:
        k = key_of(s)
        if k not in self.nodes:
            node = RefNode(s.to_move, s.is_game_over())
            if s.is_game_over():
                node.v = f32(terminal_score(s))
                node.c = node.proven = {"1-0": 1, "0-1": -1}.get(s.result(), 0)
                node.r = True
            else:
                value = f32(self.f(s.encode_planes()[None])[0])     # the child's mover's view
                node.v = value if s.to_move == 0 else -value
            self.nodes[k] = node
        return k

    def expand(self, s, node: RefNode):
        for a in s.legal_actions_list():
            s.push(a)
            node.edges.append([a, self.node_for(s), 0])
            s.pop()
        node.expanded = True

    def iterate(self, s, k):
        node = self.nodes[k]
        if node.terminal or node.r:
            return
        if not node.expanded:
            self.expand(s, node)
            if not self.descent:
                self.backup(node)
                return
        edge = self.best_edge(node, True)
        if edge is not None:
            edge[2] += 1
            s.push(edge[0])
            self.iterate(s, edge[1])
            s.pop()
        self.backup(node)

    def reachable(self, k) -> set:
        seen, todo = {k}, [k]
        while todo:
            for ed in self.nodes[todo.pop()].edges:
                if ed[1] not in seen:
                    seen.add(ed[1])
                    todo.append(ed[1])
        return seen

    def search(self, state, iterations: int):
        if self.rule != "minimax":
            if self.balanced is None:
                self.balanced = state.to_move
            elif self.balanced != state.to_move:
                self.nodes, self.balanced = {}, state.to_move
        s = state.copy()
        k = self.node_for_root(s)
        if self.root is not None and k != self.root and not self.keep_tree:
            keep = self.reachable(k)
            self.nodes = {kk: n for kk, n in self.nodes.items() if kk in keep}
        self.root = k
        for _ in range(iterations):
            self.iterate(s, k)
            if self.nodes[k].r:
                break
        return self.nodes[k]

    def node_for_root(self, s):
        k = key_of(s)
        if k not in self.nodes:                   # the root is created unvalued
            self.nodes[k] = RefNode(s.to_move, s.is_game_over())
        return k

    def analyse(self, state) -> dict:
        node = self.nodes[key_of(state)]
        sg = 1 if node.player == 0 else -1
        out = {}
        for a, k, n in node.edges:
            ch = self.nodes[k]
            out[a] = {"value": sg * ch.v, "completion": sg * ch.c, "resolved": ch.r, "count": n,
                      "proven": None if ch.proven is None else sg * ch.proven,
                      "proof_depth": ch.proof_depth + 1 if ch.proven is not None else None,
                      "resolution_depth": ch.res_depth + 1 if ch.r else None}
        return out

    def best_action(self, state) -> int:
        return self.best_edge(self.nodes[key_of(state)], False)[0]

    def selfplay_move(self, state, e, epsilon, rng: SplitMix) -> int:
        node = self.nodes[key_of(state)]
        sg = 1 if node.player == 0 else -1
        ranked = sorted(node.edges, key=lambda ed: (-sg * self.nodes[ed[1]].c, -sg * self.nodes[ed[1]].v))
        return ranked[draw_rank(len(ranked), e, epsilon, rng)][0]

    def examples(self, start):
        """Tree learning: the expanded and terminal states reached from `start`, depth first (each
        once), with their values in their mover's view."""
        xs, ys, seen = [], [], set()
        s = start.copy()

        def walk(k):
            if k in seen:
                return
            seen.add(k)
            node = self.nodes[k]
            if node.terminal or node.expanded:
                v = f32(terminal_score(s)) if node.terminal else node.v
                xs.append(s.encode_planes())
                ys.append(v if s.to_move == 0 else -v)
            if node.expanded:
                for a, kk, _ in node.edges:
                    s.push(a)
                    walk(kk)
                    s.pop()
        walk(key_of(s))
        return np.array(xs, np.float32), np.array(ys, np.float32)


def reference_selfplay(info, f, iterations, e, epsilon, seed, max_plies=None):
    """One self-play game of the reference (its first `max_plies` moves when given): moves, root
    values (mover's view), result, and the examples of the whole tree (the pool's at game end)."""
    start = info.new_state()
    s = start.copy()
    ref = Reference(f, descent=True, keep_tree=True)
    rng = SplitMix(seed)
    moves, root_values = [], []
    while not s.is_game_over() and (max_plies is None or len(moves) < max_plies):
        root = ref.search(s, iterations)
        root_values.append(root.v if s.to_move == 0 else -root.v)
        a = ref.selfplay_move(s, e, epsilon, rng)
        moves.append(a)
        s.push(a)
    x, y = ref.examples(start)
    return {"moves": moves, "root_values": np.array(root_values, np.float32), "x": x, "y": y,
            "result": {"1-0": 1, "0-1": -1}.get(s.result(), 0)}


# ---- evaluators with many ties -----------------------------------------------------------------------

def coarse_net(batch):
    """A deterministic value per state from five levels: equal values are frequent."""
    flat = np.ascontiguousarray(batch, np.float32).reshape(len(batch), -1)
    return np.array([(zlib.crc32(r.tobytes()) % 5 - 2) / 4 for r in flat], np.float32)


def read_h(batch):
    return np.asarray(batch)[:, 0, 0, 0]


def random_tree(rng, depth):
    """A nested tree for games.tree_game with values from {-1, -0.5, 0, 0.5, 1} (ties, draws,
    decided leaves), some leaves early."""
    if depth == 0 or (depth < 3 and rng.random() < 0.25):
        return float(rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0]))
    kids = [random_tree(rng, depth - 1) for _ in range(int(rng.integers(1, 4)))]
    return {"h": float(rng.choice([-0.5, 0.0, 0.5])), "children": kids}


def as_rows(rows) -> dict:
    keys = ("value", "completion", "resolved", "count", "proven", "proof_depth", "resolution_depth")
    return {r["action"]: {k: r[k] for k in keys} for r in rows}


# ---- the rules on tiny trees ------------------------------------------------------------------------

@pytest.mark.parametrize("rule", ["minimax", "minibal_n", "minibal_plus"])
@pytest.mark.parametrize("descent", [False, True])
def test_best_first_search_equals_the_reference_on_random_trees(rule, descent):
    """Values, completions, resolutions, counts, proofs and decisions after every budget, and over
    a few moves of the same tree (kept, then pruned to the new root's reach)."""
    rng = np.random.default_rng(19)
    checked = 0
    for t in range(40):
        info = make_tree(random_tree(rng, 4))
        for iterations in (1, 2, 3, 5, 40):
            b = BestFirstSearch(info, rule=rule, descent=descent,
                                evaluator=CallableEvaluator(read_h, info.planes_shape))
            ref = Reference(read_h, rule=rule, descent=descent)
            s = info.new_state()
            while not s.is_game_over():
                b.search(s, iterations=iterations)
                root = ref.search(s, iterations)
                info_b = b.root_info(s)
                sg = 1 if s.to_move == 0 else -1
                assert (info_b["value"], info_b["completion"], info_b["resolved"]) == \
                    (sg * root.v, sg * root.c, root.r), (t, iterations)
                assert as_rows(b.analyse(s)) == ref.analyse(s), (t, iterations, s.position())
                a = b.best_action(s)
                assert a == ref.best_action(s), (t, iterations)
                checked += 1
                s.push(a)
    assert checked > 200


@pytest.mark.parametrize("rule", ["minimax", "minibal_plus"])
def test_best_first_search_equals_the_reference_at_tic_tac_toe(rule):
    """Transpositions, a tree pruned to each new root, the coarse evaluator's ties."""
    info = games.load("tic_tac_toe")
    for descent, iterations in ((False, 30), (True, 12)):
        b = BestFirstSearch(info, rule=rule, descent=descent,
                            evaluator=CallableEvaluator(coarse_net, info.planes_shape))
        ref = Reference(coarse_net, rule=rule, descent=descent)
        s = info.new_state()
        while not s.is_game_over():
            b.search(s, iterations=iterations)
            ref.search(s, iterations)
            assert as_rows(b.analyse(s)) == ref.analyse(s), s.position()
            assert b.size == len(ref.nodes)
            a = b.best_action(s)
            assert a == ref.best_action(s)
            s.push(a)


# ---- self-play: the move choice and tree learning -------------------------------------------------

@pytest.mark.parametrize("e, epsilon", [(0.3, -1.0), (0.0, -1.0), (0.0, 0.3), (1.0, -1.0)])
def test_selfplay_pool_equals_the_reference(e, epsilon):
    """The pool's games (one game in flight, the self-play driver of the one walk, and two) are the
    reference's: moves, root values, result, and the tree-learning examples in the same depth-first
    order."""
    info = games.load("tic_tac_toe")
    seeds = [1, 2, 3]
    want = {seed: reference_selfplay(info, coarse_net, 10, e, epsilon, seed) for seed in seeds}
    for in_flight in (1, 2):
        queue = [(seed, e, epsilon, seed) for seed in reversed(seeds)]
        got = []
        SelfPlayPool(info, coarse_net, iterations=10, games_in_flight=in_flight).run(
            lambda: queue.pop() if queue else None, got.append)
        assert sorted(g["tag"] for g in got) == seeds
        for g in got:
            w = want[g["tag"]]
            assert g["moves"] == w["moves"] and g["result"] == w["result"]
            np.testing.assert_array_equal(g["root_values"], w["root_values"])
            np.testing.assert_array_equal(g["x"], w["x"])
            np.testing.assert_array_equal(g["y"], w["y"])


def test_the_reference_draws_the_ordinal_distribution():
    """The reference's SplitMix64 and rank draw are the core's (``sample_ranks``), so the game
    comparisons above check the move choice draw for draw."""
    from search_ext.selfplay import sample_ranks
    for n, e, epsilon in ((5, 0.3, -1.0), (4, 0.0, 0.25), (1, 0.5, -1.0)):
        rng = SplitMix(77)
        counts = np.zeros(n, np.int64)
        for _ in range(2000):
            counts[draw_rank(n, e, epsilon, rng)] += 1
        np.testing.assert_array_equal(counts, sample_ranks(n, e, epsilon, 77, 2000))
