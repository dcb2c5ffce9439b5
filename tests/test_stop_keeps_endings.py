"""A parent's stop ends its members' agents, but a member that had already ended keeps its
own ending (issue 13): ✓ settled and ✗ failed are what it did, not `◌ retired` — a failure
must not vanish from the header's ✗ count. A stop naming the ended node itself still
retires it (SPEC §6.3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import STUCK, hosted, settled, spawn_one, stuck_worker, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host


async def test_a_leads_stop_keeps_the_endings_of_members_that_had_ended(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", sim=dict(STUCK))
        await until(lambda: sup.names.node(lead.id).live, what="the lead to run")
        running = await stuck_worker(sup, "running", caller=lead.id)
        done = await spawn_one(sup, name="done", caller=lead.id)
        bad = await spawn_one(sup, name="bad", caller=lead.id, sim={"fail": True})
        assert (await settled(sup, done.id)).status is NodeStatus.SETTLED
        assert (await settled(sup, bad.id)).status is NodeStatus.FAILED
        # The settled member's agent idles after its final answer, waiting for a letter.
        idle = sup.roster.handles()[done.id]
        assert idle.exited is None

        assert await sup.stops.stop(ROOT_ID, "lead") == "Stopped lead."

        assert sup.names.node(lead.id).status is NodeStatus.RETIRED
        assert sup.names.node(running.id).status is NodeStatus.RETIRED
        assert sup.names.node(done.id).status is NodeStatus.SETTLED
        assert sup.names.node(bad.id).status is NodeStatus.FAILED
        # ... and the ledger agrees, with no `node_retired` overwriting their last word.
        await sup.ledger.flush()
        for member, status in ((done, NodeStatus.SETTLED), (bad, NodeStatus.FAILED)):
            row = await sup.ledger.get_node(member.id)
            assert row is not None and row.status is status
            types = [e.type for e in sup.model.nodes[member.id].events]
            assert EventType.NODE_RETIRED not in types
        # Their agents were stopped all the same, and nothing holds them as "stopping".
        assert idle.exited is not None
        assert done.id not in sup.roster.handles() and bad.id not in sup.roster.handles()
        assert done.id not in sup.roster.stopping and bad.id not in sup.roster.stopping
        counts = sup.model.counts()
        assert counts["failed"] == 1 and counts["settled"] == 1
        # A stop that names the ended member itself still retires it.
        assert await sup.stops.stop(ROOT_ID, "lead/done") == (
            "Retired 1 already-settled child: done (execution: success)"
        )
        assert sup.names.node(done.id).status is NodeStatus.RETIRED
