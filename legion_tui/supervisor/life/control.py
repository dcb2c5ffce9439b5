"""The control verbs on a node's running agent (SPEC §6.3, §6.6): abort, steer, resume
(the stop verb is `stops.py`'s). Each resolves its target for the caller
(`naming.Names.resolve`: a node controls only its own descendants, root controls
everything) and answers with the receipt that says what really happened."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from legion_tui import receipts
from legion_tui.model import SESSION_AGENT_KINDS, EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.supervisor.backend import ABORT_BOUND, AgentHandle
from legion_tui.supervisor.state.progress_watch import has_file
from legion_tui.wire.names import ROOT_ID, OpError

if TYPE_CHECKING:
    from legion_tui.mail.service import Deliverable
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.life.launching import Launcher
    from legion_tui.supervisor.life.lifecycle import Lifecycle
    from legion_tui.supervisor.teams.teams import Teams

__all__ = ["RESUME_PARALLEL", "Control"]

log = logging.getLogger(__name__)

RESUME_PARALLEL = 2  # `resume --all`: agents starting at once


@dataclass(frozen=True, slots=True)
class _WakingDelivery:
    """A released agent as the postman sees it: delivering starts it again first."""

    control: Control
    node_id: str

    async def deliver(self, envelope: str) -> None:
        await self.control.wake_for_letter(self.node_id, envelope)


class Control:
    def __init__(
        self, ctx: HostContext, lifecycle: Lifecycle, teams: Teams, launcher: Launcher
    ) -> None:
        self._ctx = ctx  # the host is pausing (`closed`): a failed resume leaves the stint be
        self._model = ctx.model
        self._names = ctx.names
        self._record = ctx.record
        self._roster = ctx.roster
        self._lifecycle = lifecycle
        self._teams = teams
        self._launcher = launcher
        self._mail_wake_failed: set[str] = set()  # see `deliverable`

    def _controllable(self, caller_id: str, name: str, verb: str) -> tuple[Node, AgentHandle]:
        target = self._names.resolve(caller_id, name)
        self._refuse_in_own_ui(target, verb)
        if target.status is NodeStatus.RETIRED:
            raise OpError("RETIRED", f"{verb} failed: {target.name} is retired")
        handle = self._roster.handle(target.id)
        if handle is None or (verb == "steer" and handle.exited is not None):
            raise OpError(
                "NOT_RUNNING",
                f"{verb} failed: {target.name} has no running agent "
                f"({target.status.value}; `legion resume {self._names.ref(target)}` starts it "
                "again)",
            )
        return target, handle

    async def abort(
        self, caller_id: str, name: str, *, keep_queue: bool = False
    ) -> tuple[str, str]:
        """(outcome, receipt) — exactly the three receipts of SPEC §6.3."""
        target, handle = self._controllable(caller_id, name, "abort")
        # Where the turn was when it was cut (its row keeps saying so: `aborted in bash
        # after 00:12`, not a blank line and a task).
        in_flight = self._model.nodes[target.id].progress.in_flight
        top = in_flight[-1] if in_flight else None
        result = await handle.abort(keep_queue=keep_queue, bound=ABORT_BOUND)
        data: dict[str, object] = {
            "name": target.name, "outcome": result.outcome, "dropped": result.dropped
        }
        if top is not None:
            ran = self._ctx.clock() - max(top.started_at, target.created_at)
            data |= {"tool": top.name, "tool_seconds": round(max(0.0, ran), 1)}
        await self._record.event(target.id, EventType.NODE_ABORTED, data)
        if result.outcome == "interrupted" and result.exited is not None:
            return result.outcome, receipts.aborted_command(target.name, result.exited)
        if result.outcome == "interrupted":
            return result.outcome, receipts.aborted(target.name, result.dropped)
        if result.outcome == "no-turn":
            return result.outcome, receipts.nothing_to_abort(target.name)
        return result.outcome, receipts.abort_timeout(target.name, ABORT_BOUND)

    def _refuse_while_pausing(self, verb: str) -> None:
        """The socket serves the agents until the pause has stopped them all: a lead's
        steer or resume then would wake a node after the pause looked (left `running`,
        or `starting` with no launch to follow, in the ledger for ever)."""
        if self._ctx.closed:
            raise OpError("CLOSED", f"{verb} refused: the host is pausing its agents")

    def _refuse_in_own_ui(self, target: Node, verb: str) -> None:
        if target.id in self._roster.in_own_ui:
            raise OpError(
                "ATTACHED",
                f"{verb} failed: {target.name}'s session is open in its own UI — legion takes "
                "it back when that UI exits",
            )

    def deliverable(self, node_id: str) -> Deliverable | None:
        """The postman's way to a node's agent: its handle, or — for a released agent —
        one that starts it again on its session first: a letter or a notice wakes it as
        a steer does (issue 31 item 4). A node whose wake for a letter failed is left
        alone (its letters wait) until a steer or a resume starts it: one failed wake per
        stint, never one per postman tick. None while the host pauses: a letter handed
        over then could start a turn after the pause looked; it waits, pending, for the
        node's resume."""
        if self._ctx.closed:
            return None
        direct = self._lifecycle.deliverable(node_id)
        if direct is not None:
            return direct
        node = self._names.node(node_id)
        if node_id in self._mail_wake_failed or not self._woken_by_message(node):
            return None
        return _WakingDelivery(self, node_id)

    async def wake_for_letter(self, node_id: str, envelope: str) -> None:
        node = self._names.node(node_id)
        try:
            await self._launcher.wake(node)
        except OpError as err:
            if err.code not in ("ALREADY_RUNNING", "CLOSED"):  # (another start, or a stop)
                self._mail_wake_failed.add(node_id)
            raise
        except Exception as err:  # its agent would not start: say so once
            self._mail_wake_failed.add(node_id)
            log.warning("a letter to %s did not start it again: %s", node.path, err)
            raise
        handle = self._lifecycle.deliverable(node_id)
        if handle is None:  # ended again at once: the letter waits for the next start
            raise OpError("NOT_RUNNING", f"{node.name} ended as it started")
        await handle.deliver(envelope)

    async def steer(self, caller_id: str, name: str, text: str) -> tuple[str, str]:
        """(outcome, receipt): queued for the next turn boundary, accepted (a turn
        started), or intercepted. A released agent is started again on its session
        first, and the receipt says so."""
        self._refuse_while_pausing("steer")
        target = self._names.resolve(caller_id, name)
        woke = ""
        if self._woken_by_message(target):
            try:
                await self._launcher.wake(target)
            except Exception as err:
                raise OpError("START_FAILED", f"steer failed: {target.name} did not start "
                              f"again on its session — {err}") from err
            woke = receipts.woken(target.name) + " "
            self._mail_wake_failed.discard(target.id)
        target, handle = self._controllable(caller_id, name, "steer")
        outcome = await handle.steer(text)
        await self._record.event(target.id, EventType.NODE_STEERED, {"outcome": outcome})
        if outcome == "accepted":
            await self._lifecycle.turn_began(target.id)
        return outcome, woke + receipts.steered(target.name, outcome)

    def _woken_by_message(self, node: Node) -> bool:
        """A settled real agent without a process (released after idling, or settled
        under a host that has since closed): a message starts it again, idle, on its
        session."""
        return (
            node.status is NodeStatus.SETTLED
            and node.kind in SESSION_AGENT_KINDS
            and self._roster.handle(node.id) is None
            and node.id not in self._roster.resuming
            and node.id not in self._roster.stopping  # a stop of it is under way
            and node.id not in self._roster.in_own_ui
            and has_file(node.session_file)
            and not self._ctx.closed
        )

    async def resume(self, caller_id: str, name: str, *, idle: bool = False) -> str:
        """Resume an ended node on its old session file (SPEC §6.6); never automatic.
        `idle`: adopt it back after an attach — its agent starts on the session and is
        sent nothing, and the node settles on what the session says."""
        self._refuse_while_pausing("resume")
        target = self._names.resolve(caller_id, name)
        self._refuse_in_own_ui(target, "resume")
        roster = self._roster
        if target.id in roster.resuming:
            raise OpError("ALREADY_RUNNING", f"{target.name} is already resuming")
        previous = roster.handle(target.id)
        if (previous is not None and previous.exited is None) or (previous is None and target.live):
            # A live node without a handle is being launched right now (spawn or resume).
            raise OpError(
                "ALREADY_RUNNING", f"{target.name} is {target.status.value}; steer it instead"
            )
        if target.id in roster.stopping and target.status is not NodeStatus.RETIRED:
            raise OpError("STOPPING", f"{target.name} is being stopped; resume it after")
        roster.resuming.add(target.id)
        self._mail_wake_failed.discard(target.id)  # a user's start: its letters may wake it
        # Its last stop is over (it is retired, or never stopped): relaunching is allowed.
        roster.stopping.discard(target.id)
        try:
            return await self._resume(target, previous, idle)
        finally:
            roster.resuming.discard(target.id)

    async def resume_with_parents(self, caller_id: str, name: str) -> str:
        """Resume `name` and, first, each of its ancestors that has ended (outermost
        first, none above the caller): a member whose lead ended, in one command. One
        line per node; the first refusal ends it (its members would be refused too)."""
        target = self._names.resolve(caller_id, name)
        caller = self._names.caller(caller_id)
        chain = [target]
        nodes = self._model.nodes
        parent_id = target.parent_id
        while parent_id not in (None, ROOT_ID, caller.id) and parent_id in nodes:
            parent = nodes[parent_id].node
            if parent.live:
                break  # an ancestor that runs: the ones above it run too, or need nothing
            chain.append(parent)
            parent_id = parent.parent_id
        lines = [await self.resume(caller_id, node.id) for node in reversed(chain)]
        return "\n".join(lines)

    async def resume_all(self, caller_id: str, parallel: int = RESUME_PARALLEL) -> str:
        """Every interrupted node the caller controls, leads before their members (a
        level starts once the one above it has), `parallel` starting at a time — never
        a storm of agents starting at once after a crash. One line per node."""
        if parallel < 1:
            raise OpError("BAD_REQUEST", f"--parallel must be at least 1, got {parallel}")
        caller = self._names.caller(caller_id)
        levels: dict[int, list[Node]] = {}
        for view, depth in self._model.walk(caller.id):
            if view.interrupted:
                levels.setdefault(depth, []).append(view.node)
        if not levels:
            return receipts.nothing_interrupted()
        gate = asyncio.Semaphore(parallel)

        async def one(node: Node) -> str:
            async with gate:
                try:
                    return await self.resume(caller_id, node.id)
                except OpError as err:
                    return err.message
                except Exception as err:  # one failure must not cut the others short
                    log.warning("resume --all: %s: %s", node.path, err)
                    return f"{node.name} did not resume: {err}"

        lines: list[str] = []
        for depth in sorted(levels):
            lines += await asyncio.gather(*(one(node) for node in levels[depth]))
        return "\n".join(lines)

    async def _resume(self, target: Node, previous: AgentHandle | None, idle: bool) -> str:
        # Stopped before its agent wrote anything (pi writes its file only with its first
        # answer): there is nothing to continue, so it starts again on the same task.
        continues = has_file(target.session_file)
        if idle and not continues:
            raise OpError("NO_SESSION", f"{target.name} has no session to take back")
        parent = self._model.nodes.get(target.parent_id or "")
        # A take-back after an attach gives back what the node was, under any parent.
        if not idle and parent is not None and parent.node.id != ROOT_ID and not parent.node.live:
            ref = self._names.ref(target)
            raise OpError(
                "FORBIDDEN",
                f"resume {parent.node.name} first: {target.name}'s parent has ended "
                f"(`legion resume {ref} --with-parents` resumes both, its lead first)",
            )
        if previous is not None:  # it exited (failed): sweep what is left, then relaunch
            await self._sweep(target.id, previous)
        node = await self._record.set_status(target.id, NodeStatus.STARTING, None, {}, error=None)
        if node is None:  # it moved while the old agent was swept (a stop, a launch)
            raise OpError("ALREADY_RUNNING", f"{target.name} changed while resuming; look again")
        self._model.mark_interrupted(target.id, False)
        cards = self._ctx.cards
        command = cards.command_of(node)
        isolate = node.backend == "process" and node.kind == "sim"
        before = await self._teams.revive_stint(node)
        started = False
        try:
            started = await self._launcher.launch(
                node, None, command or None, isolate, resume=continues, env=cards.env_of(node),
                relaunch=True, idle_start=idle,
            )
        finally:
            if before is not None and not started and not self._ctx.closed:
                await self._teams.restore_stint(before)
        now = self._names.node(node.id)
        if not started and now.status is NodeStatus.RETIRED and now.error:
            raise OpError(
                "START_FAILED",
                f"{node.name} did not resume — {now.error}. It stays interrupted with its "
                f"session: `legion resume {self._names.ref(now)}` (r) tries again.",
            )
        if idle:  # (it continues: checked above)
            return receipts.adopted(node.name)
        if not continues:
            return receipts.restarted(node.name)
        return receipts.resumed(node.name, Path(node.session_file or ""))

    async def _sweep(self, node_id: str, previous: AgentHandle) -> None:
        """The exited agent's remains, before its relaunch."""
        self._roster.detach(node_id)
        # Its monitor must not judge the old agent's exit after the relaunch.
        monitor = self._roster.unwatch(node_id)
        if monitor is not None:
            monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await monitor
        await previous.stop(force=True, grace=0.0)
