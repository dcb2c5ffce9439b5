"""The scripted model server on its own: a real HTTP client against the real server."""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from model_server import (
    UNSCRIPTED_TEXT,
    Cut,
    Empty,
    Hang,
    ModelServer,
    Reply,
    Status,
    Text,
    ToolCall,
    split_text,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as s:
        yield s
        assert s.errors() == []


def chat_body(*, stream: bool = True, tools: tuple[str, ...] = ("read", "bash"),
              system: str = "SYSTEM PROMPT", role: str = "system") -> dict[str, Any]:
    return {
        "model": "scripted-model",
        "stream": stream,
        "stream_options": {"include_usage": True},
        "messages": [{"role": role, "content": system}, {"role": "user", "content": "hello"}],
        "tools": [{"type": "function", "function": {"name": n, "parameters": {}}}
                  for n in tools],
    }


class Stream:
    """One streaming POST: the chunks as they arrive, with their arrival times."""

    def __init__(self, server: ModelServer, body: dict[str, Any]) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        self.conn.request("POST", "/v1/chat/completions", json.dumps(body),
                          {"Content-Type": "application/json"})
        self.response = self.conn.getresponse()

    def events(self) -> Iterator[tuple[float, str]]:
        while True:
            line = self.response.readline()
            if not line:
                return
            text = line.decode().rstrip("\n")
            if text.startswith("data: "):
                yield time.monotonic(), text[len("data: "):]

    def read_all(self) -> list[str]:
        return [data for _, data in self.events()]

    def close(self) -> None:
        self.response.close()
        self.conn.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def chunks(datas: list[str]) -> list[dict[str, Any]]:
    assert datas[-1] == "[DONE]"
    return [json.loads(d) for d in datas[:-1]]


def deltas(parsed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c["choices"][0]["delta"] for c in parsed if c["choices"]]


def test_text_streams_exactly_the_scripted_tokens_and_usage(server: ModelServer) -> None:
    text = 'All done.\n{"ok": true, "reason": "wrote hello.txt"}'
    server.script(Text(text, tokens=12))
    with Stream(server, chat_body()) as stream:
        assert stream.response.status == 200
        assert stream.response.getheader("Content-Type") == "text/event-stream"
        parsed = chunks(stream.read_all())
    pieces = [d["content"] for d in deltas(parsed) if d.get("content")]
    assert len(pieces) == 12
    assert "".join(pieces) == text
    finishes = [c["choices"][0]["finish_reason"] for c in parsed if c["choices"]]
    assert finishes[-1] == "stop"
    assert [f for f in finishes if f] == ["stop"]
    usage_chunk = parsed[-1]
    assert usage_chunk["choices"] == []
    usage = usage_chunk["usage"]
    assert usage["completion_tokens"] == 12
    assert usage["total_tokens"] == usage["prompt_tokens"] + 12
    assert len({c["id"] for c in parsed}) == 1
    (request,) = server.wait_for_finished(1, timeout=5)
    assert request.state == "completed"
    assert request.output_tokens == 12
    assert request.system_prompt == "SYSTEM PROMPT"
    assert request.tool_names == ["read", "bash"]
    assert request.last_user_text() == "hello"
    assert request.model == "scripted-model"
    assert not request.unscripted


def test_default_pieces_are_words(server: ModelServer) -> None:
    server.script(Text("one two  three"), Reply([Text("a b")], prompt_tokens=77))
    with Stream(server, chat_body()) as stream:
        parsed = chunks(stream.read_all())
    assert [d["content"] for d in deltas(parsed) if d.get("content")] == ["one ", "two  ", "three"]
    assert parsed[-1]["usage"]["completion_tokens"] == 3
    with Stream(server, chat_body()) as stream:
        usage = chunks(stream.read_all())[-1]["usage"]
    assert usage == {"prompt_tokens": 77, "completion_tokens": 2, "total_tokens": 79}


def test_tool_call_streams_id_name_then_arguments(server: ModelServer) -> None:
    server.script(ToolCall("bash", {"command": "printf hi > hello.txt"}, id="call_1", tokens=5))
    with Stream(server, chat_body()) as stream:
        parsed = chunks(stream.read_all())
    calls = [tc for d in deltas(parsed) for tc in d.get("tool_calls", [])]
    assert calls[0]["id"] == "call_1"
    assert calls[0]["function"]["name"] == "bash"
    assert all("id" not in c for c in calls[1:])
    arguments = "".join(c["function"].get("arguments", "") for c in calls)
    assert json.loads(arguments) == {"command": "printf hi > hello.txt"}
    assert len(calls) == 6  # the head, then 5 argument pieces
    assert [c["choices"][0]["finish_reason"] for c in parsed if c["choices"]][-1] == "tool_calls"
    assert parsed[-1]["usage"]["completion_tokens"] == 5


def test_text_then_parallel_calls_in_one_reply(server: ModelServer) -> None:
    server.script(Reply([Text("Two calls.", tokens=2), ToolCall("read", {"path": "a"}),
                         ToolCall("read", {"path": "b"})]))
    with Stream(server, chat_body()) as stream:
        parsed = chunks(stream.read_all())
    calls = [tc for d in deltas(parsed) for tc in d.get("tool_calls", [])]
    heads = [c for c in calls if "id" in c]
    assert [h["index"] for h in heads] == [0, 1]
    assert len({h["id"] for h in heads}) == 2
    by_index: dict[int, str] = {}
    for c in calls:
        by_index[c["index"]] = by_index.get(c["index"], "") + c["function"].get("arguments", "")
    assert [json.loads(by_index[i]) for i in (0, 1)] == [{"path": "a"}, {"path": "b"}]
    assert parsed[-1]["usage"]["completion_tokens"] == 2 + 4 + 4


def test_rate_paces_the_pieces(server: ModelServer) -> None:
    server.script(Text("x" * 20, tokens=10, tokens_per_second=50))
    # Taken before the request leaves, so no piece can arrive before its time from here:
    # piece i leaves (i + 1) / rate after the reply began. (A gap between the first and
    # the last arrival is no such bound: a reader that takes the first piece late — a
    # busy machine — narrows it, and the test failed so once in a loaded run.)
    began = time.monotonic()
    with Stream(server, chat_body()) as stream:
        arrivals = [t for t, data in stream.events()
                    if data != "[DONE]" and '"content":"x' in data]
    assert len(arrivals) == 10
    for i, at in enumerate(arrivals):
        assert at - began >= (i + 1) / 50 - 0.01, (i, at - began)
    assert arrivals[-1] - began < 5


def test_status_is_an_http_error(server: ModelServer) -> None:
    server.script(Status(503, "overloaded", retry_after=2), Text("after"))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(chat_body()))
        response = conn.getresponse()
        payload = json.loads(response.read())
        assert response.status == 503
        assert response.getheader("Retry-After") == "2"
        assert payload["error"]["message"] == "overloaded"
        # the same keep-alive connection carries the next request
        conn.request("POST", "/v1/chat/completions", json.dumps(chat_body(stream=False)))
        second = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    assert second["choices"][0]["message"]["content"] == "after"
    assert [r.state for r in server.wait_for_finished(2, timeout=5)] == ["error-reply",
                                                                          "completed"]


def test_empty_stream_has_no_content_and_zero_tokens(server: ModelServer) -> None:
    server.script(Empty())
    with Stream(server, chat_body()) as stream:
        parsed = chunks(stream.read_all())
    assert not any(d.get("content") or d.get("tool_calls") for d in deltas(parsed))
    assert parsed[-1]["usage"]["completion_tokens"] == 0
    assert [c["choices"][0]["finish_reason"] for c in parsed if c["choices"]][-1] == "stop"


def test_unscripted_request_gets_a_short_text_and_is_marked(server: ModelServer) -> None:
    with Stream(server, chat_body()) as stream:
        parsed = chunks(stream.read_all())
    text = "".join(d.get("content") or "" for d in deltas(parsed))
    assert text == UNSCRIPTED_TEXT
    assert [r.index for r in server.unscripted()] == [0]


def test_non_streaming_completion(server: ModelServer) -> None:
    server.script(Reply([Text("ok then"), ToolCall("bash", {"command": "ls"}, id="c9")]))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(chat_body(stream=False)))
        payload = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    choice = payload["choices"][0]
    assert choice["message"]["content"] == "ok then"
    assert choice["message"]["tool_calls"][0]["id"] == "c9"
    assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {
        "command": "ls"
    }
    assert choice["finish_reason"] == "tool_calls"
    assert payload["usage"]["completion_tokens"] == 2 + 4


def test_developer_role_is_the_system_prompt(server: ModelServer) -> None:
    body = chat_body(role="developer", system="DEV PROMPT")
    body["messages"][0]["content"] = [{"type": "text", "text": "DEV "}, {"type": "text",
                                                                        "text": "PROMPT"}]
    with Stream(server, body) as stream:
        stream.read_all()
    assert server.wait_for_requests(1, timeout=5)[0].system_prompt == "DEV PROMPT"


def test_models_endpoint_and_unknown_routes(server: ModelServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", "/v1/models")
        models = json.loads(conn.getresponse().read())
        conn.request("POST", "/v1/nowhere", "{}")
        missing = conn.getresponse()
        missing.read()
    finally:
        conn.close()
    assert [m["id"] for m in models["data"]] == ["scripted-model"]
    assert missing.status == 404
    assert [(c.method, c.path, c.status) for c in server.log()] == [
        ("GET", "/v1/models", 200), ("POST", "/v1/nowhere", 404)]
    assert server.requests() == []  # only model requests are in the request log


def test_hang_holds_until_the_client_leaves(server: ModelServer) -> None:
    server.script(Hang(before=Text("thinking about it", tokens=3)))
    stream = Stream(server, chat_body())
    try:
        events = stream.events()
        got = [next(events)[1] for _ in range(4)]  # the role chunk, then 3 pieces
        assert sum('"content":"' in g and '"content":""' not in g for g in got) == 3
        held = server.wait_for_hang(timeout=5)
        assert held.state == "open"
        assert held.output_tokens == 3
    finally:
        stream.close()
    (request,) = server.wait_for(lambda rs: rs[0].state != "open", 5, "disconnect")
    assert request.state == "disconnected"
    assert not request.hanging


def test_hang_released_continues_the_same_message(server: ModelServer) -> None:
    release = threading.Event()
    server.script(Hang(before=Text("half", tokens=2), release=release,
                       then=ToolCall("bash", {"command": "true"}, tokens=2)))
    with Stream(server, chat_body()) as stream:
        events = stream.events()
        head = [next(events)[1] for _ in range(3)]
        server.wait_for_hang(timeout=5)
        release.set()
        rest = [data for _, data in events]
    parsed = chunks(head + rest)
    assert "".join(d.get("content") or "" for d in deltas(parsed)) == "half"
    calls = [tc for d in deltas(parsed) for tc in d.get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "bash"
    assert parsed[-1]["usage"]["completion_tokens"] == 4
    assert [c["choices"][0]["finish_reason"] for c in parsed if c["choices"]][-1] == "tool_calls"


def test_cut_ends_the_stream_without_done(server: ModelServer) -> None:
    server.script(Cut(before=Text("partial answer", tokens=2)))
    with Stream(server, chat_body()) as stream:
        datas: list[str] = []
        # the chunked body just stops: http.client ends the read or calls it incomplete
        with contextlib.suppress(http.client.IncompleteRead):
            datas.extend(data for _, data in stream.events())
    assert len(datas) == 3  # the role chunk and the two pieces
    assert "[DONE]" not in datas
    assert server.wait_for_finished(1, timeout=5)[0].state == "cut"


def test_stop_ends_a_held_stream_and_an_idle_keep_alive_connection() -> None:
    server = ModelServer().start()
    server.script(Text("done"), Hang())
    idle = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    idle.request("POST", "/v1/chat/completions", json.dumps(chat_body(stream=False)))
    idle.getresponse().read()  # this connection now idles, kept alive
    held = Stream(server, chat_body())
    try:
        server.wait_for_hang(timeout=5)
        server.stop()  # returns with a stream held and a connection idling: neither waited on
    finally:
        held.close()
        idle.close()
    states = sorted(r.state for r in server.requests())
    assert states == ["completed", "stopped"]
    assert server.errors() == []


def test_wait_is_bounded(server: ModelServer) -> None:
    with pytest.raises(TimeoutError, match="2 requests"):
        server.wait_for_requests(2, timeout=0.05)


@pytest.mark.parametrize(("text", "n"), [("abcdefghij", 1), ("abcdefghij", 3),
                                         ("abcdefghij", 10), ("héllo wörld", 4)])
def test_split_text_is_exact(text: str, n: int) -> None:
    pieces = split_text(text, n)
    assert len(pieces) == n
    assert all(pieces)
    assert "".join(pieces) == text


def test_split_text_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="cannot stream"):
        split_text("abc", 4)
    with pytest.raises(ValueError, match="cannot stream"):
        split_text("abc", 0)
    assert split_text("", 0) == []
