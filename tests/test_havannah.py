"""Havannah: winning patterns on hand-built boards, the swap rule, text formats, a flood-fill
reference for the win conditions, and a differential test against OpenSpiel."""
import math
import random
from collections import deque

import numpy as np
import pytest

import games
from games._state import perft
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError

LETTERS = "abcdefghijklmnopqrs"
NB = [(1, 0), (1, 1), (0, 1), (-1, 0), (-1, -1), (0, -1)]


def spec(base, swap=True):
    return f"havannah(base={base},swap={'true' if swap else 'false'})"


def name(x, y):
    return f"{LETTERS[x]}{y + 1}"


def on_board(base, x, y):
    d = 2 * base - 1
    return 0 <= x < d and 0 <= y < d and abs(x - y) <= base - 1


def position_text(base, white, black, side, swapped=False):
    """The position text of a board with stones on the cells named in `white` and `black`."""
    d = 2 * base - 1
    stones = {}
    for names, p in ((white, "w"), (black, "b")):
        for n in names:
            stones[(LETTERS.index(n[0]), int(n[1:]) - 1)] = p
    rows = []
    for y in range(d):
        row = "".join(stones.get((x, y), ".") for x in range(d) if on_board(base, x, y))
        rows.append(row)
    return f"{'/'.join(rows)} {side} {'swapped' if swapped else '-'}"


def board(base, white, black, side=None, swap=False):
    s = games.new_state(spec(base, swap))
    if side is None:
        side = "w" if len(white) == len(black) else "b"
    s.set_position(position_text(base, white, black, side))
    return s


def ring_cells(x, y, r=1):
    """The cells at hex distance r from (x, y)."""
    return [(x + dx, y + dy) for dx in range(-r, r + 1) for dy in range(-r, r + 1)
            if max(abs(dx), abs(dy), abs(dx - dy)) == r]


# Far-away black stones that never form anything, to keep the stone counts legal (base 5).
FILLER5 = ["b1", "d1", "a3", "i8", "g9", "c7", "h5"]


def completes(base, white, last, black=None):
    """Play `white` (all but `last`) against filler, then `last`: the state after the last stone."""
    black = (FILLER5 if black is None else black)[:len(white)]
    s = board(base, white, black, "w")
    assert not s.is_game_over()
    s.push(last)
    return s


# ---- facts and counts ---------------------------------------------------------------------------

def test_facts():
    for base in (4, 5, 8, 10):
        n = 3 * base * (base - 1) + 1
        d = 2 * base - 1
        info = games.load(spec(base))
        assert info.players == ("white", "black")
        assert info.num_actions == d * d + 1 and info.max_plies == n + 1 and info.max_legal == n + 1
        assert info.planes_shape == (d, d, 4) and info.symmetries == (0, 2, 6, 7)
        info = games.load(spec(base, swap=False))
        assert info.num_actions == d * d and info.max_plies == n and info.planes_shape == (d, d, 3)
    assert games.load("havannah").params == {"base": 8, "swap": True}
    assert len(games.new_state("havannah").legal_actions_list()) == 169


def test_perft():
    # no structure can be completed in 3 plies: perft is the count of placements (plus the swap)
    assert [perft(games.new_state(spec(4, False)), d) for d in (1, 2, 3)] == [37, 37 * 36, 37 * 36 * 35]
    assert [perft(games.new_state(spec(4)), d) for d in (1, 2, 3)] == [37, 37 * 37, 37 * 36 * 35 + 37 * 36]
    assert perft(games.new_state("havannah"), 2) == 169 * 169


# ---- winning patterns ----------------------------------------------------------------------------

@pytest.mark.parametrize("last", range(6))
def test_ring_around_one_empty_cell(last):
    cells = [name(*c) for c in ring_cells(4, 4)]
    s = completes(5, cells[:last] + cells[last + 1:], cells[last])
    assert s.is_game_over() and s.result() == "1-0" and s.outcome().termination == "ring"


def test_ring_around_an_opponent_stone_and_an_own_stone():
    cells = [name(*c) for c in ring_cells(4, 4)]
    # black holds the enclosed cell e5
    s = completes(5, cells[:5], cells[5], black=["e5"] + FILLER5)
    assert s.outcome().termination == "ring" and s.result() == "1-0"
    # white holds it: a filled ring still counts
    s = completes(5, ["e5"] + cells[:5], cells[5])
    assert s.outcome().termination == "ring"


def test_larger_rings():
    # eight stones around two cells
    around_two = set(ring_cells(4, 4)) | set(ring_cells(5, 4))
    around_two -= {(4, 4), (5, 4)}
    cells = [name(*c) for c in sorted(around_two)]
    assert len(cells) == 8
    black = FILLER5 + ["a2"]
    s = completes(5, cells[:7], cells[7], black=black)
    assert s.outcome().termination == "ring"
    # twelve stones around seven cells holding stones of both colours and an empty cell
    big = [name(*c) for c in ring_cells(4, 4, 2)]
    inside = [name(*c) for c in ring_cells(4, 4)]
    white = big[:11] + inside[:3]
    blk = inside[3:5] + ["b1", "d1", "a3", "i8", "g9", "a2", "b2", "i6", "i7", "b3", "c1", "f9"]
    s = completes(5, white, big[11], black=blk)
    assert s.outcome().termination == "ring" and s.result() == "1-0"


def test_loops_that_enclose_nothing_are_not_rings():
    # a closed strip of stones (every cell of it on the loop) encloses no cell: three stones in a
    # triangle, four in a rhombus, a 2x3 parallelogram
    s = completes(5, ["e5", "f5"], "f6")
    assert not s.is_game_over()
    s = completes(5, ["e5", "f5", "f6"], "g6")
    assert not s.is_game_over()
    s = completes(5, ["d5", "e5", "f5", "d4", "e4"], "f4")
    assert not s.is_game_over()


def test_bridge():
    s = completes(4, ["a1", "b1", "c1"], "d1", black=["a4", "c5", "e6"])
    assert s.outcome().termination == "bridge" and s.result() == "1-0"
    # a bridge between opposite corners through the centre
    line = [name(i, i) for i in range(7)]          # a1 .. g7, corners at both ends
    s = completes(4, line[:6], line[6], black=["b1", "c1", "a2", "a3", "e2", "f3"])
    assert s.outcome().termination == "bridge"


def test_fork():
    # a2 (edge x=0), b1 (edge y=0), e2 (edge x-y=3)
    white = ["a2", "b2", "b1", "c2", "d2"]
    s = completes(4, white, "e2", black=["a4", "c5", "e6", "d7", "g7"])
    assert s.outcome().termination == "fork" and s.result() == "1-0"


def test_two_edges_and_corners_are_not_a_fork():
    # edges y=0 and x=0 and the corner g4: no fork (corners belong to no edge), no bridge
    white = ["b1", "b2", "a2", "c2", "d2", "e3", "f4"]
    black = ["a4", "c5", "e6", "d7", "g7", "c4", "b4"]
    s = completes(4, white, "g4", black=black)
    assert not s.is_game_over()
    # the corner a1 joins edges y=0 and x=0 to itself: still no fork, no bridge
    s = completes(4, ["b1"], "a1", black=["d4"])
    assert not s.is_game_over()
    s = completes(4, ["b1", "a1"], "a2", black=["d4", "d5"])
    assert not s.is_game_over()
    # touching the third edge (e2) makes the fork
    s.push("c5")
    assert not s.is_game_over()
    for cell in ["b2", "c2", "d2"]:
        s.push(cell)
        s.push(LETTERS[{"b2": 4, "c2": 5, "d2": 6}[cell]] + "7")
    s.push("e2")
    assert s.outcome().termination == "fork"


def test_black_wins_and_multiple_structures():
    # black completes a bridge a1-d1
    s = board(4, ["d4", "e5", "c3", "g7"], ["a1", "b1", "c1"], "b")
    s.push("d1")
    assert s.result() == "0-1" and s.outcome().winner == 1
    # one stone completing a bridge and a fork at once
    # (b1 c1 d1 e2: edges y=0 and x-y=3, corner d1; a2 a3: edge x=0; a1 joins them)
    white = ["b1", "c1", "d1", "e2", "a2", "a3"]
    s = completes(4, white, "a1", black=["d4", "c4", "e5", "f6", "g7", "d5"])
    assert s.outcome().termination == "bridge and fork"


def test_full_board_is_a_draw():
    # found by seeded random play: white's last stone completes nothing
    s = games.new_state(spec(4, False))
    s.set_position("bwww/wbbwb/bwbbbb/bwb1bww/wwbwww/bwbwb/wbwb w -")
    assert s.legal_actions_list() == [s.parse_move("d4")]
    s.push("d4")
    assert s.is_game_over() and s.result() == "1/2-1/2" and s.outcome().score == 0.0
    assert s.outcome().termination == "full board"


def test_multiplicative_depth_score():
    s = completes(4, ["a1", "b1", "c1"], "d1", black=["a4", "c5", "e6"])
    P = s.game.max_plies
    assert s.ply == 7 and s.outcome().score == pytest.approx(P ** (-7 / P))


# ---- swap -----------------------------------------------------------------------------------------

def test_swap():
    s = games.new_state(spec(4))
    swap_id = s.game.num_actions - 1
    assert swap_id == 49 and swap_id not in s.legal_actions_list()
    s.push("d4")
    legal = s.legal_actions_list()
    assert legal[-1] == swap_id and len(legal) == 37 and s.move_to_str(swap_id) == "swap"
    assert s.encode_planes()[..., 3].all()
    h = s.zobrist_hash
    s.push("SWAP")
    # the stone is black's now, white moves, the ply counts the swap
    assert s.to_move == 0 and s.ply == 2 and s.position() == "4/5/6/3b3/6/5/4 w swapped"
    assert swap_id not in s.legal_actions_list() and len(s.legal_actions_list()) == 36
    x = s.encode_planes()
    assert x[3, 3, 1] == 1 and x[3, 3, 0] == 0 and not x[..., 3].any()
    t = games.new_state(spec(4))
    t.set_position(s.position())
    assert t.zobrist_hash == s.zobrist_hash and t.ply == 2 and t.to_move == 0
    s.pop()
    assert s.position() == "4/5/6/3w3/6/5/4 b -" and s.zobrist_hash == h
    # black may swap only on its first move
    s.push("e5")
    s.push("c3")
    assert swap_id not in s.legal_actions_list()
    with pytest.raises(IllegalMoveError):
        s.push("swap")
    # without the swap rule there is no swap
    s = games.new_state(spec(4, False))
    s.push("d4")
    assert len(s.legal_actions_list()) == 36
    with pytest.raises(InvalidMoveError):
        s.push("swap")


def test_swapped_game_is_won_by_the_swapper():
    s = games.new_state(spec(4))
    for m in ["a1", "swap", "d4", "b1", "e5", "c1", "g7", "d1"]:
        s.push(m)
    assert s.outcome().termination == "bridge" and s.result() == "0-1" and s.ply == 8


# ---- text ---------------------------------------------------------------------------------------

def test_notation():
    s = games.new_state(spec(5))
    for a in s.legal_actions_list():
        assert s.parse_move(s.move_to_str(a)) == a
    assert s.move_to_str(0) == "a1" and s.parse_move("E5") == 4 * 9 + 4
    assert s.move_to_str(s.game.num_actions - 2) == "i9"
    for bad in ["j1", "a0", "a10", "f1", "a6", "zz", "swap swap", "1a"]:
        with pytest.raises(InvalidMoveError) as err:
            s.push(bad)
        assert repr(bad) in str(err.value)
    with pytest.raises(InvalidMoveError):
        s.move_to_str(5)           # (5, 0) is off the board
    with pytest.raises(IllegalMoveError):
        s.push("swap")             # the swap is only legal at ply 1


def test_position_round_trip_and_format():
    s = games.new_state(spec(4))
    assert s.position() == "4/5/6/7/6/5/4 w -"
    rng = random.Random(3)
    while not s.is_game_over():
        s.push(rng.choice(s.legal_actions_list()))
        t = games.new_state(spec(4))
        t.set_position(s.position())
        assert (t.position(), t.zobrist_hash, t.ply, t.to_move) == (s.position(), s.zobrist_hash, s.ply,
                                                                    s.to_move)
        assert t.outcome() == s.outcome()
    # '.' cells and a missing flag are accepted
    t = games.new_state(spec(4))
    t.set_position("...w/5/6/7/6/5/4 b")
    assert t.position() == "3w/5/6/7/6/5/4 b -" and t.ply == 1


@pytest.mark.parametrize("text, fragment", [
    ("4/5/6/7/6/5 w -", "rows"),
    ("4/5/6/7/6/5/5 w -", "row 7"),
    ("4/5/6/8/6/5/4 w -", "row 4"),
    ("4/5/6/3x3/6/5/4 w -", "'x'"),
    ("4/5/6/7/6/5/4 x -", "side to move"),
    ("4/5/6/7/6/5/4 w s", "flag"),
    ("4/5/6/3w3/6/5/4 w -", "unreachable"),
    ("4/5/6/3b3/6/5/4 b -", "unreachable"),
    ("4/5/6/3w3/6/5/4 b swapped", "unreachable"),
    ("4/5/6/7/6/5/4 w swapped", "unreachable"),
    ("4/5/6/7/6/5/4 w - 3", "ROWS SIDE"),
    ("wwww/5/6/3bbbb/6/5/4 w -", "already has a bridge"),
])
def test_bad_positions(text, fragment):
    s = games.new_state(spec(4))
    s.push("a1")
    before = s.position(), s.move_stack
    with pytest.raises(InvalidPositionError) as err:
        s.set_position(text)
    assert str(err.value).startswith("havannah") and fragment in str(err.value), str(err.value)
    assert (s.position(), s.move_stack) == before
    with pytest.raises(InvalidPositionError, match="swap rule is off"):
        games.new_state(spec(4, False)).set_position("4/5/6/3b3/6/5/4 w swapped")


def test_won_position_from_text_is_terminal():
    s = games.new_state(spec(4))
    s.set_position("wwww/5/6/7/6/5/bbb1 b -")    # white's bridge, black to move
    assert s.is_game_over() and s.result() == "1-0" and s.outcome().termination == "bridge"


def test_drawing():
    s = games.new_state(spec(4))
    s.push("d4")
    text = str(s)
    assert "a b c d" in text and "swap available" in text and " w " in text


# ---- encoding ---------------------------------------------------------------------------------------

def test_encoding():
    s = games.new_state(spec(5, False))
    x = s.encode_planes()
    assert x.shape == (9, 9, 3) and x[..., 2].sum() == 61 and x[..., :2].sum() == 0
    assert x[0, 5, 2] == 0 and x[0, 4, 2] == 1          # (x=5, y=0) is off the board
    s.push("c2")                                         # x = 2, y = 1
    x = s.encode_planes()
    assert x[1, 2, 1] == 1 and x[1, 2, 0] == 0           # black to move: white's stone is the opponent's
    s.push("e5")
    x = s.encode_planes()
    assert x[1, 2, 0] == 1 and x[4, 4, 1] == 1


def test_symmetries_map_corners_and_edges():
    s = games.new_state(spec(5))
    corners = {name(*c) for c in [(0, 0), (4, 0), (8, 4), (8, 8), (4, 8), (0, 4)]}
    for sym in (2, 6, 7):
        image = {s.move_to_str(s.transform_action(sym, s.parse_move(c))) for c in corners}
        assert image == corners
        assert s.transform_action(sym, s.game.num_actions - 1) == s.game.num_actions - 1
    with pytest.raises(ValueError):
        s.transform_action(1, 0)


# ---- a flood-fill reference for the winning conditions --------------------------------------------------

def reference_structures(base, stones, player):
    """The structures of `player` on `stones` ({(x, y): player}), straight from the definitions:
    a ring is a cell z that cannot reach the outside of the board without crossing the player's
    stones other than z; a bridge / fork is a group touching 2 corners / 3 edges."""
    d = 2 * base - 1
    cells = [(x, y) for y in range(d) for x in range(d) if on_board(base, x, y)]
    own = {c for c, p in stones.items() if p == player}
    corners = [(0, 0), (base - 1, 0), (d - 1, base - 1), (d - 1, d - 1), (base - 1, d - 1), (0, base - 1)]

    def edge(x, y):
        if (x, y) in corners:
            return None
        for k, on in enumerate((y == 0, x - y == base - 1, x == d - 1, y == d - 1, y - x == base - 1,
                                x == 0)):
            if on:
                return k
        return None

    found = set()
    seen = set()
    for c in own:
        if c in seen:
            continue
        group, todo = {c}, [c]
        while todo:
            x, y = todo.pop()
            for dx, dy in NB:
                n = (x + dx, y + dy)
                if n in own and n not in group:
                    group.add(n)
                    todo.append(n)
        seen |= group
        if sum(1 for g in group if g in corners) >= 2:
            found.add("bridge")
        if len({edge(*g) for g in group} - {None}) >= 3:
            found.add("fork")
    for z in cells:
        reached, todo, escaped = {z}, deque([z]), False
        while todo and not escaped:
            x, y = todo.popleft()
            for dx, dy in NB:
                n = (x + dx, y + dy)
                if not on_board(base, *n):
                    escaped = True
                    break
                if n not in own and n not in reached:
                    reached.add(n)
                    todo.append(n)
        if not escaped:
            found.add("ring")
            break
    return found


def _stones(s, base):
    d = 2 * base - 1
    grid = s.encode_planes()
    p = s.to_move
    return {(x, y): (p if grid[y, x, 0] else 1 - p) for y in range(d) for x in range(d)
            if grid[y, x, 0] or grid[y, x, 1]}


@pytest.mark.parametrize("base", [4, 5, 6])
def test_win_detection_matches_the_flood_fill_reference(base):
    kinds_seen = set()
    for seed in range(200):
        rng = random.Random(seed)
        s = games.new_state(spec(base, False))
        while not s.is_game_over():
            s.push(rng.choice(s.legal_actions_list()))
        last = s.pop()
        before = _stones(s, base)
        assert not reference_structures(base, before, 0) and not reference_structures(base, before, 1)
        mover = s.to_move
        s.push(last)
        after = _stones(s, base)
        found = reference_structures(base, after, mover)
        if s.result() == "1/2-1/2":
            assert not found
            continue
        assert s.outcome().winner == mover
        assert set(s.outcome().termination.split(" and ")) == found, (seed, s.position())
        kinds_seen |= found
    assert kinds_seen == {"ring", "bridge", "fork"}


# ---- differential test against OpenSpiel ---------------------------------------------------------------

@pytest.mark.parametrize("base", [4, 5, 6])
@pytest.mark.parametrize("swap", [False, True])
def test_against_open_spiel(base, swap):
    """OpenSpiel's havannah (board_size = base, the same axial coordinates and action ids; its swap
    is played by choosing the occupied cell, ours is the extra action ``swap``): legal actions at
    every ply and the winner of 50 seeded random games per size."""
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("havannah", {"board_size": base, "swap": swap})
    outcomes = {}
    for seed in range(50):
        rng = random.Random(seed)
        ref = game.new_initial_state()
        s = games.new_state(spec(base, swap))
        swap_id = s.game.num_actions - 1
        while not ref.is_terminal():
            assert not s.is_game_over() and ref.current_player() == s.to_move
            ours = s.legal_actions_list()
            if swap and s.ply == 1:
                first = s.move_stack[0]
                assert ours[-1] == swap_id
                ours = sorted(ours[:-1] + [first])
            assert ref.legal_actions() == ours, (seed, s.position())
            a = rng.choice(ours)
            ref.apply_action(a)
            s.push(swap_id if (swap and s.ply == 1 and a == s.move_stack[0]) else a)
        assert s.is_game_over() and s.ply == len(ref.history())
        returns = ref.returns()
        winner = None if returns[0] == 0 else (0 if returns[0] > 0 else 1)
        assert s.outcome().winner == winner, (seed, s.position())
        outcomes[winner] = outcomes.get(winner, 0) + 1
    assert outcomes.get(0) and outcomes.get(1)
