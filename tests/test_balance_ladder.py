"""research/balance_ladder.py: the beaten rungs are picked from the ladder's results, every cell
gets exactly its games (resumable: a rerun plays nothing), and the gain and its interval are right."""
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from research import balance_ladder as bbl  # noqa: E402

SPEC = "reversi(size=6)"
NET = "checkpoints/shipped/reversi_size-6/final.weights.h5"


def _recs(scores):
    return [{"score": s, "index": i, "a_seat": i % 2, "plies": 30 + i, "seconds": 0.1} for i, s in enumerate(scores)]


def _ladder(tmp_path):
    entry = {"agent": "minimax:iterations=40",
             "players": {"final": {"label": "final", "kind": "net", "path": NET},
                         "other": {"label": "other", "kind": "net", "path": "elsewhere.weights.h5"},
                         "mcts5": {"label": "mcts5", "kind": "rung", "sims": 5},
                         "mcts7": {"label": "mcts7", "kind": "rung", "sims": 7},
                         "mcts9": {"label": "mcts9", "kind": "rung", "sims": 9}},
             "matches": {"final|mcts5": _recs([1, 1, 0.5, 0]),        # 62.5%: beaten
                         "final|mcts7": _recs([1, 0, 0.5, 0.5]),      # 50%: not beaten
                         "final|mcts9": _recs([0, 0, 0, 1]),
                         "other|mcts7": _recs([1, 1, 1, 1]),          # another network's
                         "mcts5|mcts7": _recs([1, 1, 1, 1])}}         # rung against rung
    path = tmp_path / "ladder.json"
    path.write_text(json.dumps({"games": {SPEC: entry}}))
    return entry, path


def test_rung_selection_picks_exactly_the_beaten_rungs(tmp_path):
    entry, _ = _ladder(tmp_path)
    assert bbl.beaten_rungs(entry, "final", NET) == {"mcts5": {"sims": 5, "score": 0.625, "games": 4}}
    # matched by path before label: a checkpoint labelled "other" at NET is "final" of the ladder
    assert list(bbl.beaten_rungs(entry, "other", NET)) == ["mcts5"]
    assert list(bbl.beaten_rungs(entry, "other", "elsewhere.weights.h5")) == ["mcts7"]
    assert bbl.beaten_rungs(entry, "unknown", "nowhere.h5") == {}


def test_gain_and_interval_on_hand_made_records():
    from descent.stats import cluster_interval
    scores = [1, 1, 1, 0.5, 0, 1, 0.5, 0]                 # 4 wins, 2 draws, 2 losses
    s = bbl.cell_stats(_recs(scores))
    assert (s["games"], s["wins"], s["draws"], s["losses"]) == (8, 4, 2, 2)
    assert s["gain"] == pytest.approx(25.0)               # (4 - 2) / 8
    ci = cluster_interval([1, 1, 1, 0, -1, 1, 0, -1], lo=-1, hi=1)
    assert (s["low"], s["high"]) == (round(100 * ci.low, 2), round(100 * ci.high, 2))
    assert s["low"] < 25 < s["high"] and s["high"] - s["low"] > 50     # 8 games: wide
    assert s["plies"] == pytest.approx(sum(30 + i for i in range(8)) / 8)
    all_won = bbl.cell_stats(_recs([1] * 16))
    assert all_won["gain"] == 100 and all_won["high"] == 100 and 55 < all_won["low"] < 70


def test_games_are_recorded_once_and_resumed(tmp_path, capsys):
    _, ladder = _ladder(tmp_path)
    out = tmp_path / "results.json"
    fig = tmp_path / "fig.png"
    argv = ["--game", SPEC, "--net", f"final={NET}", "--ladder", str(ladder), "--json", str(out),
            "--algorithms", "minibal_plus:iterations=2;calibrated", "--calibrated-budget", "3",
            "--games", "2", "--workers", "1", "--figure", str(fig)]
    assert bbl.main(argv) == 0
    first = capsys.readouterr().out
    assert "rungs mcts5 62%" in first and "4 game(s) to play" in first
    data = json.loads(out.read_text())
    entry = data["games"][SPEC]
    assert set(entry["matches"]) == {"final/minibal_plus:iterations=2|mcts5", "final/calibrated|mcts5"}
    for key, recs in entry["matches"].items():
        assert [r["index"] for r in recs] == [0, 1] and [r["a_seat"] for r in recs] == [0, 1]
        assert all(r["score"] in (0, 0.5, 1) and r["plies"] > 0 for r in recs)
    assert entry["players"]["final/calibrated"]["agent"] == f"minibal_plus:iterations=3,net={NET}"
    assert entry["players"]["mcts5"]["agent"] == "mcts:iterations=5"
    assert entry["checkpoints"]["final"]["beaten"] == {"mcts5": {"sims": 5, "score": 0.625, "games": 4}}
    assert fig.is_file()
    assert bbl.main(argv) == 0                            # a rerun plays nothing new
    again = capsys.readouterr().out
    assert "to play" not in again
    assert json.loads(out.read_text())["games"][SPEC]["matches"] == entry["matches"]
    table = bbl.report(json.loads(out.read_text()), None)
    assert table.count(f"| {SPEC} | final | mcts5 (62%) |") == 2
    # the same label with another agent is refused in one line
    assert bbl.main(argv[:-8] + ["--calibrated-budget", "4", "--games", "2"]) == 2
    assert "a new agent needs a new --json" in capsys.readouterr().err


def test_calibrated_plays_only_the_shipped_final_network():
    from descent import shipped
    assert bbl.calibrated_budget(SPEC, NET, None) == shipped.calibration(SPEC)["budget"]
    assert bbl.calibrated_budget(SPEC, "checkpoints/shipped/reversi_size-6/early.weights.h5", None) is None
    assert bbl.calibrated_budget(SPEC, "whatever.h5", 7) == 7


def test_a_pool_of_one_plays_the_low_network_from_shared_random_openings(tmp_path, capsys):
    low = "checkpoints/shipped/reversi_size-6/early.weights.h5"
    out = tmp_path / "pool.json"
    argv = ["--game", SPEC, "--net", f"final={NET}", "--low", f"early={low}", "--json", str(out),
            "--algorithms", "minimax:iterations=2;minibal_plus:iterations=2", "--low-agent",
            "minimax:iterations=2", "--games", "4", "--workers", "1", "--figure", str(tmp_path / "f.png")]
    assert bbl.main(argv) == 0
    assert "against the low network low:early" in capsys.readouterr().out
    entry = json.loads(out.read_text())["games"][SPEC]
    assert set(entry["matches"]) == {"final/minimax:iterations=2|low:early",
                                     "final/minibal_plus:iterations=2|low:early"}
    assert entry["players"]["low:early"]["agent"] == f"minimax:iterations=2,net={low}"
    assert entry["opening_plies"] == 4
    a, b = entry["matches"].values()
    for recs in (a, b):
        assert [len(r["opening"]) for r in recs] == [4, 4, 4, 4]
        # both seats of a pairing share an opening; the next pairing has another
        assert recs[0]["opening"] == recs[1]["opening"] != recs[2]["opening"] == recs[3]["opening"]
    assert [r["opening"] for r in a] == [r["opening"] for r in b]      # every algorithm the same
    rows = bbl.rows(json.loads(out.read_text()))
    assert {(r["family"], r["budget"]) for r in rows} == {("minimax", 2), ("minibal_plus", 2)}
    assert (tmp_path / "f.png").is_file()
    # another opening length in the same file is refused in one line
    assert bbl.main(argv + ["--opening-plies", "2"]) == 2
    assert "random opening plies" in capsys.readouterr().err


def test_our_rungs_above_openspiel_are_played_by_our_engine(tmp_path):
    spec = "breakthrough(rows=6,cols=6)"
    entry = {"players": {"final": {"label": "final", "kind": "net", "path": "x.weights.h5"},
                         "mcts10": {"label": "mcts10", "kind": "rung", "sims": 10},
                         "mcts10-ours": {"label": "mcts10-ours", "kind": "rung", "sims": 10,
                                         "agent": "mcts:iterations=10"}},
             "matches": {"final|mcts10-ours": _recs([1, 1, 1, 0]), "final|mcts10": _recs([1, 1, 0.5, 1])}}
    assert list(bbl.beaten_rungs(entry, "final", "x.weights.h5")) == ["mcts10", "mcts10-ours"]
    ladder = tmp_path / "ladder.json"
    ladder.write_text(json.dumps({"games": {spec: entry}}))
    net = "checkpoints/shipped/breakthrough_rows-6_cols-6/final.weights.h5"
    out = tmp_path / "results.json"
    argv = ["--game", spec, "--net", f"final={net}", "--ladder", str(ladder), "--json", str(out),
            "--algorithms", "minibal_plus:iterations=2", "--rungs", "ours:10", "--games", "1",
            "--workers", "1", "--figure", str(tmp_path / "fig.png")]
    assert bbl.main(argv) == 0
    played = json.loads(out.read_text())["games"][spec]
    assert played["players"]["mcts10-ours"]["agent"] == "mcts:iterations=10"
    assert list(played["matches"]) == ["final/minibal_plus:iterations=2|mcts10-ours"]
