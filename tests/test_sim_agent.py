"""The simulated agent in-process, on a fake clock: deterministic, parseable, abortable."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from process_helpers import HangingClock

from legion_tui.session.reader import read_session
from legion_tui.sim.agent import SimAgent
from legion_tui.sim.clock import FakeClock
from legion_tui.sim.config import SimConfig, seed_material

pytestmark = pytest.mark.unit


def _config(tmp_path: Path, **kw: Any) -> SimConfig:
    fields: dict[str, Any] = {
        "node_id": "n1",
        "name": "worker-0",
        "role": "worker",
        "session_file": tmp_path / "sessions" / "n1.jsonl",
        "run_dir": tmp_path,
        "cwd": tmp_path,
        "seed": 7,
    }
    fields.update(kw)
    return SimConfig(**fields)


async def _run_once(cfg: SimConfig, clock: FakeClock | None = None) -> SimAgent:
    agent = SimAgent(cfg, clock=clock or FakeClock())
    assert agent.prompt("Fix the retry path.") == "started"
    await asyncio.wait_for(agent.wait_idle(), 10.0)
    agent.writer.close()
    return agent


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _messages(path: Path, role: str) -> list[dict[str, Any]]:
    return [
        e["message"]
        for e in _entries(path)
        if e["type"] == "message" and e["message"]["role"] == role
    ]


def _strip_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip_times(v) for k, v in value.items() if k not in ("timestamp", "durationMs")
        }
    if isinstance(value, list):
        return [_strip_times(v) for v in value]
    return value


@pytest.mark.parametrize("role", ["worker", "scout"])
async def test_same_seed_same_bytes_other_seed_other_story(tmp_path: Path, role: str) -> None:
    files = []
    for i, seed in enumerate((7, 7, 8)):
        cfg = _config(tmp_path, role=role, seed=seed, session_file=tmp_path / f"{i}.jsonl")
        await _run_once(cfg)
        files.append(cfg.session_file.read_bytes())
    assert files[0] == files[1]
    assert files[0] != files[2]


async def test_same_seed_on_the_wall_clock_differs_only_in_times(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path in (a, b):
        agent = SimAgent(_config(tmp_path, session_file=path, speed=2000.0, seed=3))
        agent.prompt("Fix the retry path.")
        await asyncio.wait_for(agent.wait_idle(), 20.0)
        agent.writer.close()
    assert _strip_times(_entries(a)) == _strip_times(_entries(b))


async def test_the_session_is_a_valid_pi_v3_file_with_a_verdict(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    await _run_once(cfg)
    entries = _entries(cfg.session_file)
    header = entries[0]
    assert header["type"] == "session" and header["version"] == 3
    assert [e["type"] for e in entries[1:3]] == ["model_change", "thinking_level_change"]
    # One chain: every entry's parent is the entry before it.
    for prev, entry in itertools.pairwise(entries[1:]):
        assert entry["parentId"] == prev["id"]
    assert entries[1]["parentId"] is None
    assert len({e["id"] for e in entries}) == len(entries)
    # Every tool call is answered by a toolResult with its id.
    calls = [
        block["id"]
        for m in _messages(cfg.session_file, "assistant")
        for block in m["content"]
        if block["type"] == "toolCall"
    ]
    results = [m["toolCallId"] for m in _messages(cfg.session_file, "toolResult")]
    assert calls and calls == results
    names = {
        block["name"]
        for m in _messages(cfg.session_file, "assistant")
        for block in m["content"]
        if block["type"] == "toolCall"
    }
    assert names <= {"read", "grep", "edit", "bash"}

    progress = read_session(cfg.session_file)
    assert progress.skipped_lines == 0
    assert progress.verdict is not None and progress.verdict.ok
    assert progress.last_stop_reason == "stop"
    assert progress.tokens.output > 0 and progress.tokens.cost > 0
    assert 40.0 <= progress.tok_s <= 150.0
    assert progress.in_flight == []


async def test_speed_multiplies_the_decode_rate_the_file_shows(tmp_path: Path) -> None:
    slow = _config(tmp_path, session_file=tmp_path / "s1.jsonl")
    fast = _config(tmp_path, session_file=tmp_path / "s4.jsonl", speed=4.0)
    await _run_once(slow)
    await _run_once(fast)
    rate1 = read_session(slow.session_file).tok_s
    rate4 = read_session(fast.session_file).tok_s
    assert rate4 == pytest.approx(4 * rate1, rel=0.02)


def _last_is_empty_error(cfg: SimConfig) -> None:
    last = _messages(cfg.session_file, "assistant")[-1]
    assert last["stopReason"] == "error"
    assert [b for b in last["content"] if b.get("text") or b["type"] == "toolCall"] == []
    assert read_session(cfg.session_file).empty_generation


async def test_fail_gives_an_empty_generation_twice_then_exits_1(tmp_path: Path) -> None:
    cfg = _config(tmp_path, behaviour={"fail": True})
    agent = SimAgent(cfg, clock=FakeClock())
    assert agent.prompt("Fix the retry path.") == "started"
    await asyncio.wait_for(agent.wait_idle(), 10.0)
    _last_is_empty_error(cfg)
    # Alive after the first: the host prompts it once more (the retry) ...
    assert agent.exit_code is None and not agent.finished.is_set()
    assert agent.prompt("Please continue.") == "started"
    await asyncio.wait_for(agent.wait_idle(), 10.0)
    agent.writer.close()
    # ... which comes back empty too, and the agent gives up.
    _last_is_empty_error(cfg)
    assert agent.exit_code == 1 and agent.finished.is_set()
    assert agent.steer("are you there?") == "handled"  # an exited agent reads nothing


async def test_fail_once_answers_the_retry(tmp_path: Path) -> None:
    cfg = _config(tmp_path, behaviour={"fail": "once"})
    agent = SimAgent(cfg, clock=FakeClock())
    agent.prompt("Fix the retry path.")
    await asyncio.wait_for(agent.wait_idle(), 10.0)
    _last_is_empty_error(cfg)
    agent.prompt("Please continue.")
    await asyncio.wait_for(agent.wait_idle(), 10.0)
    agent.writer.close()
    progress = read_session(cfg.session_file)
    assert not progress.empty_generation and progress.verdict is not None
    assert agent.exit_code is None


async def test_stall_and_history_put_now_inside_a_long_bash_call(tmp_path: Path) -> None:
    clock = HangingClock(hang_over=10_000.0)
    start = clock.now()
    cfg = _config(tmp_path, behaviour={"stall_seconds": 20_000, "history_seconds": 420})
    agent = SimAgent(cfg, clock=clock)
    agent.prompt("Fix the retry path.")
    await asyncio.wait_for(clock.hanging.wait(), 10.0)
    progress = read_session(cfg.session_file)
    assert [t.name for t in progress.in_flight] == ["bash"]
    # The call began in the past: its age is most of the history.
    age = start - progress.in_flight[0].started_at
    assert 300.0 < age <= 420.0
    header = _entries(cfg.session_file)[0]
    assert header["timestamp"] < _entries(cfg.session_file)[-1]["timestamp"]
    await agent.close()


async def test_abort_ends_the_turn_and_a_later_steer_resumes_it(tmp_path: Path) -> None:
    clock = HangingClock(hang_over=10_000.0)
    cfg = _config(tmp_path, behaviour={"stall_seconds": 20_000})
    agent = SimAgent(cfg, clock=clock)
    agent.prompt("Fix the retry path.")
    await asyncio.wait_for(clock.hanging.wait(), 10.0)
    assert agent.streaming
    assert agent.steer("look at the timeout too") == "queued"
    assert agent.clear_queue() == {"steering": ["look at the timeout too"], "followUp": []}

    assert await asyncio.wait_for(agent.abort(), 5.0) is True
    assert not agent.streaming and agent.exit_code is None
    last_result = _messages(cfg.session_file, "toolResult")[-1]
    assert last_result["isError"] and last_result["content"][0]["text"] == "Operation aborted"
    assert _messages(cfg.session_file, "assistant")[-1]["stopReason"] == "aborted"
    assert await agent.abort() is False  # nothing left to abort

    clock.hang_over = float("inf")
    assert agent.steer("carry on, skip the integration suite") == "started"
    await asyncio.wait_for(agent.wait_idle(), 10.0)
    users = [m["content"][0]["text"] for m in _messages(cfg.session_file, "user")]
    assert users == ["Fix the retry path.", "carry on, skip the integration suite"]
    progress = read_session(cfg.session_file)
    assert progress.verdict is not None and progress.verdict.ok
    assert progress.last_stop_reason == "stop"
    agent.writer.close()


async def test_mail_is_read_as_a_user_message_at_the_next_boundary(tmp_path: Path) -> None:
    clock = HangingClock(hang_over=10_000.0)
    cfg = _config(tmp_path, behaviour={"stall_seconds": 20_000})
    agent = SimAgent(cfg, clock=clock)
    agent.prompt("Fix the retry path.")
    await asyncio.wait_for(clock.hanging.wait(), 10.0)
    envelope = "[legion mail #3]\nFrom: centurion\nSubject: hi\nUrgency: normal\n\nbody"
    assert agent.follow_up(envelope) == "queued"
    await agent.abort()
    clock.hang_over = float("inf")
    agent.steer("go on")
    await asyncio.wait_for(agent.wait_idle(), 10.0)
    # The follow-up survived the abort (only clear_queue drops it) and was read verbatim.
    assert envelope in read_session(cfg.session_file).recent_user_texts
    agent.writer.close()


async def test_resume_continues_the_same_file(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    await _run_once(cfg)
    before = _entries(cfg.session_file)
    resumed = _config(tmp_path, resume=True)  # same seed: must not replay the same ids
    agent = SimAgent(resumed, clock=FakeClock(start=1_767_300_000.0))
    agent.prompt("Continue where you left off.")
    await asyncio.wait_for(agent.wait_idle(), 10.0)
    agent.writer.close()
    after = _entries(cfg.session_file)
    assert after[: len(before)] == before
    assert [e["type"] for e in after].count("session") == 1
    assert after[len(before)]["parentId"] == before[-1]["id"]
    assert len({e["id"] for e in after}) == len(after)
    # The resumed life draws from its own stream, not a replay of the first one.
    assert seed_material(resumed) != seed_material(cfg) == 7
    assert read_session(cfg.session_file).verdict is not None


async def test_a_steer_during_an_interrupt_in_flight_is_intercepted(tmp_path: Path) -> None:
    clock = HangingClock(hang_over=10_000.0)
    agent = SimAgent(_config(tmp_path, behaviour={"stall_seconds": 20_000}), clock=clock)
    agent.prompt("Fix the retry path.")
    await asyncio.wait_for(clock.hanging.wait(), 10.0)
    aborting = asyncio.ensure_future(agent.abort())
    await asyncio.sleep(0)  # the abort is in flight: cancel sent, not yet settled
    assert agent.steer("too late") == "handled"
    assert await aborting is True
    assert agent.queued == 0
    users = [m["content"][0]["text"] for m in _messages(agent.cfg.session_file, "user")]
    assert "too late" not in users
    await agent.close()
