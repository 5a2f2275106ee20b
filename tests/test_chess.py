"""Chess engine: perft tables, a differential test against python-chess, the automatic draw rules,
FEN / UCI text, encoding."""
import random

import numpy as np
import pytest

import games
from games._state import perft, random_games
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError

chess = pytest.importorskip("chess")

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
POS3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
POS4 = "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1"
POS5 = "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8"
POS6 = "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10"


def state(fen=None):
    s = games.new_state("chess")
    if fen is not None:
        s.set_position(fen)
    return s


def uci_set(s):
    return sorted(s.move_to_str(a) for a in s.legal_actions_list())


# ---- facts ------------------------------------------------------------------------------------------

def test_facts():
    info = games.load("chess")
    assert info.players == ("white", "black")
    assert info.num_actions == 4096 + 144
    assert info.max_plies == 1000 and info.max_legal == 256
    assert info.planes_shape == (8, 8, 19) and info.symmetries == (0,)
    assert info.extra == {"history_dependent": True}
    s = info.new_state()
    assert s.position() == START and s.to_move == 0 and s.ply == 0


# ---- perft ------------------------------------------------------------------------------------------
# Published values: the chessprogramming wiki's "Perft Results" page (initial position and positions
# 2-6). Position 6 is the wiki's 'r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - -
# 0 10'. No automatic draw can happen within these depths (too much material, clocks far from 100).

PERFT = [
    (START, [20, 400, 8902, 197281, 4865609]),
    (KIWIPETE, [48, 2039, 97862, 4085603]),
    (POS3, [14, 191, 2812, 43238, 674624]),
    (POS4, [6, 264, 9467, 422333]),
    (POS5, [44, 1486, 62379, 2103487]),
    (POS6, [46, 2079, 89890, 3894594]),
]


@pytest.mark.parametrize("fen, counts", PERFT, ids=["start", "kiwipete", "pos3", "pos4", "pos5", "pos6"])
def test_perft_published(fen, counts):
    s = state(fen)
    assert [perft(s, d) for d in range(1, len(counts) + 1)] == counts
    assert s.position() == fen


def test_perft_position4_mirrored():
    # the wiki's colour-mirrored position 4 has the same counts
    s = state("r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1")
    assert [perft(s, d) for d in range(1, 5)] == [6, 264, 9467, 422333]


def _ref_perft(board, depth):
    """python-chess perft with our automatic draws (insufficient material, fifty-move rule) as
    terminal states; depths here are too small for a threefold repetition."""
    if board.is_insufficient_material() or board.halfmove_clock >= 100:
        return 0
    if depth == 1:
        return board.legal_moves.count()
    n = 0
    for m in list(board.legal_moves):
        board.push(m)
        n += _ref_perft(board, depth - 1)
        board.pop()
    return n


# Positions that stress en passant (pins, checks), castling through / out of / into check,
# promotions out of or into check, stalemates, and material that runs out.
TRICKY = [
    ("3k4/3p4/8/K1P4r/8/8/8/8 b - - 0 1", 4),
    ("8/8/4k3/8/2p5/8/B2P2K1/8 w - - 0 1", 4),
    ("8/8/1k6/2b5/2pP4/8/5K2/8 b - d3 0 1", 4),
    ("8/8/8/2k5/2pP4/8/B7/4K3 b - d3 0 3", 4),
    ("8/8/8/8/k2Pp2Q/8/8/3K4 b - d3 0 1", 4),
    ("5k2/8/8/8/8/8/8/4K2R w K - 0 1", 4),
    ("3k4/8/8/8/8/8/8/R3K3 w Q - 0 1", 4),
    ("r3k2r/1b4bq/8/8/8/8/7B/R3K2R w KQkq - 0 1", 3),
    ("r3k2r/8/3Q4/8/8/5q2/8/R3K2R b KQkq - 0 1", 3),
    ("2K2r2/4P3/8/8/8/8/8/3k4 w - - 0 1", 4),
    ("8/8/1P2K3/8/2n5/1q6/8/5k2 b - - 0 1", 4),
    ("4k3/1P6/8/8/8/8/K7/8 w - - 0 1", 5),
    ("8/P1k5/K7/8/8/8/8/8 w - - 0 1", 5),
    ("K1k5/8/P7/8/8/8/8/8 w - - 0 1", 6),
    ("8/k1P5/8/1K6/8/8/8/8 w - - 0 1", 5),
    ("8/8/2k5/5q2/5n2/8/5K2/8 b - - 0 1", 3),
    ("n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1", 3),
    ("4k3/8/8/8/8/8/8/4K2R w K - 97 80", 4),
]


@pytest.mark.parametrize("fen, depth", TRICKY)
def test_perft_against_python_chess(fen, depth):
    s = state(fen)
    b = chess.Board(fen)
    assert [perft(s, d) for d in range(1, depth + 1)] == [_ref_perft(b, d) for d in range(1, depth + 1)]


# ---- differential test against python-chess along random games --------------------------------------

def _expected_reason(b, ply):
    """Our termination rule, in order of precedence, computed with python-chess."""
    if b.is_checkmate():
        return "checkmate"
    if b.is_insufficient_material():
        return "insufficient material"
    if b.is_stalemate():
        return "stalemate"
    if b.halfmove_clock >= 100:
        return "fifty-move rule"
    if b.is_repetition(3):
        return "threefold repetition"
    if ply >= 1000:
        return "ply cap"
    return None


@pytest.mark.parametrize("start", [START, KIWIPETE, POS3, POS4, POS5])
def test_random_games_against_python_chess(start):
    reasons = set()
    for seed in range(10):
        rng = random.Random(seed)
        b = chess.Board(start)
        s = state(start)
        while True:
            reason = _expected_reason(b, s.ply)
            assert s.position() == b.fen(), (seed, b.fen())
            if reason is not None:
                assert s.is_game_over() and s.outcome().termination == reason, (seed, b.fen(), reason)
                if reason == "checkmate":
                    assert s.outcome().winner == (1 if b.turn == chess.WHITE else 0)
                else:
                    assert s.result() == "1/2-1/2"
                reasons.add(reason)
                break
            assert not s.is_game_over(), (seed, b.fen())
            assert s.is_check() == b.is_check()
            ours = uci_set(s)
            assert ours == sorted(m.uci() for m in b.legal_moves), (seed, b.fen())
            move = rng.choice(ours)
            s.push(move)
            b.push_uci(move)
    assert reasons


# ---- the automatic draws, one by one ----------------------------------------------------------------

def test_checkmate_fools_mate():
    s = state()
    for m in ["f2f3", "e7e5", "g2g4"]:
        s.push(m)
        assert not s.is_game_over()
    s.push("d8h4")
    o = s.outcome()
    assert o.termination == "checkmate" and o.winner == 1 and s.result() == "0-1"
    # equal material: the margin is 0, f_t = -(0.05 + 0.95 * 0.5)
    assert o.score == pytest.approx(-0.525)
    assert s.legal_actions_list() == [] and perft(s, 1) == 0
    s.pop()
    assert not s.is_game_over() and s.outcome() is None


def test_checkmate_score_grows_with_material():
    s = state("6k1/5ppp/8/8/8/8/1Q6/R3K3 w - - 0 40")
    s.push("a1a8")
    o = s.outcome()
    assert o.termination == "checkmate" and o.winner == 0
    m = (5 + 9 - 3) / 39
    assert o.score == pytest.approx(0.05 + 0.95 * (1 + m) / 2)


def test_stalemate():
    s = state("7k/8/6K1/5Q2/8/8/8/8 w - - 0 1")
    s.push("f5f7")
    assert s.is_game_over() and s.outcome().termination == "stalemate" and s.result() == "1/2-1/2"
    assert s.outcome().score == 0.0
    # set directly
    t = state("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert t.outcome().termination == "stalemate" and t.legal_actions_list() == []


@pytest.mark.parametrize("fen, dead", [
    ("8/8/8/4k3/8/4K3/8/8 w - - 0 1", True),                  # K v K
    ("8/8/8/4k3/8/4K3/8/5N2 w - - 0 1", True),                # K+N v K
    ("8/8/8/4k3/8/4K3/8/5B2 b - - 0 1", True),                # K+B v K
    ("8/8/2b5/4k3/8/4K3/8/5B2 w - - 0 1", True),              # bishops on the same colour
    ("8/8/1b6/4k3/8/4K3/8/5B2 w - - 0 1", False),             # opposite colours
    ("8/8/8/4k3/8/4K3/8/4NN2 w - - 0 1", False),              # two knights
    ("8/8/2n5/4k3/8/4K3/8/5N2 w - - 0 1", False),             # a knight each
    ("8/8/8/4k3/8/4K3/4P3/8 w - - 0 1", False),
    ("8/8/8/4k3/8/4K3/8/7R w - - 0 1", False),
])
def test_insufficient_material_set(fen, dead):
    s = state(fen)
    assert chess.Board(fen).is_insufficient_material() == dead
    assert s.is_game_over() == dead
    if dead:
        assert s.outcome().termination == "insufficient material" and s.legal_actions_list() == []


def test_insufficient_material_by_capture():
    s = state("8/8/8/8/3q4/4K3/8/7k w - - 0 1")
    assert not s.is_game_over()
    s.push("e3d4")
    assert s.outcome().termination == "insufficient material" and s.result() == "1/2-1/2"
    s.pop()
    assert not s.is_game_over() and s.position() == "8/8/8/8/3q4/4K3/8/7k w - - 0 1"


def test_threefold_repetition_by_knight_shuffles():
    s = state()
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    for m in shuffle:
        s.push(m)
    assert not s.is_game_over() and s.position().split()[:4] == START.split()[:4]
    assert s.encode_planes()[..., 18].all()            # the start position occurred before
    for m in shuffle[:3]:
        s.push(m)
        assert not s.is_game_over()
    c = s.copy()
    s.push(shuffle[3])
    o = s.outcome()
    assert o.termination == "threefold repetition" and o.result() == "1/2-1/2" and o.score == 0.0
    assert s.legal_actions_list() == [] and perft(s, 1) == 0
    # the copy carries the history: it sees the repetition too
    c.push(shuffle[3])
    assert c.outcome().termination == "threefold repetition"
    s.pop()
    assert not s.is_game_over()
    # the same position set from text has no history: no draw
    t = state(c.position())
    assert not t.is_game_over()


def _play_until_over(fen, moves):
    """Push `moves` on our state and on python-chess; return the ply (moves pushed) at which ours
    ends the game, checking python-chess agrees at every step."""
    s, b = state(fen), chess.Board(fen)
    for i, m in enumerate(moves):
        s.push(m)
        b.push_uci(m)
        assert s.is_game_over() == b.is_repetition(3), (i, b.fen())
        if s.is_game_over():
            assert s.outcome().termination == "threefold repetition"
            return i + 1
    return None


def test_repetition_needs_same_castling_rights():
    # the start position (with castling rights) comes back at plies 4 and 8 without them, so it is
    # not repeated three times at ply 8; the position after 1. Ke2 Ke7 is (plies 2, 6, 10)
    shuffle = ["e1e2", "e8e7", "e2e1", "e7e8"] * 3
    assert _play_until_over("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", shuffle) == 10
    assert _play_until_over("r3k2r/8/8/8/8/8/8/R3K2R w - - 0 1", shuffle) == 8


def test_repetition_with_en_passant_right():
    # after 1...d7d5 white may capture en passant: that position differs from the same placement
    # at plies 4 and 8 (no en-passant right), so the first third occurrence is at ply 9
    s = state("4k3/3p4/8/4P3/8/8/8/4K3 b - - 0 1")
    s.push("d7d5")
    assert s.position() == "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2"
    shuffle = ["e1e2", "e8e7", "e2e1", "e7e8"] * 3
    assert _play_until_over(s.position(), shuffle) == 9
    assert _play_until_over("4k3/8/8/3pP3/8/8/8/4K3 w - - 0 2", shuffle) == 8


def test_fifty_move_rule():
    s = state("8/8/8/4k3/8/8/3R4/4K3 w - - 99 80")
    assert not s.is_game_over()
    s.push("d2d3")
    assert s.outcome().termination == "fifty-move rule" and s.result() == "1/2-1/2"
    assert s.position().split()[4] == "100"
    s.pop()
    # a pawn move or a capture on the 100th ply resets the clock
    s = state("8/8/8/4k3/8/8/3P4/4K3 w - - 99 80")
    s.push("d2d3")
    assert not s.is_game_over() and s.position().split()[4] == "0"
    # a clock of 100 in the text is a finished game
    assert state("8/8/8/4k3/8/8/3R4/4K3 w - - 100 80").outcome().termination == "fifty-move rule"


def test_checkmate_beats_the_fifty_move_rule():
    s = state("6k1/5ppp/8/8/8/8/8/R3K3 w - - 99 60")
    s.push("a1a8")
    assert s.outcome().termination == "checkmate" and s.result() == "1-0"


def test_ply_cap():
    s = state("8/8/8/4k3/8/8/3R4/4K3 b - - 0 500")
    assert s.ply == 999 and not s.is_game_over()
    s.push("e5e6")
    assert s.ply == 1000 and s.outcome().termination == "ply cap" and s.result() == "1/2-1/2"
    assert state(s.position()).outcome().termination == "ply cap"


def test_random_games_end():
    s = state()
    results, lengths = random_games(s, 300, 5)
    assert lengths.max() <= 1000 and set(np.unique(results)) <= {-1, 0, 1}
    assert s.ply == 0 and s.position() == START


# ---- hashing, copies --------------------------------------------------------------------------------

def test_hash_transpositions_and_clock():
    a, b = state(), state()
    for m in ["g1f3", "g8f6", "b1c3"]:
        a.push(m)
    for m in ["b1c3", "g8f6", "g1f3"]:
        b.push(m)
    assert a.position() == b.position() and a.zobrist_hash == b.zobrist_hash
    # same placement, different halfmove clock: different states
    c, d = state("4k3/8/8/8/8/8/8/R3K3 w Q - 3 10"), state("4k3/8/8/8/8/8/8/R3K3 w Q - 4 10")
    assert c.zobrist_hash != d.zobrist_hash
    e = state("4k3/8/8/8/8/8/8/R3K3 w - - 3 10")
    assert c.zobrist_hash != e.zobrist_hash
    f = state("4k3/8/8/8/8/8/8/R3K3 b - - 3 10")
    assert e.zobrist_hash != f.zobrist_hash


def test_push_pop_restores_everything():
    for fen in (KIWIPETE, POS4, POS5):
        rng = random.Random(fen)
        s = state(fen)
        trail = []
        while not s.is_game_over():
            trail.append((s.position(), s.zobrist_hash, s.legal_actions_list()))
            s.push(rng.choice(trail[-1][2]))
        for position, h, legal in reversed(trail):
            s.pop()
            assert (s.position(), s.zobrist_hash, s.legal_actions_list()) == (position, h, legal)


# ---- notation ---------------------------------------------------------------------------------------

def test_uci_special_moves():
    s = state(KIWIPETE)
    moves = uci_set(s)
    assert "e1g1" in moves and "e1c1" in moves
    s.push("e1g1")
    assert s.position() == "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R4RK1 b kq - 1 1"
    s = state(POS4)
    s.push("f1f2")
    ups = [m for m in uci_set(s) if len(m) == 5]
    assert sorted(ups) == sorted(a + p for a in ("b2a1", "b2b1") for p in "qrbn")
    for p in "qrbn":
        a = s.parse_move("b2a1" + p)
        assert s.move_to_str(a) == "b2a1" + p
        assert (a >= 4096) == (p != "q")
    b = chess.Board(POS4)
    for m in ("f1f2", "b2a1n"):
        b.push_uci(m)
    s.push("b2a1n")
    assert s.position() == b.fen() and b.piece_at(chess.A1).symbol() == "n"
    # en passant
    s = state("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3")
    assert "e5f6" in uci_set(s) and "e5d6" not in uci_set(s)
    s.push("e5f6")
    assert s.position() == "rnbqkbnr/ppp1p1pp/5P2/3p4/8/8/PPPP1PPP/RNBQKBNR b KQkq - 0 3"


def test_uci_round_trip_along_games():
    for fen in (START, POS4, POS5):
        rng = random.Random(7)
        s = state(fen)
        for _ in range(60):
            if s.is_game_over():
                break
            legal = s.legal_actions_list()
            assert legal == sorted(legal)
            for a in legal:
                assert s.parse_move(s.move_to_str(a)) == a
            s.push(s.move_to_str(rng.choice(legal)))


@pytest.mark.parametrize("text, error, fragment", [
    ("e2e9", InvalidMoveError, "malformed move 'e2e9'"),
    ("e2", InvalidMoveError, "malformed move 'e2'"),
    ("Nf3", InvalidMoveError, "malformed move 'Nf3'"),
    ("e2e2", InvalidMoveError, "does not leave its square"),
    ("e2e4q", InvalidMoveError, "promotion piece"),
    ("e7e8k", InvalidMoveError, "malformed move"),
    ("0000", InvalidMoveError, "null move"),
    ("e2e5", IllegalMoveError, "illegal move 'e2e5'"),
    ("e1g1", IllegalMoveError, "illegal move 'e1g1'"),
])
def test_bad_uci(text, error, fragment):
    s = state()
    with pytest.raises(error) as err:
        s.push(text)
    assert fragment in str(err.value)
    assert s.position() == START


def test_promotion_needs_a_letter():
    s = state("8/4P1k1/8/8/8/8/8/4K3 w - - 0 1")
    with pytest.raises(IllegalMoveError, match="without a promotion letter"):
        s.parse_move("e7e8")
    assert s.parse_move("e7e8q") == 52 * 64 + 60
    assert s.move_to_str(52 * 64 + 60) == "e7e8q"


# ---- FEN --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fen", [START, KIWIPETE, POS3, POS4, POS5, POS6,
                                 "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
                                 "4k3/8/8/8/8/8/8/4K2R b K - 37 120"])
def test_fen_round_trip(fen):
    s = state(fen)
    assert s.position() == fen == chess.Board(fen).fen()
    assert s.ply == 2 * (int(fen.split()[5]) - 1) + (fen.split()[1] == "b")


def test_fen_defaults_and_normalisation():
    assert state("4k3/8/8/8/8/8/8/4K2R w K -").position() == "4k3/8/8/8/8/8/8/4K2R w K - 0 1"
    # an en-passant square without a legal capture is dropped (as python-chess's fen() does)
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
    assert state(fen).position() == "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    assert state(fen).zobrist_hash == state(fen.replace(" e3 ", " - ")).zobrist_hash
    s = state()
    s.push("e2e4")
    assert s.position() == chess.Board(fen).fen()
    # the en-passant square stays when the capture is legal, goes when it is pinned
    assert " d6 " in state("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2").position()
    assert " d6 " not in state("4k3/8/8/K2pP2r/8/8/8/8 w - d6 0 2").position()


@pytest.mark.parametrize("fen, fragment", [
    ("", "expected 6 space-separated fields"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR", "expected 6"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1", "has 7 rows"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w KQkq - 0 1", "unexpected character 'X'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0 1", "has 7 squares"),
    ("rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "unexpected character '9'"),
    ("rnbqkbnr/pppppppp/44/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "two digits in a row"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNRR w KQkq - 0 1", "more than 8 squares"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQQBNR w kq - 0 1", "white has 0 kings"),
    ("rnbkkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQ - 0 1", "black has 2 kings"),
    ("rnbqkbnr/pppppppp/8/8/8/P7/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "9 pawns"),
    ("rnbqkbnr/pppppppp/8/8/8/N7/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "17 pieces"),
    ("4k3/8/8/8/8/8/8/P3K3 w - - 0 1", "a pawn stands on a1"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1", "side to move 'x'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkX - 0 1", "unexpected 'X'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KKq - 0 1", "repeats 'K'"),
    ("4k3/8/8/8/8/8/8/4K3 w K - 0 1", "castling right 'K'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e9 0 1", "en-passant field 'e9'"),
    ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e6 0 1", "must be on rank 3"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq e3 0 1", "does not follow a double pawn step"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - x 1", "halfmove clock 'x'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 101 1", "exceeds 100"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 0", "fullmove number '0'"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 502", "beyond the ply cap"),
    ("4k3/8/8/8/8/8/8/4K2r b - - 0 1", "not to move (white) is in check"),
    ("4k3/4R3/8/8/8/8/8/4K3 w - - 0 1", "not to move (black) is in check"),
    ("8/8/8/3kK3/8/8/8/8 w - - 0 1", "next to each other"),
    ("4k3/8/5N2/1B6/8/8/8/4R1K1 b - - 0 1", "3 pieces give check"),
])
def test_bad_fen(fen, fragment):
    s = state(KIWIPETE)
    with pytest.raises(InvalidPositionError) as err:
        s.set_position(fen)
    msg = str(err.value)
    assert msg.startswith("chess:") and fragment in msg and repr(fen) in msg
    assert s.position() == KIWIPETE


# ---- encoding, drawing ------------------------------------------------------------------------------

def test_encoding_mover_view():
    w = state().encode_planes()
    # the start position with black to move looks the same from black's side
    b = state("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1").encode_planes()
    np.testing.assert_array_equal(w, b)
    assert w.shape == (8, 8, 19)
    assert w[6, :, 0].all() and w[1, :, 6].all()         # own pawns on the row above the bottom
    assert w[7, 4, 5] == 1 and w[0, 4, 11] == 1          # kings on e1 / e8
    assert w[..., 12:16].all() and not w[..., 16:].any()
    s = state("4k3/8/8/3pP3/8/8/8/4K3 w - d6 40 2")
    x = s.encode_planes()
    assert x[2, 3, 16] == 1 and x[..., 16].sum() == 1     # d6 seen from white: row 8 - 6
    assert x[..., 17].sum() == 40 * 64 // 100 and not x[..., 12:16].any()
    s = state("4k3/8/8/8/3pP3/8/8/4K2R b K e3 0 2")
    x = s.encode_planes()
    assert x[2, 4, 16] == 1                               # e3 seen from black: row 3 - 1
    assert x[..., 14].all() and not x[..., 12].any()      # white's (opponent's) king-side right
    assert x[3, 3, 0] == 1 and x[3, 4, 6] == 1            # own pawn d4, opponent's pawn e4


def test_drawing():
    s = state("4k3/8/8/8/8/8/8/QQQQK3 b - - 0 1")
    s.push("e8f7")
    lines = str(s).splitlines()
    assert lines[0].strip() == "a b c d e f g h" and lines[9].strip() == "a b c d e f g h"
    assert lines[2].startswith("7 ") and lines[2].split()[6] == "k"
    assert lines[8].startswith("1 Q Q Q Q K")
    assert lines[10] == "white to move (ply 2)"
    s = state("6k1/5ppp/8/8/8/8/8/R3K3 w - - 0 1")
    s.push("a1a8")
    assert str(s).splitlines()[-1] == "game over: 1-0 (checkmate, ply 1)"


def test_transform_action():
    s = state()
    assert s.transform_action(0, 796) == 796
    with pytest.raises(ValueError):
        s.transform_action(4, 796)
