"""An agent's trickle of lines is read a few times a second, not once per line, without
delaying what must not wait (issue 16 item 5: host CPU per streaming agent).

A real child process (`spawn_child`, pipes) plays pi: it streams event lines one write
at a time and answers `get_state` at once. `channel.READ_PACE` is set per test: long
enough that a hold which should not happen would show as a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import until

from legion_tui.supervisor.backends.pi.rpc import RpcClient
from legion_tui.supervisor.processes import channel
from legion_tui.supervisor.processes.child_process import ChildProcess
from legion_tui.supervisor.processes.process import spawn_child

pytestmark = pytest.mark.host

# argv: how many events (-1: until stdin closes), the pause between them (s), and how
# many bytes of padding the first one carries.
PI_LIKE = r"""
import json, os, sys, threading, time
count, pause, first_pad = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])

def answer():
    for line in sys.stdin:
        ask = json.loads(line)
        reply = {"type": "response", "id": ask["id"], "command": ask["type"],
                 "success": True, "data": {"isStreaming": True}}
        os.write(1, (json.dumps(reply) + "\n").encode())
    os._exit(0)

threading.Thread(target=answer, daemon=True).start()
seq = 0
while count < 0 or seq < count:
    event = {"type": "message_update", "seq": seq, "pad": "x" * (first_pad if seq == 0 else 0)}
    os.write(1, (json.dumps(event) + "\n").encode())  # one write per line, as pi's
    seq += 1
    time.sleep(pause)
os.write(1, b'{"type": "agent_settled"}\n')
os.write(2, b"all written\n")  # to the log: the test knows the pipe holds it all
time.sleep(3600)  # until stdin closes (the answering thread ends the process)
"""


class Agent:
    """The child and its RPC client: the events heard, and how many reads of its stdout
    took them (each one a wake-up of the host)."""

    def __init__(self, child: ChildProcess) -> None:
        proc = child.proc
        assert proc.stdin is not None and proc.stdout is not None
        self.child = child
        self.events: list[dict[str, Any]] = []
        self.reads = 0
        read = proc.stdout.read

        async def counted(n: int = -1) -> bytes:
            chunk = await read(n)
            self.reads += bool(chunk)
            return chunk

        proc.stdout.read = counted  # type: ignore[method-assign]
        self.rpc = RpcClient(proc.stdin, proc.stdout, on_event=self.events.append)

    def seqs(self) -> list[int]:
        return [e["seq"] for e in self.events if "seq" in e]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Any]:
    started: list[Agent] = []

    async def _start(count: int, pause: float, first_pad: int = 0) -> Agent:
        child = await spawn_child(
            [sys.executable, "-c", PI_LIKE, str(count), str(pause), str(first_pad)],
            env=dict(os.environ), cwd=tmp_path, log_path=tmp_path / "agent.log", pipes=True,
        )  # fmt: skip
        agent = Agent(child)
        started.append(agent)
        return agent

    yield _start
    for agent in started:
        await agent.rpc.close()  # its stdin closes: the child exits
        with contextlib.suppress(ProcessLookupError):
            os.killpg(agent.child.pgid, signal.SIGKILL)  # a test that failed midway
        await agent.child.wait(10.0)
        await agent.child.aclose()


async def test_a_trickle_of_lines_is_taken_in_a_few_reads_in_order(
    start: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(channel, "READ_PACE", 0.5)
    agent = await start(40, 0.01)  # ~100 lines a second, as pi streams
    await until(lambda: any(e["type"] == "agent_settled" for e in agent.events), 30, "all")
    assert agent.seqs() == list(range(40))
    # One read per line woke the host 40 times; held to the pace, a handful do.
    assert agent.reads <= 10, f"{agent.reads} reads for 41 lines"


async def test_a_request_during_a_hold_is_answered_at_once(
    start: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(channel, "READ_PACE", 1000.0)  # a hold lasts "for ever"
    agent = await start(-1, 0.01)
    await until(lambda: agent.events != [], 30, "the first line")  # a hold begins after it
    state = await asyncio.wait_for(agent.rpc.request("get_state"), 20.0)
    assert state == {"isStreaming": True}
    assert agent.seqs() == list(range(len(agent.seqs())))  # the held lines came first


async def test_a_long_line_is_read_on_to_its_end_without_a_hold(
    start: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(channel, "READ_PACE", 1000.0)
    agent = await start(1, 0.0, first_pad=4 * 1024 * 1024)  # a whole tool output in one line
    await until(lambda: agent.seqs() == [0], 20, "the long line, whole")
    assert len(agent.events[0]["pad"]) == 4 * 1024 * 1024


async def test_the_end_of_the_output_is_seen_after_a_hold(
    start: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(channel, "READ_PACE", 0.5)
    agent = await start(3, 0.01)
    await until(lambda: {"type": "agent_settled"} in agent.events, 30, "the lines")
    assert agent.seqs() == [0, 1, 2]
    assert agent.child.proc.stdin is not None
    agent.child.proc.stdin.close()  # the child exits during the hold: its stdout ends
    await asyncio.wait_for(agent.rpc.closed.wait(), 20.0)


async def test_a_decision_first_takes_the_lines_a_hold_kept(
    start: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(channel, "READ_PACE", 1000.0)
    agent = await start(5, 0.01)
    await until(lambda: agent.events != [], 30, "the first line")  # a hold begins after it
    log = tmp_path / "agent.log"
    await until(lambda: "all written" in log.read_text(), 30, "the child to write it all")
    await asyncio.wait_for(agent.rpc.catch_up(), 20.0)
    # pi's agent_settled, kept by the hold, is what a steer must see (an idle pi queues
    # a steer and starts no turn).
    assert agent.seqs() == [0, 1, 2, 3, 4]
    assert agent.events[-1] == {"type": "agent_settled"}


async def test_a_write_to_a_child_that_exited_leaves_no_error_for_the_exit_to_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command sent to an agent that had just exited fails its pipe (BrokenPipeError);
    Python 3.11 keeps that on the pipe's close waiter and, with nobody awaiting it, logged
    "Future exception was never retrieved" under the demo's exit hint. Closing the
    channel takes it."""
    import gc

    # Python 3.11.4 and later stopped logging it; a newcomer's Debian Python (3.11.2, the
    # one `make` found) logs it: as there, on any 3.11.
    lost = asyncio.subprocess.SubprocessStreamProtocol.pipe_connection_lost

    def as_before_3_11_4(self: Any, fd: int, exc: BaseException | None) -> None:
        if fd != 0:
            return lost(self, fd, exc)
        if self.stdin is not None:
            self.stdin.close()
        self.connection_lost(exc)
        if exc is None:
            self._stdin_closed.set_result(None)
        else:
            self._stdin_closed.set_exception(exc)  # no `_log_traceback = False` after it
        return None

    monkeypatch.setattr(asyncio.subprocess.SubprocessStreamProtocol, "pipe_connection_lost",
                        as_before_3_11_4)  # fmt: skip
    loop = asyncio.get_running_loop()
    logged: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: logged.append(context))
    # It reads nothing and exits: what it was sent past the pipe's 64 KiB waits in the
    # transport, and its exit breaks the pipe under it.
    argv = [sys.executable, "-c", "import time; time.sleep(0.5)"]
    child = await spawn_child(argv, env=dict(os.environ), cwd=tmp_path,
                              log_path=tmp_path / "agent.log", pipes=True)  # fmt: skip
    proc = child.proc
    assert proc.stdin is not None and proc.stdout is not None
    rpc = RpcClient(proc.stdin, proc.stdout)
    try:
        with contextlib.suppress(Exception):
            await rpc.request("prompt", message="x" * 300_000, bound=10.0)
        await child.wait(10.0)
    finally:
        await rpc.close()
        await child.aclose()
    del rpc, proc, child
    gc.collect()
    await asyncio.sleep(0)
    assert [c.get("message") for c in logged] == []
