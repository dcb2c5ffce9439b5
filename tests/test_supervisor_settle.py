"""Review round 4: a letter handed to an agent while its settle is being written starts
a turn the supervisor must notice (the node runs again, and settles again at its end)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import hosted, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host


def _settles(sup: Supervisor, node_id: str) -> int:
    return sum(1 for e in sup.model.nodes[node_id].events if e.type is EventType.NODE_SETTLED)


async def test_mail_that_starts_a_turn_during_the_settle_keeps_the_node_supervised(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        in_settle, settle_gate = asyncio.Event(), asyncio.Event()
        real_delivery = sup.teams.delivery_of

        async def held_delivery(node_id: str) -> dict[str, Any] | None:
            if not settle_gate.is_set():  # the first settle waits here, before writing
                in_settle.set()
                await settle_gate.wait()
            return await real_delivery(node_id)

        sup.teams.delivery_of = held_delivery  # type: ignore[method-assign]
        (x,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", "t", name="x")])
        await asyncio.wait_for(in_settle.wait(), 20)  # idle after its answer: settling
        handle = sup.roster.handles()[x.id]
        agent: Any = handle.agent  # type: ignore[attr-defined]
        turn_gate = asyncio.Event()
        real_step = agent._do_step

        async def held_step(step: Any) -> Any:
            await turn_gate.wait()  # the letter's turn lasts until the test says so
            return await real_step(step)

        agent._do_step = held_step
        await sup.mail.send(ROOT_ID, "x", "one more", "also check the docs")
        await until(handle.turn_running, what="the letter to start a turn")
        settle_gate.set()
        # Not `settled` while it works: the settle is followed by `running` again ...
        await until(lambda: _settles(sup, x.id) == 1, what="the first settle")
        await until(lambda: sup.names.node(x.id).status is NodeStatus.RUNNING, 5, "running again")
        # ... and when the letter's turn ends the monitor settles it once more.
        turn_gate.set()
        await until(lambda: _settles(sup, x.id) == 2, 20, "the second settle")
        assert sup.names.node(x.id).status is NodeStatus.SETTLED
