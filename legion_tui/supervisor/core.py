"""The Supervisor: one per hosting process, living in the host's asyncio loop.

It owns the run (SPEC §2), the ledger writer, the session watcher and the socket server,
and keeps the in-memory `LegionModel` and the ledger in step: every status change is
written to the ledger first and then shown, so a second `legion status` reading the
ledger and the dashboard never disagree for long.

Ops (SPEC §5, §6.3) are methods taking the caller's node id; the socket server and the
dashboard (`legion_tui.ops.Operations`, which acts as root) both come through here, so
the permission rules live in one place: a node controls only its own descendants, root
controls everything, only root dispatches a centurion.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui import receipts
from legion_tui.agents.cards import RoleCard
from legion_tui.model import (
    EventType,
    Node,
    NodeStatus,
    Usage,
)
from legion_tui.ops import OpError
from legion_tui.session.progress import SessionProgress
from legion_tui.state import Clock, LegionModel
from legion_tui.supervisor import runs
from legion_tui.supervisor.admission import Admission, Budgets, ChildRequest
from legion_tui.supervisor.backend import (
    ABORT_BOUND,
    AgentHandle,
    LaunchSpec,
)
from legion_tui.supervisor.backends.registry import make_handle
from legion_tui.supervisor.blocking import Blocking
from legion_tui.supervisor.budget import BudgetWatch, run_limit
from legion_tui.supervisor.continuity import Continuity
from legion_tui.supervisor.lifecycle import Lifecycle
from legion_tui.supervisor.naming import ROOT_ID, Names
from legion_tui.supervisor.node_loss import NodeLoss
from legion_tui.supervisor.notices import Notices
from legion_tui.supervisor.orphans import OrphanReaper
from legion_tui.supervisor.queries import Queries, verdict_of
from legion_tui.supervisor.record import Record
from legion_tui.supervisor.results import FinishedResults, Result, write_output
from legion_tui.supervisor.roster import Roster
from legion_tui.supervisor.stops import Stops
from legion_tui.supervisor.teams import Teams

if TYPE_CHECKING:
    from legion_tui.agents.cards import CardSet
    from legion_tui.attach import AttachPlan
    from legion_tui.ledger import Ledger
    from legion_tui.mail.service import MailService
    from legion_tui.ops import Workspace
    from legion_tui.settings import ClusterSettings
    from legion_tui.supervisor.worktree import Worktree

__all__ = [
    "ROOT_ID",
    "Budgets",
    "ChildRequest",
    "StartFailed",
    "Supervisor",
]

log = logging.getLogger(__name__)


class StartFailed(RuntimeError):
    """The host could not start (after its ledger opened); what it began is closed."""


def _has_file(path: str | None) -> bool:
    # One stat; cheap enough to do inline in the loop.
    return bool(path) and os.path.exists(path or "")


def _usage_of(progress: SessionProgress) -> Usage:
    t = progress.tokens
    return Usage(
        input=t.input,
        output=t.output,
        cache_read=t.cache_read,
        cache_write=t.cache_write,
        cost=t.cost,
        generation_ms=progress.generation_ms,
        turns=progress.turns,
    )


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
        self._serve = serve
        self._watch = watch
        # Held for the host's life: the session's run is ours alone from before it is
        # looked up (two hosts opening it at once: one gets SessionBusy, nothing else).
        self.host_lock = runs.claim_session(self.project_dir, session)
        self.run, self.reopened = runs.open_session(self.project_dir, session, task=task)
        settings_budgets, settings_grace = _settings_for(self.project_dir)
        self.budgets = budgets or settings_budgets
        self.stop_grace = settings_grace if stop_grace is None else stop_grace
        self.model = LegionModel(self.run.run_id, session, clock=clock)
        self.socket_path = runs.socket_path_for(self.run)
        self.names = Names(self.model)
        self.record = Record(self.model, self.names)  # the one write path
        self.roster = Roster()  # who runs now: handles, monitors, turn events, marks
        self.orphans = OrphanReaper()
        self.stops = Stops(
            self.model,
            self.names,
            self.record,
            self.roster,
            run_id=self.run.run_id,
            clock=clock,
            grace=lambda: self.stop_grace,
        )
        self.teams = Teams(
            self.model,
            self.names,
            self.record,
            self.roster,
            run=self.run,
            project_dir=self.project_dir,
            clock=clock,
            card_for=self._card_for,
            sandbox=lambda: self.sandbox,
            echo=lambda: self._echo,
            mail=lambda: self.mail,
        )
        self.admission = Admission(
            self.model,
            self.names,
            self.record,
            run=self.run,
            project_dir=self.project_dir,
            socket_path=self.socket_path,
            clock=clock,
            default_kind=default_kind,
            budgets=lambda: self.budgets,
            worktree_repo=self.teams.worktree_repo,
        )
        self.continuity = Continuity(
            self.model,
            self.record,
            self.roster,
            self.stops,
            self.admission,
            run=self.run,
            clock=clock,
            previous_owner=self.run.owner_pid,
            grace=lambda: self.stop_grace,
        )
        self.results = FinishedResults()
        # Where agents run: here, or on a Ray cluster (whose lost nodes NodeLoss retires).
        self.cluster = _cluster_for(self.project_dir, cluster)
        self.node_loss = NodeLoss(self.model, self.names, self.roster, self.stops)
        # Completion notices (issue 11): every ending written reaches them.
        self.notices = Notices(
            self.model,
            self.results,
            result_of=self._result_of,
            send=self._send_notice,
            announce=lambda text: self.model.announce(ROOT_ID, text),
            busy=self._turn_busy,
            changed=self.record.notify,
            clock=clock,
        )
        self.record.moved.append(self.notices.ended)
        self.lifecycle = Lifecycle(
            self.model,
            self.names,
            self.record,
            self.roster,
            self.teams,
            self.notices,
            progress=self.progress,
            closed=lambda: self._closed,
        )
        self.blocking = Blocking(self.record, self.names)  # BLOCKED from the agents' questions
        self.budget = BudgetWatch(  # a subtree past its dollar budget is stopped
            self.model,
            stop=lambda name: self.stop(ROOT_ID, name),
            event=self.record.event,
            announce=lambda text: self.model.announce(ROOT_ID, text),
            closed=lambda: self._closed,
            run=run_limit(self.project_dir),
        )
        self.queries = Queries(
            self.model,
            self.names,
            self.run,
            clock,
            progress=self.progress,
            delivery=self.teams.delivery_of,
            idle=self._turn_idle,
            changed=lambda: self.record.changed,
            mail=lambda: self.mail,
            notices=self.notices,
            result_of=self._result_of,
        )
        self.ledger: Any = None  # legion_tui.ledger.Ledger once started
        self._server: Any = None
        self.mail: MailService | None = None  # once started
        self.phase_clock: Any = None  # legion_tui.phases.timeouts.PhaseClock once started
        self._clock_task: asyncio.Task[None] | None = None
        # A git repository the host owns (the demo's sandbox). When set, every
        # centurion's worktree is made from it — never from the project — and simulated
        # centurions get one too (they commit there); the user's repository is untouched.
        self.sandbox: Path | None = None
        self._echo: Any = None  # mail.service.EchoingLedger: ledger writes echoed to the model
        self._watcher: Any = None
        self._watch_task: asyncio.Task[None] | None = None
        self._started = False
        self._closed = False
        self._spawn_lock = asyncio.Lock()
        self._seq = 0
        self.launches = 0  # agents started by this host (tests assert "zero spawns")
        self.progress_updates = 0

    @property
    def events_written(self) -> int:
        """Events this host wrote itself (the demo's report counts them)."""
        return self.record.events_written

    @property
    def interrupted_on_open(self) -> list[str]:
        """Nodes this open found interrupted (paused or orphaned) with a session to resume."""
        return self.continuity.interrupted_on_open

    # ----- lifecycle --------------------------------------------------------------------
    async def start(self) -> None:
        """Open the ledger, restore or create the tree, serve the socket, watch sessions."""
        if self._started:
            return
        self._started = True
        from legion_tui.agents.cards import load_cards
        from legion_tui.ledger import open_ledger

        self.admission.cards = load_cards(self.project_dir)
        from legion_tui.ledger import LedgerError

        self.ledger = await open_ledger(self.run.ledger_path, create=True, clock=self.clock)
        try:
            await self._start_on(self.ledger)
        except BaseException as err:
            # Whatever started must end, or the ledger's writer thread keeps the process
            # alive for ever after the error (a corrupt or read-only ledger, a bad task).
            await self._undo_start()
            if isinstance(err, Exception) and not isinstance(err, LedgerError):
                raise StartFailed(f"{type(err).__name__}: {err}") from err
            raise

    async def _start_on(self, ledger: Ledger) -> None:
        self.record.open(ledger)
        await self.continuity.open(reopened=self.reopened)
        self.run = runs.touch_run(self.run)
        # Mail (SPEC §6.5): the postman hands letters over through the agents' handles.
        from legion_tui.mail.service import EchoingLedger, MailService

        # The mail service, the postman and the phase clock write through the echo: the
        # events the ledger writes for them (mail_sent/delivered/bounced, phase_timeout)
        # reach the live model at once, like the supervisor's own (`_event`).
        self._echo = EchoingLedger(ledger, self.model)
        self.mail = MailService(self._echo, self.model, self._mail_handle)
        self.mail.start()
        from legion_tui.phases.timeouts import PhaseClock

        # Advisory phase clocks (SPEC §6.4): one `Phase timeout:` notice per stint.
        self.phase_clock = PhaseClock(
            self._echo, operator=_phase_timeouts_for(self.project_dir), clock=self.clock
        )
        self._clock_task = asyncio.create_task(self._run_phase_clock(), name="phase-clock")
        self.orphans.start()  # the agents' double-forked helpers re-parent to us
        if self._serve:
            from legion_tui.supervisor.server import SupervisorServer

            self._server = SupervisorServer(self)
            await self._server.start(self.socket_path, link=self.run.socket_link)
        if self._watch:
            from legion_tui.session.watcher import SessionWatcher

            self._watcher = SessionWatcher(self.run.sessions_dir, self._on_progress, self.clock)
            self._watch_task = asyncio.create_task(self._watcher.run(), name="session-watcher")

    async def _undo_start(self) -> None:
        """A start that failed half-way: end what it began, each part alone (one that
        fails to close must not keep the next one open); nothing else runs after."""
        self._closed = True
        steps: list[Callable[[], Awaitable[object]]] = []
        if self.mail is not None:
            steps.append(self.mail.close)
        if self._server is not None:
            steps.append(self._server.close)
        if self._watcher is not None:
            self._watcher.stop()
        for task in (self._clock_task, self._watch_task):
            if task is not None:
                task.cancel()
                steps.append(functools.partial(asyncio.gather, task, return_exceptions=True))
        if self.ledger is not None:
            steps.append(self.ledger.close)
        steps.append(self.orphans.close)
        for step in steps:
            try:
                await asyncio.wait_for(step(), 5.0)
            except Exception:
                log.exception("closing after a failed start")
        self.host_lock.release()

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
        # A postman or phase clock that died of an error must not keep the children
        # from being paused: its error is logged, and the pause goes on.
        if self.mail is not None:  # no hand-over to an agent that is being paused
            try:
                await self.mail.close()
            except Exception:
                log.exception("the postman had failed")
        if self._clock_task is not None:
            self._clock_task.cancel()
            try:
                await self._clock_task
            except asyncio.CancelledError:
                pass
            except Exception:
                log.exception("the phase clock had failed")
            self._clock_task = None
        await self.continuity.pause()
        if self._server is not None:
            await self._server.close()
            self._server = None
        if self._watcher is not None:
            self._watcher.stop()
        if self._watch_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._watch_task, 5.0)
            self._watch_task = None
        if self.ledger is not None:
            await self.ledger.flush()
            await self.ledger.close()
        await self.orphans.close()  # after the agents' stop: their last orphans too
        self.run = runs.touch_run(self.run)  # updatedAt: when this session last paused
        self.host_lock.release()  # last: the run is ours until everything above is done
        self.record.notify()

    async def __aenter__(self) -> Supervisor:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _on_progress(self, node_id: str, progress: SessionProgress) -> None:
        if node_id not in self.model.nodes:
            return  # a stray file in sessions/: not ours to show
        self.progress_updates += 1
        self.model.set_progress(node_id, progress)
        if self.ledger is not None and not self._closed:
            self.ledger.queue_usage(node_id, _usage_of(progress))

    # ----- lookup and permissions (naming.Names) ----------------------------------------
    def node(self, node_id: str) -> Node:
        return self.names.node(node_id)

    def _caller(self, caller_id: str) -> Node:
        return self.names.caller(caller_id)

    def is_descendant(self, node_id: str, ancestor_id: str) -> bool:
        return self.names.is_descendant(node_id, ancestor_id)

    def depth(self, node_id: str) -> int:
        return self.names.depth(node_id)

    def resolve(self, caller_id: str, name: str) -> Node:
        """`name`, `parent/name`, a full `root/...` path or a node id, restricted to the
        caller's descendants (see `naming.Names.resolve`)."""
        return self.names.resolve(caller_id, name)

    # ----- spawn ------------------------------------------------------------------------
    async def spawn(self, caller_id: str, requests: Sequence[ChildRequest]) -> list[Node]:
        """Validate the whole batch, then create and launch it. Every refusal (rules,
        names, budgets, cards, phases) happens before any row, file or process exists."""
        if self._closed:
            raise OpError("CLOSED", "the supervisor is shutting down")
        if not requests:
            raise OpError("BAD_REQUEST", "spawn needs at least one child")
        async with self._spawn_lock:  # two batches must not both pass the budget check
            caller = self._caller(caller_id)
            if caller.id != ROOT_ID and not caller.live:
                raise OpError("FORBIDDEN", f"{caller.name} has ended and cannot spawn")
            if caller.id in self.roster.stopping:  # still live, but its subtree is being retired
                raise OpError("FORBIDDEN", f"{caller.name} is being stopped and cannot spawn")
            plans = await self.admission.plan(caller, requests)
            nodes = [plan.node for plan in plans]
            from legion_tui.ledger import NameConflict

            try:
                await self.ledger.insert_nodes(nodes)
            except NameConflict as err:
                raise OpError("NAME_CONFLICT", str(err)) from err
            for plan in plans:
                self.admission.card_of[plan.node.id] = plan.card
                self.model.upsert(plan.node)
        # The batch starts together: a real agent takes seconds to answer (pi: 2–5 s
        # here), and six started one after another kept the caller waiting for all.
        await asyncio.gather(
            *(
                self._launch(plan.node, plan.request, plan.command, plan.isolate, resume=False)
                for plan in plans
            )
        )
        return [self.node(n.id) for n in nodes]

    async def _launch(
        self,
        node: Node,
        req: ChildRequest | None,
        command: list[str] | None,
        isolate: bool,
        *,
        resume: bool,
    ) -> bool:
        """Start the node's agent; True when it runs (the node is `running`)."""
        if self._stopped_meanwhile(node.id):
            # The host paused, or a stop began (it marks `_stopping` at once, before its
            # `retired` is written), before this node's turn came. The same check runs
            # again after each await below.
            return False
        self._seq += 1
        card = self._card_for(node)
        self.budget.track(node.id, req, card)
        warning = await self.teams.worktree_for_launch(node, req, resume=resume)
        if self._stopped_meanwhile(node.id):
            return False  # stopped during the worktree's await: start nothing
        spec = LaunchSpec(
            node_id=node.id,
            run_id=self.run.run_id,
            name=node.name,
            role=node.role,
            kind=node.kind,
            task=node.task,
            session_file=Path(node.session_file or self.run.sessions_dir / f"{node.id}.jsonl"),
            run_dir=self.run.dir,
            cwd=self.teams.cwd_for(node),
            socket_path=self.socket_path,
            command=command,
            isolate=isolate,
            seed=req.seed if req is not None and req.seed is not None else self.seed + self._seq,
            speed=self.speed,
            sim_behaviour=self._sim_behaviour(node, req),
            resume=resume,
            system_prompt=card.prompt if card is not None else "",
            tools=card.tools if card is not None else (),
        )
        node_id = node.id
        handle = make_handle(
            spec,
            on_stream=lambda segment: self.model.set_streaming(node_id, segment),
            on_line=lambda line: self.model.set_terminal_line(node_id, line),
            on_input=lambda question: self._needs_input(node_id, question),
            cluster=self.cluster,
            on_lost=lambda why: self.node_loss.lost(node_id, why),
        )
        self.roster.attach(node.id, handle)
        self.launches += 1
        try:
            await handle.start()
        except Exception as err:
            if self._stopped_meanwhile(node.id, handle):
                # Stopped while starting: that, not a launch failure, is the story. Whatever
                # half-started is ours to end (the stop found nothing to signal yet).
                await self._abandon(node.id, handle)
                return False
            self.roster.detach(node.id)
            log.warning("launch of %s failed: %s", node.path, err)
            # A spawn's reply says so to the parent; a resume's failure is told by notice.
            with self.notices.telling([] if resume else [node.id], "spawn"):
                await self.record.set_status(
                    node.id,
                    NodeStatus.FAILED,
                    EventType.NODE_FAILED,
                    {"reason": "launch-failed", "error": str(err)},
                    error=f"launch failed: {err}",
                )
            return False
        if self._stopped_meanwhile(node.id, handle):
            # Paused or stopped while starting: the stop may have popped this handle
            # before its process existed and so signalled nothing — stop what we just
            # started; writing `running` now would contradict the ledger's `retired`.
            await self._abandon(node.id, handle)
            return False
        await self.record.set_status(
            node.id,
            NodeStatus.RUNNING,
            EventType.NODE_LAUNCHED,
            {
                "name": node.name,
                "path": node.path,
                "role": node.role,
                "card": self.admission.card_name(node),
                "kind": node.kind,
                "backend": handle.backend,
                "pid": handle.pid,
                "resumed": resume,
                **self.teams.worktree_data(node.id, warning),
            },
            pid=handle.pid,
            backend=handle.backend,
        )
        monitor = asyncio.create_task(
            self.lifecycle.monitor(node.id, handle), name=f"monitor-{node.path}"
        )
        self.roster.watch(node.id, monitor)
        return True

    def _needs_input(self, node_id: str, question: str | None) -> None:
        """The agent waits on its user for `question` (None: answered): BLOCKED and back."""
        if not self._closed and node_id not in self.roster.stopping:
            self.blocking.told(node_id, question)

    def _stopped_meanwhile(self, node_id: str, handle: AgentHandle | None = None) -> bool:
        """Whether a pause or stop landed during one of `_launch`'s awaits."""
        if self._closed or node_id in self.roster.stopping:
            return True
        if self.node(node_id).status is NodeStatus.RETIRED:
            return True
        return handle is not None and self.roster.handle(node_id) is not handle

    async def _abandon(self, node_id: str, handle: AgentHandle) -> None:
        """End an agent a stop raced past; failures are logged, the stop already stands."""
        self.roster.detach(node_id, only=handle)
        try:
            await handle.stop(force=True, grace=0.0)
        except Exception as err:
            log.warning("stopping the abandoned launch of %s failed: %s", node_id, err)

    def _sim_behaviour(self, node: Node, req: ChildRequest | None) -> dict[str, Any]:
        """The sim knobs of a launch; a simulated agent working in a worktree is told
        so (only then do its edits change files and commit, there and nowhere else)."""
        behaviour = dict(req.sim) if req is not None else {}
        behaviour.pop("worktree", None)  # not the caller's to choose
        tree = self.worktree_of(node.id) if node.kind == "sim" else None
        if tree is not None:
            behaviour["worktree"] = str(tree.cwd)
        return behaviour

    # ----- settling ---------------------------------------------------------------------
    def progress(self, node_id: str) -> SessionProgress:
        """The freshest progress: the node's file is polled once more before answering
        (its last line may have landed after the watcher's last look)."""
        view = self.model.nodes.get(node_id)
        if view is None:
            return SessionProgress()
        path = view.node.session_file
        if path and self._watcher is not None:
            self._watcher.poll_paths([os.path.abspath(path)])
            return self.model.nodes[node_id].progress
        if _has_file(path):
            from legion_tui.session.reader import read_session

            progress = read_session(path or "")
            self.model.set_progress(node_id, progress)
            return progress
        return view.progress

    def _mail_handle(self, node_id: str) -> _TurnWatchingDelivery | None:
        """The postman's way to a node's agent: a letter handed to an idle agent starts a
        turn, which the supervisor must hear of like a steer's (else the node stays
        `settled` while it works and its monitor never looks again)."""
        handle = self.roster.handle(node_id)
        return None if handle is None else _TurnWatchingDelivery(self, node_id, handle)

    # ----- completion notices (notices.Notices) -----------------------------------------
    def _result_of(self, node: Node, round_: int, data: dict[str, object]) -> Result:
        """What the node ended with (this round), its full text in its output file.
        `data` is the ending event's; empty when the result is taken again later (an
        evicted entry, another host's ending): then the ledger's row, the output file
        already written and the newest ending event the model holds say it."""
        out = self.queries.output_file(node)
        if not data:
            data = self._ending_data(node.id)
            if out.is_file():
                text = out.read_text(encoding="utf-8").removesuffix("\n")
            else:
                text = self.progress(node.id).last_text
                write_output(out, text)
        else:
            text = self.progress(node.id).last_text
            write_output(out, text)
        verdict = node.verdict_data
        if verdict is None:
            verdict = verdict_of(self.progress(node.id))
        delivery = data.get("delivery")
        notes = data.get("notes")
        return Result(
            node_id=node.id,
            name=node.name,
            path=node.path,
            round=round_,
            status=node.status.value,
            verdict=verdict,
            error=node.error,
            text=text,
            output_file=str(out),
            delivery=delivery if isinstance(delivery, dict) else None,
            notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (),
            text_chars=len(text),
        )

    def _ending_data(self, node_id: str) -> dict[str, object]:
        view = self.model.nodes.get(node_id)
        ends = (EventType.NODE_SETTLED, EventType.NODE_FAILED, EventType.NODE_RETIRED)
        for event in reversed(view.events if view is not None else ()):
            if event.type in ends:
                return dict(event.data)
        return {}

    async def _send_notice(
        self, parent: str, results: Sequence[Result], subject: str, body: str
    ) -> int | None:
        """A notice is a letter (kind `notice`) from the first member to its parent: the
        mail path hands it over (an idle agent: a turn starts) and confirms it."""
        if self.mail is None:
            return None
        from legion_tui.model import MailKind

        sent = await self.mail.send(
            results[0].node_id, "parent", subject, body, kind=MailKind.NOTICE.value
        )
        return None if sent["state"] == "bounced" else int(sent["message_id"])

    def _turn_busy(self, node_id: str) -> bool:
        handle = self.roster.handle(node_id)
        return handle is not None and handle.turn_running()

    # ----- stop (stops.Stops) ------------------------------------------------------------
    async def stop(self, caller_id: str, name: str, *, force: bool = False) -> str:
        """SPEC §6.3 stop: retire the node and its subtree, children first; the receipt
        says what really happened. The receipt tells a parent of its own children's
        ending; a stop by anyone else (root, the user) is told to the parent by notice."""
        caller = self._caller(caller_id)
        if name == "all":
            told = list(self.model.children(caller.id))
        else:
            target = self.resolve(caller_id, name)
            told = [target.id] if target.parent_id == caller.id else []
        with self.notices.telling(told, "stop"):
            return await self.stops.stop(caller_id, name, force=force)

    # ----- abort / steer / resume ---------------------------------------------------------
    def _controllable(self, caller_id: str, name: str, verb: str) -> tuple[Node, AgentHandle]:
        target = self.resolve(caller_id, name)
        if target.status is NodeStatus.RETIRED:
            raise OpError("RETIRED", f"{verb} failed: {target.name} is retired")
        handle = self.roster.handle(target.id)
        if handle is None or (verb == "steer" and handle.exited is not None):
            raise OpError(
                "NOT_RUNNING",
                f"{verb} failed: {target.name} has no running agent "
                f"({target.status.value}; `legion resume {target.name}` starts it again)",
            )
        return target, handle

    async def abort(
        self, caller_id: str, name: str, *, keep_queue: bool = False
    ) -> tuple[str, str]:
        """(outcome, receipt) — exactly the three receipts of SPEC §6.3."""
        target, handle = self._controllable(caller_id, name, "abort")
        result = await handle.abort(keep_queue=keep_queue, bound=ABORT_BOUND)
        await self.record.event(
            target.id,
            EventType.NODE_ABORTED,
            {"name": target.name, "outcome": result.outcome, "dropped": result.dropped},
        )
        if result.outcome == "interrupted" and result.exited is not None:
            return result.outcome, receipts.aborted_command(target.name, result.exited)
        if result.outcome == "interrupted":
            return result.outcome, receipts.aborted(target.name, result.dropped)
        if result.outcome == "no-turn":
            return result.outcome, receipts.nothing_to_abort(target.name)
        return result.outcome, receipts.abort_timeout(target.name, ABORT_BOUND)

    async def steer(self, caller_id: str, name: str, text: str) -> tuple[str, str]:
        """(outcome, receipt): queued for the next turn boundary, accepted (a turn
        started), or intercepted."""
        target, handle = self._controllable(caller_id, name, "steer")
        outcome = await handle.steer(text)
        await self.record.event(target.id, EventType.NODE_STEERED, {"outcome": outcome})
        if outcome == "accepted":
            await self.lifecycle.turn_began(target.id)
        return outcome, receipts.steered(target.name, outcome)

    async def resume(self, caller_id: str, name: str) -> str:
        """Resume an ended node on its old session file (SPEC §6.6); never automatic."""
        target = self.resolve(caller_id, name)
        if target.id in self.roster.resuming:
            raise OpError("ALREADY_RUNNING", f"{target.name} is already resuming")
        previous = self.roster.handle(target.id)
        if (previous is not None and previous.exited is None) or (previous is None and target.live):
            # A live node without a handle is being launched right now (spawn or resume).
            raise OpError(
                "ALREADY_RUNNING", f"{target.name} is {target.status.value}; steer it instead"
            )
        if target.id in self.roster.stopping and target.status is not NodeStatus.RETIRED:
            raise OpError("STOPPING", f"{target.name} is being stopped; resume it after")
        self.roster.resuming.add(target.id)
        # Its last stop is over (it is retired, or never stopped): relaunching is allowed.
        self.roster.stopping.discard(target.id)
        try:
            return await self._resume(target, previous)
        finally:
            self.roster.resuming.discard(target.id)

    async def _resume(self, target: Node, previous: AgentHandle | None) -> str:
        # Stopped before its agent wrote anything (pi writes its file only with its first
        # answer): there is nothing to continue, so it starts again on the same task.
        continues = _has_file(target.session_file)
        parent = self.model.nodes.get(target.parent_id or "")
        if parent is not None and parent.node.id != ROOT_ID and not parent.node.live:
            raise OpError(
                "FORBIDDEN", f"resume {parent.node.name} first: {target.name}'s parent has ended"
            )
        if previous is not None:  # it exited (failed): sweep what is left, then relaunch
            self.roster.detach(target.id)
            # Its monitor must not judge the old agent's exit after the relaunch.
            monitor = self.roster.unwatch(target.id)
            if monitor is not None:
                monitor.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await monitor
            await previous.stop(force=True, grace=0.0)
        node = await self.record.set_status(target.id, NodeStatus.STARTING, None, {}, error=None)
        if node is None:  # it moved while the old agent was swept (a stop, a launch)
            raise OpError("ALREADY_RUNNING", f"{target.name} changed while resuming; look again")
        self.model.mark_interrupted(target.id, False)
        card_name = self.admission.card_name(node)
        command = self.admission.command_of(card_name, node.kind)
        isolate = node.backend == "process" and node.kind == "sim"
        before = await self.teams.revive_stint(node)
        started = False
        try:
            started = await self._launch(node, None, command or None, isolate, resume=continues)
        finally:
            if before is not None and not started and not self._closed:
                await self.teams.restore_stint(before)
        if not continues:
            return receipts.restarted(node.name)
        return receipts.resumed(node.name, Path(node.session_file or ""))

    # ----- worktrees (teams.Teams) ----------------------------------------------------------
    def launch_warning(self, node_id: str) -> str | None:
        """The warning a node's launch carried (a demoted worktree request), if any."""
        return self.teams.launch_warning(node_id)

    # ----- declared phases (SPEC §6.4) ------------------------------------------------------
    async def _run_phase_clock(self) -> None:
        """Advisory clocks: report live teams past their stint's limit. A report never
        stops anything; its notice goes to the postman at once."""
        from legion_tui.phases.timeouts import CHECK_SECONDS

        while True:
            teams = [v.node for v in self.model.nodes.values() if v.node.phase is not None]
            for report in await self.phase_clock.check_all(teams):
                team = self.model.nodes.get(report.stint.node_id)
                if team is not None and team.node.parent_id is not None and self.mail:
                    self.mail.notify(team.node.parent_id)
            await asyncio.sleep(CHECK_SECONDS)

    def worktree_of(self, node_id: str) -> Worktree | None:
        """The worktree a node works in: its own (a centurion's) or its nearest
        ancestor's; None when the team works in the project itself."""
        return self.teams.worktree_of(node_id)

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

    # ----- wait / collect / status --------------------------------------------------------
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

    async def delivery_of(self, node_id: str) -> dict[str, Any] | None:
        """A centurion's branch + HEAD sha (+ a link gh/glab reports); None without one."""
        return await self.teams.delivery_of(node_id)

    def output_file(self, node: Node) -> Path:
        return self.queries.output_file(node)

    def status(self, caller_id: str, name: str | None = None) -> dict[str, Any]:
        return self.queries.status(caller_id, name)

    def tree_text(self, caller_id: str) -> str:
        return self.queries.tree_text(caller_id)

    async def wait_idle_tree(self, node_ids: Iterable[str] | None = None) -> None:
        """Until no node (or none of `node_ids` and their subtrees) is live."""
        await self.queries.wait_idle_tree(node_ids)

    def _card_for(self, node: Node) -> RoleCard | None:
        """The node's role card, None when no card of that name is loaded."""
        return self.admission.card_for(node)

    def _turn_idle(self, node_id: str) -> bool:
        handle = self.roster.handle(node_id)
        return handle is not None and not handle.turn_running()


@dataclass(frozen=True, slots=True)
class _TurnWatchingDelivery:
    """An agent handle as the postman sees it (`mail.service.Deliverable`): delivering
    to an idle agent starts a turn, and the supervisor is told (`Lifecycle.turn_began`)."""

    supervisor: Supervisor
    node_id: str
    handle: AgentHandle

    async def deliver(self, envelope: str) -> None:
        was_running = self.handle.turn_running()
        await self.handle.deliver(envelope)
        if not was_running and self.handle.turn_running():
            await self.supervisor.lifecycle.turn_began(self.node_id)


class RootOperations:
    """`legion_tui.ops.Operations` for the dashboard: node ids, acting as root."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    async def stop(self, node_id: str, *, force: bool = False) -> str:
        return await self.supervisor.stop(ROOT_ID, node_id, force=force)

    async def abort(self, node_id: str, *, keep_queue: bool = False) -> str:
        _outcome, receipt = await self.supervisor.abort(ROOT_ID, node_id, keep_queue=keep_queue)
        return receipt

    async def steer(self, node_id: str, text: str) -> str:
        _outcome, receipt = await self.supervisor.steer(ROOT_ID, node_id, text)
        return receipt

    async def resume(self, node_id: str) -> str:
        return await self.supervisor.resume(ROOT_ID, node_id)

    async def spawn(self, parent_id: str, request: ChildRequest) -> str:
        """The dashboard's new agent: the socket's `spawn` op for one child, the caller
        being its parent (root, or the lead it joins). A phases file is read here, from
        the project, with its own lines in a refusal — as `legion spawn --phases` does."""
        if isinstance(request.phases, str):
            from legion_tui.phases import MachineError, load_machine_file

            path = self.supervisor.project_dir / request.phases
            try:
                machine = load_machine_file(str(path)).to_dict()
            except MachineError as err:
                raise OpError("PHASES", str(err)) from err
            request = dataclasses.replace(request, phases=machine)
        (node,) = await self.supervisor.spawn(parent_id, [request])
        if node.status is NodeStatus.FAILED:
            raise OpError("START_FAILED", f"Failed to start {node.path}: {node.error}")
        said = f"Spawned {node.path} ({node.id})" + (" — simulated" if node.simulated else "")
        warning = self.supervisor.launch_warning(node.id)
        return said + (f"\nwarning: {warning}" if warning else "")

    async def role_cards(self) -> CardSet:
        return self.supervisor.admission.reload_cards()

    def workspace(self, node_id: str) -> Workspace | None:
        from legion_tui.ops import Workspace

        teams = self.supervisor.teams
        holder = teams.holder_of(node_id)
        tree = teams.worktree_of(node_id)
        return None if holder is None or tree is None else Workspace(holder, tree)

    def attach_plan(self, node_id: str) -> AttachPlan:
        """The node's agent UI on its session, as its backend would run it (legion_tui.attach)."""
        from legion_tui import attach

        sup = self.supervisor
        node = sup.node(node_id)
        link = Path(node.session_file or sup.run.dir / "sessions" / f"{node.id}.jsonl")
        link = link if link.is_absolute() else sup.run.dir / link
        cwd = sup.teams.cwd_for(node)
        command = sup.admission.command_of(sup.admission.card_name(node), node.kind)
        argv, session = attach.attach_argv(node.kind, node.name, link, command, cwd, path=None)
        handle = sup.roster.handle(node_id)
        live = handle is not None and handle.exited is None
        return attach.AttachPlan(node.name, Path(argv[0]).name, argv, cwd, session, live)

    def terminal_input(self, node_id: str, data: bytes) -> bool:
        handle = self.supervisor.roster.handle(node_id)
        terminal = getattr(handle, "terminal", None)  # an exec child's pty (ExecHandle)
        if handle is None or handle.exited is not None or terminal is None:
            return False
        return bool(terminal.write(data))


def _settings_for(project_dir: Path) -> tuple[Budgets, float]:
    """Budgets and stop grace from `.legion/settings.toml` (defaults when absent or
    broken: `legion doctor` reports a broken file, supervision must not depend on it)."""
    from legion_tui.settings import load_settings

    result = load_settings(project_dir)
    for problem in result.problems:
        log.warning("settings: %s", problem)
    s = result.settings
    return (
        Budgets(
            max_depth=s.max_depth,
            max_children=s.max_children_per_node,
            max_active=s.max_active_nodes,
        ),
        s.stop_grace_seconds,
    )


def _cluster_for(project_dir: Path, address: str | None) -> ClusterSettings:
    """`[cluster]` from the settings; an address given to the host (`--cluster`) means Ray."""
    from legion_tui.settings import load_settings

    cluster = load_settings(project_dir).settings.cluster
    return cluster if address is None else dataclasses.replace(cluster, engine="ray",
                                                                 address=address)


def _phase_timeouts_for(project_dir: Path) -> dict[str, int]:
    """Only the phase timeouts the operator wrote in `.legion/settings.toml` (upstream
    #358: a default-filled table would silently beat a card's `timeoutMs`)."""
    from legion_tui.settings import load_settings

    return dict(load_settings(project_dir).settings.phase_timeouts)
