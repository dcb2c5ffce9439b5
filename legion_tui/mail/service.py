"""Mail inside a hosting supervisor: the socket's `mail` op, the postman loop, and the
early return of a blocking `wait` when the caller has mail (upstream #384).

Written against narrow pieces of the supervisor (its `LegionModel`, its ledger, a way to
find a node's `AgentHandle`) so that wiring it in is a few lines in the host:

    self.mail = MailService(self.ledger, self.model, self._handles.get)
    register_op("mail", self.mail.op)            # legion_tui.supervisor.socket.server
    self.mail.start()                            # …and `await self.mail.close()` on close

and in `wait`: `result = await race_mail(self.mail.postman, caller_id, <the wait>)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from legion_tui.ledger.errors import MailInvalidText
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
from legion_tui.model import EventType, MailKind, MailState, Urgency
from legion_tui.model_records import Event, MailboxStats, Message, Node
from legion_tui.wire.names import OpError

__all__ = [
    "MAIL_POLL_SECONDS",
    "EchoedLedger",
    "EchoingLedger",
    "MailLedger",
    "MailService",
    "race_mail",
]

log = logging.getLogger(__name__)

MAIL_POLL_SECONDS = 0.25  # how often a blocking wait looks at its caller's inbox (#384)
FULL_SWEEP_ROUNDS = 15  # every 15th round (30 s) ticks every node, changed or not
HOST_ROOT = "root"  # the hosting process's own node: the dashboard shows its mail

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")


class MailLedger(MailStore, MailSender, Protocol):
    """The ledger calls the service makes on top of the postman's."""

    async def mailbox_stats(self, node_id: str) -> MailboxStats: ...


class EchoedLedger(MailLedger, EventWriter, NodeUpdater, Protocol):
    """What `EchoingLedger` wraps, and so what it is itself: the service's calls plus the
    event writes of the phase clock and the node writes of a revived stint."""


# The event the ledger writes itself inside a mail move (same transaction), by state.
_MOVE_EVENT: dict[MailState, EventType] = {
    MailState.DELIVERED: EventType.MAIL_DELIVERED,
    MailState.BOUNCED: EventType.MAIL_BOUNCED,
    MailState.OBSOLETE: EventType.MAIL_BOUNCED,
}
ECHO_LOOKBACK = 20  # newest events of the sender searched for the one a move wrote


class EchoingLedger:
    """The ledger as the mail service, the postman and the phase clock see it: every
    event written through it also reaches the live `LegionModel` (the Events tab), so
    does every node row it updates (a revived stint's clock), and a letter that moves
    refreshes both ends' mail in the model (the Mail tab).

    `send_mail` and `move_mail` write their event inside the ledger's own transaction
    and return only the message, so the event is read back by its message id — one
    small indexed read per letter move, which happens a handful of times per letter.
    """

    def __init__(self, ledger: EchoedLedger, model: Any) -> None:  # LegionModel
        self.ledger = ledger
        self.model = model
        # Reads pass straight through and writes are the ledger's own calls followed by
        # the echo, so their signatures are the ports' (`legion_tui.ledger.ports`), not
        # copies here that could drift. `move_mail` stays a method: it must look at the
        # model before the move to tell a real move from a repeated one.
        self.get_events = ledger.get_events
        self.get_pending_mail = ledger.get_pending_mail
        self.mailbox_stats = ledger.mailbox_stats
        self.append_event = _then(ledger.append_event, self._event_written)
        self.send_mail = _then(ledger.send_mail, self._mail_sent)
        self.update_node = _then(ledger.update_node, self._node_written)

    async def _event_written(self, event: Event) -> None:
        self.model.add_event(event)

    async def _node_written(self, node: Node) -> None:
        self.model.upsert(node)

    async def _mail_sent(self, message: Message) -> None:
        await self._echo(message, EventType.MAIL_SENT)
        await self.refresh(message.from_node, message.to_node)

    async def move_mail(
        self, message_id: int, state: MailState, *, reason: str | None = None
    ) -> Message:
        before = self._state_in_model(message_id)
        moved: Message = await self.ledger.move_mail(message_id, state, reason=reason)
        if moved.delivered is not before:
            etype = _MOVE_EVENT.get(moved.delivered)
            if etype is not None:
                await self._echo(moved, etype)
            await self.refresh(moved.from_node, moved.to_node)
        return moved

    def _state_in_model(self, message_id: int) -> MailState | None:
        for view in self.model.nodes.values():
            for letter in view.messages:
                if letter.id == message_id:
                    state: MailState = letter.delivered
                    return state
        return None

    async def _echo(self, message: Message, etype: EventType) -> None:
        events = await self.ledger.get_events(message.from_node, types=[etype], limit=ECHO_LOOKBACK)
        for event in reversed(events):
            if event.data.get("message_id") == message.id:
                self.model.add_event(event)
                return

    async def refresh(self, *node_ids: str) -> None:
        """Give the model the five counts and the letters of these nodes (Mail tab)."""
        for node_id in dict.fromkeys(node_ids):
            if node_id not in self.model.nodes:
                continue
            stats = await self.ledger.mailbox_stats(node_id)
            messages = await self.ledger.get_pending_mail(node_id, tuple(MailState))
            self.model.set_mail(node_id, stats, messages)


if TYPE_CHECKING:

    def _echo_is_a_ledger(echo: EchoingLedger) -> EchoedLedger:
        # The hosts keep the echo as `Any`: this is where the type checker sees that it
        # still answers every call of the ledger it wraps (the phase clock's included).
        return echo


def _then(
    call: Callable[P, Awaitable[R]], after: Callable[[R], Awaitable[None]]
) -> Callable[P, Coroutine[Any, Any, R]]:
    """`call`, then `after` with its result; the signature stays `call`'s."""

    @functools.wraps(call)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        result = await call(*args, **kwargs)
        await after(result)
        return result

    return run


class Deliverable(Protocol):
    async def deliver(self, envelope: str) -> None: ...


class MailService:
    def __init__(
        self,
        ledger: EchoedLedger,
        model: Any,  # legion_tui.state.LegionModel
        handle_of: Callable[[str], Deliverable | None],
        *,
        tick: float = TICK_SECONDS,
    ) -> None:
        # Every ledger call goes through the echo: events and letter moves reach the
        # live model the moment they are written (one path, whoever writes).
        self.ledger = ledger if isinstance(ledger, EchoingLedger) else EchoingLedger(ledger, model)
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

    async def op(self, sup: Any, caller: str, req: dict[str, Any]) -> dict[str, Any]:
        """The socket server's handler for `mail` (signature of server.Handler)."""
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
        letters that move refresh their two ends by themselves (`EchoingLedger`)."""
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
