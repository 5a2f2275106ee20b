"""research/ladder.py: games against OpenSpiel's MCTS bot are legal and complete in both engines,
the two engines agree on the end and the winner, and a disagreement fails loudly."""

import pytest

pytest.importorskip("pyspiel")
from research import ladder as bl  # noqa: E402


@pytest.mark.parametrize("spec", ["breakthrough(rows=6,cols=6)", "havannah(base=4)"])
@pytest.mark.parametrize("seat", [0, 1])
def test_games_against_openspiel_are_legal_and_agree(spec, seat):
    ours = {"label": "random", "kind": "net", "agent": "random"}
    rung = bl.rung_player(spec, 10)
    rec = bl.play_game(spec, ours, rung, seat, seed=7 + seat)   # checks every ply, raises on mismatch
    assert rec["score"] in (0.0, 0.5, 1.0) and rec["plies"] > 0 and rec["a_seat"] == seat
    # the same seed replays the same game
    assert bl.play_game(spec, ours, rung, seat, seed=7 + seat) == rec


def test_rung_against_rung_and_our_mcts_ladder():
    spec = "breakthrough(rows=6,cols=6)"
    rec = bl.play_game(spec, bl.rung_player(spec, 10), bl.rung_player(spec, 20), 0, seed=1)
    assert rec["winner"] in (0, 1)
    rung = bl.rung_player("reversi(size=6)", 10)      # no OpenSpiel twin: our MCTS
    assert rung["agent"] == "mcts:iterations=10"
    rec = bl.play_game("reversi(size=6)", {"label": "r", "kind": "net", "agent": "random"}, rung, 1, 3)
    assert rec["plies"] > 0


def test_move_translation_mismatch_fails_loudly():
    import games
    import pyspiel
    spec = "breakthrough(rows=6,cols=6)"
    ours = games.new_state(spec)
    ref = pyspiel.load_game("breakthrough", {"rows": 6, "columns": 6}).new_initial_state()
    mapping = bl.legal_map(spec, ours, ref)
    assert len(mapping) == len(ref.legal_actions())
    a = next(iter(mapping))
    ours.push(a)                               # only our engine moves: the players to move differ
    with pytest.raises(bl.LadderMismatch, match="to move"):
        bl.legal_map(spec, ours, ref)
    spec = "havannah(base=4)"                  # each engine plays another cell: the legal moves differ
    ours = games.new_state(spec)
    ref = pyspiel.load_game("havannah", {"board_size": 4, "swap": True}).new_initial_state()
    first, second, third = sorted(bl.legal_map(spec, ours, ref))[:3]
    ours.push(first)
    ref.apply_action(second)
    ours.push(third)                          # (after one stone both sides may take any cell: swap)
    ref.apply_action(third)
    with pytest.raises(bl.LadderMismatch, match="legal moves differ"):
        bl.legal_map(spec, ours, ref)


def test_elo_anchor_is_the_weakest_rung():
    entry = {"players": {"mcts10": {"label": "mcts10", "kind": "rung", "sims": 10},
                         "mcts100": {"label": "mcts100", "kind": "rung", "sims": 100},
                         "net": {"label": "net", "kind": "net"}},
             "matches": {"mcts10|mcts100": [{"score": s, "index": i, "seconds": 0}
                                            for i, s in enumerate([0, 0, 0, 1, 0, 0.5, 0, 0])],
                         "net|mcts100": [{"score": s, "index": i, "seconds": 0}
                                         for i, s in enumerate([1, 1, 0, 1, 1, 0.5, 1, 0])]}}
    elo = bl.elo_table(entry, boot=50)
    assert elo["mcts10"]["elo"] == 0.0
    assert 0 < elo["mcts100"]["elo"] < elo["net"]["elo"]
    assert elo["net"]["lo"] <= elo["net"]["elo"] <= elo["net"]["hi"]


def test_our_mcts_rungs_above_openspiel_keep_the_outside_anchor():
    spec = "breakthrough(rows=6,cols=6)"
    ours = bl.rung_player(spec, "ours:20")
    outside = bl.rung_player(spec, "20")
    assert ours["label"] == "mcts20-ours" and ours["agent"] == "mcts:iterations=20"
    assert outside["label"] == "mcts20" and "agent" not in outside
    assert bl.rung_player("reversi(size=6)", "ours:20")["label"] == "mcts20"   # reversi's ladder is ours
    # our engine against OpenSpiel's: both advance together and agree at every ply
    rec = bl.play_game(spec, ours, outside, 1, seed=5)
    assert rec["winner"] in (0, 1) and rec["plies"] > 0
    with pytest.raises(SystemExit, match="not N or ours:N"):
        bl.rung_player(spec, "ours:many")
    entry = {"players": {p["label"]: p for p in (ours, outside, bl.rung_player(spec, 10))},
             "anchor": "mcts10",
             "matches": {"mcts10|mcts20": [{"score": s, "index": i, "seconds": 0}
                                           for i, s in enumerate([0, 1, 0, 0, 0.5, 0])],
                         "mcts20|mcts20-ours": [{"score": s, "index": i, "seconds": 0}
                                                for i, s in enumerate([0, 1, 0, 1, 0, 0])]}}
    assert [p["label"] for p in bl._rungs(entry)] == ["mcts10", "mcts20", "mcts20-ours"]
    elo = bl.elo_table(entry, boot=20)
    assert elo["mcts10"]["elo"] == 0.0 and 0 < elo["mcts20"]["elo"] < elo["mcts20-ours"]["elo"]


def test_an_unbeaten_checkpoint_is_bounded_by_the_strongest_rung_it_beat():
    entry = {"players": {"mcts10": {"label": "mcts10", "kind": "rung", "sims": 10},
                         "mcts100": {"label": "mcts100", "kind": "rung", "sims": 100},
                         "a": {"label": "a", "kind": "net"}, "b": {"label": "b", "kind": "net"}},
             "elo": {"mcts10": {"elo": 0.0}, "mcts100": {"elo": 150.0}, "a": {"elo": 900.0}, "b": {"elo": 80.0}},
             "pairs": [{"a": "a", "b": "mcts10", "score": 1.0}, {"a": "a", "b": "mcts100", "score": 1.0},
                       {"a": "b", "b": "mcts10", "score": 1.0}, {"a": "b", "b": "mcts100", "score": 0.25}]}
    assert bl.unbeaten_bounds(entry) == {"a": 150.0}


def test_rung_token_is_the_inverse_of_rung_player():
    for spec, token in (("breakthrough(rows=6,cols=6)", "ours:300"), ("breakthrough(rows=6,cols=6)", "300"),
                        ("reversi(size=6)", "300")):
        p = bl.rung_player(spec, token)
        assert bl.rung_player(spec, bl.rung_token(p["label"], p["sims"])) == p


def test_a_card_keeps_an_unbeaten_checkpoint_as_a_lower_bound():
    """The model card of a checkpoint that won every ladder game holds the strongest beaten rung's
    rating with ``at_least`` (not the fit's figure, which only says "above"); a beaten one its fit."""
    entry = {"pairs": [{"a": "a", "b": "mcts1000", "score": 1.0}, {"a": "a", "b": "mcts300000-ours", "score": 1.0},
                       {"a": "b", "b": "mcts1000", "score": 0.5}],
             "elo": {"mcts1000": {"elo": 430.0}, "mcts300000-ours": {"elo": 1205.7},
                     "a": {"elo": 2305.4, "lo": 2146.8, "hi": 2543.1}, "b": {"elo": 431.0, "lo": 300.0, "hi": 560.0}}}
    assert bl.card_rating(entry, "a") == {"elo": 1205.7, "low": 1205.7, "high": None, "at_least": True}
    assert bl.card_rating(entry, "b") == {"elo": 431.0, "low": 300.0, "high": 560.0}
