"""The composition of searches with value networks: the layer above ``search_ext`` (which knows no
network) and ``training`` (which knows no agent). Importing this module installs the loader used by
agent specs with ``net=PATH`` (``search_ext.agents.set_network_evaluator``).
"""
from __future__ import annotations

from search_ext import agents as _agents


def network_evaluator(opts: dict, game=None):
    """The leaf evaluator of an agent with ``net=PATH``: the checkpoint's network through the
    fastest inference backend available (``training.inference.make_inference``), cached in
    ``opts`` so that an agent's searches share one network."""
    inf = opts.get("_inference")
    if inf is None:
        from training.inference import make_inference
        from training.network import load_network
        model, _ = load_network(opts["net"], game)
        inf = opts["_inference"] = make_inference(model)
    return inf.evaluator()


_agents.set_network_evaluator(network_evaluator)
