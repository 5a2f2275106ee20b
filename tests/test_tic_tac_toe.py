import pytest

import games
from games._state import count_games, perft, random_games
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError


@pytest.fixture
def state():
    return games.new_state("tic_tac_toe")


def test_complete_games(state):
    # 255,168 distinct complete games (e.g. Schaefer, "Tic-tac-toe", and OEIS-style enumerations).
    assert count_games(state) == 255168


def test_perft(state):
    # d1..d9: 9, 9*8, ... with games ending early removed.
    assert [perft(state, d) for d in range(1, 10)] == [
        9, 72, 504, 3024, 15120, 54720, 148176, 200448, 127872]


def test_random_game_statistics(state):
    # Uniformly random play: x wins ~58.5%, draws ~12.7%, o wins ~28.8%.
    r, length = random_games(state, 200_000, 7)
    assert abs((r == 1).mean() - 0.585) < 0.005
    assert abs((r == 0).mean() - 0.127) < 0.005
    assert 5 <= length.min() and length.max() <= 9


def test_win_draw_and_scores(state):
    for m in ["b2", "a1", "c3", "a3", "a2", "b1"]:
        state.push(m)
    assert state.result() == "*" and state.outcome() is None
    state.push("c2")        # x: a2 b2 c2 complete at ply 7
    assert state.is_game_over() and state.result() == "1-0"
    o = state.outcome()
    assert o.winner == 0 and o.binary == 1
    assert o.score == pytest.approx((9 - 7 + 1) / 9)       # additive depth, 7 plies
    s = games.new_state("tic_tac_toe")
    for m in ["b2", "a1", "c1", "a3", "a2", "c2", "b3", "b1", "c3"]:
        s.push(m)
    assert s.result() == "1/2-1/2" and s.outcome().score == 0.0 and s.outcome().winner is None


def test_notation(state):
    assert [state.move_to_str(a) for a in range(9)] == [
        "a3", "b3", "c3", "a2", "b2", "c2", "a1", "b1", "c1"]
    assert state.parse_move("B2") == 4
    with pytest.raises(InvalidMoveError, match="'d1'"):
        state.parse_move("d1")
    with pytest.raises(InvalidMoveError, match="'hello'"):
        state.parse_move("hello")
    state.push("b2")
    with pytest.raises(IllegalMoveError, match="'b2'"):
        state.push("b2")
    with pytest.raises(IllegalMoveError):
        state.push(99)


@pytest.mark.parametrize("text, fragment", [
    ("xxx/3 o", "has 2 rows"),
    ("x.o/.x./..o", "must be 'BOARD SIDE"),
    ("x.o/.x./..q o", "unexpected character 'q'"),
    ("xx/3/3 o", "has 2 squares"),
    ("xxx/3/3 o", "unreachable"),
    ("x2/3/3 x", "unreachable"),
    ("3/3/3 z", "side to move 'z'"),
    ("x2/3/3 o 5", "ply 5"),
])
def test_bad_positions_leave_state_untouched(state, text, fragment):
    state.push("b2")
    before = (state.position(), state.zobrist_hash, state.move_stack)
    with pytest.raises(InvalidPositionError, match=fragment):
        state.set_position(text)
    assert (state.position(), state.zobrist_hash, state.move_stack) == before


def test_position_sets_terminal(state):
    state.set_position("xxx/oo1/3 o")
    assert state.is_game_over() and state.result() == "1-0" and not list(state.legal_moves)


def test_differential_against_openspiel():
    """Random games in lockstep with OpenSpiel's tic_tac_toe: legal sets, mover, outcome."""
    pyspiel = pytest.importorskip("pyspiel")
    import random
    game = pyspiel.load_game("tic_tac_toe")
    for seed in range(200):
        rng = random.Random(seed)
        ours, theirs = games.new_state("tic_tac_toe"), game.new_initial_state()
        while not theirs.is_terminal():
            assert not ours.is_game_over()
            assert ours.legal_actions_list() == theirs.legal_actions()   # same ids: row * 3 + col
            assert ours.to_move == theirs.current_player()
            a = rng.choice(theirs.legal_actions())
            ours.push(a)
            theirs.apply_action(a)
        assert ours.is_game_over()
        assert ours.outcome().binary == int(theirs.returns()[0])
