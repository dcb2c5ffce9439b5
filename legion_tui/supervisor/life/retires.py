"""One node's retire: its agent stopped (the sweep resolves only once it is done), any
`legion-verify` commands it runs ended, and only then `retired` written — children
first when a subtree goes (`retire_descendants`).

Each node's retire runs once: a second retire of a node whose retire is under way joins
it — a forced one escalates it to a forced sweep at once — and answers when it is done.
A member that had already ended keeps its own ending under its parent's stop (see
`stops.py`); a write the ledger refuses is owed (`owed_retires.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from legion_tui.mail.postman import TERMINAL_PHASES
from legion_tui.model import ATTACHED_REASON, NodeStatus
from legion_tui.model_records import Node
from legion_tui.supervisor.life.owed_retires import Owed, OwedRetires
from legion_tui.supervisor.life.retire_reasons import INTERRUPT_REASONS
from legion_tui.supervisor.teams.verify import verify_marker

if TYPE_CHECKING:
    from legion_tui.supervisor.backend import AgentHandle, SweepReport
    from legion_tui.supervisor.context import HostContext

__all__ = ["Retired", "Retires", "execution_of"]

log = logging.getLogger(__name__)


def execution_of(status: NodeStatus) -> str:
    """How a node's run ended, as the stop receipts name it."""
    return {NodeStatus.SETTLED: "success", NodeStatus.FAILED: "failed"}.get(status, "stopped")


@dataclass(frozen=True, slots=True)
class Retired:
    """What one node's retire did: the pids its sweeps left alive (should be none), and,
    when the ledger refused the `retired` write, why (the write is owed and retried)."""

    survivors: list[int]
    unrecorded: str | None = None


@dataclass(slots=True)
class _Retire:
    """One node's retire under way; later retires of the node join it."""

    node_id: str
    force: bool
    handle: AgentHandle | None  # the agent being stopped (detached from the roster)
    stage: Literal["agent", "verify", "record"] = "agent"
    task: asyncio.Task[Retired] | None = None
    # Forced sweeps a joining force stop started; each gives its survivors.
    escalations: list[asyncio.Future[list[int]]] = field(default_factory=list)


class Retires:
    def __init__(self, ctx: HostContext, owed: OwedRetires) -> None:
        self._ctx = ctx  # the host's stop grace, read at each retire
        self._model = ctx.model
        self._names = ctx.names
        self._roster = ctx.roster
        self._owed = owed  # where a write the ledger refused waits
        self._run_id = ctx.run.run_id
        self._clock = ctx.clock
        self._retiring: dict[str, _Retire] = {}

    def under_way(self, node_id: str) -> bool:
        """Whether the node's retire is running now (a later stop joins it)."""
        return node_id in self._retiring

    async def finish(self) -> None:
        """Until every retire under way has ended (the host's close)."""
        tasks = [r.task for r in self._retiring.values() if r.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)

    async def retire_descendants(self, node: Node, force: bool) -> list[tuple[Node, Retired]]:
        """Children first: deepest nodes are retired before their parents; the nodes of
        one depth level are stopped together (each stop may wait out its grace)."""
        levels: dict[int, list[str]] = {}
        for view, depth in self._model.walk(node.id):
            levels.setdefault(depth, []).append(view.node.id)
            if view.node.live:
                # From now on none of the subtree spawns (spawn checks `stopping`) or
                # settles on its own while the levels below it are being stopped.
                self._roster.stopping.add(view.node.id)
        done: list[tuple[Node, Retired]] = []
        lookup = self._names.node
        for depth in sorted(levels, reverse=True):
            level = [
                lookup(i)
                for i in levels[depth]
                if lookup(i).status is not NodeStatus.RETIRED or i in self._retiring
            ]
            reports = await asyncio.gather(*(self.retire(n, "parent-stop", force) for n in level))
            done += zip(level, reports, strict=True)
        return done

    async def sweep_verification(self, node_id: str, force: bool) -> list[int]:
        """End the node's running `legion-verify` commands, if a verification is running:
        they carry a marker of their own (`<id>.verify`), which no agent handle sweeps
        (an in-process agent has no process to sweep at all). Returns the survivors."""
        if node_id not in self._roster.verifying:
            return []
        from legion_tui.supervisor.processes.sweep import sweep

        report = await sweep(
            root=None,
            run_id=self._run_id,
            node_ids=[verify_marker(node_id)],
            force=force,
            grace=self._ctx.stop_grace,
        )
        return list(report.survivors)

    async def retire(self, node: Node, reason: str, force: bool) -> Retired:
        """Stop the agent (the sweep resolves only after it is done), then mark retired.
        A retire of the node already under way is joined (and escalated by `force`)."""
        under_way = self._retiring.get(node.id)
        if under_way is not None:
            return await self._join(under_way, force)
        if self._names.node(node.id).status is NodeStatus.RETIRED:
            return Retired([])  # a joined stop retired it while this one walked the tree
        execution = execution_of(node.status)
        # Both before the first await: nothing relaunches it, nothing else stops its agent.
        self._roster.stopping.add(node.id)
        retire = _Retire(node.id, force, self._roster.detach(node.id))
        # A member that ended on its own keeps its ending under its parent's stop.
        keeps = node.status if reason == "parent-stop" and not node.live else None
        task = asyncio.create_task(
            self._retire(node.id, reason, execution, retire, keeps), name=f"retire-{node.path}"
        )
        retire.task = task
        self._retiring[node.id] = retire

        def finished(_task: asyncio.Task[Retired], node_id: str = node.id) -> None:
            if self._retiring.get(node_id) is retire:
                del self._retiring[node_id]

        task.add_done_callback(finished)
        # Shielded: a caller that goes away (a dropped connection) does not cut the
        # retire in half; the joiners and the host's close still wait for it.
        return await asyncio.shield(task)

    async def _join(self, retire: _Retire, force: bool) -> Retired:
        if force and not retire.force:
            retire.force = True
            # The graceful sweep may be in its grace: a forced one of the same processes
            # now (the graceful one then finds them dead and ends as well).
            handle = retire.handle
            forced: Awaitable[list[int]] | None = None
            if retire.stage == "agent" and handle is not None and handle.backend != "inprocess":
                forced = _survivors(handle.stop(force=True, grace=0.0))  # a task ends at once
            elif retire.stage == "verify":
                forced = self.sweep_verification(retire.node_id, True)
            if forced is not None:
                retire.escalations.append(asyncio.ensure_future(forced))
        assert retire.task is not None
        return await asyncio.shield(retire.task)

    async def _retire(
        self,
        node_id: str,
        reason: str,
        execution: str,
        retire: _Retire,
        keeps: NodeStatus | None = None,
    ) -> Retired:
        survivors: list[int] = []
        if retire.handle is not None:
            report = await retire.handle.stop(force=retire.force, grace=self._ctx.stop_grace)
            survivors = list(report.survivors)
        retire.stage = "verify"
        survivors += await self.sweep_verification(node_id, retire.force)
        retire.stage = "record"
        for escalation in retire.escalations:
            try:
                survivors += await escalation
            except Exception as err:  # the graceful sweep above still ran to its end
                log.warning("the forced sweep of %s failed: %s", node_id, err)
        survivors = sorted(set(survivors))
        monitor = self._roster.unwatch(node_id)
        if monitor is not None:
            monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await monitor
        fields: dict[str, Any] = {}
        phase_event: dict[str, Any] | None = None
        current = self._names.node(node_id)
        handed_over = reason == ATTACHED_REASON  # its work goes on in its own UI
        if (current.machine and current.phase and current.phase not in TERMINAL_PHASES
                and not handed_over):  # fmt: skip
            # A parent retire always lands as `aborted` (SPEC §6.4).
            fields.update(phase="aborted", phase_since=self._clock())
            phase_event = {"from": current.phase, "to": "aborted", "reason": "retired"}
        data = {
            "reason": reason,
            "execution": execution,
            "force": retire.force,
            "survivors": survivors,
        }
        if keeps is not None:
            unrecorded = None
            if fields or phase_event is not None:
                owed = Owed(data, fields, phase_event, status=keeps)
                unrecorded = await self._owed.write(node_id, owed)
            # Its stop is over: nothing of it runs, and a resume of it is not refused as
            # "being stopped" (a retired node leaves `stopping` by its resume).
            self._roster.stopping.discard(node_id)
            return Retired(survivors, unrecorded)
        owed = Owed(data, fields, phase_event, interrupted=reason in INTERRUPT_REASONS)
        unrecorded = await self._owed.write(node_id, owed)
        return Retired(survivors, unrecorded)


async def _survivors(stop: Awaitable[SweepReport]) -> list[int]:
    return list((await stop).survivors)
