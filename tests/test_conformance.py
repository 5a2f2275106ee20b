"""The API-conformance suite, run over every registered game (see conftest.GAME_SPECS)."""
import random

import numpy as np
import pytest

import games
from games._state import perft, random_games
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


def test_encoding_is_from_the_movers_view(spec):
    for g in range(3):
        s = games.new_state(spec)
        for a in random_game(spec, 400 + g):
            s.push(a)
            x = s.encode_planes()
            assert x.dtype == np.float32 and np.isfinite(x).all()
            assert set(np.unique(x)) <= {0.0, 1.0}


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
