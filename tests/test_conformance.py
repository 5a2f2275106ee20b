"""The API-conformance suite, run over every registered game (see conftest.GAME_SPECS)."""
import random
import re

import numpy as np
import pytest

import games
from games._state import perft, random_games
from games.conformance import check_game
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError
from games.symmetry import transform_planes

from conftest import GAME_SPECS

N_GAMES = 6


def random_game(spec, seed, max_plies=None):
    """Play one uniformly random game with the Python API; return the actions."""
    rng = random.Random(seed)
    s = games.new_state(spec)
    actions = []
    while not s.is_game_over() and (max_plies is None or len(actions) < max_plies):
        a = rng.choice(s.legal_actions_list())
        s.push(a)
        actions.append(a)
    return actions


@pytest.fixture(params=GAME_SPECS)
def spec(request):
    return request.param


def test_facts(spec):
    info = games.load(spec)
    s = info.new_state()
    h, w, c = info.planes_shape
    assert info.num_actions > 0 and info.max_plies > 0 and h > 0 and w > 0 and c > 0
    assert len(info.players) == 2 and info.players[0] != info.players[1]
    assert 0 in info.symmetries and all(0 <= k < 8 for k in info.symmetries)
    assert s.ply == 0 and s.to_move == 0 and not s.is_game_over() and s.move_stack == []
    assert s.encode_planes().shape == (h, w, c)


def test_random_games_push_pop_round_trip(spec):
    for g in range(N_GAMES):
        rng = random.Random(g)
        s = games.new_state(spec)
        trail = []
        while not s.is_game_over():
            legal = s.legal_actions_list()
            assert legal == sorted(set(legal)) and legal, "legal actions must be sorted, unique, non-empty"
            assert all(0 <= a < s.game.num_actions for a in legal)
            assert len(s.legal_moves) == len(legal)
            trail.append((s.position(), s.zobrist_hash, s.to_move, s.ply, legal))
            a = rng.choice(legal)
            assert s.is_legal(a) and a in s.legal_moves
            s.push(a)
            assert s.ply == trail[-1][3] + 1
            assert s.ply <= s.game.max_plies
        assert s.legal_actions_list() == [] and not s.legal_moves
        o = s.outcome()
        assert o is not None and o.binary in (-1, 0, 1)
        assert -1.0 <= o.score <= 1.0 and np.sign(o.score) == o.binary
        assert s.result() == o.result()
        for position, h, player, ply, legal in reversed(trail):
            s.pop()
            assert (s.position(), s.zobrist_hash, s.to_move, s.ply) == (position, h, player, ply)
            assert s.legal_actions_list() == legal
        with pytest.raises(IndexError):
            s.pop()


def test_hash_matches_a_position_set_from_scratch(spec):
    """The incremental hash equals the hash of the same position built from its text: so every
    move order reaching a position gives the same hash."""
    for g in range(N_GAMES):
        actions = random_game(spec, 100 + g)
        s = games.new_state(spec)
        fresh = games.new_state(spec)
        seen = {}
        # games whose rules depend on the history (repetition draws) cannot rebuild that part
        # from the position text: a draw by repetition is not compared
        history = games.load(spec).extra.get("history_dependent", False)
        for a in actions:
            s.push(a)
            if history and s.is_game_over() and "repetition" in s.outcome().termination:
                continue
            fresh.set_position(s.position())
            assert fresh.zobrist_hash == s.zobrist_hash, s.position()
            assert fresh.to_move == s.to_move and fresh.is_game_over() == s.is_game_over()
            assert fresh.legal_actions_list() == s.legal_actions_list()
            # perft's bulk count (a game may count without listing) agrees with the list
            assert perft(fresh, 1) == perft(s, 1) == len(s.legal_actions_list())
            assert fresh.outcome() == s.outcome()
            key = s.position()
            assert seen.setdefault(s.zobrist_hash, key) == key, "hash collision"


def test_two_move_orders_same_hash(spec):
    """Swap two moves of the same player early in a game; when the result is the same position,
    the hash must be the same."""
    found = 0
    for g in range(40):
        actions = random_game(spec, 200 + g, max_plies=8)
        for i in range(len(actions)):
            for j in range(i + 1, len(actions)):
                swapped = list(actions)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                a, b = games.new_state(spec), games.new_state(spec)
                ok = True
                for x, y in zip(actions, swapped):
                    a.push(x)
                    if not b.is_legal(y):
                        ok = False
                        break
                    b.push(y)
                if ok and a.position() == b.position() and a.move_stack != b.move_stack:
                    assert a.zobrist_hash == b.zobrist_hash
                    found += 1
    if found == 0:
        # games with forced openings (compulsory captures): walk the small tree exhaustively
        seen = {}
        frontier = [games.new_state(spec)]
        for _ in range(8):
            nxt = []
            for st in frontier:
                for x in st.legal_actions_list():
                    c = st.copy()
                    c.push(x)
                    key = c.position()
                    if key in seen:
                        assert seen[key] == c.zobrist_hash
                        found += 1
                    else:
                        seen[key] = c.zobrist_hash
                        nxt.append(c)
            frontier = nxt
            if found or len(seen) > 20000:
                break
    assert found > 0, "no transposition found to test"


def test_symmetric_images_encode_transformed(spec):
    """Playing the image of every move under a symmetry gives the image of every encoding."""
    info = games.load(spec)
    for sym in info.symmetries:
        actions = random_game(spec, 300 + sym)
        s, t = info.new_state(), info.new_state()
        for a in actions:
            image = s.transform_action(sym, a)
            legal_s = s.legal_actions_list()
            assert sorted(s.transform_action(sym, x) for x in legal_s) == t.legal_actions_list()
            s.push(a)
            t.push(image)
            np.testing.assert_array_equal(transform_planes(s.encode_planes(), sym), t.encode_planes())
            assert s.to_move == t.to_move
        assert s.outcome() == t.outcome()


# ---- the mover's point of view --------------------------------------------------------------------
# A position and its colour-swapped counterpart (the other player to move, each piece changed to the
# other colour, the board turned so that each side keeps its home: mirrored rows, a half turn or a
# transposition) must encode identically from the mover's view. Where the counterpart cannot be set
# (placement games: it is unreachable), the planes are checked square by square against the text.

def _grid(board):
    rows = []
    for r in board.split("/"):
        row = []
        for tok in re.findall(r"\d+|\D", r):
            row.extend(["."] * int(tok) if tok.isdigit() else [tok])
        rows.append(row)
    return rows

def _text(rows):
    out = []
    for row in rows:
        s, run = "", 0
        for ch in row:
            if ch == ".":
                run += 1
            else:
                s += (str(run) if run else "") + ch
                run = 0
        out.append(s + (str(run) if run else ""))
    return "/".join(out)

def swap_board(text, a, b, geo):
    board, *rest = text.split(" ")
    rows = _grid(board)
    if geo == "rows":
        rows = rows[::-1]
    elif geo == "rot180":
        rows = [r[::-1] for r in rows[::-1]]
    elif geo == "transpose":
        rows = [list(c) for c in zip(*rows)]
    t = {a: b, b: a}
    rows = [[t.get(c, c) for c in r] for r in rows]
    side = t[rest[0]]
    return " ".join([_text(rows), side, *rest[1:]])

def swap_fen(text, ep_field=True):
    board, side, *rest = text.split(" ")
    rows = board.split("/")[::-1]
    board = "/".join(r.swapcase() for r in rows)
    side = "b" if side == "w" else "w"
    out = [board, side]
    if ep_field:
        castling, ep, *clocks = rest
        castling = "".join(sorted(castling.swapcase(), key=lambda c: "KQkq".index(c))) if castling != "-" else "-"
        if ep != "-":
            ep = ep[0] + str(9 - int(ep[1]))
        out += [castling, ep, *clocks]
    else:
        out += rest
    return " ".join(out)

def swap_draughts(text, n_squares):
    side, *fields = text.split(":")
    lists = {}
    extra = []
    for f in fields:
        if f[0] in "WB" and (len(f) == 1 or f[1].isdigit() or f[1] == "K" or f[1] == ","):
            lists[f[0]] = f[1:]
        else:
            extra.append(f)
    def mp(lst):
        items = [x for x in lst.split(",") if x]
        return ",".join(("K" if x.startswith("K") else "") + str(n_squares + 1 - int(x.lstrip("K"))) for x in items)
    side = "W" if side == "B" else "B"
    return ":".join([side, "W" + mp(lists.get("B", "")), "B" + mp(lists.get("W", "")), *extra])


def _bump_ply(text):
    parts = text.split(" ")
    parts[-1] = str(int(parts[-1]) + 1)
    return " ".join(parts)


# game -> how to build the counterpart's text, and the one other symmetry (games.symmetry) allowed
# between the two encodings (how the encoding orients the board for the second player)
_SWAPS = {
    "reversi": (lambda t, i: swap_board(t, "x", "o", None), 0),
    "breakthrough": (lambda t, i: swap_board(t, "x", "o", "rows"), 5),
    "lines_of_action": (lambda t, i: swap_board(t, "x", "o", "transpose"), 6),
    "chess": (lambda t, i: swap_fen(t), 5),
    "xiangqi": (lambda t, i: swap_fen(t, ep_field=False), 4),   # the encoding turns the board
    "international_draughts": (lambda t, i: swap_draughts(t, i.planes_shape[0] ** 2 // 2), 2),
    "tapatan": (lambda t, i: _bump_ply(swap_board(t, "x", "o", "rows")), 5),
    "alquerque": (lambda t, i: _bump_ply(swap_board(t, "x", "o", "rot180")), 2),
    "five_field_kono": (lambda t, i: _bump_ply(swap_board(t, "x", "o", "rows")), 5),
    "tsoro_yematatu": (lambda t, i: _bump_ply(swap_board(t, "x", "o", None)), 0),
}


def _positions(spec, n_games=3, plies=40):
    for g in range(n_games):
        s = games.new_state(spec)
        rng = random.Random(g)
        for _ in range(plies):
            s.push(rng.choice(s.legal_actions_list()))
            if s.is_game_over():
                break
            yield s.copy()


def test_encoding_is_from_the_movers_view(spec):
    from games.errors import InvalidPositionError
    name = games.parse_spec(spec)[0]
    info = games.load(spec)
    checked = 0
    for s in _positions(spec):
        x = s.encode_planes()
        assert x.dtype == np.float32 and set(np.unique(x)) <= {0.0, 1.0}
        if name in _SWAPS:
            make, sym = _SWAPS[name]
            try:
                u = games.new_state(spec)
                u.set_position(make(s.position(), info))
            except InvalidPositionError:
                continue            # e.g. a drop phase where the counterpart is unreachable
            assert u.to_move != s.to_move
            y = u.encode_planes()
            assert np.array_equal(x, y) or np.array_equal(x, transform_planes(y, sym)), \
                f"{s.position()!r} and its colour swap {u.position()!r} encode differently"
        elif name == "havannah":
            # hexagonal text: the counts of the mover's and the opponent's stones
            board, side = s.position().split(" ")[:2]
            other = "w" if side == "b" else "b"
            assert x[..., 0].sum() == board.count(side) and x[..., 1].sum() == board.count(other)
        else:
            # square placement boards: channel 0 the mover's stones, channel 1 the opponent's
            board, side = s.position().split(" ")[:2]
            other = "o" if side == "x" else "x"
            grid = np.array(_grid(board))
            assert np.array_equal(x[..., 0], (grid == side).astype(np.float32))
            assert np.array_equal(x[..., 1], (grid == other).astype(np.float32))
        checked += 1
    assert checked >= 10, f"only {checked} positions checked"


def test_copy_is_independent(spec):
    actions = random_game(spec, 500)
    s = games.new_state(spec)
    for a in actions[: len(actions) // 2]:
        s.push(a)
    c = s.copy()
    assert c == s and c.zobrist_hash == s.zobrist_hash and c.move_stack == s.move_stack
    before = s.position()
    for a in actions[len(actions) // 2:]:
        c.push(a)
    assert s.position() == before
    while c.move_stack:
        c.pop()
    assert c.position() == games.new_state(spec).position()


def test_notation_round_trip(spec):
    s = games.new_state(spec)
    for a in random_game(spec, 600):
        for x in s.legal_actions_list():
            assert s.parse_move(s.move_to_str(x)) == x
        s.push(s.move_to_str(a))
        assert s.peek() == a


def test_position_text_round_trip(spec):
    s = games.new_state(spec)
    for a in random_game(spec, 700):
        s.push(a)
        t = games.new_state(spec)
        t.set_position(s.position())
        assert t.position() == s.position() and t.ply == s.ply


@pytest.mark.parametrize("text", ["", "hello world", "\x00", "zz99", "a", "pass pass"])
def test_malformed_moves(spec, text):
    s = games.new_state(spec)
    with pytest.raises((InvalidMoveError, IllegalMoveError)) as err:
        s.push(text)
    assert repr(text.strip()) in str(err.value) or text.strip() in str(err.value)


@pytest.mark.parametrize("text", ["", "nonsense", "x/x/x x", "... x 1 2 3", "/ / /"])
def test_malformed_positions(spec, text):
    s = games.new_state(spec)
    before = s.position()
    with pytest.raises(InvalidPositionError) as err:
        s.set_position(text)
    assert spec.split("(")[0] in str(err.value)
    assert s.position() == before


def test_random_games_are_seeded(spec):
    s = games.new_state(spec)
    r1, l1 = random_games(s, 20, 42)
    r2, l2 = random_games(s, 20, 42)
    r3, l3 = random_games(s, 20, 43)
    assert (r1 == r2).all() and (l1 == l2).all()
    assert not ((l1 == l3).all() and (r1 == r3).all())
    assert s.ply == 0 and s.move_stack == []


def test_perft_leaves_the_state_untouched(spec):
    s = games.new_state(spec)
    before = (s.position(), s.zobrist_hash)
    n1 = perft(s, 1)
    assert n1 == len(s.legal_actions_list())
    assert perft(s, 2) == sum(perft(_child(s, a), 1) for a in s.legal_actions_list())
    assert (s.position(), s.zobrist_hash) == before


def _child(s, a):
    c = s.copy()
    c.push(a)
    return c


def test_the_check_game_suite_passes(spec):
    """``descent check-game`` (games/conformance.py, the suite a game author runs) passes every
    registered game: the suite checks what this file checks, through the same State contract."""
    report = check_game(spec, n_games=2, seed=0, depth=2)
    assert report.ok, [str(f) for f in report.failures]
