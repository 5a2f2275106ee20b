"""The replay window's byte cap (the member's memory share, training.memory.replay_bytes): the
oldest games leave whole, every game kept has all its examples, on add and on resume."""
import numpy as np

from training.replay import ReplayBuffer

SHAPE = (3, 3, 2)


def _add(replay, gid, n):
    x = np.ones((n, *SHAPE), np.float32)
    replay.add(gid, x, np.full(n, gid, np.float32), np.zeros(n, np.int32), {"result": 0})


def test_oldest_games_leave_whole_past_the_byte_cap(tmp_path):
    one = ReplayBuffer(tmp_path / "probe", 100, SHAPE)
    _add(one, 1, 10)
    per_game = one.nbytes                         # 10 examples, bit-packed
    replay = ReplayBuffer(tmp_path / "r", 100, SHAPE, max_bytes=3 * per_game)
    for gid in range(1, 7):
        _add(replay, gid, 10)
        replay.trim_files()
        assert replay.nbytes <= 3 * per_game
    assert sorted(replay.games) == [4, 5, 6]
    assert all(len(g.y) == 10 for g in replay.games.values()), "games kept whole"
    assert sorted(replay.files()) == [4, 5, 6]
    # a game larger than the whole cap still enters (the newest always stays), alone
    _add(replay, 7, 50)
    replay.trim_files()
    assert sorted(replay.games) == [7] and sorted(replay.files()) == [7]


def test_files_stay_until_the_state_is_saved(tmp_path):
    replay = ReplayBuffer(tmp_path / "r", 100, SHAPE, max_bytes=1)
    _add(replay, 1, 10)
    _add(replay, 2, 10)
    assert sorted(replay.games) == [2] and sorted(replay.files()) == [1, 2]
    replay.trim_files()
    assert sorted(replay.files()) == [2]


def test_resume_keeps_the_newest_games_within_the_cap(tmp_path):
    full = ReplayBuffer(tmp_path / "r", 100, SHAPE)
    for gid in range(1, 7):
        _add(full, gid, 10 * gid)
    sizes = {g: full.games[g].nbytes for g in full.games}
    cap = sizes[6] + sizes[5] + sizes[4] // 2      # room for games 6 and 5, not 4
    replay = ReplayBuffer(tmp_path / "r", 100, SHAPE, max_bytes=cap)
    assert replay.load(6) == []                     # out by the cap: not missing
    again = ReplayBuffer(tmp_path / "r", 100, SHAPE, max_bytes=cap)
    assert again.load(6) == [] and sorted(again.games) == [5, 6]    # nor on the next resume
    assert sorted(replay.games) == [5, 6]
    assert sorted(replay.files()) == [5, 6]
    # a file missing among the newest is reported, and game 4, for which the window has room now;
    # the window stays contiguous below the cap
    (tmp_path / "r" / "g00000006.h5").unlink()
    replay = ReplayBuffer(tmp_path / "r", 100, SHAPE, max_bytes=cap)
    assert replay.load(6) == [4, 6]
    assert sorted(replay.games) == [5]
    # without its files at all (a run moved without them): every game of the window is missing
    for p in (tmp_path / "r").glob("g*.h5"):
        p.unlink()
    assert ReplayBuffer(tmp_path / "r", 4, SHAPE, max_bytes=cap).load(6) == [3, 4, 5, 6]
