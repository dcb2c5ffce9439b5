"""Codex's rollout file (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-<thread>.jsonl`) read as
the one set of session entries (notes/agent-clis.md §2.5).

Each line is `{timestamp, type, payload}`. What a line says, as entries:

- `session_meta` → the header; `turn_context` → a model change (its `model`).
- `response_item message`: role user → a user text (`<environment_context>` is Codex's own
  context, not the user's: an other entry; `<turn_aborted>` is the record of an
  interrupt: an aborted user entry); role developer → an other entry (Codex's base
  prompt and the card's instructions); role assistant → the text of the current model
  response.
- `response_item function_call` (and `custom_tool_call`) → a tool call of the current
  response; `function_call_output` → its result — unless it says "Process running with
  session ID N": `exec_command` yielded after ~10 s and the command runs on in the
  background, so the call stays in flight until its `CommandExecution` `item_completed`
  (which may come after the turn ended).
- `token_usage_record` → the usage of the current response (`usage`, never the turn or
  thread totals), timed from the previous input item (a user message, a tool output, the
  turn's start) to the record. The items of a response and its record share one `call`
  key, so the fold counts them as one model call; the next response gets a new key.
  `event_msg token_count` repeats the record and is not counted. An interrupted
  response has no record (Codex drops its partial text): it adds no usage.
- `event_msg turn_aborted` → an aborted marker (unless the `<turn_aborted>` message said
  it already); `task_complete` / `turn_aborted` close the calls still open (a
  backgrounded command excepted).

The fold clears every open tool at a user entry (pi's rule: no result by the next user
message means the call is over). A backgrounded Codex command is not over, so after each
user entry the translator re-opens it: an assistant entry of the previous call (no new
turn, no usage), carrying the stop reason the fold already has, whose tool call is the
running command stamped with its original start.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from legion_tui.costs import priced
from legion_tui.session.entries import (
    AssistantEntry,
    Entry,
    HeaderEntry,
    OtherEntry,
    ToolCall,
    ToolResultEntry,
    UserEntry,
    iso_to_ms,
)
from legion_tui.session.figures import count

__all__ = ["HEADER_VERSION", "CodexLines"]

HEADER_VERSION = 3  # a rollout is read with the newest entry semantics (ids absent: file order)

_ABORTED_PREFIX = "<turn_aborted>"
_CONTEXT_PREFIX = "<environment_context>"
# exec_command's output when it yielded with the process still running (notes §2.2).
_BACKGROUNDED = re.compile(r"Process running with session ID \d+")
_EXIT_CODE = re.compile(r"Process exited with code (-?\d+)")
_TOOL_CALLS = frozenset({"function_call", "custom_tool_call"})
_TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


@dataclass(slots=True)
class _Running:
    """A tool call the fold must see in flight: its name and when it was called."""

    name: str
    at_ms: float | None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _content_text(content: Any) -> str:
    """The text blocks of a rollout message (`input_text` / `output_text` / `text`)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") in ("input_text", "output_text", "text")
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(parts)


def _output_text(output: Any) -> str:
    """A tool output: a string, or (newer shapes) content items / `{content: …}`."""
    if isinstance(output, dict):
        output = output.get("content")
    return _content_text(output)


def _arguments(raw: Any) -> Any:
    """A call's arguments as the JSON they spell (the raw text when they spell none)."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw


def _item_summary(item: dict[str, Any]) -> str:
    """`CommandExecution: echo hi > hi.txt (exit 0)`: what a completed item was, in a line."""
    kind = _str(item.get("type")) or "item"
    if kind != "CommandExecution":
        return kind
    command = item.get("command")
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        shown = command[-1] if command[:2] == ["/bin/bash", "-lc"] else " ".join(command)
    else:
        shown = _str(command) or ""
    return f"{kind}: {shown} (exit {item.get('exit_code')})"


def _failed_output(text: str) -> bool:
    if text.rstrip().endswith("aborted by user"):
        return True
    found = _EXIT_CODE.search(text)
    return found is not None and found.group(1) != "0"


class CodexLines:
    """Translates one rollout file's lines, in order (state: the current response, the
    previous input item's time, the calls in flight). Never raises on a JSON object."""

    def __init__(self) -> None:
        self._calls = 0  # responses keyed so far; the current one is `codex-<n>`
        self._items = False  # the current response has written an item (no record yet)
        self._tool_in_call = False  # ... and one of them was a tool call
        self._last_key: str | None = None  # `call` of the last assistant entry emitted
        self._stop: str | None = None  # the stop reason the fold holds now
        self._last_input_ms: float | None = None
        self._names: dict[str, str] = {}  # call_id → tool name, for its output
        self._open: dict[str, _Running] = {}  # called, no output yet
        self._background: dict[str, _Running] = {}  # yielded, still running
        self._aborted_said = False  # this turn's <turn_aborted> message was seen
        # What the calls are priced by (legion_tui.costs): session_meta's provider (a
        # local proxy's name is matched by the model alone), the last turn_context's model.
        self._provider: str | None = None
        self._model: str | None = None

    # ----- dispatch ---------------------------------------------------------------------
    def entries(self, obj: dict[str, Any]) -> Sequence[Entry]:
        """The entries one decoded rollout line says (every field type-checked: a field of
        the wrong type reads as absent, never as an error)."""
        kind = obj.get("type")
        at_ms = iso_to_ms(obj.get("timestamp"))
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return (OtherEntry(None, None, at_ms, str(kind), None, ""),)
        if kind == "session_meta":
            self._provider = _str(payload.get("model_provider"))
            return (HeaderEntry(HEADER_VERSION, None, at_ms),)
        if kind == "turn_context":
            model = self._model = _str(payload.get("model"))
            return (OtherEntry(None, None, at_ms, "model_change", model, ""),)
        if kind == "response_item":
            return self._response_item(payload, at_ms)
        if kind == "token_usage_record":
            return (self._usage(payload, at_ms),)
        if kind == "event_msg":
            return self._event(payload, at_ms)
        return (OtherEntry(None, None, at_ms, str(kind), None, ""),)

    def _response_item(self, item: dict[str, Any], at_ms: float | None) -> Sequence[Entry]:
        kind = _str(item.get("type"))
        if kind == "message":
            return self._message(item, at_ms)
        if kind in _TOOL_CALLS:
            call_id = _str(item.get("call_id")) or _str(item.get("id")) or ""
            name = _str(item.get("name")) or "?"
            raw = item.get("arguments") if kind == "function_call" else item.get("input")
            self._names[call_id] = name
            self._open[call_id] = _Running(name, at_ms)
            self._tool_in_call = True
            return (self._assistant(at_ms, "", (ToolCall(call_id, name, _arguments(raw)),),
                                    "toolUse"),)
        if kind in _TOOL_OUTPUTS:
            self._last_input_ms = at_ms
            call_id = _str(item.get("call_id")) or ""
            name = self._names.get(call_id, "?")
            text = _output_text(item.get("output"))
            running = self._open.pop(call_id, None)
            if _BACKGROUNDED.search(text):
                # Still running: in flight until its CommandExecution completes.
                self._background[call_id] = running or _Running(name, at_ms)
                return (OtherEntry(None, None, at_ms, "backgrounded", None, f"{name}: {text}"),)
            return (ToolResultEntry(None, None, at_ms, call_id, name, text, _failed_output(text)),)
        if kind == "reasoning":
            return (OtherEntry(None, None, at_ms, "reasoning", None, ""),)
        return (OtherEntry(None, None, at_ms, str(kind), None, ""),)

    def _message(self, item: dict[str, Any], at_ms: float | None) -> Sequence[Entry]:
        role = item.get("role")
        text = _content_text(item.get("content"))
        if role == "assistant":
            return (self._assistant(at_ms, text, (), "stop"),)
        if role == "user":
            self._last_input_ms = at_ms
            if text.startswith(_CONTEXT_PREFIX):
                return (OtherEntry(None, None, at_ms, "environment_context", None, text),)
            aborted = text.startswith(_ABORTED_PREFIX)
            if aborted:
                self._aborted_said = True
            return self._user(UserEntry(None, None, at_ms, text, aborted))
        return (OtherEntry(None, None, at_ms, f"message:{role}", None, text),)

    def _event(self, event: dict[str, Any], at_ms: float | None) -> Sequence[Entry]:
        kind = _str(event.get("type"))
        if kind == "task_started":
            self._last_input_ms = at_ms
            self._aborted_said = False
            self._end_response()
            return (OtherEntry(None, None, at_ms, "task_started", None, ""),)
        if kind == "task_complete":
            self._end_response()
            out: list[Entry] = self._close_open(at_ms, aborted=False)
            error = event.get("error")
            message = _str(error.get("message")) if isinstance(error, dict) else None
            # A failed turn is told by the agent (AgentHandle.turn_error), not by an
            # error-shaped assistant entry: that would read as an empty generation.
            out.append(OtherEntry(None, None, at_ms, "error" if message else "task_complete",
                                  None, message or ""))
            return out
        if kind == "turn_aborted":
            self._end_response()
            out = self._close_open(at_ms, aborted=True)
            if self._aborted_said:
                reason = _str(event.get("reason")) or "interrupted"
                out.append(OtherEntry(None, None, at_ms, "turn_aborted", None, reason))
                return out
            self._aborted_said = True
            out.extend(self._user(UserEntry(None, None, at_ms, "", aborted=True)))
            return out
        if kind == "item_completed":
            return self._item_completed(event, at_ms)
        if kind in ("agent_message", "user_message", "error", "warning"):
            text = _str(event.get("message")) or ""
            return (OtherEntry(None, None, at_ms, str(kind), None, text),)
        return (OtherEntry(None, None, at_ms, str(kind), None, ""),)

    def _item_completed(self, event: dict[str, Any], at_ms: float | None) -> Sequence[Entry]:
        item = event.get("item")
        item = item if isinstance(item, dict) else {}
        call_id = _str(item.get("id")) or ""
        if item.get("type") != "CommandExecution" or call_id not in self._background:
            return (OtherEntry(None, None, at_ms, "item_completed", None, _item_summary(item)),)
        running = self._background.pop(call_id)
        code = item.get("exit_code")
        output = _str(item.get("aggregated_output")) or ""
        text = output or f"exit code {code}"
        failed = item.get("status") == "failed" or (isinstance(code, int) and code != 0)
        return (ToolResultEntry(None, None, at_ms, call_id, running.name, text, failed),)

    # ----- entries with state -----------------------------------------------------------
    def _key(self) -> str:
        return f"codex-{self._calls}"

    def _assistant(self, at_ms: float | None, text: str, calls: tuple[ToolCall, ...],
                   stop: str) -> AssistantEntry:
        """One item of the current response: a piece of its call, no usage of its own."""
        self._items = True
        return self._emit(AssistantEntry(
            id=None, parent_id=None, at_ms=at_ms, model=None, text=text, tool_calls=calls,
            stop_reason=stop, input=0, output=0, cache_read=0, cache_write=0, cost=0.0,
            started_ms=None, duration_ms=None, call=self._key(),
        ))

    def _usage(self, record: dict[str, Any], at_ms: float | None) -> AssistantEntry:
        """The current response's usage; the next response is another call."""
        usage = record.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        tokens = count(usage, "input_tokens")  # OpenAI's: the cached ones included
        cache_read = count(usage, "cached_input_tokens")
        cache_write = count(usage, "cache_write_input_tokens")
        output = count(usage, "output_tokens")
        cost, basis = priced(self._provider, self._model, output=output, cache_read=cache_read,
                             fresh_input=max(0, tokens - cache_read - cache_write),
                             cache_write=cache_write)  # fmt: skip
        entry = self._emit(AssistantEntry(
            id=None, parent_id=None, at_ms=at_ms, model=None, text="", tool_calls=(),
            stop_reason="toolUse" if self._tool_in_call else "stop",
            input=tokens,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            cost=cost,
            started_ms=self._last_input_ms,
            duration_ms=None,
            call=self._key(),
            priced=basis,
        ))
        self._calls += 1
        self._items = self._tool_in_call = False
        return entry

    def _emit(self, entry: AssistantEntry) -> AssistantEntry:
        self._last_key = entry.call
        self._stop = entry.stop_reason
        return entry

    def _end_response(self) -> None:
        """Items with no record (an interrupted response): they stay a call of their own."""
        if self._items:
            self._calls += 1
            self._items = self._tool_in_call = False

    def _user(self, entry: UserEntry) -> list[Entry]:
        """A user entry, then the backgrounded commands re-opened (the fold cleared them)."""
        self._open.clear()  # the fold's rule: no result by the next user message is over
        if entry.aborted:
            self._stop = "aborted"
        out: list[Entry] = [entry]
        if self._background and self._last_key is not None:
            for call_id, running in self._background.items():
                out.append(AssistantEntry(
                    id=None, parent_id=None, at_ms=running.at_ms, model=None, text="",
                    tool_calls=(ToolCall(call_id, running.name),), stop_reason=self._stop,
                    input=0, output=0, cache_read=0, cache_write=0, cost=0.0,
                    started_ms=None, duration_ms=None, call=self._last_key,
                ))
        return out

    def _close_open(self, at_ms: float | None, *, aborted: bool) -> list[Entry]:
        """The turn is over: a call with no output by now is over too (backgrounded ones
        excepted: they run on)."""
        text = "aborted" if aborted else ""
        out: list[Entry] = [
            ToolResultEntry(None, None, at_ms, call_id, running.name, text, aborted)
            for call_id, running in self._open.items()
        ]
        self._open.clear()
        return out
