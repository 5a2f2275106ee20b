"""The composition of searches with value networks: the layer above ``search_ext`` (which knows no
network) and ``training`` (which knows no agent).

``make_agent(spec, game)`` is the way to build an agent, a network or not: it is
``search_ext.agents.make_agent`` with this module's network loader passed explicitly, so that
``net=PATH`` works from any program whatever it imported before (nothing is installed on import).
``best_network(game)`` finds the best trained network of a game (the user's, else the shipped one).

Wherever a spec takes ``net=PATH`` it also takes three names (``NET_NAMES``): ``net=best`` (the
game's ``best_network``), ``net=final`` and ``net=early`` (the networks shipped for the game,
``descent.shipped``); a file of one of those names is written with its folder (``net=./best``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import games

from search_ext import agents as _agents
from search_ext.engine_spec import is_engine_spec
from training import layout
from training.inference import make_inference
from training.network import CheckpointError, read_network
from training.run import DEFAULT_ROOT, list_checkpoints
from descent.protocols.outside import make_engine_agent
from descent.shipped import check_network, network
from descent.shipped import entries as shipped_entries


def network_evaluator(opts: dict, game=None):
    """The leaf evaluator of an agent with ``net=PATH``: the checkpoint's network read without
    TensorFlow (``training.network.read_network``) and run by the fastest inference backend
    available, ONNX Runtime or NumPy (``training.inference.make_inference``), cached in ``opts`` so
    that an agent's searches share one network."""
    inf = opts.get("_inference")
    if inf is None:
        check_network(opts["net"])          # a shipped network must match its model card
        inf = opts["_inference"] = make_inference(read_network(opts["net"], game))
    return inf.evaluator()


NET_NAMES = ("best", "final", "early")
_NET_NAME = re.compile(r"(?<=net=)(" + "|".join(NET_NAMES) + r")(?=\s*(,|$))")


def resolve_net_names(spec: str, game, root=None) -> str:
    """``spec`` with ``net=best``, ``net=final`` and ``net=early`` (``NET_NAMES``) replaced by the
    paths of those networks of ``game`` (a ``GameInfo`` or a spec); ``CheckpointError`` (one line)
    when the game has no such network."""
    if "net=" not in spec or not _NET_NAME.search(spec):
        return spec
    game_spec = game.spec if hasattr(game, "spec") else games.load(game).spec

    def path(m) -> str:
        name = m.group(1)
        found = best_network(game_spec, root) if name == "best" else network(game_spec, name)
        if not found:
            what = ("no network trained under the runs folder and none shipped" if name == "best" else
                    f"no shipped {name} network")
            ships = ", ".join(c["game"] for _, c in shipped_entries()) or "none"
            raise CheckpointError(f"net={name}: {game_spec} has {what} (networks ship for: {ships})")
        return str(found)
    return _NET_NAME.sub(path, spec)


def make_agent(spec: str, game) -> _agents.Agent:
    """Build the agent ``spec`` (``ALGORITHM[:key=value,...]``, ``net=PATH`` included) for ``game``
    (a ``GameInfo`` or a game spec). Bad specs raise ``search_ext.agents.AgentSpecError``; a
    checkpoint that cannot be loaded ``training.network.CheckpointError``. An outside engine
    (``uci:COMMAND,...`` / ``gtp:COMMAND,...``) is started as a subprocess
    (``descent.protocols.outside``; ``EngineError`` when it cannot be)."""
    if is_engine_spec(spec):
        return make_engine_agent(spec, game)
    return _agents.make_agent(resolve_net_names(spec, game), game, network_loader=network_evaluator)


def ranked_pools(game_spec: str, root):
    """The readable ``pools.json`` records of ``game_spec`` below ``root`` (the run directories'
    rankings) that have a high pool, in the order of their paths."""
    for pools_path in layout.pools_below(root):
        try:
            pools = json.loads(pools_path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(pools, dict) and pools.get("game") == game_spec and pools.get("high"):
            yield pools


def best_network(game_spec: str, root=None, shipped: bool = True) -> str | None:
    """The path of the best network for a game: the user's (``descent rank``'s pools under
    ``root``, else the newest trained milestone), else with ``shipped`` the final network shipped
    in the repository (``descent.shipped``); None when there is none."""
    root = Path(root) if root else DEFAULT_ROOT
    for pools in ranked_pools(game_spec, root):
        top = pools["ranking"][0]["net"] if pools.get("ranking") else pools["high"][0]["net"]
        for h in pools["high"]:
            if h["net"] == top and Path(h["path"]).exists():
                return h["path"]
    rows = [r for r in list_checkpoints(root, game_spec) if r["exists"] and r["game"] == game_spec
            and r["games"] != 0]          # a milestone written before the first game: untrained
    if not rows:
        if not shipped:
            return None
        return network(game_spec)
    rows.sort(key=lambda r: (r["train_seconds"] or 0, r["games"] or 0))
    return rows[-1]["path"]
