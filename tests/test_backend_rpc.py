"""The RPC client's framing and event tracking, fed byte by byte (no process needed)."""

from __future__ import annotations

import asyncio
import json

import pytest
from process_helpers import until

from legion_tui.supervisor.backends.pi.rpc import RpcClient
from legion_tui.wire.lines import split_lines
from legion_tui.wire.names import RequestError

pytestmark = pytest.mark.unit


class Sink:
    """Stands in for the child's stdin."""

    def __init__(self) -> None:
        self.sent: list[dict[str, object]] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        for line in data.split(b"\n"):
            if line:
                self.sent.append(json.loads(line))

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None


def test_framing_is_strict_lf_with_one_cr_stripped() -> None:
    lines, rest = split_lines(b'{"a":"x\xe2\x80\xa8y"}\r\n{"b":1}\n{"c"')
    assert lines == [b'{"a":"x\xe2\x80\xa8y"}', b'{"b":1}']
    assert rest == b'{"c"'
    assert json.loads(lines[0])["a"] == "x\u2028y"  # U+2028 is not a line break


async def test_events_and_responses_across_arbitrary_chunks() -> None:
    reader = asyncio.StreamReader()
    sink = Sink()
    events: list[dict[str, object]] = []
    rpc = RpcClient(sink, reader, on_event=events.append, clock=lambda: 100.0)
    fut = rpc.send("get_state")
    assert sink.sent == [{"id": 1, "type": "get_state"}]
    stream = (
        b'{"type":"agent_start"}\n'
        b"not json at all\n"
        b'{"type":"tool_execution_start","toolCallId":"t1","toolName":"bash","args":{}}\r\n'
        b'{"type":"tool_execution_start","toolCallId":"t2","toolName":"read",'
        b'"args":{},"parentToolCallId":"t1"}\n'
        b'{"type":"message_end","message":{"role":"assistant","content":'
        b'[{"type":"text","text":"a\xe2\x80\xa8b"}]}}\n'
        b'{"type":"response","command":"get_state","id":1,"success":true,'
        b'"data":{"isStreaming":true}}\n'
    )
    for i in range(0, len(stream), 7):  # 7-byte chunks split lines and UTF-8 sequences
        reader.feed_data(stream[i : i + 7])
        await asyncio.sleep(0)
    reply = await asyncio.wait_for(fut, 2.0)
    assert reply["data"] == {"isStreaming": True}
    assert rpc.streaming and not rpc.idle.is_set()
    assert rpc.skipped_lines == 1
    tools = {t.id: (t.name, t.parent_id, t.started_at) for t in rpc.in_flight.values()}
    assert tools == {"t1": ("bash", None, 100.0), "t2": ("read", "t1", 100.0)}
    assert events[-1]["message"] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "a\u2028b"}],
    }

    reader.feed_data(b'{"type":"tool_execution_end","toolCallId":"t2"}\n')
    assert await until(lambda: list(rpc.in_flight) == ["t1"])
    reader.feed_data(b'{"type":"agent_end","messages":[]}\n{"type":"agent_settled"}\n')
    await asyncio.wait_for(rpc.idle.wait(), 2.0)
    assert not rpc.streaming and rpc.in_flight == {}

    # A refused command raises; EOF fails whatever is still pending.
    refused = asyncio.ensure_future(rpc.request("bogus", bound=2.0))
    await asyncio.sleep(0)
    # agent_end made the client confirm idleness with a get_state of its own (old pi).
    assert [c["type"] for c in sink.sent] == ["get_state", "get_state", "bogus"]
    bogus_id = sink.sent[-1]["id"]
    reply = {"type": "response", "command": "bogus", "id": bogus_id, "success": False}
    reader.feed_data(json.dumps({**reply, "error": "no"}).encode() + b"\n")
    try:
        await refused
    except RequestError as err:
        assert err.message == "no"
    else:
        raise AssertionError("a success:false reply must raise")
    pending = rpc.send("abort")
    reader.feed_eof()
    await asyncio.wait_for(rpc.closed.wait(), 2.0)
    assert isinstance(await asyncio.gather(pending, return_exceptions=True), list)
    assert isinstance(pending.exception(), RequestError)
    await rpc.close()
    assert sink.closed


async def test_a_request_is_bounded() -> None:
    reader = asyncio.StreamReader()
    rpc = RpcClient(Sink(), reader)
    try:
        await rpc.request("get_state", bound=0.05)
    except TimeoutError:
        pass
    else:
        raise AssertionError("an unanswered request must time out")
    await rpc.close()
