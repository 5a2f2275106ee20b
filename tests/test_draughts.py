"""International draughts (FMJD) on 10x10 and the same rules on 8x8: counts, a plain-Python reference,
py-draughts, the capture rules, the draw rules, text."""
import random

import numpy as np
import pytest

import games
from games._state import perft
from games.errors import IllegalMoveError, InvalidMoveError, InvalidPositionError

SPEC = "international_draughts"
SPEC_8 = "international_draughts(board=8)"
SIZES = [(SPEC, 10), (SPEC_8, 8)]


def new(fen=None, spec=SPEC):
    s = games.new_state(spec)
    if fen is not None:
        s.set_position(fen)
    return s


def moves(s):
    """The legal moves as {notation: captured squares (sorted tuple)}."""
    return {s.move_to_str(a): tuple(sorted(c)) for a, f, t, c, p in s.move_details()}


def board_key(s):
    """Pieces and side to move (the position text without its counters)."""
    return ":".join(s.position().split(":")[:3])


# ---- a plain-Python reference generator, straight from the rules ----------------------------------

_DIRS = ((-1, -1), (-1, 1), (1, -1), (1, 1))


def _rc(sq, n):
    r, k = divmod(sq - 1, n // 2)
    return r, (2 * k + 1 if r % 2 == 0 else 2 * k)


def _sq(r, c, n):
    return r * (n // 2) + c // 2 + 1


def reference_moves(cells, n, side):
    """{(from, to, frozenset(captured))} for `side` on `cells` = {square: kind} (kind 0 white man,
    1 white king, 2 black man, 3 black king); captured pieces stay on the board until the end."""
    def on(r, c):
        return 0 <= r < n and 0 <= c < n

    caps = set()
    for f, kind in cells.items():
        if kind // 2 != side:
            continue
        king = kind & 1

        def free(r, c):
            s = _sq(r, c, n)
            return s == f or s not in cells

        def enemy(r, c, taken):
            s = _sq(r, c, n)
            return s != f and s in cells and cells[s] // 2 != side and s not in taken

        def dfs(r, c, taken):
            more = False
            for dr, dc in _DIRS:
                rr, cc = r + dr, c + dc
                if king:
                    while on(rr, cc) and free(rr, cc):
                        rr, cc = rr + dr, cc + dc
                if not (on(rr, cc) and enemy(rr, cc, taken)):
                    continue
                victim = _sq(rr, cc, n)
                lr, lc = rr + dr, cc + dc
                while on(lr, lc) and free(lr, lc):
                    more = True
                    dfs(lr, lc, taken | {victim})
                    if not king:
                        break
                    lr, lc = lr + dr, lc + dc
            if not more and taken:
                caps.add((f, _sq(r, c, n), frozenset(taken)))

        dfs(*_rc(f, n), frozenset())
    if caps:
        best = max(len(m[2]) for m in caps)
        return {m for m in caps if len(m[2]) == best}
    out = set()
    for f, kind in cells.items():
        if kind // 2 != side:
            continue
        r, c = _rc(f, n)
        dirs = _DIRS if kind & 1 else (_DIRS[:2] if side == 0 else _DIRS[2:])
        for dr, dc in dirs:
            rr, cc = r + dr, c + dc
            while on(rr, cc) and _sq(rr, cc, n) not in cells:
                out.add((f, _sq(rr, cc, n), frozenset()))
                if not kind & 1:
                    break
                rr, cc = rr + dr, cc + dc
    return out


def parse_cells(fen):
    side, white, black = fen.split(":")[:3]
    cells = {}
    for body, p in ((white[1:], 0), (black[1:], 1)):
        for tok in filter(None, body.split(",")):
            cells[int(tok.lstrip("K"))] = 2 * p + tok.startswith("K")
    return cells, (0 if side == "W" else 1)


def random_fen(rng, n, nw, nb, p_king):
    w = n // 2
    squares = rng.sample(range(1, n * w + 1), nw + nb)
    lists = ([], [])
    for i, s in enumerate(squares):
        p = 0 if i < nw else 1
        row = (s - 1) // w
        king = rng.random() < p_king or row == (0 if p == 0 else n - 1)
        lists[p].append(("K" if king else "") + str(s))
    return f"{rng.choice('WB')}:W{','.join(lists[0])}:B{','.join(lists[1])}"


def random_positions(spec, n, count, seed, most):
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        fen = random_fen(rng, n, rng.randint(1, most), rng.randint(1, most),
                         rng.choice([0.0, 0.2, 0.5, 1.0]))
        try:
            new(fen, spec)
        except InvalidPositionError:
            continue
        out.append(fen)
    return out


# ---- counts ---------------------------------------------------------------------------------------

def test_perft_start():
    # Published perft of international draughts with duplicate captures removed (docs/GAMES.md):
    # 9, 81, 658, 4265, 27117, 167140, 1049442 (d8 = 6483961 and d9 = 41022423 are measured by the
    # benchmark, not here, to keep the suite fast).
    s = new()
    assert [perft(s, d) for d in range(1, 8)] == [9, 81, 658, 4265, 27117, 167140, 1049442]


def test_perft_start_8x8():
    # Brazilian draughts from the start, as counted by py-draughts' BrazilianBoard (same rules).
    s = new(spec=SPEC_8)
    assert [perft(s, d) for d in range(1, 7)] == [7, 49, 302, 1469, 7473, 37628]


def test_facts():
    for spec, n in SIZES:
        info = games.load(spec)
        nsq = n * n // 2
        assert info.num_actions == nsq * nsq + 512 and info.max_legal == 512
        assert info.max_plies == 1000 and info.planes_shape == (n, n, 4)
        assert info.symmetries == (0,) and info.players == ("white", "black")
        assert info.extra == {"history_dependent": True}
        assert info.facts()["terminal_evaluation"] == "natural margin"


@pytest.mark.parametrize("spec, n", SIZES)
def test_against_the_reference_generator(spec, n):
    """Random positions (many kings, captures everywhere): the same (from, to, captured set) moves."""
    for fen in random_positions(spec, n, 400, 11, 20 if n == 10 else 12):
        s = new(fen, spec)
        cells, side = parse_cells(fen)
        ref = reference_moves(cells, n, side)
        ours = {(f, t, c) for a, f, t, c, p in s.move_details()}
        assert ours == ref, fen
        assert s.is_game_over() == (not ref)
        assert len(s.legal_actions_list()) == len(ref) == perft(s, 1)


# ---- the capture rules on hand-built positions ----------------------------------------------------

def test_men_move_forward_and_capture_backward():
    assert moves(new("W:W32:B3")) == {"32-27": (), "32-28": ()}
    assert moves(new("B:W48:B28")) == {"28-32": (), "28-33": ()}
    assert moves(new("W:W37:B32,42")) == {"37x28": (32,), "37x48": (42,)}   # forward and backward
    assert moves(new("B:W32,33:B28")) == {"28x37": (32,), "28x39": (33,)}


def test_capture_is_compulsory_and_maximal():
    # 28 could take the king on 23 (one piece), but two men can be taken: kings count as one.
    assert moves(new("W:W28,47:BK23,42,32")) == {"28x48": (32, 42), "47x27": (32, 42)}
    # equal counts: free choice between a king and a man
    assert moves(new("W:W28,47:BK23,42,31")) == {"28x19": (23,), "47x38": (42,)}
    # a multiple capture goes on to the end
    assert moves(new("W:W28:B12,13,23,24")) == {"28x17": (12, 13, 23)}


def test_flying_king():
    s = new("W:WK46:B41")
    assert set(moves(s)) == {f"46x{t}" for t in (37, 32, 28, 23, 19, 14, 10, 5)}
    s = new("W:WK46:B37,23")
    assert moves(s) == {f"46x{t}": (23, 37) for t in (19, 14, 10, 5)}
    s = new("W:WK28:B3")
    assert len(s.legal_actions_list()) == 17          # both diagonals through e5, all empty


def test_captured_pieces_block_until_the_end():
    """The king on 29 takes 40 and lands on 45; flying back over the captured 40 to take 7 as well
    would capture two, but a captured piece stays on the board as a blocker."""
    s = new("B:WK30,K7,K40:BK29,K17")
    assert moves(s) == {"29x1": (7,), "29x45": (40,)}


def test_paths_to_the_same_move_are_one_move():
    """Three routes (via 12-23, 12-29, 12-34) take 7, 18 and 40 and end on 45: one move."""
    s = new("W:WK19,K1:B21,18,40,7")
    assert moves(s) == {"1x45": (7, 18, 40)}
    assert s.legal_actions_list() == [0 * 50 + 44]
    for path in ("1x12x23x45", "1x12x29x45", "1x12x34x45", "1x45"):
        assert s.parse_move(path) == 44


def test_same_ends_different_captures():
    """21 reaches 8 and 13 taking either 39 or 44: four moves, two of them with extra ids."""
    s = new("W:WK21,K22,K4:BK44,K19,K2,K32,K39")
    legal = s.legal_actions_list()
    assert legal == [20 * 50 + 7, 20 * 50 + 12, 2500, 2501]
    details = {a: (f, t, tuple(sorted(c))) for a, f, t, c, p in s.move_details()}
    # the smaller captured set (39 < 44) keeps the plain id
    assert details[1007] == (21, 8, (19, 32, 39)) and details[2500] == (21, 8, (19, 32, 44))
    assert details[1012] == (21, 13, (19, 32, 39)) and details[2501] == (21, 13, (19, 32, 44))
    texts = [s.move_to_str(a) for a in legal]
    assert texts == ["21x43x30x8", "21x43x30x13", "21x49x35x8", "21x49x35x13"]
    assert [s.parse_move(t) for t in texts] == legal
    with pytest.raises(InvalidMoveError, match="ambiguous"):
        s.parse_move("21x8")
    with pytest.raises(IllegalMoveError):
        s.parse_move("21x43x30x2")                 # not a move
    s.push(2501)
    assert s.position().startswith("B:WK4,K13,K22:BK2,K39:")
    s.pop()
    with pytest.raises(InvalidMoveError):
        s.move_to_str(2502)                        # no third extra move here


def test_promotion_only_at_the_end_of_the_move():
    s = new("W:W13:B8,7")                          # passes through 2 on the far row, ends on 11
    assert moves(s) == {"13x11": (7, 8)}
    s.push("13x11")
    assert s.position().startswith("B:W11:B:") or s.is_game_over()
    assert s.material() == ((1, 0), (0, 0)) and s.result() == "1-0"
    s = new("W:W13:B8,40")                         # ends on the far row: promoted
    s.push("13x2")
    assert s.material() == ((0, 1), (1, 0)) and s.position().startswith("B:WK2:B40:")
    s = new("W:W6:B40")
    s.push("6-1")
    assert s.material() == ((0, 1), (1, 0))
    s.pop()
    assert s.material() == ((1, 0), (1, 0)) and s.position() == new("W:W6:B40").position()


def test_blocked_or_empty_side_loses():
    s = new("W:W36:B31,27,26")                     # white's only man cannot move
    assert s.is_game_over() and s.result() == "0-1" and s.legal_actions_list() == []
    # score: black wins by (3 - 1) / 20 of material
    assert s.outcome().score == pytest.approx(-(0.05 + 0.95 * (1 + 0.1) / 2))
    s = new("W:W28:B23")
    s.push("28x19")
    assert s.is_game_over() and s.result() == "1-0" and s.outcome().termination == "win"


# ---- draw rules -----------------------------------------------------------------------------------

def _is_king_move(s, f):
    return s._piece_grid()[f - 1] in (1, 3)


def guided(s, plies, seed=0):
    """Play `plies` quiet king moves that never repeat a position and never leave a capture to the
    opponent (a seeded depth-first search with backtracking). Returns the actions."""
    rng = random.Random(seed)
    seen = {board_key(s)}
    played = []

    def walk(left):
        if left == 0:
            return True
        candidates = []
        for a, f, t, c, p in s.move_details():
            if c or not _is_king_move(s, f):
                continue
            child = s.copy()
            child.push(a)
            if board_key(child) in seen or (child.is_game_over() and left > 1):
                continue
            if any(d[3] for d in child.move_details()):
                continue
            candidates.append(a)
        rng.shuffle(candidates)
        for a in candidates:
            s.push(a)
            seen.add(board_key(s))
            played.append(a)
            if walk(left - 1):
                return True
            seen.discard(board_key(s))
            played.pop()
            s.pop()
        return False

    assert walk(plies), f"no {plies} quiet king moves from {s.position()}"
    return played


def test_25_move_rule():
    s = new("W:WK46,K50,31:BK1,K5,20")
    s.push("31-27")                                # a man move: the counter starts at 0
    s.push("20-24")
    guided(s, 49)
    assert not s.is_game_over() and s.clocks()["H"] == 49 and ":H49:" in s.position()
    guided(s, 1)
    assert s.is_game_over() and s.result() == "1/2-1/2"
    assert s.outcome().termination == "25-move rule"
    # the same from text
    t = new(s.position())
    assert t.is_game_over() and t.outcome() == s.outcome()
    # a man move or a capture resets the counter
    s = new("W:WK46,31:BK5,20:H48")
    s.push("31-27")
    assert s.clocks()["H"] == 0 and not s.is_game_over()


def test_threefold_repetition():
    s = new("W:WK46,K50:BK1,K3")
    cycle = ["46-41", "1-6", "41-46", "6-1"]
    for k in range(7):
        s.push(cycle[k % 4])
        assert not s.is_game_over()
    s.push(cycle[3])                               # the start position for the third time
    assert s.is_game_over() and s.result() == "1/2-1/2"
    assert s.outcome().termination == "threefold repetition"
    s.pop()
    assert not s.is_game_over()
    # a position set from text has no history: no repetition yet
    s.push(cycle[3])
    t = new(s.position())
    assert not t.is_game_over()


def test_16_move_rule():
    s = new("W:WK46,K47,K48:BK3")                 # 3 kings against a lone king: the clock starts
    assert s.clocks() == {"H": 0, "S": 0, "V": None} and ":S0:" in s.position()
    guided(s, 31)
    assert not s.is_game_over() and s.clocks()["S"] == 31
    guided(s, 1)
    assert s.is_game_over() and s.outcome().termination == "16-move rule"
    assert new(s.position()).outcome() == s.outcome()


def test_16_move_clock_starts_on_a_capture_and_on_a_promotion():
    s = new("W:WK46,K47,K48:BK3,41")              # 3 kings against king + man: no clock
    assert s.clocks()["S"] is None
    s.push("47x36")
    assert s.clocks()["S"] == 0 and s.clocks()["H"] == 0
    s.pop()
    assert s.clocks()["S"] is None
    s = new("W:W6,36,37:BK3")                      # three men: no king on the strong side yet
    assert s.clocks()["S"] is None
    s.push("6-1")                                  # promotion: king and two men against a king
    assert s.clocks()["S"] == 0


def test_5_move_rule():
    s = new("W:WK46,K47:BK3")
    assert s.clocks() == {"H": 0, "S": None, "V": 0}
    guided(s, 9)
    assert not s.is_game_over()
    guided(s, 1)
    assert s.is_game_over() and s.outcome().termination == "5-move rule"
    s = new("W:WK47:BK4")                          # king against king
    guided(s, 10)
    assert s.is_game_over() and s.outcome().termination == "5-move rule"


def test_16_move_clock_keeps_running_after_a_capture():
    # the 16-move clock at 20 plies, the material now two kings against one: the 5-move clock runs
    # too, and the first to expire draws
    s = new("W:WK46,K47:BK3:S20")
    assert s.clocks() == {"H": 0, "S": 20, "V": 0}
    guided(s, 10)
    assert s.is_game_over() and s.outcome().termination == "5-move rule"
    s = new("W:WK46,K47:BK3:S28")
    guided(s, 4)
    assert s.is_game_over() and s.outcome().termination == "16-move rule"


def test_a_win_on_the_last_allowed_move_is_a_win():
    s = new("W:WK17,K47,K48:BK12:S31")
    assert moves(s) == {"17x8": (12,), "17x3": (12,)}
    s.push("17x8")
    assert s.result() == "1-0" and s.outcome().termination == "win"
    s.pop()
    s = new("W:WK46,K47,K48:BK3:S31")
    s.push(s.legal_actions_list()[0])
    assert s.outcome().termination == "16-move rule"


def test_ply_cap():
    s = new("W:WK46,K47:BK5,K4:F500")
    assert s.ply == 998 and not s.is_game_over()
    guided(s, 2)
    assert s.is_game_over() and s.outcome().termination == "ply cap"


# ---- py-draughts ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pd():
    draughts = pytest.importorskip("draughts")
    from loguru import logger
    logger.disable("draughts")
    from draughts.boards.brazilian import Board as Brazilian
    from draughts.boards.standard import Board as Standard
    return {10: Standard, 8: Brazilian}


def _ref_key(m):
    return m.square_list[0] + 1, m.square_list[-1] + 1, frozenset(c + 1 for c in m.captured_list)


def _play_both(spec, board, s, rng, compare_results):
    """Random moves on both engines; returns the plies played."""
    plies = 0
    while not s.is_game_over():
        assert not board.game_over, s.position()
        ref = {_ref_key(m): m for m in board.legal_moves}
        ours = {(f, t, c): a for a, f, t, c, p in s.move_details()}
        assert set(ref) == set(ours), s.position()
        key = rng.choice(sorted(ours, key=lambda k: ours[k]))
        s.push(ours[key])
        board.push(ref[key])
        plies += 1
    if compare_results:
        assert board.game_over and board.result == s.result(), (s.position(), s.outcome())
    else:
        # py-draughts' Brazilian board applies the Russian draw rules: compare wins only
        if s.outcome().winner is not None:
            assert board.legal_moves == []
    return plies


@pytest.mark.parametrize("spec, n, count", [(SPEC, 10, 30), (SPEC_8, 8, 20)])
def test_games_against_py_draughts(pd, spec, n, count):
    for seed in range(count):
        _play_both(spec, pd[n](), new(spec=spec), random.Random(seed), compare_results=n == 10)


def test_endgames_against_py_draughts(pd):
    """King endgames: the 25/16/5-move rules and repetitions decide many of them."""
    rng = random.Random(7)
    terminations = set()
    for seed in range(60):
        squares = rng.sample(range(6, 46), 6)
        nw = rng.randint(1, 4)
        white = ["K%d" % squares[0]] + [str(x) for x in squares[1:nw]]
        black = ["K%d" % squares[nw]] + [("K" if rng.random() < 0.5 else "") + str(x) for x in squares[nw + 1:]]
        fen = f"W:W{','.join(white)}:B{','.join(black)}"
        s = new(fen)
        _play_both(SPEC, pd[10].from_fen(fen), s, random.Random(seed), compare_results=True)
        terminations.add(s.outcome().termination)
    assert {"win", "5-move rule"} <= terminations


def test_draw_rules_agree_with_py_draughts(pd):
    for fen, plies, reason in [("W:WK46,K50:BK1,K5", 50, "25-move rule"),
                               ("W:WK46,K47,K48:BK3", 32, "16-move rule"),
                               ("W:WK46,K47:BK3", 10, "5-move rule")]:
        s = new(fen)
        actions = guided(s, plies)
        assert s.outcome().termination == reason
        board = pd[10].from_fen(fen)
        t = new(fen)
        for a in actions:
            assert not board.game_over
            ref = {_ref_key(m): m for m in board.legal_moves}
            (f, tt, c), = [(f, tt, c) for b, f, tt, c, p in t.move_details() if b == a]
            board.push(ref[(f, tt, c)])
            t.push(a)
        assert board.game_over and board.result == "1/2-1/2"
    board = pd[10].from_fen("W:WK46,K50:BK1,K3")
    for text in ["46-41", "1-6", "41-46", "6-1"] * 2:
        board.push_uci(text)
    assert board.is_threefold_repetition


@pytest.mark.parametrize("spec, n", SIZES)
def test_positions_against_py_draughts(pd, spec, n):
    for k, fen in enumerate(random_positions(spec, n, 300, 5, 20 if n == 10 else 12)):
        s = new(fen, spec)
        board = pd[n].from_fen(fen)
        assert {_ref_key(m) for m in board.legal_moves} == {(f, t, c) for a, f, t, c, p in s.move_details()}
        if k < 15:
            assert perft(s, 3) == _ref_perft(board, 3), fen


def _ref_perft(board, depth):
    ms = board.legal_moves
    if depth == 1:
        return len(ms)
    total = 0
    for m in ms:
        board.push(m)
        total += _ref_perft(board, depth - 1)
        board.pop()
    return total


def test_fen_interchange_with_py_draughts(pd):
    rng = random.Random(2)
    s = new()
    board = pd[10]()
    for _ in range(40):
        a = rng.choice(s.legal_actions_list())
        f, t, c = [(f, t, c) for b, f, t, c, p in s.move_details() if b == a][0]
        board.push({_ref_key(m): m for m in board.legal_moves}[(f, t, c)])
        s.push(a)
        t2 = new(board.fen)                           # '[FEN "W:W...:B..."]'
        assert board_key(t2) == board_key(s)
        assert pd[10].from_fen(s.position())._pdn_state() == board._pdn_state()


# ---- text -----------------------------------------------------------------------------------------

def test_start_position_text():
    s = new()
    text = "W:W" + ",".join(map(str, range(31, 51))) + ":B" + ",".join(map(str, range(1, 21))) + ":H0:F1"
    assert s.position() == text
    for other in ["W:W31-50:B1-20", '[FEN "W:W31-50:B1-20"]', "w:w31-50:b1-20:h0:f1", "W:B1-20:W31-50"]:
        assert new(other).position() == text
    s8 = new(spec=SPEC_8)
    assert s8.position().startswith("W:W21,22,") and s8.position().endswith(",12:H0:F1")


def test_position_text_round_trip_with_counters():
    s = new("B:WK10,31:BK45,1:H3:F12")
    assert s.position() == "B:WK10,31:B1,K45:H3:F12" and s.ply == 23 and s.to_move == 1
    s = new("W:WK46,K47:BK3:S20:V4:H7:F40")
    assert s.position() == "W:WK46,K47:BK3:H7:S20:V4:F40"
    assert new(s.position()).zobrist_hash == s.zobrist_hash


def test_hash_includes_the_counters_and_side():
    a, b = new("W:WK46,K50:BK1,K5"), new("W:WK46,K50:BK1,K5:H2")
    c = new("B:WK46,K50:BK1,K5")
    assert len({a.zobrist_hash, b.zobrist_hash, c.zobrist_hash}) == 3


def test_notation():
    s = new()
    assert s.parse_move("32-28") == 31 * 50 + 27
    assert s.move_to_str(31 * 50 + 27) == "32-28"
    for text in ["32-28", " 32 - 28 ", "32x28"]:
        assert s.parse_move(text) == 31 * 50 + 27
    s = new("W:W28:B12,13,23,24")
    a = s.legal_actions_list()[0]
    assert s.move_to_str(a) == "28x17"
    assert s.parse_move("28x17") == s.parse_move("28x19x8x17") == s.parse_move("28X19X8X17") == a
    with pytest.raises(IllegalMoveError):
        s.parse_move("28x19x10x17")               # the second leg is no capture


@pytest.mark.parametrize("text", ["", "hello", "32-", "-28", "32--28", "51-46", "0-5", "a1-b2",
                                  "32_28", "3228", "pass"])
def test_malformed_moves(text):
    s = new()
    with pytest.raises(InvalidMoveError) as err:
        s.push(text)
    assert repr(text.strip()) in str(err.value)
    assert s.ply == 0


@pytest.mark.parametrize("text", ["46-41", "33-27", "31-22", "32x23", "31-27-22"])
def test_illegal_moves(text):
    s = new()
    with pytest.raises(IllegalMoveError, match=repr(text)):
        s.push(text)


@pytest.mark.parametrize("text, fragment", [
    ("", "empty"),
    ("X:W31:B1", "side to move"),
    ("W:W31", "both piece lists"),
    ("W:W51:B1", "off the board"),
    ("W:W31,K31:B1", "given twice"),
    ("W:W3:B40", "promotion row"),
    ("W:W31:B46", "promotion row"),
    ("W:W31:B", "has no pieces"),
    ("W:W31:B1:H51", "exceeds"),
    ("W:W31:B1:F0", "must be >= 1"),
    ("W:W31:B1:F502", "ply cap"),
    ("W:W31:B1:Q3", "unexpected field"),
    ("W:W31:B1:H1:H2", "given twice"),
    ("W:W31:B1:S3", "cannot run"),
    ("W:WK31,K32,K33,K34:BK1:S3", "cannot run"),
    ("W:WK31,K32,K33:BK1:V3", "cannot run"),
    ("W:WK31:BK1:V11", "exceeds"),
    ("W:W6-26:BK46", "at most 20"),
    ("W:W3x:B1", "bad square"),
    ("W:W35-31:B1", "off the board"),
])
def test_bad_positions_leave_the_state_untouched(text, fragment):
    s = new()
    s.push("32-28")
    before = (s.position(), s.zobrist_hash, s.move_stack)
    with pytest.raises(InvalidPositionError, match=fragment) as err:
        s.set_position(text)
    assert "international_draughts" in str(err.value)
    assert (s.position(), s.zobrist_hash, s.move_stack) == before


def test_drawing():
    s = new()
    text = str(s)
    assert "white to move" in text and text.count("\n") == 12
    assert new("W:W36:B31,27,26").__str__().count("game over: 0-1") == 1


# ---- encoding, copies -----------------------------------------------------------------------------

@pytest.mark.parametrize("spec, n", SIZES)
def test_encoding_is_from_the_movers_view(spec, n):
    s = new(spec=spec)
    rows = (n - 2) // 2
    x = s.encode_planes()
    assert x.shape == (n, n, 4)
    assert x[n - rows:, :, 0].sum() == rows * n // 2 and x[:rows, :, 2].sum() == rows * n // 2
    assert x[:, :, 1].sum() == x[:, :, 3].sum() == 0
    dark = (np.add.outer(np.arange(n), np.arange(n)) % 2 == 1)
    assert not x[~dark].any()
    s.push(s.legal_actions_list()[0])
    y = s.encode_planes()                          # black to move: the board turned around
    assert y[n - rows:, :, 0].sum() == rows * n // 2 and not y[~dark].any()
    assert y[:rows, :, 2].sum() == rows * n // 2 - 1 and y[rows, :, 2].sum() == 1


def test_encoding_of_kings():
    z = new("B:WK46:BK5").encode_planes()
    # black's king on 5 (j10, top right) is at the bottom left for black; white's on 46 (a1) top right
    assert z[9, 0, 1] == 1 and z[0, 9, 3] == 1 and z.sum() == 2
    z = new("W:WK46:BK5").encode_planes()
    assert z[9, 0, 1] == 1 and z[0, 9, 3] == 1 and z.sum() == 2


def test_undo_after_copy_restores_captures():
    rng = random.Random(4)
    s = new()
    while not s.is_game_over():
        s.push(rng.choice(s.legal_actions_list()))
    c = s.copy()
    assert c.move_stack == s.move_stack
    while c.move_stack:
        c.pop()
    assert c.position() == new().position() and c.zobrist_hash == new().zobrist_hash
    assert s.is_game_over()
