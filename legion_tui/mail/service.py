"""Mail inside a hosting supervisor: the socket's `mail` op, the postman loop, and the
early return of a blocking `wait` when the caller has mail (upstream #384).

Written against narrow pieces of the supervisor: its `LegionModel`, the ledger as an
`EchoedLedger` (the host hands it `supervisor.state.mail_record.MailRecord`, whose writes
reach the model at once), and a way to a node's `AgentHandle`. The socket's `mail` op
calls `op`; a blocking `wait` races the caller's mail with `race_mail`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from legion_tui.inert import CONTROL, inert
from legion_tui.ledger.errors import MailInvalidText
from legion_tui.ledger.mailtext import BODY_MAX_BYTES
from legion_tui.ledger.ports import EventWriter, MailSender, NodeUpdater
from legion_tui.mail.envelope import (
    AddressError,
    check_mail_text,
    resolve_address,
    route_allowed,
)
from legion_tui.mail.postman import (
    TICK_SECONDS,
    MailStore,
    MailTake,
    ModelDirectory,
    Postman,
)
from legion_tui.model import MailKind, MailState, Urgency
from legion_tui.model_records import MailboxStats, Node
from legion_tui.wire.names import OpError

if TYPE_CHECKING:
    from legion_tui.state import LegionModel

__all__ = [
    "MAIL_POLL_SECONDS",
    "EchoedLedger",
    "MailLedger",
    "MailService",
    "race_mail",
]

log = logging.getLogger(__name__)

MAIL_POLL_SECONDS = 0.25  # how often a blocking wait looks at its caller's inbox (#384)
FULL_SWEEP_ROUNDS = 15  # every 15th round (30 s) ticks every node, changed or not
HOST_ROOT = "root"  # the hosting process's own node: the dashboard shows its mail

T = TypeVar("T")


class MailLedger(MailStore, MailSender, Protocol):
    """The ledger calls the service makes on top of the postman's."""

    async def mailbox_stats(self, node_id: str) -> MailboxStats: ...


class EchoedLedger(MailLedger, EventWriter, NodeUpdater, Protocol):
    """The ledger as the service is given it: the service's calls plus the event writes of
    the phase clock and the node writes of a revived stint, every write shown in the live
    model as it is made (`MailRecord`)."""

    async def refresh(self, *node_ids: str) -> None:
        """Give the model the counts and the letters of these nodes (Mail tab)."""


class Deliverable(Protocol):
    async def deliver(self, envelope: str) -> None: ...


def inert_letter(subject: str, body: str) -> tuple[str, str]:
    """The letter made inert (legion_tui.inert), the count said at the body's end. Each
    control character is shown by a stand-in of three bytes: a body that would then pass
    the size limit has them removed instead, which the note says."""
    count = len(CONTROL.findall(subject)) + len(CONTROL.findall(body))
    if not count:
        return subject, body
    note = f"\n[legion: {count} control character(s) in this letter were made visible]"
    shown = inert(body) + note
    if len(shown.encode()) > BODY_MAX_BYTES:
        shown = CONTROL.sub("", body) + note.replace("made visible", "removed")
    return inert(subject), shown


class MailService:
    def __init__(
        self,
        ledger: EchoedLedger,
        model: LegionModel,
        handle_of: Callable[[str], Deliverable | None],
        *,
        tick: float = TICK_SECONDS,
    ) -> None:
        self.ledger = ledger
        self.model = model
        self._handle_of = handle_of
        self.tick = tick
        self.postman = Postman(self.ledger, ModelDirectory(model), self._hand_over)
        # The postman's loop while the service runs (public: as the phase clock's task,
        # a collaborator may watch it end; `close` ends it).
        self.task: asyncio.Task[None] | None = None
        self._rounds = 0
        self._open: set[str] = set()  # recipients whose last tick saw PENDING/ACCEPTED mail
        self._seen: dict[str, int] = {}  # model.version after a recipient's last tick
        self._dirty: set[str] = set()

    # ----- hand-over ------------------------------------------------------------------
    async def _hand_over(self, node: Node, envelope: str) -> bool:
        """In-process: its queue; pi: `follow_up`; exec: `$LEGION_INBOX` — all behind
        `AgentHandle.deliver`. The host's own root has no handle: its letters are shown
        by the dashboard (Mail tab), which is how the host receives them. Without a
        session to read there is no evidence, so they stay ACCEPTED (upstream D3 M1)."""
        if node.id == HOST_ROOT:
            return True
        handle = self._handle_of(node.id)
        if handle is None:
            return False  # not running (yet): the letter stays PENDING
        await handle.deliver(envelope)
        return True

    # ----- the `mail` op -----------------------------------------------------------------
    async def send(
        self,
        caller_id: str,
        to: str,
        subject: str,
        body: str,
        kind: str = MailKind.REPORT.value,
        urgency: str = Urgency.NORMAL.value,
    ) -> dict[str, Any]:
        """Check, route and store one letter (PENDING); the postman does the rest. Every
        refusal happens before anything is stored."""
        try:
            mail_kind, mail_urgency = MailKind(kind), Urgency(urgency)
        except ValueError as err:
            raise OpError("BAD_REQUEST", str(err)) from err
        try:
            check_mail_text(subject, body)  # a NUL is refused, not shown
            # Made inert (SPEC §10): the letter reaches the recipient's prompt and the
            # user's screen. The limits apply again to what is stored.
            subject, body = inert_letter(subject, body)
            check_mail_text(subject, body)
        except MailInvalidText as err:
            raise OpError(err.code, str(err)) from err
        view = self.model.nodes.get(caller_id)
        if view is None:
            raise OpError("UNKNOWN_CALLER", f"caller {caller_id!r} is not a node of this legion")
        sender: Node = view.node
        nodes = {nid: v.node for nid, v in self.model.nodes.items()}
        try:
            recipient = resolve_address(sender, to, nodes)
        except AddressError as err:
            raise OpError(err.code, err.message) from err
        hint = route_allowed(
            sender.id,
            recipient.id,
            lambda nid: nodes[nid].parent_id if nid in nodes else None,
            name_of=lambda nid: nodes[nid].path if nid in nodes else nid,
        )
        if hint is not None:
            raise OpError("MAIL_ROUTE", hint)
        message = await self.ledger.send_mail(
            sender.id, recipient.id, mail_kind, mail_urgency, subject, body
        )
        # An ended recipient bounces now, so the sender hears it in this reply.
        report = await self.postman.tick(recipient.id)
        if report.seen:
            # Open letters: the loop looks for their evidence as the recipient's session
            # moves, not only at the next full sweep (30 s away).
            self._open.add(recipient.id)
        state = MailState.BOUNCED if message.id in report.bounced else MailState.PENDING
        if message.id in report.accepted:
            state = MailState.ACCEPTED
        return {
            "message_id": message.id,
            "to": recipient.id,
            "to_path": recipient.path,
            "state": state.name.lower(),
        }

    async def op(self, caller: str, req: dict[str, Any]) -> dict[str, Any]:
        """The socket's `mail` op: the request's fields checked, then `send`."""
        fields: dict[str, str] = {}
        for key in ("to", "subject", "body"):
            value = req.get(key)
            if not isinstance(value, str):
                raise OpError("MISSING_FIELD", f"field {key!r} is required (a string)")
            fields[key] = value
        for key, default in (("kind", MailKind.REPORT.value), ("urgency", Urgency.NORMAL.value)):
            value = req.get(key, default)
            if not isinstance(value, str):
                raise OpError("BAD_REQUEST", f"field {key!r} must be a string")
            fields[key] = value
        return await self.send(caller, **fields)

    # ----- the dashboard's picture -------------------------------------------------------
    async def refresh(self, *node_ids: str) -> None:
        """Give the model the five counts and the letters of these nodes (Mail tab);
        letters that move refresh their two ends by themselves (`MailRecord`)."""
        await self.ledger.refresh(*node_ids)

    # ----- the loop ----------------------------------------------------------------------
    def notify(self, recipient: str) -> None:
        """New mail for `recipient` that did not come through `send` (e.g. a phase-timeout
        notice): tick it next round even if nothing else changed."""
        self._dirty.add(recipient)

    async def round(self) -> int:
        """One pass of the loop; returns how many recipients were ticked.

        A recipient is ticked when it is marked dirty, when its last tick found open
        letters and the model changed since (new evidence, a sender moved on), and in
        every FULL_SWEEP_ROUNDS-th round regardless (mail written by another process).
        An idle legion therefore costs no ledger reads between sweeps.
        """
        self._rounds += 1
        full = self._rounds % FULL_SWEEP_ROUNDS == 1
        version = self.model.version
        ticked: list[str] = []
        for node_id in list(self.model.nodes):
            if not (
                full
                or node_id in self._dirty
                or (node_id in self._open and self._seen.get(node_id) != version)
            ):
                continue
            self._dirty.discard(node_id)
            try:
                report = await self.postman.tick(node_id)
            except Exception:
                log.exception("postman tick for %s failed", node_id)
                continue
            ticked.append(node_id)
            if report.seen:
                self._open.add(node_id)
            else:
                self._open.discard(node_id)
        settled_version = self.model.version  # our own refreshes must not re-arm the ticks
        for node_id in ticked:
            self._seen[node_id] = settled_version
        return len(ticked)

    async def _run(self) -> None:
        while True:
            await self.round()
            await asyncio.sleep(self.tick)

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.create_task(self._run(), name="postman")

    async def close(self) -> None:
        task, self.task = self.task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def race_mail(
    postman: Postman, caller: str, work: Awaitable[T], poll: float = MAIL_POLL_SECONDS
) -> T | MailTake:
    """Run `work` (a blocking `wait`) but return the caller's mail as soon as it has any.

    While it runs the postman holds the caller's letters (they stay PENDING), so the mail
    reaches the caller exactly once: here, as the call's answer. `work` is cancelled when
    mail wins — a wait never stops anything, so cancelling it only ends the waiting.
    """
    task = asyncio.ensure_future(work)
    try:
        async with postman.hold(caller):
            while True:
                if task.done():
                    return task.result()
                take = await postman.take_pending(caller)
                if take:
                    return take
                await asyncio.wait({task}, timeout=poll)
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
