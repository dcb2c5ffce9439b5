"""The node-move table (model.NODE_MOVES) the supervisor's one status write checks: a
write that lost a race is refused and writes nothing — a stint is revived once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import hosted, spawn_one, until

from legion_tui.model import LIVE_STATUSES, NODE_MOVES, EventType, NodeStatus
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host

# `done` needs every child to have failed; a quick team's worker does not: the lead
# settles in `planning`, an ended team in a live phase (a wake-up revives its stint).
ENDS_IN_PLANNING = {
    "phases": [{"id": "planning", "next": [{"to": "done", "require": ["children_all_failed"]}]}]
}
QUICK_WORKER = [{"role": "worker", "name": "w", "task": "t", "sim": {"quick": True}}]


def test_every_status_has_its_moves_and_none_is_a_self_move() -> None:
    assert set(NODE_MOVES) == set(NodeStatus)
    for status, targets in NODE_MOVES.items():
        assert status not in targets, f"{status} → {status} would let a lost race write twice"
    # Every live status can end every way; an ended node moves only by a resume (or a
    # wake-up from settled, or the root's reopen), never back to settled by itself.
    for live in LIVE_STATUSES:
        assert {NodeStatus.SETTLED, NodeStatus.FAILED, NodeStatus.RETIRED} <= NODE_MOVES[live]
    assert NodeStatus.SETTLED not in NODE_MOVES[NodeStatus.FAILED]
    # A retired node comes back only through a resume (the root, the host itself, through
    # its run's reopen: `ROOT_REOPEN`).
    assert NODE_MOVES[NodeStatus.RETIRED] == {NodeStatus.STARTING}


async def test_a_late_wake_after_a_retire_writes_nothing(tmp_path: Path) -> None:
    """A wake (a letter's or a steer's turn) reads `settled` in the model while a stop's or
    the pause's `retired` is on its way to the ledger, and writes `running` after it.
    Before: retired → running was allowed for every node, and a stopped node read
    `running` for ever."""
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, name="w", sim={"quick": True})
        await until(lambda: not sup.names.node(node.id).live, what="w's end")
        record = sup.ctx.record
        assert await record.set_status(node.id, NodeStatus.RETIRED, None, {}) is not None
        assert await record.set_status(node.id, NodeStatus.RUNNING, None, {}) is None
        row = await sup.ledger.get_node(node.id)
        assert row is not None and row.status is NodeStatus.RETIRED
        assert sup.names.node(node.id).status is NodeStatus.RETIRED


async def test_a_steer_racing_the_settle_revives_the_stint_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race issue 8 found (1 run in 15): the monitor writes `settled`; a steer lands
    before the monitor resumes, sees `settled` and writes `running`; then the monitor
    sees the new turn and wakes the node too. Both read `settled` before either write of
    `running` landed — without the move check, two `revived` events."""
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(
            sup,
            "centurion",
            name="lead",
            phases=ENDS_IN_PLANNING,
            sim={"quick": True, "children": QUICK_WORKER},
        )
        ledger = sup.ledger
        real_event, real_update = ledger.append_event, ledger.update_node
        settle_logged, release_settle = asyncio.Event(), asyncio.Event()
        waking, release_wake = asyncio.Event(), asyncio.Event()

        async def held_event(node_id: str | None, etype: EventType, data: Any = None) -> Any:
            if node_id == lead.id and etype is EventType.NODE_SETTLED:
                settle_logged.set()  # the row says settled; the monitor waits in here
                await release_settle.wait()
            return await real_event(node_id, etype, data)

        async def held_update(node_id: str, **fields: Any) -> Any:
            wake = node_id == lead.id and fields.get("status") is NodeStatus.RUNNING
            if wake and not waking.is_set():
                waking.set()  # the steer's wake-up, held until the monitor looks
                await release_wake.wait()
            return await real_update(node_id, **fields)

        monkeypatch.setattr(ledger, "append_event", held_event)
        monkeypatch.setattr(ledger, "update_node", held_update)
        await asyncio.wait_for(settle_logged.wait(), 30.0)
        steer = asyncio.ensure_future(sup.control.steer(ROOT_ID, "lead", "one more look"))
        await asyncio.wait_for(waking.wait(), 10.0)
        release_settle.set()  # the monitor goes on: it sees the steer's turn running
        await until(lambda: sup.model.nodes[lead.id].events[-1].type is EventType.NODE_SETTLED)
        release_wake.set()
        outcome, _receipt = await asyncio.wait_for(steer, 10.0)
        assert outcome == "accepted"
        await until(lambda: sup.names.node(lead.id).status is NodeStatus.RUNNING)
        revivals = [
            e
            for e in sup.model.nodes[lead.id].events
            if e.type is EventType.PHASE_CHANGE and e.data.get("reason") == "revived"
        ]
        assert len(revivals) == 1, revivals
