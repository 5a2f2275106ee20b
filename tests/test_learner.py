"""The async learner trains while games keep arriving (it once trained only when its queue
emptied, so a self-play faster than counting a game starved it: 1 pass in 1,119 games)."""
import threading

from training.trainer import _Learner


def test_async_learner_trains_every_backlog_while_games_keep_coming():
    release = threading.Event()
    trained, counted, learner = [], [], None
    total, following = 60, [12]

    def process(g, train=True):
        if g == 1:
            release.wait(30)            # games up to 11 queue up behind the first
        counted.append(g)
        if train:
            trained.append(g)
        if following[0] <= total:       # a new game finishes while each one is counted
            learner.queue.put(following[0])
            following[0] += 1
        return None

    learner = _Learner(process, "async")
    for g in range(1, 12):
        learner.submit(g)
    release.set()
    # wait until every game is counted, then close (the bound is only a hang guard: a loaded
    # machine may take long, and nothing below depends on how long)
    import time
    for _ in range(60000):
        if len(counted) >= total:
            break
        time.sleep(0.01)
    learner.close()
    assert sorted(counted) == list(range(1, total + 1))
    # one pass per backlog (at most 11 games queue behind a game), although the queue never
    # empties before the end: passes at most 12 games apart, the last game trains
    gaps = [b - a for a, b in zip(trained, trained[1:])]
    assert len(trained) >= 4 and max(gaps) <= 12 and trained[-1] == total, trained
    assert learner.skipped == total - len(trained)
