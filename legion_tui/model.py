"""The closed sets and plain records of a legion. No I/O.

Every closed set lives here once; the ledger's CHECK constraints, the CLI's choices and
the dashboard's glyph tables are generated from these definitions.

The records (Node, Usage, Verdict, ...) live in `model_records`: a control verb that
needs a status word or the kinds for its parser imports this module without
`dataclasses` (SPEC §8's verb budget).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Literal

__all__ = [
    "BACKENDS",
    "CARD_KINDS",
    "COUNT_KEYS",
    "KINDS",
    "LIVE_STATUSES",
    "MAIL_MOVES",
    "NODE_MOVES",
    "ROLES",
    "ROOT_REOPEN",
    "Backend",
    "CardKind",
    "EventType",
    "IllegalMailMove",
    "Kind",
    "MailKind",
    "MailState",
    "NodeStatus",
    "Role",
    "Urgency",
    "check_mail_move",
    "outcome_counts",
    "outcome_of",
]

class NodeStatus(enum.StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    BLOCKED = "blocked"
    SETTLED = "settled"
    FAILED = "failed"
    RETIRED = "retired"

    @property
    def live(self) -> bool:
        return self in LIVE_STATUSES


LIVE_STATUSES: frozenset[NodeStatus] = frozenset(
    {NodeStatus.STARTING, NodeStatus.RUNNING, NodeStatus.BLOCKED}
)

_S = NodeStatus
# Legal node moves, beside the mail ones. The supervisor's one write path checks each
# status write against the status the node will have once the writes already in flight
# land; a move not listed lost a race (a second revive of a node another writer has
# already woken, a settle after a retire) and writes nothing. A same-status write is a
# move only where listed: none is, so writing `running` twice is refused too.
NODE_MOVES: dict[NodeStatus, frozenset[NodeStatus]] = {
    _S.STARTING: frozenset({_S.RUNNING, _S.BLOCKED, _S.SETTLED, _S.FAILED, _S.RETIRED}),
    _S.RUNNING: frozenset({_S.BLOCKED, _S.SETTLED, _S.FAILED, _S.RETIRED}),
    _S.BLOCKED: frozenset({_S.RUNNING, _S.SETTLED, _S.FAILED, _S.RETIRED}),
    # settled → running: a steer or a letter woke it; → starting: resumed.
    _S.SETTLED: frozenset({_S.RUNNING, _S.STARTING, _S.FAILED, _S.RETIRED}),
    _S.FAILED: frozenset({_S.STARTING, _S.RETIRED}),
    # retired → starting: resumed. (The host's root, reopened with its run, goes back to
    # running: `ROOT_REOPEN`, the one move outside this table.)
    _S.RETIRED: frozenset({_S.STARTING}),
}
ROOT_REOPEN = (_S.RETIRED, _S.RUNNING)


# Why a stop retired a node (`node_retired`'s reason): the user's stop of it, or of its
# parent. One that ended it while it ran keeps its session for `r` (issue 31 item 3: a
# stop is a pause the user chose; discarding its work is a separate act).
STOP_REASONS = frozenset({"stop", "parent-stop"})
# Handed to its own UI (attach); legion takes it back when the UI exits.
ATTACHED_REASON = "attached"


def stopped_while_running(retired: Mapping[str, object]) -> bool:
    """Whether a `node_retired` event's data says a stop ended the node mid-run."""
    return retired.get("reason") in STOP_REASONS and retired.get("execution") == "stopped"


class EventType(enum.StrEnum):
    NODE_LAUNCHED = "node_launched"
    NODE_SETTLED = "node_settled"
    NODE_FAILED = "node_failed"
    NODE_RETIRED = "node_retired"
    NODE_ABORTED = "node_aborted"
    NODE_STEERED = "node_steered"
    NODE_BLOCKED = "node_blocked"
    NODE_HANDLED = "node_handled"
    NODE_ORPHANED = "node_orphaned"
    PHASE_CHANGE = "phase_change"
    PHASE_TIMEOUT = "phase_timeout"
    VERIFICATION_RESULT = "verification_result"
    MAIL_SENT = "mail_sent"
    MAIL_DELIVERED = "mail_delivered"
    MAIL_BOUNCED = "mail_bounced"
    BUDGET_EXCEEDED = "budget_exceeded"
    CHECKS = "checks"  # the project's checks on an agent's work: running, pass or fail


class MailKind(enum.StrEnum):
    QUESTION = "question"
    REPORT = "report"
    HANDOFF = "handoff"
    NOTICE = "notice"


class Urgency(enum.StrEnum):
    NORMAL = "normal"
    ACTION_NEEDED = "action-needed"


class MailState(enum.IntEnum):
    """`messages.delivered`: the five delivery states of one letter."""

    PENDING = 0
    ACCEPTED = 1
    BOUNCED = 2
    DELIVERED = 3
    OBSOLETE = 4

    @property
    def final(self) -> bool:
        return not MAIL_MOVES[self]


# Legal moves: 0→1|2|4, 1→3|4; 2, 3, 4 are final. The same value is a no-op.
MAIL_MOVES: dict[MailState, frozenset[MailState]] = {
    MailState.PENDING: frozenset({MailState.ACCEPTED, MailState.BOUNCED, MailState.OBSOLETE}),
    MailState.ACCEPTED: frozenset({MailState.DELIVERED, MailState.OBSOLETE}),
    MailState.BOUNCED: frozenset(),
    MailState.DELIVERED: frozenset(),
    MailState.OBSOLETE: frozenset(),
}


class IllegalMailMove(ValueError):
    """A delivery-state move that the five-state machine does not allow."""


def check_mail_move(current: MailState, target: MailState) -> bool:
    """Return True when the move changes the state, False for a same-value no-op.

    Raises IllegalMailMove for anything the machine does not allow.
    """
    if current == target:
        return False
    if target not in MAIL_MOVES[current]:
        raise IllegalMailMove(
            f"illegal mail move {current.name} ({current.value}) → {target.name} ({target.value})"
        )
    return True


Role = Literal["root", "centurion", "worker", "scout"]
ROLES: tuple[Role, ...] = ("root", "centurion", "worker", "scout")

# What a node runs as; the ledger's `kind` CHECK is built from this, so a row always names
# the agent that really ran.
Kind = Literal["sim", "pi", "claude", "codex", "exec"]
KINDS: tuple[Kind, ...] = ("sim", "pi", "claude", "codex", "exec")
# What a role card (or `--kind`) may ask for: also `auto`, which the supervisor resolves
# at launch to the configured or the first installed agent (`agents.resolve`). It is
# not a Kind: an unresolved `auto` must never reach a node or the ledger.
CardKind = Literal["auto", Kind]
CARD_KINDS: tuple[CardKind, ...] = ("auto", *KINDS)
# The agents with a session of their own to continue: an idle one is released and a
# message starts it again on its session (issue 31 item 4).
SESSION_AGENT_KINDS: frozenset[str] = frozenset({"pi", "claude", "codex"})
# How an agent's permission and approval requests are met (a card's `permissions:`, else
# `[agent] permissions`; none: each kind's own default — Claude Code asks for a tool
# outside the card's list, Codex asks nothing unless its card sets an approval policy):
# `ask` the user (the node is BLOCKED until answered), `allowed-tools` (what the card
# lists runs, anything else is denied unasked), `never-ask` (everything runs unasked).
PERMISSIONS: tuple[str, ...] = ("ask", "allowed-tools", "never-ask")

# How legion drives it: pi's RPC, Claude Code's stream-json on stdin/stdout, Codex's
# app-server JSON-RPC; `process` is a sim or an exec command as an OS child.
Backend = Literal["inprocess", "process", "pi-rpc", "claude-stream", "codex-app-server"]
BACKENDS: tuple[Backend, ...] = (
    "inprocess",
    "process",
    "pi-rpc",
    "claude-stream",
    "codex-app-server",
)


# The header's counts, in its order: every live status counts as "live".
COUNT_KEYS: tuple[str, ...] = ("live", "settled", "failed", "retired")


def outcome_counts(outcomes: Iterable[NodeStatus]) -> dict[str, int]:
    """How many of `outcomes` are live, settled, failed and retired."""
    counts = dict.fromkeys(COUNT_KEYS, 0)
    for status in outcomes:
        counts["live" if status.live else status.value] += 1
    return counts


def outcome_of(status: NodeStatus, phase: str | None) -> NodeStatus:
    """See `Node.outcome` (also for a status document, which has no Node)."""
    if status is NodeStatus.SETTLED and phase == "failed":
        return NodeStatus.FAILED
    return status

