"""A member's actors as Ray actors (issue 45) on Ray's local multi-node test cluster
(``tests/ray_cluster.py``): the learner runs as the member's task, its 2 actors elsewhere on the
cluster, their games shipped back as they finish; the node of an actor is lost once two games were
counted (a hook on the member's records, never a sleep), and the member goes on: the game budget
is reached, no game is lost or counted twice. Skipped without Ray."""
import pytest

ray = pytest.importorskip("ray")

from ray_cluster import ray_cluster  # noqa: E402,F401  (the fixture)
from test_actors import check_final  # noqa: E402


def _actor_nodes() -> set:
    """Node ids of the alive actors of the members (read from the GCS: the test cluster runs no
    dashboard, which ``ray.util.state`` needs)."""
    import ray._private.state as state
    return {a["Address"]["NodeID"] for a in state.actors().values()
            if a.get("ActorClassName") == "_ActorBody" and a.get("State") == "ALIVE"}


def test_a_members_actors_on_ray_survive_losing_a_node(ray_cluster, tmp_path):  # noqa: F811
    """The learner is the member's task, its 2 actors Ray actors; as soon as one of them is alive
    on a worker node (read from the GCS by a thread of the test), that node is lost. Games are
    slow enough (200 iterations a move, 30 games) that the member is still playing then; whenever
    the loss lands, the game budget is reached with no game lost or counted twice."""
    import threading
    import time
    from descent.config import load_config
    from descent.distributed import train_members_ray
    from pathlib import Path
    from training.run import run_training
    cfg = load_config(Path(__file__).parents[1] / "configs" / "tic_tac_toe.toml")
    cfg["selfplay"]["iterations"] = 200
    cfg["network"].update(filters=8, blocks=1, head_units=16)
    cfg["training"].update(replay_games=1000, min_sample=64, batch_size=32)
    killed, done = [], threading.Event()
    head = ray_cluster.cluster.head_node.node_id

    def lose_an_actors_node():
        while not done.is_set() and not killed:
            on = _actor_nodes() - {head}
            targets = [n for n in ray_cluster.nodes if n.node_id in on]
            if targets:
                ray_cluster.remove_node(targets[0])
                killed.append(targets[0].node_id)       # (no new node: only the main thread may)
            time.sleep(0.05)

    def remote(jobs, on_record):
        assert all(j.extra["actors"] == 2 for j in jobs)
        return train_members_ray(jobs, ray_cluster.address, on_record)

    killer = threading.Thread(target=lose_an_actors_node, daemon=True)
    killer.start()
    run = tmp_path / "run"
    try:
        out = run_training("tic_tac_toe", cfg, 1, 3600.0, [("1h", 3600.0)], 1, run, 0,
                           progress=False, max_games=30, echo=lambda *_: None, remote=remote,
                           runtime={"games_in_flight": 2, "inference": "numpy", "actors": 2})
    finally:
        done.set()
        killer.join()
    assert out[0]["games"] == 30
    assert killed, "no actor ran on a worker node"
    assert check_final(run / "member_00") == 30
