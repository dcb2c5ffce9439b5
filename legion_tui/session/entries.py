"""Read one decoded pi session line into a small typed record (no state, no I/O).

The format only grows (notes/pi-format.md): unknown entry types and unknown fields are
ignored, and a field of the wrong type reads as absent — a strange line must never stop
the parser, and `interpret` must never raise on any JSON object.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from legion_tui.costs import CostBasis
from legion_tui.session import figures
from legion_tui.session.figures import count

__all__ = [
    "AssistantEntry",
    "Entry",
    "HeaderEntry",
    "OtherEntry",
    "ToolCall",
    "ToolResultEntry",
    "UserEntry",
    "interpret",
    "iso_to_ms",
    "text_of",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: Any = None


@dataclass(frozen=True, slots=True)
class HeaderEntry:
    """The first line (`type: "session"`): not part of the entry tree."""

    version: int  # absent ⇒ 1 (legacy files)
    model: str | None  # v1 headers carry modelId
    at_ms: float | None


@dataclass(frozen=True, slots=True)
class AssistantEntry:
    id: str | None
    parent_id: str | None
    at_ms: float | None  # entry.timestamp: time of append (= message end)
    model: str | None
    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str | None
    input: int
    output: int
    cache_read: int
    cache_write: int
    cost: float
    started_ms: float | None  # message.timestamp: request start
    duration_ms: float | None  # message.durationMs (pi ≥ 1.6), when present
    # The model call this record is a piece of, when one call is written as several
    # records (Claude Code: a line per content block; Codex: the items, then the usage
    # record). Consecutive records of one call are one turn: their usage adds up and their
    # generation spans from the earliest start to the latest end. None: a call of its own.
    call: str | None = None
    # Whose figure `cost` is: the agent's own (pi's), the price table's (Claude Code and
    # Codex write tokens only), or nobody's (a model no table knows; `cost` is then 0).
    priced: CostBasis = "reported"

    def generation(self) -> tuple[float, float] | None:
        """(start ms, generation ms) of this model call, when the file tells.

        `durationMs` when present, else entry time − request start (SPEC §3). A negative
        span (clock skew between the two stamps) counts as zero.
        """
        if self.duration_ms is not None:
            duration = max(0.0, self.duration_ms)
            if self.started_ms is not None:
                return self.started_ms, duration
            if self.at_ms is not None:
                return self.at_ms - duration, duration
            return None
        if self.started_ms is not None and self.at_ms is not None:
            return self.started_ms, max(0.0, self.at_ms - self.started_ms)
        return None


@dataclass(frozen=True, slots=True)
class UserEntry:
    id: str | None
    parent_id: str | None
    at_ms: float | None
    text: str
    # The agent's own record that the user interrupted the turn (Claude Code's
    # "[Request interrupted by user]", Codex's <turn_aborted>): the turn ended aborted,
    # as a pi assistant message with stopReason "aborted" says.
    aborted: bool = False


@dataclass(frozen=True, slots=True)
class ToolResultEntry:
    id: str | None
    parent_id: str | None
    at_ms: float | None
    tool_call_id: str
    tool_name: str
    text: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class OtherEntry:
    """Any other entry (model_change, compaction, custom, unknown types...)."""

    id: str | None
    parent_id: str | None
    at_ms: float | None
    type: str
    model: str | None  # model_change's modelId
    text: str  # a human summary when the type has one (compaction summary, custom text)
    # The agent's own cost of the whole session so far (Claude Code's `cost-state`).
    reported_cost: float | None = None


Entry = HeaderEntry | AssistantEntry | UserEntry | ToolResultEntry | OtherEntry


def iso_to_ms(value: Any) -> float | None:
    """Epoch milliseconds of an ISO-8601 stamp, exact to the microsecond (naive ⇒ UTC).

    Computed from the timedelta's integer parts rather than `datetime.timestamp()` so
    that millisecond stamps give exact integers (generation time is a difference of
    two of them).
    """
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - _EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds / 1000


def text_of(content: Any) -> str:
    """The text of a message `content`: a plain string or the text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _num(value: Any) -> float | None:
    # bool is an int subclass; `true` is not a number of tokens.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _tool_calls(content: Any) -> tuple[ToolCall, ...]:
    if not isinstance(content, list):
        return ()
    calls = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            call_id = _str(block.get("id"))
            if call_id is not None:
                calls.append(
                    ToolCall(call_id, _str(block.get("name")) or "?", block.get("arguments"))
                )
    return tuple(calls)


def interpret(obj: dict[str, Any]) -> Entry:
    """The record of one session line (a JSON object); BadFigure when its usage holds a
    figure no model call reports (figures.py)."""
    kind = obj.get("type")
    at_ms = iso_to_ms(obj.get("timestamp"))
    if kind == "session":
        version = _num(obj.get("version"))
        return HeaderEntry(
            version=int(version) if version is not None else 1,
            model=_str(obj.get("modelId")),
            at_ms=at_ms,
        )
    entry_id = _str(obj.get("id"))
    parent_id = _str(obj.get("parentId"))
    message = obj.get("message")
    if kind == "message" and isinstance(message, dict):
        role = message.get("role")
        content = message.get("content")
        if role == "assistant":
            usage = message.get("usage")
            usage = usage if isinstance(usage, dict) else {}
            cost = usage.get("cost")
            total = figures.cost(cost.get("total"), "cost.total") if isinstance(cost, dict) else 0
            return AssistantEntry(
                id=entry_id,
                parent_id=parent_id,
                at_ms=at_ms,
                model=_str(message.get("model")),
                text=text_of(content),
                tool_calls=_tool_calls(content),
                stop_reason=_str(message.get("stopReason")),
                input=count(usage, "input"),
                output=count(usage, "output"),
                cache_read=count(usage, "cacheRead"),
                cache_write=count(usage, "cacheWrite"),
                cost=total,
                started_ms=_num(message.get("timestamp")),
                duration_ms=_num(message.get("durationMs")),
            )
        if role == "user":
            return UserEntry(entry_id, parent_id, at_ms, text_of(content))
        if role == "toolResult":
            return ToolResultEntry(
                id=entry_id,
                parent_id=parent_id,
                at_ms=at_ms,
                tool_call_id=_str(message.get("toolCallId")) or "",
                tool_name=_str(message.get("toolName")) or "?",
                text=text_of(content),
                is_error=message.get("isError") is True,
            )
        return OtherEntry(entry_id, parent_id, at_ms, f"message:{role}", None, text_of(content))
    summary = _str(obj.get("summary")) or text_of(obj.get("content"))
    model = _str(obj.get("modelId")) if kind == "model_change" else None
    return OtherEntry(entry_id, parent_id, at_ms, str(kind), model, summary)
