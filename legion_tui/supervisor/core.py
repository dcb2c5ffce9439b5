"""The Supervisor: one per hosting process, living in the host's asyncio loop.

It owns the run (SPEC §2), the ledger writer, the session watcher and the socket server,
and keeps the in-memory `LegionModel` and the ledger in step: every status change is
written to the ledger first and then shown (`record.Record`, the one write path), so a
second `legion status` reading the ledger and the dashboard never disagree for long.

This module builds the host: its context (`context.HostContext`, what every part
shares) and the parts, each given the context and the few parts it depends on; it starts
and closes them in order. It hands on no op: each verb lives in the part that owns it —
`launcher.spawn`, `stops.stop`, `control.abort/steer/resume`, `teams.phase_op.phase`,
`queries.wait/collect/status/tree_text` — and the socket server and the dashboard
(`RootOperations`, acting as root) call those parts through `front.Front`, with the
caller's node id, so the permission rules live in one place: a node controls only its
own descendants, root controls everything, only root dispatches a centurion.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from legion_tui.runs import catalog as runs
from legion_tui.runs.host_lock import claim_session
from legion_tui.state import Clock, LegionModel
from legion_tui.supervisor.context import HostContext, HostOptions
from legion_tui.supervisor.hearing.blocking import Blocking
from legion_tui.supervisor.hearing.budget import BudgetWatch, run_limit
from legion_tui.supervisor.hearing.endings import Endings
from legion_tui.supervisor.hearing.notices import Notices
from legion_tui.supervisor.hearing.queries import Queries
from legion_tui.supervisor.hearing.results import FinishedResults
from legion_tui.supervisor.host_settings import read_host_settings
from legion_tui.supervisor.life.admission import Admission
from legion_tui.supervisor.life.continuity import Continuity
from legion_tui.supervisor.life.control import Control
from legion_tui.supervisor.life.launching import Launcher
from legion_tui.supervisor.life.lifecycle import Lifecycle
from legion_tui.supervisor.life.node_loss import NodeLoss
from legion_tui.supervisor.life.stops import Stops
from legion_tui.supervisor.processes.orphans import OrphanReaper
from legion_tui.supervisor.services import Services, close_each
from legion_tui.supervisor.state.progress_watch import ProgressWatch
from legion_tui.supervisor.teams.checks import Checks
from legion_tui.supervisor.teams.phase_watch import PhaseWatch
from legion_tui.supervisor.teams.teams import Teams
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import Budgets

if TYPE_CHECKING:
    from legion_tui.ledger import Ledger
    from legion_tui.mail.service import MailService
    from legion_tui.phases.timeouts import PhaseClock
    from legion_tui.runs.folder import RunInfo
    from legion_tui.supervisor.socket.server import SupervisorServer

__all__ = ["StartFailed", "Supervisor"]

log = logging.getLogger(__name__)


class StartFailed(RuntimeError):
    """The host could not start (after its ledger opened); what it began is closed."""


class Supervisor:
    """Hosts one run. Construct (sync: opens the run dir), `await start()`, `await close()`."""

    def __init__(
        self,
        project_dir: Path,
        *,
        session: str = runs.DEFAULT_SESSION,
        task: str = "",
        clock: Clock = time.time,
        budgets: Budgets | None = None,
        stop_grace: float | None = None,
        seed: int = 0,
        speed: float = 1.0,
        serve: bool = True,
        watch: bool = True,
        default_kind: str | None = None,
        cluster: str | None = None,  # a Ray address: every agent on that cluster
    ) -> None:
        project_dir = project_dir.resolve()
        # Held for the host's life: the session's run is ours alone from before it is
        # looked up (two hosts opening it at once: one gets SessionBusy, nothing else).
        self.host_lock = claim_session(project_dir, session)
        run, self.reopened = runs.open_session(project_dir, session, task=task)
        settings = read_host_settings(project_dir, cluster)
        options = HostOptions(
            budgets=budgets or settings.budgets,
            stop_grace=settings.stop_grace if stop_grace is None else stop_grace,
            idle_release=settings.idle_release,
            # Where agents run: here, or on a Ray cluster (whose lost nodes NodeLoss
            # retires).
            cluster=settings.cluster,
            # The kind `auto` cards get on this host, over `[agent] default` — a host
            # that is itself a simulation (the demo, the tests) says "sim" here.
            default_kind=default_kind,
            seed=seed,
            speed=speed,
        )
        model = LegionModel(run.run_id, session, clock=clock)
        self.ctx = ctx = HostContext(model, run, project_dir, options, clock=clock)
        self.model, self.project_dir, self.clock = model, project_dir, clock
        self.names, self.record, self.roster = ctx.names, ctx.record, ctx.roster
        self.socket_path = ctx.socket_path
        self._started = False
        self._build_parts(settings.phase_timeouts)
        self.services = Services(  # the ledger, mail, phase clock, socket, session watcher
            ctx, self.phase_watch, self.progress_watch, self.orphans,
            deliverable=self.control.deliverable,
            server=self._server if serve else None, watch=watch,
        )  # fmt: skip

    def _build_parts(self, phase_timeouts: dict[str, int]) -> None:
        """Each part takes the host's context and the few parts it depends on; what
        exists only once started (the ledger, its echo, the mail service) it reads from
        the context when it needs it."""
        ctx = self.ctx
        self.orphans = OrphanReaper()
        self.progress_watch = progress = ProgressWatch(ctx)
        self.phase_watch = PhaseWatch(ctx, operator=phase_timeouts)
        self.teams = teams = Teams(ctx)
        self.admission = admission = Admission(ctx, teams)
        self.results = FinishedResults()
        endings = Endings(ctx, progress)
        # Completion notices (issue 11): every ending written reaches them.
        self.notices = notices = Notices(
            ctx.model, self.results, endings, announce=ctx.announce,
            busy=ctx.roster.turn_running, changed=ctx.record.notify, clock=ctx.clock,
        )  # fmt: skip
        ctx.record.moved.append(notices.ended)
        self.stops = stops = Stops(ctx, notices)
        self.continuity = Continuity(ctx, stops)
        self.node_loss = NodeLoss(ctx, stops)
        # The project's checks on a settled agent's work; a failure is sent back to it
        # as a steer from root (the control verbs are built below).
        self.checks = Checks(
            ctx, teams, lambda node_id, text: self.control.steer(ROOT_ID, node_id, text)
        )
        self.lifecycle = Lifecycle(ctx, teams, notices, progress, self.checks)
        self.blocking = Blocking(ctx.record, ctx.names)  # BLOCKED from the agents' questions
        # A subtree past its dollar budget is stopped.
        self.budget = BudgetWatch(ctx, stops, run=run_limit(ctx.project_dir))
        self.queries = Queries(ctx, teams, notices, progress)
        self.launcher = Launcher(
            ctx, admission, teams, notices, self.lifecycle, self.blocking, self.budget,
            self.node_loss,
        )  # fmt: skip
        self.control = Control(ctx, self.lifecycle, teams, self.launcher)

    @property
    def run(self) -> RunInfo:
        """The run this host owns (touched as it starts and pauses)."""
        return self.ctx.run

    @run.setter
    def run(self, run: RunInfo) -> None:
        self.ctx.run = run

    @property
    def sandbox(self) -> Path | None:
        """A git repository the host owns (the demo's): see `HostContext.sandbox`."""
        return self.ctx.sandbox

    @sandbox.setter
    def sandbox(self, path: Path | None) -> None:
        self.ctx.sandbox = path

    @property
    def stop_grace(self) -> float:
        return self.ctx.options.stop_grace

    @stop_grace.setter
    def stop_grace(self, seconds: float) -> None:
        self.ctx.options.stop_grace = seconds

    @property
    def budgets(self) -> Budgets:
        return self.ctx.options.budgets

    @property
    def speed(self) -> float:
        """The simulated agents' speed (a demo added to the run keeps it)."""
        return self.ctx.options.speed

    def _server(self) -> SupervisorServer:
        from legion_tui.supervisor.socket.server import SupervisorServer

        return SupervisorServer(self)

    @property
    def ledger(self) -> Ledger | None:
        """The run's ledger, once started."""
        return self.ctx.ledger

    @property
    def mail(self) -> MailService | None:
        """The mail service (SPEC §6.5), once started."""
        return self.ctx.mail

    @property
    def events_written(self) -> int:
        """Events this host wrote itself (the demo's report counts them)."""
        return self.record.events_written

    @property
    def interrupted_on_open(self) -> list[str]:
        """Nodes this open found interrupted (paused or orphaned) with a session to resume."""
        return self.continuity.interrupted_on_open

    @property
    def launches(self) -> int:
        """Agents started by this host (tests assert "zero spawns")."""
        return self.launcher.launches

    @property
    def progress_updates(self) -> int:
        return self.progress_watch.updates

    @property
    def phase_clock(self) -> PhaseClock | None:
        """The advisory phase clock, once started."""
        return self.phase_watch.clock

    # ----- start and close --------------------------------------------------------------
    async def start(self) -> None:
        """Open the ledger, restore or create the tree, serve the socket, watch sessions."""
        if self._started:
            return
        self._started = True
        from legion_tui.agents.cards import load_cards
        from legion_tui.ledger import LedgerError

        self.ctx.cards.cards = load_cards(self.project_dir)
        ledger = await self.services.open_ledger()
        try:
            self.record.open(ledger)
            await self.continuity.open(reopened=self.reopened)
            self.run = runs.touch_run(self.run)
            await self.services.start()
            self.budget.start()
        except BaseException as err:
            # Whatever started must end, or the ledger's writer thread keeps the process
            # alive for ever after the error (a corrupt or read-only ledger, a bad task).
            self.ctx.closed = True
            await self.services.undo()
            self.host_lock.release()
            if isinstance(err, Exception) and not isinstance(err, LedgerError):
                raise StartFailed(f"{type(err).__name__}: {err}") from err
            raise

    async def close(self) -> None:
        """Exit is a pause (SPEC §6.6): live nodes become `retired` with reason
        `session-shutdown` — written FIRST, before any process is touched, so a child that
        dies mid-drain is never read as settled — then every agent is stopped."""
        if self.ctx.closed or not self._started:
            self.ctx.closed = True
            self.host_lock.release()
            return
        self.ctx.closed = True
        self.budget.close()
        try:
            # Every step runs even when one before it failed (the run folder removed under
            # the host kills the ledger's writer, and the pause with it): the services'
            # close must still end the ledger reader's thread, or the process never exits.
            await close_each(
                [
                    self.notices.close,  # the parents are being paused: nobody is told now
                    self.checks.close,  # a run of the checks is no agent's to finish now
                    self.blocking.close,
                    # A stop under way finishes first (a `stop all` ends the run whose exit
                    # this is: its members must end stopped, not paused); then what the
                    # ledger owes is written.
                    self.stops.close,
                    self.services.stop_mail_and_clock,
                    self.launcher.settle_batches,  # its rows must be in what the pause sees
                    self.continuity.pause,
                    self.services.close,
                    self._touch_run,
                ]
            )
        finally:
            self.host_lock.release()  # last: the run is ours until everything above is done
            self.record.notify()

    async def _touch_run(self) -> None:
        self.run = runs.touch_run(self.run)  # updatedAt: when this session last paused

    async def __aenter__(self) -> Supervisor:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
