"""The postman: five-state mail delivery (SPEC §6.5, upstream mailbox-delivery-v1).

One `tick(recipient)` per recipient every 2 s, in this order:

1. **confirm** — look at up to 20 ACCEPTED letters (a rotating per-recipient cursor:
   the next batch is the ids above the cursor, wrapping to the start) and move one to
   DELIVERED only when its exact envelope equals a user message of the recipient's last
   20 turns (D3: no substring, no body-only match — quoting a letter is not reading it);
   otherwise a stale `Phase timeout:` notice becomes OBSOLETE (D4; DELIVERED wins).
   Confirmation runs *before* delivery, so a letter handed over in this tick stays
   ACCEPTED for at least one tick.
2. **deliver** — each PENDING letter: a stale `Phase timeout:` notice → OBSOLETE (never
   injected); recipient ended → BOUNCED; else hand it over and → ACCEPTED. Delivery never
   moves ACCEPTED → BOUNCED: a letter handed over stays handed over. An exec command's
   letter is appended to its inbox file, which is all it reads: → DELIVERED at once.

`take_pending(recipient)` is the other way out of PENDING: `wait`/`collect` return early
with the caller's own mail (upstream #384). It and `tick` hold the same per-recipient
lock, and a recipient inside a blocking call is `hold()`-ed so the postman leaves its
PENDING mail for the call to take — every letter leaves PENDING exactly once.

The postman writes no events itself: the ledger's `move_mail` writes `mail_delivered` /
`mail_bounced` (with a reason) in the same transaction as the move; ACCEPTED reuses the
`mail_sent` row written at send time (no new event types).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from legion_tui.ledger.ports import EventReader, MailMover
from legion_tui.mail.envelope import format_envelope
from legion_tui.model import SESSION_AGENT_KINDS, EventType, MailKind, MailState, NodeStatus
from legion_tui.model_records import Event, Message, Node
from legion_tui.receipts import PHASE_TIMEOUT_PREFIX

__all__ = [
    "CONFIRM_BATCH",
    "TAKE_LIMIT",
    "TERMINAL_PHASES",
    "TICK_SECONDS",
    "Directory",
    "Handover",
    "MailStore",
    "MailTake",
    "ModelDirectory",
    "Postman",
    "TickReport",
    "recipient_ended",
    "sender_ended",
]

log = logging.getLogger(__name__)

TICK_SECONDS = 2.0
CONFIRM_BATCH = 20  # ACCEPTED letters checked per recipient per tick (D3)
TAKE_LIMIT = 100  # letters one early `wait`/`collect` return carries (upstream #384)
TERMINAL_PHASES = frozenset({"done", "failed", "aborted"})

REASON_RECIPIENT_ENDED = "recipient_ended"


class MailStore(MailMover, EventReader, Protocol):
    """The part of `legion_tui.ledger.Ledger` the postman uses."""


class Directory(Protocol):
    """What the postman needs to know about nodes (the supervisor's live picture)."""

    def node(self, node_id: str) -> Node | None: ...

    def evidence(self, node_id: str) -> Collection[str] | None:
        """User texts of the recipient's last 20 turns; None when it has no session."""
        ...

    def interrupted(self, node_id: str) -> bool:
        """Retired by a session shutdown (a pause, resumable), not ended on purpose."""
        ...


# Hand a letter's envelope to a live recipient (AgentHandle.deliver behind it). Returns
# False when there is no channel right now (not started yet, paused): the letter stays
# PENDING and is tried again next tick.
Handover = Callable[[Node, str], Awaitable[bool]]


def sender_ended(node: Node) -> bool:
    """Upstream `hasEnded` (#354): terminal phase, failed, or settled/retired — a team
    that ends in the phase it timed out in has left that stint too."""
    return (
        node.status in (NodeStatus.SETTLED, NodeStatus.RETIRED, NodeStatus.FAILED)
        or node.phase in TERMINAL_PHASES
    )


def recipient_ended(node: Node, interrupted: bool) -> bool:
    """Mail to an ended node bounces (SPEC §5). A node paused by a session shutdown is
    not ended: its mail waits for `resume`; nor is a settled real agent with its session:
    its mail wakes it."""
    if node.status is NodeStatus.RETIRED:
        return not interrupted
    if node.phase in TERMINAL_PHASES:
        return True
    if node.status is NodeStatus.SETTLED and node.kind in SESSION_AGENT_KINDS:
        # A settled agent with its session goes on when told (issue 31 item 4): its mail
        # starts a turn, or starts it again on that session if it was released.
        return not (node.session_file and os.path.exists(node.session_file))
    return node.status in (NodeStatus.SETTLED, NodeStatus.FAILED)


@dataclass(slots=True)
class TickReport:
    """What one tick did (ids per outcome), for logs and tests."""

    delivered: list[int] = field(default_factory=list)
    obsolete: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    bounced: list[int] = field(default_factory=list)
    checked: list[int] = field(default_factory=list)  # ACCEPTED letters looked at
    seen: int = 0  # PENDING + ACCEPTED letters the recipient had when the tick began


@dataclass(frozen=True, slots=True)
class MailTake:
    """Letters taken by an early `wait`/`collect` return, oldest first.

    `details()` is the reply shape the socket server puts under the op's result::

        {"state": "mail", "message_ids": [3, 5], "text": "<envelope>\\n\\n<envelope>"}
    """

    messages: tuple[Message, ...]
    envelopes: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.messages)

    @property
    def text(self) -> str:
        return "\n\n".join(self.envelopes)

    def details(self) -> dict[str, Any]:
        return {
            "state": "mail",
            "message_ids": [m.id for m in self.messages],
            "text": self.text,
        }


class ModelDirectory:
    """A Directory over the dashboard's `LegionModel` (node rows + parsed sessions)."""

    def __init__(self, model: Any) -> None:  # LegionModel; Any keeps this import-light
        self._model = model

    def node(self, node_id: str) -> Node | None:
        view = self._model.nodes.get(node_id)
        return view.node if view is not None else None

    def evidence(self, node_id: str) -> Collection[str] | None:
        view = self._model.nodes.get(node_id)
        if view is None or view.node.session_file is None:
            return None
        texts: Collection[str] = view.progress.recent_user_texts
        return texts

    def interrupted(self, node_id: str) -> bool:
        view = self._model.nodes.get(node_id)
        return bool(view is not None and view.interrupted)


class Postman:
    def __init__(self, store: MailStore, directory: Directory, handover: Handover) -> None:
        self.store = store
        self.directory = directory
        self.handover = handover
        self._cursor: dict[str, int] = {}  # recipient → last ACCEPTED id checked
        self._locks: dict[str, asyncio.Lock] = {}
        self._holds: dict[str, int] = {}
        # Letters handed over whose ACCEPTED write failed: never hand them over twice.
        self._handed: set[int] = set()

    # ----- labels -----------------------------------------------------------------
    def sender_label(self, node_id: str) -> str:
        """The From line: the sender's path (stable for the run), else its id."""
        node = self.directory.node(node_id)
        return node.path if node is not None else node_id

    def envelope(self, message: Message) -> str:
        return format_envelope(message, self.sender_label(message.from_node))

    # ----- coordination -------------------------------------------------------------
    def _lock(self, recipient: str) -> asyncio.Lock:
        lock = self._locks.get(recipient)
        if lock is None:
            lock = self._locks[recipient] = asyncio.Lock()
        return lock

    @contextlib.asynccontextmanager
    async def hold(self, recipient: str) -> AsyncIterator[None]:
        """While held, the postman hands nothing to `recipient`: it is inside a blocking
        `wait`/`collect` that polls `take_pending` and returns with the mail itself."""
        self._holds[recipient] = self._holds.get(recipient, 0) + 1
        try:
            yield
        finally:
            left = self._holds[recipient] - 1
            if left:
                self._holds[recipient] = left
            else:
                del self._holds[recipient]

    def held(self, recipient: str) -> bool:
        return recipient in self._holds

    # ----- the tick -----------------------------------------------------------------
    async def tick(self, recipient: str) -> TickReport:
        report = TickReport()
        node = self.directory.node(recipient)
        if node is None:
            return report  # not a node we know (yet): never guess
        async with self._lock(recipient):
            letters = await self.store.get_pending_mail(
                recipient, (MailState.PENDING, MailState.ACCEPTED)
            )
            report.seen = len(letters)
            accepted = [m for m in letters if m.delivered is MailState.ACCEPTED]
            pending = [m for m in letters if m.delivered is MailState.PENDING]
            # One read of each sender's phase_timeout events serves both steps.
            timeout_events = _TimeoutEvents(self.store)
            await self._confirm(node, accepted, timeout_events, report)
            await self._deliver(node, pending, timeout_events, report)
        return report

    def _batch(self, recipient: str, accepted: list[Message]) -> list[Message]:
        """The next CONFIRM_BATCH letters above the cursor, wrapping to the start, so 20
        undecidable letters can delay a 21st by a tick but never block it (D3)."""
        if not accepted:
            self._cursor.pop(recipient, None)
            return []
        after = self._cursor.get(recipient, 0)
        batch = [m for m in accepted if m.id > after][:CONFIRM_BATCH]
        if not batch:
            batch = accepted[:CONFIRM_BATCH]
        self._cursor[recipient] = batch[-1].id
        return batch

    async def _confirm(
        self,
        node: Node,
        accepted: list[Message],
        phase_timeouts: _TimeoutEvents,
        report: TickReport,
    ) -> None:
        batch = self._batch(node.id, accepted)
        if not batch:
            return
        seen = self.directory.evidence(node.id)
        evidence = frozenset(seen) if seen else frozenset()
        for message in batch:
            report.checked.append(message.id)
            self._handed.discard(message.id)
            if self.envelope(message) in evidence:
                await self.store.move_mail(message.id, MailState.DELIVERED)
                report.delivered.append(message.id)
            elif await self._stale_timeout_notice(message, phase_timeouts):
                await self.store.move_mail(message.id, MailState.OBSOLETE)
                report.obsolete.append(message.id)

    async def _deliver(
        self,
        node: Node,
        pending: list[Message],
        phase_timeouts: _TimeoutEvents,
        report: TickReport,
    ) -> None:
        if not pending:
            return
        ended = recipient_ended(node, self.directory.interrupted(node.id))
        for message in pending:
            if await self._stale_timeout_notice(message, phase_timeouts):
                await self.store.move_mail(message.id, MailState.OBSOLETE)
                report.obsolete.append(message.id)
            elif ended:
                await self.store.move_mail(
                    message.id, MailState.BOUNCED, reason=REASON_RECIPIENT_ENDED
                )
                report.bounced.append(message.id)
            elif self.held(node.id):
                continue  # a blocking wait/collect takes it (take_pending)
            elif message.id in self._handed or await self._hand_over(node, message):
                await self.store.move_mail(message.id, MailState.ACCEPTED)
                self._handed.discard(message.id)
                report.accepted.append(message.id)
                if node.kind == "exec":
                    # Its inbox file is its whole session: the letter written there is
                    # delivered (no turn will ever show it as a user message).
                    await self.store.move_mail(message.id, MailState.DELIVERED)
                    report.delivered.append(message.id)

    async def _hand_over(self, node: Node, message: Message) -> bool:
        try:
            handed = await self.handover(node, self.envelope(message))
        except Exception:  # a broken channel must not stop the other letters
            log.exception("mail #%s: hand-over to %s failed", message.id, node.path)
            return False
        if handed:
            # remembered until the ACCEPTED write lands, so a failed write cannot make
            # the next tick inject the same letter twice
            self._handed.add(message.id)
        return handed

    async def _stale_timeout_notice(self, message: Message, events: _TimeoutEvents) -> bool:
        """D4: a `Phase timeout:` notice whose sender left the stint it reported on —
        phase or phase_since differ from the phase_timeout event that produced it — or
        ended. No such event (or no such sender) → not stale: never guess."""
        if message.kind is not MailKind.NOTICE or not message.subject.startswith(
            PHASE_TIMEOUT_PREFIX
        ):
            return False
        event = await events.for_message(message)
        sender = self.directory.node(message.from_node)
        if event is None or sender is None:
            return False
        if sender_ended(sender):
            return True
        return sender.phase != event.data.get("phase") or sender.phase_since != event.data.get(
            "phase_since"
        )

    # ----- early return for wait / collect -------------------------------------------
    async def take_pending(self, recipient: str, limit: int = TAKE_LIMIT) -> MailTake:
        """The recipient's PENDING letters, each returned once: moved to ACCEPTED under
        the recipient's lock before being returned, so neither a concurrent tick nor a
        second call can hand the same letter out again. Stale `Phase timeout:` notices
        are made OBSOLETE instead of returned."""
        taken: list[Message] = []
        envelopes: list[str] = []
        async with self._lock(recipient):
            pending = await self.store.get_pending_mail(recipient, (MailState.PENDING,))
            events = _TimeoutEvents(self.store)
            for message in pending:
                if len(taken) >= limit:
                    break
                if await self._stale_timeout_notice(message, events):
                    await self.store.move_mail(message.id, MailState.OBSOLETE)
                    continue
                if message.id in self._handed:
                    # already handed over by a tick whose ACCEPTED write failed: finish
                    # that move, never hand the same letter out a second time
                    await self.store.move_mail(message.id, MailState.ACCEPTED)
                    self._handed.discard(message.id)
                    continue
                moved = await self.store.move_mail(message.id, MailState.ACCEPTED)
                if moved.delivered is MailState.ACCEPTED:
                    taken.append(moved)
                    envelopes.append(self.envelope(moved))
        return MailTake(tuple(taken), tuple(envelopes))

    # ----- the loop -----------------------------------------------------------------
    async def run(
        self,
        recipients: Callable[[], Iterable[str]],
        interval: float = TICK_SECONDS,
    ) -> None:
        """Tick every recipient every `interval` seconds until cancelled. A failing tick
        is logged and retried next round; it never stops the postman (upstream lost a
        whole stint of notices to a swallowed exception)."""
        while True:
            for recipient in list(recipients()):
                try:
                    await self.tick(recipient)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("postman tick for %s failed", recipient)
            await asyncio.sleep(interval)


class _TimeoutEvents:
    """phase_timeout events per sender, read once per pass (a tick, a take_pending)."""

    def __init__(self, store: MailStore) -> None:
        self._store = store
        self._by_sender: dict[str, list[Event]] = {}

    async def for_message(self, message: Message) -> Event | None:
        events = self._by_sender.get(message.from_node)
        if events is None:
            events = await self._store.get_events(
                message.from_node, types=(EventType.PHASE_TIMEOUT,)
            )
            self._by_sender[message.from_node] = events
        for event in events:
            if event.data.get("message_id") == message.id:
                return event
        return None
