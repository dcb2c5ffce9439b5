"""Fold session entries, one at a time, into a `SessionProgress` (SPEC §3).

Two kinds of figures:
- file-wide sums (tokens, cost, turns, generation time, the rate series, the model):
  every assistant message in the file was really paid for, whichever branch it is on,
  so these only ever grow by the new entry;
- active-path figures (in-flight tools, last text, verdict, stop reason, empty
  generation, recent user texts): they describe the conversation the agent is in now —
  the path from the last entry back to the root through `parentId`.

The common case is a linear append (the new entry's parent is the current leaf): the
path state is updated in O(1). When the leaf jumps to another branch, the path is
rebuilt from per-entry records kept by id — O(path length), paid only on a branch
switch. Legacy v1 files have no ids: the file order is the path.
"""

from __future__ import annotations

import sys
from collections import deque
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from legion_tui.inert import inert
from legion_tui.model_records import InFlightTool
from legion_tui.session.entries import (
    AssistantEntry,
    Entry,
    HeaderEntry,
    OtherEntry,
    ToolCall,
    ToolResultEntry,
    UserEntry,
)
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.session.verdict import extract_verdict

__all__ = ["ABORTED", "MAX_OPEN_TOOLS", "MAX_PATH_RECORDS", "RECENT_USER_TEXTS", "SessionFold"]

RECENT_USER_TEXTS = 20
# Memory is bounded by what is shown, whatever the file's size (a 500 000-entry session
# held every entry and every unanswered tool call: 500 MB, and an O(n²) in-flight list):
# the newest tool calls in flight (the stack the row and overlay show), and the newest
# entries by id (a branch switch further back starts its path where the records end; a
# thousand agents a line a second each would hold 10 000 records each after 3 h).
MAX_OPEN_TOOLS = 64
MAX_PATH_RECORDS = 2_000
MAX_SKIP_REASONS = 8  # distinct reasons kept (a figure in each could make every one new)
ABORTED = "aborted"  # pi's stopReason of an interrupted turn (the supervisor keeps it live)

PathEntry = AssistantEntry | UserEntry | ToolResultEntry | OtherEntry


class _Said(NamedTuple):
    """An assistant entry as a path record (`_slim`): what `_PathState.apply` reads of
    it, without its model, usage and timings. A tuple: a record is made a line (1 000
    agents, a line a second each), and a frozen 16-field entry took 2.2 µs to build."""

    id: str | None
    parent_id: str | None
    at_ms: float | None
    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str | None


PathRecord = _Said | UserEntry | ToolResultEntry | OtherEntry


@dataclass(slots=True)
class _PathState:
    """What the active path says about the agent right now."""

    open_tools: dict[str, InFlightTool] = field(default_factory=dict)  # call order
    last_text: str = ""
    last_stop_reason: str | None = None
    empty_generation: bool = False
    user_texts: deque[str] = field(default_factory=lambda: deque(maxlen=RECENT_USER_TEXTS))

    def apply(self, entry: PathEntry | _Said) -> None:
        if isinstance(entry, AssistantEntry | _Said):
            started_at = (entry.at_ms or 0.0) / 1000.0
            for call in entry.tool_calls:
                self.open_tools[call.id] = InFlightTool(call.id, inert(call.name), started_at)
            while len(self.open_tools) > MAX_OPEN_TOOLS:
                del self.open_tools[next(iter(self.open_tools))]  # the oldest goes
            if entry.text.strip():
                # Inert here, once: it reaches rows, the overlay, `collect`, notices.
                self.last_text = inert(entry.text)
            self.last_stop_reason = entry.stop_reason
            # provider-empty-generation: the shape, never the usage or the error text.
            self.empty_generation = (
                entry.stop_reason == "error" and not entry.text.strip() and not entry.tool_calls
            )
        elif isinstance(entry, ToolResultEntry):
            self.open_tools.pop(entry.tool_call_id, None)
        elif isinstance(entry, UserEntry):
            if entry.text or not entry.aborted:
                self.user_texts.append(entry.text)
            # pi's own rule (pi-ai transform-messages): a tool call with no result by the
            # next user message is over — its process was killed (a stop) and pi sends the
            # model "No result provided". It must not stay in flight forever.
            self.open_tools.clear()
            # A new turn has started: it has no assistant record yet.
            self.empty_generation = False
            if entry.aborted:
                self.last_stop_reason = ABORTED


@dataclass(slots=True)
class _Call:
    """The model call being summed: its key, output so far and generation span (ms)."""

    key: str | None
    output: int = 0
    start_ms: float = 0.0
    end_ms: float | None = None  # None: no span known yet
    has_segment: bool = False  # the rate series' last segment is this call's

    @property
    def duration_ms(self) -> float:
        return 0.0 if self.end_ms is None else self.end_ms - self.start_ms

    def widen(self, start_ms: float, end_ms: float) -> None:
        if self.end_ms is None:
            self.start_ms, self.end_ms = start_ms, end_ms
        else:
            self.start_ms = min(self.start_ms, start_ms)
            self.end_ms = max(self.end_ms, end_ms)


def _slim(entry: PathEntry) -> PathRecord:
    """What a path rebuild needs of an entry, without the bulky parts.

    Tool results (file contents, command output) and tool-call arguments (whole files for
    an edit) are dropped: the path only needs call ids, names, texts and stop reasons.
    """
    if isinstance(entry, ToolResultEntry):
        return replace(entry, text="") if entry.text else entry
    if isinstance(entry, AssistantEntry):
        # Its model, usage and timings too: a record is kept per line of a long session
        # (≈ 0.7 KB of a one-line answer's 1 KB, issue 35), and `_PathState.apply` reads
        # only its time, calls, text and stop reason.
        calls = tuple(ToolCall(c.id, c.name) for c in entry.tool_calls) if entry.tool_calls else ()
        stop = None if entry.stop_reason is None else sys.intern(entry.stop_reason)
        return _Said(entry.id, entry.parent_id, entry.at_ms, entry.text, calls, stop)
    if isinstance(entry, OtherEntry) and entry.text:
        return replace(entry, text="")
    return entry


class SessionFold:
    """Incremental derivation. `feed` each entry, then `finish` once per batch."""

    def __init__(self) -> None:
        self.progress = SessionProgress()
        self._path = _PathState()
        self._leaf: str | None = None  # id of the last entry with an id
        self._by_id: dict[str, PathRecord] = {}
        self._verdict_text: str | None = None  # last_text the verdict was computed from
        self._call = _Call(None)  # the model call the last assistant record belongs to

    def feed(self, entry: Entry) -> None:
        p = self.progress
        if isinstance(entry, HeaderEntry):
            p.version = entry.version
            if entry.model is not None:
                p.model = entry.model
            self._stamp(entry.at_ms)
            return
        p.entries += 1
        self._stamp(entry.at_ms)
        if isinstance(entry, AssistantEntry):
            self._sum_assistant(entry)
        elif isinstance(entry, OtherEntry):
            if entry.model is not None:
                p.model = entry.model
            if entry.reported_cost is not None:  # cumulative: the newest is the largest
                p.reported_cost = max(p.reported_cost or 0.0, entry.reported_cost)
        self._follow_path(entry)

    def skip(self, reason: str) -> None:
        p = self.progress
        p.skipped_lines += 1
        if reason in p.skip_reasons or len(p.skip_reasons) < MAX_SKIP_REASONS:
            p.skip_reasons[reason] = p.skip_reasons.get(reason, 0) + 1

    def finish(self) -> SessionProgress:
        """Publish the active-path figures into `progress` (once per batch of lines)."""
        p = self.progress
        path = self._path
        p.in_flight = list(path.open_tools.values())
        p.last_stop_reason = path.last_stop_reason
        p.empty_generation = path.empty_generation
        p.recent_user_texts = deque(path.user_texts, maxlen=RECENT_USER_TEXTS)
        if path.last_text != self._verdict_text:
            # Verdict extraction is linear in the text: redo it only when the text moved.
            p.last_text = path.last_text
            p.verdict = extract_verdict(path.last_text)
            self._verdict_text = path.last_text
        return p

    # ----- internals -------------------------------------------------------------------
    def _stamp(self, at_ms: float | None) -> None:
        if at_ms is None:
            return
        at = at_ms / 1000.0
        p = self.progress
        if p.last_entry_at is None or at > p.last_entry_at:
            p.last_entry_at = at

    def _sum_assistant(self, entry: AssistantEntry) -> None:
        p = self.progress
        usage = p.tokens
        usage.input += entry.input
        usage.output += entry.output
        usage.cache_read += entry.cache_read
        usage.cache_write += entry.cache_write
        usage.cost += entry.cost
        if entry.priced == "estimated":
            p.estimated_calls += 1
        elif entry.priced == "unknown":
            p.unpriced_calls += 1
        if entry.model is not None:
            p.model = entry.model
        call = self._call
        if entry.call is None or entry.call != call.key:
            # A new model call: one more turn, and its own generation span.
            p.turns += 1
            usage.turns = p.turns
            call = self._call = _Call(entry.call)
        call.output += entry.output
        generation = entry.generation()
        if generation is None:
            return
        start_ms, duration_ms = generation
        before = call.duration_ms
        call.widen(start_ms, start_ms + duration_ms)
        p.generation_ms += call.duration_ms - before
        usage.generation_ms = p.generation_ms
        if call.has_segment:
            p.rate_series.pop()  # the call grew: its segment is replaced, not repeated
            call.has_segment = False
        # A zero-length interval carries no rate (and would divide by zero downstream).
        if call.output > 0 and call.duration_ms > 0:
            start = call.start_ms / 1000.0
            end = start + call.duration_ms / 1000.0
            p.rate_series.append(RateSegment(start, end, call.output))
            call.has_segment = True

    def _follow_path(self, entry: PathEntry) -> None:
        if entry.id is None:
            # Legacy v1 (or an id-less entry): the file order is the path.
            self._path.apply(entry)
            return
        self._by_id[entry.id] = _slim(entry)
        if len(self._by_id) > MAX_PATH_RECORDS:
            del self._by_id[next(iter(self._by_id))]  # dicts keep insertion order: the oldest
        if entry.parent_id != self._leaf:
            self._rebuild_path(entry)
        else:
            self._path.apply(entry)
        self._leaf = entry.id

    def _rebuild_path(self, leaf: PathEntry) -> None:
        """The leaf moved to another branch: replay root → leaf from the id records."""
        chain: list[PathEntry | _Said] = [leaf]
        seen = {leaf.id}
        parent = leaf.parent_id
        while parent is not None and parent not in seen:
            node = self._by_id.get(parent)
            if node is None:
                break  # parent not in this file (forked or cut): the path starts here
            seen.add(parent)
            chain.append(node)
            parent = node.parent_id
        state = _PathState()
        for record in reversed(chain):
            state.apply(record)
        self._path = state
