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
from legion_tui.runs.socket_link import socket_path_for
from legion_tui.session.progress import SessionProgress
from legion_tui.state import Clock, LegionModel
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
from legion_tui.supervisor.state.naming import Names
from legion_tui.supervisor.state.progress_watch import ProgressWatch
from legion_tui.supervisor.state.record import Record
from legion_tui.supervisor.state.roster import Roster
from legion_tui.supervisor.teams.phase_watch import PhaseWatch
from legion_tui.supervisor.teams.teams import Teams
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import Budgets, ChildRequest

if TYPE_CHECKING:
    from legion_tui.git.worktree import Worktree
    from legion_tui.ledger import Ledger
    from legion_tui.mail.service import MailService
    from legion_tui.phases.timeouts import PhaseClock
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
        self.project_dir = project_dir.resolve()
        # The kind `auto` cards get on this host, over `[agent] default` — a host that is
        # itself a simulation (the demo, the tests) says "sim" here, explicitly.
        self.default_kind = default_kind
        self.clock = clock
        self.seed = seed
        self.speed = speed
        # Held for the host's life: the session's run is ours alone from before it is
        # looked up (two hosts opening it at once: one gets SessionBusy, nothing else).
        self.host_lock = claim_session(self.project_dir, session)
        self.run, self.reopened = runs.open_session(self.project_dir, session, task=task)
        settings = read_host_settings(self.project_dir, cluster)
        self.budgets = budgets or settings.budgets
        self.stop_grace = settings.stop_grace if stop_grace is None else stop_grace
        # Where agents run: here, or on a Ray cluster (whose lost nodes NodeLoss retires).
        self.cluster = settings.cluster
        self.model = LegionModel(self.run.run_id, session, clock=clock)
        self.socket_path = socket_path_for(self.run)
        # A git repository the host owns (the demo's sandbox). When set, every
        # centurion's worktree is made from it — never from the project — and simulated
        # centurions get one too (they commit there); the user's repository is untouched.
        self.sandbox: Path | None = None
        self._started = False
        self._closed = False
        self._build_parts(settings.phase_timeouts)
        self.services = Services(  # the ledger, mail, phase clock, socket, session watcher
            self.model, self.run, self.phase_watch, self.progress_watch, self.orphans,
            clock=clock, deliverable=self.lifecycle.deliverable,
            server=self._server if serve else None, watch=watch,
        )  # fmt: skip

    def _build_parts(self, phase_timeouts: dict[str, int]) -> None:
        """Each part gets what it reads and writes; what exists only once started (the
        ledger's echo, the mail service) or is built after it reaches it as a callback."""
        closed, model, run, clock = (lambda: self._closed), self.model, self.run, self.clock
        mail = lambda: self.mail  # noqa: E731 — None until started
        grace = lambda: self.stop_grace  # noqa: E731 — read at each stop: tests lower it
        self.names = names = Names(model)
        self.record = record = Record(model, names)  # the one write path
        self.roster = roster = Roster()  # who runs now: handles, monitors, turn events, marks
        self.orphans = OrphanReaper()
        self.progress_watch = ProgressWatch(
            model, run.sessions_dir, clock, ledger=lambda: self.ledger, closed=closed
        )
        self.phase_watch = PhaseWatch(model, operator=phase_timeouts, clock=clock, mail=mail)
        parts = (model, names, record, roster)
        self.stops = stops = Stops(*parts, run_id=run.run_id, clock=clock, grace=grace)
        self.teams = teams = Teams(
            *parts, run=run, project_dir=self.project_dir, clock=clock,
            card_for=lambda node: self.admission.card_for(node),
            sandbox=lambda: self.sandbox, echo=lambda: self.services.echoing(), mail=mail,
        )  # fmt: skip
        self.admission = admission = Admission(
            model, names, record, run=run, project_dir=self.project_dir,
            socket_path=self.socket_path, clock=clock, default_kind=self.default_kind,
            budgets=lambda: self.budgets, worktree_repo=teams.worktree_repo,
        )  # fmt: skip
        self.continuity = Continuity(
            model, record, roster, stops, admission,
            run=run, clock=clock, previous_owner=run.owner_pid, grace=grace,
        )  # fmt: skip
        self.results = FinishedResults()
        self.node_loss = NodeLoss(model, names, roster, stops)
        endings = Endings(model, run, progress=self.progress, mail=mail)
        # Completion notices (issue 11): every ending written reaches them.
        self.notices = notices = Notices(
            model, self.results, result_of=endings.result_of, send=endings.send_notice,
            announce=self._announce, busy=roster.turn_running, changed=record.notify,
            clock=clock,
        )  # fmt: skip
        record.moved.append(notices.ended)
        self.lifecycle = Lifecycle(*parts, teams, notices, progress=self.progress, closed=closed)
        self.blocking = Blocking(record, names)  # BLOCKED from the agents' questions
        self.budget = BudgetWatch(  # a subtree past its dollar budget is stopped
            model, stop=lambda name: self.stop(ROOT_ID, name), event=record.event,
            announce=self._announce, closed=closed, run=run_limit(self.project_dir),
        )  # fmt: skip
        self.queries = Queries(
            model, names, run, clock, progress=self.progress, delivery=teams.delivery_of,
            idle=roster.between_turns, changed=lambda: record.changed, mail=mail,
            notices=notices, result_of=endings.result_of,
        )  # fmt: skip
        self.launcher = Launcher(
            *parts, admission, teams, notices, self.lifecycle, self.blocking, self.budget,
            self.node_loss, run=run, socket_path=self.socket_path, cluster=self.cluster,
            seed=self.seed, speed=self.speed, closed=closed,
        )  # fmt: skip
        self.control = Control(
            *parts, stops, notices, self.lifecycle, admission, teams, self.launcher,
            closed=closed,
        )  # fmt: skip

    def _announce(self, text: str) -> None:
        self.model.announce(ROOT_ID, text)

    def _server(self) -> SupervisorServer:
        from legion_tui.supervisor.socket.server import SupervisorServer

        return SupervisorServer(self)

    @property
    def ledger(self) -> Ledger | None:
        """The run's ledger, once started."""
        return self.services.ledger

    @property
    def mail(self) -> MailService | None:
        """The mail service (SPEC §6.5), once started."""
        return self.services.mail

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

        self.admission.cards = load_cards(self.project_dir)
        ledger = await self.services.open_ledger()
        try:
            self.record.open(ledger)
            await self.continuity.open(reopened=self.reopened)
            self.run = runs.touch_run(self.run)
            await self.services.start(self.record, self.socket_path)
        except BaseException as err:
            # Whatever started must end, or the ledger's writer thread keeps the process
            # alive for ever after the error (a corrupt or read-only ledger, a bad task).
            self._closed = True
            await self.services.undo()
            self.host_lock.release()
            if isinstance(err, Exception) and not isinstance(err, LedgerError):
                raise StartFailed(f"{type(err).__name__}: {err}") from err
            raise

    async def close(self) -> None:
        """Exit is a pause (SPEC §6.6): live nodes become `retired` with reason
        `session-shutdown` — written FIRST, before any process is touched, so a child that
        dies mid-drain is never read as settled — then every agent is stopped."""
        if self._closed or not self._started:
            self._closed = True
            self.host_lock.release()
            return
        self._closed = True
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
        return await self.control.stop(caller_id, name, force=force)

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
