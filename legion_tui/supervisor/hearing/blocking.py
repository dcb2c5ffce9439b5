"""BLOCKED from what the agents say (issue 12 item 5): a handle reports the question its
agent waits on the user for (`backends.asking`), and this part writes it through the one
write path — running → blocked with a `node_blocked` event carrying the question, a new
question while blocked as another `node_blocked`, and blocked → running once it is
answered (the answer itself is a steer: its `node_steered` event says so).

A handle reports from its read loop (synchronous); the writes are queued per node and
run in order, so "asked, answered, asked" lands as three writes in that order even when
the ledger is slow.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from legion_tui.model import EventType, NodeStatus

if TYPE_CHECKING:
    from legion_tui.supervisor.state.naming import Names
    from legion_tui.supervisor.state.record import Record

__all__ = ["Blocking"]

log = logging.getLogger(__name__)


class Blocking:
    def __init__(self, record: Record, names: Names) -> None:
        self._record = record
        self._names = names
        self._queues: dict[str, asyncio.Queue[str | None]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.asked: dict[str, str] = {}  # node id → the question it waits on now

    def told(self, node_id: str, question: str | None) -> None:
        """A handle says its agent asks `question` (None: nothing is asked any more)."""
        queue = self._queues.get(node_id)
        if queue is None:
            queue = self._queues[node_id] = asyncio.Queue()
        queue.put_nowait(question)
        if node_id not in self._tasks:
            self._tasks[node_id] = asyncio.get_running_loop().create_task(
                self._write_in_order(node_id, queue), name=f"blocking-{node_id}"
            )

    async def _write_in_order(self, node_id: str, queue: asyncio.Queue[str | None]) -> None:
        try:
            while not queue.empty():  # no await between the last check and the end
                question = queue.get_nowait()
                try:
                    await self._write(node_id, question)
                except Exception:  # a refused write leaves the status as it was
                    log.exception("%s: the blocked state was not written", node_id)
        finally:
            self._tasks.pop(node_id, None)

    async def _write(self, node_id: str, question: str | None) -> None:
        # An agent may ask before its launch is written (an exec prompt at once): the
        # launch's `running` comes first, or it would overwrite the `blocked`.
        while (status := self._names.node(node_id).status) is NodeStatus.STARTING:
            await self._record.changed.wait()
        if question is None:
            self.asked.pop(node_id, None)
            if status is NodeStatus.BLOCKED:
                await self._record.set_status(node_id, NodeStatus.RUNNING, None, {})
            return
        if self.asked.get(node_id) == question:
            return
        self.asked[node_id] = question
        data = {"question": question}
        if status is NodeStatus.BLOCKED:
            await self._record.event(node_id, EventType.NODE_BLOCKED, data)
        elif status is NodeStatus.RUNNING:
            await self._record.set_status(node_id, NodeStatus.BLOCKED, EventType.NODE_BLOCKED, data)

    async def close(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
