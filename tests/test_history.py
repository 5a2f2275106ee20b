"""History-correct transpositions (issue 11, item 2): a state whose outcome depends on its history
never shares a search node with one where it does not. For every game with a repetition rule, two
histories reaching the same position are searched in one table (kept across both) and compared
with a fresh search: terminal children and resolved values must agree."""
import random

import pytest

import games
from search_ext.bestfirst import BestFirstSearch
from tests.kept_tree import KeptTreeSearch

HISTORY_GAMES = ["chess", "xiangqi", "international_draughts", "tapatan", "tsoro_yematatu",
                 "five_field_kono", "lines_of_action"]


def play(spec, moves, start=None):
    s = games.new_state(spec)
    if start:
        s.set_position(start)
    for m in moves:
        s.push(m)
    return s


def terminal_children(state):
    """{action: outcome} of the children that end the game."""
    out = {}
    for a in state.legal_actions_list():
        state.push(a)
        if state.is_game_over():
            out[a] = state.outcome().binary
        state.pop()
    return out


def rows(search, state):
    return {r["action"]: r for r in search.analyse(state)}


def check_agree(spec, s1, s2, iterations=60):
    """Search s1 then s2 in one kept table, s2 alone in a fresh one: same terminal children, and
    every value resolved in both searches agrees."""
    info = games.load(spec)
    shared = KeptTreeSearch(info)
    shared.search(s1, iterations=iterations)
    shared.search(s2, iterations=iterations)
    fresh = BestFirstSearch(info)
    fresh.search(s2, iterations=iterations)
    a, b = rows(shared, s2), rows(fresh, s2)
    assert set(a) == set(b) == set(s2.legal_actions_list())
    terminal = terminal_children(s2)
    for act in a:
        at_once = {k: a[k]["resolution_depth"] == 1 for k in (act,)}[act]
        assert at_once == (b[act]["resolution_depth"] == 1) == (act in terminal), s2.move_to_str(act)
        if a[act]["resolved"] and b[act]["resolved"]:
            assert a[act]["completion"] == b[act]["completion"], s2.move_to_str(act)
        if a[act]["proven"] is not None and b[act]["proven"] is not None:
            assert a[act]["proven"] == b[act]["proven"], s2.move_to_str(act)


def test_chess_issue_example():
    """The issue: after g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 the move f6g8 repeats the start a third
    time; reached by g1f3 g8f6 f3d4 f6d5 d4f3 d5f6 f3g1 it repeats it only twice."""
    s1 = play("chess", "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1".split())
    s2 = play("chess", "g1f3 g8f6 f3d4 f6d5 d4f3 d5f6 f3g1".split())
    assert s1.position() == s2.position() and s1.zobrist_hash == s2.zobrist_hash
    assert s1.search_key != s2.search_key
    g8 = s2.parse_move("f6g8")
    assert terminal_children(s1) == {g8: 0} and terminal_children(s2) == {}
    info = games.load("chess")
    b = KeptTreeSearch(info)
    b.search(s1, iterations=50)
    assert rows(b, s1)[g8]["resolved"]
    b.search(s2, iterations=50)
    r = rows(b, s2)[g8]
    assert not r["resolved"] and r["proven"] is None
    check_agree("chess", s1, s2)


def test_xiangqi_repetition():
    s1 = play("xiangqi", "a0a1 a9a8 a1a0 a8a9 a0a1 a9a8 a1a0".split())
    s2 = play("xiangqi", "a0a1 a9a8 a1a2 a8a7 a2a1 a7a8 a1a0".split())
    assert s1.position() == s2.position() and s1.search_key != s2.search_key
    back = s2.parse_move("a8a9")
    assert terminal_children(s1) == {back: 0} and terminal_children(s2) == {}
    check_agree("xiangqi", s1, s2)


def position_id(state) -> str:
    """The position without its counters (ply, clocks): what the repetition rules compare."""
    text = state.position()
    if state.game.name == "chess":
        return " ".join(text.split()[:4])
    if state.game.name == "international_draughts":
        return ":".join(f for f in text.split(":") if f[:1] not in ("H", "F", "S", "V"))
    return " ".join(text.split()[:2])


def history_pair(spec, start, max_length, cap=500, seed=0):
    """Two move sequences of the same length from `start` reaching the same position, after which
    some move ends the game (a threefold repetition) in one history and not in the other: a layered
    search over (position, positions seen twice so far), one path per entry."""
    rng = random.Random(seed)
    layer = {(position_id(play(spec, [], start)), frozenset()): ([], {})}
    for ply in range(1, max_length + 1):
        nxt = {}
        for (pid, twice), (moves, counts) in layer.items():
            s = play(spec, moves, start)
            for a in s.legal_actions_list():
                s.push(a)
                if not s.is_game_over():
                    q = position_id(s)
                    c = dict(counts)
                    c[q] = c.get(q, 0) + 1
                    key = (q, frozenset(k for k, v in c.items() if v >= 2))
                    nxt.setdefault(key, (moves + [a], c))
                s.pop()
        keys = list(nxt)
        if len(keys) > cap:
            keep = set(k for k in keys if k[1])          # the rare repeating entries are all kept
            keep.update(rng.sample(keys, cap))
            keys = [k for k in keys if k in keep][:4 * cap]
        layer = {k: nxt[k] for k in keys}
        by_position = {}
        for (pid, twice), (moves, _) in layer.items():
            by_position.setdefault(pid, []).append(moves)
        for pid in sorted(by_position):
            histories = by_position[pid]
            if len(histories) < 2:
                continue
            ends = [terminal_children(play(spec, h, start)) for h in histories]
            for i in range(1, len(histories)):
                if ends[i] != ends[0]:
                    return histories[0], histories[i]
    return None


@pytest.mark.parametrize("spec, start, length", [
    ("tapatan", "oxo/3/xox x 6", 10),
    ("tsoro_yematatu", "o/1xo/xox x 6", 12),
    ("five_field_kono", None, 10),
    ("lines_of_action(board=6)", "x4x/6/o4o/6/6/x4x o 0", 10),
    ("international_draughts", "W:WK46,31,32:BK5,1,2:H0:F1", 10),
    ("chess", "4k3/8/8/8/8/8/8/R3K3 w - - 0 1", 10),
    ("xiangqi", "3k5/9/9/9/9/9/9/9/9/R3K4 w", 10),
])
def test_a_search_after_one_history_agrees_with_a_fresh_search(spec, start, length):
    pair = history_pair(spec, start, length)
    assert pair is not None, "no two histories of one position with different repetitions found"
    h1, h2 = pair
    s1, s2 = play(spec, h1, start), play(spec, h2, start)
    assert s1.zobrist_hash == s2.zobrist_hash or s1.position() == s2.position() \
        or position_id(s1) == position_id(s2)
    assert s1.search_key != s2.search_key
    check_agree(spec, s1, s2, iterations=40)
    check_agree(spec, s2, s1, iterations=40)


def test_history_key_is_restored_by_undo_and_copied():
    s = play("chess", "g1f3 g8f6 f3g1 f6g8".split())
    k = s.search_key
    c = s.copy()
    assert c.search_key == k
    s.push("g1f3")
    s.pop()
    assert s.search_key == k
    s.set_position(s.position())           # a position set from text has no history
    assert s.zobrist_hash == c.zobrist_hash and s.search_key != k
    assert games.new_state("reversi").history_key == 0
