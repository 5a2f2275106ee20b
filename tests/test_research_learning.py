"""research.learning's parts that its 30-minute runs rely on, at a small size: the head-to-head
match resumes from its record (a torn last line replayed, finished games kept), a member's totals
come from its status.json when the log rotation thinned its game log, and the score's interval."""
import json

from descent import make_agent
from research.learning import _games_and_examples, _match, _wdl


def test_the_match_resumes_from_its_record_and_replays_a_torn_line(tmp_path):
    a, b = make_agent("mcts:iterations=20", "tic_tac_toe"), make_agent("mcts:iterations=5", "tic_tac_toe")
    record = tmp_path / "match.jsonl"
    whole = _match("tic_tac_toe", a, b, 6, 0, 2, record)
    lines = record.read_text().splitlines()
    assert len(whole) == 6 and len(lines) == 6 and set(whole) <= {-1, 0, 1}
    assert [json.loads(x)["index"] for x in lines] == list(range(6))
    # killed while writing game 4: games 0-3 kept, 4 torn, 5 never played
    record.write_text("\n".join(lines[:4]) + "\n" + lines[4][: len(lines[4]) // 2])
    again = _match("tic_tac_toe", a, b, 6, 0, 2, record)
    assert again == whole                                  # seeded: the replayed games are the same
    assert _match("tic_tac_toe", a, b, 6, 0, 2, record) == whole      # all there: nothing played


def test_a_members_totals_come_from_its_status_over_a_thinned_log(tmp_path):
    mdir = tmp_path / "member_00"
    mdir.mkdir()
    # the game log after rotation keeps only its last games; status.json has the exact counters
    (mdir / "log.jsonl").write_text("".join(json.dumps({"game": g, "examples": 10, "train_seconds": g,
                                                        "cpu_seconds": 2 * g, "actors": 2, "trained": g % 2 == 0})
                                            + "\n" for g in (98, 99, 100)))
    totals = _games_and_examples(tmp_path)
    assert totals["games"] == 100 and totals["examples"] == 30 and totals["actors"] == 2
    assert totals["learner_passes"] == 2 and totals["updates"] is None
    (mdir / "status.json").write_text(json.dumps({"games": 100, "examples": 1234, "train_seconds": 60.0,
                                                  "cpu_seconds": 110.0, "network_version": 17,
                                                  "updates": 800}))
    totals = _games_and_examples(tmp_path)
    assert (totals["games"], totals["examples"], totals["learner_passes"], totals["updates"]) == (100, 1234, 17, 800)
    assert totals["cpu_seconds"] == 110.0


def test_the_score_and_its_interval_count_seat_pairs():
    results, units = [1, 1, 0, -1, 1, 0, 1, 1], [0, 0, 1, 1, 2, 2, 3, 3]
    s = _wdl(results, units)
    assert (s["wins"], s["draws"], s["losses"]) == (5, 2, 1) and s["score"] == 6 / 8
    assert s["units"] == 4 and 0.0 <= s["score_interval"][0] < s["score"] < s["score_interval"][1] <= 1.0
