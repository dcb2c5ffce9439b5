"""The JSON-RPC client of `codex app-server` (backends/codex_rpc.py), on in-memory pipes: the
read loop survives any line, server requests are refused, replies match by id, and every
wait is bounded. (The real app server is driven in test_real_codex_legion.py.)"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from legion_tui.supervisor.backends.codex.rpc import METHOD_NOT_FOUND, JsonRpcClient
from legion_tui.wire.names import RequestError

pytestmark = pytest.mark.unit


class Sink:
    """The child's stdin: what the client wrote, one JSON object a line."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionResetError("closed")
        self.data += data

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None

    def sent(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in bytes(self.data).splitlines()]


async def wait_for(predicate: Any, limit: float = 2.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.005)


def line(obj: Any) -> bytes:
    return (json.dumps(obj) + "\n").encode()


async def test_replies_by_id_notifications_in_order_and_no_jsonrpc_field() -> None:
    sink, out = Sink(), asyncio.StreamReader()
    heard: list[tuple[str, dict[str, Any]]] = []
    client = JsonRpcClient(sink, out, on_notification=lambda m, p: heard.append((m, p)))
    first = asyncio.ensure_future(client.request("thread/start", {"cwd": "/w"}))
    second = asyncio.ensure_future(client.request("turn/start"))
    await wait_for(lambda: len(sink.sent()) == 2)
    assert sink.sent() == [{"id": 1, "method": "thread/start", "params": {"cwd": "/w"}},
                           {"id": 2, "method": "turn/start"}]
    out.feed_data(line({"method": "turn/started", "params": {"turn": {"id": "t"}}}))
    out.feed_data(line({"id": 2, "result": {"turn": {"id": "t"}}}))
    out.feed_data(line({"id": 1, "result": {"thread": {"id": "th"}}}))
    assert await second == {"turn": {"id": "t"}}
    assert await first == {"thread": {"id": "th"}}
    assert heard == [("turn/started", {"turn": {"id": "t"}})]
    client.notify("initialized")
    assert sink.sent()[-1] == {"method": "initialized"}
    await client.close()


async def test_an_error_reply_raises_with_the_agents_words() -> None:
    sink, out = Sink(), asyncio.StreamReader()
    client = JsonRpcClient(sink, out)
    pending = asyncio.ensure_future(client.request("turn/steer"))
    await wait_for(lambda: bool(sink.sent()))
    out.feed_data(line({"id": 1, "error": {"code": -32600, "message": "no active turn"}}))
    with pytest.raises(RequestError) as caught:
        await pending
    assert (caught.value.code, caught.value.message) == ("turn/steer", "no active turn")
    await client.close()


async def test_bad_lines_and_a_raising_hook_never_end_the_read_loop() -> None:
    sink, out = Sink(), asyncio.StreamReader()
    heard: list[str] = []

    def hook(method: str, params: dict[str, Any]) -> None:
        heard.append(method)
        if method == "boom":
            raise RuntimeError("a bug in the hook")

    client = JsonRpcClient(sink, out, on_notification=hook, max_line_bytes=1024)
    out.feed_data(b"not json\n[1, 2]\n\xff\xfe\n" + b"[" * 100_000 + b"\n")
    out.feed_data(b"x" * 5000 + b"\n")  # over max_line_bytes: dropped as it streams
    out.feed_data(line({"method": "boom"}))
    out.feed_data(line({"id": 99, "result": {}}))  # an answer to nothing
    out.feed_data(b'{"method": "after", "par')  # a line split across reads
    out.feed_data(b'ams": {}}\n')
    await wait_for(lambda: heard == ["boom", "after"])
    assert client.skipped_lines == 5
    assert not client.closed.is_set()
    await client.close()


async def test_a_server_request_is_refused_at_once() -> None:
    sink, out = Sink(), asyncio.StreamReader()
    heard: list[str] = []
    client = JsonRpcClient(sink, out, on_notification=lambda m, p: heard.append(m))
    out.feed_data(line({"id": 7, "method": "item/tool/requestUserInput", "params": {}}))
    await wait_for(lambda: bool(sink.sent()))
    (reply,) = sink.sent()
    assert reply["id"] == 7 and reply["error"]["code"] == METHOD_NOT_FOUND
    assert "item/tool/requestUserInput" in reply["error"]["message"]
    assert heard == [] and client.refused == ["item/tool/requestUserInput"]
    await client.close()


async def test_no_answer_eof_and_a_closed_pipe_all_fail_the_request_in_bound() -> None:
    sink, out = Sink(), asyncio.StreamReader()
    client = JsonRpcClient(sink, out)
    with pytest.raises(RequestError, match=r"no answer within 0\.05 s"):
        await client.request("initialize", bound=0.05)
    pending = asyncio.ensure_future(client.request("turn/start", bound=5))
    await wait_for(lambda: len(sink.sent()) == 2)
    out.feed_eof()
    with pytest.raises(RequestError, match="closed its output"):
        await pending
    assert client.closed.is_set()
    with pytest.raises(RequestError, match="closed"):
        await client.request("turn/start")
    await client.close()
    sink2 = Sink()
    sink2.closed = True  # the child's stdin is gone: the write fails, nothing hangs
    client2 = JsonRpcClient(sink2, asyncio.StreamReader())
    with pytest.raises(RequestError, match="cannot write"):
        await client2.request("initialize", bound=5)
    await client2.close()
