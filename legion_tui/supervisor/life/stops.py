"""Stops: retire a node and its subtree, children first, and say what really happened.
This module is the stop verb and its receipts; one node's retire is `retires.py`'s.

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
was interrupted: `owed_retires.py`). The host never closes under a stop: `close()` lets
the stops under way finish first and refuses new ones.

A member that had already ended (✓ settled, ✗ failed) keeps its own ending when its
parent is stopped: its agent — which idles after its final answer, waiting for a letter —
is stopped all the same, but "retired" would overwrite what it did with what its parent's
stop did (a failure vanished from the header's ✗ count). Only a stop that names the node
itself retires an ended node (SPEC §6.3: "Retired 1 already-settled child").
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from legion_tui import receipts
from legion_tui.model import EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.supervisor.life.owed_retires import OwedRetires
from legion_tui.supervisor.life.retires import Retired, Retires, execution_of
from legion_tui.wire.names import OpError

if TYPE_CHECKING:
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.hearing.notices import Notices

__all__ = ["Stops"]

log = logging.getLogger(__name__)

# A `stop all` child's receipt lines, and (execution, name) if it had ended already.
_ChildStop = tuple[list[str], tuple[str, str] | None]


class Stops:
    def __init__(self, ctx: HostContext, notices: Notices) -> None:
        self._model = ctx.model
        self._names = ctx.names
        self._record = ctx.record
        self._roster = ctx.roster
        self._notices = notices  # who hears of a stop's endings, and how
        self._owed = OwedRetires(ctx.model, ctx.names, ctx.record, clock=ctx.clock)
        self._retires = Retires(ctx, self._owed)
        self._ops = 0  # stop requests being answered now
        self._quiet = asyncio.Event()  # set while none is
        self._quiet.set()
        self._closing = False

    async def stop(self, caller_id: str, name: str, *, force: bool = False) -> str:
        """SPEC §6.3 stop: retire the node and its subtree, children first; the receipt
        says what really happened. The receipt tells a parent of its own children's
        ending; a stop by anyone else (root, the user) is told to the parent by notice."""
        caller = self._names.caller(caller_id)
        if name == "all":
            told = list(self._model.children(caller.id))
        else:
            target = self._names.resolve(caller_id, name)
            told = [target.id] if target.parent_id == caller.id else []
        with self._notices.telling(told, "stop"):
            return await self._stop(caller_id, name, force)

    async def _stop(self, caller_id: str, name: str, force: bool) -> str:
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
        self._owed.stop_retrying()
        await self._quiet.wait()
        await self._retires.finish()
        await self._owed.close()

    def owed(self) -> list[str]:
        """The ids of the nodes whose retire the ledger has not got yet."""
        return self._owed.node_ids()

    async def flush_owed(self) -> None:
        """Try every owed retire once more."""
        await self._owed.flush()

    # ----- one node's retire (retires.Retires) -------------------------------------------
    async def retire(self, node: Node, reason: str, force: bool) -> Retired:
        """Stop the node's agent, then mark it retired; joins a retire under way."""
        return await self._retires.retire(node, reason, force)

    async def retire_descendants(self, node: Node, force: bool) -> list[tuple[Node, Retired]]:
        """The node's subtree retired, deepest level first."""
        return await self._retires.retire_descendants(node, force)

    async def sweep_verification(self, node_id: str, force: bool) -> list[int]:
        """End the node's running `legion-verify` commands; returns the survivors."""
        return await self._retires.sweep_verification(node_id, force)

    # ----- the stop verb ------------------------------------------------------------------
    async def _stop_all(self, caller_id: str, force: bool) -> str:
        caller = self._names.caller(caller_id)
        children = list(self._model.children(caller.id))
        for child_id in children:
            if self._names.node(child_id).live:  # a stop is in progress: no settling now
                self._roster.stopping.add(child_id)
        # Every child's subtree at once, as a stop of one subtree stops each level: one
        # after another, a thousand children each waited for the one before's sweep.
        # The receipt still reads in the children's order.
        stopped = await asyncio.gather(*(self._stop_child(c, force) for c in children))
        lines: list[str] = []
        settled: dict[str, list[str]] = {}
        for child_lines, ended in stopped:
            lines += child_lines
            if ended is not None:
                execution, name = ended
                settled.setdefault(execution, []).append(name)
        for execution, names in settled.items():
            lines.append(receipts.retired_settled(names, execution))
        return "\n".join(lines) if lines else receipts.nothing_to_stop()

    async def _stop_child(self, child_id: str, force: bool) -> _ChildStop:
        """One child of a `stop all`, its subtree first: its receipt lines, and its
        (execution, name) when it had ended already (told together, after the others)."""
        node = self._names.node
        below = await self._retires.retire_descendants(node(child_id), force)
        child = node(child_id)
        if child.status is NodeStatus.RETIRED and not self._retires.under_way(child_id):
            return _unrecorded_lines(below), None
        execution = execution_of(child.status)
        was_live = child.live
        done = await self._retires.retire(child, "stop", force)
        lines = [receipts.stopped(child.name)] if was_live else []
        everything = [*below, (child, done)]
        survivors = [pid for _n, r in everything for pid in r.survivors]
        if survivors:
            lines.append(receipts.stop_survivors(child.name, survivors))
        lines += _unrecorded_lines(everything)
        return lines, None if was_live else (execution, child.name)

    async def _stop_target(self, target: Node, force: bool) -> str:
        if target.live:  # a stop is in progress: it no longer settles on its own
            self._roster.stopping.add(target.id)
        below = await self._retires.retire_descendants(target, force)
        target = self._names.node(target.id)
        everything = list(below)
        if target.status is NodeStatus.RETIRED and not self._retires.under_way(target.id):
            event = self._record.last_event(target.id, EventType.NODE_RETIRED)
            execution = str(event.data.get("execution", "unknown")) if event else "unknown"
            at = event.at if event else target.updated_at
            text = receipts.already_retired(
                target.name, execution, time.strftime("%H:%M:%S", time.localtime(at))
            )
        else:
            # Live, or retired by a retire still under way (it is joined): stopped.
            was_live = target.live or self._retires.under_way(target.id)
            execution = execution_of(target.status)
            everything.append((target, await self._retires.retire(target, "stop", force)))
            if was_live:
                text = receipts.stopped(target.name)
            else:
                text = receipts.retired_settled([target.name], execution)
        survivors = [pid for _n, r in everything for pid in r.survivors]
        if survivors:
            text += "\n" + receipts.stop_survivors(target.name, survivors)
        return "\n".join([text, *_unrecorded_lines(everything)])


def _unrecorded_lines(retired: list[tuple[Node, Retired]]) -> list[str]:
    return [
        receipts.stop_not_recorded(node.name, done.unrecorded)
        for node, done in retired
        if done.unrecorded is not None
    ]
