"""No hidden wiring: the documented way to build an agent with a value network,
``descent.make_agent(spec, game)``, works from a fresh interpreter whatever was imported before it,
and ``search_ext.agents.make_agent`` refuses ``net=`` without a loader whatever was imported (each
case runs in a child process, as a user's script would). The command line's ``match`` (spawned
worker processes) and ``play`` load a network the same way.
"""
import json
import os
import subprocess
import sys

import pytest

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")
ITERATIONS = 30


def child(*argv, stdin: str | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python ARGV...`` in a fresh interpreter."""
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=ENV,
                          timeout=timeout, input=stdin)


def last_json(r: subprocess.CompletedProcess) -> dict:
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


# A user's script: save a tiny (untrained) network with training's own helpers, then build and play
# with it as the docs say, importing nothing else.
SCRIPT = """
import json, sys
from training.network import build_model, save_weights

path = sys.argv[1]
save_weights(path, build_model((3, 3, 2), 4, 1, 8, seed=3),
             {"game": "tic_tac_toe", "network": {"filters": 4, "blocks": 1, "head_units": 8},
              "planes_shape": [3, 3, 2]})

from descent import make_agent

agent = make_agent("minimax:iterations=%d,net=" + path, "tic_tac_toe")
state = agent.game.new_state()
values = [row["value"] for row in agent.analyse(state)]
while not state.is_game_over():
    state.push(agent.choose(state))
print(json.dumps({"plies": state.ply, "values": values,
                  "evaluator": type(agent.search.evaluator).__name__}))
""" % ITERATIONS


@pytest.fixture(scope="module")
def documented(tmp_path_factory):
    """(the script's output, the network it saved)."""
    path = tmp_path_factory.mktemp("net") / "tiny.weights.h5"
    script = path.parent / "user_script.py"
    script.write_text(SCRIPT)
    return last_json(child(str(script), str(path))), str(path)


def test_the_documented_way_works_in_a_fresh_interpreter(documented):
    out, path = documented
    assert os.path.exists(path)
    assert 5 <= out["plies"] <= 9
    assert out["evaluator"] == "CallableEvaluator"           # the network, not zero or playouts
    # an untrained network values the unresolved root children: not all zero, not all equal
    assert len(out["values"]) == 9 and any(v != 0 for v in out["values"])
    assert len(set(out["values"])) > 1


PROBE = """
import importlib, json, sys
for name in sys.argv[2:]:
    importlib.import_module(name)
spec = "minimax:iterations=%d,net=" + sys.argv[1]
from search_ext.agents import AgentSpecError, make_agent as search_make_agent
try:
    search_make_agent(spec, "tic_tac_toe")
    bare = "built"
except AgentSpecError as exc:
    bare = str(exc)
import descent
import descent.api
agent = descent.make_agent(spec, "tic_tac_toe")
values = [row["value"] for row in agent.analyse(agent.game.new_state())]
print(json.dumps({"bare": bare, "values": values, "same": descent.api.make_agent is descent.make_agent}))
""" % ITERATIONS


@pytest.mark.parametrize("order", [
    ("search_ext.agents", "descent"),
    ("search_ext.predictive_agents", "training.network", "search_ext.agents", "descent.api"),
    ("descent.match", "search_ext.agents"),
    ("games.tree_game", "search_ext.evaluators", "descent.networks"),
])
def test_import_order_does_not_matter(documented, order):
    """Whatever was imported first, the search layer's ``make_agent`` refuses ``net=`` without a
    loader (naming the documented function), and ``descent.make_agent`` gives the same network
    values as in the user's script."""
    out, path = documented
    got = last_json(child("-c", PROBE, path, *order))
    assert "descent.make_agent(spec, game)" in got["bare"]
    assert got["values"] == out["values"]
    assert got["same"] is True


def test_search_make_agent_takes_a_loader_explicitly():
    """``network_loader`` is how the layer above passes its loader: it is called with the agent's
    options and game (a Gaussian agent hands it to its base), and without one ``net=`` is refused."""
    from search_ext.agents import AgentSpecError, make_agent
    from search_ext.evaluators import ZeroEvaluator
    calls = []

    def loader(opts, game):
        calls.append((opts["net"], game.spec))
        return ZeroEvaluator()
    make_agent("minimax:iterations=5,net=a.h5", "tic_tac_toe", network_loader=loader)
    make_agent("gaussian:base=minimax,iterations=5,net=b.h5", "tic_tac_toe", network_loader=loader)
    # (the base agent builds its search on every reset: the loader is called each time)
    assert calls[0] == ("a.h5", "tic_tac_toe") and len(calls) > 1
    assert set(calls[1:]) == {("b.h5", "tic_tac_toe")}
    for spec in ("minimax:iterations=5,net=a.h5", "gaussian:base=minimax,iterations=5,net=b.h5",
                 "alphabeta:depth=2,net=c.h5", "predictive:ps=0.5,net=d.h5"):
        with pytest.raises(AgentSpecError, match=r"descent\.make_agent"):
            make_agent(spec, "tic_tac_toe")
    assert not hasattr(sys.modules["search_ext.agents"], "set_network_evaluator")


def test_cli_match_with_a_network_in_spawned_workers(documented):
    """``descent match`` with ``net=`` on two worker processes (spawned: fresh interpreters)."""
    _, path = documented
    r = child("-m", "descent", "match", "tic_tac_toe", "--first", f"minimax:iterations=10,net={path}",
              "--second", "random", "--games", "2", "--workers", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr


def test_cli_play_with_a_network(documented):
    """``descent play --net PATH``: the computer moves first with the network, then the person resigns."""
    _, path = documented
    r = child("-m", "descent", "play", "tic_tac_toe", "--net", path, "--iterations", "10", "--seat",
              "second", "--plain", stdin="resign\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Result: x wins by resignation." in r.stdout
    assert f"The computer uses the network {path}." in r.stdout
    assert "The computer (x) plays" in r.stdout
    assert "Traceback" not in r.stderr
