"""The record's sibling for mail: the ledger as the mail service, the postman and the
phase clock write it. Their events and node rows go through `Record` (ledger first, then
model, then the change signal — the one write path); their letters go to the ledger here
and reach the live model at once: the event the ledger wrote inside the letter's own
transaction (the sender's Events tab) and both ends' counts and letters (the Mail tab).

`send_mail` and `move_mail` write their event inside the ledger's transaction and return
only the message, so the event is read back by its message id — one small indexed read
per letter move, which happens a handful of times per letter.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from legion_tui.model import EventType, MailKind, MailState, Urgency
from legion_tui.model_records import Event, MailboxStats, Message, Node

if TYPE_CHECKING:
    from legion_tui.state import LegionModel
    from legion_tui.supervisor.state.record import Record

__all__ = ["ECHO_LOOKBACK", "MailRecord"]

# The event the ledger writes itself inside a mail move (same transaction), by state.
_MOVE_EVENT: dict[MailState, EventType] = {
    MailState.DELIVERED: EventType.MAIL_DELIVERED,
    MailState.BOUNCED: EventType.MAIL_BOUNCED,
    MailState.OBSOLETE: EventType.MAIL_BOUNCED,
}
ECHO_LOOKBACK = 20  # newest events of the sender searched for the one a move wrote


class MailRecord:
    """What the mail service, the postman and the phase clock are given as their ledger
    (`mail.service.EchoedLedger`): reads pass through, every write reaches the model."""

    def __init__(self, record: Record, model: LegionModel) -> None:
        self._record = record
        self._model = model

    # ----- reads: the ledger's own ---------------------------------------------------------
    async def get_events(
        self,
        node_id: str | None = None,
        *,
        types: Collection[EventType] | None = None,
        limit: int = 500,
    ) -> list[Event]:
        return await self._record.ledger.get_events(node_id, types=types, limit=limit)

    async def get_pending_mail(self, to_node: str, states: Collection[MailState]) -> list[Message]:
        return await self._record.ledger.get_pending_mail(to_node, states)

    async def mailbox_stats(self, node_id: str) -> MailboxStats:
        return await self._record.ledger.mailbox_stats(node_id)

    # ----- events and rows: through the record -------------------------------------------
    async def append_event(
        self, node_id: str | None, type: EventType, data: dict[str, Any] | None = None
    ) -> Event:
        return await self._record.event(node_id, type, data or {})

    async def update_node(self, node_id: str, **fields: Any) -> Node:
        return await self._record.update_node(node_id, **fields)

    # ----- letters ---------------------------------------------------------------------
    async def send_mail(
        self,
        from_node: str,
        to_node: str,
        kind: MailKind,
        urgency: Urgency,
        subject: str,
        body: str,
    ) -> Message:
        message = await self._record.ledger.send_mail(
            from_node, to_node, kind, urgency, subject, body
        )
        await self._echo(message, EventType.MAIL_SENT)
        await self.refresh(message.from_node, message.to_node)
        return message

    async def move_mail(
        self, message_id: int, state: MailState, *, reason: str | None = None
    ) -> Message:
        # Looked at before the move, to tell a real move from a repeated one.
        before = self._state_in_model(message_id)
        moved = await self._record.ledger.move_mail(message_id, state, reason=reason)
        if moved.delivered is not before:
            etype = _MOVE_EVENT.get(moved.delivered)
            if etype is not None:
                await self._echo(moved, etype)
            await self.refresh(moved.from_node, moved.to_node)
        return moved

    async def refresh(self, *node_ids: str) -> None:
        """Give the model the five counts and the letters of these nodes (Mail tab)."""
        ledger = self._record.ledger
        for node_id in dict.fromkeys(node_ids):
            if node_id not in self._model.nodes:
                continue
            stats = await ledger.mailbox_stats(node_id)
            messages = await ledger.get_pending_mail(node_id, tuple(MailState))
            self._model.set_mail(node_id, stats, messages)

    def _state_in_model(self, message_id: int) -> MailState | None:
        for view in self._model.nodes.values():
            for letter in view.messages:
                if letter.id == message_id:
                    return letter.delivered
        return None

    async def _echo(self, message: Message, etype: EventType) -> None:
        """The event the ledger wrote with the letter, into the model (it was written,
        so only shown here: the record's own count is of the events it appended)."""
        events = await self._record.ledger.get_events(
            message.from_node, types=[etype], limit=ECHO_LOOKBACK
        )
        for event in reversed(events):
            if event.data.get("message_id") == message.id:
                self._model.add_event(event)
                return

