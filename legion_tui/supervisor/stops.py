"""Stops: retire a node and its subtree, children first, and say what really happened.

A stop marks every live node of the subtree `stopping` in the roster before its first
await (so nothing below spawns, settles or is launched while the levels under it are
being ended), stops each agent (the sweep resolves only once it is done), ends any
`legion-verify` commands the node runs, and only then writes `retired`.

Each node's retire runs once: a second stop of a node whose retire is under way (a force
stop during a graceful stop's grace, a parent's stop over a member's) joins it — a forced
one escalates it to a forced sweep at once — and answers when it is done; one
`node_retired`. A retire the ledger refuses (a full disk) still stands: the agent is
stopped, the model says retired, the receipt says it is not recorded yet, and the write
is retried until it lands (at the latest as the host closes, before the pause decides who
was interrupted). The host never closes under a stop: `close()` lets the stops under way
finish first and refuses new ones.

A member that had already ended (✓ settled, ✗ failed) keeps its own ending when its
parent is stopped: its agent — which idles after its final answer, waiting for a letter —
is stopped all the same, but "retired" would overwrite what it did with what its parent's
stop did (a failure vanished from the header's ✗ count). Only a stop that names the node
itself retires an ended node (SPEC §6.3: "Retired 1 already-settled child").
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from legion_tui import receipts
from legion_tui.ledger.errors import LedgerError
from legion_tui.mail.postman import TERMINAL_PHASES
from legion_tui.model import EventType, Node, NodeStatus
from legion_tui.ops import OpError
from legion_tui.supervisor.verify import verify_marker

if TYPE_CHECKING:
    from legion_tui.state import Clock, LegionModel
    from legion_tui.supervisor.backend import AgentHandle, SweepReport
    from legion_tui.supervisor.naming import Names
    from legion_tui.supervisor.record import Record
    from legion_tui.supervisor.roster import Roster

__all__ = ["RETRY_OWED_EVERY", "Retired", "Stops", "execution_of"]

log = logging.getLogger(__name__)

# How often a retire the ledger refused is tried again while the host runs.
RETRY_OWED_EVERY = 1.0


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
    """One node's retire under way; later stops of the node join it."""

    node_id: str
    force: bool
    handle: AgentHandle | None  # the agent being stopped (detached from the roster)
    stage: Literal["agent", "verify", "record"] = "agent"
    task: asyncio.Task[Retired] | None = None
    # Forced sweeps a joining force stop started; each gives its survivors.
    escalations: list[asyncio.Future[list[int]]] = field(default_factory=list)


@dataclass(slots=True)
class _Owed:
    """The writes of a retire the ledger refused; the model already shows them."""

    data: dict[str, Any]
    fields: dict[str, Any]
    phase_event: dict[str, Any] | None  # the team's `phase_change` to aborted, if unwritten
    error: str | None = None  # the ledger's refusal, once one happened
    # The status written: retired, or the ending an ended member keeps (then no
    # `node_retired`: its `node_settled`/`node_failed` stays its last word — the results
    # a parent collects read it).
    status: NodeStatus = NodeStatus.RETIRED


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
        self._retiring: dict[str, _Retire] = {}
        self._owed: dict[str, _Owed] = {}
        self._retry: asyncio.Task[None] | None = None
        self._ops = 0  # stop requests being answered now
        self._quiet = asyncio.Event()  # set while none is
        self._quiet.set()
        self._closing = False

    async def stop(self, caller_id: str, name: str, *, force: bool = False) -> str:
        """SPEC §6.3 stop: retire the node and its subtree, children first; the receipt
        says what really happened."""
        if self._closing:
            raise OpError("CLOSED", "the supervisor is shutting down")
        self._ops += 1
        self._quiet.clear()
        try:
            if name == "all":
                return await self._stop_all(caller_id, force)
            target = self._names.resolve(caller_id, name)
            return await self._stop_target(target, force)
        finally:
            self._ops -= 1
            if not self._ops:
                self._quiet.set()

    async def idle(self) -> None:
        """Until no stop request is being answered (a host about to report its tree)."""
        await self._quiet.wait()

    async def close(self) -> None:
        """The host is closing: refuse new stops, let those under way finish (a `stop all`
        must not be cut in half by the exit it causes), and write what the ledger owes
        before the pause decides which live nodes were interrupted."""
        self._closing = True
        await self._quiet.wait()
        under_way = [r.task for r in self._retiring.values() if r.task is not None]
        await asyncio.gather(*under_way, return_exceptions=True)
        if self._retry is not None:
            self._retry.cancel()
            await asyncio.gather(self._retry, return_exceptions=True)
            self._retry = None
        await self.flush_owed()
        for node_id, owed in self._owed.items():
            log.error(
                "%s was stopped, but the ledger never recorded it (%s): the next open of "
                "this session will list it as interrupted",
                self._names.node(node_id).path,
                owed.error,
            )

    def owed(self) -> list[str]:
        """The ids of the nodes whose retire the ledger has not got yet."""
        return list(self._owed)

    async def _stop_all(self, caller_id: str, force: bool) -> str:
        node = self._names.node
        caller = self._names.caller(caller_id)
        lines: list[str] = []
        settled: dict[str, list[str]] = {}
        for child_id in list(self._model.children(caller.id)):
            child = node(child_id)
            if child.live:  # a stop is in progress: it no longer settles on its own
                self._roster.stopping.add(child.id)
            below = await self.retire_descendants(child, force)
            child = node(child_id)
            if child.status is NodeStatus.RETIRED and child_id not in self._retiring:
                lines += _unrecorded_lines(below)
                continue
            execution = execution_of(child.status)
            was_live = child.live
            done = await self.retire(child, "stop", force)
            if was_live:
                lines.append(receipts.stopped(child.name))
            else:
                settled.setdefault(execution, []).append(child.name)
            everything = [*below, (child, done)]
            survivors = [pid for _n, r in everything for pid in r.survivors]
            if survivors:
                lines.append(receipts.stop_survivors(child.name, survivors))
            lines += _unrecorded_lines(everything)
        for execution, names in settled.items():
            lines.append(receipts.retired_settled(names, execution))
        return "\n".join(lines) if lines else receipts.nothing_to_stop()

    async def _stop_target(self, target: Node, force: bool) -> str:
        if target.live:  # a stop is in progress: it no longer settles on its own
            self._roster.stopping.add(target.id)
        below = await self.retire_descendants(target, force)
        target = self._names.node(target.id)
        everything = list(below)
        if target.status is NodeStatus.RETIRED and target.id not in self._retiring:
            event = self._record.last_event(target.id, EventType.NODE_RETIRED)
            execution = str(event.data.get("execution", "unknown")) if event else "unknown"
            at = event.at if event else target.updated_at
            text = receipts.already_retired(
                target.name, execution, time.strftime("%H:%M:%S", time.localtime(at))
            )
        else:
            # Live, or retired by a retire still under way (it is joined): stopped.
            was_live = target.live or target.id in self._retiring
            execution = execution_of(target.status)
            everything.append((target, await self.retire(target, "stop", force)))
            if was_live:
                text = receipts.stopped(target.name)
            else:
                text = receipts.retired_settled([target.name], execution)
        survivors = [pid for _n, r in everything for pid in r.survivors]
        if survivors:
            text += "\n" + receipts.stop_survivors(target.name, survivors)
        return "\n".join([text, *_unrecorded_lines(everything)])

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
            report = await retire.handle.stop(force=retire.force, grace=self._grace())
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
        if current.machine and current.phase and current.phase not in TERMINAL_PHASES:
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
                owed = _Owed(data, fields, phase_event, status=keeps)
                unrecorded = await self._write(node_id, owed)
            # Its stop is over: nothing of it runs, and a resume of it is not refused as
            # "being stopped" (a retired node leaves `stopping` by its resume).
            self._roster.stopping.discard(node_id)
            return Retired(survivors, unrecorded)
        unrecorded = await self._write(node_id, _Owed(data, fields, phase_event))
        self._model.mark_interrupted(node_id, False)
        return Retired(survivors, unrecorded)

    # ----- retires the ledger refused ---------------------------------------------------
    async def _write(self, node_id: str, owed: _Owed) -> str | None:
        """Write the retire; None once it is in the ledger, else the ledger's refusal —
        then the model shows it anyway (the agent is gone: `running` would be a lie)
        and the write is owed, retried every RETRY_OWED_EVERY s and at close."""
        compensated = owed.error is not None
        try:
            if owed.phase_event is not None:
                await self._record.event(node_id, EventType.PHASE_CHANGE, owed.phase_event)
                owed.phase_event = None
            kept = owed.status is not NodeStatus.RETIRED
            if compensated and self._names.node(node_id).status is not owed.status:
                # Resumed since: its row is newer than this retire; only the history is owed.
                if not kept:
                    await self._record.event(node_id, EventType.NODE_RETIRED, owed.data)
            else:
                await self._record.set_status(
                    node_id,
                    owed.status,
                    None if kept else EventType.NODE_RETIRED,
                    owed.data,
                    # The model already says so (or the status is kept): the write only
                    # catches the ledger up.
                    refresh=compensated or kept,
                    **owed.fields,
                )
        except (LedgerError, OSError) as err:
            if not compensated:
                log.error(
                    "%s is stopped, but the ledger refused its retire (%s); retrying",
                    self._names.node(node_id).path,
                    err,
                )
                node = self._names.node(node_id)
                self._model.upsert(
                    dataclasses.replace(
                        node, status=owed.status, updated_at=self._clock(), **owed.fields
                    )
                )
                self._record.notify()
            owed.error = str(err)
            self._owed[node_id] = owed
            if not self._closing and (self._retry is None or self._retry.done()):
                self._retry = asyncio.create_task(self._retry_owed(), name="owed-retires")
            return owed.error
        self._owed.pop(node_id, None)
        if compensated:
            log.warning("%s: its retire is in the ledger now", self._names.node(node_id).path)
        return None

    async def flush_owed(self) -> None:
        """Try every owed retire once more."""
        for node_id, owed in list(self._owed.items()):
            await self._write(node_id, owed)

    async def _retry_owed(self) -> None:
        while self._owed and not self._closing:
            await asyncio.sleep(RETRY_OWED_EVERY)
            await self.flush_owed()


async def _survivors(stop: Awaitable[SweepReport]) -> list[int]:
    return list((await stop).survivors)


def _unrecorded_lines(retired: list[tuple[Node, Retired]]) -> list[str]:
    return [
        receipts.stop_not_recorded(node.name, done.unrecorded)
        for node, done in retired
        if done.unrecorded is not None
    ]
