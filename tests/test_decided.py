"""When a game was decided: the balanced player's first root holding a proven result, recorded at
play time (``descent.gamerecord.ProofNote``), stored with each match (``results.db`` column
``proofs``) and summarised by the report (``decided.csv`` and its section of table.txt)."""
from __future__ import annotations

import csv
import json
import sqlite3

import games
from descent.gamerecord import ProofNote, root_proof
from descent.match import play_game
from descent.networks import make_agent
from descent.report import DECIDED_CSV, decided, make_report
from descent.results import ResultsDB
from descent.tournament import match_row


def test_a_win_in_one_is_a_proven_root_and_its_winning_move_a_proven_choice():
    info = games.load("tic_tac_toe")
    state = info.new_state()
    for m in ("a1", "b1", "a2", "b2"):
        state.push(state.parse_move(m))
    agent = make_agent("minimax:iterations=50", "tic_tac_toe")
    action = agent.choose(state)
    root, chose = root_proof(agent.search, state, action)
    assert root == 1 and chose == 1 and state.move_to_str(action) == "a3"
    # another move of that position is not a proven win
    other = state.parse_move("c1")
    assert root_proof(agent.search, state, other)[1] != 1
    # no best-first tree: nothing to read
    assert root_proof(make_agent("mcts:iterations=20", "tic_tac_toe").search, state, action) is None
    assert root_proof(None, state, action) is None


def test_a_proof_note_keeps_the_first_proven_ply_and_counts_proven_choices():
    n = ProofNote()
    n.note(4, 0, None)
    n.note(6, 1, 1)
    n.note(8, 1, -1)
    n.note(10, -1, -1)
    assert n.as_dict() == {"ply": 6, "sign": 1, "moves": 4, "won_moves": 2, "proven_choices": 1}
    assert ProofNote().as_dict()["ply"] is None


def test_every_game_records_its_best_first_seats_and_the_row_keeps_them(tmp_path):
    a = make_agent("minibal_plus:iterations=200", "tic_tac_toe")
    b = make_agent("random", "tic_tac_toe")
    seen_proven = False
    for i in range(6):
        rec = play_game("tic_tac_toe", a, b, i, 3)
        assert set(rec.proofs) == {"a"}           # the random seat keeps no tree
        note = rec.proofs["a"]
        a_moves = sum(1 for p in range(rec.plies) if (p % 2 == 0) == rec.a_first)
        assert note["moves"] == a_moves
        assert 0 <= note["proven_choices"] <= note["won_moves"] <= note["moves"]
        if note["ply"] is not None:
            seen_proven = True
            assert 0 <= note["ply"] < rec.plies and note["sign"] in (1, -1)
    assert seen_proven, "200 iterations prove tic-tac-toe against a random player"
    row = match_row({"key": "k", "stage": "evaluate", "game": "tic_tac_toe", "algorithm": "minibal_plus",
                     "budget": "iterations=200", "agent_a": "minibal_plus:iterations=200",
                     "agent_b": "random", "seed": 3, "index": 0}, rec)
    with ResultsDB(tmp_path / "r.db") as db:
        assert db.insert(row)
        assert json.loads(db.rows()[0]["proofs"]) == rec.proofs


def _old_database(path):
    """A results database of the schema before ``proofs`` (every other column there)."""
    from descent.results import COLUMNS
    cols = [c for c in COLUMNS if c != "proofs"]
    with sqlite3.connect(path) as c:
        c.execute(f"CREATE TABLE matches (id INTEGER PRIMARY KEY, {', '.join(cols)})")
        row = {c: None for c in cols}
        row.update(match_key="k1", stage="evaluate", game="tic_tac_toe", algorithm="minimax",
                   budget="iterations=5", agent_a="minimax:iterations=5", agent_b="minimax:iterations=5",
                   net_a="n1", net_b="n2", a_first=1, moves="a1", result=1, score=0.5, a_result=1,
                   a_score=0.5, plies=5, opponent="pool", opponent_budget="iterations=9",
                   opening="a1 b1", opening_index=3, unit="n1|n2|a1 b1")
        c.execute(f"INSERT INTO matches ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                  [row[c] for c in cols])


def test_a_database_without_the_column_reads_and_migrates_keeping_its_values(tmp_path):
    path = tmp_path / "old.db"
    _old_database(path)
    with ResultsDB(path, readonly=True) as db:
        (r,) = db.rows()
    # read as stored: only the missing column is derived (None), not the five before it
    assert r["proofs"] is None and r["opponent_budget"] == "iterations=9" and r["unit"] == "n1|n2|a1 b1"
    assert r["opening_index"] == 3
    with ResultsDB(path) as db:             # opened for writing: migrated, values kept
        (r,) = db.rows()
        assert r["proofs"] is None and r["unit"] == "n1|n2|a1 b1"


def test_the_report_says_when_the_games_were_decided(tmp_path):
    def row(i, proofs, plies=10, result=1):
        return {"match_key": f"k{i}", "stage": "evaluate", "game": "tic_tac_toe", "algorithm": "minibal_plus",
                "budget": "iterations=10", "agent_a": "minibal_plus:iterations=10", "agent_b": "minimax",
                "net_a": "h", "net_b": "l", "a_first": 1, "moves": "", "result": result, "score": 0.5 * result,
                "a_result": result, "a_score": 0.5 * result, "plies": plies, "seed": i, "opponent": "pool",
                "opponent_budget": "iterations=10", "opening": "", "opening_index": i, "unit": f"h|l|{i}",
                "proofs": None if proofs is None else json.dumps({"a": proofs})}
    rows = [row(0, {"ply": 4, "sign": 1, "moves": 5, "won_moves": 3, "proven_choices": 1}, plies=9),
            row(1, {"ply": 8, "sign": -1, "moves": 5, "won_moves": 0, "proven_choices": 0}, plies=10, result=-1),
            row(2, {"ply": None, "sign": 0, "moves": 4, "won_moves": 0, "proven_choices": 0}, result=0),
            row(3, None)]
    (cell,) = decided(rows)
    assert (cell["games"], cell["recorded"], cell["proven"], cell["proven_win"], cell["proven_loss"]) == (4, 3, 2, 1, 1)
    assert cell["median_ply"] == 6 and cell["median_plies"] == 9.5
    assert abs(cell["median_fraction"] - (4 / 9 + 8 / 10) / 2) < 1e-12
    assert (cell["won_moves"], cell["proven_choices"]) == (3, 1)
    run = tmp_path / "run"
    with ResultsDB(run / "results.db") as db:
        for r in rows:
            db.insert(r)
    rep = make_report([run / "results.db"], tmp_path / "report")
    assert "when the game was decided" in rep["table"]
    assert "2 of 3 games proven at the root (1 won, 1 lost), first at ply 6 of 10" in rep["table"]
    assert "1 game(s) played before this was recorded" in rep["table"]
    with open(tmp_path / "report" / DECIDED_CSV, newline="") as f:
        (back,) = csv.DictReader(f)
    assert back["proven"] == "2" and back["proven_choices"] == "1"
