"""descent: orchestration and command line; composes the searches with the networks.

``descent.make_agent(spec, game)`` builds an agent (with ``net=PATH``, a value network as its leaf
evaluator); ``descent.api.Opponent`` embeds a balanced opponent in another program.
"""
from descent.networks import make_agent

__all__ = ["make_agent"]
