import pytest

import games
from games.errors import InvalidGameSpecError, UnknownGameError


def test_names_include_the_first_five():
    assert {"tic_tac_toe", "reversi", "breakthrough", "outer_open_gomoku", "connect6"} <= set(games.names())


@pytest.mark.parametrize("spec, name, params", [
    ("reversi", "reversi", {}),
    ("reversi(size=6)", "reversi", {"size": 6}),
    (" breakthrough ( rows = 6 , cols=5 ) ", "breakthrough", {"rows": 6, "cols": 5}),
    ("x(a=true,b=1.5,c='s')", "x", {"a": True, "b": 1.5, "c": "s"}),
    ("x()", "x", {}),
])
def test_parse_spec(spec, name, params):
    assert games.parse_spec(spec) == (name, params)


@pytest.mark.parametrize("spec, fragment", [
    ("reversi(size=6", "malformed game spec"),
    ("reversi(size)", "malformed parameter 'size'"),
    ("reversi(size=6,size=8)", "given twice"),
    ("9lives", "malformed game spec"),
])
def test_malformed_specs(spec, fragment):
    with pytest.raises(InvalidGameSpecError, match=fragment):
        games.load(spec)


def test_unknown_game_lists_known_ones():
    with pytest.raises(UnknownGameError, match=r"unknown game 'chesss'.*reversi"):
        games.load("chesss")


@pytest.mark.parametrize("spec, fragment", [
    ("reversi(size=7)", r"size=7 is not allowed \(allowed: 6, 8, 10\)"),
    ("reversi(colour=1)", "unknown parameter 'colour'"),
    ("reversi(size=x)", "must be int"),
    ("breakthrough(rows=99)", r"out of range \[4, 16\]"),
    ("tic_tac_toe(size=4)", "known parameters: none"),
])
def test_bad_parameters(spec, fragment):
    with pytest.raises(InvalidGameSpecError, match=fragment):
        games.load(spec)


def test_canonical_spec_and_cache():
    assert games.load("reversi(size=8)").spec == "reversi"
    assert games.load("reversi(size=6)").spec == "reversi(size=6)"
    assert games.load("reversi(size=6)") is games.load(" reversi( size=6 )")


def test_facts_record():
    f = games.load("tic_tac_toe").facts()
    assert f["num_actions"] == 9 and f["max_plies"] == 9 and f["planes_shape"] == [3, 3, 2]
    assert f["terminal_evaluation"] == "additive depth" and f["version"] == 1


def test_the_terminal_evaluation_of_a_depth_scored_game_is_a_spec_option():
    """``ft=additive|multiplicative`` in a spec chooses f_t for any game scored by depth: the
    canonical spec keeps it only when it is not the game's own; a game scored by its own margin
    refuses it, as does an unknown form; the states of each spec end with that f_t."""
    import random
    from games.registry import own_score_kind
    add, mul = games.load("havannah(base=4,ft=additive)"), games.load("havannah(base=4)")
    assert (add.spec, add.score_kind, mul.score_kind) == ("havannah(base=4,ft=additive)", 0, 1)
    assert games.load("havannah(ft=multiplicative,base=4)") is mul
    assert games.load("breakthrough(rows=6,cols=6,ft=additive)").spec == "breakthrough(rows=6,cols=6)"
    assert games.load("tic_tac_toe(ft=multiplicative)").score_kind == 1
    assert own_score_kind(add) == 1 and add.facts()["terminal_evaluation"] == "additive depth"
    for spec, says in (("reversi(size=6,ft=additive)", "game's own margin"),
                       ("havannah(ft=linear)", "one of additive, multiplicative")):
        with pytest.raises(InvalidGameSpecError, match=says):
            games.load(spec)
    ends = []
    for info in (add, mul):
        rng, s = random.Random(3), info.new_state()
        while not s.is_game_over():
            s.push(rng.choice(s.legal_actions_list()))
        ends.append((s.ply, s.outcome()))
    (p, a), (q, m) = ends
    P = add.max_plies
    assert p == q and a.binary == m.binary != 0
    assert a.score == pytest.approx(a.binary * (P - p + 1) / P)
    assert m.score == pytest.approx(m.binary * P ** (-p / P))
