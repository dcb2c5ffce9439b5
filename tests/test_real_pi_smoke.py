"""The real, pinned pi CLIs (both lines) drive a turn against the scripted model server.

Proves the test rig end to end: `make agents` installed pi, `pi_env` points it at the
server, the server's script decides what the model says, and what pi wrote (its files,
its session JSONL) and sent (its system prompt, its tools) can be checked.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import agent_bins
import pytest
from agent_bins import PI_LINES, pi_install
from model_server import ModelServer, Text, ToolCall
from pi_env import PiEnv, pi_env

pytestmark = pytest.mark.real

START_TIMEOUT = 60.0  # a cold pi on 2 loaded cores
TURN_TIMEOUT = 60.0

Event = dict[str, Any]


class PiRpc:
    """One `pi --mode rpc` process: JSON lines in on stdin, events collected from stdout."""

    def __init__(self, env: PiEnv, *extra: str) -> None:
        self.env = env
        self.stderr_path = env.workdir.parent / "pi.stderr"
        self._stderr = self.stderr_path.open("wb")
        self.proc = subprocess.Popen(
            env.rpc_argv(*extra), cwd=env.workdir, env=env.env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
        )
        self.events: list[Event] = []
        self._cond = threading.Condition()
        self._eof = False
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,),
                                        name="pi-rpc-reader", daemon=True)
        self._reader.start()

    def _read(self, stdout: IO[bytes]) -> None:
        buffer = b""
        while chunk := stdout.read1(65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            parsed = [json.loads(line.rstrip(b"\r")) for line in lines if line.strip()]
            with self._cond:
                self.events.extend(parsed)
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def send(self, command: Event) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command).encode() + b"\n")
        self.proc.stdin.flush()

    def wait_for(self, predicate: Callable[[Event], bool], timeout: float, what: str) -> Event:
        """The first event (from the start) matching `predicate`; fails after `timeout` s."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = next((e for e in self.events if predicate(e)), None)
                if found is not None:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._eof:
                    types = [e.get("type") for e in self.events][-30:]
                    stderr = self.stderr_path.read_text(errors="replace")[-2000:]
                    pytest.fail(f"pi {self.env.install.line}: no {what} within {timeout} s "
                                f"(eof={self._eof}); last events {types}; stderr: {stderr}")
                self._cond.wait(remaining)

    def response(self, request_id: int, timeout: float) -> Event:
        return self.wait_for(
            lambda e: e.get("type") == "response" and e.get("id") == request_id,
            timeout, f"response to id {request_id}",
        )

    def close(self) -> None:
        """End pi (stdin EOF ends RPC mode; then SIGTERM, then SIGKILL), bounded."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._reader.join(timeout=5)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._stderr.close()


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as s:
        yield s
        assert s.errors() == []


def settled(line: str) -> Callable[[Event], bool]:
    """pi is idle: `agent_settled` on 1.6; 0.73 never emits it, so `agent_end` there."""
    wanted = "agent_settled" if line == "1.6" else "agent_end"
    return lambda e: e.get("type") == wanted


def run_turn(env: PiEnv, message: str, *extra: str) -> tuple[list[Event], float, float]:
    """Start pi, run one prompt to idle; the events, the start time and the turn time."""
    began = time.monotonic()
    pi = PiRpc(env, *extra)
    try:
        pi.send({"id": 0, "type": "get_state"})
        state = pi.response(0, START_TIMEOUT)
        assert state["success"] is True
        started = time.monotonic()
        pi.send({"id": 1, "type": "prompt", "message": message})
        answer = pi.response(1, TURN_TIMEOUT)
        assert answer["success"] is True
        if env.install.line == "1.6":
            assert answer["data"]["disposition"] == "started"
        else:
            assert "data" not in answer
        pi.wait_for(settled(env.install.line), TURN_TIMEOUT, "settle")
        turn = time.monotonic() - started
        return list(pi.events), started - began, turn
    finally:
        pi.close()


def session_entries(env: PiEnv) -> list[Event]:
    files = env.session_files()
    assert len(files) == 1, files
    # the file lands directly in --session-dir: <ISO time>_<uuid>.jsonl
    assert files[0].parent == env.session_dir
    return [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]


def assistant_messages(entries: list[Event]) -> list[Event]:
    return [e["message"] for e in entries
            if e.get("type") == "message" and e["message"].get("role") == "assistant"]


@pytest.mark.parametrize("line", PI_LINES)
def test_pi_runs_a_tool_then_answers(line: str, server: ModelServer, tmp_path: Path) -> None:
    verdict = {"ok": True, "reason": "wrote hello.txt"}
    final = f"I wrote hello.txt.\n{json.dumps(verdict)}"
    server.script(
        ToolCall("bash", {"command": "printf hi > hello.txt"}, tokens=6),
        Text(final, tokens=15, tokens_per_second=200),
    )
    env = pi_env(line, server.base_url, tmp_path)
    events, _, _ = run_turn(env, "Create hello.txt containing hi, then give a verdict.")

    assert (env.workdir / "hello.txt").read_text() == "hi"

    requests = server.wait_for_finished(2, timeout=5)
    assert [r.state for r in requests] == ["completed", "completed"]
    assert server.unscripted() == []
    first, second = requests
    assert first.last_user_text() == "Create hello.txt containing hi, then give a verdict."
    for request in requests:
        assert request.model == "scripted-model"
        assert request.system_prompt is not None
        assert "inside pi, a coding agent harness" in request.system_prompt
        assert request.tool_names == ["read", "bash", "edit", "write"]
        assert request.body["stream"] is True
        assert request.body["stream_options"] == {"include_usage": True}
    assert any(m.get("role") == "tool" for m in second.messages)

    tool_ends = [e for e in events if e.get("type") == "tool_execution_end"]
    assert [(e["toolName"], e["isError"]) for e in tool_ends] == [("bash", False)]

    assistants = assistant_messages(session_entries(env))
    assert [m["stopReason"] for m in assistants] == ["toolUse", "stop"]
    assert [m["usage"]["output"] for m in assistants] == [first.output_tokens,
                                                          second.output_tokens]
    assert [m["usage"]["output"] for m in assistants] == [6, 15]
    assert assistants[0]["content"][0]["name"] == "bash"
    assert assistants[1]["content"][-1]["text"] == final
    assert [m["responseId"] for m in assistants] == ["scripted-1", "scripted-2"]


@pytest.mark.parametrize("line", PI_LINES)
def test_appended_system_prompt_and_tool_allowlist_reach_the_model(
    line: str, server: ModelServer, tmp_path: Path
) -> None:
    marker = "LEGION-APPENDED-7f3e: report to your centurion."
    server.script(Text('Nothing to do.\n{"ok": true, "reason": "checked"}'))
    env = pi_env(line, server.base_url, tmp_path)
    run_turn(env, "Say ok.", "--append-system-prompt", marker, "--tools", "read,bash")

    (request,) = server.wait_for_finished(1, timeout=5)
    assert request.system_prompt is not None
    assert marker in request.system_prompt
    assert request.system_prompt.startswith("You are")
    assert request.tool_names == ["read", "bash"]
    assert server.unscripted() == []


def test_a_missing_pi_fails_naming_make_agents(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setattr(agent_bins, "AGENTS_DIR", tmp_path / "nowhere")
    for line in PI_LINES:
        with pytest.raises(pytest.fail.Exception, match="make agents"):
            pi_install(line)
