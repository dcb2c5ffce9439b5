"""What runs beside the agents once a host has started: the ledger; the mail service and
its postman, and the phase clock, which write through the record (`MailRecord`: their
events and letters reach the live model at once, like the supervisor's own); the orphan
reaper; the socket server; the session watcher.

Each is started in that order and closed alone: one that fails to close (a postman or
phase clock that died of an error) is logged and must not keep the next one open.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from legion_tui.timeouts import within

if TYPE_CHECKING:
    from legion_tui.ledger import Ledger
    from legion_tui.mail.service import Deliverable
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.processes.orphans import OrphanReaper
    from legion_tui.supervisor.socket.server import SupervisorServer
    from legion_tui.supervisor.state.progress_watch import ProgressWatch
    from legion_tui.supervisor.teams.phase_watch import PhaseWatch

__all__ = ["Services", "close_each"]

log = logging.getLogger(__name__)

CLOSE_STEP_BOUND = 5.0  # seconds each service of a failed start gets to close


async def close_each(
    steps: Sequence[Callable[[], Awaitable[object]]], *, bound: float | None = None
) -> None:
    """Run every step in order, each within `bound` (None: no bound); one that fails is
    logged and the next still runs, so a dead part never keeps a later one open."""
    for step in steps:
        try:
            await within(step(), bound)
        except Exception as exc:
            name = getattr(step, "__qualname__", None) or repr(step)
            log.warning("closing: %s failed (%s: %s)", name, type(exc).__name__, exc)


class Services:
    def __init__(
        self,
        ctx: HostContext,
        phase_watch: PhaseWatch,
        progress_watch: ProgressWatch,
        orphans: OrphanReaper,
        *,
        deliverable: Callable[[str], Deliverable | None],
        server: Callable[[], SupervisorServer] | None,
        watch: bool,
    ) -> None:
        self._ctx = ctx  # the ledger, the echo and the mail are written into it
        self._phase_watch = phase_watch
        self._progress_watch = progress_watch
        self._orphans = orphans
        self._deliverable = deliverable  # the postman's way to a node's agent
        self._make_server = server  # None: this host does not serve the socket
        self._watch = watch  # follow the session files (else read when asked)
        self.server: SupervisorServer | None = None

    async def open_ledger(self) -> Ledger:
        from legion_tui.ledger import open_ledger

        ctx = self._ctx
        ctx.ledger = await open_ledger(ctx.run.ledger_path, create=True, clock=ctx.clock)
        return ctx.ledger

    async def start(self) -> None:
        """The context's record is open on the ledger `open_ledger` gave."""
        from legion_tui.mail.service import MailService
        from legion_tui.supervisor.state.mail_record import MailRecord

        ctx = self._ctx
        ctx.echo = echo = MailRecord(ctx.record, ctx.model)
        # Mail (SPEC §6.5): the postman hands letters over through the agents' handles.
        ctx.mail = mail = MailService(echo, ctx.model, self._deliverable)
        mail.start()
        self._phase_watch.start(echo)  # one `Phase timeout:` notice per stint
        self._orphans.start()  # the agents' double-forked helpers re-parent to us
        if self._make_server is not None:
            self.server = self._make_server()
            await self.server.start(ctx.socket_path, link=ctx.run.socket_link)
        if self._watch:
            self._progress_watch.start()

    async def undo(self) -> None:
        """A start that failed half-way: end what it began; nothing else runs after."""
        steps: list[Callable[[], Awaitable[object]]] = []
        if self._ctx.mail is not None:
            steps.append(self._ctx.mail.close)
        if self.server is not None:
            steps.append(self.server.close)
        self._progress_watch.stop()
        steps.append(self._phase_watch.close)
        if (task := self._progress_watch.task) is not None:
            task.cancel()
            steps.append(functools.partial(asyncio.gather, task, return_exceptions=True))
        if self._ctx.ledger is not None:
            steps.append(self._ctx.ledger.close)
        steps.append(self._orphans.close)
        await close_each(steps, bound=CLOSE_STEP_BOUND)

    async def stop_mail_and_clock(self) -> None:
        """Before the pause: no hand-over to an agent that is being paused, no report.
        A postman that died of an error is logged, and the pause goes on."""
        if self._ctx.mail is not None:
            try:
                await self._ctx.mail.close()
            except Exception:
                log.exception("the postman had failed")
        await self._phase_watch.close()

    async def close(self) -> None:
        """After the pause: the socket, the watcher, the ledger (flushed), the reaper
        (after the agents' stop: their last orphans too)."""
        if self.server is not None:
            await self.server.close()
            self.server = None
        await self._progress_watch.close()
        try:
            if (ledger := self._ctx.ledger) is not None:
                # A writer that died (its run folder removed) fails the flush; the close
                # must still end the reader's thread, or the process never exits.
                try:
                    await ledger.flush()
                finally:
                    await ledger.close()
        finally:
            await self._orphans.close()
