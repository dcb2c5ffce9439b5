"""Where an agent's Ray actor waits to start (issue 15; issue 35 item 4), on a real
cluster: a batch that takes the nodes longer than one start each starts whole; a launch
the cluster has no room for yet waits, saying so, and starts when a slot frees; one no
live node could ever hold fails saying what it asks for; and with the default ask (a
quarter of a CPU) a lead and its two members run on two CPUs — where a whole CPU each
left the second member waiting, then failing, while its own lead held a slot.

Nothing here is timed (a loaded 2-core machine stretches a Ray start 2x from one minute
to the next) and nothing depends on where Ray places an actor: the cluster is the test's
own (`ray_helpers.local_cluster`), two worker nodes of one CPU that start one actor at a
time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from process_helpers import launch_spec
from ray.cluster_utils import Cluster
from ray_helpers import local_cluster
from supervisor_helpers import STUCK, hosted, spawn_one, until

from legion_tui.model import NodeStatus
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


async def test_a_launch_no_node_could_hold_fails_saying_what_it_asks_and_what_they_have(
    tmp_path: Path, one_at_a_time: Cluster
) -> None:
    settings = ClusterSettings(engine="ray", address=one_at_a_time.address,
                               num_cpus=SETTINGS_CPUS)  # fmt: skip
    spec = _spec(tmp_path, "huge", resources={"CPU": 0.5, "legion-no-such-box": 1.0})
    notes: list[str | None] = []
    handle = RayHandle(spec, settings, start_bound=2.0, on_note=notes.append)
    with pytest.raises(RuntimeError) as caught:
        await handle.start()
    assert str(caught.value) == (
        "on the Ray cluster: no node of the cluster could hold it: it asks for 0.5 CPUs and "
        "{'legion-no-such-box': 1.0}; 3 live nodes, the most CPUs on one 1 (for 2 s)"
    )
    assert notes == []  # it never waited for room: there is none to wait for
    await handle.stop(force=True, grace=0.0)  # nothing started: nothing to sweep


async def test_a_launch_with_no_room_yet_waits_saying_so_and_starts_when_a_slot_frees(
    tmp_path: Path, one_at_a_time: Cluster
) -> None:
    settings = ClusterSettings(engine="ray", address=one_at_a_time.address, num_cpus=0.5)
    heard: dict[str, list[str | None]] = {}

    def handle(name: str) -> RayHandle:
        return RayHandle(_spec(tmp_path, name), settings, start_bound=2.0,
                         on_note=heard.setdefault(name, []).append)  # fmt: skip

    running = [handle(f"r{n}") for n in range(4)]  # two CPUs, half a CPU each: full
    waiting, stopped = handle("waits"), handle("stopped-waiting")
    try:
        await asyncio.gather(*(h.start() for h in running))
        starts = asyncio.ensure_future(waiting.start())
        gives_up = asyncio.ensure_future(stopped.start())
        await until(lambda: heard.get("waits") and heard.get("stopped-waiting"), 30.0,
                    "both to say they wait")  # fmt: skip
        # Past the start bound, and still waiting: some node could hold it.
        assert heard["waits"] == ["waiting for a place on the cluster: needs 0.5 CPUs"]
        assert not starts.done() and waiting.placement is None
        # A waiting launch is stopped as any: it ends, and no node is called lost.
        await stopped.stop(force=True, grace=0.0)
        with pytest.raises(RuntimeError):
            await gives_up
        assert stopped.lost is None
        await running[0].stop(force=True, grace=0.0)  # a slot frees
        await asyncio.wait_for(starts, 60.0)
        assert waiting.placement is not None
        assert heard["waits"] == ["waiting for a place on the cluster: needs 0.5 CPUs", None]
    finally:
        await asyncio.gather(*(h.stop(force=True, grace=0.0)
                               for h in [*running, waiting, stopped]))  # fmt: skip


async def test_a_lead_and_two_members_run_on_two_cpus_with_the_default_ask(
    tmp_path: Path, one_at_a_time: Cluster
) -> None:
    """The issue's case (a 2-CPU cluster, `legion run centurion` with two members):
    nothing in the settings but the cluster, and the team settles."""
    settings = tmp_path / ".legion" / "settings.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text(f'[cluster]\nengine = "ray"\naddress = "{one_at_a_time.address}"\n')
    team = [{"role": "worker", "name": f"worker-{n}", "task": "Fix it.", "sim": {"quick": True}}
            for n in range(2)]  # fmt: skip
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", sim={"children": team})
        await until(lambda: sup.names.node(lead.id).status is NodeStatus.SETTLED, 120.0,
                    "the team settled")  # fmt: skip
        members = [sup.names.node(n) for n in sup.model.children(lead.id)]
        assert [(m.name, m.status) for m in members] == [
            ("worker-0", NodeStatus.SETTLED), ("worker-1", NodeStatus.SETTLED)
        ]


# A member whose command ends: the agents a lead waits on, whose actors have nothing left
# to run (a simulated member, like pi, stays for the next turn).
ENDING_WORKER = (
    "---\nname: worker\ndescription: Ends at once.\nkind: exec\nrole: worker\n"
    'command: ["sh", "-c", "echo done"]\n---\nWork.\n'
)


async def test_a_member_queued_behind_its_ended_sibling_starts_when_the_sibling_ends(
    tmp_path: Path, one_at_a_time: Cluster
) -> None:
    """A whole CPU each (a card's or the settings' ask) on two CPUs: the lead and one
    member run and the other member waits — until its sibling has ended, not until the
    team is stopped. An ended agent's actor held its slot: the lead waited on its members
    and the last one on that slot, for ever (tried by hand on a 2-CPU head)."""
    settings = tmp_path / ".legion" / "settings.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text(f'[cluster]\nengine = "ray"\naddress = "{one_at_a_time.address}"\n'
                        "numCpus = 1\n")  # fmt: skip
    (tmp_path / ".legion" / "agents").mkdir()
    (tmp_path / ".legion" / "agents" / "worker.md").write_text(ENDING_WORKER)
    team = [{"role": "worker", "name": f"worker-{n}", "task": "Fix it."} for n in range(2)]
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", sim={"children": team})
        await until(lambda: sup.names.node(lead.id).status is NodeStatus.SETTLED, 120.0,
                    "the team settled")  # fmt: skip
        members = [sup.names.node(n) for n in sup.model.children(lead.id)]
        assert [(m.name, m.kind, m.status) for m in members] == [
            ("worker-0", "exec", NodeStatus.SETTLED), ("worker-1", "exec", NodeStatus.SETTLED)
        ]
        # The members' slots are the cluster's again while the host still runs (the
        # simulated lead's stays: it waits for a next turn).
        await until(lambda: ray.available_resources().get("CPU", 0.0) >= 1.0, 30.0,
                    "the members' CPUs free")  # fmt: skip
