"""descent: orchestration and command line; composes the searches with the networks."""
from descent import networks as _networks  # noqa: F401  (installs the net=PATH loader of agents)
