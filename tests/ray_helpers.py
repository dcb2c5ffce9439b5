"""A real local Ray cluster for the Ray tests (issue 15): a head with no CPUs, so every
agent lands on a worker node, and two worker nodes on this machine
(`ray.cluster_utils.Cluster`); the host configured through `.legion/settings.toml`
exactly as a user's would be.

The first worker node also holds one unit of the custom resource `BOX`: an agent whose
role card asks for it can only land there.

The cluster is the test's own: its files live under a private `RAY_TMPDIR`, so its
address is not written to `/tmp/ray/ray_current_cluster`, where Ray's `address = "auto"`
looks — another `legion run` on this machine cannot join it and fill its nodes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import ray
from ray.cluster_utils import Cluster

from legion_tui.supervisor.backends.ray.handle import RayHandle
from legion_tui.supervisor.core import Supervisor

__all__ = ["BOX", "NODE_CPUS", "cluster", "handle_of", "local_cluster", "project_on", "sha"]

NODE_CPUS = 2  # each worker node: two agents at one CPU each
BOX = "legion-test-box"  # a custom resource only the first worker node has


@contextmanager
def local_cluster(*node_cpus: int, first_resources: dict[str, float] | None = None
                  ) -> Iterator[Cluster]:
    """A head without CPUs and one worker node per entry of `node_cpus` on this machine,
    the first also holding `first_resources`; this process connected to it."""
    head: dict[str, Any] = {
        "num_cpus": 0,
        "include_dashboard": False,
        # A dead node is known in ~1 s (its raylet's connection drops at once; this is the
        # bound for a node that hangs instead).
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3},
    }
    # Short, under /tmp: Ray's Unix sockets live below it (a path holds at most 107 bytes).
    private = tempfile.mkdtemp(prefix="legion-ray-", dir="/tmp")
    before = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = private  # read by this process and by every Ray process
    try:
        made = Cluster(initialize_head=True, head_node_args=head)
        try:
            for n, cpus in enumerate(node_cpus):
                made.add_node(num_cpus=cpus, resources=(first_resources or {}) if n == 0 else {})
            made.wait_for_nodes()
            ray.init(address=made.address, log_to_driver=False)
            try:
                yield made
            finally:
                ray.shutdown()
        finally:
            made.shutdown()
    finally:
        if before is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = before
        shutil.rmtree(private, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with local_cluster(NODE_CPUS, NODE_CPUS, first_resources={BOX: 1}) as made:
        yield made


def project_on(project: Path, cluster: Cluster) -> Path:
    """`project`'s `.legion/settings.toml` puts its agents on `cluster`, one CPU each."""
    settings = project / ".legion" / "settings.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(f'[cluster]\nengine = "ray"\naddress = "{cluster.address}"\nnumCpus = 1\n')
    return project


def handle_of(sup: Supervisor, node_id: str) -> RayHandle:
    handle = sup.roster.handle(node_id)
    assert isinstance(handle, RayHandle), handle
    return handle


def sha(path: Path | str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
