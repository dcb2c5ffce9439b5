"""The Supervisor: one per hosting process, living in the host's asyncio loop.

It owns the run (SPEC §2), the ledger writer, the session watcher and the socket server,
and keeps the in-memory `LegionModel` and the ledger in step: every status change is
written to the ledger first and then shown (`record.Record`, the one write path), so a
second `legion status` reading the ledger and the dashboard never disagree for long.

This module is the front: it builds the parts, starts and closes them in order, and
hands each op to the part that does it — the launch path (`launching`), the control
verbs (`control`), the read-only questions (`queries`), teams and phases (`teams`).
Ops take the caller's node id; the socket server and the dashboard (`RootOperations`,
acting as root) both come through here, so the permission rules live in one place: a
node controls only its own descendants, root controls everything, only root dispatches
a centurion.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui.model_records import Node
from legion_tui.runs import catalog as runs
from legion_tui.runs.host_lock import claim_session
from legion_tui.session.progress import SessionProgress
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
from legion_tui.supervisor.services import Services
from legion_tui.supervisor.state.progress_watch import ProgressWatch
from legion_tui.supervisor.teams.phase_watch import PhaseWatch
from legion_tui.supervisor.teams.teams import Teams
from legion_tui.wire.spawn_request import Budgets, ChildRequest

if TYPE_CHECKING:
    from legion_tui.git.worktree import Worktree
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
            deliverable=self.lifecycle.deliverable,
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
            ctx.model, self.results, result_of=endings.result_of, send=endings.send_notice,
            announce=ctx.announce, busy=ctx.roster.turn_running, changed=ctx.record.notify,
            clock=ctx.clock,
        )  # fmt: skip
        ctx.record.moved.append(notices.ended)
        self.stops = stops = Stops(ctx, notices)
        self.continuity = Continuity(ctx, stops)
        self.node_loss = NodeLoss(ctx, stops)
        self.lifecycle = Lifecycle(ctx, teams, notices, progress)
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
        await self.notices.close()  # the parents are being paused: nobody is told now
        await self.blocking.close()
        self.budget.close()
        # A stop under way finishes first (a `stop all` ends the run whose exit this is:
        # its members must end stopped, not paused); then what the ledger owes is written.
        await self.stops.close()
        await self.services.stop_mail_and_clock()
        await self.continuity.pause()
        await self.services.close()
        self.run = runs.touch_run(self.run)  # updatedAt: when this session last paused
        self.host_lock.release()  # last: the run is ours until everything above is done
        self.record.notify()

    async def __aenter__(self) -> Supervisor:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----- lookup (naming.Names) --------------------------------------------------------
    def node(self, node_id: str) -> Node:
        return self.names.node(node_id)

    def resolve(self, caller_id: str, name: str) -> Node:
        """`name`, `parent/name`, a full `root/...` path or a node id, restricted to the
        caller's descendants (see `naming.Names.resolve`)."""
        return self.names.resolve(caller_id, name)

    def progress(self, node_id: str) -> SessionProgress:
        """The node's freshest progress (see `progress_watch.ProgressWatch.progress`)."""
        return self.progress_watch.progress(node_id)

    # ----- ops that change the legion (launching.Launcher, control.Control) -------------
    async def spawn(self, caller_id: str, requests: Sequence[ChildRequest]) -> list[Node]:
        """Validate the whole batch, then create and launch it (see `Launcher.spawn`)."""
        return await self.launcher.spawn(caller_id, requests)

    async def stop(self, caller_id: str, name: str, *, force: bool = False) -> str:
        """SPEC §6.3 stop: the node and its subtree retired (see `Control.stop`)."""
        return await self.stops.stop(caller_id, name, force=force)

    async def abort(
        self, caller_id: str, name: str, *, keep_queue: bool = False
    ) -> tuple[str, str]:
        """(outcome, receipt) — exactly the three receipts of SPEC §6.3."""
        return await self.control.abort(caller_id, name, keep_queue=keep_queue)

    async def steer(self, caller_id: str, name: str, text: str) -> tuple[str, str]:
        """(outcome, receipt): queued, accepted (a turn started), or intercepted."""
        return await self.control.steer(caller_id, name, text)

    async def resume(self, caller_id: str, name: str) -> str:
        """Resume an ended node on its old session file (SPEC §6.6); never automatic."""
        return await self.control.resume(caller_id, name)

    async def phase(
        self,
        caller_id: str,
        to: str,
        *,
        note: str | None = None,
        evidence: str | None = None,
        reason: str | None = None,
        supersedes: Sequence[str] = (),
    ) -> dict[str, Any]:
        """`legion phase --to P`: a team moves itself along its declared machine (see
        `teams.Teams.phase`)."""
        return await self.teams.phase(
            caller_id, to, note=note, evidence=evidence, reason=reason, supersedes=supersedes
        )

    def worktree_of(self, node_id: str) -> Worktree | None:
        """The worktree a node works in: its own (a centurion's) or its nearest
        ancestor's; None when the team works in the project itself."""
        return self.teams.worktree_of(node_id)

    def launch_warning(self, node_id: str) -> str | None:
        """The warning a node's launch carried (a demoted worktree request), if any."""
        return self.teams.launch_warning(node_id)

    # ----- read-only questions (queries.Queries) ----------------------------------------
    async def wait(
        self, caller_id: str, names: Sequence[str] | None, seconds: float | None
    ) -> dict[str, Any]:
        """Until the named children (default: all the caller's) are no longer live, a
        timeout, or mail for the caller (see `queries.Queries.wait`)."""
        return await self.queries.wait(caller_id, names, seconds)

    async def collect(self, caller_id: str, name: str, *, again: bool = False) -> dict[str, Any]:
        """The child's final text + verdict, once (`again`: a second time); its text is
        in `outputs/<name>.output.md` (see `queries.Queries.collect`)."""
        return await self.queries.collect(caller_id, name, again=again)

    def status(self, caller_id: str, name: str | None = None) -> dict[str, Any]:
        return self.queries.status(caller_id, name)

    def tree_text(self, caller_id: str) -> str:
        return self.queries.tree_text(caller_id)

    async def wait_idle_tree(self, node_ids: Iterable[str] | None = None) -> None:
        """Until no node (or none of `node_ids` and their subtrees) is live."""
        await self.queries.wait_idle_tree(node_ids)
