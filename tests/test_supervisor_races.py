"""Review round 4: races between stop / resume / settle and the supervisor's awaits.
Every race is forced with an asyncio.Event on the awaited step, never with a sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from supervisor_helpers import STUCK, hosted, until

from legion_tui.model import NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.supervisor.life import launching
from legion_tui.wire.names import ROOT_ID, OpError
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host


def _node_named(sup: Supervisor, name: str) -> str | None:
    for view in sup.model.nodes.values():
        if view.node.name == name:
            return view.node.id
    return None


async def test_a_stop_during_the_worktree_await_keeps_the_node_stopped(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        gate, entered = asyncio.Event(), asyncio.Event()
        real = sup.teams.worktree_for_launch

        async def blocked(node: Any, req: Any, *, resume: bool) -> str | None:
            entered.set()
            await gate.wait()  # stands in for `git worktree add`
            return await real(node, req, resume=resume)

        sup.teams.worktree_for_launch = blocked  # type: ignore[method-assign]
        spawn = asyncio.create_task(
            sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", "t", name="w", sim=dict(STUCK))])
        )
        await asyncio.wait_for(entered.wait(), 10)
        assert await sup.stops.stop(ROOT_ID, "w") == "Stopped w."
        gate.set()
        (w,) = await asyncio.wait_for(spawn, 10)
        assert w.status is NodeStatus.RETIRED
        assert w.id not in sup.roster.handles() and w.id not in sup.roster.monitored()
        await sup.ledger.flush()
        row = await sup.ledger.get_node(w.id)
        assert row is not None and row.status is NodeStatus.RETIRED


async def test_a_stop_while_the_process_starts_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate, entered = asyncio.Event(), asyncio.Event()
    made: list[Any] = []
    real_make = launching.make_handle

    def gated_make(spec: Any, **kw: Any) -> Any:
        handle = real_make(spec, **kw)
        real_start: Callable[[], Awaitable[None]] = handle.start

        async def start() -> None:
            entered.set()
            await gate.wait()  # the stop pops the handle before its process exists
            await real_start()

        handle.start = start  # type: ignore[method-assign]
        made.append(handle)
        return handle

    monkeypatch.setattr(launching, "make_handle", gated_make)
    async with hosted(tmp_path) as sup:
        spawn = asyncio.create_task(
            sup.launcher.spawn(
                ROOT_ID, [ChildRequest("worker", "t", name="p", isolate=True, sim=dict(STUCK))]
            )
        )
        await asyncio.wait_for(entered.wait(), 10)
        assert await sup.stops.stop(ROOT_ID, "p") == "Stopped p."
        gate.set()
        (p,) = await asyncio.wait_for(spawn, 30)
        assert p.status is NodeStatus.RETIRED and p.id not in sup.roster.handles()
        (handle,) = made
        pid = handle.pid
        assert pid is not None  # it did start, after the stop ...
        # ... and the launch stopped it again rather than leaving it running.
        await until(
            lambda: (
                not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
            ),
            20,
            "the raced process to end",
        )


async def test_two_resumes_at_once_start_one_agent(tmp_path: Path) -> None:
    async with hosted(tmp_path, "s") as sup:
        (w,) = await sup.launcher.spawn(
            ROOT_ID, [ChildRequest("worker", "t", name="w", sim=dict(STUCK))]
        )
        await until(lambda: bool(sup.model.nodes[w.id].progress.in_flight), what="w in a tool")
    async with hosted(tmp_path, "s") as sup:
        assert sup.interrupted_on_open == [w.id]
        results = await asyncio.gather(
            sup.control.resume(ROOT_ID, "w"),
            sup.control.resume(ROOT_ID, "w"),
            return_exceptions=True,
        )
        ok = [r for r in results if isinstance(r, str)]
        refused = [r for r in results if isinstance(r, OpError)]
        assert len(ok) == 1 and ok[0].startswith("Resumed w")
        assert len(refused) == 1 and refused[0].code == "ALREADY_RUNNING"
        assert "already resuming" in refused[0].message
        assert sup.launches == 1 and sup.roster.monitored() == [w.id]
        # Once it runs, a third resume is refused too (steer it instead).
        with pytest.raises(OpError) as err:
            await sup.control.resume(ROOT_ID, "w")
        assert err.value.code == "ALREADY_RUNNING"


async def test_a_launch_never_starts_a_node_whose_stop_has_begun(tmp_path: Path) -> None:
    """Batch [a, b] (launched together): b is stopped while both launches wait on their
    worktrees, and b's `retired` is still being written when b's launch goes on — the
    stop's mark alone must keep b down."""
    async with hosted(tmp_path) as sup:
        a_gate, a_entered = asyncio.Event(), asyncio.Event()
        write_gate, write_entered = asyncio.Event(), asyncio.Event()
        real_tree, real_status = sup.teams.worktree_for_launch, sup.record.set_status

        async def held_tree(node: Any, req: Any, *, resume: bool) -> str | None:
            if node.name == "a":
                a_entered.set()
            await a_gate.wait()
            return await real_tree(node, req, resume=resume)

        async def held_status(node_id: str, status: NodeStatus, *args: Any, **kw: Any) -> Any:
            if status is NodeStatus.RETIRED and sup.names.node(node_id).name == "b":
                write_entered.set()
                await write_gate.wait()  # the stop's `retired` is slow to land
            return await real_status(node_id, status, *args, **kw)

        sup.teams.worktree_for_launch = held_tree  # type: ignore[method-assign]
        sup.record.set_status = held_status  # type: ignore[method-assign]
        batch = [
            ChildRequest("worker", "t", name="a", sim=dict(STUCK)),
            ChildRequest("worker", "t", name="b", sim=dict(STUCK)),
        ]
        spawn = asyncio.create_task(sup.launcher.spawn(ROOT_ID, batch))
        await asyncio.wait_for(a_entered.wait(), 10)
        stop = asyncio.create_task(sup.stops.stop(ROOT_ID, "b"))
        await asyncio.wait_for(write_entered.wait(), 10)
        a_gate.set()  # both go on while b's stop is mid-write
        try:
            a, b = await asyncio.wait_for(spawn, 10)
            assert b.id not in sup.roster.handles() and sup.launches == 1
        finally:
            write_gate.set()
        assert await asyncio.wait_for(stop, 10) == "Stopped b."
        assert (
            sup.names.node(b.id).status is NodeStatus.RETIRED and b.id not in sup.roster.handles()
        )
        assert sup.names.node(a.id).live
