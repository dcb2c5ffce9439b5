"""The plain records of a legion, beside the closed sets of `legion_tui.model`. A module
of their own so that the closed sets — what a control verb needs to build its parser or
print a status word — import without `dataclasses` (which brings `inspect`) and the
records' generated methods: ~15 ms of a verb's ~30 ms budget above
the bare interpreter (SPEC §8).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from legion_tui.model import (
    LIVE_STATUSES,
    Backend,
    EventType,
    Kind,
    MailKind,
    MailState,
    NodeStatus,
    Role,
    Urgency,
    outcome_of,
)

__all__ = ["Event", "InFlightTool", "MailboxStats", "Message", "Node", "Usage", "Verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The `{"ok": bool, "reason": ...}` object an agent ends with."""

    ok: bool
    reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(slots=True)
class Usage:
    """Token counts and cost; also the ledger's `usage` row (plus node id)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    generation_ms: float = 0.0
    turns: int = 0

    def copy(self) -> Usage:
        """A copy of every field, built directly: `dataclasses.replace` took ten times as
        long (2.4 against 0.2 µs), and the ledger's writer copies the usage each session
        line reports (a thousand streaming agents: a thousand a second)."""
        return Usage(self.input, self.output, self.cache_read, self.cache_write, self.cost,
                     self.generation_ms, self.turns)  # fmt: skip


@dataclass(frozen=True, slots=True)
class InFlightTool:
    """A tool call of the active path without a result yet."""

    id: str
    name: str
    started_at: float  # epoch seconds
    parent_id: str | None = None  # parentToolCallId, when RPC events give it


@dataclass(slots=True)
class Node:
    """One agent of the legion: a `nodes` row."""

    id: str
    run_id: str
    parent_id: str | None
    name: str
    path: str
    role: Role
    kind: Kind
    backend: Backend
    status: NodeStatus = NodeStatus.STARTING
    phase: str | None = None
    phase_since: float | None = None
    rework_count: int = 0
    machine: str | None = None  # declared phase machine, JSON
    session_file: str | None = None
    pid: int | None = None
    task: str = ""
    verdict: str | None = None  # verdict JSON
    error: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    # One attempt of a fan-out (issue 34): the group's name, shared by the attempts at one
    # task, siblings under one parent. Last: a column v5 added to the ledger.
    attempt_group: str | None = None

    @property
    def live(self) -> bool:
        return self.status in LIVE_STATUSES

    @property
    def outcome(self) -> NodeStatus:
        """The status every view shows: a team whose agent settled in its machine's
        `failed` phase has failed (its glyph, colour and the header's ✗ count), though
        its agent ended without an error."""
        return outcome_of(self.status, self.phase)

    @property
    def simulated(self) -> bool:
        """A simulated agent: its edits, cost and verdict are pretend, so every view
        labels it. The host's root is recorded as `sim` but is no agent (it is the user)."""
        return self.kind == "sim" and self.role != "root"

    @property
    def verdict_data(self) -> Any:
        """The stored verdict JSON, parsed; None when there is none or it is not JSON."""
        if not self.verdict:
            return None
        try:
            return json.loads(self.verdict)
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    node_id: str | None
    type: EventType
    data: dict[str, Any]
    at: float


@dataclass(frozen=True, slots=True)
class Message:
    id: int
    from_node: str
    to_node: str
    kind: MailKind
    urgency: Urgency
    subject: str
    body: str
    delivered: MailState
    delivered_at: float | None
    created_at: float


@dataclass(frozen=True, slots=True)
class MailboxStats:
    pending: int = 0
    accepted: int = 0
    delivered: int = 0
    bounced: int = 0
    obsolete: int = 0
