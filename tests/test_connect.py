"""Outer-open gomoku and connect6 (games/connect.pyx).

Gomoku is checked in lockstep against OpenSpiel's ``gomoku`` (``connect=5``), whose win rule is also
"five or more" (an overline wins there too: checked below) and whose action ids are ours
(``row * N + col``, row 0 at the top, ``action_to_string`` gives ``'r,c'``). OpenSpiel has no
outer-open rule, so the first move is drawn from our (restricted) legal set and OpenSpiel's set is
filtered by the rule at ply 0; from ply 1 on both rule sets coincide. Connect6 has no OpenSpiel
counterpart: it is checked against a brute-force line scan written here, and by hand-made games.
"""
import random

import numpy as np
import pytest

import games
from games._state import perft, random_games
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError
from games.symmetry import transform_planes

def gomoku(n=15):
    return games.new_state(f"outer_open_gomoku(size={n})")


def connect6(n=19):
    return games.new_state(f"connect6(size={n})")


def is_outer(a, n):
    r, c = divmod(a, n)
    return r < 2 or r >= n - 2 or c < 2 or c >= n - 2


def play(state, xs, os_):
    """Push x's moves and o's moves, each in order, following the game's own turn structure."""
    queues = [list(xs), list(os_)]
    while queues[0] or queues[1]:
        state.push(queues[state.to_move].pop(0))


def line_owners(grid, k):
    """Brute force: the players with k or more stones in a row anywhere on the grid."""
    n = len(grid)
    owners = set()
    for r in range(n):
        for c in range(n):
            p = grid[r][c]
            if p < 0:
                continue
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                if all(0 <= r + i * dr < n and 0 <= c + i * dc < n and grid[r + i * dr][c + i * dc] == p
                       for i in range(k)):
                    owners.add(p)
    return owners


# ---- facts -------------------------------------------------------------------------------------------

def test_facts():
    g = games.load("outer_open_gomoku")
    assert (g.num_actions, g.max_plies, g.planes_shape, g.players) == (225, 225, (15, 15, 2), ("x", "o"))
    assert g.symmetries == tuple(range(8)) and g.facts()["terminal_evaluation"] == "multiplicative depth"
    c = games.load("connect6(size=9)")
    assert (c.num_actions, c.max_plies, c.planes_shape) == (81, 81, (9, 9, 3))
    assert c.facts()["terminal_evaluation"] == "multiplicative depth"
    assert games.load("connect6").planes_shape == (19, 19, 3)
    assert games.load("connect6(size=25)").num_actions == 625


# ---- differential test against OpenSpiel gomoku ------------------------------------------------------

def test_openspiel_overline_wins():
    pyspiel = pytest.importorskip("pyspiel")
    # The premise of the lockstep test: OpenSpiel's gomoku(connect=5) also counts six as a win.
    g = pyspiel.load_game("gomoku", {"size": 9, "connect": 5})
    s = g.new_initial_state()
    for a in [0, 72, 1, 73, 2, 74, 4, 75, 5, 77, 3]:       # x: a9 b9 c9 e9 f9, then d9 makes six
        s.apply_action(a)
    assert s.is_terminal() and s.returns() == [1.0, -1.0]
    ours = gomoku(9)
    for a in [0, 72, 1, 73, 2, 74, 4, 75, 5, 77, 3]:
        ours.push(a)
    assert ours.result() == "1-0"


def _os_grid(os_state, n):
    rows = str(os_state).strip().splitlines()[-n:]
    return [[{"b": 0, "w": 1, ".": -1}[ch] for ch in row] for row in rows]


@pytest.mark.parametrize("n, seeds", [(7, range(50)), (9, range(50)), (15, range(50))])
def test_lockstep_against_openspiel(n, seeds):
    pyspiel = pytest.importorskip("pyspiel")
    g = pyspiel.load_game("gomoku", {"size": n, "connect": 5})
    outcomes = {"1-0": 0, "0-1": 0, "1/2-1/2": 0}
    for seed in seeds:
        rng = random.Random(seed)
        ours, theirs = gomoku(n), g.new_initial_state()
        while True:
            legal = ours.legal_actions_list()
            ref = theirs.legal_actions()
            if theirs.is_terminal():
                assert ours.is_game_over() and legal == []
                assert theirs.returns()[0] == {"1-0": 1, "0-1": -1, "1/2-1/2": 0}[ours.result()]
                outcomes[ours.result()] += 1
                break
            assert not ours.is_game_over()
            if ours.ply == 0:
                ref = [a for a in ref if is_outer(a, n)]
            assert legal == ref, (seed, ours.ply)
            assert ours.to_move == theirs.current_player()
            a = rng.choice(legal)
            r, c = divmod(a, n)
            assert theirs.action_to_string(theirs.current_player(), a) == f"{r},{c}"
            ours.push(a)
            theirs.apply_action(a)
            assert ours.board() == _os_grid(theirs, n)
    assert outcomes["1-0"] and outcomes["0-1"]
    if n == 7:
        assert outcomes["1/2-1/2"]          # full-board draws do occur on 7x7


# ---- outer-open rule, perft --------------------------------------------------------------------------

def test_outer_open_first_moves():
    s = gomoku(15)
    first = s.legal_actions_list()
    assert len(first) == 15 * 15 - 11 * 11 == 104
    assert first == sorted(a for a in range(225) if is_outer(a, 15))
    assert s.parse_move("b2") in first and s.parse_move("n14") in first
    with pytest.raises(IllegalMoveError, match="'h8'"):
        s.push("h8")
    with pytest.raises(IllegalMoveError, match="'c3'"):
        s.push("c3")
    s.push("b14")
    assert len(s.legal_actions_list()) == 224 and s.is_legal(s.parse_move("h8"))
    # Symmetric images of outer squares are outer (the rule is invariant under the 8 symmetries).
    assert all(is_outer(s.transform_action(sym, a), 15) for sym in range(8) for a in first)


def test_perft():
    assert [perft(gomoku(7), d) for d in (1, 2, 3)] == [40, 40 * 48, 40 * 48 * 47]
    assert [perft(gomoku(15), d) for d in (1, 2)] == [104, 104 * 224]
    assert [perft(connect6(7), d) for d in (1, 2, 3)] == [49, 49 * 48, 49 * 48 * 47]


# ---- gomoku wins -----------------------------------------------------------------------------------

@pytest.mark.parametrize("xs, os_", [
    (["a1", "b2", "c3", "d4", "e5"], ["a9", "b9", "c9", "d9"]),            # diagonal
    (["a5", "b4", "c3", "d2", "e1"], ["a9", "b9", "c9", "d9"]),            # anti-diagonal
    (["b1", "b2", "b3", "b4", "b5"], ["i1", "i2", "i3", "i4"]),            # vertical
    (["a1", "c1", "d1", "e1", "b1"], ["a9", "b9", "c9", "d9"]),            # completed in the middle
])
def test_gomoku_lines(xs, os_):
    s = gomoku(9)
    play(s, xs[:-1], os_)
    assert not s.is_game_over()
    s.push(xs[-1])
    assert s.result() == "1-0" and s.ply == 9 and s.legal_actions_list() == []
    assert s.outcome().score == pytest.approx(81 ** (-9 / 81))      # multiplicative depth
    s.pop()
    assert not s.is_game_over() and s.result() == "*"


def test_gomoku_white_wins_and_four_does_not():
    s = gomoku(9)
    play(s, ["a1", "a3", "a5", "a7", "i9"], ["c3", "d3", "e3", "f3"])
    assert not s.is_game_over()                     # o has four
    s.push("g3")
    assert s.result() == "0-1" and s.outcome().winner == 1


# ---- connect6 --------------------------------------------------------------------------------------

def test_connect6_turn_structure():
    s = connect6(9)
    movers, flags = [], []
    for a in range(12):
        movers.append("xo"[s.to_move])
        flags.append(s.stones_left_in_turn)
        planes = s.encode_planes()
        assert planes.shape == (9, 9, 3)
        assert np.all(planes[..., 2] == (1.0 if s.stones_left_in_turn == 2 else 0.0))
        s.push(a * 3)
    assert "".join(movers) == "xooxxooxxoox"
    assert flags == [1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2]
    # Planes are from the mover's point of view.
    planes = s.encode_planes()          # ply 12: x places its second stone
    mover = s.to_move
    assert mover == 0
    mine = sum(1 for row in s.board() for v in row if v == mover)
    assert planes[..., 0].sum() == mine and planes[..., 1].sum() == 12 - mine
    assert str(s).endswith("x to move (stone 2 of 2)")


def test_connect6_six_on_first_stone_of_pair_wins():
    s = connect6(9)
    play(s, ["a1", "b1", "c1", "d1", "e1"], ["a9", "b9", "c9", "d9"])
    assert s.ply == 9 and not s.is_game_over()       # five does not win
    play(s, [], ["a7", "b7"])
    assert s.to_move == 0 and s.stones_left_in_turn == 2
    s.push("f1")                                     # first stone of x's pair: six in a row
    assert s.result() == "1-0" and s.ply == 12 and s.legal_actions_list() == []
    assert s.outcome().score == pytest.approx(81 ** (-12 / 81))


def test_connect6_overline_and_second_stone_win():
    s = connect6(9)
    play(s, ["a1", "b1", "c1", "e1", "f1", "g1"], ["a9", "b9", "c9", "d9", "a7", "b7"])
    assert s.ply == 12 and not s.is_game_over() and s.to_move == 0 and s.stones_left_in_turn == 1
    s.push("d1")                                     # second stone: a1..g1, seven in a row
    assert s.result() == "1-0" and s.ply == 13


def test_connect6_white_wins():
    s = connect6(9)
    play(s, ["e5", "a3", "a5", "a7", "a9", "i1", "i3"], ["b2", "c3", "d4", "f6", "g7", "h8"])
    assert s.result() == "*"                         # o has b2 c3 d4 f6 g7 h8, but e5 is x's
    s2 = connect6(9)
    play(s2, ["e1", "a3", "a5", "a7", "a9"], ["b2", "c3", "d4", "e5", "f6", "g7"])
    assert s2.result() == "0-1" and s2.outcome().winner == 1


@pytest.mark.parametrize("n, count", [(7, 100), (9, 100), (19, 30)])
def test_connect6_random_games_against_brute_force(n, count):
    for seed in range(count):
        rng = random.Random(seed)
        s = connect6(n)
        movers = []
        while not s.is_game_over():
            movers.append(s.to_move)
            s.push(rng.choice(s.legal_actions_list()))
        assert movers == [0] + [1 - (((p - 1) // 2) & 1) for p in range(1, len(movers))]
        owners = line_owners(s.board(), 6)
        if s.result() == "1/2-1/2":
            assert s.ply == n * n and not owners
        else:
            winner = 0 if s.result() == "1-0" else 1
            assert owners == {winner} and movers[-1] == winner
            s.pop()
            assert not line_owners(s.board(), 6)       # the game did not go on past a line


@pytest.mark.parametrize("spec", ["connect6(size=7)", "outer_open_gomoku(size=7)"])
def test_full_board_draws(spec):
    s = games.new_state(spec)
    results, lengths = random_games(s, 3000, 11)
    draws = results == 0
    assert draws.any() and (results != 0).any()
    assert np.all(lengths[draws] == 49) and lengths.max() <= 49
    assert s.ply == 0 and s.legal_actions_list()     # random_games works on a copy


def drawn_game(spec):
    """A drawn uniformly random game, played through the Python API."""
    for seed in range(1000):
        rng = random.Random(seed)
        s = games.new_state(spec)
        while not s.is_game_over():
            s.push(rng.choice(s.legal_actions_list()))
        if s.result() == "1/2-1/2":
            return s
    raise AssertionError(f"no drawn game of {spec} in 1000 seeds")


@pytest.mark.parametrize("spec", ["connect6(size=7)", "outer_open_gomoku(size=7)"])
def test_full_board_draw_outcome(spec):
    s = drawn_game(spec)
    assert s.ply == 49 and s.outcome().winner is None and s.outcome().score == 0.0
    assert s.outcome().termination == "ply cap"


# ---- hashing, undo, text ----------------------------------------------------------------------------

GAME_SIZES = [("outer_open_gomoku", 9), ("outer_open_gomoku", 15), ("connect6", 9), ("connect6", 19)]


@pytest.mark.parametrize("name, n", GAME_SIZES)
def test_push_pop_and_text_round_trips(name, n):
    for seed in range(6):
        rng = random.Random(seed)
        s = games.new_state(f"{name}(size={n})")
        seen = []
        while not s.is_game_over():
            seen.append((s.position(), s.zobrist_hash, s.to_move, s.legal_actions_list()))
            t = games.new_state(f"{name}(size={n})")
            t.set_position(s.position())
            assert (t.position(), t.zobrist_hash, t.to_move, t.ply) == (
                s.position(), s.zobrist_hash, s.to_move, s.ply)
            assert t.legal_actions_list() == seen[-1][3]
            assert np.array_equal(t.encode_planes(), s.encode_planes())
            t.set_position(s.position() + f" {s.ply}")
            assert t.zobrist_hash == s.zobrist_hash
            s.push(rng.choice(seen[-1][3]))
        # The final (terminal) position round-trips too, terminal status included.
        t = games.new_state(f"{name}(size={n})")
        t.set_position(s.position())
        assert t.is_game_over() and t.result() == s.result() and t.zobrist_hash == s.zobrist_hash
        assert t.outcome() == s.outcome()
        for pos, h, mover, legal in reversed(seen):
            s.pop()
            assert (s.position(), s.zobrist_hash, s.to_move) == (pos, h, mover)
            assert s.legal_actions_list() == legal
        assert s.ply == 0 and s.zobrist_hash == 0


def test_hash_transpositions_and_side():
    a, b = gomoku(9), gomoku(9)
    for m in ["a1", "e5", "c1"]:
        a.push(m)
    for m in ["c1", "e5", "a1"]:
        b.push(m)
    assert a.position() == b.position() and a.zobrist_hash == b.zobrist_hash
    c, d = connect6(9), connect6(9)
    play(c, ["e5", "a1", "b1"], ["c3", "d3"])
    play(d, ["e5", "b1", "a1"], ["d3", "c3"])
    assert c.position() == d.position() and c.zobrist_hash == d.zobrist_hash
    # Hashes of positions set from text agree with hashes reached by play.
    e = connect6(9)
    play(e, ["e5"], ["a1", "a2"])
    f = connect6(9)
    f.set_position("9/9/9/9/4x4/9/9/o8/o8 x")
    assert e.zobrist_hash == f.zobrist_hash != 0


def test_symmetries():
    for name, n in [("outer_open_gomoku", 9), ("connect6", 9)]:
        rng = random.Random(5)
        s = games.new_state(f"{name}(size={n})")
        for _ in range(13):
            s.push(rng.choice(s.legal_actions_list()))
        for sym in range(8):
            t = games.new_state(f"{name}(size={n})")
            for a in s.move_stack:
                t.push(s.transform_action(sym, a))
            assert np.array_equal(t.encode_planes(), transform_planes(s.encode_planes(), sym))
            assert sorted(s.transform_action(sym, a) for a in s.legal_actions_list()) == \
                t.legal_actions_list()


def test_notation():
    s = gomoku(15)
    assert s.move_to_str(0) == "a15" and s.move_to_str(224) == "o1" and s.move_to_str(14 * 15) == "a1"
    assert s.parse_move("A1") == 14 * 15 and s.parse_move(" b14 ") == 15 + 1
    c = connect6(25)
    assert c.move_to_str(624) == "y1" and c.parse_move("y25") == 24
    for bad, fragment in [("z99", "'z99'"), ("p1", "'p1'"), ("a16", "'a16'"), ("a0", "'a0'"),
                          ("hello", "'hello'"), ("", "''"), ("11", "'11'")]:
        with pytest.raises(InvalidMoveError, match=fragment):
            s.parse_move(bad)
        with pytest.raises(InvalidMoveError, match=fragment):
            s.push(bad)
    s.push("a1")
    with pytest.raises(IllegalMoveError, match="'a1'"):
        s.push("a1")
    with pytest.raises(IllegalMoveError):
        s.push(14 * 15)
    with pytest.raises(IllegalMoveError):
        s.push(225)
    assert s.move_stack == [14 * 15]


def test_drawing():
    s = connect6(9)
    s.push("e5")
    text = str(s)
    assert text.splitlines()[5] == "5 . . . . x . . . . 5"
    assert text.endswith("o to move (stone 1 of 2)")
    g = gomoku(7)
    assert str(g).endswith("x to move")


@pytest.mark.parametrize("spec, text, fragment", [
    ("outer_open_gomoku(size=7)", "7/7/7/7/7/7 x", "has 6 rows"),
    ("outer_open_gomoku(size=7)", "7/7/7/7/7/7/7", "must be 'BOARD SIDE"),
    ("outer_open_gomoku(size=7)", "7/7/7/7/7/7/6q x", "unexpected character 'q'"),
    ("outer_open_gomoku(size=7)", "x7/7/7/7/7/7/7 o", "has more than 7 squares"),
    ("outer_open_gomoku(size=7)", "7/7/7/7/7/7/7 z", "side to move 'z'"),
    ("outer_open_gomoku(size=7)", "7/7/7/7/7/7/7 o", "unreachable"),
    ("outer_open_gomoku(size=7)", "xx5/7/7/7/7/7/7 o", "unreachable"),
    ("outer_open_gomoku(size=7)", "o6/7/7/7/7/7/7 x", "unreachable"),
    ("outer_open_gomoku(size=7)", "7/7/7/3x3/7/7/7 o", "outermost"),
    ("outer_open_gomoku(size=7)", "x6/7/7/7/7/7/7 o 3", "ply 3"),
    ("outer_open_gomoku(size=7)", "x6/7/7/7/7/7/7 o x", "is not a number"),
    ("outer_open_gomoku(size=7)", "xxxxx2/ooooo2/7/7/7/7/7 x", "both players"),
    ("outer_open_gomoku(size=7)", "xxxxx2/oooo3/o6/7/7/7/7 x", "placed the last stone"),
    ("connect6(size=9)", "9/9/9/9/4x4/9/9/9/9 x", "unreachable"),
    ("connect6(size=9)", "9/9/9/9/4x4/9/9/9/o8 x", "unreachable"),
    ("connect6(size=9)", "9/9/9/9/4x4/9/9/9/oo7 o", "unreachable"),
    ("connect6(size=9)", "9/9/9/9/4x4/9/9/9/9 o 0", "ply 0"),
    ("connect6(size=9)", "9/9/9/9/4x4/9/9/9/9/9 o", "has 10 rows"),
])
def test_bad_positions_leave_state_untouched(spec, text, fragment):
    s = games.new_state(spec)
    play(s, ["a1"], ["b1"])
    before = (s.position(), s.zobrist_hash, s.move_stack, s.ply, s.to_move)
    with pytest.raises(InvalidPositionError, match=fragment) as info:
        s.set_position(text)
    assert repr(text) in str(info.value) or repr(text.split()[0]) in str(info.value)
    assert (s.position(), s.zobrist_hash, s.move_stack, s.ply, s.to_move) == before


def test_positions_set_terminal():
    s = gomoku(7)
    s.set_position("xxxxx2/oooo3/7/7/7/7/7 o")
    assert s.is_game_over() and s.result() == "1-0" and s.legal_actions_list() == []
    assert s.outcome().score == pytest.approx(49 ** (-9 / 49))
    c = connect6(9)
    c.set_position("ooooooo2/xxxxx4/9/9/9/9/9/9/xx7 o")   # 7 and 7: o placed stone 14 (overline)
    assert c.is_game_over() and c.result() == "0-1" and c.ply == 14
    # A full board without a line is a draw.
    d = drawn_game("outer_open_gomoku(size=7)")
    t = gomoku(7)
    t.set_position(d.position())
    assert t.is_game_over() and t.result() == "1/2-1/2" and t.ply == 49
