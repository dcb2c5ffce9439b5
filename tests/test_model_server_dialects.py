"""The scripted model server's Anthropic Messages and OpenAI Responses dialects, on the wire.

A real HTTP client against the real server: the exact SSE events each dialect sends for
the neutral script items (text, tool calls, Status, Empty, Hang), the usage they carry,
and what the request log records per dialect (system prompt, tool names)."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from model_server import Empty, Hang, ModelServer, Reply, Status, Text, ToolCall

pytestmark = pytest.mark.unit

Event = tuple[str, dict[str, Any]]  # (the SSE `event:` name, the parsed `data:`)

ANTHROPIC_PATH = "/v1/messages?beta=true"  # as Claude Code calls it
RESPONSES_PATH = "/v1/responses"


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as s:
        yield s
        assert s.errors() == []


def anthropic_body(*, stream: bool = True, tools: tuple[str, ...] = ("Bash", "Write"),
                   system: Any = None) -> dict[str, Any]:
    if system is None:
        system = [{"type": "text", "text": "You are Claude Code."},
                  {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    return {
        "model": "claude-opus-5-5", "max_tokens": 1024, "stream": stream, "system": system,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "make hi.txt"}]}],
        "tools": [{"name": n, "description": n, "input_schema": {"type": "object"}}
                  for n in tools],
    }


def responses_body(*, stream: bool = True) -> dict[str, Any]:
    return {
        "model": "scripted-model", "instructions": "You are Codex.", "stream": stream,
        "store": False,
        "input": [{"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": "make hi.txt"}]}],
        "tools": [{"type": "function", "name": "exec_command", "parameters": {}},
                  {"type": "function", "name": "write_stdin", "parameters": {}},
                  {"type": "web_search"}],
    }


class SseStream:
    """One streaming POST, read as named SSE events."""

    def __init__(self, server: ModelServer, path: str, body: dict[str, Any]) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        self.conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        self.response = self.conn.getresponse()

    def events(self) -> Iterator[Event]:
        name = ""
        while True:
            line = self.response.readline()
            if not line:
                return
            text = line.decode().rstrip("\n")
            if text.startswith("event: "):
                name = text[len("event: "):]
            elif text.startswith("data: "):
                yield name, json.loads(text[len("data: "):])
                name = ""

    def read_all(self) -> list[Event]:
        return list(self.events())

    def close(self) -> None:
        self.response.close()
        self.conn.close()

    def __enter__(self) -> SseStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def post_json(server: ModelServer, path: str, body: dict[str, Any]
              ) -> tuple[int, dict[str, str], dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        payload = json.loads(response.read())
        return response.status, {k.lower(): v for k, v in response.getheaders()}, payload
    finally:
        conn.close()


def kinds(events: list[Event]) -> list[str]:
    names = [name for name, _ in events]
    assert names == [data["type"] for _, data in events]  # every event named as its type
    return names


# ----------------------------------------------------------------------------- Anthropic


def test_anthropic_text_streams_exact_pieces_and_usage(server: ModelServer) -> None:
    text = 'All done.\n{"ok": true, "reason": "wrote hi.txt"}'
    server.script(Reply([Text(text, tokens=6)], prompt_tokens=321))
    with SseStream(server, ANTHROPIC_PATH, anthropic_body()) as stream:
        assert stream.response.status == 200
        assert stream.response.getheader("Content-Type") == "text/event-stream"
        events = stream.read_all()
    assert kinds(events) == (["message_start", "content_block_start"]
                             + ["content_block_delta"] * 6
                             + ["content_block_stop", "message_delta", "message_stop"])
    start = events[0][1]["message"]
    assert start["role"] == "assistant"
    assert start["content"] == []
    assert start["stop_reason"] is None
    assert start["usage"]["input_tokens"] == 321
    assert start["usage"]["output_tokens"] == 0
    assert events[1][1] == {"type": "content_block_start", "index": 0,
                            "content_block": {"type": "text", "text": ""}}
    deltas = [d["delta"] for _, d in events[2:8]]
    assert {d["type"] for d in deltas} == {"text_delta"}
    assert len(deltas) == 6
    assert "".join(d["text"] for d in deltas) == text
    assert all(d["index"] == 0 for _, d in events[2:9])
    assert events[9][1] == {"type": "message_delta",
                            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": 6}}
    (request,) = server.wait_for_finished(1, timeout=5)
    assert request.dialect == "anthropic-messages"
    assert request.state == "completed"
    assert request.output_tokens == 6
    assert request.system_prompt == "You are Claude Code.\nBe brief."
    assert request.tool_names == ["Bash", "Write"]
    assert request.last_user_text() == "make hi.txt"


def test_anthropic_tool_use_wire_format(server: ModelServer) -> None:
    command = {"command": "echo hi > hi.txt", "description": "write hi.txt"}
    server.script(Reply([Text("I'll run it.", tokens=3),
                         ToolCall("Bash", command, id="toolu_01", tokens=5)]))
    with SseStream(server, ANTHROPIC_PATH, anthropic_body()) as stream:
        events = stream.read_all()
    assert kinds(events) == (["message_start", "content_block_start"]
                             + ["content_block_delta"] * 3
                             + ["content_block_stop", "content_block_start"]
                             + ["content_block_delta"] * 5
                             + ["content_block_stop", "message_delta", "message_stop"])
    assert events[5][1] == {"type": "content_block_stop", "index": 0}
    assert events[6][1] == {"type": "content_block_start", "index": 1, "content_block": {
        "type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {}}}
    json_deltas = [d["delta"] for _, d in events[7:12]]
    assert {d["type"] for d in json_deltas} == {"input_json_delta"}
    assert all(d["index"] == 1 for _, d in events[7:13])
    assert json.loads("".join(d["partial_json"] for d in json_deltas)) == command
    assert events[13][1]["delta"]["stop_reason"] == "tool_use"
    assert events[13][1]["usage"] == {"output_tokens": 3 + 5}


def test_anthropic_parallel_tool_uses_are_separate_blocks(server: ModelServer) -> None:
    server.script(Reply([ToolCall("Read", {"file_path": "a"}, id="t1"),
                         ToolCall("Read", {"file_path": "b"}, id="t2")]))
    with SseStream(server, ANTHROPIC_PATH, anthropic_body()) as stream:
        events = stream.read_all()
    starts = [d for n, d in events if n == "content_block_start"]
    assert [(s["index"], s["content_block"]["id"]) for s in starts] == [(0, "t1"), (1, "t2")]
    stops = [d["index"] for n, d in events if n == "content_block_stop"]
    assert stops == [0, 1]
    by_block: dict[int, str] = {}
    for name, data in events:
        if name == "content_block_delta":
            by_block[data["index"]] = by_block.get(data["index"], "") + \
                data["delta"]["partial_json"]
    assert [json.loads(by_block[i]) for i in (0, 1)] == [{"file_path": "a"},
                                                         {"file_path": "b"}]
    assert events[-2][1]["usage"] == {"output_tokens": 8}


def test_anthropic_system_as_a_string(server: ModelServer) -> None:
    with SseStream(server, "/v1/messages", anthropic_body(system="PLAIN SYSTEM")) as stream:
        stream.read_all()
    (request,) = server.wait_for_finished(1, timeout=5)
    assert request.system_prompt == "PLAIN SYSTEM"
    assert request.unscripted


def test_anthropic_non_streaming_reply(server: ModelServer) -> None:
    server.script(Reply([Text("ok then"), ToolCall("Bash", {"command": "ls"}, id="toolu_9")],
                        prompt_tokens=50))
    status, _, payload = post_json(server, ANTHROPIC_PATH, anthropic_body(stream=False))
    assert status == 200
    assert payload["type"] == "message"
    assert payload["content"] == [
        {"type": "text", "text": "ok then"},
        {"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {"command": "ls"}},
    ]
    assert payload["stop_reason"] == "tool_use"
    assert payload["usage"]["input_tokens"] == 50
    assert payload["usage"]["output_tokens"] == 2 + 4


@pytest.mark.parametrize(("code", "kind"), [(400, "invalid_request_error"),
                                            (429, "rate_limit_error"),
                                            (529, "overloaded_error"), (503, "api_error")])
def test_anthropic_status_is_an_error_object(server: ModelServer, code: int, kind: str) -> None:
    server.script(Status(code, "scripted trouble", retry_after=3))
    status, headers, payload = post_json(server, ANTHROPIC_PATH, anthropic_body())
    assert status == code
    assert headers["retry-after"] == "3"
    assert payload == {"type": "error", "error": {"type": kind, "message": "scripted trouble"}}
    assert server.wait_for_finished(1, timeout=5)[0].state == "error-reply"


def test_anthropic_empty_has_no_block_and_zero_tokens(server: ModelServer) -> None:
    server.script(Empty(prompt_tokens=9))
    with SseStream(server, ANTHROPIC_PATH, anthropic_body()) as stream:
        events = stream.read_all()
    assert kinds(events) == ["message_start", "message_delta", "message_stop"]
    assert events[0][1]["message"]["usage"]["input_tokens"] == 9
    assert events[1][1]["delta"]["stop_reason"] == "end_turn"
    assert events[1][1]["usage"] == {"output_tokens": 0}


def test_anthropic_hang_holds_then_continues_the_message(server: ModelServer) -> None:
    release = threading.Event()
    server.script(Hang(before=Text("half way", tokens=2), release=release,
                       then=ToolCall("Bash", {"command": "true"}, id="toolu_h", tokens=2)))
    with SseStream(server, ANTHROPIC_PATH, anthropic_body()) as stream:
        events = stream.events()
        head = [next(events) for _ in range(4)]  # message_start, block start, 2 deltas
        held = server.wait_for_hang(timeout=5)
        assert held.output_tokens == 2
        assert held.state == "open"
        release.set()
        rest = list(events)
    got = head + rest
    assert kinds(got) == (["message_start", "content_block_start"]
                          + ["content_block_delta"] * 2
                          + ["content_block_stop", "content_block_start"]
                          + ["content_block_delta"] * 2
                          + ["content_block_stop", "message_delta", "message_stop"])
    assert got[5][1]["index"] == 1
    assert got[5][1]["content_block"]["name"] == "Bash"
    assert got[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert got[-2][1]["usage"] == {"output_tokens": 4}


def test_anthropic_hang_ends_when_the_client_leaves(server: ModelServer) -> None:
    server.script(Hang(before=Text("thinking", tokens=1)))
    stream = SseStream(server, ANTHROPIC_PATH, anthropic_body())
    try:
        events = stream.events()
        assert [next(events)[0] for _ in range(3)] == ["message_start", "content_block_start",
                                                        "content_block_delta"]
        server.wait_for_hang(timeout=5)
    finally:
        stream.close()
    (request,) = server.wait_for(lambda rs: rs[0].state != "open", 5, "disconnect")
    assert request.state == "disconnected"


def test_anthropic_count_tokens_is_answered_outside_the_request_log(
        server: ModelServer) -> None:
    status, _, payload = post_json(server, "/v1/messages/count_tokens?beta=true",
                                   anthropic_body())
    assert status == 200
    assert isinstance(payload["input_tokens"], int)
    assert payload["input_tokens"] > 0
    assert server.requests() == []
    assert [(c.method, c.path, c.status) for c in server.log()] == [
        ("POST", "/v1/messages/count_tokens?beta=true", 200)]


# ----------------------------------------------------------------------------- Responses


def test_responses_text_streams_exact_pieces_and_usage(server: ModelServer) -> None:
    text = 'I ran it.\n{"ok": true, "reason": "wrote hi.txt"}'
    server.script(Reply([Text(text, tokens=5)], prompt_tokens=400))
    with SseStream(server, RESPONSES_PATH, responses_body()) as stream:
        assert stream.response.status == 200
        assert stream.response.getheader("Content-Type") == "text/event-stream"
        events = stream.read_all()
    assert kinds(events) == (["response.created", "response.in_progress",
                              "response.output_item.added", "response.content_part.added"]
                             + ["response.output_text.delta"] * 5
                             + ["response.output_text.done", "response.content_part.done",
                                "response.output_item.done", "response.completed"])
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    created = events[0][1]["response"]
    assert created["status"] == "in_progress"
    assert created["output"] == []
    added = events[2][1]
    assert added["output_index"] == 0
    assert added["item"]["type"] == "message"
    assert added["item"]["role"] == "assistant"
    item_id = added["item"]["id"]
    deltas = [d for _, d in events[4:9]]
    assert all(d["item_id"] == item_id and d["output_index"] == 0 for d in deltas)
    assert "".join(d["delta"] for d in deltas) == text
    done = events[11][1]["item"]
    assert done == {"type": "message", "id": item_id, "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}
    completed = events[12][1]["response"]
    assert completed["status"] == "completed"
    assert completed["id"] == created["id"]
    assert completed["output"] == [done]
    assert completed["usage"] == {"input_tokens": 400,
                                  "input_tokens_details": {"cached_tokens": 0},
                                  "output_tokens": 5,
                                  "output_tokens_details": {"reasoning_tokens": 0},
                                  "total_tokens": 405}
    (request,) = server.wait_for_finished(1, timeout=5)
    assert request.dialect == "openai-responses"
    assert request.output_tokens == 5
    assert request.system_prompt == "You are Codex."
    assert request.tool_names == ["exec_command", "write_stdin", "web_search"]


def test_responses_function_call_wire_format(server: ModelServer) -> None:
    arguments = {"cmd": "echo hi > hi.txt"}
    server.script(Reply([Text("Running.", tokens=1),
                         ToolCall("exec_command", arguments, id="call_7", tokens=4)]))
    with SseStream(server, RESPONSES_PATH, responses_body()) as stream:
        events = stream.read_all()
    assert kinds(events) == (["response.created", "response.in_progress",
                              "response.output_item.added", "response.content_part.added",
                              "response.output_text.delta", "response.output_text.done",
                              "response.content_part.done", "response.output_item.done",
                              "response.output_item.added"]
                             + ["response.function_call_arguments.delta"] * 4
                             + ["response.function_call_arguments.done",
                                "response.output_item.done", "response.completed"])
    added = events[8][1]
    assert added["output_index"] == 1
    call_item = added["item"]
    assert call_item["type"] == "function_call"
    assert call_item["call_id"] == "call_7"
    assert call_item["name"] == "exec_command"
    assert call_item["arguments"] == ""
    assert call_item["status"] == "in_progress"
    pieces = [d for _, d in events[9:13]]
    assert all(p["item_id"] == call_item["id"] and p["output_index"] == 1 for p in pieces)
    raw = "".join(p["delta"] for p in pieces)
    assert json.loads(raw) == arguments
    assert events[13][1]["arguments"] == raw
    done = events[14][1]["item"]
    assert done == {"type": "function_call", "id": call_item["id"], "call_id": "call_7",
                    "name": "exec_command", "arguments": raw, "status": "completed"}
    completed = events[15][1]["response"]
    assert [i["type"] for i in completed["output"]] == ["message", "function_call"]
    assert completed["output"][1] == done
    assert completed["usage"]["output_tokens"] == 1 + 4


def test_responses_developer_messages_are_the_system_prompt(server: ModelServer) -> None:
    # Codex 0.169.0 sends no `instructions` to a custom provider: its base instructions
    # are the first developer message of `input`
    body = responses_body()
    del body["instructions"]
    body["input"] = [
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": "You are a coding agent."}]},
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": "CARD PROMPT"}]},
    ] + body["input"]
    with SseStream(server, RESPONSES_PATH, body) as stream:
        stream.read_all()
    (request,) = server.wait_for_finished(1, timeout=5)
    assert request.system_prompt == "You are a coding agent.\n\nCARD PROMPT"
    body["instructions"] = "INSTRUCTIONS"
    with SseStream(server, RESPONSES_PATH, body) as stream:
        stream.read_all()
    assert server.wait_for_finished(2, timeout=5)[1].system_prompt == (
        "INSTRUCTIONS\n\nYou are a coding agent.\n\nCARD PROMPT")


def test_responses_non_streaming_reply(server: ModelServer) -> None:
    server.script(Reply([Text("ok then"), ToolCall("exec_command", {"cmd": "ls"}, id="c1")]))
    status, _, payload = post_json(server, RESPONSES_PATH, responses_body(stream=False))
    assert status == 200
    assert payload["object"] == "response"
    assert payload["status"] == "completed"
    message, call = payload["output"]
    assert message["content"][0]["text"] == "ok then"
    assert (call["call_id"], call["name"], json.loads(call["arguments"])) == (
        "c1", "exec_command", {"cmd": "ls"})
    assert payload["usage"]["output_tokens"] == 2 + 4


@pytest.mark.parametrize(("code", "kind"), [(400, "invalid_request_error"),
                                            (503, "server_error")])
def test_responses_status_is_an_error_object(server: ModelServer, code: int, kind: str) -> None:
    server.script(Status(code, "scripted trouble", retry_after=1))
    status, headers, payload = post_json(server, RESPONSES_PATH, responses_body())
    assert status == code
    assert headers["retry-after"] == "1"
    assert payload["error"]["message"] == "scripted trouble"
    assert payload["error"]["type"] == kind
    assert payload["error"]["code"] == str(code)
    assert server.wait_for_finished(1, timeout=5)[0].state == "error-reply"


def test_responses_empty_has_no_item_and_zero_tokens(server: ModelServer) -> None:
    server.script(Empty(prompt_tokens=12))
    with SseStream(server, RESPONSES_PATH, responses_body()) as stream:
        events = stream.read_all()
    assert kinds(events) == ["response.created", "response.in_progress", "response.completed"]
    completed = events[-1][1]["response"]
    assert completed["output"] == []
    assert completed["usage"]["input_tokens"] == 12
    assert completed["usage"]["output_tokens"] == 0
    assert completed["usage"]["total_tokens"] == 12


def test_responses_hang_holds_then_continues_the_response(server: ModelServer) -> None:
    release = threading.Event()
    server.script(Hang(before=Text("half way", tokens=2), release=release,
                       then=Text(" and done", tokens=2)))
    with SseStream(server, RESPONSES_PATH, responses_body()) as stream:
        events = stream.events()
        head = [next(events) for _ in range(6)]  # created, in_progress, added, part, 2 deltas
        held = server.wait_for_hang(timeout=5)
        assert held.output_tokens == 2
        release.set()
        rest = list(events)
    got = head + rest
    texts = [d["delta"] for n, d in got if n == "response.output_text.delta"]
    assert texts == ["half", " way", " and", " done"]
    # `then` starts a new block: a second message item
    assert [d["output_index"] for n, d in got if n == "response.output_item.added"] == [0, 1]
    completed = got[-1][1]["response"]
    assert completed["usage"]["output_tokens"] == 4
    assert [i["content"][0]["text"] for i in completed["output"]] == ["half way", " and done"]


def test_responses_hang_ends_when_the_client_leaves(server: ModelServer) -> None:
    server.script(Hang())
    stream = SseStream(server, RESPONSES_PATH, responses_body())
    try:
        events = stream.events()
        assert [next(events)[0] for _ in range(2)] == ["response.created",
                                                        "response.in_progress"]
        server.wait_for_hang(timeout=5)
    finally:
        stream.close()
    (request,) = server.wait_for(lambda rs: rs[0].state != "open", 5, "disconnect")
    assert request.state == "disconnected"


def test_each_dialect_has_its_own_route(server: ModelServer) -> None:
    server.script(Text("a"), Text("b"), Text("c"))
    post_json(server, ANTHROPIC_PATH, anthropic_body(stream=False))
    post_json(server, RESPONSES_PATH, responses_body(stream=False))
    post_json(server, "/v1/chat/completions", {"model": "m", "messages": []})
    assert [r.dialect for r in server.wait_for_finished(3, timeout=5)] == [
        "anthropic-messages", "openai-responses", "openai-chat-completions"]
