"""Strength you can name: the rating tables (descent.strength), --elo, and what the docs quote."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import games
from games.errors import GameError
from descent import shipped, strength
from descent.strength import StrengthError

ROOT = Path(__file__).resolve().parent.parent
RATED = ("reversi(size=6)", "breakthrough(rows=6,cols=6)", "havannah(base=4)")
SPEC = "reversi(size=6)"


def _tables():
    out = {}
    for d, card in shipped.entries():
        if (d / strength.TABLE_FILE).is_file():
            out[card["game"]] = (d, card, strength.load_table(d / strength.TABLE_FILE, card["game"]))
    return out


def test_every_rated_game_ships_a_valid_table():
    tables = _tables()
    for spec in RATED:
        assert spec in tables, f"{spec} has no {strength.TABLE_FILE}"
        _, _, t = tables[spec]
        assert t["game"] == spec and t["iterations"] == strength.LEVEL_ITERATIONS
        assert {"easy", "medium", "hard", "strongest"} <= set(t["levels"]), sorted(t["levels"])
        elos = [s["elo"] for s in t["settings"]]
        assert elos == sorted(elos) and len(elos) >= 4
        for lvl, e in t["levels"].items():
            assert e["low"] <= e["elo"] <= e["high"] and e["games"] > 0, lvl
        # the anchor is the ladder's weakest outside rung
        assert t["anchor"].endswith("100 simulations = 0") or t["anchor"].endswith("100 iterations = 0")


def test_level_ratings_resolve_the_shipped_network():
    r = strength.level_ratings(SPEC)
    assert set(r) >= {"easy", "medium", "hard", "strongest"}
    final = shipped.network(SPEC)
    for lvl, e in r.items():
        # "at_least": a level that won every ladder game (its rating a bound, docs/strength.md)
        assert {"elo", "low", "high", "spec"} <= set(e) <= {"elo", "low", "high", "spec", "at_least"}
        if "at_least" in e:
            assert e["at_least"] is True and e["low"] == e["elo"] == e["high"], e
        assert f"net={final}" in e["spec"], e["spec"]
    assert strength.level_ratings("tic_tac_toe") == {} or "tic_tac_toe" in _tables()
    assert strength.level_ratings("reversi(size=8)") == {}


# ---- a table of our own in a copy of a shipped entry -------------------------------------------

def _base(tmp_path, table: dict | str) -> Path:
    src = shipped.entry_dir(SPEC)
    base = tmp_path / "shipped"
    dst = base / src.name
    dst.mkdir(parents=True)
    for name in ("card.json", "final.weights.h5", "early.weights.h5", "calibration.json"):
        shutil.copy(src / name, dst / name)
    text = table if isinstance(table, str) else json.dumps(table)
    (dst / strength.TABLE_FILE).write_text(text)
    return base


def _setting(label, elo, mu):
    return {"label": label, "mu": mu, "spec": strength.setting_spec(mu), "elo": elo, "low": elo - 100,
            "high": elo + 100, "games": 40}


def _table(**over):
    t = {"format": strength.FORMAT, "game": SPEC, "anchor": "OpenSpiel MCTS 100 simulations = 0",
         "anchor_label": "mcts100", "ladder": "test ladder", "iterations": 40,
         "levels": {"easy": {"spec": strength.level_spec("easy"), "elo": -500.0, "low": -600.0, "high": -400.0,
                             "games": 40}},
         "settings": [_setting("mu0.2", -500.0, 0.2), _setting("mu0.5", -100.0, 0.5),
                      _setting("mu0.8", 300.0, 0.8), _setting("mu1", 900.0, 1.0)]}
    t.update(over)
    return t


def test_level_for_elo_picks_the_nearest_setting(tmp_path):
    base = _base(tmp_path, _table())
    pick = lambda e: strength.level_for_elo(SPEC, e, base=base)["label"]        # noqa: E731
    assert pick(-500) == "mu0.2" and pick(900) == "mu1"
    assert pick(-301) == "mu0.2" and pick(-299) == "mu0.5"
    assert pick(99) == "mu0.5" and pick(101) == "mu0.8"
    assert pick(599) == "mu0.8" and pick(601) == "mu1"
    got = strength.level_for_elo(SPEC, 250, base=base)
    assert got["elo"] == 300.0 and got["low"] == 200.0 and got["high"] == 400.0 and got["mu"] == 0.8
    assert got["spec"].endswith(f"net={base / shipped.entry_dir(SPEC).name / 'final.weights.h5'}")
    assert got["anchor"] == "OpenSpiel MCTS 100 simulations = 0"


def test_a_level_that_won_every_game_is_a_bound(tmp_path):
    top = {"spec": strength.level_spec("strongest"), "elo": 1200.0, "low": 1200.0, "high": 1200.0, "games": 80,
           "at_least": True, "note": "won every ladder game"}
    base = _base(tmp_path, _table(levels={"strongest": top}))
    r = strength.level_ratings(SPEC, base=base)["strongest"]
    assert r["at_least"] is True
    assert strength.rating_text(r, "X = 0") == "Elo at least +1200 (it won every ladder game) against X = 0"
    assert "| strongest | `minimax:iterations=40,net=final.weights.h5` | at least +1,200 (won all its ladder " \
           "games) | 80 |" in strength.markdown_table(base)
    bad = dict(top, at_least="yes")
    with pytest.raises(StrengthError, match="at_least: must be true or false"):
        strength.level_ratings(SPEC, base=_base(tmp_path / "b", _table(levels={"strongest": bad})))


@pytest.mark.parametrize("elo", [-501, 901, 5000, -1e4])
def test_level_for_elo_refuses_a_rating_outside_the_table(tmp_path, elo):
    base = _base(tmp_path, _table())
    with pytest.raises(StrengthError) as e:
        strength.level_for_elo(SPEC, elo, base=base)
    msg = str(e.value)
    assert "\n" not in msg and "outside the rated range -500 to +900" in msg and "MCTS 100" in msg
    assert isinstance(e.value, GameError)


def test_level_for_elo_without_a_table():
    with pytest.raises(StrengthError, match=r"tic_tac_toe has no rating table.*reversi\(size=6\)"):
        strength.level_for_elo("tic_tac_toe", 0)
    with pytest.raises(StrengthError, match="has no rating table"):
        strength.level_for_elo("reversi(size=8)", 0)
    with pytest.raises(GameError):
        strength.level_for_elo("no_such_game", 0)


@pytest.mark.parametrize("bad, says", [
    ("{not json", "is not valid JSON"),
    ('{"elo": NaN}', "is not valid JSON"),
    (_table(levels={"easy": {"spec": "x", "elo": 10.0, "low": 20.0, "high": 30.0, "games": 1}}),
     "outside its interval"),
    (_table(settings=[_setting("a", 100.0, 0.5), _setting("b", -100.0, 0.2)]), "must be sorted by elo"),
    (_table(levels={"expert": {"spec": "x", "elo": 0.0, "low": 0.0, "high": 0.0, "games": 1}}), "unknown levels"),
    (_table(format="descent-strength-0"), "is not one of"),
    (_table(settings=[_setting("a", 100.0, 0.5)]), "has 1 entries"),
    ({k: v for k, v in _table().items() if k != "anchor"}, "has no 'anchor' entry"),
    (_table(game="reversi(size=8)"), "is for reversi(size=8)"),
])
def test_a_malformed_table_is_one_clear_error(tmp_path, bad, says):
    base = _base(tmp_path, bad)
    for call in (lambda: strength.level_for_elo(SPEC, 0, base=base), lambda: strength.level_ratings(SPEC, base=base)):
        with pytest.raises(StrengthError) as e:
            call()
        msg = str(e.value)
        assert says in msg and strength.TABLE_FILE in msg and "\n" not in msg, msg


# ---- the opponent and the CLI ------------------------------------------------------------------

def test_opponent_elo_and_the_rated_levels():
    from descent.api import Opponent
    t = strength.table(SPEC)
    mid = (t["settings"][0]["elo"] + t["settings"][-1]["elo"]) / 2
    bot = Opponent(SPEC, elo=mid, seed=3)
    want = strength.level_for_elo(SPEC, mid)
    assert bot.rating["elo"] == want["elo"] and bot.spec == want["spec"] + ",seed=3"
    assert bot.reply() in [bot.info.new_state().move_to_str(a) for a in bot.info.new_state().legal_actions_list()]
    for lvl in ("easy", "hard", "strongest"):
        b = Opponent(SPEC, level=lvl)
        assert f"iterations={strength.LEVEL_ITERATIONS}" in b.spec           # the rated budget
        assert b.rating["elo"] == t["levels"][lvl]["elo"]
    assert Opponent(SPEC, level="hard", time=0.05).rating is None          # a time budget is not rated
    assert Opponent(SPEC, level="hard", iterations=3).rating is None
    for kw in ({"iterations": 5}, {"time": 0.1}, {"agent": "random"}, {"net": None}, {"level": "adaptive",
                                                                                        "player": "x"}):
        with pytest.raises(StrengthError, match="cannot be combined"):
            Opponent(SPEC, elo=mid, **kw)
    with pytest.raises(StrengthError, match="outside the rated range"):
        Opponent(SPEC, elo=t["settings"][-1]["elo"] + 1)


def _cli(args, stdin=""):
    from click.testing import CliRunner
    from descent.cli import cli
    return CliRunner().invoke(cli, args, input=stdin)


def test_descent_play_elo_through_the_prompt():
    t = strength.table(SPEC)
    target = t["settings"][1]["elo"] + 1
    first = games.new_state(SPEC)
    move = first.move_to_str(sorted(first.legal_actions_list())[0])
    r = _cli(["play", SPEC, "--elo", str(target), "--plain", "--seat", "first"], f"{move}\nresign\n")
    assert r.exit_code == 0, r.output
    want = strength.level_for_elo(SPEC, target)
    line = next(l for l in r.output.splitlines() if l.startswith("Elo "))
    assert line == strength.pick_text(want, target) + "."
    assert f"rated {want['elo']:+.0f} [{want['low']:+.0f}, {want['high']:+.0f}]" in line and t["anchor"] in line
    assert f"{abs(want['elo'] - target):.0f} {'above' if want['elo'] > target else 'below'} the request" in line
    assert f"You (x) play {move}." in r.output or move in r.output
    assert re.search(r"The computer \(o\) plays \w+\.", r.output)
    # a named level prints its rating too
    r = _cli(["play", SPEC, "--level", "medium", "--plain"], "resign\n")
    e = t["levels"]["medium"]
    assert f"Rated Elo {e['elo']:+.0f} [{e['low']:+.0f}, {e['high']:+.0f}] against {t['anchor']}" in r.output


@pytest.mark.parametrize("args, says", [
    (["--elo", "99999"], "outside the rated range"),
    (["--elo", "abc"], "--elo"),
    (["--elo", "100", "--level", "hard"], "give --elo or --level, not both"),
    (["--elo", "100", "--iterations", "5"], "cannot be combined"),
])
def test_descent_play_elo_refusals(args, says):
    r = _cli(["play", SPEC, *args, "--plain"], "resign\n")
    assert r.exit_code == 2, r.output
    assert says in r.output and "Traceback" not in r.output
    r = _cli(["play", "tic_tac_toe", "--elo", "0"], "resign\n")
    assert r.exit_code == 2 and "has no rating table" in r.output


# ---- what the docs and the cards quote -----------------------------------------------------------

def test_docs_quote_the_shipped_tables():
    doc = (ROOT / "docs" / "strength.md").read_text()
    assert strength.markdown_table() in doc, "docs/strength.md: regenerate the table (descent.strength.markdown_table)"
    assert strength.reference_markdown() in doc, \
        "docs/strength.md: regenerate the references (descent.strength.reference_markdown)"
    bench = (ROOT / "docs" / "research.md").read_text()
    for spec, (d, card, t) in _tables().items():
        assert card.get("strength") == strength.card_levels(t), f"{d}/card.json: levels differ from its table"
        if spec in RATED and t.get("check"):
            c = t["check"]
            assert (f"Mean |error| {c['mean_abs_error']:.0f} Elo over a span of {c['span']:.0f}" in bench), spec


def test_every_shipped_table_is_written_by_rate_levels():
    """`descent play --elo` reads only what `descent rate-levels` writes (issue 44): no shipped
    table from the research scripts."""
    tables = _tables()
    assert tables
    for d, _card, t in tables.values():
        assert str(t.get("source", "")).startswith("descent rate-levels"), f"{d}: {t.get('source')!r}"


def test_level_notes_read_a_head_to_head_record_in_either_order():
    # rate-levels orders a pair by ladder rating: a bound ("at least") can rate the stronger level
    # below the weaker, so the record's "weaker" may be the level the note calls stronger
    from descent.strength import level_notes
    lv = {"hard": {"elo": 963, "low": 755, "high": 1274},
          "strongest": {"elo": 495, "low": 495, "high": 495, "at_least": True}}
    rec = {"weaker": "strongest", "stronger": "hard", "score": 0.7, "low": 0.54, "high": 0.82, "games": 40}
    notes = level_notes({"levels": lv, "head_to_head": [rec]})
    assert notes["strongest"].endswith("head to head it is the stronger: hard scores 0.30 [0.18, 0.46] "
                                       "against it in 40 games")
    rec.update(weaker="hard", stronger="strongest", score=0.45, low=0.3, high=0.6)
    assert level_notes({"levels": lv, "head_to_head": [rec]})["strongest"] == (
        "one strength with hard: head to head hard scores 0.45 [0.30, 0.60] against it in 40 games")
    rec.update(score=0.7, low=0.55, high=0.8)
    assert "it is the weaker: hard scores 0.70" in level_notes({"levels": lv, "head_to_head": [rec]})["strongest"]


def test_the_docs_elo_example_is_what_the_program_prints():
    """docs/strength.md's `--elo 400` example (havannah base 4) is the program's own line up to
    'below the request' (issue 58, item 7: the doc had kept an older table's pick): the setting
    it names, its rating and interval, and the gap, as ``pick_text`` writes them."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "strength.md").read_text()
    quoted = re.search(r"\(havannah base 4: `(Elo \+400 asked: .*? the request)", doc, re.S)
    assert quoted, "the --elo example is gone from docs/strength.md"
    line = strength.pick_text(strength.level_for_elo("havannah(base=4)", 400), 400)
    assert line.startswith(" ".join(quoted.group(1).split()))
