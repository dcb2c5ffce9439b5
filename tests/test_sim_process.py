"""`legion-sim` as a real OS process behind the RPC backend (SPEC §9, §6.1 isolate)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest
from process_helpers import launch_spec, marked, until

from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.pi.handle import RpcHandle
from legion_tui.supervisor.backends.registry import make_handle

pytestmark = pytest.mark.host

# Fast everywhere except the stall: at speed 40 the stall bash call lasts 90 s.
BEHAVIOUR = {"stall_seconds": 3600}


async def _started(tmp_path: Path) -> RpcHandle:
    spec = launch_spec(tmp_path, isolate=True, speed=40.0, sim_behaviour=BEHAVIOUR, seed=5)
    assert isinstance(spec, LaunchSpec)
    handle = make_handle(spec)
    assert isinstance(handle, RpcHandle) and handle.backend == "process"
    await handle.start()
    assert await until(lambda: [t.name for t in handle.in_flight] == ["bash"], bound=15.0)
    return handle


def _last_assistant_stop(path: Path) -> str:
    stops = [
        e["message"]["stopReason"]
        for e in map(json.loads, path.read_text().splitlines())
        if e["type"] == "message" and e["message"]["role"] == "assistant"
    ]
    return stops[-1]


async def test_sigterm_exits_within_one_second(tmp_path: Path) -> None:
    handle = await _started(tmp_path)
    assert handle.pid is not None and handle.child is not None
    started = time.monotonic()
    os.kill(handle.pid, signal.SIGTERM)
    code = await handle.child.wait(1.0)
    assert code == 0, f"legion-sim still alive {time.monotonic() - started:.2f}s after SIGTERM"
    # It ended the running turn honestly on its way out.
    assert _last_assistant_stop(handle.spec.session_file) == "aborted"
    report = await handle.stop(force=True)
    assert report.survivors == []


async def test_sigint_aborts_the_turn_and_the_agent_keeps_going(tmp_path: Path) -> None:
    handle = await _started(tmp_path)
    try:
        assert handle.pid is not None
        os.kill(handle.pid, signal.SIGINT)
        assert await until(lambda: not handle.turn_running(), bound=5.0)
        assert handle.exited is None
        assert _last_assistant_stop(handle.spec.session_file) == "aborted"
        assert await handle.steer("skip the integration suite") == "accepted"
        assert handle.turn_running()
    finally:
        await handle.stop(force=True)


async def test_abort_drops_the_queue_then_stop_sweeps_gracefully(tmp_path: Path) -> None:
    handle = await _started(tmp_path)
    try:
        assert await handle.steer("first") == "queued"
        await handle.deliver("[legion mail #1] second")
        result = await handle.abort()
        assert (result.outcome, result.dropped) == ("interrupted", 2)
        assert (await handle.abort()).outcome == "no-turn"
        assert handle.exited is None
    finally:
        report = await handle.stop(force=False, grace=5.0)
    assert report.survivors == []
    # It honoured SIGTERM: it exited with its own 0, not killed (-9) at the grace's end.
    assert handle.exited == 0
    assert marked(handle.spec.run_id) == []
    assert handle.spec.run_dir.joinpath("terminal", "n1.log").exists()


async def test_a_failing_legion_sim_exits_with_status_1(tmp_path: Path) -> None:
    spec = launch_spec(tmp_path, isolate=True, speed=500.0, sim_behaviour={"fail": True})
    assert isinstance(spec, LaunchSpec)
    handle = make_handle(spec)
    await handle.start()
    try:
        await asyncio.wait_for(handle.idle(), 15.0)  # the first empty generation
        assert handle.exited is None
        assert await handle.steer("please continue") == "accepted"  # the host's retry
        assert await until(lambda: handle.exited is not None, bound=15.0)
        assert handle.exited == 1
        await handle.idle()  # returns at once for a dead agent
        assert not handle.turn_running()
        assert _last_assistant_stop(spec.session_file) == "error"
        assert await handle.steer("anyone?") == "intercepted"
    finally:
        assert (await handle.stop(force=True)).survivors == []
