"""The ledger's calls as small Protocols, for code that is handed a ledger.

The postman, the mail service and the phase clock each use a few of `Ledger`'s methods
and say which by combining these pieces (`class TimeoutStore(MailSender, EventWriter,
EventReader, Protocol)`). Each signature is written once, here next to the ledger that
implements it, and a test can hand in a fake that has only the methods its code uses.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Protocol

from legion_tui.model import EventType, MailKind, MailState, Urgency
from legion_tui.model_records import Event, Message, Node

__all__ = ["EventReader", "EventWriter", "MailMover", "MailSender", "NodeUpdater"]


class NodeUpdater(Protocol):
    async def update_node(self, node_id: str, **fields: Any) -> Node: ...


class EventWriter(Protocol):
    async def append_event(
        self, node_id: str | None, type: EventType, data: dict[str, Any] | None = None
    ) -> Event: ...


class EventReader(Protocol):
    async def get_events(
        self,
        node_id: str | None = None,
        *,
        types: Collection[EventType] | None = None,
        limit: int = 500,
    ) -> list[Event]: ...


class MailSender(Protocol):
    async def send_mail(
        self,
        from_node: str,
        to_node: str,
        kind: MailKind,
        urgency: Urgency,
        subject: str,
        body: str,
    ) -> Message: ...


class MailMover(Protocol):
    async def get_pending_mail(
        self, to_node: str, states: Collection[MailState]
    ) -> list[Message]: ...

    async def move_mail(
        self, message_id: int, state: MailState, *, reason: str | None = None
    ) -> Message: ...


if TYPE_CHECKING:
    from legion_tui.ledger.ledger import Ledger

    def _ledger_fits_every_port(
        ledger: Ledger,
    ) -> tuple[NodeUpdater, EventWriter, EventReader, MailSender, MailMover]:
        # The hosts keep their ledger as `Any`, so nothing else would tell the type
        # checker when a Ledger signature drifts away from the ports written here.
        return ledger, ledger, ledger, ledger, ledger
