"""Lines of Action (Olympiad rules), 8x8 and 6x6: counts, OpenSpiel, a plain-Python reference, the
rules on hand-built positions, text."""
import random
from collections import Counter

import numpy as np
import pytest

import games
from games import boardtext as bt
from games._state import perft
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError

SPEC = "lines_of_action"
SPEC_6 = "lines_of_action(board=6)"
SIZES = [(SPEC, 8), (SPEC_6, 6)]


def new(text=None, spec=SPEC):
    s = games.new_state(spec)
    if text is not None:
        s.set_position(text)
    return s


def pos(*rows, side="x", ply=0):
    """A position text from rows drawn top to bottom with '.', 'x', 'o'."""
    return "/".join(rows) + f" {side} {ply}"


def moves(s):
    return sorted(s.move_to_str(a) for a in s.legal_actions_list())


# ---- a plain-Python reference, straight from the rules --------------------------------------------

_DIRS = ((-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1))


def reference_moves(grid, side):
    n = len(grid)
    out = set()
    for r in range(n):
        for c in range(n):
            if grid[r][c] != side:
                continue
            for dr, dc in _DIRS:
                count = 0
                for sign in (1, -1):
                    rr, cc = r + sign * dr, c + sign * dc
                    while 0 <= rr < n and 0 <= cc < n:
                        count += grid[rr][cc] >= 0
                        rr, cc = rr + sign * dr, cc + sign * dc
                count += 1
                tr, tc = r + count * dr, c + count * dc
                if not (0 <= tr < n and 0 <= tc < n) or grid[tr][tc] == side:
                    continue
                if any(grid[r + k * dr][c + k * dc] == 1 - side for k in range(1, count)):
                    continue
                sep = "x" if grid[tr][tc] == 1 - side else "-"
                out.add(bt.square_name(r, c, n) + sep + bt.square_name(tr, tc, n))
    return out


def connected(grid, side):
    n = len(grid)
    cells = {(r, c) for r in range(n) for c in range(n) if grid[r][c] == side}
    if len(cells) <= 1:
        return True
    start = next(iter(cells))
    seen, todo = {start}, [start]
    while todo:
        r, c = todo.pop()
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                nb = (r + dr, c + dc)
                if nb in cells and nb not in seen:
                    seen.add(nb)
                    todo.append(nb)
    return seen == cells


def grid_of(s):
    n = s.game.params["board"]
    return bt.parse_board(s.position().split()[0], n, n, "xo", "lines_of_action")


# ---- counts ---------------------------------------------------------------------------------------

def test_perft_start():
    # Published Lines of Action 8x8 perft without repetition handling (docs/GAMES.md): 36, 1244,
    # 44952, 1563208 (d5 = 55963132 is measured by the benchmark).
    s = new()
    assert [perft(s, d) for d in range(1, 5)] == [36, 1244, 44952, 1563208]


def test_perft_start_6x6():
    # No published table: counted by this engine; depths 1-3 agree with the reference generator.
    s = new(spec=SPEC_6)
    assert [perft(s, d) for d in range(1, 5)] == [24, 524, 11440, 234560]

    def ref_perft(grid, side, depth):
        total = 0
        for m in reference_moves(grid, side):
            if depth == 1:
                total += 1
                continue
            f, t = m[:2], m[3:]
            (fr, fc), (tr, tc) = bt.parse_square(f, 6, 6), bt.parse_square(t, 6, 6)
            g = [row[:] for row in grid]
            g[fr][fc], g[tr][tc] = -1, side
            total += ref_perft(g, 1 - side, depth - 1)
        return total

    assert [ref_perft(grid_of(s), 0, d) for d in range(1, 4)] == [24, 524, 11440]


def test_facts():
    for spec, n in SIZES:
        info = games.load(spec)
        assert info.num_actions == n * n * 8 + 1 and info.max_legal == 8 * 2 * (n - 2)
        assert info.max_plies == 500 and info.planes_shape == (n, n, 2)
        assert info.symmetries == (0, 2, 4, 5) and info.players == ("x", "o")
        assert info.extra == {"history_dependent": True}
        assert info.facts()["terminal_evaluation"] == "additive depth"


# ---- random games against the reference ---------------------------------------------------------

@pytest.mark.parametrize("spec, n", SIZES)
def test_against_the_reference(spec, n):
    """Moves, connection wins and draws, repetitions along random games."""
    outcomes = Counter()
    for seed in range(15 if n == 8 else 50):
        rng = random.Random(seed)
        s = new(spec=spec)
        seen = Counter()
        seen[s.position().rsplit(" ", 1)[0]] += 1
        while not s.is_game_over():
            grid = grid_of(s)
            ref = reference_moves(grid, s.to_move)
            ours = {s.move_to_str(a): a for a in s.legal_actions_list()}
            assert set(ours) == (ref or {"pass"}), s.position()
            mover = s.to_move
            s.push(ours[rng.choice(sorted(ours))])
            grid = grid_of(s)
            mc, oc = connected(grid, mover), connected(grid, 1 - mover)
            key = s.position().rsplit(" ", 1)[0]
            seen[key] += 1
            if mc or oc:
                assert s.is_game_over()
                expected = None if mc and oc else (mover if mc else 1 - mover)
                assert s.outcome().winner == expected, s.position()
                outcomes["both" if mc and oc else "win"] += 1
            elif seen[key] == 3:
                assert s.is_game_over() and s.outcome().termination == "threefold repetition"
                outcomes["repetition"] += 1
            elif s.ply == s.game.max_plies:
                assert s.is_game_over() and s.outcome().termination == "ply cap"
                outcomes["cap"] += 1
            else:
                assert not s.is_game_over(), s.position()
    assert outcomes["win"] > 0


def test_against_open_spiel():
    pyspiel = pytest.importorskip("pyspiel")
    if "lines_of_action" not in pyspiel.registered_names():
        pytest.skip("this OpenSpiel has no lines_of_action")
    game = pyspiel.load_game("lines_of_action")
    ends = Counter()
    for seed in range(50):
        rng = random.Random(seed)
        ref = game.new_initial_state()
        s = new()
        boards = {s.position().split()[0]}
        while not ref.is_terminal() and not s.is_game_over():
            assert ref.current_player() == s.to_move
            ref_moves = {ref.action_to_string(a): a for a in ref.legal_actions()}
            ours = {s.move_to_str(a): a for a in s.legal_actions_list()}
            if list(ours) == ["pass"]:
                ends["pass"] += 1                 # OpenSpiel: no move loses
                assert not ref_moves
                break
            assert set(ref_moves) == set(ours), s.position()
            text = rng.choice(sorted(ours))
            ref.apply_action(ref_moves[text])
            s.push(ours[text])
            board = s.position().split()[0]
            if ref.is_terminal() and ref.returns()[0] == 0 and not s.is_game_over():
                # OpenSpiel draws as soon as a board comes back, whoever is to move
                assert board in boards or ref.move_number() >= game.max_game_length()
                ends["openspiel repetition"] += 1
            boards.add(board)
        if ref.is_terminal() and s.is_game_over():
            returns = ref.returns()
            if s.outcome().termination == "simultaneous connection":
                # OpenSpiel gives the win to the mover; here both connected: a draw
                assert returns[0] != 0 and s.outcome().binary == 0
                ends["simultaneous"] += 1
            else:
                assert returns[0] == s.outcome().binary, s.position()
                ends["same result"] += 1
    assert ends["same result"] >= 30


# ---- rules on hand-built positions --------------------------------------------------------------

def test_distance_counts_both_colours_and_jumps():
    # column d holds d1, d2 (x) and d5 (o): d1 moves 3, jumping its own d2; d2 captures on d5;
    # row 1 holds b1 (o) and d1: d1 moves 2, capturing on b1 or going to f1
    s = new(".......x/8/8/3o4/8/8/3x4/1o1x4 x 0")
    assert moves(s) == ["d1-c2", "d1-d4", "d1-e2", "d1-f1", "d1xb1", "d2-c1", "d2-c2", "d2-c3",
                        "d2-e1", "d2-e2", "d2-e3", "d2xd5", "h8-g7", "h8-g8", "h8-h7"]
    # an enemy piece in the way (d3) blocks the column; row 1 now holds 3 pieces
    s = new(".......x/8/8/8/8/3o4/3x4/1o1x3o x 0")
    assert moves(s) == ["d1-c2", "d1-e2", "d1-g1", "d2-c1", "d2-c2", "d2-c3", "d2-e1", "d2-e2",
                        "d2-e3", "h8-g7", "h8-g8", "h8-h6"]
    # d1 and f1 jump each other along row 1 (3 pieces with a1)
    s = new(".......x/8/8/8/8/3o4/8/o2x1x2 x 0")
    assert moves(s) == ["d1-c2", "d1-e2", "d1-g1", "d1xa1", "d1xd3", "f1-c1", "f1-f2", "f1-g2",
                        "f1xd3", "h8-f6", "h8-g8", "h8-h7"]
    # never onto an own piece: with 2 pieces on row 1, d1 and f1 would land on each other
    s = new(".......x/o7/8/8/8/8/8/3x1x2 x 0")
    assert not {"d1-f1", "d1xf1", "f1-d1", "f1xd1"} & set(moves(s))
    assert s.legal_actions_list() == sorted(s.legal_actions_list())


def test_capture():
    s = new(".......x/8/8/8/8/3o4/8/o2x1x2 x 0")
    s.push("d1xd3")
    assert s.piece_counts() == (3, 1) and s.position() == "7x/8/8/8/8/3x4/8/o4x2 o 1"
    s.pop()
    assert s.piece_counts() == (3, 2)


def test_connection_wins():
    s = new(pos("........", "........", "........", "........", "........", "....o...",
                "..x.....", "x.....o.", side="x"))
    assert not s.is_game_over()
    s.push("a1-b2")                               # x: b2 and c2 touch
    assert s.is_game_over() and s.result() == "1-0" and s.outcome().winner == 0
    assert s.outcome().score == pytest.approx((500 - 1 + 1) / 500)
    s.pop()
    assert not s.is_game_over()


def test_single_piece_is_connected():
    s = new(pos("x.......", "........", "........", "........", "........", "........",
                "........", "o.o.....", side="x"))
    assert s.is_game_over() and s.result() == "1-0"     # x has one piece


def test_simultaneous_connection_is_a_draw():
    # x captures on b2: x is then connected (a1 b2), and so are o's remaining pieces (e5 f6)
    s = new("8/8/5o2/4o3/8/8/1o1x4/x7 x 0")
    assert "d2xb2" in moves(s)
    s.push("d2xb2")
    assert s.is_game_over() and s.result() == "1/2-1/2"
    assert s.outcome().termination == "simultaneous connection" and s.outcome().score == 0.0


def test_capture_connecting_only_the_opponent_loses():
    # the same capture without x's a1: o (e5 f6) is connected, x (b2 h1) is not
    s = new("8/8/5o2/4o3/8/8/1o1x4/7x x 0")
    s.push("d2xb2")
    assert s.is_game_over() and s.outcome().winner == 1 and s.result() == "0-1"


def test_pass_when_no_move():
    text = pos("o.....ox", "......oo", "........", "........", "........", "........",
               "oo......", "xo......", side="x", ply=7)
    s = new(text)
    assert s.legal_actions_list() == [8 * 8 * 8] and moves(s) == ["pass"]
    h = s.zobrist_hash
    s.push("pass")
    assert s.to_move == 1 and s.ply == 8 and not s.is_game_over() and s.zobrist_hash != h
    assert s.position() == "o5ox/6oo/8/8/8/8/oo6/xo6 o 8"
    s.pop()
    assert s.position() == "o5ox/6oo/8/8/8/8/oo6/xo6 x 7" and s.zobrist_hash == h
    with pytest.raises(IllegalMoveError):
        new().push("pass")                        # only when there is no other move


def test_threefold_repetition():
    s = new(pos("........", "........", "........", "........", "........", "x......o",
                "........", "x......o", side="x", ply=10))
    cycle = ["a1-c1", "h1-f1", "c1-a1", "f1-h1"]
    for k in range(7):
        s.push(cycle[k % 4])
        assert not s.is_game_over(), s.position()
    s.push(cycle[3])
    assert s.is_game_over() and s.outcome().termination == "threefold repetition"
    assert s.result() == "1/2-1/2"
    # the same pieces at different plies are different states: different hashes
    s.pop()
    assert not s.is_game_over()
    t = new(s.position())
    assert not t.is_game_over() and t.zobrist_hash == s.zobrist_hash
    u = new(s.position().rsplit(" ", 1)[0] + " 3")
    assert u.zobrist_hash != s.zobrist_hash


def test_ply_cap():
    s = new(pos("........", "........", "........", "........", "........", "x......o",
                "........", "x......o", side="x", ply=499))
    s.push("a1-c1")
    assert s.is_game_over() and s.outcome().termination == "ply cap" and s.result() == "1/2-1/2"


# ---- symmetry, encoding ---------------------------------------------------------------------------

def test_transform_action():
    s = new()
    a = s.parse_move("b1-b3")
    names = {sym: s.move_to_str(s.transform_action(sym, a)) for sym in (0, 2, 4, 5)}
    assert names == {0: "b1-b3", 2: "g8-g6", 4: "g1-g3", 5: "b8-b6"}
    p = 8 * 8 * 8
    assert all(s.transform_action(sym, p) == p for sym in range(8))
    for sym in range(8):
        legal = s.legal_actions_list()
        images = sorted(s.transform_action(sym, x) for x in legal)
        if sym in (0, 2, 4, 5):
            assert images == legal                 # the start position is invariant
    with pytest.raises(InvalidMoveError):
        s.transform_action(0, p + 1)


@pytest.mark.parametrize("spec, n", SIZES)
def test_encoding(spec, n):
    s = new(spec=spec)
    x = s.encode_planes()
    assert x.shape == (n, n, 2)
    assert x[0, 1:n - 1, 0].all() and x[n - 1, 1:n - 1, 0].all() and x[:, :, 0].sum() == 2 * (n - 2)
    assert x[1:n - 1, 0, 1].all() and x[:, :, 1].sum() == 2 * (n - 2)
    s.push(s.legal_actions_list()[0])
    y = s.encode_planes()                          # o to move: its pieces in channel 0
    assert y[1:n - 1, 0, 0].all() and y[:, :, 1].sum() == 2 * (n - 2)


# ---- text -----------------------------------------------------------------------------------------

def test_start_positions():
    assert new().position() == "1xxxxxx1/o6o/o6o/o6o/o6o/o6o/o6o/1xxxxxx1 x 0"
    assert new(spec=SPEC_6).position() == "1xxxx1/o4o/o4o/o4o/o4o/1xxxx1 x 0"
    s = new("1xxxxxx1/o6o/o6o/o6o/o6o/o6o/o6o/1xxxxxx1 o")
    assert s.ply == 0 and s.to_move == 1


def test_notation():
    s = new()
    a = s.parse_move("b1-b3")
    assert a == (7 * 8 + 1) * 8 + 0 and s.move_to_str(a) == "b1-b3"
    for text in ["b1b3", "B1-B3", " b1 - b3 ", "b1xb3"]:
        assert s.parse_move(text) == a
    assert s.move_to_str(s.parse_move("c1xa3")) == "c1xa3"
    assert s.move_to_str(s.parse_move("b1-h1")) == "b1-h1"
    with pytest.raises(IllegalMoveError, match="'b1-b4'"):
        s.parse_move("b1-b4")                      # the column holds 2 pieces: b1 moves 2
    with pytest.raises(InvalidMoveError):
        s.move_to_str(0)                           # a8 northwards: off the board


@pytest.mark.parametrize("text", ["", "hello", "b1", "b1-", "b1-c4", "b1-b1", "i1-i3", "b9-b7",
                                  "b1--b3", "pass pass", "b1+b3"])
def test_malformed_moves(text):
    s = new()
    with pytest.raises(InvalidMoveError) as err:
        s.push(text)
    assert repr(text.strip()) in str(err.value)
    assert s.ply == 0


@pytest.mark.parametrize("text", ["b1-b2", "a2-a4", "b8-b7"])
def test_illegal_moves(text):
    with pytest.raises(IllegalMoveError, match=repr(text)):
        new().push(text)


@pytest.mark.parametrize("text, fragment", [
    ("8/8/8/8/8/8/8 x", "has 7 rows"),
    ("8/8/8/8/8/8/8/7q x", "unexpected character"),
    ("8/8/8/8/8/8/8/8 x", "has no pieces"),
    ("8/8/8/8/8/8/8/x7 x", "o has no pieces"),
    ("xxxxxxxx/xxxxx3/8/8/8/8/8/o7 x", "13 pieces"),
    ("x7/8/8/8/8/8/8/o7 z", "side to move"),
    ("x7/8/8/8/8/8/8/o7 x 501", "ply 501"),
    ("x7/8/8/8/8/8/8/o7", "BOARD SIDE"),
])
def test_bad_positions_leave_the_state_untouched(text, fragment):
    s = new()
    s.push("b1-b3")
    before = (s.position(), s.zobrist_hash, s.move_stack)
    with pytest.raises(InvalidPositionError, match=fragment) as err:
        s.set_position(text)
    assert "lines_of_action" in str(err.value)
    assert (s.position(), s.zobrist_hash, s.move_stack) == before


def test_positions_already_over():
    s = new("xx6/8/8/8/8/8/8/o6o o 12")           # x connected
    assert s.is_game_over() and s.result() == "1-0" and s.ply == 12
    s = new("x6x/8/8/8/8/8/8/o7 x")                # o has one piece
    assert s.is_game_over() and s.result() == "0-1"
    s = new("xx6/8/8/8/8/8/8/o7 x")                # both connected
    assert s.is_game_over() and s.result() == "1/2-1/2"


def test_drawing():
    s = new()
    text = str(s)
    assert "x to move" in text and text.count("\n") == 10
