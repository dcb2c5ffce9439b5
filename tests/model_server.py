"""A scripted model server the tests own.

One HTTP server on 127.0.0.1 (a free port), run by a thread, answering real agent CLIs
the way a model provider would. Each test scripts the replies: a queue of
dialect-neutral items, one consumed per model request, turned into a wire format by an
encoder per API dialect, routed by path: OpenAI Chat Completions
(`POST /v1/chat/completions`, pi), the Anthropic Messages API (`POST /v1/messages`, Claude
Code; also `POST /v1/messages/count_tokens`) and the OpenAI Responses API
(`POST /v1/responses`, Codex's `wire_api = "responses"`), each SSE when `stream: true`.
Another dialect is another `Dialect` (a request view + a `StreamEncoder`) listed in
`DIALECTS` — the script items and the streaming loop stay as they are. The request log
records each dialect's system prompt (chat: the system/developer message; Anthropic:
top-level `system`; Responses: `instructions` and the `developer` messages of `input`)
and tool names (`tools[].name`).

Script items:

- `Text(text, tokens=N, tokens_per_second=R)` — the text streamed as exactly N pieces (one
  per word when N is not given), one piece every 1/R s (as fast as possible when R is not
  given). Each streamed piece is one output token: `usage.completion_tokens` is exactly
  the number of pieces streamed.
- `ToolCall(name, arguments, id=None, tokens=None, tokens_per_second=None)` — one tool
  call, its arguments JSON streamed as `tokens` pieces (4 when not given).
- `Reply(parts, prompt_tokens=None, first_token_delay=0.0)` — several parts in one
  message (text then calls, parallel calls); a bare `Text`/`ToolCall` is a one-part reply.
  The finish reason is `tool_calls` when a part is a call, else `stop`.
- `Status(code=503, message=..., retry_after=None)` — an HTTP error reply, no stream.
- `Empty()` — a stream with no content, finish `stop`, `completion_tokens` 0.
- `Hang(before=None, release=None, then=None)` — streams `before`, then holds the
  stream open until the client goes away, the server stops, or `release` (an event) is
  set; then streams `then` and finishes. For aborts and steers mid-turn.
- `Cut(before=None)` — streams `before`, then closes the connection mid-stream.

When the queue is empty the server answers with `when_empty` (by default a plain short
text, `UNSCRIPTED_TEXT`) and marks the request `unscripted`: a test that ran out of
script sees it in `server.unscripted()` instead of an agent stuck retrying an error.

The request log (`server.requests()`, `server.wait_for_requests(n, timeout)`) holds each
model request's parsed body, its system prompt and tool names, the item that answered it
and how the stream ended. Every wait is bounded and raises `TimeoutError` with what was
seen.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import select
import socket
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Literal, Protocol

# --------------------------------------------------------------------------- script items


@dataclass(frozen=True)
class Text:
    """Assistant text, streamed as `tokens` pieces (default: one per word)."""

    text: str
    tokens: int | None = None
    tokens_per_second: float | None = None

    def pieces(self) -> list[str]:
        return split_text(self.text, self.tokens)


@dataclass(frozen=True)
class ToolCall:
    """One tool call; its arguments JSON is streamed as `tokens` pieces (default 4)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    tokens: int | None = None
    tokens_per_second: float | None = None

    def arguments_json(self) -> str:
        return json.dumps(dict(self.arguments))

    def pieces(self) -> list[str]:
        raw = self.arguments_json()
        return split_text(raw, self.tokens if self.tokens is not None else min(4, len(raw)))


Part = Text | ToolCall


@dataclass(frozen=True)
class Reply:
    """One assistant message of several parts (text and/or tool calls)."""

    parts: Sequence[Part]
    prompt_tokens: int | None = None
    first_token_delay: float = 0.0


@dataclass(frozen=True)
class Status:
    """An HTTP error reply (no stream)."""

    code: int = 503
    message: str = "scripted model server: scripted error"
    retry_after: float | None = None


@dataclass(frozen=True)
class Empty:
    """A stream with no content: finish `stop`, completion_tokens 0."""

    prompt_tokens: int | None = None


@dataclass(frozen=True)
class Hang:
    """Stream `before`, hold the stream open until released / disconnected / stopped."""

    before: Text | None = None
    release: threading.Event | None = None
    then: Reply | Part | None = None


@dataclass(frozen=True)
class Cut:
    """Stream `before`, then close the connection without finishing the stream."""

    before: Text | None = None


ScriptItem = Text | ToolCall | Reply | Status | Empty | Hang | Cut

UNSCRIPTED_TEXT = "scripted model server: nothing scripted for this request."

_WORD = re.compile(r"\s*\S+\s*|\s+")


def split_text(text: str, pieces: int | None) -> list[str]:
    """`text` cut into exactly `pieces` non-empty pieces (None: one per word)."""
    if pieces is None:
        found = _WORD.findall(text)
        return found if found else ([text] if text else [])
    if pieces < 0:
        raise ValueError(f"pieces must be >= 0, got {pieces}")
    if pieces == 0:
        if text:
            raise ValueError("a non-empty text cannot stream as 0 pieces")
        return []
    if len(text) < pieces:
        raise ValueError(f"{len(text)} characters cannot stream as {pieces} non-empty pieces")
    cuts = [round(i * len(text) / pieces) for i in range(pieces + 1)]
    return [text[a:b] for a, b in itertools.pairwise(cuts)]


# ------------------------------------------------------------ the neutral stream a reply is


@dataclass(frozen=True)
class TextPiece:
    block: int  # content block index within the message
    text: str


@dataclass(frozen=True)
class ToolCallBegin:
    block: int
    call_index: int  # index among the message's tool calls
    call_id: str
    name: str


@dataclass(frozen=True)
class ToolArgsPiece:
    block: int
    call_index: int
    fragment: str


Piece = TextPiece | ToolCallBegin | ToolArgsPiece
FinishReason = Literal["stop", "tool_use", "length"]


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Step:
    """One thing the streaming loop does: wait until `at` (s after the reply began), then
    send `piece`; a counted piece is one output token."""

    at: float
    piece: Piece
    counts: bool


_call_ids = itertools.count(1)


def plan_parts(parts: Sequence[Part], *, start_block: int = 0, start_call: int = 0,
               start_at: float = 0.0) -> tuple[list[Step], float]:
    """The steps streaming `parts` takes, and the time offset after the last one."""
    steps: list[Step] = []
    at = start_at
    call_index = start_call
    for offset, part in enumerate(parts):
        block = start_block + offset
        gap = 1.0 / part.tokens_per_second if part.tokens_per_second else 0.0
        if isinstance(part, Text):
            for text in part.pieces():
                at += gap
                steps.append(Step(at, TextPiece(block, text), counts=True))
        else:
            call_id = part.id or f"call_scripted_{next(_call_ids)}"
            steps.append(Step(at, ToolCallBegin(block, call_index, call_id, part.name), False))
            for fragment in part.pieces():
                at += gap
                steps.append(Step(at, ToolArgsPiece(block, call_index, fragment), counts=True))
            call_index += 1
    return steps, at


def as_reply(item: Reply | Part) -> Reply:
    return item if isinstance(item, Reply) else Reply([item])


# ------------------------------------------------------------------------------ dialects


class StreamEncoder(Protocol):
    """Turns the neutral stream of one reply into wire bytes (whole SSE events)."""

    def begin(self) -> bytes: ...

    def piece(self, piece: Piece) -> bytes: ...

    def end(self, reason: FinishReason, usage: Usage) -> bytes: ...


class Dialect(Protocol):
    """One provider API: where it listens, how to read a request, how to answer."""

    name: str
    path: str

    def system_prompt(self, body: Mapping[str, Any]) -> str | None: ...

    def tool_names(self, body: Mapping[str, Any]) -> list[str]: ...

    def wants_stream(self, body: Mapping[str, Any]) -> bool: ...

    def encoder(self, body: Mapping[str, Any], response_id: str) -> StreamEncoder: ...

    def complete(self, body: Mapping[str, Any], response_id: str, pieces: Sequence[Piece],
                 reason: FinishReason, usage: Usage) -> dict[str, Any]: ...

    def error(self, status: Status) -> dict[str, Any]: ...


def _sse(payload: Mapping[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


def _content_text(content: Any) -> str:
    """A chat message's content as text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


class _ChatEncoder:
    """OpenAI Chat Completions chunks (`chat.completion.chunk`)."""

    def __init__(self, model: str, response_id: str, include_usage: bool) -> None:
        self.model = model
        self.response_id = response_id
        self.include_usage = include_usage
        self.created = int(time.time())

    def _chunk(self, delta: Mapping[str, Any] | None, finish: str | None = None,
               usage: Usage | None = None) -> bytes:
        chunk: dict[str, Any] = {
            "id": self.response_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [] if delta is None else [
                {"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish}
            ],
        }
        if usage is not None:
            chunk["usage"] = {
                "prompt_tokens": usage.input_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.total_tokens,
            }
        return _sse(chunk)

    def begin(self) -> bytes:
        return self._chunk({"role": "assistant", "content": ""})

    def piece(self, piece: Piece) -> bytes:
        if isinstance(piece, TextPiece):
            return self._chunk({"content": piece.text})
        if isinstance(piece, ToolCallBegin):
            call = {"index": piece.call_index, "id": piece.call_id, "type": "function",
                    "function": {"name": piece.name, "arguments": ""}}
            return self._chunk({"tool_calls": [call]})
        call = {"index": piece.call_index, "function": {"arguments": piece.fragment}}
        return self._chunk({"tool_calls": [call]})

    def end(self, reason: FinishReason, usage: Usage) -> bytes:
        out = self._chunk({}, finish=ChatCompletions.FINISH[reason])
        if self.include_usage:
            out += self._chunk(None, usage=usage)
        return out + _sse("[DONE]")


class ChatCompletions:
    """`POST /v1/chat/completions` (OpenAI Chat Completions, SSE with `stream: true`)."""

    name = "openai-chat-completions"
    path = "/v1/chat/completions"
    FINISH: ClassVar[dict[str, str]] = {
        "stop": "stop", "tool_use": "tool_calls", "length": "length",
    }

    def system_prompt(self, body: Mapping[str, Any]) -> str | None:
        for message in body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") in ("system", "developer"):
                return _content_text(message.get("content"))
        return None

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        names: list[str] = []
        for tool in body.get("tools") or []:
            if isinstance(tool, dict):
                function = tool.get("function")
                name = function.get("name") if isinstance(function, dict) else tool.get("name")
                if isinstance(name, str):
                    names.append(name)
        return names

    def wants_stream(self, body: Mapping[str, Any]) -> bool:
        return body.get("stream") is True

    def encoder(self, body: Mapping[str, Any], response_id: str) -> StreamEncoder:
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        return _ChatEncoder(str(body.get("model", "")), response_id, include_usage)

    def complete(self, body: Mapping[str, Any], response_id: str, pieces: Sequence[Piece],
                 reason: FinishReason, usage: Usage) -> dict[str, Any]:
        text = "".join(p.text for p in pieces if isinstance(p, TextPiece))
        calls: dict[int, dict[str, Any]] = {}
        for p in pieces:
            if isinstance(p, ToolCallBegin):
                calls[p.call_index] = {"id": p.call_id, "type": "function",
                                       "function": {"name": p.name, "arguments": ""}}
            elif isinstance(p, ToolArgsPiece):
                calls[p.call_index]["function"]["arguments"] += p.fragment
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        return {
            "id": response_id, "object": "chat.completion", "created": int(time.time()),
            "model": str(body.get("model", "")),
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": self.FINISH[reason]}],
            "usage": {"prompt_tokens": usage.input_tokens,
                      "completion_tokens": usage.output_tokens,
                      "total_tokens": usage.total_tokens},
        }

    def error(self, status: Status) -> dict[str, Any]:
        return {"error": {"message": status.message, "type": "server_error",
                          "param": None, "code": str(status.code)}}


def _sse_event(event: str, payload: Mapping[str, Any]) -> bytes:
    """One named SSE event (`event:` then `data:`), as the Anthropic and Responses APIs send."""
    data = json.dumps(payload, separators=(",", ":"))
    return f"event: {event}\ndata: {data}\n\n".encode()


def _call_input(arguments: str) -> Any:
    """A tool call's streamed arguments as the JSON value they spell ({} if they spell none)."""
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return {}


class _AnthropicEncoder:
    """Anthropic Messages SSE: message_start, content_block_start/delta/stop per block
    (text_delta, input_json_delta), message_delta (stop_reason, usage), message_stop."""

    def __init__(self, model: str, response_id: str, input_tokens: int) -> None:
        self.model = model
        self.response_id = response_id
        self.input_tokens = input_tokens
        self.open_block: int | None = None

    def set_prompt_tokens(self, tokens: int) -> None:
        """The prompt size message_start reports (the server calls this before begin())."""
        self.input_tokens = tokens

    def _close(self) -> bytes:
        if self.open_block is None:
            return b""
        index, self.open_block = self.open_block, None
        return _sse_event("content_block_stop", {"type": "content_block_stop", "index": index})

    def _open(self, block: int, content_block: Mapping[str, Any]) -> bytes:
        out = self._close()
        self.open_block = block
        return out + _sse_event("content_block_start", {
            "type": "content_block_start", "index": block, "content_block": dict(content_block),
        })

    def begin(self) -> bytes:
        return _sse_event("message_start", {"type": "message_start", "message": {
            "id": self.response_id, "type": "message", "role": "assistant",
            "model": self.model, "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": 0,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }})

    def piece(self, piece: Piece) -> bytes:
        if isinstance(piece, ToolCallBegin):
            return self._open(piece.block, {"type": "tool_use", "id": piece.call_id,
                                            "name": piece.name, "input": {}})
        out = b""
        if isinstance(piece, TextPiece):
            if self.open_block != piece.block:
                out += self._open(piece.block, {"type": "text", "text": ""})
            delta: dict[str, Any] = {"type": "text_delta", "text": piece.text}
        else:
            delta = {"type": "input_json_delta", "partial_json": piece.fragment}
        return out + _sse_event("content_block_delta", {
            "type": "content_block_delta", "index": piece.block, "delta": delta,
        })

    def end(self, reason: FinishReason, usage: Usage) -> bytes:
        return self._close() + _sse_event("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": AnthropicMessages.STOP[reason], "stop_sequence": None},
            "usage": {"output_tokens": usage.output_tokens},
        }) + _sse_event("message_stop", {"type": "message_stop"})


class AnthropicMessages:
    """`POST /v1/messages` (Anthropic Messages API, SSE with `stream: true`).

    Claude Code calls it as `/v1/messages?beta=true` (the query is not part of the route).
    `POST /v1/messages/count_tokens` is answered too (see `COUNT_TOKENS_PATH`), outside the
    request log: it is no model request."""

    name = "anthropic-messages"
    path = "/v1/messages"
    COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
    STOP: ClassVar[dict[str, str]] = {
        "stop": "end_turn", "tool_use": "tool_use", "length": "max_tokens",
    }
    ERROR_TYPES: ClassVar[dict[int, str]] = {
        400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
        404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
        529: "overloaded_error",
    }

    def system_prompt(self, body: Mapping[str, Any]) -> str | None:
        system = body.get("system")
        if isinstance(system, str):
            return system
        if isinstance(system, list):
            return "\n".join(str(b.get("text", "")) for b in system
                             if isinstance(b, dict) and "text" in b)
        return None

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        return [t["name"] for t in body.get("tools") or []
                if isinstance(t, dict) and isinstance(t.get("name"), str)]

    def wants_stream(self, body: Mapping[str, Any]) -> bool:
        return body.get("stream") is True

    def encoder(self, body: Mapping[str, Any], response_id: str) -> StreamEncoder:
        return _AnthropicEncoder(str(body.get("model", "")), response_id,
                                 _estimate_prompt_tokens(body))

    def complete(self, body: Mapping[str, Any], response_id: str, pieces: Sequence[Piece],
                 reason: FinishReason, usage: Usage) -> dict[str, Any]:
        blocks: dict[int, dict[str, Any]] = {}
        arguments: dict[int, str] = {}
        for p in pieces:
            if isinstance(p, TextPiece):
                blocks.setdefault(p.block, {"type": "text", "text": ""})["text"] += p.text
            elif isinstance(p, ToolCallBegin):
                blocks[p.block] = {"type": "tool_use", "id": p.call_id, "name": p.name,
                                   "input": {}}
                arguments[p.block] = ""
            else:
                arguments[p.block] += p.fragment
        for block, raw in arguments.items():
            blocks[block]["input"] = _call_input(raw)
        return {
            "id": response_id, "type": "message", "role": "assistant",
            "model": str(body.get("model", "")),
            "content": [blocks[i] for i in sorted(blocks)],
            "stop_reason": self.STOP[reason], "stop_sequence": None,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }

    def error(self, status: Status) -> dict[str, Any]:
        kind = self.ERROR_TYPES.get(status.code, "api_error")
        return {"type": "error", "error": {"type": kind, "message": status.message}}

    def count_tokens(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return {"input_tokens": _estimate_prompt_tokens(body)}


class _ResponsesEncoder:
    """OpenAI Responses SSE: response.created, then per output item output_item.added,
    its deltas (output_text.delta / function_call_arguments.delta) and output_item.done,
    then response.completed with the usage."""

    def __init__(self, model: str, response_id: str) -> None:
        self.model = model
        self.response_id = response_id
        self.created = int(time.time())
        self.sequence = itertools.count(0)
        self.items: list[dict[str, Any]] = []  # every output item, as last sent
        self.open_block: int | None = None

    def _event(self, kind: str, **fields: Any) -> bytes:
        return _sse_event(kind, {"type": kind, "sequence_number": next(self.sequence), **fields})

    def _response(self, status: str, usage: Usage | None) -> dict[str, Any]:
        return {
            "id": self.response_id, "object": "response", "created_at": self.created,
            "status": status, "model": self.model, "output": [dict(i) for i in self.items],
            "usage": None if usage is None else ResponsesApi.usage(usage),
        }

    def _close(self) -> bytes:
        if self.open_block is None:
            return b""
        self.open_block = None
        item = self.items[-1]
        item["status"] = "completed"
        out = b""
        if item["type"] == "message":
            text = item["content"][0]["text"]
            out += self._event("response.output_text.done", item_id=item["id"],
                               output_index=len(self.items) - 1, content_index=0, text=text)
            out += self._event("response.content_part.done", item_id=item["id"],
                               output_index=len(self.items) - 1, content_index=0,
                               part=dict(item["content"][0]))
        else:
            out += self._event("response.function_call_arguments.done", item_id=item["id"],
                               output_index=len(self.items) - 1, arguments=item["arguments"])
        return out + self._event("response.output_item.done",
                                 output_index=len(self.items) - 1,
                                 item=json.loads(json.dumps(item)))

    def _open(self, block: int, item: dict[str, Any]) -> bytes:
        out = self._close()
        self.open_block = block
        self.items.append(item)
        added = json.loads(json.dumps(item))
        out += self._event("response.output_item.added", output_index=len(self.items) - 1,
                           item=added)
        if item["type"] == "message":
            out += self._event("response.content_part.added", item_id=item["id"],
                               output_index=len(self.items) - 1, content_index=0,
                               part={"type": "output_text", "text": "", "annotations": []})
        return out

    def begin(self) -> bytes:
        return (self._event("response.created", response=self._response("in_progress", None))
                + self._event("response.in_progress",
                              response=self._response("in_progress", None)))

    def piece(self, piece: Piece) -> bytes:
        if isinstance(piece, ToolCallBegin):
            return self._open(piece.block, {
                "type": "function_call", "id": f"fc_{self.response_id}_{piece.block}",
                "call_id": piece.call_id, "name": piece.name, "arguments": "",
                "status": "in_progress",
            })
        out = b""
        if isinstance(piece, TextPiece):
            if self.open_block != piece.block:
                out += self._open(piece.block, {
                    "type": "message", "id": f"msg_{self.response_id}_{piece.block}",
                    "role": "assistant", "status": "in_progress",
                    "content": [{"type": "output_text", "text": "", "annotations": []}],
                })
            item = self.items[-1]
            item["content"][0]["text"] += piece.text
            return out + self._event("response.output_text.delta", item_id=item["id"],
                                     output_index=len(self.items) - 1, content_index=0,
                                     delta=piece.text)
        item = self.items[-1]
        item["arguments"] += piece.fragment
        return self._event("response.function_call_arguments.delta", item_id=item["id"],
                           output_index=len(self.items) - 1, delta=piece.fragment)

    def end(self, reason: FinishReason, usage: Usage) -> bytes:
        out = self._close()
        if reason == "length":
            response = self._response("incomplete", usage)
            response["incomplete_details"] = {"reason": "max_output_tokens"}
            return out + self._event("response.incomplete", response=response)
        return out + self._event("response.completed",
                                 response=self._response("completed", usage))


class ResponsesApi:
    """`POST /v1/responses` (OpenAI Responses API, SSE with `stream: true`), as Codex's
    `wire_api = "responses"` calls it."""

    name = "openai-responses"
    path = "/v1/responses"

    @staticmethod
    def usage(usage: Usage) -> dict[str, Any]:
        return {"input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.total_tokens}

    def system_prompt(self, body: Mapping[str, Any]) -> str | None:
        """`instructions`, then every `developer`/`system` message of `input`, joined by a
        blank line. Codex 0.169.0 sends no `instructions` to a custom provider: its base
        instructions are the first `developer` message of `input`."""
        parts: list[str] = []
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            parts.append(instructions)
        items = body.get("input")
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("role") in ("developer", "system"):
                parts.append(_content_text(item.get("content")))
        return "\n\n".join(parts) if parts else None

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        """`tools[].name`; a built-in tool without a name (e.g. `web_search`) by its type."""
        names: list[str] = []
        for tool in body.get("tools") or []:
            if isinstance(tool, dict):
                name = tool.get("name", tool.get("type"))
                if isinstance(name, str):
                    names.append(name)
        return names

    def wants_stream(self, body: Mapping[str, Any]) -> bool:
        return body.get("stream") is True

    def encoder(self, body: Mapping[str, Any], response_id: str) -> StreamEncoder:
        return _ResponsesEncoder(str(body.get("model", "")), response_id)

    def complete(self, body: Mapping[str, Any], response_id: str, pieces: Sequence[Piece],
                 reason: FinishReason, usage: Usage) -> dict[str, Any]:
        encoder = _ResponsesEncoder(str(body.get("model", "")), response_id)
        for p in pieces:
            encoder.piece(p)
        encoder.end(reason, usage)
        status = "incomplete" if reason == "length" else "completed"
        return encoder._response(status, usage)

    def error(self, status: Status) -> dict[str, Any]:
        kind = "invalid_request_error" if 400 <= status.code < 500 else "server_error"
        return {"error": {"message": status.message, "type": kind, "param": None,
                          "code": str(status.code)}}


DIALECTS: tuple[Dialect, ...] = (ChatCompletions(), AnthropicMessages(), ResponsesApi())


# --------------------------------------------------------------------------- request log


RequestState = Literal["open", "completed", "disconnected", "cut", "error-reply", "stopped"]


@dataclass
class RecordedRequest:
    """One model request and how it was answered."""

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    dialect: str
    system_prompt: str | None
    tool_names: list[str]
    item: ScriptItem | None = None
    unscripted: bool = False
    state: RequestState = "open"
    output_tokens: int = 0
    hanging: bool = False
    received_at: float = field(default_factory=time.monotonic)
    finished_at: float | None = None

    @property
    def messages(self) -> list[Any]:
        body = self.body if isinstance(self.body, dict) else {}
        messages = body.get("messages")
        return messages if isinstance(messages, list) else []

    @property
    def model(self) -> str | None:
        body = self.body if isinstance(self.body, dict) else {}
        model = body.get("model")
        return model if isinstance(model, str) else None

    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""


@dataclass(frozen=True)
class LoggedCall:
    """Any HTTP request the server saw (model requests and the rest)."""

    method: str
    path: str
    status: int


# -------------------------------------------------------------------------------- server


class _Gone(Exception):
    """The client went away (or the server is stopping) while a reply was streaming."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection)

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionError:  # the client reset an idle keep-alive connection
            self.close_connection = True

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        return None  # the request log is the record

    def do_GET(self) -> None:
        self.server.owner._handle(self, "GET")

    def do_POST(self) -> None:
        self.server.owner._handle(self, "POST")

    # helpers used by ModelServer -------------------------------------------------------

    def read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send_json(self, code: int, payload: Any, extra: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def begin_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def send_chunk(self, data: bytes) -> None:
        if not data:
            return
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except OSError as exc:
            raise _Gone from exc

    def end_stream(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError as exc:
            raise _Gone from exc


class _HTTPServer(ThreadingHTTPServer):
    # Handler threads are joined by server_close(): every one of them is woken by stop().
    daemon_threads = False
    block_on_close = True
    owner: ModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A bug in the server, not a client going away: kept for the test to see.
        self.owner._record_error(traceback.format_exc())


class ModelServer:
    """The scripted model server. Use as a context manager or start()/stop()."""

    def __init__(self, *, model_ids: Sequence[str] = ("scripted-model",),
                 when_empty: ScriptItem = Text(UNSCRIPTED_TEXT)) -> None:
        self.model_ids = tuple(model_ids)
        self.when_empty = when_empty
        self._cond = threading.Condition()
        self._queue: deque[ScriptItem] = deque()
        self._requests: list[RecordedRequest] = []
        self._log: list[LoggedCall] = []
        self._errors: list[str] = []
        self._connections: set[socket.socket] = set()
        self._closing = False
        self._stopped = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = itertools.count(1)

    # lifecycle -----------------------------------------------------------------------

    def start(self) -> ModelServer:
        if self._httpd is not None:
            raise RuntimeError("already started")
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name="model-server", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        httpd.shutdown()  # no new connections after this returns
        with self._cond:
            self._closing = True
            self._stopped.set()
            connections = list(self._connections)
            self._cond.notify_all()
        for conn in connections:  # wakes handlers blocked reading or holding a stream
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()  # joins every handler thread
        thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (`http://127.0.0.1:PORT/v1`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def origin(self) -> str:
        """The bare origin (`http://127.0.0.1:PORT`), for clients that append `/v1`."""
        return f"http://127.0.0.1:{self.port}"

    # script --------------------------------------------------------------------------

    def script(self, *items: ScriptItem) -> None:
        """Append replies to the queue; each model request consumes one."""
        with self._cond:
            self._queue.extend(items)

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    # request log ---------------------------------------------------------------------

    def requests(self) -> list[RecordedRequest]:
        with self._cond:
            return list(self._requests)

    def unscripted(self) -> list[RecordedRequest]:
        with self._cond:
            return [r for r in self._requests if r.unscripted]

    def log(self) -> list[LoggedCall]:
        """Every HTTP request seen (model requests and others, e.g. GET /v1/models)."""
        with self._cond:
            return list(self._log)

    def wait_for(self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float,
                 what: str = "condition") -> list[RecordedRequest]:
        """Block until `predicate(requests)` holds; TimeoutError after `timeout` s."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self._requests):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    seen = [(r.index, r.path, r.state) for r in self._requests]
                    raise TimeoutError(f"model server: {what} not met in {timeout} s; "
                                       f"requests seen: {seen}")
                self._cond.wait(remaining)
            return list(self._requests)

    def wait_for_requests(self, n: int, timeout: float = 30.0) -> list[RecordedRequest]:
        """Block until at least `n` model requests have arrived."""
        return self.wait_for(lambda rs: len(rs) >= n, timeout, f"{n} requests")

    def wait_for_finished(self, n: int, timeout: float = 30.0) -> list[RecordedRequest]:
        """Block until at least `n` model requests have been answered to the end (any way)."""
        return self.wait_for(
            lambda rs: sum(r.state != "open" for r in rs) >= n, timeout, f"{n} finished"
        )

    def wait_for_hang(self, timeout: float = 30.0) -> RecordedRequest:
        """Block until a request is held open by a `Hang`; returns it."""
        rs = self.wait_for(lambda rs: any(r.hanging for r in rs), timeout, "a hanging stream")
        return next(r for r in rs if r.hanging)

    # internals -----------------------------------------------------------------------

    def errors(self) -> list[str]:
        """Tracebacks of exceptions the server raised while answering (should be empty)."""
        with self._cond:
            return list(self._errors)

    def _record_error(self, text: str) -> None:
        with self._cond:
            self._errors.append(text)
            self._cond.notify_all()

    def _track(self, conn: socket.socket) -> None:
        with self._cond:
            self._connections.add(conn)
            closing = self._closing
        if closing:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _untrack(self, conn: socket.socket) -> None:
        with self._cond:
            self._connections.discard(conn)

    def _note(self, method: str, path: str, status: int) -> None:
        with self._cond:
            self._log.append(LoggedCall(method, path, status))
            self._cond.notify_all()

    def _update(self, request: RecordedRequest, **changes: Any) -> None:
        with self._cond:
            for key, value in changes.items():
                setattr(request, key, value)
            if changes.get("state", "open") != "open":
                request.finished_at = time.monotonic()
            self._cond.notify_all()

    def _handle(self, h: _Handler, method: str) -> None:
        path = h.path.split("?", 1)[0]
        raw = h.read_body() if method == "POST" else b""
        if method == "GET" and path.rstrip("/") in ("/v1/models", "/models"):
            self._note(method, h.path, 200)
            h.send_json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
                for m in self.model_ids
            ]})
            return
        if method == "POST" and path == AnthropicMessages.COUNT_TOKENS_PATH:
            try:
                counted = json.loads(raw) if raw else {}
            except ValueError:
                counted = {}
            self._note(method, h.path, 200)
            h.send_json(200, AnthropicMessages().count_tokens(
                counted if isinstance(counted, dict) else {}))
            return
        dialect = next((d for d in DIALECTS if method == "POST" and path == d.path), None)
        if dialect is None:
            self._note(method, h.path, 404)
            h.send_json(404, {"error": {"message": f"no route {method} {path}"}})
            return
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            self._note(method, h.path, 400)
            h.send_json(400, {"error": {"message": "body is not JSON"}})
            return
        if not isinstance(body, dict):
            body = {}
        with self._cond:
            unscripted = not self._queue
            item = self.when_empty if unscripted else self._queue.popleft()
            request = RecordedRequest(
                index=len(self._requests), method=method, path=h.path,
                headers={k.lower(): v for k, v in h.headers.items()}, body=body,
                dialect=dialect.name, system_prompt=dialect.system_prompt(body),
                tool_names=dialect.tool_names(body), item=item, unscripted=unscripted,
            )
            self._requests.append(request)
            self._log.append(LoggedCall(method, h.path, 503 if isinstance(item, Status) else 200))
            self._cond.notify_all()
        try:
            self._answer(h, dialect, body, request, item)
        except (_Gone, OSError):
            self._update(request, hanging=False,
                         state="stopped" if self._closing else "disconnected")
            h.close_connection = True

    def _answer(self, h: _Handler, dialect: Dialect, body: Mapping[str, Any],
                request: RecordedRequest, item: ScriptItem) -> None:
        if isinstance(item, Status):
            extra = {} if item.retry_after is None else {"Retry-After": f"{item.retry_after:g}"}
            h.send_json(item.code, dialect.error(item), extra)
            self._update(request, state="error-reply")
            return
        response_id = f"scripted-{next(self._ids)}"
        prompt_tokens = _estimate_prompt_tokens(body)
        steps: list[Step]
        then: Reply | None = None
        first_delay = 0.0
        if isinstance(item, Empty):
            steps = []
            prompt_tokens = item.prompt_tokens if item.prompt_tokens is not None else prompt_tokens
        elif isinstance(item, Hang | Cut):
            steps, _ = plan_parts([item.before] if item.before else [])
            if isinstance(item, Hang) and item.then is not None:
                then = as_reply(item.then)
        else:
            reply = as_reply(item)
            first_delay = reply.first_token_delay
            steps, _ = plan_parts(reply.parts, start_at=first_delay)
            if reply.prompt_tokens is not None:
                prompt_tokens = reply.prompt_tokens

        streaming = dialect.wants_stream(body)
        encoder = dialect.encoder(body, response_id) if streaming else None
        # An encoder whose opening event carries the prompt size (Anthropic's message_start)
        # learns the scripted one here.
        set_prompt_tokens = getattr(encoder, "set_prompt_tokens", None)
        if callable(set_prompt_tokens):
            set_prompt_tokens(prompt_tokens)
        sent: list[Piece] = []
        out_tokens = 0
        has_call = False
        if encoder is not None:
            h.begin_stream()
            h.send_chunk(encoder.begin())
        start = time.monotonic()

        def run(plan: Sequence[Step], t0: float) -> None:
            nonlocal out_tokens, has_call
            for step in plan:
                self._pause(h, t0 + step.at - time.monotonic())
                if encoder is not None:
                    h.send_chunk(encoder.piece(step.piece))
                sent.append(step.piece)
                has_call = has_call or isinstance(step.piece, ToolCallBegin)
                if step.counts:
                    out_tokens += 1
                    self._update(request, output_tokens=out_tokens)

        run(steps, start)
        if first_delay and not steps:
            self._pause(h, start + first_delay - time.monotonic())
        if isinstance(item, Cut):
            self._update(request, state="cut")
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(socket.SHUT_RDWR)
            return
        if isinstance(item, Hang):
            self._update(request, hanging=True)
            self._hold(h, item.release)
            self._update(request, hanging=False)
            if then is not None:
                blocks = len({p.block for p in sent})
                calls = sum(isinstance(p, ToolCallBegin) for p in sent)
                then_steps, _ = plan_parts(then.parts, start_block=blocks, start_call=calls,
                                           start_at=then.first_token_delay)
                run(then_steps, time.monotonic())
        reason: FinishReason = "tool_use" if has_call else "stop"
        usage = Usage(prompt_tokens, out_tokens)
        if encoder is not None:
            h.send_chunk(encoder.end(reason, usage))
            h.end_stream()
        else:
            h.send_json(200, dialect.complete(body, response_id, sent, reason, usage))
        self._update(request, state="completed")

    def _pause(self, h: _Handler, seconds: float) -> None:
        """Wait `seconds` (pacing); _Gone at once if the client goes away or we stop."""
        deadline = time.monotonic() + seconds
        while True:
            if self._closing:
                raise _Gone
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self._peer_gone(h.connection, remaining):
                raise _Gone

    def _hold(self, h: _Handler, release: threading.Event | None) -> None:
        """Hold the stream open until `release` is set; _Gone if the client or server ends."""
        while release is None or not release.is_set():
            if self._closing or self._peer_gone(h.connection, 0.02):
                raise _Gone

    def _peer_gone(self, conn: socket.socket, timeout: float) -> bool:
        """True if the peer closed (or reset) the connection within `timeout` seconds.

        No request is pipelined behind a reply, so a readable socket means EOF or a reset;
        should a client send bytes anyway, they stay unread and the wait runs its course
        (on the stop event, so stop() still ends it)."""
        try:
            ready, _, _ = select.select([conn], [], [], timeout)
            if ready and conn.recv(1, socket.MSG_PEEK) == b"":
                return True
        except (OSError, ValueError):
            return True
        if ready:
            self._stopped.wait(timeout)
        return False


def _estimate_prompt_tokens(body: Mapping[str, Any]) -> int:
    """A deterministic stand-in for prompt tokens: ~4 characters a token of the messages."""
    messages = body.get("messages") or body.get("input") or []
    return max(1, len(json.dumps(messages)) // 4)


def iter_sse_data(raw: bytes) -> Iterator[str]:
    """The `data:` payloads of an SSE body (for the server's own tests)."""
    for event in raw.decode().split("\n\n"):
        for line in event.splitlines():
            if line.startswith("data: "):
                yield line[len("data: "):]
