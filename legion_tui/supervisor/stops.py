"""Stops: retire a node and its subtree, children first, and say what really happened.

A stop marks every live node of the subtree `stopping` in the roster before its first
await (so nothing below spawns, settles or is launched while the levels under it are
being ended), stops each agent (the sweep resolves only once it is done), ends any
`legion-verify` commands the node runs, and only then writes `retired`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from legion_tui import receipts
from legion_tui.mail.postman import TERMINAL_PHASES
from legion_tui.model import EventType, Node, NodeStatus
from legion_tui.supervisor.verify import verify_marker

if TYPE_CHECKING:
    from legion_tui.state import Clock, LegionModel
    from legion_tui.supervisor.naming import Names
    from legion_tui.supervisor.record import Record
    from legion_tui.supervisor.roster import Roster

__all__ = ["Stops", "execution_of"]

log = logging.getLogger(__name__)


def execution_of(status: NodeStatus) -> str:
    """How a node's run ended, as the stop receipts name it."""
    return {NodeStatus.SETTLED: "success", NodeStatus.FAILED: "failed"}.get(status, "stopped")


class Stops:
    def __init__(
        self,
        model: LegionModel,
        names: Names,
        record: Record,
        roster: Roster,
        *,
        run_id: str,
        clock: Clock,
        grace: Callable[[], float],
    ) -> None:
        self._model = model
        self._names = names
        self._record = record
        self._roster = roster
        self._run_id = run_id
        self._clock = clock
        self._grace = grace  # the host's stop grace, read at each stop

    async def stop(self, caller_id: str, name: str, *, force: bool = False) -> str:
        """SPEC §6.3 stop: retire the node and its subtree, children first; the receipt
        says what really happened."""
        if name == "all":
            return await self._stop_all(caller_id, force)
        target = self._names.resolve(caller_id, name)
        return await self._stop_target(target, force)

    async def _stop_all(self, caller_id: str, force: bool) -> str:
        node = self._names.node
        caller = self._names.caller(caller_id)
        lines: list[str] = []
        settled: dict[str, list[str]] = {}
        for child_id in list(self._model.children(caller.id)):
            child = node(child_id)
            if child.live:  # a stop is in progress: it no longer settles on its own
                self._roster.stopping.add(child.id)
            survivors = await self.retire_descendants(child, force)
            child = node(child_id)
            if child.status is NodeStatus.RETIRED:
                continue
            execution = execution_of(child.status)
            survivors += await self.retire(child, "stop", force)
            if child.live:
                lines.append(receipts.stopped(child.name))
            else:
                settled.setdefault(execution, []).append(child.name)
            if survivors:
                lines.append(receipts.stop_survivors(child.name, survivors))
        for execution, names in settled.items():
            lines.append(receipts.retired_settled(names, execution))
        return "\n".join(lines) if lines else receipts.nothing_to_stop()

    async def _stop_target(self, target: Node, force: bool) -> str:
        if target.live:  # a stop is in progress: it no longer settles on its own
            self._roster.stopping.add(target.id)
        survivors = await self.retire_descendants(target, force)
        target = self._names.node(target.id)
        if target.status is NodeStatus.RETIRED:
            event = self._record.last_event(target.id, EventType.NODE_RETIRED)
            execution = str(event.data.get("execution", "unknown")) if event else "unknown"
            at = event.at if event else target.updated_at
            text = receipts.already_retired(
                target.name, execution, time.strftime("%H:%M:%S", time.localtime(at))
            )
        else:
            was_live = target.live
            execution = execution_of(target.status)
            survivors += await self.retire(target, "stop", force)
            if was_live:
                text = receipts.stopped(target.name)
            else:
                text = receipts.retired_settled([target.name], execution)
        if survivors:
            text += "\n" + receipts.stop_survivors(target.name, survivors)
        return text

    async def retire_descendants(self, node: Node, force: bool) -> list[int]:
        """Children first: deepest nodes are retired before their parents; the nodes of
        one depth level are stopped together (each stop may wait out its grace)."""
        levels: dict[int, list[str]] = {}
        for view, depth in self._model.walk(node.id):
            levels.setdefault(depth, []).append(view.node.id)
            if view.node.live:
                # From now on none of the subtree spawns (spawn checks `stopping`) or
                # settles on its own while the levels below it are being stopped.
                self._roster.stopping.add(view.node.id)
        survivors: list[int] = []
        lookup = self._names.node
        for depth in sorted(levels, reverse=True):
            level = [i for i in levels[depth] if lookup(i).status is not NodeStatus.RETIRED]
            reports = await asyncio.gather(
                *(self.retire(lookup(i), "parent-stop", force) for i in level)
            )
            for report in reports:
                survivors += report
        return survivors

    async def sweep_verification(self, node_id: str, force: bool) -> list[int]:
        """End the node's running `legion-verify` commands, if a verification is running:
        they carry a marker of their own (`<id>.verify`), which no agent handle sweeps
        (an in-process agent has no process to sweep at all). Returns the survivors."""
        if node_id not in self._roster.verifying:
            return []
        from legion_tui.supervisor.sweep import sweep

        report = await sweep(
            root_pid=None,
            pgid=None,
            run_id=self._run_id,
            node_ids=[verify_marker(node_id)],
            force=force,
            grace=self._grace(),
        )
        return list(report.survivors)

    async def retire(self, node: Node, reason: str, force: bool) -> list[int]:
        """Stop the agent (the sweep resolves only after it is done), then mark retired."""
        execution = execution_of(node.status)
        self._roster.stopping.add(node.id)
        handle = self._roster.detach(node.id)
        survivors: list[int] = []
        if handle is not None:
            report = await handle.stop(force=force, grace=self._grace())
            survivors = list(report.survivors)
        survivors += await self.sweep_verification(node.id, force)
        monitor = self._roster.unwatch(node.id)
        if monitor is not None:
            monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await monitor
        fields: dict[str, Any] = {}
        current = self._names.node(node.id)
        if current.machine and current.phase and current.phase not in TERMINAL_PHASES:
            # A parent retire always lands as `aborted` (SPEC §6.4).
            fields.update(phase="aborted", phase_since=self._clock())
            await self._record.event(
                node.id,
                EventType.PHASE_CHANGE,
                {"from": current.phase, "to": "aborted", "reason": "retired"},
            )
        await self._record.set_status(
            node.id,
            NodeStatus.RETIRED,
            EventType.NODE_RETIRED,
            {"reason": reason, "execution": execution, "force": force, "survivors": survivors},
            **fields,
        )
        self._model.mark_interrupted(node.id, False)
        return survivors
