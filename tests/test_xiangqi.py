"""Xiangqi: perft, rules on hand-built positions, text formats, and differential tests against
Fairy-Stockfish (pyffish) and OpenSpiel."""
import random
import re

import numpy as np
import pytest

import games
from games._state import perft
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError

START = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1"


def pos(fen):
    s = games.new_state("xiangqi")
    s.set_position(fen)
    return s


def moves(s, start=None):
    """The legal moves of `s` in ICCS, optionally only those from the point `start`."""
    out = {s.move_to_str(a) for a in s.legal_actions_list()}
    return {m for m in out if start is None or m.startswith(start)}


def play(s, *texts):
    for t in texts:
        s.push(t)
    return s


# ---- counts ---------------------------------------------------------------------------------------

def test_facts():
    info = games.load("xiangqi")
    assert info.players == ("red", "black")
    assert info.num_actions == 8100 and info.max_plies == 1000 and info.max_legal == 128
    assert info.planes_shape == (10, 9, 14) and info.symmetries == (0, 4)
    assert info.extra == {"history_dependent": True}
    assert games.new_state("xiangqi").position() == START


def test_perft_start():
    # Published xiangqi perft of the start position (docs/GAMES.md): 44, 1920, 79666, 3290240,
    # 133312995 (depth 5 is left to the benchmark).
    s = games.new_state("xiangqi")
    assert [perft(s, d) for d in range(1, 5)] == [44, 1920, 79666, 3290240]


# Perft of other positions, as counted by Fairy-Stockfish (pyffish 0.0.8x, `legal_moves` recursion):
# endgames with pins, the flying-general ban, cannon screens and soldiers, a midgame, and three
# positions reached by seeded random play.
PERFT = [
    ("4k4/9/4P4/9/9/9/9/9/9/3K1R3 b - - 0 1", [0, 0, 0]),
    ("3k5/4a4/4b4/9/2p6/9/9/4B4/4A4/3AK4 w - - 0 1", [8, 72, 493, 4133]),
    ("2bak4/4a4/4b4/9/4C4/9/9/9/4R4/3K5 b - - 0 1", [2, 54, 350, 10321]),
    ("5k3/9/9/9/9/9/9/4r4/9/3K5 w - - 0 1", [1, 19, 36, 629]),
    ("4k4/4a4/3P5/9/9/2n6/9/5C3/9/3K5 w - - 0 1", [22, 294, 5610, 62766]),
    ("r1bak4/4a4/2n1b1c2/p3p3p/6p2/2P6/P3P3P/1C2B1N2/4A4/2BAK4 w - - 0 1", [28, 691, 18529]),
    ("3k5/9/4b4/2p1p4/8r/8p/2P1P4/B2AK4/9/3A2B2 w - - 8 31", [9, 198, 1744]),
    ("1P4b2/4a4/3k5/9/9/9/2p6/9/9/5K3 w - - 13 41", [4, 39, 154, 1418]),
    ("5kb2/9/9/6n2/2b6/8P/9/4B4/9/3K2B2 w - - 16 51", [7, 98, 723, 8503]),
]


@pytest.mark.parametrize("fen, counts", PERFT)
def test_perft_positions(fen, counts):
    s = pos(fen)
    assert [perft(s, d) for d in range(1, len(counts) + 1)] == counts


# ---- rules on hand-built positions ------------------------------------------------------------------

def test_stalemate_loses():
    # black's general on e9 cannot move: e8 is covered by the soldier, f9 by the chariot, d9 would
    # face red's general; it is not in check
    s = pos("4k4/9/4P4/9/9/9/9/9/9/3K1R3 b - - 0 1")
    assert s.is_game_over() and not s.in_check()
    assert s.result() == "1-0" and s.outcome().termination == "stalemate" and s.outcome().winner == 0
    # the same reached by a move: the soldier steps to e7
    s = play(pos("4k4/9/9/4P4/9/9/9/9/9/3K1R3 w - - 0 1"), "e6e7")
    assert s.outcome().termination == "stalemate" and s.result() == "1-0"
    s.pop()
    assert not s.is_game_over() and s.result() == "*"


def test_checkmate_and_score():
    s = play(pos("3k5/R8/9/9/9/9/9/9/9/1R2K4 w - - 0 1"), "b0b9")
    assert s.in_check() and s.is_game_over() and s.outcome().termination == "checkmate"
    o = s.outcome()
    assert o.winner == 0 and o.binary == 1
    # red has 18 points of material (two chariots), black none: margin 18/53
    m = 18 / 53
    assert o.score == pytest.approx(0.05 + 0.95 * (1 + m) / 2)
    # black wins the mirrored position (colours swapped, board turned)
    s = play(pos("4k2r1/9/9/9/9/9/9/9/8r/5K3 b - - 0 1"), "h9h0")
    o = s.outcome()
    assert o.termination == "checkmate" and o.winner == 1 and o.binary == -1
    assert o.score == pytest.approx(-(0.05 + 0.95 * (1 + m) / 2))


def test_check_must_be_answered():
    # red's general on e0 is checked by the chariot on e5: it steps aside or the advisor blocks
    s = pos("3k5/9/9/9/4r4/9/9/9/9/3AK4 w - - 0 1")
    assert s.in_check()
    assert moves(s) == {"e0f0", "d0e1"}


def test_flying_general_pin():
    # the horse is the only piece between the generals: it may not leave the file
    s = pos("4k4/9/9/9/4N4/9/9/9/9/4K4 w - - 0 1")
    assert moves(s, "e5") == set()
    assert moves(s) == {"e0d0", "e0f0", "e0e1"}


def test_flying_general_general_moves():
    # red's general may not step onto the open d-file facing black's
    s = pos("3k5/9/9/9/9/9/9/9/9/4K4 w - - 0 1")
    assert moves(s) == {"e0f0", "e0e1"}
    # nor may black's
    s = pos("4k4/9/9/9/9/9/9/9/9/3K5 b - - 0 1")
    assert moves(s) == {"e9f9", "e9e8"}


def test_facing_generals_is_not_a_position():
    with pytest.raises(InvalidPositionError, match="xiangqi"):
        pos("4k4/9/9/9/9/9/9/9/9/4K4 w - - 0 1")


def test_cannon_screens():
    # cannon b2: along rank 2 it jumps the red advisor (d2) to take the soldier on f2, never the
    # chariot behind a second screen; up the b-file it jumps the red horse (b5) to take the horse b7
    fen = "4k4/4a4/1n7/9/1N7/9/9/1C1A1p1r1/9/4K4 w - - 0 1"
    s = pos(fen)
    assert moves(s, "b2") == {"b2a2", "b2c2", "b2f2", "b2b1", "b2b0", "b2b3", "b2b4", "b2b7"}
    # without the screen on rank 2 the cannon cannot capture along it at all
    s = pos("4k4/4a4/1n7/9/1N7/9/9/1C3p1r1/9/4K4 w - - 0 1")
    assert moves(s, "b2") == {"b2a2", "b2c2", "b2d2", "b2e2", "b2h2", "b2b1", "b2b0", "b2b3",
                              "b2b4", "b2b7"}


def test_cannon_check_through_a_screen():
    # the black cannon on e7 checks red's general through the red soldier on e3: e1 and the soldier's
    # step to e4 leave the check, d0 faces black's general, the soldier cannot step aside before
    # the river; only f0 is left
    s = pos("3k5/9/4c4/9/9/9/4P4/9/9/4K4 w - - 0 1")
    assert s.in_check()
    assert moves(s) == {"e0f0"}


def test_horse_legs():
    # horse e4: the red soldier on e5 blocks d6/f6, the black soldier on d4 blocks c5/c3
    s = pos("4k4/9/9/9/4P4/3pN4/9/9/9/4K4 w - - 0 1")
    assert moves(s, "e4") == {"e4d2", "e4f2", "e4g5", "e4g3"}
    # at the start the elephants block the horses' inward jumps
    assert moves(games.new_state("xiangqi"), "b0") == {"b0a2", "b0c2"}


def test_horse_check_blocked_at_the_leg():
    # black horse on d2 checks red's general on e0 (d2->e0: leg d1); a piece on d1 blocks it
    assert pos("3k5/9/9/9/9/9/9/3n5/9/4K4 w - - 0 1").in_check()
    assert not pos("3k5/9/9/9/9/9/9/3n5/3R5/4K4 w - - 0 1").in_check()


def test_elephant_eyes_and_river():
    # elephant e2: the black soldier on d3 blocks the eye towards c4; elephant g4 cannot cross the
    # river (e6, i6) and e2 is its own piece
    s = pos("3k5/9/9/9/9/6B2/3p5/4B4/9/4K4 w - - 0 1")
    assert moves(s, "e2") == {"e2c0", "e2g0"}
    assert moves(s, "g4") == {"g4i2"}


def test_soldiers():
    s = games.new_state("xiangqi")
    assert moves(s, "a3") == {"a3a4"} and moves(s, "e3") == {"e3e4"}
    # across the river: forward and sideways, never back; on the last rank only sideways
    s = pos("3k5/2P6/9/9/4P4/9/9/9/9/4K4 w - - 0 1")
    assert moves(s, "e5") == {"e5e6", "e5d5", "e5f5"}
    assert moves(s, "c8") == {"c8c9", "c8b8", "c8d8"}
    s = pos("2P1k4/9/9/9/9/9/9/9/9/3K5 w - - 0 1")
    assert moves(s, "c9") == {"c9b9", "c9d9"}
    # black soldiers go down
    s = pos("3k5/9/9/9/9/9/9/4p4/9/5K3 b - - 0 1")
    assert moves(s, "e2") == {"e2e1", "e2d2", "e2f2"}


def test_palace():
    s = games.new_state("xiangqi")
    assert moves(s, "d0") == {"d0e1"} and moves(s, "e0") == {"e0e1"}
    # general on d2: not c2 or d3 (outside the palace)
    s = pos("4k4/4a4/9/9/9/9/9/3K5/9/9 w - - 0 1")
    assert moves(s, "d2") == {"d2d1", "d2e2"}
    # advisor on e1 reaches the four corners of the palace
    s = pos("4k4/9/9/9/9/9/9/9/4A4/3K5 w - - 0 1")
    assert moves(s, "e1") == {"e1d2", "e1f2", "e1f0"}


# ---- draws --------------------------------------------------------------------------------------------

REP = "3k4r/9/9/9/9/9/9/9/9/R3K4 w - - 0 1"


def test_threefold_repetition():
    s = pos(REP)
    cycle = ["a0a1", "i9i8", "a1a0", "i8i9"]
    play(s, *cycle)
    assert not s.is_game_over()          # second occurrence
    play(s, *cycle[:3])
    assert not s.is_game_over()
    s.push(cycle[3])                     # third occurrence of the start position
    assert s.is_game_over() and s.result() == "1/2-1/2"
    assert s.outcome().termination == "threefold repetition" and s.outcome().score == 0.0
    s.pop()
    assert not s.is_game_over()
    # a copy keeps the history: the repetition is seen there too
    c = s.copy()
    c.push(cycle[3])
    assert c.is_game_over()
    # a position set from text has no history
    t = pos(s.position())
    t.push(cycle[3])
    assert not t.is_game_over()


def test_sixty_move_rule():
    s = pos("3k4r/9/9/9/9/p8/9/9/9/R3K4 w - - 119 80")
    s.push("a0a1")
    assert s.is_game_over() and s.outcome().termination == "sixty-move rule"
    assert s.result() == "1/2-1/2"
    s.pop()
    s.push("a0a4")                       # a capture resets the clock
    assert not s.is_game_over() and s.position().endswith(" 0 80")
    # a checkmate on the 120th quiet ply wins
    s = play(pos("3k5/R8/9/9/9/9/9/9/9/1R2K4 w - - 119 80"), "b0b9")
    assert s.outcome().termination == "checkmate" and s.result() == "1-0"
    # clock 120 in a FEN is already a draw
    assert pos("3k4r/9/9/9/9/9/9/9/9/R3K4 w - - 120 80").outcome().termination == "sixty-move rule"


def test_hash_includes_the_clock_and_transposes():
    a, b = pos(REP), pos(REP.replace(" 0 1", " 7 1"))
    assert a.zobrist_hash != b.zobrist_hash
    s1 = play(games.new_state("xiangqi"), "h2e2", "h9g7", "b0c2")
    s2 = play(games.new_state("xiangqi"), "b0c2", "h9g7", "h2e2")
    assert s1.position() == s2.position() and s1.zobrist_hash == s2.zobrist_hash


# ---- text -----------------------------------------------------------------------------------------

def test_fen_round_trips():
    s = games.new_state("xiangqi")
    rng = random.Random(5)
    for _ in range(120):
        if s.is_game_over():
            break
        s.push(rng.choice(s.legal_actions_list()))
        t = pos(s.position())
        assert t.position() == s.position() and t.zobrist_hash == s.zobrist_hash and t.ply == s.ply
    # aliases: 'r' for red, H/E for horse/elephant; short FEN with defaults
    t = pos("rheakaehr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RHEAKAEHR r")
    assert t.position() == START
    t = pos(START.replace(" w ", " b ").replace(" 0 1", " 3 12"))
    assert t.to_move == 1 and t.ply == 23 and t.position().endswith(" b - - 3 12")


def test_iccs_round_trip_and_aliases():
    s = games.new_state("xiangqi")
    for a in s.legal_actions_list():
        assert s.parse_move(s.move_to_str(a)) == a
    assert s.parse_move("H2-E2") == s.parse_move("h2e2") == (2 * 9 + 7) * 90 + 2 * 9 + 4
    with pytest.raises(IllegalMoveError):
        s.parse_move("a0a5")
    for bad in ["j0a0", "a0a", "a10a1", "h2 e2", "h2xe2", "e2", ""]:
        with pytest.raises(InvalidMoveError) as err:
            s.push(bad)
        assert repr(bad) in str(err.value)


@pytest.mark.parametrize("fen, fragment", [
    (START.replace(" w ", " x "), "side to move"),
    ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/RNBAKABNR w - - 0 1", "ranks"),
    ("rnbakabnr1/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1", "points"),
    ("rnbakabn/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1", "points"),
    ("rnbqkabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1", "'q'"),
    ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/4K4/RNBAKABNR w - - 0 1", "general"),
    ("rnba1abnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1", "general"),
    ("rnba1abnr/9/1c5c1/p1p1p1p1p/4k4/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1", "general on e5"),
    ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/3A5/RNB1KABNR w - - 0 1", "advisor on d1"),
    ("rnbakabnr/9/1c5c1/p1p1p1p1p/2B6/9/P1P1P1P1P/1C5C1/9/RN1AKABNR w - - 0 1", "elephant on c5"),
    ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/2P1P1P1P/PC5C1/9/RNBAKABNR w - - 0 1", "soldier on a2"),
    ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/1PP1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1", "soldier on b3"),
    ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/4P4/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1", "6 red soldiers"),
    ("rnbakabnr/9/1c5c1/p1p1p1p1p/9/4R4/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1", "3 red chariots"),
    ("4k4/9/9/9/4R4/9/9/9/9/3K5 w - - 0 1", "in check"),
    ("4k4/9/9/9/9/9/9/9/9/4K4 b - - 0 1", "in check"),
    (START.replace(" w - - ", " w KQ - "), "castling"),
    (START.replace(" w - - ", " w - e3 "), "en passant"),
    (START.replace(" 0 1", " 121 1"), "clock"),
    (START.replace(" 0 1", " x 1"), "clock"),
    (START.replace(" 0 1", " 0 0"), "move number"),
    (START.replace(" 0 1", " 0 502"), "ply cap"),
    (START + " extra", "FEN"),
])
def test_bad_fens(fen, fragment):
    s = play(games.new_state("xiangqi"), "h2e2")
    before = s.position(), s.move_stack
    with pytest.raises(InvalidPositionError) as err:
        s.set_position(fen)
    msg = str(err.value)
    assert msg.startswith("xiangqi") and fragment in msg, msg
    assert (s.position(), s.move_stack) == before


def test_drawing():
    text = str(games.new_state("xiangqi"))
    assert "r n b a k a b n r" in text and "R N B A K A B N R" in text and "red to move" in text
    s = pos("4k4/9/4P4/9/9/9/9/9/9/3K1R3 b - - 0 1")
    assert "stalemate" in str(s)


# ---- encoding and symmetry ----------------------------------------------------------------------------

def test_encoding_is_from_the_movers_view():
    s = games.new_state("xiangqi")
    x = s.encode_planes()
    assert x.shape == (10, 9, 14) and x.sum() == 32
    assert x[9, 4, 0] == 1 and x[0, 4, 7] == 1          # own general at the bottom
    assert x[7, 1, 5] == 1 and x[2, 1, 12] == 1         # own cannon b2, enemy cannon b7
    # the start position is symmetric under turning the board and swapping colours
    t = pos(START.replace(" w ", " b "))
    np.testing.assert_array_equal(t.encode_planes(), x)
    # after h2e2, black sees the red cannon on its own left (file b from black's side)
    s.push("h2e2")
    y = s.encode_planes()
    assert y[2, 4, 12] == 1 and y[2, 7, 12] == 1 and y[2, 1, 12] == 0


def test_mirror_action():
    s = games.new_state("xiangqi")
    a = s.parse_move("h2e2")
    assert s.move_to_str(s.transform_action(4, a)) == "b2e2"
    assert s.transform_action(0, a) == a
    with pytest.raises(ValueError):
        s.transform_action(2, a)


# ---- differential tests ---------------------------------------------------------------------------

def _random_move(s, rng):
    """A random legal move, a capture with probability 1/2 when there is one (shorter games)."""
    legal = s.legal_actions_list()
    caps = [a for a in legal if s.piece_at(a % 90)]
    return rng.choice(caps if caps and rng.random() < 0.5 else legal)


def _ffish_to_iccs(m):
    # Fairy-Stockfish numbers the ranks 1-10 from red's side
    f1, r1, f2, r2 = re.fullmatch(r"([a-i])(\d+)([a-i])(\d+)", m).groups()
    return f"{f1}{int(r1) - 1}{f2}{int(r2) - 1}"


def test_against_pyffish():
    """50 seeded capture-biased random games: the legal move sets at every ply of the first 30 and
    at every 10th ply after (a pyffish call costs about 2 ms; OpenSpiel's test below covers every
    ply), and every game end by checkmate or stalemate.

    Rule differences, so not compared: Fairy-Stockfish's xiangqi adjudicates repetitions with the
    Asian rules (perpetual check loses) and draws after 100 plies without a capture (its 50-move
    rule); ours draws by threefold repetition and after 120 plies without a capture."""
    sf = pytest.importorskip("pyffish")
    ends = {}
    for seed in range(50):
        rng = random.Random(seed)
        s = games.new_state("xiangqi")
        while not s.is_game_over():
            if s.ply < 30 or s.ply % 10 == 0:
                ref = {_ffish_to_iccs(m) for m in sf.legal_moves("xiangqi", s.position(), [])}
                assert ref == moves(s), (seed, s.position())
            s.push(_random_move(s, rng))
        reason = s.outcome().termination
        ends[reason] = ends.get(reason, 0) + 1
        fen = s.position()
        if reason in ("checkmate", "stalemate"):
            assert sf.legal_moves("xiangqi", fen, []) == []
            assert sf.game_result("xiangqi", fen, []) == -sf.VALUE_MATE     # the mover lost
            assert sf.gives_check("xiangqi", fen, []) == (reason == "checkmate")
        else:
            assert sf.legal_moves("xiangqi", fen, []) != []
    assert ends.get("checkmate") and ends.get("stalemate") and ends.get("threefold repetition")


def _openspiel_to_iccs(text):
    # OpenSpiel writes 'C(7,1)-(0,1)': (row from black's side, column)
    r1, c1, r2, c2 = map(int, re.fullmatch(r"\w\((\d),(\d)\)-\((\d),(\d)\)", text).groups())
    return f"{'abcdefghi'[c1]}{9 - r1}{'abcdefghi'[c2]}{9 - r2}"


def test_against_open_spiel():
    """Whole uniformly random games: same legal moves at every ply while both go on, and the same
    winner when the game ends by checkmate or stalemate (OpenSpiel also makes stalemate lose).
    OpenSpiel has its own draw rules (and a 500-ply cap), so its draws are not compared."""
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("xiangqi")
    mates = 0
    for seed in range(25):
        rng = random.Random(1000 + seed)
        ref = game.new_initial_state()
        s = games.new_state("xiangqi")
        while not ref.is_terminal() and not s.is_game_over():
            ref_moves = {_openspiel_to_iccs(ref.action_to_string(a)): a for a in ref.legal_actions()}
            ours = {s.move_to_str(a): a for a in s.legal_actions_list()}
            assert set(ref_moves) == set(ours), (seed, s.position())
            m = rng.choice(sorted(ours))
            ref.apply_action(ref_moves[m])
            s.push(ours[m])
        if s.is_game_over() and s.outcome().termination in ("checkmate", "stalemate"):
            assert ref.is_terminal() and ref.returns()[s.outcome().winner] == 1.0
            mates += 1
    assert mates > 0
