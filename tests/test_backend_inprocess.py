"""The in-process backend: the sim as a task; abort/steer semantics of SPEC §6.3."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from process_helpers import HangingClock, launch_spec

from legion_tui.sim.clock import FakeClock
from legion_tui.supervisor.backend import AgentHandle, LaunchSpec, backend_for
from legion_tui.supervisor.backends.inprocess import InProcessHandle
from legion_tui.supervisor.backends.registry import make_handle

pytestmark = pytest.mark.unit


def _spec(tmp_path: Path, **kw: object) -> LaunchSpec:
    spec = launch_spec(tmp_path, **kw)
    assert isinstance(spec, LaunchSpec)
    return spec


def test_make_handle_picks_the_backend_from_kind_and_isolate(tmp_path: Path) -> None:
    assert backend_for(_spec(tmp_path)) == "inprocess"
    assert backend_for(_spec(tmp_path, isolate=True)) == "process"
    assert backend_for(_spec(tmp_path, kind="exec", command=["true"])) == "process"
    assert backend_for(_spec(tmp_path, kind="pi")) == "pi-rpc"
    handle = make_handle(_spec(tmp_path))
    assert isinstance(handle, InProcessHandle) and isinstance(handle, AgentHandle)
    assert handle.pid is None and handle.backend == "inprocess"


async def test_abort_steer_and_stop(tmp_path: Path) -> None:
    clock = HangingClock()
    handle = InProcessHandle(_spec(tmp_path, sim_behaviour={"stall_seconds": 5000}), clock=clock)
    await handle.start()
    await asyncio.wait_for(clock.hanging.wait(), 10.0)
    assert handle.turn_running() and handle.exited is None

    assert await handle.steer("one") == "queued"
    await handle.deliver("[legion mail #2] two")
    result = await handle.abort()
    assert (result.outcome, result.dropped) == ("interrupted", 2)
    assert not handle.turn_running()
    assert (await handle.abort()).outcome == "no-turn"

    clock.hang_over = float("inf")
    assert await handle.steer("carry on") == "accepted"
    await asyncio.wait_for(handle.idle(), 10.0)
    assert not handle.turn_running()

    report = await handle.stop(force=False)
    assert (report.signalled, report.survivors) == ([], [])
    assert handle.exited == 0
    lines = handle.spec.session_file.read_text().splitlines()
    texts = [
        e["message"]["content"][0]["text"]
        for e in map(json.loads, lines)
        if e["type"] == "message" and e["message"]["role"] == "user"
    ]
    assert texts == ["Fix the retry path.", "carry on"]  # the dropped two never arrived


async def test_keep_queue_keeps_the_steering_for_the_next_turn(tmp_path: Path) -> None:
    clock = HangingClock()
    handle = InProcessHandle(_spec(tmp_path, sim_behaviour={"stall_seconds": 5000}), clock=clock)
    await handle.start()
    await asyncio.wait_for(clock.hanging.wait(), 10.0)
    assert await handle.steer("kept") == "queued"
    result = await handle.abort(keep_queue=True)
    assert (result.outcome, result.dropped) == ("interrupted", 0)
    assert handle.agent.queued == 1
    await handle.stop(force=True)


async def test_a_failing_sim_exits_with_status_1_after_its_retry(tmp_path: Path) -> None:
    handle = InProcessHandle(_spec(tmp_path, sim_behaviour={"fail": True}), clock=FakeClock())
    await handle.start()
    await asyncio.wait_for(handle.idle(), 10.0)
    assert handle.exited is None  # alive after its first empty generation: retried ...
    assert await handle.steer("please continue") == "accepted"
    await asyncio.wait_for(handle.idle(), 10.0)
    assert handle.exited == 1  # ... empty again, and it gives up
    assert await handle.steer("hello?") == "intercepted"
    await handle.stop(force=True)
    assert handle.exited == 1
