"""Continuity (SPEC §6.6): opening a run and pausing it.

Same session ⇒ same run: a reopen shows the old tree and spawns nothing; nodes the last
owner left live (it died without pausing them) are orphans, swept and retired. Closing
is a pause: live nodes become `retired` with reason `session-shutdown` — written first,
before any process is touched — then every agent and verification is stopped. The
nodes found interrupted with a session to resume are `interrupted_on_open`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from legion_tui.ledger.errors import LedgerError
from legion_tui.model import SESSION_AGENT_KINDS, EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.supervisor.life.retire_reasons import (
    INTERRUPT_REASONS,
    ORPHAN_REASON,
    SHUTDOWN_REASON,
)
from legion_tui.supervisor.state.record import DECISION_EVENTS
from legion_tui.supervisor.teams.verify import verify_marker
from legion_tui.wire.names import ROOT_ID

if TYPE_CHECKING:
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.life.stops import Stops

__all__ = ["Continuity"]

log = logging.getLogger(__name__)



class Continuity:
    def __init__(self, ctx: HostContext, stops: Stops) -> None:
        self._ctx = ctx  # the host's stop grace, read at the pause
        self._model = ctx.model
        self._record = ctx.record
        self._roster = ctx.roster
        self._stops = stops
        self._cards = ctx.cards  # learn each restored node's card
        self._run = ctx.run  # its id and task: fixed for the run
        self._clock = ctx.clock
        self._previous_owner = ctx.run.owner_pid  # who owned the run before this open
        self.interrupted_on_open: list[str] = []

    async def open(self, *, reopened: bool) -> None:
        """Restore the tree of a reopened run, or create a new run's root."""
        if reopened:
            await self._restore()
        else:
            await self._create_root()

    async def pause(self) -> None:
        """Retire every live node as `session-shutdown` (written first), then stop every
        agent and running verification, end the monitors, and retire root."""
        live = [v.node.id for v, _depth in self._model.walk(ROOT_ID) if v.node.live]
        self._roster.stopping.update(live)
        # Concurrent writes land in the ledger writer's batches: one transaction for a
        # thousand pauses instead of a thousand.
        try:
            await asyncio.gather(
                *(
                    self._record.set_status(
                        node_id,
                        NodeStatus.RETIRED,
                        EventType.NODE_RETIRED,
                        {"reason": SHUTDOWN_REASON, "execution": "interrupted"},
                    )
                    for node_id in live
                )
            )
        except LedgerError as err:
            # The ledger went with its folder (an `rm -rf` under the host): the pause is
            # not recorded, but the agents must stop all the same.
            log.warning("pausing: the retirements could not be recorded (%s)", err)
        for node_id in live:
            self._model.mark_interrupted(node_id)
        handles = self._roster.detach_all()
        self._roster.stopping.update(node_id for node_id, _ in handles)
        stops: list[tuple[str, Awaitable[object]]] = [
            (node_id, h.stop(force=False, grace=self._ctx.stop_grace)) for node_id, h in handles
        ]
        stops += [
            (verify_marker(node_id), self._stops.sweep_verification(node_id, False))
            for node_id in list(self._roster.verifying)
        ]
        reports = await asyncio.gather(*(stop for _, stop in stops), return_exceptions=True)
        for (what, _), report in zip(stops, reports, strict=True):
            if isinstance(report, BaseException):
                log.warning("stopping %s failed: %s", what, report)
        monitors = self._roster.unwatch_all()
        for task in monitors:
            task.cancel()
        await asyncio.gather(*monitors, return_exceptions=True)
        if self._model.nodes.get(ROOT_ID) is not None:
            await self._record.set_status(ROOT_ID, NodeStatus.RETIRED, None, {})

    async def _create_root(self) -> None:
        now = self._clock()
        root = Node(
            id=ROOT_ID,
            run_id=self._run.run_id,
            parent_id=None,
            name=ROOT_ID,
            path=ROOT_ID,
            role="root",
            kind="sim",
            backend="inprocess",
            status=NodeStatus.RUNNING,
            pid=os.getpid(),
            task=self._run.task,
            created_at=now,
            updated_at=now,
        )
        await self._record.insert_nodes([root])

    async def _restore(self) -> None:
        """Same session ⇒ same run: show the old tree, spawn nothing. Nodes still marked
        live belonged to an owner that died without pausing them (SIGKILL): orphans."""
        nodes: list[Node] = await self._record.ledger.get_nodes(self._run.run_id)
        by_parent: dict[str | None, list[Node]] = {}
        for node in nodes:
            by_parent.setdefault(node.parent_id, []).append(node)
        ordered: list[Node] = []
        stack = list(reversed(by_parent.get(None, [])))
        while stack:
            node = stack.pop()
            ordered.append(node)
            stack.extend(reversed(by_parent.get(node.id, [])))
        for node in ordered:
            self._model.upsert(node)
            for event in await self._record.ledger.get_events(node.id, limit=200):
                self._model.add_event(event)
        # The decision facts come from the whole ledger, not the display buffer: one
        # query for the run (these are a few events per node), oldest first.
        facts = await self._record.ledger.get_events(
            None, types=[*DECISION_EVENTS, EventType.NODE_HANDLED], limit=2**62
        )
        for event in facts:
            self._record.remember(event)
        for node in ordered:
            launched = self._record.last_event(node.id, EventType.NODE_LAUNCHED)
            if launched is not None and "card" in launched.data:
                self._cards.card_of[node.id] = str(launched.data["card"])
            command = launched.data.get("command") if launched is not None else None
            if isinstance(command, list) and all(isinstance(c, str) for c in command):
                self._cards.launched_with[node.id] = command
        if ROOT_ID not in self._model.nodes:
            await self._create_root()
        else:
            await self._record.set_status(
                ROOT_ID, NodeStatus.RUNNING, None, {}, refresh=True, pid=os.getpid()
            )
        orphans = [n.id for n in ordered if n.id != ROOT_ID and n.live]
        # Settled agents whose idle process the old host held: it ended with that host
        # (or is swept below); the ledger's pid is stale, and `x` must not offer to end it.
        held = [n for n in ordered if n.status is NodeStatus.SETTLED and n.pid is not None]
        swept: list[int] = []
        if orphans or held:
            # Their children die with the old host (parent-death signal); anything that
            # escaped it still carries the run marker: sweep those before saying so.
            from legion_tui.supervisor.processes.sweep import sweep

            report = await sweep(
                root=None,
                run_id=self._run.run_id,
                node_ids=[*orphans, *map(verify_marker, orphans), *(n.id for n in held)],
                force=True,
            )
            swept = report.signalled
        for node in ordered:
            if node.id == ROOT_ID:
                continue
            if node.live:
                await self._record.event(
                    node.id,
                    EventType.NODE_ORPHANED,
                    {
                        "owner_pid": self._previous_owner,
                        "status": node.status.value,
                        "swept_pids": swept,
                    },
                )
                await self._record.set_status(
                    node.id,
                    NodeStatus.RETIRED,
                    EventType.NODE_RETIRED,
                    {"reason": ORPHAN_REASON, "execution": "interrupted"},
                )
                interrupted = True
            elif node.status is NodeStatus.RETIRED:
                interrupted = self._record.retired_reason(node.id) in INTERRUPT_REASONS
            else:
                interrupted = False
            if interrupted and node.session_file:
                self._model.mark_interrupted(node.id)
                self.interrupted_on_open.append(node.id)
        for node in held:
            await self._record.update_node(node.id, pid=None)
            if node.kind in SESSION_AGENT_KINDS:  # a message starts it again (Control.wake)
                self._model.mark_released(node.id)
