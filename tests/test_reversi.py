"""Reversi (Othello): perft, differential tests against OpenSpiel and a naive reference, text, errors."""
import random

import numpy as np
import pytest

import games
from games._state import perft, random_games
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError
from games.symmetry import map_square

SIZES = (6, 8, 10)


def new(n=8):
    return games.new_state("reversi" if n == 8 else f"reversi(size={n})")


def grid_of(s):
    """The board as a list of rows (row 0 at the top) of -1 / 0 (x) / 1 (o), from the position text."""
    n = s.game.planes_shape[0]
    from games import boardtext as bt
    return bt.parse_board(s.position().split()[0], n, n, "xo", "reversi")


# ---- a naive reference engine (pure Python, square by square) --------------------------------------

DIRS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]


def ref_flips(grid, r, c, p):
    n = len(grid)
    if grid[r][c] != -1:
        return []
    out = []
    for dr, dc in DIRS:
        line = []
        rr, cc = r + dr, c + dc
        while 0 <= rr < n and 0 <= cc < n and grid[rr][cc] == 1 - p:
            line.append((rr, cc))
            rr, cc = rr + dr, cc + dc
        if line and 0 <= rr < n and 0 <= cc < n and grid[rr][cc] == p:
            out.extend(line)
    return out


def ref_moves(grid, p):
    n = len(grid)
    return [r * n + c for r in range(n) for c in range(n) if ref_flips(grid, r, c, p)]


def ref_legal(grid, p):
    """Reference legal actions: placements, else [pass] if the opponent can move, else [] (game over)."""
    n = len(grid)
    m = ref_moves(grid, p)
    if m:
        return m
    return [n * n] if ref_moves(grid, 1 - p) else []


def ref_apply(grid, p, a):
    n = len(grid)
    if a == n * n:
        return
    r, c = divmod(a, n)
    for rr, cc in ref_flips(grid, r, c, p):
        grid[rr][cc] = p
    grid[r][c] = p


# ---- perft -------------------------------------------------------------------------------------------

def test_perft_8x8():
    # Othello perft from the start, passes counted as plies (e.g. Aart Bik's and the
    # chessprogramming wiki's Othello perft tables): d1..d8.
    s = new(8)
    assert [perft(s, d) for d in range(1, 9)] == [4, 12, 56, 244, 1396, 8200, 55092, 390216]


def _games_ending_at(s, depth):
    """Number of move sequences of length `depth` that end the game exactly there."""
    if s.is_game_over():
        return int(depth == 0)
    if depth == 0:
        return 0
    total = 0
    for a in s.legal_actions_list():
        s.push(a)
        total += _games_ending_at(s, depth - 1)
        s.pop()
    return total


def test_perft_10_and_the_published_convention():
    # The published d10 = 24,571,284 (docs/GAMES.md) keeps generating a pass in a position where
    # neither side can move (the game ends only after two passes). Here such a position is terminal
    # with no legal action, so perft(10) is smaller by the number of games that end at ply 9
    # (the shortest possible Othello games).
    s = new(8)
    ended_at_9 = _games_ending_at(s, 9)
    assert ended_at_9 == 228
    assert perft(s, 10) == 24571284 - ended_at_9


def _ref_perft(grid, p, depth):
    legal = ref_legal(grid, p)
    if depth == 1:
        return len(legal)
    total = 0
    for a in legal:
        g = [row[:] for row in grid]
        ref_apply(g, p, a)
        total += _ref_perft(g, 1 - p, depth - 1)
    return total


@pytest.mark.parametrize("n", [6, 10])
def test_perft_other_sizes_match_reference(n):
    s = new(n)
    g = grid_of(s)
    assert [perft(s, d) for d in range(1, 5)] == [_ref_perft(g, 0, d) for d in range(1, 5)]


# ---- the start position, facts, symmetries ---------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
def test_start_position_and_facts(n):
    s = new(n)
    info = s.game
    assert info.players == ("x", "o")
    assert info.num_actions == n * n + 1 and info.max_plies == 2 * (n * n - 4)
    assert info.planes_shape == (n, n, 2)
    assert len(s.legal_actions_list()) == 4 and s.to_move == 0
    g = grid_of(s)
    a, b = n // 2 - 1, n // 2
    # OpenSpiel's orientation: o on the top-left and bottom-right centre squares (row 0 at the top).
    assert (g[a][a], g[a][b], g[b][a], g[b][b]) == (1, 0, 0, 1)
    assert sum(v >= 0 for row in g for v in row) == 4
    # The symmetries listed are exactly the dihedral maps that fix the start position.
    fixing = [k for k in range(8)
              if all(g[r][c] == g[map_square(k, r, c, n, n)[0]][map_square(k, r, c, n, n)[1]]
                     for r in range(n) for c in range(n))]
    assert tuple(fixing) == info.symmetries == (0, 2, 6, 7)
    x = s.encode_planes()
    assert x[:, :, 0].sum() == 2 and x[:, :, 1].sum() == 2 and x[a, b, 0] == 1 and x[a, a, 1] == 1


def test_start_8x8_text():
    s = new(8)
    assert s.position() == "8/8/8/3ox3/3xo3/8/8/8 x"
    assert [s.move_to_str(a) for a in s.legal_actions_list()] == ["d6", "c5", "f4", "e3"]
    assert s.legal_actions_list() == [19, 26, 37, 44]
    assert "x to move (x 2, o 2)" in str(s)


# ---- differential test against OpenSpiel ----------------------------------------------------------

def test_against_openspiel_random_games():
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("othello")
    passes = 0
    for seed in range(50):
        rng = random.Random(seed)
        ours, theirs = new(8), game.new_initial_state()
        while True:
            assert ours.is_game_over() == theirs.is_terminal()
            if theirs.is_terminal():
                break
            legal = ours.legal_actions_list()
            # Same ids: row 0 at the top, column 0 on the left, pass = 64.
            assert legal == sorted(theirs.legal_actions()), (seed, ours.position())
            assert ours.to_move == theirs.current_player()
            a = rng.choice(legal)
            passes += a == 64
            ours.push(a)
            theirs.apply_action(a)
        ret = theirs.returns()
        assert ours.outcome().binary == int(np.sign(ret[0])) == -int(np.sign(ret[1]))
        nx, no = ours.disc_counts()
        assert ours.outcome().binary == int(np.sign(nx - no))
    assert passes > 0, "no pass met: the test does not cover passes"


# ---- differential test against the naive reference on every size -----------------------------------

@pytest.mark.parametrize("n", SIZES)
def test_against_reference_random_games(n):
    for seed in range(8):
        rng = random.Random(1000 * n + seed)
        s = new(n)
        grid = grid_of(s)
        p = 0
        while True:
            legal = ref_legal(grid, p)
            assert s.legal_actions_list() == legal
            assert s.is_game_over() == (not legal) and s.to_move == p
            if not legal:
                break
            a = rng.choice(legal)
            s.push(a)
            ref_apply(grid, p, a)
            p = 1 - p
            assert grid_of(s) == grid
        nx = sum(v == 0 for row in grid for v in row)
        no = sum(v == 1 for row in grid for v in row)
        o = s.outcome()
        assert o.binary == int(np.sign(nx - no))
        if nx != no:
            margin = abs(nx - no) / (n * n)
            assert o.score == pytest.approx(o.binary * (0.05 + 0.95 * (1 + margin) / 2))


# ---- push / pop, copies, hashes -------------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
def test_push_pop_round_trips(n):
    for seed in range(5):
        rng = random.Random(seed)
        s = new(n)
        trail = []
        while not s.is_game_over():
            trail.append((s.position(), s.zobrist_hash, s.to_move, s.ply, s.legal_actions_list()))
            s.push(rng.choice(s.legal_actions_list()))
        for i, (pos, h, player, ply, legal) in enumerate(reversed(trail)):
            s.pop()
            assert (s.position(), s.zobrist_hash, s.to_move, s.ply) == (pos, h, player, ply)
            assert s.legal_actions_list() == legal and not s.is_game_over()
        assert s.position() == new(n).position()


def test_undo_after_copy():
    rng = random.Random(3)
    s = new(8)
    positions = []
    for _ in range(30):
        positions.append((s.position(), s.zobrist_hash))
        s.push(rng.choice(s.legal_actions_list()))
    c = s.copy()
    del s
    for pos, h in reversed(positions):
        c.pop()
        assert (c.position(), c.zobrist_hash) == (pos, h)


def test_hash_includes_side_to_move():
    s, t = new(8), new(8)
    t.set_position("8/8/8/3ox3/3xo3/8/8/8 o")
    assert s.zobrist_hash != t.zobrist_hash
    assert s.legal_actions_list() != t.legal_actions_list()


# ---- passes and the end of the game ---------------------------------------------------------------

FORCED_PASS = "ox6/8/8/3oo3/3oo3/8/8/8 x"     # x (b8) has no flank; o can take b8 from c8


def test_forced_pass():
    s = new(8)
    s.set_position(FORCED_PASS)
    assert not s.is_game_over()
    assert [s.move_to_str(a) for a in s.legal_actions_list()] == ["pass"]
    assert "must pass" in str(s)
    with pytest.raises(IllegalMoveError):
        s.push("c8")
    h = s.zobrist_hash
    s.push("PASS")
    assert s.to_move == 1 and s.ply == 3 and s.zobrist_hash != h
    assert [s.move_to_str(a) for a in s.legal_actions_list()] == ["c8"]
    assert s.position() == "ox6/8/8/3oo3/3oo3/8/8/8 o 3"
    s.push("c8")                                  # o flips b8: x has no disc left
    assert s.is_game_over() and s.result() == "0-1"
    assert s.disc_counts() == (0, 7)
    assert s.outcome().score == pytest.approx(-(0.05 + 0.95 * (1 + 7 / 64) / 2))
    s.pop()
    s.pop()
    assert s.position() == FORCED_PASS and s.zobrist_hash == h


def test_blocked_position_is_terminal():
    s = new(8)
    s.set_position("x7/8/8/3oo3/3oo3/8/8/8 x")    # neither side can flank anything
    assert s.is_game_over() and s.legal_actions_list() == [] and s.result() == "0-1"
    assert "game over: 0-1" in str(s)
    s.set_position("xxxx4/8/8/3oo3/3oo3/8/8/8 x")   # blocked with 4 discs each: a draw
    assert s.is_game_over() and s.result() == "1/2-1/2" and s.outcome().score == 0.0


@pytest.mark.parametrize("n", SIZES)
def test_random_games_finish(n):
    s = new(n)
    results, lengths = random_games(s, 300, 11)
    assert set(np.unique(results)) <= {-1, 0, 1} and len(set(results.tolist())) >= 2
    assert lengths.min() > 0 and lengths.max() <= s.game.max_plies
    assert lengths.max() >= n * n - 4 - 10           # most games fill (nearly) the whole board
    assert s.ply == 0 and s.position() == new(n).position()


def test_full_board_draw_and_win():
    s = new(6)
    s.set_position("xxxxxx/xxxxxx/xxxxxx/oooooo/oooooo/oooooo o")
    assert s.is_game_over() and s.result() == "1/2-1/2" and s.outcome().score == 0.0
    assert s.ply == 32
    s.set_position("xxxxxx/xxxxxx/xxxxxx/xooooo/oooooo/oooooo o")
    assert s.is_game_over() and s.result() == "1-0"
    assert s.outcome().score == pytest.approx(0.05 + 0.95 * (1 + 2 / 36) / 2)


# ---- text ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
def test_position_text_round_trip(n):
    rng = random.Random(n)
    s = new(n)
    while not s.is_game_over():
        s.push(rng.choice(s.legal_actions_list()))
        t = new(n)
        t.set_position(s.position())
        assert (t.position(), t.zobrist_hash, t.to_move, t.ply) == (
            s.position(), s.zobrist_hash, s.to_move, s.ply)
        assert t.legal_actions_list() == s.legal_actions_list()
        assert t.is_game_over() == s.is_game_over() and t.outcome() == s.outcome()
        np.testing.assert_array_equal(t.encode_planes(), s.encode_planes())


def test_notation():
    s = new(8)
    assert s.move_to_str(0) == "a8" and s.move_to_str(63) == "h1" and s.move_to_str(64) == "pass"
    assert s.parse_move("D6") == 19 and s.parse_move(" e3 ") == 44
    t = new(10)
    assert t.move_to_str(0) == "a10" and t.move_to_str(99) == "j1" and t.move_to_str(100) == "pass"
    with pytest.raises(InvalidMoveError, match="101"):
        t.move_to_str(101)


@pytest.mark.parametrize("text", ["i1", "a9", "a0", "hello", "", "pas", "pass1", "d"])
def test_malformed_moves(text):
    s = new(8)
    with pytest.raises(InvalidMoveError) as err:
        s.parse_move(text)
    assert repr(text.strip()) in str(err.value)


def test_illegal_moves():
    s = new(8)
    with pytest.raises(IllegalMoveError, match="'a1'"):
        s.push("a1")
    with pytest.raises(IllegalMoveError, match="'pass'"):
        s.push("pass")
    with pytest.raises(IllegalMoveError):
        s.push(64)
    assert s.move_stack == [] and s.position() == new(8).position()


@pytest.mark.parametrize("text, fragment", [
    ("8/8/8/3ox3/3xo3/8/8 x", "has 7 rows"),
    ("8/8/8/3ox3/3xo3/8/8/8", "must be 'BOARD SIDE"),
    ("8/8/8/3oq3/3xo3/8/8/8 x", "unexpected character 'q'"),
    ("8/8/8/3ox4/3xo3/8/8/8 x", "has more than 8 squares"),
    ("8/8/8/3ox3/3xo3/8/8/8 b", "side to move 'b'"),
    ("8/8/8/3ox3/3x4/8/8/8 x", "e4"),                 # an empty centre square
    ("8/8/8/3ox3/3xo3/8/8/8 x 2", "ply 2"),           # 4 discs: only ply 0
    ("x7/8/8/3ox3/3xo3/8/8/8 x 3", "ply 3"),          # 5 discs: ply 1 or 2
    ("x7/8/8/3ox3/3xo3/8/8/8 x 1", "o to move"),      # ply 1 has o to move
    ("8/8/8/3ox3/3xo3/8/8/8 x -1", "ply '-1'"),
])
def test_bad_positions_leave_state_untouched(text, fragment):
    s = new(8)
    s.push("d6")
    before = (s.position(), s.zobrist_hash, s.move_stack, s.ply)
    with pytest.raises(InvalidPositionError, match=fragment) as err:
        s.set_position(text)
    assert "reversi" in str(err.value)
    assert (s.position(), s.zobrist_hash, s.move_stack, s.ply) == before
    s.pop()
    assert s.position() == new(8).position()


def test_transform_action():
    s = new(8)
    assert s.transform_action(2, 64) == 64
    assert s.transform_action(2, 0) == 63 and s.transform_action(6, 1) == 8
    for k in s.game.symmetries:
        assert sorted(s.transform_action(k, a) for a in s.legal_actions_list()) == s.legal_actions_list()
