"""Review round 4: a subtree stop — no spawn from a node being stopped, and the nodes
of one depth level stopped together."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import STUCK, hosted, spawn_one, stuck_worker, until

from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID, OpError
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host


def _hold_stops(sup: Supervisor, node_ids: list[str], gate: asyncio.Event) -> set[str]:
    """Each handle's stop waits on `gate`; returns the set of ids whose stop began."""
    entered: set[str] = set()
    for node_id in node_ids:
        handle = sup.roster.handles()[node_id]
        real = handle.stop

        async def held(*, real: Any = real, node_id: str = node_id, **kw: Any) -> Any:
            entered.add(node_id)
            await gate.wait()
            return await real(**kw)

        handle.stop = held  # type: ignore[method-assign]
    return entered


async def test_a_lead_being_stopped_cannot_spawn_and_its_children_stop_together(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", sim=dict(STUCK))
        await until(lambda: sup.names.node(lead.id).live, what="the lead to run")
        a = await stuck_worker(sup, "a", caller=lead.id)
        b = await stuck_worker(sup, "b", caller=lead.id)
        gate = asyncio.Event()
        entered = _hold_stops(sup, [a.id, b.id], gate)
        stop = asyncio.create_task(sup.stops.stop(ROOT_ID, "lead"))
        try:
            # Both children's stops are under way at once (one level, together) ...
            await until(lambda: entered == {a.id, b.id}, 10, "both children's stops to begin")
            # ... and the lead, still live until its children are down, spawns nothing.
            assert sup.names.node(lead.id).live
            with pytest.raises(OpError) as err:
                await sup.launcher.spawn(lead.id, [ChildRequest("worker", "t", name="late")])
            assert err.value.code == "FORBIDDEN" and "being stopped" in err.value.message
        finally:
            gate.set()  # a failing test must not leave the stops (and the close) hanging
        assert await asyncio.wait_for(stop, 20) == "Stopped lead."
        assert "late" not in {v.node.name for v in sup.model.nodes.values()}
