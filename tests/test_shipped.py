"""Issue 22, items 4 and 5: networks shipped in the repository (``checkpoints/shipped/``) and a
balanced opponent right after install.

Budgets are iterations and games are seeded: nothing here depends on the machine's speed.
"""
import json
import shutil

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from descent import adaptive, shipped
from descent.cli import cli
from descent.ship import SIZE_LIMIT, calibrate_shipped, ship, shipped_size
from training.network import CheckpointError

# the games whose networks this repository ships (issue 22: tic-tac-toe and the small LoBoGames
# games here; reversi, breakthrough and havannah are added by their longer runs)
SHIPPED_GAMES = {"tic_tac_toe", "tsoro_yematatu", "tapatan", "five_field_kono", "alquerque"}


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(adaptive.DATA_ENV, str(tmp_path / "data"))


def _entries():
    return shipped.entries()


# ---- what the repository ships ----------------------------------------------------------------------

def test_the_shipped_games_are_there():
    assert SHIPPED_GAMES <= {card["game"] for _, card in _entries()}


def test_every_shipped_network_loads_matches_its_card_and_plays_a_legal_game():
    import games
    from descent.networks import make_agent
    from training.architecture import Architecture
    from training.network import load_network
    for d, card in _entries():
        assert d == shipped.entry_dir(card["game"])
        for role in shipped.ROLES:
            path = d / shipped.FILES[role]
            _, meta = load_network(path, games.load(card["game"]))
            assert meta["game"] == card["game"]
            assert Architecture.from_meta(meta["network"]) == Architecture.from_meta(card["architecture"])
            net = card["networks"][role]
            assert net["games"] > 0 and net["examples"] > 0 and net["cpu_hours"] > 0
            agent = make_agent(f"minimax:iterations=20,net={path},seed=1", card["game"])
            state = agent.game.new_state()
            while not state.is_game_over() and state.ply < 400:
                action = agent.choose(state)
                assert action in state.legal_actions_list()
                state.push(action)
        early, final = card["networks"]["early"], card["networks"]["final"]
        assert early["train_seconds"] < final["train_seconds"] and early["games"] <= final["games"]
        assert early["sha256"] != final["sha256"]
        assert card["command"].startswith("descent train ")


def test_shipped_files_are_small_and_hold_no_code():
    assert shipped_size() < SIZE_LIMIT
    for d, card in _entries():
        names = {p.name for p in d.iterdir()}
        from descent.strength import TABLE_FILE      # the levels' rating table (plain JSON, checked on load)
        assert names <= {shipped.CARD_FILE, shipped.CALIBRATION_FILE, TABLE_FILE, *shipped.FILES.values()}, names
        json.loads((d / shipped.CARD_FILE).read_text())           # plain JSON
        for name in shipped.FILES.values():
            with h5py.File(d / name, "r") as f:
                assert set(f.attrs) == {"format", "meta"}
                json.loads(f.attrs["meta"])
                found = []
                f.visititems(lambda k, obj: found.append(obj))
                for obj in found:                                  # groups of numeric arrays only
                    assert not obj.attrs
                    if isinstance(obj, h5py.Dataset):
                        assert np.issubdtype(obj.dtype, np.number), (name, obj.name, obj.dtype)
                    else:
                        assert isinstance(obj, h5py.Group)


def test_the_checkpoints_listing_marks_the_shipped_networks():
    r = CliRunner().invoke(cli, ["checkpoints", "tic_tac_toe"])
    assert r.exit_code == 0, r.output
    assert "SHIPPED (final)" in r.output and "SHIPPED (early)" in r.output


# ---- a balanced opponent right after install ----------------------------------------------------------

def test_balanced_opponent_without_a_run_of_ones_own(tmp_path):
    """A clean environment: the user's runs folder is empty; the shipped network and calibration
    are found."""
    from descent.api import Opponent
    from descent.networks import best_network
    final = shipped.network("tic_tac_toe")
    assert best_network("tic_tac_toe", tmp_path) == final
    assert best_network("tic_tac_toe", tmp_path, shipped=False) is None
    bot = Opponent("tic_tac_toe", level="balanced", root=tmp_path, seed=3)
    assert bot.network == final and f"net={final}" in bot.spec
    cal = shipped.calibration("tic_tac_toe")
    if cal is not None:
        assert bot.calibration["shipped"] and f"iterations={cal['budget']}" in bot.spec
    bot.push("b2")
    bot.reply()
    assert len(bot.record()) == 2
    # the adaptive level: the shipped networks as its ladder, from the shipped calibration
    a = Opponent("tic_tac_toe", level="adaptive", player="Ann", root=tmp_path)
    assert [r["net"] for r in a.adaptive.rungs] == [None, shipped.network("tic_tac_toe", "early"), final, final]
    assert a.adaptive.rung["net"] == final and a.adaptive.rung["algorithm"] == "minibal_plus"
    if cal is not None:
        assert a.adaptive.iterations == int(cal["budget"])
    # net=None still means random-playout leaves
    assert Opponent("tic_tac_toe", level="adaptive", player="Bo", net=None, root=tmp_path).network is None


def test_play_in_the_terminal_uses_the_shipped_network(tmp_path):
    r = CliRunner().invoke(cli, ["play", "tic_tac_toe", "--plain", "--seat", "second", "--iterations", "30"],
                           input="resign\n")
    assert r.exit_code == 0, r.output
    assert "shipped with descent" in r.output


# ---- the tool and the card check, on a small run made here ------------------------------------------

@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A run of tic_tac_toe with one member and two milestones (small untrained networks)."""
    from training.fileio import write_json
    from training.network import build_model, save_weights
    run = tmp_path_factory.mktemp("runs") / "ttt"
    (run / "member_00").mkdir(parents=True)
    cfg = {"network": {"filters": 4, "blocks": 1, "head_units": 8}}
    write_json(run / "run.json", {"game": "tic_tac_toe", "config": cfg, "seed": 0, "format": "descent-run-1"})
    for name, secs, seed in (("1m", 60.0, 1), ("3m", 180.0, 2)):
        save_weights(run / "member_00" / f"milestone_{name}.weights.h5", build_model((3, 3, 2), 4, 1, 8, seed=seed),
                     {"game": "tic_tac_toe", "member": 0, "milestone": name, "milestone_seconds": secs,
                      "train_seconds": secs, "games": int(secs), "examples": 10 * int(secs),
                      "network": cfg["network"], "planes_shape": [3, 3, 2]})
    return run


@pytest.fixture
def base(tmp_path, monkeypatch):
    b = tmp_path / "checkpoints" / "shipped"
    monkeypatch.setattr(shipped, "SHIPPED_ROOT", b)
    return b


def test_ship_writes_weights_and_a_card_from_the_run(small_run, base):
    r = CliRunner().invoke(cli, ["ship", "tic_tac_toe", "--run", str(small_run), "--early", "1m", "--final", "3m",
                                 "--cores", "2"])
    assert r.exit_code == 0, r.output
    d = base / "tic_tac_toe"
    card = json.loads((d / "card.json").read_text())
    assert card["game"] == "tic_tac_toe" and card["architecture"]["filters"] == 4
    assert card["networks"]["final"]["games"] == 180 and card["networks"]["early"]["examples"] == 600
    assert card["networks"]["final"]["cpu_hours"] == pytest.approx(180 * 2 / 3600, abs=1e-4)
    assert card["networks"]["final"]["elo"] is None and card["calibration"] is None
    assert card["source"]["milestones"] == {"early": "1m", "final": "3m"}
    assert "--milestones 1m,3m" in card["command"] and str(small_run.parent) not in json.dumps(card)
    assert shipped.network("tic_tac_toe") == str(d / "final.weights.h5")
    rows = shipped.listing("tic_tac_toe")
    assert [x["shipped"] for x in rows] == ["final", "early"]


@pytest.mark.parametrize("args, fragment", [
    (["--early", "1m", "--final", "3m"], "shipping needs all three"),
    ([], "nothing to do"),
    (["--run", "RUN", "--early", "2m", "--final", "3m"], "no milestone '2m'"),
    (["--run", "RUN", "--early", "3m", "--final", "1m"], "give the earlier one as --early"),
    (["--run", "RUN", "--early", "1m", "--final", "1m"], "the same milestone"),
])
def test_ship_bad_input_is_one_line(small_run, base, args, fragment):
    args = [str(small_run) if a == "RUN" else a for a in args]
    r = CliRunner().invoke(cli, ["ship", "tic_tac_toe", *args])
    assert r.exit_code == 2, r.output
    assert fragment in r.output.strip().splitlines()[-1] and len(r.output.strip().splitlines()) == 1
    assert not base.exists() or not list(base.rglob("card.json"))


@pytest.mark.parametrize("tamper, fragment", [
    (lambda c: c["architecture"].update(filters=8), "architecture"),
    (lambda c: c["networks"]["final"].update(sha256="0" * 64), "sha256"),
    (lambda c: c.update(game="tapatan"), "a network of tic_tac_toe"),
    (lambda c: c["networks"].pop("early"), "exactly the networks"),
])
def test_a_card_that_does_not_match_its_weights_is_one_clear_error(small_run, base, tamper, fragment):
    from descent.networks import make_agent
    ship(small_run, "1m", "3m", base=base)
    d = base / "tic_tac_toe"
    card = json.loads((d / "card.json").read_text())
    tamper(card)
    (d / "card.json").write_text(json.dumps(card))
    with pytest.raises(CheckpointError, match=fragment) as info:
        shipped.verify(d)
    assert "\n" not in str(info.value)
    with pytest.raises(CheckpointError, match=fragment):
        make_agent(f"minimax:iterations=5,net={d / 'final.weights.h5'}", "tic_tac_toe")
    r = CliRunner().invoke(cli, ["play", "tic_tac_toe", "--net", str(d / "final.weights.h5")], input="resign\n")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and fragment in r.output
    r = CliRunner().invoke(cli, ["checkpoints"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1


def test_weights_replaced_behind_the_cards_back_are_refused(small_run, base):
    ship(small_run, "1m", "3m", base=base)
    d = base / "tic_tac_toe"
    shutil.copy(d / "early.weights.h5", d / "final.weights.h5")
    with pytest.raises(CheckpointError, match="bytes|sha256"):
        shipped.check_network(d / "final.weights.h5")


def test_shipped_calibration_feeds_the_balanced_level(small_run, base, tmp_path):
    from descent.api import Opponent
    from descent.calibrate import Unreachable
    ship(small_run, "1m", "3m", base=base)
    try:
        cal = calibrate_shipped("tic_tac_toe", opponent_budget="iterations=100", low=1, high=200,
                                max_games=40, near_games=8, base=base)
    except Unreachable as exc:             # these untrained networks may not balance: nothing shipped
        assert not (base / "tic_tac_toe" / "calibration.json").exists() and exc.direction
        return
    text = (base / "tic_tac_toe" / "calibration.json").read_text()
    assert str(tmp_path) not in text and "net=final.weights.h5" in text
    assert cal["shipped"] and str(base / "tic_tac_toe" / "final.weights.h5") in cal["spec"]
    bot = Opponent("tic_tac_toe", level="balanced", root=tmp_path / "no-runs")
    assert bot.calibration is not None and f"iterations={cal['budget']}" in bot.spec
    ship(small_run, "1m", "3m", base=base)          # shipped again, the same weights: the calibration stays
    assert shipped.calibration("tic_tac_toe", base) is not None
    card = json.loads((base / "tic_tac_toe" / "card.json").read_text())
    card["networks"]["final"]["sha256"] = "0" * 64  # a calibration made for other weights is refused
    (base / "tic_tac_toe" / "card.json").write_text(json.dumps(card))
    with pytest.raises(CheckpointError):
        shipped.calibration("tic_tac_toe", base)


def test_a_person_weaker_than_the_early_network_reaches_the_playout_floor(tmp_path):
    """Below the weakest network at one iteration the ladder has Minibal_+ on random playouts."""
    from descent.api import Opponent
    bot = Opponent("breakthrough(rows=6,cols=6)", level="adaptive", player="Novice", root=tmp_path, seed=1)
    rungs = bot.adaptive.rungs
    assert [r["label"] for r in rungs] == ["minibal_plus@playout", "minibal_plus@shipped-early",
                                           "minibal_plus@shipped-final", "minimax@shipped-final"]
    for _ in range(30):                         # the person loses every game
        if bot.adaptive.rung["net"] is None:
            break
        bot.adaptive.record(0.0)
    assert bot.adaptive.entry["rung"] == 0
    bot.new_game()
    assert bot.network is None and "eval=playout" in bot.spec and "minibal_plus" in bot.spec
    bot.reply()                                 # it plays a legal move at the floor
    assert len(bot.state.move_stack) == 1
    for _ in range(10):                         # at the floor's bottom it stays there, clipped
        bot.adaptive.record(0.0)
    assert bot.adaptive.entry["rung"] == 0 and bot.adaptive.iterations == 1
