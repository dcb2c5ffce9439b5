"""From a running agent to its node's ending: the monitor that settles a node when its
agent goes idle after a final answer (a lead whose members still work waits, live, for
their notice), fails it on an error exit or a second empty generation (the first is
retried once on the same session: upstream provider-empty-generation-retry-v1), and the
waking of a settled node whose agent starts a turn again (a steer, a letter): a new stint.

Every status it writes goes through the one write path (`record.Record.set_status`);
what the front only has once started reaches it as callbacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from legion_tui import receipts
from legion_tui.ledger.errors import LedgerError
from legion_tui.model import SESSION_AGENT_KINDS, EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.runs.folder import terminal_log
from legion_tui.session.progress import SessionProgress
from legion_tui.session.verdict import terminal_verdict
from legion_tui.supervisor.hearing.notices import live_children
from legion_tui.supervisor.hearing.queries import verdict_object, verdict_of
from legion_tui.supervisor.hearing.results import team_verdict

if TYPE_CHECKING:
    from legion_tui.supervisor.backend import AgentHandle
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.hearing.notices import Notices
    from legion_tui.supervisor.state.progress_watch import ProgressWatch
    from legion_tui.supervisor.teams.checks import Checks
    from legion_tui.supervisor.teams.teams import Teams

__all__ = ["Lifecycle", "TurnWatchingDelivery"]

log = logging.getLogger(__name__)


def _verdict_json(progress: SessionProgress) -> str | None:
    """The verdict as the ledger stores it (read back with `Node.verdict_data`)."""
    verdict = verdict_of(progress)
    return None if verdict is None else json.dumps(verdict, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class TurnWatchingDelivery:
    """An agent handle as the postman sees it (`mail.service.Deliverable`): delivering
    to an idle agent starts a turn, and the lifecycle is told (`turn_began`)."""

    node_id: str
    handle: AgentHandle
    turn_began: Callable[[str], Awaitable[None]]

    async def deliver(self, envelope: str) -> None:
        was_running = self.handle.turn_running()
        await self.handle.deliver(envelope)
        if not was_running and self.handle.turn_running():
            await self.turn_began(self.node_id)


class Lifecycle:
    """Monitor, settle, fail, retry, wake: the life of a node between launch and stop."""

    def __init__(
        self,
        ctx: HostContext,
        teams: Teams,
        notices: Notices,
        progress: ProgressWatch,
        checks: Checks,
    ) -> None:
        self._ctx = ctx  # the host is pausing (`closed`): nothing settles or fails now
        self._model = ctx.model
        self._names = ctx.names
        self._record = ctx.record
        self._roster = ctx.roster
        self._teams = teams
        self._notices = notices
        self._checks = checks  # the project's checks, on each settle of an agent's work
        # The node's freshest progress (its file polled once more).
        self._progress = progress.progress
        self.report_cost = progress.report_cost  # an agent's own total, from its stream
        self._empty_retried: set[str] = set()  # nodes whose empty generation was retried
        # Releases under way (node id → done): a wake waits for the old process to end.
        self.releasing: dict[str, asyncio.Future[None]] = {}
        self._waking: dict[str, asyncio.Lock] = {}  # see turn_began

    async def monitor(self, node_id: str, handle: AgentHandle) -> None:
        """Settle the node when its agent goes idle after a final answer and nothing it
        started is still working; fail it on a non-zero exit or a second empty
        generation (the first is retried once). An aborted turn keeps it live."""
        try:
            while True:
                await handle.idle()
                if node_id in self._roster.stopping or self._ctx.closed:
                    return
                progress = self._progress(node_id)
                code = handle.exited
                if progress.empty_generation:
                    if await self._retry_empty(node_id, handle):
                        continue  # the same session was prompted again: wait for that turn
                    await self.fail(node_id, self._empty_reason(node_id, handle), progress)
                    return
                turn_error = handle.turn_error()
                if turn_error is not None and code is None:
                    # The agent itself says the turn failed (an API error it gave up on):
                    # a failed node with the agent's words, not a settle without verdict.
                    await self.fail(node_id, f"turn failed: {turn_error}", progress)
                    return
                if code is not None:
                    if code == 0:
                        await self.settle(node_id, progress)
                    else:
                        why = f"exited with status {code}"
                        await self.fail(node_id, f"{why}: {turn_error}" if turn_error else why,
                                         progress)
                    return
                # Notices held for the end of this turn go out now, an aborted one too
                # (held on, they would never reach an agent that idles): one may start
                # the next turn.
                await self._notices.turn_ended(node_id)
                if progress.last_stop_reason != "aborted":
                    # A lead whose members still work waits for their notice.
                    if handle.turn_running() or await self._wait_for_members(node_id, handle):
                        continue  # look again: a turn started, or the members are done
                    await self.settle(node_id, self._progress(node_id))
                    if handle.turn_running() and node_id not in self._roster.stopping:
                        # A letter started a turn while the settle was being written:
                        # the node works again; wait for this turn's end too.
                        await self.turn_began(node_id)
                started = self._roster.turn_event(node_id)
                assert started is not None  # made with the handle, never dropped
                if not await self._next_turn(node_id, handle, started):
                    return  # released: a message starts it again (Control.wake)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a broken handle must not leave the node live forever
            if isinstance(err, LedgerError):  # the writer said why when it stopped
                log.error("monitor of %s: %s", node_id, err)
            else:
                log.exception("monitor of %s failed", node_id)
            if node_id not in self._roster.stopping and not self._ctx.closed:
                await self.fail_loudly(node_id, f"supervision error: {err}")

    async def _next_turn(
        self, node_id: str, handle: AgentHandle, started: asyncio.Event
    ) -> bool:
        """Until its next turn starts (True); a settled agent idle for the host's
        `idle_release` seconds is released instead (False): its process ends, the node
        stays settled (issue 31 item 4: ten idle agents held ~1–2 GB)."""
        after = self._ctx.options.idle_release
        if after > 0 and self._releasable(node_id, handle):
            try:
                async with asyncio.timeout(after):
                    await started.wait()
            except TimeoutError:
                if self._releasable(node_id, handle) and not handle.turn_running():
                    await self._release(node_id, handle)
                    return False
        await started.wait()
        started.clear()
        return True

    def _releasable(self, node_id: str, handle: AgentHandle) -> bool:
        """A settled real agent (pi, Claude Code, Codex; on this machine or a cluster's
        node, where its actor's slot goes back too) that nothing is stopping, whose
        handle is still the node's."""
        node = self._names.node(node_id)
        return (
            node.status is NodeStatus.SETTLED
            and node.kind in SESSION_AGENT_KINDS
            and handle.exited is None
            and self._roster.handle(node_id) is handle
            and node_id not in self._roster.stopping
            and not self._ctx.closed
        )

    async def _release(self, node_id: str, handle: AgentHandle) -> None:
        self._roster.detach(node_id, only=handle)
        self._roster.unwatch(node_id)  # this monitor: it ends here
        done = self.releasing[node_id] = asyncio.get_running_loop().create_future()
        try:
            await handle.stop(force=False, grace=self._ctx.stop_grace)
        except Exception as err:  # the node is released all the same: it is not ours now
            log.warning("releasing %s: %s", node_id, err)
        finally:
            del self.releasing[node_id]
            done.set_result(None)
        with contextlib.suppress(LedgerError):
            await self._record.update_node(node_id, pid=None)
        self._model.mark_released(node_id)  # after: whoever sees it released sees no pid

    async def _wait_for_members(self, node_id: str, handle: AgentHandle) -> bool:
        """A turn that ended while the node's members work (or while a notice of theirs
        is on its way) is not the node's end: it waits, live, for the notice that wakes
        it. True when it waited (the caller looks again), False when nothing is owed."""
        started = self._roster.turn_event(node_id)
        assert started is not None
        started.clear()  # from here, set only by a turn this wait should see
        waited = False
        while (live := live_children(self._model, node_id)) or self._notices.owed(node_id):
            if handle.turn_running() or handle.exited is not None:
                break
            if node_id in self._roster.stopping or self._ctx.closed:
                break
            waited = True
            self._model.set_note(node_id, receipts.waiting_for_members(len(live)))
            wake = [
                asyncio.ensure_future(self._record.changed.wait()),
                asyncio.ensure_future(started.wait()),
            ]
            # The agent's exit sets neither event: it is looked at once a second.
            await asyncio.wait(wake, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
            for waiter in wake:
                waiter.cancel()
        if waited:
            self._model.set_note(node_id, None)
            if started.is_set() or handle.turn_running():
                started.set()  # the monitor's wait for the turn must see it too
        return waited

    async def _retry_empty(self, node_id: str, handle: AgentHandle) -> bool:
        """A provider that answered with an empty generation gets one more chance on the
        same session (upstream provider-empty-generation-retry-v1): True when that
        prompt started a turn. Once per stint; a prompt the agent did not take (queued,
        intercepted) is nobody's retry and is not counted."""
        if node_id in self._empty_retried or handle.exited is not None:
            return False
        try:
            outcome = await handle.steer(receipts.CONTINUE_PROMPT)
        except Exception as err:
            log.warning("the retry of %s's empty generation failed: %s", node_id, err)
            return False
        await self._record.event(
            node_id,
            EventType.NODE_STEERED,
            {"outcome": outcome, "retry": "provider-empty-generation"},
        )
        if outcome != "accepted":
            return False
        self._empty_retried.add(node_id)
        await self.turn_began(node_id)
        return True

    def _empty_reason(self, node_id: str, handle: AgentHandle) -> str:
        if node_id in self._empty_retried:
            return f"{receipts.EMPTY_GENERATION} ({receipts.EMPTY_RETRIED_TOO})"
        if handle.exited is not None:
            return f"{receipts.EMPTY_GENERATION} (the agent exited; not retried)"
        return f"{receipts.EMPTY_GENERATION} (the retry prompt was not taken)"

    async def fail_loudly(self, node_id: str, reason: str) -> None:
        """Fail the node; when even that write fails (the ledger's disk is full), the
        node must not read `running · working …` for ever: the live model says failed,
        with why it is not recorded, and the log says it at CRITICAL."""
        try:
            await self.fail(node_id, reason, SessionProgress())
        except Exception as write_err:
            node = self._names.node(node_id)
            log.critical(
                "%s ended (%s) but the ledger refused to record it (%s): shown failed, "
                "the ledger still says %s",
                node.path,
                reason,
                write_err,
                node.status.value,
            )
            self._model.upsert(
                dataclasses.replace(
                    node,
                    status=NodeStatus.FAILED,
                    error=f"{reason} — not recorded in the ledger: {write_err}",
                )
            )
            self._record.notify()

    def deliverable(self, node_id: str) -> TurnWatchingDelivery | None:
        """The postman's way to a node's agent: a letter handed to an idle agent starts a
        turn, which must be heard of like a steer's (else the node stays `settled` while
        it works and its monitor never looks again)."""
        handle = self._roster.handle(node_id)
        return None if handle is None else TurnWatchingDelivery(node_id, handle, self.turn_began)

    async def turn_began(self, node_id: str) -> None:
        """A turn started outside the monitor (steer, mail): a settled node runs again
        (a new stint for a team), and the monitor is woken to wait for its end."""
        # One waking at a time per node: a steer and the monitor can both see the turn
        # start; the second waits for the first's revive, so neither returns before the
        # node runs in its new stint (a steer's caller read the old stint under load).
        async with self._waking.setdefault(node_id, asyncio.Lock()):
            # Not while the host pauses: the pause looked for live nodes already, and a
            # node woken now would stay `running` in the ledger.
            if self._names.node(node_id).status is NodeStatus.SETTLED and not self._ctx.closed:
                node = await self._record.set_status(
                    node_id, NodeStatus.RUNNING, None, {}, verdict=None
                )
                if node is not None:  # None: another writer woke it first and revived it
                    await self._teams.revive_stint(node)  # nothing can fail after it
        started = self._roster.turn_event(node_id)
        if started is not None:
            started.set()

    async def settle(self, node_id: str, progress: SessionProgress) -> None:
        node = self._names.node(node_id)
        if node.status not in (NodeStatus.RUNNING, NodeStatus.STARTING, NodeStatus.BLOCKED):
            return  # (blocked: an exec child that ended at its prompt)
        verdict = self._team_verdict(node, verdict_of(progress) or self._command_verdict(node))
        data: dict[str, Any] = {"verdict": verdict}
        delivered = await self._teams.delivery_of(node_id)
        if delivered is not None:
            data["delivery"] = delivered  # the branch + sha a settled team hands over
        if node_id in self._empty_retried:
            data["notes"] = [receipts.EMPTY_RETRY_ANSWERED]
        self._empty_retried.discard(node_id)
        settled = await self._record.set_status(
            node_id,
            NodeStatus.SETTLED,
            EventType.NODE_SETTLED,
            data,
            verdict=None if verdict is None else json.dumps(verdict, ensure_ascii=False),
        )
        if settled is not None:
            self._checks.settled(node_id)

    def _command_verdict(self, node: Node) -> dict[str, Any] | None:
        """An exec command writes no session: a verdict it printed as its last line is
        its verdict, as an agent's closing line is (issue 32 item 6)."""
        if node.kind != "exec":
            return None
        found = terminal_verdict(terminal_log(self._ctx.run.dir, node.id))
        return None if found is None else verdict_object(found)

    def _team_verdict(self, lead: Node, verdict: dict[str, Any] | None) -> dict[str, Any] | None:
        """The lead's own verdict, or, when members failed, one naming them (a failure no
        sibling superseded makes it not ok: see `results.team_verdict`)."""
        members = [self._names.node(c) for c in self._model.children(lead.id)]
        failed = [
            (m.name, m.error or "") for m in members if m.outcome is NodeStatus.FAILED
        ]
        if not failed:
            return verdict
        handled = set(self._record.handled_ids(lead))
        superseded = [m.name for m in members if m.id in handled]
        return team_verdict(verdict, failed, superseded)

    async def fail(self, node_id: str, reason: str, progress: SessionProgress) -> None:
        node = self._names.node(node_id)
        if not node.live:
            return
        self._empty_retried.discard(node_id)
        await self._record.set_status(
            node_id,
            NodeStatus.FAILED,
            EventType.NODE_FAILED,
            {"reason": reason, "stop_reason": progress.last_stop_reason},
            error=reason,
            verdict=_verdict_json(progress),
        )
