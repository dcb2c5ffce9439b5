"""Review round 4: reserved node names, and a pause that survives a dead postman or
phase clock."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from supervisor_helpers import STUCK, hosted, spawn_one, stuck_worker, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID, OpError
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host


@pytest.mark.parametrize("name", ["all", "root"])
async def test_all_and_root_are_refused_as_names(tmp_path: Path, name: str) -> None:
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", sim=dict(STUCK))
        for caller in (ROOT_ID, lead.id):
            with pytest.raises(OpError) as err:
                await sup.launcher.spawn(
                    caller,
                    [
                        ChildRequest("worker", "t", name="ok"),
                        ChildRequest("worker", "t", name=name),
                    ],
                )
            assert err.value.code == "BAD_NAME" and "reserved" in err.value.message
        assert sorted(v.node.name for v in sup.model.nodes.values()) == ["lead", "root"]


async def test_close_pauses_the_children_even_when_postman_and_clock_died(
    tmp_path: Path,
) -> None:
    sup = Supervisor(tmp_path, session="main", speed=200.0, stop_grace=1.0, default_kind="sim")
    await sup.start()
    w = await stuck_worker(sup, "w")

    async def broken() -> None:
        raise RuntimeError("broken on purpose")

    # The postman and the phase clock die of an error (their real tasks end first).
    for real in (sup.mail.task, sup.phase_watch.task):
        real.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await real
    sup.mail.task = asyncio.create_task(broken())
    sup.phase_watch.task = asyncio.create_task(broken())
    await until(lambda: sup.mail.task.done() and sup.phase_watch.task.done(), what="both to die")
    await sup.close()  # neither error stops the pause
    node = sup.names.node(w.id)
    assert node.status is NodeStatus.RETIRED
    (retired,) = [e for e in sup.model.nodes[w.id].events if e.type is EventType.NODE_RETIRED]
    assert retired.data["reason"] == "session-shutdown"
    assert sup.roster.handles() == {}
