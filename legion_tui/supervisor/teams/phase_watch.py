"""Advisory phase clocks (SPEC §6.4): the task that looks, every few seconds, for live
teams past their stint's limit. A report never stops anything: it is one `Phase
timeout:` notice per stint (the clock writes it), handed to the postman at once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from legion_tui.phases.timeouts import PhaseClock, TimeoutStore
    from legion_tui.supervisor.context import HostContext

__all__ = ["PhaseWatch"]

log = logging.getLogger(__name__)


class PhaseWatch:
    """`start(store)` once the ledger is open; `close()` ends the task (an error it died
    of is logged, never raised: a dead clock must not keep the host from pausing)."""

    def __init__(self, ctx: HostContext, *, operator: Mapping[str, int]) -> None:
        self._ctx = ctx  # the model, the clock, and the mail service once started
        self._model = ctx.model
        self._operator = operator  # only the timeouts the operator wrote
        self.clock: PhaseClock | None = None
        self.task: asyncio.Task[None] | None = None

    def start(self, store: TimeoutStore) -> None:
        from legion_tui.phases.timeouts import PhaseClock

        self.clock = PhaseClock(store, operator=self._operator, clock=self._ctx.clock)
        self.task = asyncio.create_task(self._run(self.clock), name="phase-clock")

    async def _run(self, phase_clock: PhaseClock) -> None:
        from legion_tui.phases.timeouts import CHECK_SECONDS

        while True:
            teams = [v.node for v in self._model.nodes.values() if v.node.phase is not None]
            for report in await phase_clock.check_all(teams):
                team = self._model.nodes.get(report.stint.node_id)
                mail = self._ctx.mail
                if team is not None and team.node.parent_id is not None and mail:
                    mail.notify(team.node.parent_id)
            await asyncio.sleep(CHECK_SECONDS)

    async def close(self) -> None:
        task, self.task = self.task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("the phase clock had failed")
