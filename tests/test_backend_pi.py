"""The pi-rpc backend against tests/fake_pi.py: activity, steer, abort, settle, stop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from process_helpers import launch_spec, marked, put_fake_pi_on_path, until

from legion_tui import receipts
from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.pi.handle import RpcHandle
from legion_tui.supervisor.backends.registry import make_handle
from legion_tui.wire.names import RequestError

pytestmark = pytest.mark.host


@pytest.fixture
def fake_pi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", put_fake_pi_on_path(tmp_path / "bin"))
    monkeypatch.setenv("FAKE_PI_TOOL_SECONDS", "30")
    monkeypatch.setenv("FAKE_PI_MODE", "normal")


def _spec(tmp_path: Path) -> LaunchSpec:
    spec = launch_spec(tmp_path, kind="pi")
    assert isinstance(spec, LaunchSpec)
    return spec


async def _started(tmp_path: Path) -> RpcHandle:
    handle = make_handle(_spec(tmp_path))
    assert isinstance(handle, RpcHandle) and handle.backend == "pi-rpc"
    await handle.start()
    return handle


def _stop_reasons(path: Path) -> list[str]:
    reasons = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        message = entry.get("message") or {}
        if message.get("role") == "assistant":
            reasons.append(message["stopReason"])
    return reasons


@pytest.mark.usefixtures("fake_pi")
async def test_activity_steer_abort_and_resume(tmp_path: Path) -> None:
    handle = await _started(tmp_path)
    try:
        assert handle.pid is not None
        # get_state told us pi's own file; sessions/<nodeId>.jsonl points at it.
        assert handle.session_file.parent == tmp_path / "run" / "sessions" / "n1"
        assert handle.spec.session_file.is_symlink()
        assert await until(lambda: [t.name for t in handle.in_flight] == ["bash"])
        assert handle.turn_running()

        assert await handle.steer("also check the docs") == "queued"
        result = await handle.abort()
        assert (result.outcome, result.dropped) == ("interrupted", 1)
        assert not handle.turn_running() and handle.exited is None
        assert handle.in_flight == []
        assert _stop_reasons(handle.spec.session_file)[-1] == "aborted"

        # Idle: a steer is a prompt and starts a turn.
        assert await handle.steer("carry on") == "accepted"
        assert await until(handle.turn_running)
        assert (await handle.abort(keep_queue=True)).outcome == "interrupted"
    finally:
        report = await handle.stop(force=False, grace=2.0)
    assert report.survivors == []
    assert handle.exited is not None
    assert marked(handle.spec.run_id) == []


@pytest.mark.usefixtures("fake_pi")
async def test_abort_on_an_idle_agent_is_no_turn_and_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PI_TOOL_SECONDS", "0.05")
    handle = await _started(tmp_path)
    try:
        await until(lambda: not handle.turn_running())
        await handle.idle()
        assert handle.rpc is not None
        sent: list[str] = []
        real_send = handle.rpc.send

        def spy(command: str, **fields: Any) -> Any:
            sent.append(command)
            return real_send(command, **fields)

        monkeypatch.setattr(handle.rpc, "send", spy)
        result = await handle.abort()
        assert (result.outcome, result.dropped) == ("no-turn", 0)
        assert sent == []
        # The finished run wrote its verdict into pi's file.
        assert _stop_reasons(handle.session_file)[-1] == "stop"
        await handle.deliver("[legion mail #1] hello")
        assert sent == ["prompt"]
    finally:
        assert (await handle.stop(force=True)).survivors == []


@pytest.mark.usefixtures("fake_pi")
async def test_an_interrupt_that_never_settles_is_a_timeout_and_the_agent_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PI_MODE", "stubborn")
    handle = await _started(tmp_path)
    try:
        assert await until(lambda: bool(handle.in_flight))
        result = await handle.abort(bound=0.5)
        assert result.outcome == "timeout"  # the turn outlived the bound: said, not hidden
        assert handle.exited is None  # abort never kills: that is stop's job
        assert handle.turn_running()
    finally:
        report = await handle.stop(force=True)
    assert report.survivors == []


@pytest.mark.usefixtures("fake_pi")
async def test_legacy_pi_without_agent_settled_or_clear_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PI_MODE", "legacy")
    handle = await _started(tmp_path)
    try:
        assert await until(handle.turn_running)
        assert await handle.steer("one more thing") == "queued"  # no disposition: inferred
        # clear_queue is unknown to old pi (its --version says 0.73.1): it is not asked,
        # the queue is kept and the result says so (dropped None, not a false 0); the
        # interrupt still lands, and idleness comes from agent_end + get_state.
        assert handle.version is not None and handle.version.text == "0.73.1"
        result = await handle.abort()
        assert (result.outcome, result.dropped) == ("interrupted", None)
        assert "queued messages kept" in receipts.aborted("n1", result.dropped)
        assert await until(lambda: not handle.turn_running())
    finally:
        assert (await handle.stop(force=True)).survivors == []


async def test_a_missing_pi_is_refused_before_anything_is_spawned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    handle = make_handle(_spec(tmp_path))
    with pytest.raises(FileNotFoundError, match="command not found: pi"):
        await handle.start()
    assert handle.pid is None
    assert not (tmp_path / "run" / "terminal" / "n1.log").exists()


@pytest.mark.usefixtures("fake_pi")
async def test_a_refused_launch_prompt_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PI_MODE", "refuse")
    handle = make_handle(_spec(tmp_path))
    assert isinstance(handle, RpcHandle)
    with pytest.raises(RequestError, match="No API key"):
        await handle.start()
    assert handle.exited is not None
    assert marked(handle.spec.run_id) == []
