"""The agents' progress, read from their session files: the watcher that follows
`sessions/` into the live model (and each node's usage into the ledger), and the
freshest progress of one node on demand (its file polled once more before answering).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import TYPE_CHECKING

from legion_tui.ledger.errors import LedgerError
from legion_tui.model_records import Usage
from legion_tui.session.progress import SessionProgress
from legion_tui.timeouts import within

if TYPE_CHECKING:
    from legion_tui.session.watcher import SessionWatcher
    from legion_tui.supervisor.context import HostContext

__all__ = ["ProgressWatch", "has_file"]

log = logging.getLogger(__name__)

STOP_BOUND = 5.0  # seconds a closing host waits for the watcher's task to end


def has_file(path: str | None) -> bool:
    # One stat; cheap enough to do inline in the loop.
    return bool(path) and os.path.exists(path or "")


def usage_of(progress: SessionProgress) -> Usage:
    t = progress.tokens
    return Usage(
        input=t.input,
        output=t.output,
        cache_read=t.cache_read,
        cache_write=t.cache_write,
        cost=progress.cost,  # the agent's own total when it gives one
        generation_ms=progress.generation_ms,
        turns=progress.turns,
    )


class ProgressWatch:
    """`start()` to follow the session files (a host that does not watch reads a node's
    file only when asked); `stop()` then `close()`."""

    def __init__(self, ctx: HostContext) -> None:
        self._ctx = ctx  # the ledger each node's usage is queued to, once started
        self._model = ctx.model
        self.watcher: SessionWatcher | None = None
        self.task: asyncio.Task[None] | None = None
        self.updates = 0  # progress reports taken in (the demo's report counts them)

    def start(self) -> None:
        from legion_tui.session.watcher import SessionWatcher

        self.watcher = SessionWatcher(self._ctx.run.sessions_dir, self.on_progress, self._ctx.clock)
        self.task = asyncio.create_task(self.watcher.run(), name="session-watcher")

    def stop(self) -> None:
        """Tell the watcher to end (its task ends soon after: `close`)."""
        if self.watcher is not None:
            self.watcher.stop()

    async def close(self) -> None:
        self.stop()
        if self.task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await within(self.task, STOP_BOUND)
            self.task = None

    def on_progress(self, node_id: str, progress: SessionProgress) -> None:
        """What the watcher reports: shown in the model, the usage queued to the ledger."""
        if node_id not in self._model.nodes:
            return  # a stray file in sessions/: not ours to show
        self.updates += 1
        self._model.set_progress(node_id, progress)
        ledger = self._ctx.ledger
        if ledger is not None and not self._ctx.closed:  # pausing: no more usage queued
            # A writer that stopped (its ledger removed with the run folder) has said why,
            # loudly, once: the figures are still shown, they have nowhere to be kept.
            with contextlib.suppress(LedgerError):
                ledger.queue_usage(node_id, usage_of(progress))

    def report_cost(self, node_id: str, total: float) -> None:
        """The agent's own running total (Claude Code's, after each turn): shown, and
        kept in the ledger for the budget and `status`, at once."""
        view = self._model.nodes.get(node_id)
        if view is not None:
            self._model.report_cost(node_id, total)
            self.on_progress(node_id, view.progress)

    def progress(self, node_id: str) -> SessionProgress:
        """The freshest progress: the node's file is polled once more before answering
        (its last line may have landed after the watcher's last look)."""
        view = self._model.nodes.get(node_id)
        if view is None:
            return SessionProgress()
        path = view.node.session_file
        if path and self.watcher is not None:
            self.watcher.poll_paths([os.path.abspath(path)])
            return self._model.nodes[node_id].progress
        if has_file(path):
            from legion_tui.session.reader import read_session

            progress = read_session(path or "")
            self._model.set_progress(node_id, progress)
            return progress
        return view.progress
