"""The launch path: a spawn batch admitted and written, then each node's agent started.

A stop or a pause can land during any await of a launch; it marks the node first
(`roster.stopping`, or the host closed), and the launch looks again after every await:
once it lost, it starts nothing more, ends whatever half-started, and writes nothing
(`running` then would contradict the ledger's `retired`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui.model import EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.runs.folder import session_file
from legion_tui.supervisor.backend import AgentHandle, LaunchSpec
from legion_tui.supervisor.backends.registry import make_handle
from legion_tui.supervisor.life.retire_reasons import RESUME_FAILED_REASON
from legion_tui.wire.names import ROOT_ID, OpError

if TYPE_CHECKING:
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.hearing.blocking import Blocking
    from legion_tui.supervisor.hearing.budget import BudgetWatch
    from legion_tui.supervisor.hearing.notices import Notices
    from legion_tui.supervisor.life.admission import Admission
    from legion_tui.supervisor.life.lifecycle import Lifecycle
    from legion_tui.supervisor.life.node_loss import NodeLoss
    from legion_tui.supervisor.teams.teams import Teams
    from legion_tui.wire.spawn_request import ChildRequest

__all__ = ["Launcher"]

log = logging.getLogger(__name__)


class Launcher:
    def __init__(
        self,
        ctx: HostContext,
        admission: Admission,
        teams: Teams,
        notices: Notices,
        lifecycle: Lifecycle,
        blocking: Blocking,
        budget: BudgetWatch,
        node_loss: NodeLoss,
    ) -> None:
        self._ctx = ctx  # the host is pausing (`closed`): nothing more starts
        self._model = ctx.model
        self._names = ctx.names
        self._record = ctx.record
        self._roster = ctx.roster
        self._cards = ctx.cards
        self._admission = admission
        self._teams = teams
        self._notices = notices
        self._lifecycle = lifecycle
        self._blocking = blocking
        self._budget = budget
        self._node_loss = node_loss
        self._run = ctx.run  # its id and folders: fixed for the run
        self._options = ctx.options  # the cluster, the sim agents' seed and speed
        self._spawn_lock = asyncio.Lock()
        self._seq = 0  # launches so far: each sim agent's seed differs
        self.launches = 0  # agents started by this host (tests assert "zero spawns")

    async def spawn(self, caller_id: str, requests: Sequence[ChildRequest]) -> list[Node]:
        """Validate the whole batch, then create and launch it. Every refusal (rules,
        names, budgets, cards, phases) happens before any row, file or process exists."""
        if self._ctx.closed:
            raise OpError("CLOSED", "the supervisor is shutting down")
        if not requests:
            raise OpError("BAD_REQUEST", "spawn needs at least one child")
        async with self._spawn_lock:  # two batches must not both pass the budget check
            if self._ctx.closed:  # the host began to pause while this batch waited
                raise OpError("CLOSED", "the supervisor is shutting down")
            caller = self._names.caller(caller_id)
            if (over := self._budget.refusal(caller.id)) is not None:
                raise OpError("BUDGET", over)
            if caller.id != ROOT_ID and not caller.live:
                raise OpError("FORBIDDEN", f"{caller.name} has ended and cannot spawn")
            if caller.id in self._roster.stopping:  # live, but its subtree is being retired
                raise OpError("FORBIDDEN", f"{caller.name} is being stopped and cannot spawn")
            plans = await self._admission.plan(caller, requests)
            nodes = [plan.node for plan in plans]
            from legion_tui.ledger import NameConflict

            try:
                await self._record.insert_nodes(nodes)
            except NameConflict as err:
                raise OpError("NAME_CONFLICT", str(err)) from err
            for plan in plans:
                self._cards.card_of[plan.node.id] = plan.card
                self._cards.launched_with[plan.node.id] = plan.command or []
        # The batch starts together: a real agent takes seconds to answer (pi: 2–5 s
        # here), and six started one after another kept the caller waiting for all.
        await asyncio.gather(
            *(
                self.launch(
                    plan.node, plan.request, plan.command, plan.isolate, resume=False,
                    env=plan.env,
                )
                for plan in plans
            )
        )
        return [self._names.node(n.id) for n in nodes]

    async def settle_batches(self) -> None:
        """Wait for the spawn batch being admitted and written, if any (the host is closed
        by then: no other begins). The pause looks at the model next; a batch written
        after it looked stayed `starting` in the ledger for ever, paused by nobody."""
        async with self._spawn_lock:
            pass

    async def launch(
        self,
        node: Node,
        req: ChildRequest | None,
        command: list[str] | None,
        isolate: bool,
        *,
        resume: bool,
        env: Mapping[str, str],
        relaunch: bool = False,
        idle_start: bool = False,
    ) -> bool:
        """Start the node's agent; True when it runs (the node is `running`). `resume`:
        on its session; `relaunch`: a node that ran before (a resume, or a restart of
        one that had written no session) — failing, it stays interrupted."""
        if self._stopped_meanwhile(node.id):
            # The host paused, or a stop began (it marks `stopping` at once, before its
            # `retired` is written), before this node's turn came. The same check runs
            # again after each await below.
            return False
        self._seq += 1
        card = self._cards.card_for(node)
        self._budget.track(node.id, req, card)
        from legion_tui.git.worktree import WorktreeError

        try:
            warning = await self._teams.worktree_for_launch(node, req, resume=resume)
        except WorktreeError as err:  # an attempt of a fan-out with no worktree of its own
            await self._failed(node, err, relaunch=relaunch)
            return False
        if self._stopped_meanwhile(node.id):
            return False  # stopped during the worktree's await: start nothing
        spec = self._spec(node, req, command, isolate, env, resume=resume,
                          idle_start=idle_start and resume)  # fmt: skip
        handle = self._handle_for(spec)
        self._roster.attach(node.id, handle)
        self.launches += 1
        try:
            await handle.start()
        except Exception as err:
            if self._stopped_meanwhile(node.id, handle):
                # Stopped while starting: that, not a launch failure, is the story. Whatever
                # half-started is ours to end (the stop found nothing to signal yet).
                await self._abandon(node.id, handle)
                return False
            await self._failed(node, err, relaunch=relaunch)
            return False
        if self._stopped_meanwhile(node.id, handle):
            # Paused or stopped while starting: the stop may have popped this handle
            # before its process existed and so signalled nothing — stop what we just
            # started; writing `running` now would contradict the ledger's `retired`.
            await self._abandon(node.id, handle)
            return False
        await self._record.set_status(
            node.id,
            NodeStatus.RUNNING,
            EventType.NODE_LAUNCHED,
            {
                "name": node.name,
                "path": node.path,
                "role": node.role,
                "card": self._cards.card_name(node),
                "kind": node.kind,
                "command": command or [],  # what a relaunch runs again (life/cards.py)
                "backend": handle.backend,
                "pid": handle.pid,
                "resumed": resume,
                **self._teams.worktree_data(node.id, warning),
            },
            pid=handle.pid,
            backend=handle.backend,
        )
        monitor = asyncio.create_task(
            self._lifecycle.monitor(node.id, handle), name=f"monitor-{node.path}"
        )
        self._roster.watch(node.id, monitor)
        return True

    def _spec(
        self,
        node: Node,
        req: ChildRequest | None,
        command: list[str] | None,
        isolate: bool,
        env: Mapping[str, str],
        *,
        resume: bool,
        idle_start: bool,
    ) -> LaunchSpec:
        card = self._cards.card_for(node)
        run, seed = self._run, self._options.seed
        return LaunchSpec(
            node_id=node.id,
            run_id=run.run_id,
            name=node.name,
            role=node.role,
            kind=node.kind,
            task=node.task,
            session_file=Path(node.session_file or session_file(run.dir, node.id)),
            run_dir=run.dir,
            cwd=self._teams.cwd_for(node),
            socket_path=self._ctx.socket_path,
            command=command,
            env=env,
            isolate=isolate,
            seed=req.seed if req is not None and req.seed is not None else seed + self._seq,
            speed=self._options.speed,
            sim_behaviour=self._sim_behaviour(node, req),
            resume=resume,
            idle_start=idle_start,
            permissions=self._cards.permissions_of(node),
            system_prompt=card.prompt if card is not None else "",
            tools=card.tools if card is not None else (),
            resources=card.resources if card is not None else None,
        )

    async def wake(self, node: Node) -> AgentHandle:
        """A released agent (settled, its idle process ended) started again on its
        session, idle, without a status move: the node stays settled until the message
        that woke it starts a turn. RequestError (its words) when it will not start."""
        roster = self._roster
        if node.id in roster.resuming:  # another message is waking it: never two writers
            raise OpError("ALREADY_RUNNING", f"{node.name} is being started again; try again")
        roster.resuming.add(node.id)
        try:
            return await self._wake(node)
        finally:
            roster.resuming.discard(node.id)

    async def _wake(self, node: Node) -> AgentHandle:
        released = self._lifecycle.releasing.get(node.id)
        if released is not None:  # the old process is still ending: never two writers
            await released
        if self._stopped_meanwhile(node.id) or self._roster.handle(node.id) is not None:
            raise OpError("ALREADY_RUNNING", f"{node.name} changed while starting; look again")
        self._seq += 1
        cards = self._cards
        spec = self._spec(node, None, cards.command_of(node) or None, False, cards.env_of(node),
                          resume=True, idle_start=True)  # fmt: skip
        handle = self._handle_for(spec)
        self._roster.attach(node.id, handle)
        self.launches += 1
        try:
            await handle.start()
        except BaseException:
            self._roster.detach(node.id, only=handle)
            raise
        if self._stopped_meanwhile(node.id, handle):  # a stop or the pause came meanwhile
            await self._abandon(node.id, handle)
            raise OpError("CLOSED", f"{node.name} was stopped while it started")
        self._model.mark_released(node.id, False)
        await self._record.update_node(node.id, pid=handle.pid)
        monitor = asyncio.create_task(
            self._lifecycle.monitor(node.id, handle), name=f"monitor-{node.path}"
        )
        self._roster.watch(node.id, monitor)
        return handle

    def _handle_for(self, spec: LaunchSpec) -> AgentHandle:
        """The agent's handle, its live output shown in the model as it comes."""
        node_id = spec.node_id
        return make_handle(
            spec,
            on_stream=lambda segment: self._model.set_streaming(node_id, segment),
            on_line=lambda line: self._model.set_terminal_line(node_id, line),
            on_input=lambda question: self._needs_input(node_id, question),
            cluster=self._options.cluster,
            on_lost=lambda why: self._node_loss.lost(node_id, why),
            on_cost=lambda total: self._lifecycle.report_cost(node_id, total),
            on_note=lambda note: self._model.set_note(node_id, note),
        )

    async def _failed(self, node: Node, err: Exception, *, relaunch: bool) -> None:
        self._roster.detach(node.id)
        log.warning("launch of %s failed: %s", node.path, err)
        if relaunch:
            # Its session is intact: the node stays interrupted, with the agent's own
            # words, for `r` to try again — never `failed` and lost (issue 31 item 3).
            await self._record.set_status(
                node.id,
                NodeStatus.RETIRED,
                EventType.NODE_RETIRED,
                {"reason": RESUME_FAILED_REASON, "execution": "stopped", "error": str(err)},
                interrupted=True,  # in the same step: the postman never reads it as ended
                error=f"resume failed: {err}",
            )
            return
        # A spawn's reply says so to the parent.
        with self._notices.telling([node.id], "spawn"):
            await self._record.set_status(
                node.id,
                NodeStatus.FAILED,
                EventType.NODE_FAILED,
                {"reason": "launch-failed", "error": str(err)},
                error=f"launch failed: {err}",
            )

    def _needs_input(self, node_id: str, question: str | None) -> None:
        """The agent waits on its user for `question` (None: answered): BLOCKED and back."""
        if not self._ctx.closed and node_id not in self._roster.stopping:
            self._blocking.told(node_id, question)

    def _stopped_meanwhile(self, node_id: str, handle: AgentHandle | None = None) -> bool:
        """Whether a pause or stop landed during one of `launch`'s awaits."""
        if self._ctx.closed or node_id in self._roster.stopping:
            return True
        if self._names.node(node_id).status is NodeStatus.RETIRED:
            return True
        return handle is not None and self._roster.handle(node_id) is not handle

    async def _abandon(self, node_id: str, handle: AgentHandle) -> None:
        """End an agent a stop raced past; failures are logged, the stop already stands."""
        self._roster.detach(node_id, only=handle)
        try:
            await handle.stop(force=True, grace=0.0)
        except Exception as err:
            log.warning("stopping the abandoned launch of %s failed: %s", node_id, err)

    def _sim_behaviour(self, node: Node, req: ChildRequest | None) -> dict[str, Any]:
        """The sim knobs of a launch; a simulated agent working in a worktree is told
        so (only then do its edits change files and commit, there and nowhere else)."""
        behaviour = dict(req.sim) if req is not None else {}
        behaviour.pop("worktree", None)  # not the caller's to choose
        tree = self._teams.worktree_of(node.id) if node.kind == "sim" else None
        if tree is not None:
            behaviour["worktree"] = str(tree.cwd)
        return behaviour
