import random

import numpy as np
import pytest

import games
import games.boardtext
from games._state import perft, random_games
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError

SPEC_8 = "breakthrough"
SIZES = [(8, 8), (6, 6), (6, 5)]


def spec_of(rows, cols):
    return f"breakthrough(rows={rows},cols={cols})"


@pytest.fixture
def state():
    return games.new_state(SPEC_8)


# ---- counts ---------------------------------------------------------------------------------------

def test_perft_start(state):
    # Published Breakthrough 8x8 perft, as listed in docs/GAMES.md: 22, 484, 11132, 256036, 6182818
    # (depth 5 is measured by the benchmark, not here, to keep the suite fast).
    assert [perft(state, d) for d in range(1, 5)] == [22, 484, 11132, 256036]


def test_facts():
    for rows, cols in SIZES:
        info = games.load(spec_of(rows, cols))
        assert info.num_actions == rows * cols * 3
        assert info.max_plies == 2 * cols * (2 * rows - 5) + 1
        assert info.planes_shape == (rows, cols, 2)
        assert info.symmetries == (0, 4)
        assert info.players == ("x", "o")
    assert games.load(SPEC_8).max_plies == 177


@pytest.mark.parametrize("rows, cols", [(4, 2), (4, 3), (5, 5), (6, 6), (8, 8)])
def test_random_games_never_reach_the_cap(rows, cols):
    """The ply cap is the longest possible game: from the start, a random game always ends in a win."""
    s = games.new_state(spec_of(rows, cols))
    results, lengths = random_games(s, 5000, 11)
    assert (results != 0).all()
    assert lengths.max() <= s.game.max_plies


# ---- differential test against OpenSpiel ----------------------------------------------------------

def _flip_square(name, rows):
    """OpenSpiel's first player starts on the top rows: mirror the row number."""
    return name[0] + str(rows + 1 - int(name[1:]))


def _to_ours(os_text, rows):
    """An OpenSpiel move string ('a7a6', captures suffixed '*') in our notation (rows mirrored)."""
    t = os_text.rstrip("*")
    k = 1 + next(i for i, ch in enumerate(t[1:]) if ch.isalpha())
    return _flip_square(t[:k], rows) + _flip_square(t[k:], rows)


# OpenSpiel gives each side a single home row below 6 rows and its row labels break above 9 rows,
# so the comparison uses sizes from 6 to 9 rows.
@pytest.mark.parametrize("rows, cols", SIZES + [(7, 12)])
def test_against_open_spiel(rows, cols):
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("breakthrough", {"rows": rows, "columns": cols})
    spec = spec_of(rows, cols)
    wins = [0, 0]
    for seed in range(50):
        rng = random.Random(seed)
        ref = game.new_initial_state()
        s = games.new_state(spec)
        while not ref.is_terminal():
            assert not s.is_game_over(), s.position()
            assert ref.current_player() == s.to_move
            ref_moves = {_to_ours(ref.action_to_string(a), rows): a for a in ref.legal_actions()}
            ours = {s.move_to_str(a): a for a in s.legal_actions_list()}
            assert set(ref_moves) == set(ours), (seed, s.position())
            text = rng.choice(sorted(ours))
            ref.apply_action(ref_moves[text])
            s.push(ours[text])
        assert s.is_game_over(), s.position()
        returns = ref.returns()
        winner = 0 if returns[0] > 0 else 1
        assert returns[winner] == 1.0
        assert s.outcome().winner == winner and s.ply == ref.move_number()
        wins[winner] += 1
    assert min(wins) > 0


# ---- a plain Python reference, for the sizes OpenSpiel does not cover ---------------------------------

def _reference_moves(grid, player):
    """Legal actions of `player` on `grid` (rows top to bottom, -1 empty), straight from the rules."""
    rows, cols = len(grid), len(grid[0])
    forward = -1 if player == 0 else 1
    out = []
    for r in range(rows):
        for c in range(cols):
            if grid[r][c] != player:
                continue
            for d in range(3):
                tr, tc = r + forward, c + d - 1
                if 0 <= tr < rows and 0 <= tc < cols:
                    target = grid[tr][tc]
                    if (target == -1) if d == 1 else (target != player):
                        out.append((r * cols + c) * 3 + d)
    return out


def _reference_winner(grid):
    flat = [v for row in grid for v in row]
    if 0 in grid[0] or 1 not in flat:
        return 0
    if 1 in grid[-1] or 0 not in flat:
        return 1
    return None


@pytest.mark.parametrize("rows, cols", [(4, 2), (5, 5), (8, 8), (9, 9), (12, 6), (4, 16), (16, 16)])
def test_against_a_reference_generator(rows, cols):
    """Covers the one-word (<= 64 squares) and multi-word move generators."""
    spec = spec_of(rows, cols)
    for seed in range(8):
        rng = random.Random(seed)
        s = games.new_state(spec)
        while True:
            board = s.position().split()[0]
            grid = games.boardtext.parse_board(board, rows, cols, "xo", "breakthrough")
            winner = _reference_winner(grid)
            if winner is not None:
                assert s.is_game_over() and s.outcome().winner == winner
                break
            assert not s.is_game_over()
            legal = s.legal_actions_list()
            assert legal == _reference_moves(grid, s.to_move), s.position()
            s.push(rng.choice(legal))


# ---- push / pop, copies, hashes ---------------------------------------------------------------------

@pytest.mark.parametrize("rows, cols", SIZES)
def test_push_pop_round_trip(rows, cols):
    spec = spec_of(rows, cols)
    for seed in range(10):
        rng = random.Random(seed)
        s = games.new_state(spec)
        trail = []
        while not s.is_game_over():
            trail.append((s.position(), s.zobrist_hash, s.legal_actions_list()))
            s.push(rng.choice(trail[-1][2]))
        fresh = games.new_state(spec)
        fresh.set_position(s.position())
        assert fresh.zobrist_hash == s.zobrist_hash and fresh.outcome() == s.outcome()
        for position, h, legal in reversed(trail):
            s.pop()
            assert (s.position(), s.zobrist_hash, s.legal_actions_list()) == (position, h, legal)
        assert s.position() == games.new_state(spec).position()


def test_undo_after_copy_restores_captures(state):
    rng = random.Random(3)
    while not state.is_game_over():
        state.push(rng.choice(state.legal_actions_list()))
    c = state.copy()
    assert c.move_stack == state.move_stack
    while c.move_stack:
        c.pop()
    assert c.position() == games.new_state(SPEC_8).position()
    assert c.zobrist_hash == games.new_state(SPEC_8).zobrist_hash
    assert state.is_game_over()


def test_hash_includes_side_to_move(state):
    a, b = games.new_state(SPEC_8), games.new_state(SPEC_8)
    a.set_position("8/3o4/8/8/8/8/3x4/8 x 4")
    b.set_position("8/3o4/8/8/8/8/3x4/8 o 4")
    assert a.zobrist_hash != b.zobrist_hash


# ---- rules on hand-built positions ------------------------------------------------------------------

def test_capture(state):
    state.set_position("8/o7/8/3o4/4x3/8/8/8 x 10")
    assert sorted(state.move_to_str(a) for a in state.legal_moves) == ["e4d5", "e4e5", "e4f5"]
    state.push("e4xd5")
    assert not state.is_game_over() and state.position() == "8/o7/8/3x4/8/8/8/8 o 11"
    state.pop()
    assert state.position() == "8/o7/8/3o4/4x3/8/8/8 x 10"


def test_no_straight_capture(state):
    state.set_position("8/o7/8/4o3/4x3/8/8/8 x 10")
    assert sorted(state.move_to_str(a) for a in state.legal_moves) == ["e4d5", "e4f5"]
    with pytest.raises(IllegalMoveError, match="'e4e5'"):
        state.push("e4e5")


def test_win_by_reaching_the_last_row(state):
    state.set_position("8/1x5o/8/8/8/8/8/8 x 20")
    state.push("b7b8")
    assert state.is_game_over() and state.result() == "1-0"
    o = state.outcome()
    assert o.winner == 0 and o.score == pytest.approx((177 - 21 + 1) / 177)
    assert state.legal_actions_list() == []
    state.pop()
    assert not state.is_game_over()
    # o wins by reaching row 1, capturing on the way.
    state.set_position("8/8/8/8/8/8/x5o1/5x2 o 31")
    state.push("g2*f1")
    assert state.result() == "0-1" and state.outcome().winner == 1
    assert state.outcome().score == pytest.approx(-(177 - 32 + 1) / 177)


def test_win_by_capturing_all(state):
    state.set_position("8/8/8/3o4/4x3/8/8/8 x 10")
    state.push("e4d5")
    assert state.is_game_over() and state.result() == "1-0" and state.outcome().winner == 0
    assert state.position() == "8/8/8/3x4/8/8/8/8 o 11"


def test_positions_that_are_already_over(state):
    state.set_position("x7/8/8/8/8/8/7o/8 o")            # x stands on its goal row
    assert state.is_game_over() and state.result() == "1-0" and state.ply == 0
    state.set_position("8/8/8/3o4/8/8/8/8 x 3")           # x has no pieces
    assert state.is_game_over() and state.result() == "0-1"
    s = games.new_state("breakthrough(rows=4,cols=2)")
    s.set_position(f"o1/2/2/1x x {s.game.max_plies}")     # ply cap reached: draw
    assert s.is_game_over() and s.result() == "1/2-1/2" and s.outcome().termination == "ply cap"


# ---- encoding and symmetry --------------------------------------------------------------------------

def test_encoding_is_from_the_movers_view(state):
    x = state.encode_planes()
    assert x.shape == (8, 8, 2)
    assert (x[6:, :, 0] == 1).all() and (x[:2, :, 1] == 1).all() and x[2:6].sum() == 0
    state.push("a2a3")                                   # o to move: rows flipped
    y = state.encode_planes()
    assert (y[6:, :, 0] == 1).all() and y[:, :, 0].sum() == 16
    assert y[2, 0, 1] == 1 and y[1, 0, 1] == 0 and y[:, :, 1].sum() == 16


def test_transform_action(state):
    a = state.parse_move("a2b3")
    m = state.transform_action(4, a)
    assert state.move_to_str(m) == "h2g3" and state.transform_action(4, m) == a
    assert state.transform_action(0, a) == a
    with pytest.raises(ValueError):
        state.transform_action(2, a)


# ---- text -------------------------------------------------------------------------------------------

def test_notation(state):
    a = state.parse_move("c2d3")
    assert a == (6 * 8 + 2) * 3 + 2
    assert state.move_to_str(a) == "c2d3"
    for text in ["c2-d3", "c2xd3", "c2*d3", "C2D3", " c2d3 "]:
        assert state.parse_move(text) == a
    assert state.move_to_str(state.parse_move("c2c3")) == "c2c3"
    state.push("c2c3")
    assert state.move_to_str(state.parse_move("b7a6")) == "b7a6"   # o moves down
    with pytest.raises(InvalidMoveError, match="'b7b8'"):
        state.parse_move("b7b8")


@pytest.mark.parametrize("text", [
    "a2a4", "a2c3", "a2b2", "a3a2", "i2i3", "a9a8", "a0a1", "a2", "a2a", "a2+a3", "a2--a3", "hello",
    "a22a3", "", "x",
])
def test_malformed_moves(state, text):
    with pytest.raises(InvalidMoveError) as err:
        state.push(text)
    assert repr(text.strip()) in str(err.value)
    assert state.ply == 0


@pytest.mark.parametrize("text", ["a1a2", "a4a5", "b1c2"])
def test_illegal_moves(state, text):
    with pytest.raises(IllegalMoveError, match=repr(text)):
        state.push(text)


def test_move_text_of_impossible_action(state):
    with pytest.raises(InvalidMoveError):
        state.move_to_str(0)          # from a8 upwards: off the board for x
    with pytest.raises(InvalidMoveError):
        state.move_to_str(state.game.num_actions)


def test_position_text_round_trip():
    for rows, cols in SIZES:
        spec = spec_of(rows, cols)
        rng = random.Random(rows * cols)
        s = games.new_state(spec)
        while not s.is_game_over():
            t = games.new_state(spec)
            t.set_position(s.position())
            assert (t.position(), t.zobrist_hash, t.ply, t.to_move) == (
                s.position(), s.zobrist_hash, s.ply, s.to_move)
            assert t.legal_actions_list() == s.legal_actions_list()
            np.testing.assert_array_equal(t.encode_planes(), s.encode_planes())
            s.push(rng.choice(s.legal_actions_list()))
    s = games.new_state("breakthrough(rows=6,cols=6)")
    assert s.position() == "oooooo/oooooo/6/6/xxxxxx/xxxxxx x 0"
    s.set_position("oooooo/oooooo/6/6/xxxxxx/xxxxxx o")
    assert s.ply == 0 and s.to_move == 1


@pytest.mark.parametrize("text, fragment", [
    ("8/8/8/8/8/8/8 x", "has 7 rows"),
    ("8/8/8/8/8/8/8/7 x", "has 7 squares"),
    ("8/8/8/8/8/8/8/7q x", "unexpected character 'q'"),
    ("8/8/8/8/8/8/8/8 x", "no pieces"),
    ("x7/8/8/8/8/8/8/o7 x", "both players"),
    ("8/o7/8/8/8/8/x7/8 z", "side to move 'z'"),
    ("8/o7/8/8/8/8/x7/8 x 178", "ply 178"),
    ("8/o7/8/8/8/8/x7/8 x -1", "ply '-1'"),
    ("8/o7/8/8/8/8/x7/8", "BOARD SIDE"),
])
def test_bad_positions_leave_state_untouched(state, text, fragment):
    state.push("a2a3")
    before = (state.position(), state.zobrist_hash, state.move_stack)
    with pytest.raises(InvalidPositionError, match=fragment) as err:
        state.set_position(text)
    assert "breakthrough" in str(err.value)
    assert (state.position(), state.zobrist_hash, state.move_stack) == before
    state.pop()


def test_drawing(state):
    text = str(state)
    assert "x to move" in text and text.count("\n") == 10
    state.set_position("8/8/8/3o4/4x3/8/8/8 x 10")
    state.push("e4d5")
    assert "game over: 1-0" in str(state)


@pytest.mark.parametrize("rows, cols, longest", [(4, 2, 12), (5, 2, 21), (4, 3, 18)])
def test_ply_cap_bounds_the_longest_game(rows, cols, longest):
    """Exhaustive search on tiny boards: the longest game never exceeds max_plies (and on 5x2 it
    reaches it, so the bound is tight there); no game ends in a draw."""
    s = games.new_state(spec_of(rows, cols))
    memo = {}

    def walk():
        if s.is_game_over():
            assert s.result() != "1/2-1/2"
            return 0
        key = s.position().rsplit(" ", 1)[0]       # the depth below does not depend on the ply
        if key not in memo:
            best = 0
            for a in s.legal_actions_list():
                s.push(a)
                best = max(best, 1 + walk())
                s.pop()
            memo[key] = best
        return memo[key]

    assert walk() == longest <= s.game.max_plies
