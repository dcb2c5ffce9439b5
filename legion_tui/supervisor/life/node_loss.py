"""A cluster node that died under its agents (issue 15): they are interrupted, not failed.

The agent did nothing wrong — its machine went away — so its node is retired with reason
`node-lost` (one of the interrupt reasons: the tree, `legion status` and a reopened
session show it interrupted) and `r` resumes it on a live node from the session the host
mirrored. The retire is the ordinary one (`Stops.retire`: the handle detached, its monitor
ended, the ledger first, the interrupted mark with its status), run as a task because the
loss is heard inside the handle.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from legion_tui.supervisor.life.retire_reasons import NODE_LOST_REASON

if TYPE_CHECKING:
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.life.stops import Stops

__all__ = ["NodeLoss"]

log = logging.getLogger(__name__)


class NodeLoss:
    def __init__(self, ctx: HostContext, stops: Stops) -> None:
        self._model = ctx.model
        self._names = ctx.names
        self._roster = ctx.roster
        self._stops = stops
        self._tasks: set[asyncio.Task[None]] = set()

    def lost(self, node_id: str, why: str) -> None:
        """Heard from a handle (once): retire its node as interrupted."""
        task = asyncio.get_running_loop().create_task(self._retire(node_id, why))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _retire(self, node_id: str, why: str) -> None:
        node = self._names.node(node_id)
        if node_id in self._roster.stopping or not node.live:
            return  # a stop or the host's pause got there first: its story stands
        log.warning("%s: %s", node.path, why)
        try:
            await self._stops.retire(node, NODE_LOST_REASON, force=True)
        except Exception:
            log.exception("retiring %s after its node was lost failed", node.path)
            return
        self._model.announce(node_id, f"{node.name} interrupted: {why} — r resumes it")
