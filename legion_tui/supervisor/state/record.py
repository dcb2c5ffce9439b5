"""The record: the one write path for everything the ledger holds about the legion —
node rows, their status, and events (letters too, through its sibling `mail_record`).

Every status change is written to the ledger first, then shown in the model, then
announced on the one change signal, so `legion status` (reading the ledger) and the
dashboard never disagree for long. The move is checked against `model.NODE_MOVES`
here and only here. The decision facts (see DECISION_EVENTS) are remembered from every
write and from the ledger on reopen, beyond the model's 200-event display buffer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from legion_tui.model import NODE_MOVES, ROOT_REOPEN, EventType, NodeStatus
from legion_tui.model_records import Event, Node
from legion_tui.wire.names import ROOT_ID

if TYPE_CHECKING:
    from legion_tui.ledger import Ledger
    from legion_tui.state import LegionModel
    from legion_tui.supervisor.state.naming import Names

__all__ = ["DECISION_EVENTS", "Record"]

log = logging.getLogger(__name__)

# Events the supervisor decides by (a resumed lead's worktree, a stop's receipt, the
# stint's verification, `--supersedes`). The model keeps only the last 200 events of a
# node for display, so these are remembered here, from every write and from the ledger.
DECISION_EVENTS = (
    EventType.NODE_LAUNCHED,
    EventType.NODE_RETIRED,
    EventType.VERIFICATION_RESULT,
)


class Record:
    """Ledger first, then model, then the change signal. `open(ledger)` before writing."""

    def __init__(self, model: LegionModel, names: Names) -> None:
        self._model = model
        self._names = names
        self._ledger: Ledger | None = None
        self._status_ahead: dict[str, NodeStatus] = {}  # see set_status
        self._last_of: dict[tuple[str, EventType], Event] = {}  # of DECISION_EVENTS
        self._handled: dict[str, list[str]] = {}  # lead id → ids of its handled children
        # Set, then replaced, on every status or event write: waiters take the current one.
        self.changed = asyncio.Event()
        self.events_written = 0
        # Told of every status move once it is written (node, the status before, the
        # event's data): the completion notices hear of endings here, whoever wrote them.
        self.moved: list[Callable[[Node, NodeStatus, dict[str, Any]], None]] = []

    def open(self, ledger: Ledger) -> None:
        self._ledger = ledger

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            raise RuntimeError("the record has no ledger yet (the supervisor is not started)")
        return self._ledger

    def notify(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    async def insert_nodes(self, nodes: Sequence[Node]) -> None:
        """New rows (a spawn's batch, a run's root), in one transaction, then the model."""
        await self.ledger.insert_nodes(list(nodes))
        for node in nodes:
            self._model.upsert(node)

    async def update_node(self, node_id: str, **fields: Any) -> Node:
        """A row's fields other than its status (a phase, a stint's clock): ledger first,
        then model. A status moves only through `set_status`, where its move is checked."""
        if "status" in fields:
            raise ValueError("a status is written by set_status, which checks the move")
        node: Node = await self.ledger.update_node(node_id, **fields)
        self._model.upsert(node)
        return node

    async def event(self, node_id: str | None, etype: EventType, data: dict[str, Any]) -> Event:
        """Append to the ledger and show in the model: the one path for events (the mail
        service and the phase clock write theirs through `mail_record.MailRecord`)."""
        event: Event = await self.ledger.append_event(node_id, etype, data)
        self.events_written += 1
        self.remember(event)
        self._model.add_event(event)
        self.notify()  # a wait may hang on an event (a fan-out's on its checks)
        return event

    def remember(self, event: Event) -> None:
        """Keep the facts decisions read (see DECISION_EVENTS); later events win."""
        if event.node_id is None:
            return
        if event.type is EventType.NODE_HANDLED:
            self._handled.setdefault(event.node_id, []).append(str(event.data.get("node_id")))
        elif event.type in DECISION_EVENTS:
            self._last_of[(event.node_id, event.type)] = event

    async def set_status(
        self,
        node_id: str,
        status: NodeStatus,
        etype: EventType | None,
        data: dict[str, Any],
        *,
        refresh: bool = False,
        interrupted: bool | None = None,
        **fields: Any,
    ) -> Node | None:
        """The one status write: ledger first, then model, then the event.

        The move is checked against NODE_MOVES from the status the node will have once
        the writes already in flight land (`_status_ahead`, claimed before the first
        await), so of two writers racing on one node the loser writes nothing and gets
        None. `refresh`: a same-status write that only updates fields (root's pid).
        `interrupted`: a retire's mark, set in the model in the same step as its status
        (set after, the tree and `legion status` read a lost node as plainly retired in
        between)."""
        ahead = self._status_ahead.get(node_id) or self._names.node(node_id).status
        reopen = node_id == ROOT_ID and (ahead, status) == ROOT_REOPEN  # the host's root
        if not (refresh and status is ahead) and not reopen and status not in NODE_MOVES[ahead]:
            log.debug("%s: %s → %s lost a race; not written", node_id, ahead, status)
            return None
        self._status_ahead[node_id] = status
        try:
            node: Node = await self.ledger.update_node(node_id, status=status, **fields)
        except BaseException:
            self._status_ahead.pop(node_id, None)  # the model's status is the truth again
            raise
        self._model.upsert(node)
        if interrupted is not None:
            self._model.mark_interrupted(node_id, interrupted)
        if etype is not None:
            await self.event(node_id, etype, data)
        if status is not ahead:
            for listener in self.moved:
                try:
                    listener(node, ahead, data)
                except Exception:  # a listener's bug must not undo a written move
                    log.exception("a listener of %s's move to %s failed", node_id, status)
        self.notify()
        return node

    # ----- decision facts -----------------------------------------------------------------
    def last_event(self, node_id: str, etype: EventType) -> Event | None:
        """The node's last event of a DECISION_EVENTS type (all of history, not the
        model's display buffer)."""
        return self._last_of.get((node_id, etype))

    def retired_reason(self, node_id: str) -> str | None:
        event = self.last_event(node_id, EventType.NODE_RETIRED)
        return None if event is None else str(event.data.get("reason"))

    def stint_verification(self, node: Node) -> Any:
        """The outcome of this stint's last verification run, if any ran."""
        event = self.last_event(node.id, EventType.VERIFICATION_RESULT)
        if event is not None and event.data.get("phase_since") == node.phase_since:
            return event.data.get("outcome")
        return None

    def handled_ids(self, node: Node) -> list[str]:
        """The children a lead has marked handled (`--supersedes`), oldest first."""
        return list(self._handled.get(node.id, ()))
