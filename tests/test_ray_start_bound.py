"""The bound on an agent's Ray actor start (issue 15), on a real cluster: a batch that
takes the nodes longer than one start each starts whole, and a launch no node can take
fails saying what it asked for.

The rule itself — a launch fails only once no start of the host's has ended for the
whole bound — is `test_ray_start_clock.py`'s, on a clock that test steps. Here nothing is
timed (a loaded 2-core machine stretches a Ray start 2x from one minute to the next) and
nothing depends on where Ray places an actor: the cluster is the test's own
(`ray_helpers.local_cluster`), two worker nodes of one CPU that start one actor at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from process_helpers import launch_spec
from ray.cluster_utils import Cluster
from ray_helpers import local_cluster
from supervisor_helpers import STUCK

from legion_tui.settings import ClusterSettings
from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.ray.handle import RayHandle

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240)]

BATCH = 30  # over two nodes that start one actor at a time: 15 starts in turn each
SETTINGS_CPUS = 0.05  # each actor's ask: room for every one of the batch on either node


@pytest.fixture(scope="module")
def one_at_a_time() -> Iterator[Cluster]:
    with local_cluster(1, 1) as made:
        yield made


def _spec(tmp_path: Path, node_id: str, **fields: object) -> LaunchSpec:
    spec = launch_spec(tmp_path, node_id=node_id, isolate=True, sim_behaviour=dict(STUCK),
                       **fields)  # fmt: skip
    assert isinstance(spec, LaunchSpec)
    return spec


async def test_a_batch_the_nodes_start_one_at_a_time_starts_whole(
    tmp_path: Path, one_at_a_time: Cluster
) -> None:
    settings = ClusterSettings(engine="ray", address=one_at_a_time.address,
                               num_cpus=SETTINGS_CPUS)  # fmt: skip
    handles = [RayHandle(_spec(tmp_path, f"b{n}"), settings) for n in range(BATCH)]
    try:
        refused = [
            str(result)
            for result in await asyncio.gather(
                *(h.start() for h in handles), return_exceptions=True
            )
            if result is not None
        ]
        assert refused == []
        assert all(h.placement is not None for h in handles)
    finally:
        await asyncio.gather(*(h.stop(force=True, grace=0.0) for h in handles))


async def test_a_launch_no_node_can_take_fails_saying_what_it_asked(
    tmp_path: Path, one_at_a_time: Cluster
) -> None:
    settings = ClusterSettings(engine="ray", address=one_at_a_time.address,
                               num_cpus=SETTINGS_CPUS)  # fmt: skip
    spec = _spec(tmp_path, "huge", resources={"CPU": 0.5, "legion-no-such-box": 1.0})
    handle = RayHandle(spec, settings, start_bound=2.0)
    with pytest.raises(RuntimeError) as caught:
        await handle.start()
    assert str(caught.value) == (
        "on the Ray cluster: no node took it within 2 s (it asks for 0.5 CPUs and "
        "{'legion-no-such-box': 1.0}; `ray status` shows what is free)"
    )
    await handle.stop(force=True, grace=0.0)  # nothing started: nothing to sweep
