"""LoBoGames' four small engines: tapatan, alquerque, tsoro yematatu, five field kono.

Each game is checked against a tiny pure-Python reference written here from the rules (coordinates
and point names, no action ids, no code shared with the engines): perft from the start, then the legal
move sets, the notation and the outcome at every ply of seeded random games. Then each rule on
hand-built positions, round trips, bad input, and a golden playthrough per game
(tests/playthroughs/<game>.txt; rewrite them with ``DESCENT_REGEN_PLAYTHROUGHS=1``).
"""
import itertools
import os
import random
from collections import Counter
from pathlib import Path

import pytest

import games
import games.alquerque as alq
from games._state import perft
from games.errors import GameError, IllegalMoveError, InvalidMoveError, InvalidPositionError

FILES = "abcde"
PLAYTHROUGHS = Path(__file__).parent / "playthroughs"


def name(f, r):
    """Point name from file and rank indices (0-based, rank 0 = row 1 at the bottom)."""
    return FILES[f] + str(r + 1)


def coords(p):
    return FILES.index(p[0]), int(p[1:]) - 1


# ==== the reference implementations ===================================================================

class RefGame:
    """Shared bookkeeping of the references: cells {point: 0 | 1}, side, ply, repetition counts."""

    cap = 100
    repetition = True

    def __init__(self):
        self.cells = {}
        self.side = 0
        self.ply = 0
        self.seen = Counter()
        self.over = None            # (winner or None, reason)

    def key(self):
        return frozenset(self.cells.items()), self.side

    def start(self):
        self.seen[self.key()] += 1
        return self

    def after_move(self, mover):
        """The outcome checks, in the engines' documented order."""
        self.side = 1 - mover
        self.ply += 1
        self.seen[self.key()] += 1
        won = self.winner_reason(mover)
        if won:
            self.over = (mover, won)
        elif not self.moves():
            self.over = (mover, "no legal move")
        elif self.repetition and self.seen[self.key()] >= 3:
            self.over = (None, "threefold repetition")
        elif self.ply >= self.cap:
            self.over = (None, "ply cap")


class RefAlign(RefGame):
    """Tapatan and tsoro: points, steps (pairs), jumps (from, over, to), winning lines."""

    def __init__(self, steps, jumps, lines, drops=True, preset=None):
        super().__init__()
        self.steps, self.jumps, self.lines, self.drops = steps, jumps, lines, drops
        self.points = sorted({p for line in lines for p in line})
        if preset:
            self.cells = dict(preset)

    def moves(self):
        me = self.side
        if self.drops and list(self.cells.values()).count(me) < 3:
            return {p for p in self.points if p not in self.cells}
        out = {f"{a}-{b}" for a, b in self.steps if self.cells.get(a) == me and b not in self.cells}
        out |= {f"{a}-{c}" for a, b, c in self.jumps
                if self.cells.get(a) == me and b in self.cells and c not in self.cells}
        return out

    def winner_reason(self, mover):
        if any(all(self.cells.get(p) == mover for p in line) for line in self.lines):
            return "three in a row"
        return None

    def play(self, move):
        mover = self.side
        if "-" in move:
            a, b = move.split("-")
            del self.cells[a]
            self.cells[b] = mover
        else:
            self.cells[move] = mover
        self.after_move(mover)


def ref_tapatan(start="placement"):
    pts = [name(f, r) for f in range(3) for r in range(3)]
    steps = []
    for a in pts:
        for b in pts:
            (fa, ra), (fb, rb) = coords(a), coords(b)
            df, dr = abs(fa - fb), abs(ra - rb)
            if df + dr == 1 or (df == dr == 1 and "b2" in (a, b)):
                steps.append((a, b))
    lines = [tuple(name(f, r) for f in range(3)) for r in range(3)]
    lines += [tuple(name(f, r) for r in range(3)) for f in range(3)]
    lines += [("a1", "b2", "c3"), ("a3", "b2", "c1")]
    preset = None
    if start == "preset":
        preset = {"a1": 0, "c1": 0, "b3": 0, "a3": 1, "c3": 1, "b1": 1}
    return RefAlign(steps, [], lines, drops=start == "placement", preset=preset).start()


def ref_tsoro():
    lines = [("1", "2", "5"), ("1", "3", "6"), ("1", "4", "7"), ("2", "3", "4"), ("5", "6", "7")]
    steps, jumps = [], []
    for a, b, c in lines:
        steps += [(a, b), (b, a), (b, c), (c, b)]
        jumps += [(a, b, c), (c, b, a)]
    return RefAlign(steps, jumps, lines).start()


class RefKono(RefGame):
    cap = 200

    def __init__(self):
        super().__init__()
        self.homes = ([name(f, 0) for f in range(5)] + ["a2", "e2"],
                      [name(f, 4) for f in range(5)] + ["a4", "e4"])
        for p in (0, 1):
            for q in self.homes[p]:
                self.cells[q] = p

    def moves(self):
        out = set()
        for p, who in self.cells.items():
            if who != self.side:
                continue
            f, r = coords(p)
            for df in (-1, 1):
                for dr in (-1, 1):
                    if 0 <= f + df < 5 and 0 <= r + dr < 5 and name(f + df, r + dr) not in self.cells:
                        out.add(f"{p}-{name(f + df, r + dr)}")
        return out

    def winner_reason(self, mover):
        if all(self.cells.get(q) == mover for q in self.homes[1 - mover]):
            return "occupation of the opponent's start"
        return None

    def play(self, move):
        mover = self.side
        a, b = move.split("-")
        del self.cells[a]
        self.cells[b] = mover
        self.after_move(mover)


class RefAlquerque(RefGame):
    """Moves are ('-', from, to) for steps and (from, to, frozenset(captured)) for captures."""

    cap = 200
    repetition = False

    def __init__(self, rules="lobogames"):
        super().__init__()
        self.multi = rules == "lobogames"
        for f in range(5):
            for r in range(5):
                if r < 2 or (r == 2 and f >= 3):
                    self.cells[name(f, r)] = 0
                elif r > 2 or (r == 2 and f < 2):
                    self.cells[name(f, r)] = 1

    @staticmethod
    def directions(p):
        f, r = coords(p)
        out = [(1, 0), (-1, 0), (0, 1), (0, -1)]
        if (f + r) % 2 == 0:
            out += [(1, 1), (1, -1), (-1, 1), (-1, -1)]
        return out

    def point(self, p, df, dr, k=1):
        f, r = coords(p)
        f, r = f + k * df, r + k * dr
        return name(f, r) if 0 <= f < 5 and 0 <= r < 5 else None

    def jumps(self, cells, p, me):
        for df, dr in self.directions(p):
            over, to = self.point(p, df, dr), self.point(p, df, dr, 2)
            if to and cells.get(over) == 1 - me and to not in cells:
                yield over, to

    def sequences(self, start, me):
        found = set()

        def walk(cells, cur, taken):
            ext = False
            for over, to in self.jumps(cells, cur, me):
                ext = True
                nxt = dict(cells)
                del nxt[over], nxt[cur]
                nxt[to] = me
                walk(nxt, to, taken | {over})
            if not ext and taken:
                found.add((start, cur, frozenset(taken)))

        walk(self.cells, start, frozenset())
        return found

    def moves(self):
        me = self.side
        mine = [p for p, who in self.cells.items() if who == me]
        if self.multi:
            caps = set().union(*[self.sequences(p, me) for p in mine]) if mine else set()
            if caps:
                return caps
        forward = 1 if me == 0 else -1
        out = {("-", p, self.point(p, df, dr)) for p in mine for df, dr in self.directions(p)
               if dr != -forward and self.point(p, df, dr) and self.point(p, df, dr) not in self.cells}
        if not self.multi:
            out |= {(p, to, frozenset([over])) for p in mine for over, to in self.jumps(self.cells, p, me)}
        return out

    def winner_reason(self, mover):
        return None if 1 - mover in self.cells.values() else "all pieces captured"

    def play(self, move):
        mover = self.side
        if move[0] == "-":
            a, b = move[1:]
            taken = ()
        else:
            a, b, taken = move
        del self.cells[a]
        for q in taken:
            del self.cells[q]
        self.cells[b] = mover
        self.after_move(mover)

    def path(self, move):
        """One path text of a capture (found on the current board)."""
        a, b, taken = move
        me = self.side

        def walk(cells, cur, left, trail):
            if not left and cur == b:
                return trail
            for over, to in self.jumps(cells, cur, me):
                if over in left:
                    nxt = dict(cells)
                    del nxt[over], nxt[cur]
                    nxt[to] = me
                    got = walk(nxt, to, left - {over}, trail + [to])
                    if got:
                        return got
            return None

        return "x".join(walk(self.cells, a, set(taken), [a]))


def ours(s):
    """The engine's legal moves in the reference's terms, mapped to their action ids."""
    out = {}
    for a in s.legal_actions_list():
        if s.game.name == "alquerque":
            if a < 112:
                m = ("-",) + tuple(s.move_to_str(a).split("-"))
            else:
                f, t, taken = alq.capture_entry(a - 112)
                pn = [alq._name(q) for q in (f, t) + taken]
                m = (pn[0], pn[1], frozenset(pn[2:]))
        else:
            m = s.move_to_str(a)
        out[m] = a
    return out


REFERENCES = {
    "tapatan": lambda: ref_tapatan(),
    "tapatan(start=preset)": lambda: ref_tapatan("preset"),
    "tsoro_yematatu": ref_tsoro,
    "five_field_kono": RefKono,
    "alquerque": lambda: RefAlquerque(),
    "alquerque(rules=ludii)": lambda: RefAlquerque("ludii"),
}
SPECS = list(REFERENCES)


def ref_perft(ref, depth):
    if depth == 0:
        return 1
    if ref.over:
        return 0
    total = 0
    for m in ref.moves():
        child = _clone(ref)
        child.play(m)
        total += ref_perft(child, depth - 1)
    return total


def _clone(ref):
    c = object.__new__(type(ref))
    c.__dict__.update(ref.__dict__)
    c.cells, c.seen = dict(ref.cells), Counter(ref.seen)
    return c


# ==== counts and the reference comparison =============================================================

# perft 1-4 from the start, computed by the references above (and checked against them below)
PERFT = {
    "tapatan": [9, 72, 504, 3024],             # the drop phase is tic-tac-toe's first plies
    "tapatan(start=preset)": [5, 20, 86, 358],
    "tsoro_yematatu": [7, 42, 210, 840],
    "five_field_kono": [8, 62, 564, 4904],
    "alquerque": [4, 5, 6, 12],
    "alquerque(rules=ludii)": [4, 8, 33, 189],
}


@pytest.mark.parametrize("spec", SPECS)
def test_perft_against_reference(spec):
    s = games.new_state(spec)
    expected = PERFT[spec]
    assert [perft(s, d) for d in range(1, 5)] == expected
    assert [ref_perft(REFERENCES[spec](), d) for d in range(1, 5)] == expected


def test_tapatan_drop_phase_is_tic_tac_toe():
    # until the sixth drop, tapatan's drop phase and tic-tac-toe have the same tree
    t, x = games.new_state("tapatan"), games.new_state("tic_tac_toe")
    assert [perft(t, d) for d in range(1, 7)] == [perft(x, d) for d in range(1, 7)]


@pytest.mark.parametrize("spec", SPECS)
def test_random_games_against_reference(spec):
    n_games = 12 if spec.startswith("alquerque") else 30
    reasons = Counter()
    for seed in range(n_games):
        rng = random.Random(seed)
        s, ref = games.new_state(spec), REFERENCES[spec]()
        while True:
            assert s.is_game_over() == (ref.over is not None), (seed, s.position())
            if ref.over:
                break
            mine = ours(s)
            assert set(mine) == ref.moves(), (seed, s.position())
            assert s.to_move == ref.side and s.ply == ref.ply
            move = rng.choice(sorted(mine, key=str))
            text = ref.path(move) if spec.startswith("alquerque") and move[0] != "-" else None
            if text is not None:
                assert s.parse_move(text) == mine[move]      # the reference's path names the move
            ref.play(move)
            s.push(mine[move])
        o = s.outcome()
        assert (o.winner, o.termination) == ref.over, (seed, s.position())
        assert o.score == (0.0 if o.winner is None else
                           (1 if o.winner == 0 else -1) * (s.game.max_plies - s.ply + 1) / s.game.max_plies)
        reasons[o.termination] += 1
    assert sum(reasons.values()) == n_games


def test_tapatan_and_tsoro_never_block_the_mover():
    """'No legal move loses' never happens: every movement-phase position (3 + 3 pieces, no line)
    leaves the side to move a move."""
    for spec, npts, fmt in (("tapatan", 9, lambda c: "/".join("".join(c[i:i + 3]) for i in (0, 3, 6))),
                            ("tsoro_yematatu", 7, lambda c: c[0] + "/" + "".join(c[1:4]) + "/" + "".join(c[4:]))):
        s = games.new_state(spec)
        count = 0
        for xs in itertools.combinations(range(npts), 3):
            for os_ in itertools.combinations([p for p in range(npts) if p not in xs], 3):
                cells = ["x" if p in xs else "o" if p in os_ else "." for p in range(npts)]
                for side in "xo":
                    try:
                        s.set_position(f"{fmt(cells)} {side} {6 if side == 'x' else 7}")
                    except InvalidPositionError:       # both sides have a line
                        continue
                    count += 1
                    assert not s.is_game_over() or s.outcome().termination == "three in a row"
        assert count > 100


@pytest.mark.parametrize("spec", SPECS)
def test_round_trips_keep_the_history(spec):
    """Texts, push/pop and copies: a game replayed after popping, or from a copy taken halfway, ends
    the same way (the repetition history travels with the state)."""
    for seed in range(6):
        rng = random.Random(1000 + seed)
        s = games.new_state(spec)
        trail = []
        while not s.is_game_over():
            a = rng.choice(s.legal_actions_list())
            assert s.parse_move(s.move_to_str(a)) == a
            t = games.new_state(spec)
            t.set_position(s.position())
            assert (t.position(), t.zobrist_hash) == (s.position(), s.zobrist_hash)
            trail.append(a)
            s.push(a)
        end = (s.position(), s.zobrist_hash, s.outcome())
        half = len(trail) // 2
        while s.ply > half:
            s.pop()
        c = s.copy()
        for x in (s, c):
            for a in trail[half:]:
                x.push(a)
            assert (x.position(), x.zobrist_hash, x.outcome()) == end


# ==== facts ============================================================================================

def test_facts():
    t = games.load("tapatan")
    assert (t.num_actions, t.max_plies, t.planes_shape, t.symmetries) == (41, 100, (3, 3, 2), tuple(range(8)))
    assert t.extra == {"history_dependent": True} and t.players == ("x", "o")
    assert games.load("tapatan(start=preset)").symmetries == (0, 4)
    z = games.load("tsoro_yematatu")
    assert (z.num_actions, z.max_plies, z.planes_shape, z.symmetries) == (37, 100, (3, 3, 3), (0, 4))
    k = games.load("five_field_kono")
    assert (k.num_actions, k.max_plies, k.planes_shape, k.symmetries) == (64, 200, (5, 5, 2), (0, 4))
    a = games.load("alquerque")
    assert a.num_actions == 112 + 93074 == 112 + alq.NUM_CAPTURES
    assert (a.max_plies, a.planes_shape, a.symmetries, a.max_legal) == (200, (5, 5, 2), (0,), 3120)
    assert games.load("alquerque(rules=ludii)").max_legal == 96
    assert "history_dependent" not in a.extra


def test_alquerque_capture_table():
    # every entry is a jump path: its id round-trips, single jumps included
    for i in range(0, alq.NUM_CAPTURES, 997):
        f, t, taken = alq.capture_entry(i)
        assert alq.capture_id(f, t, taken) == 112 + i and 1 <= len(taken) <= 12
    assert alq.capture_id(7, 17, [12]) >= 112                 # c4 x c2 over c3
    assert alq.capture_id(7, 17, [11]) == -1                  # not a jump path
    with pytest.raises(GameError):          # a documented class (issue 20), not IndexError
        alq.capture_entry(alq.NUM_CAPTURES)


# ==== tapatan ==========================================================================================

def test_tapatan_start_positions_and_drawing():
    s = games.new_state("tapatan")
    assert s.position() == "3/3/3 x 0"
    p = games.new_state("tapatan(start=preset)")
    assert p.position() == "oxo/3/xox x 0"
    assert sorted(p.move_to_str(a) for a in p.legal_actions_list()) == ["a1-a2", "a1-b2", "b3-b2", "c1-b2", "c1-c2"]
    drawing = str(p)
    assert "o---x---o" in drawing and "| \\ | / |" in drawing and "movement phase" in drawing


def test_tapatan_win_in_drop_phase():
    s = games.new_state("tapatan")
    for m in ["a1", "a3", "b2", "c1", "c3"]:
        s.push(m)
    assert s.is_game_over() and s.result() == "1-0"
    o = s.outcome()
    assert o.termination == "three in a row" and o.score == pytest.approx((100 - 5 + 1) / 100)


def test_tapatan_win_in_movement_phase():
    s = games.new_state("tapatan")
    s.set_position("1xo/x2/oxo x 6")
    assert sorted(s.move_to_str(a) for a in s.legal_actions_list()) == [
        "a2-a3", "a2-b2", "b1-b2", "b3-a3", "b3-b2"]
    s.push("b3-a3")                            # no line
    assert not s.is_game_over()
    s.pop()
    s.push("a2-b2")                            # b3, b2, b1: a column
    assert s.is_game_over() and s.outcome().winner == 0 and s.outcome().termination == "three in a row"
    assert s.legal_actions_list() == [] and s.position() == "1xo/1x1/oxo o 7"
    s.pop()
    assert s.position() == "1xo/x2/oxo x 6" and not s.is_game_over()


def test_tapatan_repetition_draw():
    s = games.new_state("tapatan(start=preset)")
    moves = ["a1-a2", "c3-c2", "a2-a1", "c2-c3"]
    for m in moves * 2:
        assert not s.is_game_over()
        s.push(m)
    # the start position with x to move, a third time
    assert s.is_game_over() and s.result() == "1/2-1/2" and s.ply == 8
    assert s.outcome().termination == "threefold repetition" and s.outcome().score == 0.0
    h = s.zobrist_hash
    fresh = games.new_state("tapatan(start=preset)")
    fresh.set_position(s.position())           # no history: not a draw, and another hash
    assert not fresh.is_game_over() and fresh.zobrist_hash != h
    s.pop()
    assert not s.is_game_over()
    c = s.copy()                               # the copy keeps the history too
    c.push(moves[3])
    assert c.outcome().termination == "threefold repetition"


def test_tapatan_ply_cap_and_hash_with_ply():
    s = games.new_state("tapatan")
    s.set_position("xo1/1xx/o1o x 98")
    s.push("b2-b1")
    assert not s.is_game_over()
    s.push("b3-b2")
    assert s.is_game_over() and s.outcome().termination == "ply cap" and s.ply == 100
    a, b = games.new_state("tapatan"), games.new_state("tapatan")
    a.set_position("xo1/1xx/o1o x 10")
    b.set_position("xo1/1xx/o1o x 12")
    assert a.zobrist_hash != b.zobrist_hash   # the ply is part of the hash


def test_tapatan_bad_input():
    s = games.new_state("tapatan")
    for text in ["d1", "a4", "a1-c3", "a1-b3", "a1xb2", "b2-"]:
        with pytest.raises(InvalidMoveError, match=text):
            s.parse_move(text)
    with pytest.raises(IllegalMoveError):
        s.push("a1-b2")                        # a step in the drop phase
    for text in ["xxxx/3/3 x", "xxx/xx1/3 o", "x2/3/3 x", "3/3/3 o", "3/3/3 x 3", "xo1/1x1/o1o x 7",
                 "xo1/1xx/o1o x 102", "xo1/1xx/o1o x 3", "xxx/ooo/3 x 6"]:
        with pytest.raises(InvalidPositionError, match="tapatan"):
            s.set_position(text)
    p = games.new_state("tapatan(start=preset)")
    with pytest.raises(InvalidPositionError, match="preset"):
        p.set_position("x2/3/3 o 1")
    assert p.position() == "oxo/3/xox x 0"


def test_tapatan_symmetries():
    s = games.new_state("tapatan")
    assert [s.transform_action(1, a) for a in range(9)] == [6, 3, 0, 7, 4, 1, 8, 5, 2]
    a = s._parse_move_text("a1-b2")
    assert s.move_to_str(s.transform_action(4, a)) == "c1-b2"
    with pytest.raises(ValueError):
        games.new_state("tapatan(start=preset)").transform_action(1, 0)


# ==== tsoro yematatu ===================================================================================

def test_tsoro_drawing_and_notation():
    s = games.new_state("tsoro_yematatu")
    assert s.position() == "1/3/3 x 0"
    assert [s.move_to_str(a) for a in s.legal_actions_list()] == [str(i) for i in range(1, 8)]
    s.set_position("x/oo1/oxx x 6")
    assert s.position() == "x/oo1/oxx x 6"
    assert sorted(s.move_to_str(a) for a in s.legal_actions_list()) == ["1-4", "7-4"]
    assert s.parse_move("1x4") == s.parse_move("1-4") == s.parse_move("14")
    assert "2 3 4" in str(s) and "/|\\" in str(s)
    t = games.new_state("tsoro_yematatu")
    t.set_position("xoo.oxx x 6")            # the 7 points without slashes
    assert t.position() == "x/oo1/oxx x 6"


def test_tsoro_jumps_over_either_colour():
    s = games.new_state("tsoro_yematatu")
    s.set_position("1/xox/oxo x 6")          # the apex is empty
    # steps 2-1, 4-1 and jumps 6-1 (over o on 3)... x on 2, 4, 6; o on 3, 5, 7
    assert sorted(s.move_to_str(a) for a in s.legal_actions_list()) == ["2-1", "4-1", "6-1"]
    s.set_position("1/oxo/xox o 7")          # o on 2, 4, 6 ... o's 6-1 jumps over x on 3
    assert sorted(s.move_to_str(a) for a in s.legal_actions_list()) == ["2-1", "4-1", "6-1"]
    s.set_position("o/x1o/xox x 6")          # empty 3, the middle of two lines: steps only
    assert sorted(s.move_to_str(a) for a in s.legal_actions_list()) == ["2-3"]
    s.set_position("x/oxo/1ox x 6")          # empty 5: x jumps 1-5 over o on 2 and 7-5 over o on 6
    assert sorted(s.move_to_str(a) for a in s.legal_actions_list()) == ["1-5", "7-5"]
    s.push("1-5")
    assert not s.is_game_over() and s.position() == "1/oxo/xox o 7"


def test_tsoro_wins_in_both_phases():
    s = games.new_state("tsoro_yematatu")
    for m in ["1", "2", "3", "4", "6"]:
        s.push(m)                              # x: 1, 3, 6 the middle line
    assert s.is_game_over() and s.outcome().winner == 0 and s.outcome().termination == "three in a row"
    s.set_position("1/xox/oxo x 6")
    s.push("2-1")                              # x: 1, 4, 6: no line
    assert not s.is_game_over()
    s.set_position("o/x1x/oxo x 6")          # x to 3 completes the middle row 2-3-4
    s.push("6-3")
    assert s.is_game_over() and s.outcome().winner == 0 and s.ply == 7


def test_tsoro_bad_input():
    s = games.new_state("tsoro_yematatu")
    for text in ["8", "0", "2-7", "3-5", "x", "1--2", "1-1"]:
        with pytest.raises(InvalidMoveError, match=text):
            s.parse_move(text)
    for text in ["x/oo1/oxx", "x/oo1/oxx y 6", "x/oo/oxx x 6", "xx/oo1/oxx x 6", "x/oo1/oox x 6",
                 "1/3/3 o 0", "x/3/3 x 1", "xxxoooo x", "x/oo1/oxx x 7", "x/oo1/oxx/1 x 6"]:
        with pytest.raises(InvalidPositionError, match="tsoro_yematatu"):
            s.set_position(text)
    assert s.position() == "1/3/3 x 0"
    with pytest.raises(ValueError):
        s.transform_action(2, 0)
    assert s.transform_action(4, s._parse_move_text("2-1")) == s._parse_move_text("4-1")
    assert s.transform_action(4, 4) == 6        # drop on 5 -> drop on 7


def test_tsoro_threefold_repetition():
    s = games.new_state("tsoro_yematatu")
    s.set_position("1/xox/oxo x 6")
    root = s.position().split()[:2]

    def cycle(depth):                        # the shortest line back to the root, by iterative deepening
        if s.position().split()[:2] == root and s.ply > 6:
            return []
        if depth == 0:
            return None
        for a in s.legal_actions_list():
            s.push(a)
            rest = cycle(depth - 1)
            s.pop()
            if rest is not None:
                return [a] + rest
        return None

    found = next(c for c in (cycle(d) for d in range(2, 13, 2)) if c is not None)
    for _ in range(2):
        for a in found:
            assert not s.is_game_over()
            s.push(a)
    assert s.is_game_over() and s.outcome().termination == "threefold repetition"
    assert s.ply == 6 + 2 * len(found) and s.result() == "1/2-1/2"


# ==== five field kono ==================================================================================

def test_kono_occupation_win():
    s = games.new_state("five_field_kono")
    assert s.position() == "ooooo/o3o/5/x3x/xxxxx x 0"
    s.set_position("1xxxx/xx2x/2o2/o4/ooooo x 20")
    assert not s.is_game_over()
    s.push("b4-a5")
    assert s.is_game_over() and s.outcome().winner == 0
    assert s.outcome().termination == "occupation of the opponent's start"
    assert s.outcome().score == pytest.approx((200 - 21 + 1) / 200)


def test_kono_blocked_start_point_prevents_the_win():
    # o never left a5: x can fill the six other points but never all seven with its own pieces
    s = games.new_state("five_field_kono")
    s.set_position("oxxxx/xx2x/2o2/o4/1oooo x 20")
    assert not s.is_game_over()
    moves = sorted(s.move_to_str(a) for a in s.legal_actions_list())
    assert "b4-a5" not in moves
    for m in moves:
        c = s.copy()
        c.push(m)
        assert not c.is_game_over() or c.outcome().termination != "occupation of the opponent's start"


def test_kono_no_move_loses():
    s = games.new_state("five_field_kono")
    # x's seven pieces are boxed in on rows 1-2 by o on a2, c2, e2, a3, c3, e3
    s.set_position("2o2/5/o1o1o/oxoxo/xxxxx x 30")
    assert s.is_game_over() and s.outcome().winner == 1 and s.outcome().termination == "no legal move"
    # o closes the box with its move: x is left without a move and loses at once
    s.set_position("2o2/o4/2o1o/oxoxo/xxxxx o 29")
    assert not s.is_game_over()
    s.push("a4-b3")
    assert s.position() == "2o2/5/1oo1o/oxoxo/xxxxx x 30" and not s.is_game_over()
    s.set_position("2o2/1o3/2o1o/oxoxo/xxxxx o 29")
    s.push("b4-a3")
    assert s.is_game_over() and s.outcome().winner == 1 and s.outcome().termination == "no legal move"


def test_kono_moves_are_diagonal_both_ways_and_repetition():
    s = games.new_state("five_field_kono")
    s.set_position("ooooo/o3o/2x2/x3x/xxxx1 x 10")      # x on c3 steps to b4, d4, b2, d2
    assert sorted(s.move_to_str(a) for a in s.legal_actions_list() if s.move_to_str(a).startswith("c3")) == [
        "c3-b2", "c3-b4", "c3-d2", "c3-d4"]
    s = games.new_state("five_field_kono")
    cycle = ["c1-b2", "c5-b4", "b2-c1", "b4-c5"]
    for m in cycle * 2:
        assert not s.is_game_over()
        s.push(m)
    assert s.is_game_over() and s.outcome().termination == "threefold repetition" and s.ply == 8
    assert s.result() == "1/2-1/2"
    s.pop()
    assert not s.is_game_over()


def test_kono_bad_input_and_symmetry():
    s = games.new_state("five_field_kono")
    for text in ["a1-a2", "a1-c3", "f1-e2", "a1", "a1-b2-c3"]:
        with pytest.raises(InvalidMoveError, match=text.replace("-", "\\-")):
            s.parse_move(text)
    with pytest.raises(IllegalMoveError):
        s.push("a2-b1")                                 # b1 is occupied
    for text in ["ooooo/o3o/5/x3x/xxxx1 x 0", "ooooo/o3o/5/x3x/xxxxx x 1", "ooooo/o3o/5/x3x/xxxxx o 0",
                 "ooooo/o3o/5/x3x/xxxxx x 201", "xxxxx/x3x/5/o3o/ooooo x 0"]:
        with pytest.raises(InvalidPositionError, match="five_field_kono"):
            s.set_position(text)
    assert s.position() == "ooooo/o3o/5/x3x/xxxxx x 0"
    assert s.move_to_str(s.transform_action(4, s.parse_move("a2-b3"))) == "e2-d3"
    with pytest.raises(ValueError):
        s.transform_action(5, 0)


# ==== alquerque ========================================================================================

def test_alquerque_start_and_steps_not_backward():
    s = games.new_state("alquerque")
    assert s.position() == "ooooo/ooooo/oo1xx/xxxxx/xxxxx x 0"
    assert sorted(s.move_to_str(a) for a in s.legal_actions_list()) == ["b2-c3", "c2-c3", "d2-c3", "d3-c3"]
    s.set_position("5/5/2x2/5/o4 x 10")
    assert sorted(s.move_to_str(a) for a in s.legal_actions_list()) == [
        "c3-b3", "c3-b4", "c3-c4", "c3-d3", "c3-d4"]      # no c2, b2, d2
    s.set_position("5/5/2o2/5/x4 o 11")
    assert sorted(s.move_to_str(a) for a in s.legal_actions_list()) == [
        "c3-b2", "c3-b3", "c3-c2", "c3-d2", "c3-d3"]
    assert "| / | \\ |" in str(s) and "o---." in str(s)


def test_alquerque_compulsory_multiple_captures():
    # x on a1; o on a2 and a4: lobogames must take both, ludii may take one or step
    s = games.new_state("alquerque")
    s.set_position("5/o4/5/o4/x3o x 10")
    assert [s.move_to_str(a) for a in s.legal_actions_list()] == ["a1xa3xa5"]
    s.push("a1xa3xa5")
    assert s.position() == "x4/5/5/5/4o o 11" and not s.is_game_over()
    s.pop()
    # the capture backwards (o on a5 captures down) and continuing in another direction
    s.set_position("o4/x4/5/x4/5 o 11")
    assert [s.move_to_str(a) for a in s.legal_actions_list()] == ["a5xa3xa1"]
    l = games.new_state("alquerque(rules=ludii)")
    l.set_position("5/o4/5/o4/x3o x 10")
    assert sorted(l.move_to_str(a) for a in l.legal_actions_list()) == ["a1-b1", "a1-b2", "a1xa3"]
    with pytest.raises(IllegalMoveError):
        l.push("a1xa3xa5")
    l.push("a1xa3")
    assert l.position() == "5/o4/x4/5/4o o 11"


def test_alquerque_sequences_with_the_same_ends():
    s = games.new_state("alquerque")
    s.set_position("1o1o1/oo3/x4/5/4o x 32")
    moves = sorted(s.move_to_str(a) for a in s.legal_actions_list())
    assert moves == ["a3xa5xc3", "a3xa5xc5xa3", "a3xa5xc5xe5", "a3xc5xe5"]
    a = s.parse_move("a3xa5xc5xe5")
    b = s.parse_move("a3xc5xe5")
    assert a != b and alq.capture_entry(a - 112)[:2] == alq.capture_entry(b - 112)[:2]
    with pytest.raises(InvalidMoveError, match="several"):
        s.parse_move("a3xe5")                            # ambiguous short form
    assert s.parse_move("a3xa3") == s.parse_move("a3xa5xc5xa3")   # the only one back to a3
    s.push(a)
    assert s.position() == "4x/1o3/5/5/4o o 33"
    s.pop()
    s.push(s.parse_move("a3xa5xc5xa3"))                  # ends where it started
    assert s.position() == "3o1/5/x4/5/4o o 33"


def test_alquerque_endings():
    s = games.new_state("alquerque")
    s.set_position("5/5/1o3/1x3/5 x 40")
    s.push("b2xb4")
    assert s.is_game_over() and s.outcome().termination == "all pieces captured" and s.result() == "1-0"
    s.set_position("5/5/5/o4/x4 o 41")                  # o on a2: a1 is taken, b2 sideways is free
    assert [s.move_to_str(a) for a in s.legal_actions_list()] == ["a2-b2"]
    s.set_position("5/5/5/5/ox3 o 41")                  # o on a1: no step down; must capture b1
    assert [s.move_to_str(a) for a in s.legal_actions_list()] == ["a1xc1"]
    s.set_position("5/5/5/5/oxx2 o 41")                 # o on a1: b2 and a2 are backward, b1 is taken
    assert s.is_game_over() and s.outcome().winner == 0 and s.outcome().termination == "no legal move"
    s.set_position("5/5/x4/5/4o x 198")
    s.push("a3-a4")
    assert not s.is_game_over()
    s.push("e1-d1")
    assert s.is_game_over() and s.outcome().termination == "ply cap" and s.result() == "1/2-1/2"


def test_alquerque_bad_input():
    s = games.new_state("alquerque")
    for text in ["a1-c3", "a1xa2", "a1xc3xa1xc3", "f1-e1", "b2 c3 d4", "a1x"]:
        with pytest.raises(InvalidMoveError, match="alquerque"):
            s.parse_move(text)
    with pytest.raises(InvalidMoveError, match="no legal capture"):
        s.parse_move("a1xe5")
    with pytest.raises(IllegalMoveError):
        s.push("b2-b3")
    for text in ["ooooo/ooooo/ooooo/xxxxx/xxxxx x 0", "5/5/5/5/5 x 0", "ooooo/ooooo/oo1xx/xxxxx/xxxxx x 1",
                 "ooooo/ooooo/oo1xx/xxxxx/xxxxx x 202", "ooooo/ooooo/oo1xx/xxxxx/xxxxq x 0"]:
        with pytest.raises(InvalidPositionError, match="alquerque"):
            s.set_position(text)
    assert s.position() == "ooooo/ooooo/oo1xx/xxxxx/xxxxx x 0"
    assert s.transform_action(0, 5) == 5
    with pytest.raises(ValueError):
        s.transform_action(4, 5)


def test_alquerque_transpositions_share_a_hash():
    """Every pair of depth-8 lines from the start that differ by swapping two moves and reach the same
    position has the same hash (the conformance test samples random games; the opening of
    compulsory captures makes such pairs rare there)."""
    spec = "alquerque"
    lines = []

    def walk(s, seq):
        if len(seq) == 8 or s.is_game_over():
            lines.append(tuple(seq))
            return
        for a in s.legal_actions_list():
            s.push(a)
            walk(s, seq + [a])
            s.pop()

    walk(games.new_state(spec), [])
    finals = {}
    for seq in lines:
        s = games.new_state(spec)
        for a in seq:
            s.push(a)
        finals[seq] = (s.position(), s.zobrist_hash)
    found = 0
    for seq in lines:
        for i, j in itertools.combinations(range(len(seq)), 2):
            sw = list(seq)
            sw[i], sw[j] = sw[j], sw[i]
            sw = tuple(sw)
            if sw != seq and sw in finals and finals[sw][0] == finals[seq][0]:
                assert finals[sw][1] == finals[seq][1]
                found += 1
    assert found > 50


def test_max_legal_holds_in_random_games():
    for spec in ("alquerque", "alquerque(rules=ludii)"):
        s = games.new_state(spec)
        bound = s.game.max_legal
        for seed in range(20):
            rng = random.Random(seed)
            t = s.copy()
            while not t.is_game_over():
                legal = t.legal_actions_list()
                assert len(legal) <= bound
                t.push(rng.choice(legal))


# ==== golden playthroughs =============================================================================

PLAYTHROUGH_SEEDS = {"tapatan": ["tapatan", "tapatan(start=preset)"],
                     "alquerque": ["alquerque", "alquerque(rules=ludii)"],
                     "tsoro_yematatu": ["tsoro_yematatu"], "five_field_kono": ["five_field_kono"]}


def playthrough(spec, seed=1):
    """One seeded uniformly random game as text: the moves, the final position and the outcome."""
    rng = random.Random(seed)
    s = games.new_state(spec)
    moves = []
    while not s.is_game_over():
        a = rng.choice(s.legal_actions_list())
        moves.append(s.move_to_str(a))
        s.push(a)
    o = s.outcome()
    lines = [f"spec: {spec}", f"seed: {seed}", f"plies: {s.ply}"]
    lines += [f"moves: {' '.join(moves[i:i + 12])}" for i in range(0, len(moves), 12)]
    lines += [f"final: {s.position()}", f"result: {s.result()} ({o.termination})", f"score: {o.score:.6f}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("game", list(PLAYTHROUGH_SEEDS))
def test_golden_playthrough(game):
    header = (f"# {game}: a uniformly random game (random.Random(seed).choice over the legal actions),\n"
              f"# compared by tests/test_lobogames.py; DESCENT_REGEN_PLAYTHROUGHS=1 rewrites it.\n")
    text = header + "\n".join(playthrough(spec) for spec in PLAYTHROUGH_SEEDS[game])
    path = PLAYTHROUGHS / f"{game}.txt"
    if os.environ.get("DESCENT_REGEN_PLAYTHROUGHS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.read_text() == text
    # the recorded moves replay to the recorded end through the notation parser
    for block in path.read_text().split("\n\n"):
        fields = {}
        for line in block.splitlines():
            if line.startswith("#") or not line:
                continue
            key, _, value = line.partition(": ")
            fields[key] = (fields[key] + " " + value) if key in fields else value
        s = games.new_state(fields["spec"])
        for m in fields["moves"].split():
            s.push(m)
        assert s.position() == fields["final"] and s.result() == fields["result"].split()[0]
