"""The RPC client against what both real pi lines do (notes/real-pi-0.73.md): a reply with
no id is matched by its command, and pi's own retry after a provider error is not idle."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from legion_tui.supervisor.backends.pi.rpc import RpcClient

pytestmark = pytest.mark.unit


class Recorder:
    """stdin of a scripted pi: keeps every command written."""

    def __init__(self) -> None:
        self.commands: list[dict[str, Any]] = []
        self.wrote = asyncio.Event()

    def write(self, data: bytes) -> None:
        self.commands += [json.loads(line) for line in data.splitlines() if line]
        self.wrote.set()

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    async def wait_closed(self) -> None:
        return None

    async def next_command(self) -> dict[str, Any]:
        await asyncio.wait_for(self.wrote.wait(), 5.0)
        self.wrote.clear()
        return self.commands[-1]


def emit(reader: asyncio.StreamReader, *objs: dict[str, Any]) -> None:
    reader.feed_data(b"".join(json.dumps(o).encode() + b"\n" for o in objs))


def not_streaming(command: dict[str, Any]) -> dict[str, Any]:
    """pi's get_state reply: idle (during a retry's backoff too)."""
    return {
        "type": "response",
        "id": command["id"],
        "command": "get_state",
        "success": True,
        "data": {"isStreaming": False},
    }


async def barrier(client: RpcClient, reader: asyncio.StreamReader, stdin: Recorder) -> None:
    """One more answered request: replies are handled in order, so once it returns, the
    code that awaited an earlier reply (the idle confirmation) has run too."""
    asking = asyncio.ensure_future(client.request("get_state", bound=5.0))
    emit(reader, not_streaming(await stdin.next_command()))
    await asking


async def test_a_reply_without_an_id_answers_the_open_request_of_its_command() -> None:
    reader, stdin = asyncio.StreamReader(), Recorder()
    client = RpcClient(stdin, reader)
    try:
        asking = asyncio.ensure_future(client.request("clear_queue", bound=5.0))
        await stdin.next_command()
        # pi 0.73 (rpc-mode.js:523): an unknown command is answered without an id.
        emit(
            reader,
            {
                "type": "response",
                "command": "clear_queue",
                "success": False,
                "error": "Unknown command: clear_queue",
            },
        )
        done, _ = await asyncio.wait({asking}, timeout=5.0)
        assert done, "the id-less reply was not matched: the request waited for its bound"
        exc = asking.exception()
        assert exc is not None and "Unknown command: clear_queue" in str(exc)
    finally:
        await client.close()


async def test_pi_retrying_a_provider_error_is_not_idle_until_it_ends() -> None:
    reader, stdin = asyncio.StreamReader(), Recorder()
    client = RpcClient(stdin, reader)
    try:
        emit(reader, {"type": "agent_start"}, {"type": "turn_start"})
        # pi 0.73 after a 503: agent_end, then auto_retry_start in the same tick, and
        # get_state says not streaming during the backoff.
        emit(
            reader,
            {"type": "agent_end", "messages": []},
            {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000},
        )
        state = await stdin.next_command()
        assert state["type"] == "get_state"
        emit(reader, not_streaming(state))
        await barrier(client, reader, stdin)
        assert client.streaming and not client.idle.is_set(), "settled in the retry wait"
        # The retry runs and succeeds: a new run, its end, then idle for real.
        emit(
            reader,
            {"type": "agent_start"},
            {"type": "auto_retry_end", "success": True, "attempt": 1},
            {"type": "agent_end", "messages": []},
        )
        state = await stdin.next_command()
        emit(reader, not_streaming(state))
        await asyncio.wait_for(client.idle.wait(), 5.0)
        assert not client.streaming and not client.retrying
    finally:
        await client.close()


async def test_retries_given_up_end_the_run() -> None:
    reader, stdin = asyncio.StreamReader(), Recorder()
    client = RpcClient(stdin, reader)
    try:
        emit(
            reader,
            {"type": "agent_start"},
            {"type": "auto_retry_start", "attempt": 3, "maxAttempts": 3, "delayMs": 10},
            {"type": "agent_end", "messages": []},
            {"type": "auto_retry_end", "success": False, "attempt": 3, "finalError": "503"},
        )
        while not client.idle.is_set():
            state = await stdin.next_command()
            emit(reader, not_streaming(state))
            await barrier(client, reader, stdin)
        assert not client.streaming and not client.retrying
    finally:
        await client.close()
