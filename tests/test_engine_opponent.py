"""Outside UCI and GTP engines as agents (``uci:COMMAND,...`` / ``gtp:COMMAND,...``): the spec,
matches against Fairy-Stockfish and against our own engine through the protocol, and the failures —
a missing binary, an engine that crashes, one that says nothing, one that answers an illegal move
(tiny misbehaving engines in tests/data/engines: real protocol peers) — each game aborted, never
scored."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import games
from descent.match import play_game, run_match
from descent.networks import make_agent
from descent.protocols.outside import EngineError
from descent.results import ResultsDB
from search_ext.agents import AgentSpecError, describe_algorithms, parse_agent

HERE = Path(__file__).parent
PEERS = HERE / "data" / "engines"
FSF = shutil.which("fairy-stockfish") or ("/usr/games/fairy-stockfish"
                                          if os.path.exists("/usr/games/fairy-stockfish") else None)
needs_fsf = pytest.mark.skipif(FSF is None, reason="Fairy-Stockfish is not installed (Debian package "
                                                   "fairy-stockfish, /usr/games/fairy-stockfish)")
BT6 = "breakthrough(rows=6,cols=6)"


def uci_peer(mode: str, extra: str = "") -> str:
    return f"uci:{sys.executable} {PEERS / 'uci_peer.py'} {mode}" + extra


def gtp_peer(mode: str, extra: str = "") -> str:
    return f"gtp:{sys.executable} {PEERS / 'gtp_peer.py'} {mode}" + extra


def descent_cli(*args):
    return subprocess.run([sys.executable, "-m", "descent", *args], capture_output=True, text=True,
                          timeout=600)


# ---- the spec ---------------------------------------------------------------------------------------

def test_spec_parsing():
    kind, o = parse_agent("uci:/usr/games/fairy-stockfish,Skill Level=0,nodes=1000")
    assert kind == "uci" and o["command"] == ["/usr/games/fairy-stockfish"]
    assert o["options"] == [("Skill Level", "0")] and o["nodes"] == 1000 and o["movetime"] is None
    kind, o = parse_agent("gtp:descent engine breakthrough(rows=6,cols=6) --net none,time=2")
    assert o["command"] == ["descent", "engine", "breakthrough(rows=6,cols=6)", "--net", "none"]
    assert o["movetime"] == 2.0
    assert parse_agent("uci:/x/y")[1]["movetime"] == 1.0          # the default budget
    for bad, fragment in [("uci:", "COMMAND"), ("uci:/x,nodes=0", "nodes"), ("uci:/x,nodes=5,nodes=6", "twice"),
                          ("uci:/x,movetime=1,time=2", "not both"), ("gtp:/x,nodes=5", "GTP has no nodes"),
                          ("gtp:/x,Level=3", "unknown key"), ("uci:/x,depth", "malformed"),
                          ("uci:/x,time=nan", "time")]:
        with pytest.raises(AgentSpecError, match=fragment):
            parse_agent(bad)
    assert "uci:" in describe_algorithms() and "gtp:" in describe_algorithms()
    # the search layer alone does not start processes
    from search_ext.agents import make_agent as search_make_agent
    with pytest.raises(AgentSpecError, match="descent.make_agent"):
        search_make_agent("uci:/x/y", BT6)


def test_missing_binary():
    with pytest.raises(EngineError, match="not found"):
        make_agent("uci:/nonexistent/engine", BT6)
    with pytest.raises(EngineError, match="not found"):
        make_agent("gtp:no-such-engine-on-path", "reversi(size=6)")
    r = descent_cli("match", BT6, "--first", "random", "--second", "uci:/nonexistent/engine", "--games", "2")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == "Error: engine /nonexistent/engine: not found"


@pytest.mark.parametrize("spec, fragment", [
    (uci_peer("crash"), "exited with status 3"),
    (uci_peer("illegal"), "answered an illegal move 'a1a6'"),
    (uci_peer("silent", ",movetime=0.1,timeout=0.5"), "no answer within"),
    (uci_peer("fixed:(none)"), "answered no move"),
])
def test_failing_uci_engines_abort_the_game(spec, fragment):
    """Each failure aborts the game (``aborted`` set, never scored); the next game starts the engine
    afresh."""
    eng = make_agent(spec, BT6)
    me = make_agent("random:seed=1", BT6)
    try:
        for i in range(2):
            rec = play_game(BT6, me, eng, i, seed=0)
            assert rec.aborted and fragment in rec.aborted, rec.aborted
            assert rec.plies == (1 if i == 0 else 0)          # the engine moves at ply 1, then first
    finally:
        eng.close()


@pytest.mark.parametrize("mode, fragment", [("illegal", "illegal move"), ("crash", "exited"),
                                            ("refuse", "refused 'genmove")])
def test_failing_gtp_engines_abort_the_game(mode, fragment):
    eng = make_agent(gtp_peer(mode), "reversi(size=6)")
    try:
        rec = play_game("reversi(size=6)", make_agent("random", "reversi(size=6)"), eng, 0, seed=0)
        assert rec.aborted and fragment in rec.aborted, rec.aborted
    finally:
        eng.close()


def test_match_cli_reports_aborted_games_and_refuses_to_score_none():
    r = descent_cli("match", BT6, "--first", "random", "--second", uci_peer("illegal"), "--games", "2")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "game 0 aborted after 1 plies, not scored" in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("Error: every game was aborted")


def test_aborted_games_are_kept_apart_in_results(tmp_path):
    db = ResultsDB(tmp_path / "results.db")
    db.insert_aborted({"match_key": "k1", "stage": "evaluate", "game": BT6, "agent_a": "a", "agent_b": "b",
                       "moves": "a2a3", "plies": 1}, "engine x exited")
    assert db.rows() == [] and "k1" not in db.keys()
    assert [(r["match_key"], r["reason"]) for r in db.aborted()] == [("k1", "engine x exited")]
    db.close()


def test_calibrate_against_a_crashing_engine_scores_nothing(tmp_path):
    run = tmp_path / "run"
    r = descent_cli("calibrate", BT6, "--against", uci_peer("crash"), "--algorithm", "minibal_plus",
                    "--max-games", "4", "--near-games", "2", "--opening-plies", "0", "--run", str(run))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "aborted, not scored" in r.stderr
    cal = run / "calibrations"
    aborted = list(cal.glob("*.aborted.jsonl"))
    assert len(aborted) == 1 and "exited" in json.loads(aborted[0].read_text().splitlines()[0])["aborted"]
    logs = list(cal.glob("*.games.jsonl"))
    assert all(p.read_text().strip() == "" for p in logs)       # nothing scored


def test_our_engine_as_an_outside_engine_both_protocols():
    """descent's own engine behind the protocols, as an opponent: a real round trip."""
    uci = f"uci:{sys.executable} -m descent engine {BT6} --net none,nodes=20"
    recs = list(run_match(BT6, "minimax:iterations=20", uci, 2, seed=0))
    assert [r.aborted for r in recs] == [None, None] and all(r.plies > 0 for r in recs)
    gtp = f"gtp:{sys.executable} -m descent engine reversi(size=6) --net none --iterations 20"
    recs = list(run_match("reversi(size=6)", "random", gtp, 2, seed=0))
    assert [r.aborted for r in recs] == [None, None]
    s = games.new_state("reversi(size=6)")
    for m in recs[1].moves:
        s.push(m)
    assert s.is_game_over()


@needs_fsf
def test_match_against_fairy_stockfish():
    r = descent_cli("match", BT6, "--first", "minimax:iterations=50",
                    "--second", f"uci:{FSF},Skill Level=0,nodes=100", "--games", "2")
    assert r.returncode == 0, r.stderr[-1000:]
    assert "2 games, seats alternating" in r.stdout and "aborted" not in r.stdout + r.stderr


@needs_fsf
def test_fairy_stockfish_agent_reuses_one_process():
    eng = make_agent(f"uci:{FSF},nodes=50", BT6)
    try:
        pid = eng.proc.proc.pid
        for i in range(3):
            rec = play_game(BT6, make_agent("random", BT6), eng, i, seed=i)
            assert rec.aborted is None
        assert eng.proc.proc.pid == pid                 # reused across games (ucinewgame)
    finally:
        proc = eng.proc.proc
        eng.close()
    assert proc.returncode is not None                   # closed cleanly


NET6 = Path(__file__).parent.parent / "checkpoints" / "shipped" / "breakthrough_rows-6_cols-6" / "final.weights.h5"


@needs_fsf
def test_batched_games_against_fairy_stockfish_are_the_games_played_alone():
    """The batched driver takes an outside engine: one engine process per game in flight, from a
    pool kept by the caller; the games are those played one by one (both sides deterministic), and
    closing the pool stops every engine."""
    from descent import batched
    from descent.match import make_opening
    me, eng = f"minibal_plus:iterations=3,net={NET6}", f"uci:{FSF},Skill Level=20,nodes=200"
    ts = [{"game": BT6, "agent_a": me, "agent_b": eng, "index": k, "seed": 3, "a_first": k % 2 == 0,
           "opening": make_opening(BT6, 4, f"t|{k // 2}")} for k in range(6)]
    assert batched.batchable([me, eng])
    pool: dict = {}
    try:
        together = {t["index"]: (r.a_result, r.moves) for t, r in batched.run_batched(ts, 4, engines=pool)}
        engines = [a for free in pool.values() for a in free]
        assert len(engines) == 4 and all(a.proc is not None and a.proc.alive() for a in engines)
        again = {t["index"]: r.moves for t, r in batched.run_batched(ts[:2], 4, engines=pool)}
        assert {id(a) for free in pool.values() for a in free} == {id(a) for a in engines}   # reused
    finally:
        procs = [a.proc.proc for free in pool.values() for a in free]
        batched.close_engines(pool)
    assert pool == {} and all(p.wait(timeout=120) is not None for p in procs)
    a, b = make_agent(me, BT6), make_agent(eng, BT6)
    try:
        alone = {t["index"]: (r.a_result, r.moves) for t in ts
                 for r in [play_game(BT6, a, b, t["index"], t["seed"], t["a_first"], opening=t["opening"])]}
    finally:
        b.close()
    assert together == alone and again == {k: alone[k][1] for k in (0, 1)}


def test_batched_games_against_a_crashing_engine_are_aborted_not_scored():
    from descent import batched
    ts = [{"game": BT6, "agent_a": "minimax:iterations=3,net=" + str(NET6), "agent_b": uci_peer("crash"),
           "index": k, "seed": 0, "a_first": k % 2 == 0} for k in range(4)]
    recs = [r for _, r in batched.run_batched(ts, 4)]
    assert len(recs) == 4 and all(r.aborted and "exited" in r.aborted for r in recs)


@pytest.fixture(scope="module")
def pool_run(tmp_path_factory):
    """tic-tac-toe with two members (untrained networks, early and final), ranked into pools."""
    from descent.tournament import rank
    from training.fileio import write_json
    from training.network import build_model, save_weights
    run = tmp_path_factory.mktemp("runs") / "tic_tac_toe"
    run.mkdir()
    cfg = {"network": {"filters": 4, "blocks": 1, "head_units": 8}}
    write_json(run / "run.json", {"game": "tic_tac_toe", "config": cfg, "seed": 0, "format": "descent-run-1",
                                  "milestones": [["early", 1.0], ["final", 2.0]]})
    for m in range(2):
        d = run / f"member_{m:02d}"
        d.mkdir()
        for name, secs, seed in (("early", 1.0, 100 + m), ("final", 2.0, m)):
            save_weights(d / f"milestone_{name}.weights.h5", build_model((3, 3, 2), 4, 1, 8, seed=seed),
                         {"game": "tic_tac_toe", "member": m, "milestone": name, "milestone_seconds": secs,
                          "network": cfg["network"], "planes_shape": [3, 3, 2]})
    rank(run, "tic_tac_toe", "minimax:iterations=5", games_per_pair=2, progress=False, echo=lambda *a: None)
    return run


def test_evaluate_against_an_outside_engine(pool_run, tmp_path):
    """evaluate --opponent ENGINE: the balanced players against our own engine over GTP; then an
    engine that crashes: its matches go to the aborted table, never to the scored ones."""
    from descent.tournament import evaluate
    ours = f"gtp:{sys.executable} -m descent engine tic_tac_toe --net none --iterations 5"
    db_path = tmp_path / "results.db"
    n = evaluate(pool_run, "tic_tac_toe", ["minimax"], ["iterations=2"], opponent=ours, games_per_pair=2,
                 progress=False, db_path=db_path, opening_plies=0)
    db = ResultsDB(db_path)
    rows = db.rows("evaluate")
    assert n == len(rows) == 2 * len(json.loads((pool_run / "pools.json").read_text())["high"])
    assert all(r["opponent"].startswith("gtp-") and r["agent_b"] == ours for r in rows)
    db.close()
    crash = gtp_peer("crash")
    evaluate(pool_run, "tic_tac_toe", ["minimax"], ["iterations=2"], opponent=crash, games_per_pair=2,
             progress=False, db_path=db_path, opening_plies=0)
    db = ResultsDB(db_path)
    assert len(db.rows("evaluate")) == len(rows)                    # nothing scored
    assert len(db.aborted()) == len(rows) and all("exited" in r["reason"] for r in db.aborted())
    db.close()


def test_adaptive_check_with_an_outside_engine_as_the_person(tmp_path, monkeypatch):
    """research/adaptive_ladder.py --person: an engine that crashes leaves every game aborted (the
    profile untouched); Fairy-Stockfish plays scored games."""
    monkeypatch.setenv("DESCENT_DATA_DIR", str(tmp_path / "data"))
    from research import adaptive_ladder as bal
    recs = bal.one_player(BT6, uci_peer("crash"), 2, 0, echo=lambda *a, **k: None)
    assert [bool(r.get("aborted")) for r in recs] == [True, True]
    assert bal.summary([recs])["aborted"] == 2
    if FSF is not None:
        recs = bal.one_player(BT6, f"uci:{FSF},Skill Level=0,nodes=50", 2, 0, echo=lambda *a, **k: None)
        assert [r.get("aborted") for r in recs] == [None, None] and all("bot_score" in r for r in recs)


def test_an_engine_without_the_variant_is_refused():
    """A UCI engine whose UCI_Variant option lacks the game (and that has no VariantPath) is refused
    before any game (the peer offers chess and breakthrough6x6 only)."""
    with pytest.raises(EngineError, match="does not play xiangqi"):
        make_agent(uci_peer("illegal"), "xiangqi")
    make_agent(uci_peer("illegal"), BT6).close()
