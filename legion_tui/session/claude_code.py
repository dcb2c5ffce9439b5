"""Claude Code's session file (`<config>/projects/<slug>/<session-id>.jsonl`) as entries.

notes/agent-clis.md §1.8. What the lines are, and what each becomes:

- `assistant` — ONE line per content block of a model call; the lines of one call share
  `message.id` and each repeats the call's final usage and stop reason (they are written
  when the call ends). Each line is an `AssistantEntry` with `call=message.id`, so the
  fold makes the call one turn; the usage rides on the first line of a call only. The
  request start is the timestamp of the `api-request` line the line's `requestRef` names,
  so a call's generation spans request start → its last line (the TTFT included, as pi's
  "entry − request start"). A call with `stop_reason: null` was interrupted: its usage
  is the stream's `output_tokens: 1` placeholder, so it counts 0 output and no generation
  time (it stays out of tok/s). An API error (`isApiErrorMessage`) is a failed call, stop
  "error", with the error text and no usage; any other `model: "<synthetic>"` line (the
  "No response requested." notice a resume writes) is not a model call at all.
- `user` — a prompt (string or text blocks) is a `UserEntry`; "[Request interrupted by
  user…]" marks the turn aborted; `tool_result` blocks are `ToolResultEntry`s, named
  after the `tool_use` they answer. A line of several results becomes several entries,
  chained by derived ids (`<uuid>#0`, `<uuid>#1`, … the line's own uuid on the last) so
  the active path — even rebuilt — closes every one of them.
- `attachment` — context Claude adds to the conversation. A `queued_command` is a message
  the user sent mid-turn (a steer, a letter) that reached the model: a `UserEntry`.
  The others are `OtherEntry`s: they carry no meaning here, but they sit IN the uuid
  chain (the next assistant line's parent is usually the last attachment), so they keep
  their ids or every call would look like a branch switch.
- Lines with no uuid (queue-operation, api-request, last-prompt, tools-used, cost-state,
  atis-latch, anything unknown) never touch the path: a queue operation shows as an
  `OtherEntry` without id (the transcript says what was queued), the rest are no entry.

Subagents (`isSidechain: true`): Claude Code 2.1.328 writes a subagent's conversation
to a file of its own, `<session-id>/subagents/agent-<id>.jsonl`, every line a sidechain
(tried with the scripted server: the main file had none). So a file whose first
conversation line is a sidechain IS a subagent's transcript and is read as an ordinary
one. Sidechain lines inside a main file (older versions) are handled defensively: their
calls were paid for, so their usage and generation count, but they are not the
conversation the node is in. The fold applies an id-less entry to the active path, so
such a call becomes an `AssistantEntry` that cannot move it: no id, no text, no tool
calls, and the stop reason the main chain last gave (mirrored here; "error" is given as
None so a main-chain API error does not turn into an empty generation). Their user
lines and attachments are id-less `OtherEntry`s (a `UserEntry` would close the main
chain's open Task call). The node's own figures come from its main file only: a
subagent's usage, in its own file, is not in them.

Cost: each call is priced from its usage and `message.model` by the price table
(legion_tui.costs), marked estimated; a model the table does not know leaves the call
unpriced (`$?`), never $0. Claude's own figure replaces the estimates where it has one:
`cost-state`, a cumulative `totalCostUSD` for the whole session (a resumed process goes
on from it), written when a process ends — one line after four turns in the fixture, so
the live figure comes from each turn's `result` on the stream (the backend's). A
`cost-state` with `hasUnknownModelCost` is Claude's guess at a model it does not know:
not taken.

A translator is stateful across the lines of one file (request times, tool names, the
calls whose usage was given), all kept in small bounded maps; it never raises on any
JSON object. Each line also reads sensibly alone (the transcript pager's fresh
translator per line): a tool result alone is named "?".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from legion_tui.costs import priced
from legion_tui.session.entries import (
    AssistantEntry,
    Entry,
    OtherEntry,
    ToolCall,
    ToolResultEntry,
    UserEntry,
    iso_to_ms,
    text_of,
)
from legion_tui.session.figures import BadFigure, count
from legion_tui.session.figures import cost as dollars

__all__ = ["INTERRUPTED_PREFIX", "STOP_REASONS", "ClaudeLines"]

# Claude's stop reasons in pi's vocabulary (the fold and the supervisor speak pi's).
STOP_REASONS: dict[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "refusal": "stop",
    "tool_use": "toolUse",
    "pause_turn": "toolUse",  # a server tool is still working: the call goes on
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
INTERRUPTED_PREFIX = "[Request interrupted by user"
SYNTHETIC_MODEL = "<synthetic>"

# Bounds of the cross-line memory. A call's lines come together and its api-request line
# just before; tool results follow their calls closely. These are far above what a live
# conversation needs at once, and keep a 50 MB file from growing the maps without end.
_REQUESTS_KEPT = 64
_CALLS_KEPT = 256
_TOOLS_KEPT = 1024


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _remember(memory: OrderedDict[str, Any], key: str, value: Any, limit: int) -> None:
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > limit:
        memory.popitem(last=False)


def _result_text(content: Any) -> str:
    """A tool result's content: a string, or text blocks (images and the rest skipped)."""
    return text_of(content)


class ClaudeLines:
    """Translates the lines of one Claude Code session file, in order (see module doc)."""

    def __init__(self) -> None:
        self._request_started: OrderedDict[str, float] = OrderedDict()  # api-request id → ms
        self._calls_counted: OrderedDict[str, None] = OrderedDict()  # message ids with usage
        self._tool_names: OrderedDict[str, str] = OrderedDict()  # tool_use id → name
        # What the main chain last said about the turn, as the fold's path will hold it
        # (the stop reason of its last call, or "aborted" after an interrupt).
        self._main_stop: str | None = None
        # Told by the first line with a uuid: a subagent's own file is all sidechain.
        self._subagent_file: bool | None = None

    def entries(self, obj: dict[str, Any]) -> Sequence[Entry]:
        try:
            return self._entries(obj)
        except BadFigure:
            raise  # the reader counts it, with its reason
        except Exception:  # a field of a shape never seen: skip the line, never the file
            return ()

    # ----- per record type ---------------------------------------------------------------
    def _entries(self, obj: dict[str, Any]) -> Sequence[Entry]:
        kind = obj.get("type")
        at_ms = iso_to_ms(obj.get("timestamp"))
        if kind == "api-request":
            request_id = _str(obj.get("id"))
            if request_id is not None and at_ms is not None:
                _remember(self._request_started, request_id, at_ms, _REQUESTS_KEPT)
            return ()
        if kind == "queue-operation":
            operation = _str(obj.get("operation")) or "?"
            content = text_of(obj.get("content"))
            text = f"{operation}: {content}" if content else operation
            return (OtherEntry(None, None, at_ms, "queue-operation", None, text),)
        if kind == "cost-state":
            return self._cost_state(obj, at_ms)
        uuid = _str(obj.get("uuid"))
        if uuid is None:
            return ()  # bookkeeping (last-prompt, tools-used, …): no entry
        parent = _str(obj.get("parentUuid"))
        if parent is None:
            # A compaction boundary starts a new chain but names the old one: follow it,
            # so the path (last text, recent user texts) survives the compaction.
            parent = _str(obj.get("logicalParentUuid"))
        sidechain = obj.get("isSidechain") is True
        if self._subagent_file is None:
            self._subagent_file = sidechain
        sidechain = sidechain and not self._subagent_file
        if kind == "assistant":
            return self._assistant(obj, uuid, parent, at_ms, sidechain)
        if kind == "user":
            return self._user(obj, uuid, parent, at_ms, sidechain)
        if kind == "attachment":
            return (self._attachment(obj, uuid, parent, at_ms, sidechain),)
        text = text_of(obj.get("content"))
        if sidechain:
            return (OtherEntry(None, None, at_ms, f"sidechain:{kind}", None, text),)
        return (OtherEntry(uuid, parent, at_ms, str(kind), None, text),)

    def _cost_state(self, obj: dict[str, Any], at_ms: float | None) -> Sequence[Entry]:
        total = dollars(obj.get("totalCostUSD"), "totalCostUSD")
        if obj.get("hasUnknownModelCost") is not False or not total:
            return ()  # Claude's guess at a model it does not know, or nothing spent
        text = f"${total:.4f} so far (Claude Code's own figure)"
        return (OtherEntry(None, None, at_ms, "cost-state", None, text, reported_cost=total),)

    def _assistant(
        self,
        obj: dict[str, Any],
        uuid: str,
        parent: str | None,
        at_ms: float | None,
        sidechain: bool,
    ) -> Sequence[Entry]:
        message = obj.get("message")
        message = message if isinstance(message, dict) else {}
        content = message.get("content")
        text = text_of(content)
        model = _str(message.get("model"))
        if obj.get("isApiErrorMessage") is True:
            # A failed call: the error text, no usage, no generation; the fold makes it
            # "provider-empty-generation" only if even the text is blank.
            entry = AssistantEntry(
                id=None if sidechain else uuid,
                parent_id=None if sidechain else parent,
                at_ms=at_ms,
                model=None if model == SYNTHETIC_MODEL else model,
                text="" if sidechain else text,
                tool_calls=(),
                stop_reason=self._sidechain_stop() if sidechain else "error",
                input=0,
                output=0,
                cache_read=0,
                cache_write=0,
                cost=0.0,
                started_ms=None,
                duration_ms=None,
            )
            if not sidechain:
                self._main_stop = "error"
            return (entry,)
        if model == SYNTHETIC_MODEL:
            # Not a model call (the resume notice): nothing to count, but it is a link of
            # the chain — the next line's parent.
            if sidechain:
                return ()
            return (OtherEntry(uuid, parent, at_ms, "synthetic", None, text),)
        call_id = _str(message.get("id"))
        raw_stop = message.get("stop_reason")
        interrupted = raw_stop is None
        stop = "aborted" if interrupted else STOP_REASONS.get(str(raw_stop), str(raw_stop))
        usage = message.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        first = call_id is None or call_id not in self._calls_counted
        if call_id is not None:
            _remember(self._calls_counted, call_id, None, _CALLS_KEPT)
        request = _str(obj.get("requestRef"))
        started = self._request_started.get(request) if request is not None else None
        calls = self._tool_calls(content)
        fresh = count(usage, "input_tokens") if first else 0  # Anthropic's: cache excluded
        # The interrupted call's output_tokens is the stream's placeholder (1).
        output = count(usage, "output_tokens") if first and not interrupted else 0
        cache_read = count(usage, "cache_read_input_tokens") if first else 0
        cache_write = count(usage, "cache_creation_input_tokens") if first else 0
        cost, basis = priced("anthropic", model, fresh_input=fresh, output=output,
                             cache_read=cache_read, cache_write=cache_write)  # fmt: skip
        entry = AssistantEntry(
            id=None if sidechain else uuid,
            parent_id=None if sidechain else parent,
            at_ms=at_ms,
            model=model,
            text="" if sidechain else text,
            tool_calls=() if sidechain else calls,
            stop_reason=self._sidechain_stop() if sidechain else stop,
            input=fresh,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            cost=cost,
            # No start for an interrupted call: its span would count time without tokens.
            started_ms=None if interrupted else started,
            duration_ms=None,
            call=f"sidechain:{call_id}" if sidechain and call_id else call_id,
            priced=basis,
        )
        if not sidechain:
            self._main_stop = stop
        return (entry,)

    def _sidechain_stop(self) -> str | None:
        # The main chain's own stop reason, so applying the entry changes nothing; never
        # "error" (with no text, the fold would read a provider-empty-generation).
        return None if self._main_stop == "error" else self._main_stop

    def _tool_calls(self, content: Any) -> tuple[ToolCall, ...]:
        if not isinstance(content, list):
            return ()
        calls: list[ToolCall] = []
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            call_id = _str(block.get("id"))
            if call_id is None:
                continue
            name = _str(block.get("name")) or "?"
            _remember(self._tool_names, call_id, name, _TOOLS_KEPT)
            calls.append(ToolCall(call_id, name, block.get("input")))
        return tuple(calls)

    def _user(
        self,
        obj: dict[str, Any],
        uuid: str,
        parent: str | None,
        at_ms: float | None,
        sidechain: bool,
    ) -> Sequence[Entry]:
        message = obj.get("message")
        message = message if isinstance(message, dict) else {}
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        text = text_of(content)
        if sidechain:
            kind = "sidechain:toolResult" if results else "sidechain:user"
            return (OtherEntry(None, None, at_ms, kind, None, text),)
        if obj.get("isMeta") is True:
            # Claude's own notes in the user role (caveats, command output): context the
            # user did not write — not a prompt, and no reason to close open tools.
            return (OtherEntry(uuid, parent, at_ms, "user:meta", None, text),)
        out: list[Entry] = []
        pieces = len(results) + (1 if text.strip() else 0)
        link = parent
        for index, block in enumerate(results):
            last = index == pieces - 1
            entry_id = uuid if last else f"{uuid}#{index}"
            tool_id = _str(block.get("tool_use_id")) or ""
            out.append(
                ToolResultEntry(
                    id=entry_id,
                    parent_id=link,
                    at_ms=at_ms,
                    tool_call_id=tool_id,
                    tool_name=self._tool_names.get(tool_id, "?"),
                    text=_result_text(block.get("content")),
                    is_error=block.get("is_error") is True,
                )
            )
            link = entry_id
        if text.strip() or not results:
            aborted = text.lstrip().startswith(INTERRUPTED_PREFIX)
            out.append(UserEntry(uuid, link, at_ms, text, aborted=aborted))
            if aborted:
                self._main_stop = "aborted"
        return out

    def _attachment(
        self,
        obj: dict[str, Any],
        uuid: str,
        parent: str | None,
        at_ms: float | None,
        sidechain: bool,
    ) -> Entry:
        attachment = obj.get("attachment")
        attachment = attachment if isinstance(attachment, dict) else {}
        kind = _str(attachment.get("type")) or "?"
        if kind == "queued_command" and not sidechain:
            # A message sent mid-turn that Claude handed to the model: the user's words.
            prompt = text_of(attachment.get("prompt"))
            return UserEntry(uuid, parent, at_ms, prompt)
        if sidechain:
            return OtherEntry(None, None, at_ms, f"sidechain:attachment:{kind}", None, "")
        return OtherEntry(uuid, parent, at_ms, f"attachment:{kind}", None, "")
