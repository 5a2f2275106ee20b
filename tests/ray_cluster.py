"""A multi-node Ray cluster on one machine, for tests (issue 21).

``ray.cluster_utils.Cluster`` starts a head and worker nodes, each its own raylet process with its
own object store and worker processes, so tasks really run on other "nodes" and losing one is
losing its running tasks. Use the module-scoped fixture (starting raylets costs seconds)::

    from ray_cluster import ray_cluster  # noqa: F401  (the fixture)

    def test_x(ray_cluster):
        run_stage(ray_address=ray_cluster.address)
        ray_cluster.kill_worker()          # a worker node disappears (no graceful shutdown)

The driver is connected through ``descent.distributed.init(address)``, as the CLI does, so the
workers get the same runtime environment as in a real run.
"""
from __future__ import annotations

import time

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

HEAD_CPUS = 1          # the head runs tasks too: a stage survives losing every worker node
WORKER_CPUS = 1        # one task at a time per worker node: small, and a 2-core CI machine copes
WORKERS = 3
# a killed node is declared dead after ~3 s instead of Ray's default ~30 s of missed health checks
SYSTEM_CONFIG = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 1000,
                 "health_check_failure_threshold": 3}


class LocalCluster:
    """A head and ``workers`` worker nodes on this machine; ``address`` is the GCS address that
    ``--ray`` takes."""

    def __init__(self, workers: int = WORKERS, worker_cpus: int = WORKER_CPUS,
                 head_cpus: int = HEAD_CPUS, connect: bool = True):
        self.worker_cpus = worker_cpus
        self.cluster = Cluster(initialize_head=True,
                               head_node_args={"num_cpus": head_cpus, "include_dashboard": False,
                                               "_system_config": SYSTEM_CONFIG})
        self.nodes = [self.add_node() for _ in range(workers)]
        self.cluster.wait_for_nodes()
        if connect:
            self.connect()

    @property
    def address(self) -> str:
        return self.cluster.address

    def connect(self):
        from descent import distributed
        if not ray.is_initialized():
            distributed.init(self.address)
        return ray

    def add_node(self, env_vars: dict | None = None, num_cpus: int | None = None, wait: bool = True):
        """Start one more worker node; ``env_vars`` go to its raylet and so to its workers."""
        kwargs = {"num_cpus": self.worker_cpus if num_cpus is None else num_cpus}
        if env_vars:
            kwargs["env_vars"] = dict(env_vars)
        node = self.cluster.add_node(wait=wait, **kwargs)
        return node

    def remove_node(self, node) -> None:
        """Kill a node the hard way (its raylet and workers die, as when a machine is lost)."""
        self.cluster.remove_node(node, allow_graceful=False)
        if node in self.nodes:
            self.nodes.remove(node)

    def kill_worker(self, replace: bool = True):
        """Kill the oldest worker node; start a fresh one in its place unless ``replace`` is false
        (so a module-scoped cluster keeps its size across tests). Returns the killed node."""
        node = self.nodes[0]
        self.remove_node(node)
        if replace:
            self.nodes.append(self.add_node(wait=False))
        return node

    def alive_nodes(self) -> int:
        """Nodes the cluster counts alive (read from its GCS: works without a connected driver)."""
        return len(self.cluster.global_state._live_node_ids())

    def wait_alive(self, count: int, timeout: float = 120.0) -> None:
        """Wait until ``count`` nodes are alive (a node count, not a timing guess)."""
        end = time.monotonic() + timeout
        while self.alive_nodes() != count:
            if time.monotonic() > end:
                raise TimeoutError(f"{self.alive_nodes()} nodes alive, expected {count}")
            time.sleep(0.2)

    def shutdown(self) -> None:
        if ray.is_initialized():
            ray.shutdown()
        self.cluster.shutdown()


@pytest.fixture(scope="module")
def ray_cluster():
    """A head (1 CPU) and 3 worker nodes (1 CPU each), the driver connected; shut down after the
    module."""
    if ray.is_initialized():            # a local cluster left by another test module
        ray.shutdown()
    cluster = LocalCluster()
    try:
        yield cluster
    finally:
        cluster.shutdown()


def ray_dump_lines(text: str) -> list[str]:
    """Lines of Ray's own messages about a lost node (its raylet's dump) in captured output."""
    return [line for line in text.splitlines() if "aylet" in line or "state-dump" in line]
