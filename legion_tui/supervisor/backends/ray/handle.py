"""An agent on a Ray cluster (issue 15): the host side of `ray.actor.NodeAgent`.

`RayHandle` is an `AgentHandle` whose agent (kind sim, exec or pi) runs in a Ray actor on
some cluster node (`[cluster] engine = "ray"`; the actor asks for what `ray.cluster`
says: the role card's `resources:`, else the settings'). Every control goes through an
actor method; the stop is the same sweep a local agent gets, run by the actor on its
node. The session file's and the terminal log's new bytes come back by a long poll into
the run folder (`ray.mirror`), with what the node's handle heard besides (the message pi
is streaming, an exec's terminal line, a question for its user: `live`, told to the
hooks a local handle calls); the team's branch travels as git bundles
(`ray.shipping`). A start waits for as long as the cluster has no room for it yet — the
node says so (`on_note`: `waiting for a place on the cluster: needs 0.25 CPU`), the user
sees the queue and may stop it — and fails only when no live node could ever hold what
it asks for (`cluster.unfit`) for the whole start bound (a node may still join). An agent
that has exited lets its actor go at once (`idle`): the actor held its slot until the
node was stopped, and a lead's queued member waited for the CPU of a sibling that had
settled long before, while the lead waited for both (issue 35: a team that never
settled).

A node that dies takes its actor with it (and, by the parent-death signal, the agent):
the handle reports it once through `on_lost` and its `idle` then never returns — the
node is retired as interrupted by whoever heard it, and a resume starts a new actor on a
live node from the mirrored session (pi's under the name pi gave it, so pi's `--continue`
reopens it there).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from legion_tui.model import Backend
from legion_tui.settings import ClusterSettings
from legion_tui.supervisor.backend import (
    ABORT_BOUND,
    STOP_GRACE,
    AbortResult,
    LaunchSpec,
    SteerOutcome,
    SweepReport,
    backend_for,
)
from legion_tui.supervisor.backends.common import START_BOUND
from legion_tui.supervisor.backends.ray.actor import Placement, State
from legion_tui.supervisor.backends.ray.cluster import (
    actor_options,
    asked_for,
    connect,
    create_actor,
    reach,
    unfit,
)
from legion_tui.supervisor.backends.ray.mirror import LiveHooks, Mirror
from legion_tui.supervisor.backends.ray.shipping import TeamBranch
from legion_tui.timeouts import within

__all__ = ["RAY_KINDS", "RayHandle"]

log = logging.getLogger(__name__)

# An actor call on a live node answers in well under this (a stop adds its grace); one
# whose node died waits until Ray notices, which is not bounded by us otherwise.
CALL_BOUND = 30.0
# How often a start not yet placed is looked at. A node needs a few s to start an actor's
# worker even with room, so a start is said to wait for a place once it has waited this
# long (for room on a busy cluster, or its turn on a node starting a batch).
QUEUE_CHECK_S = 3.0

# What runs on a node: processes the actor can start and sweep there, whose session file
# the host can mirror and ship back for a resume. (Claude Code's and Codex's files live
# under their own config folders, keyed by ids they choose: not yet.)
RAY_KINDS = frozenset({"sim", "exec", "pi"})
LOST_EXIT = -1  # the exit status a lost agent reports (it is retired, never judged by it)


def _first_line(err: BaseException) -> str:
    cause = getattr(err, "cause", None)
    text = str(cause if cause is not None else err).strip()
    return text.splitlines()[0] if text else type(err).__name__


class RayHandle:
    # The agent's pid when its node is this machine (one pid space: the socket knows its
    # calls by their ancestry); None on another machine. Never signalled from here.
    pid: int | None = None

    def __init__(
        self,
        spec: LaunchSpec,
        cluster: ClusterSettings,
        *,
        on_lost: Callable[[str], None] | None = None,
        live: LiveHooks | None = None,
        start_bound: float = START_BOUND,
        on_note: Callable[[str | None], None] | None = None,
    ) -> None:
        self.spec = spec
        self.node_id = spec.node_id
        self.backend: Backend = backend_for(dataclasses.replace(spec, isolate=True))
        self.placement: Placement | None = None
        self.lost: str | None = None  # why, once its node died
        self._cluster = cluster
        self._start_bound = start_bound  # how long no live node may be able to hold it
        self._on_lost = on_lost
        self._on_note = on_note  # what the node's row says while it waits for room
        self._ray: Any = None
        self._actor: Any = None
        self._mirror = Mirror(spec, live or LiveHooks())
        self._branch = TeamBranch(spec)
        self._pump: asyncio.Task[None] | None = None
        self._gone = asyncio.Event()  # never set: what a lost agent's idle waits on
        self._stopping = False  # a stop has the actor: its end is the stop's to sweep

    @property
    def session_file(self) -> Path:
        """The host's mirror of the file the agent writes on its node."""
        return self._mirror.session_file

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        if self.spec.kind not in RAY_KINDS:  # a launch failure with its reason, not a crash
            kinds = ", ".join(sorted(RAY_KINDS))
            raise RuntimeError(
                f"kind {self.spec.kind} cannot run on a Ray cluster yet ({kinds} can)"
            )
        await reach(self._cluster)  # bounded, on the loop: a signal still ends the host
        ray = self._ray = connect(self._cluster)
        shipment = await self._branch.shipment()
        options = actor_options(self._cluster, self.spec.resources)
        self._actor = create_actor(ray, options, self.spec, shipment)
        try:
            placement = await self._placed(options)
        except Exception as err:
            self._abandon_actor()
            raise RuntimeError(f"on the Ray cluster: {_first_line(err)}") from err
        self.placement = placement
        self._mirror.actor = self._actor
        self._mirror.place(placement)
        log.info("%s runs on Ray node %s (%s)", self.spec.name, placement.node_id, placement.host)
        if placement.host == socket.gethostname():
            self.pid = placement.pid
        self._pump = asyncio.create_task(self._stream(), name=f"ray-pump-{self.spec.name}")

    async def _placed(self, options: Mapping[str, Any]) -> Placement:
        """The actor's placement once a node has started it. Waiting, it is looked at
        every QUEUE_CHECK_S: while some live node could hold it, it waits for room —
        however long, and said (`on_note`) — and once none could for the whole start
        bound, it fails (RuntimeError) saying what it asks for and what the nodes have."""
        started = asyncio.ensure_future(self._actor.start.remote())
        unfit_since: float | None = None
        said = False
        try:
            while not (await asyncio.wait({started}, timeout=QUEUE_CHECK_S))[0]:
                why = unfit(self._ray, options)
                if why is None:
                    unfit_since = None
                    if not said and self._on_note is not None:
                        self._on_note(f"waiting for a place on the cluster: needs "
                                      f"{asked_for(options)}")  # fmt: skip
                        said = True
                    continue
                now = time.monotonic()
                unfit_since = now if unfit_since is None else unfit_since
                if now - unfit_since >= self._start_bound:
                    raise RuntimeError(f"{why} (for {self._start_bound:g} s)")
            placement: Placement = started.result()
            return placement
        finally:
            started.cancel()  # a no-op once it is done
            if said and self._on_note is not None:
                self._on_note(None)

    def _abandon_actor(self) -> None:
        """A start that failed: its actor goes (out of Ray's queue, if no node took it),
        and a stop finds nothing left to ask."""
        with contextlib.suppress(Exception):
            self._ray.kill(self._actor)
        self._actor = None

    async def _stream(self) -> None:
        try:
            await self._mirror.follow()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self._lose(err)

    def _lose(self, err: BaseException) -> None:
        if self.lost is not None:
            return
        where = self.placement.host if self.placement is not None else "?"
        node = self.placement.node_id[:12] if self.placement is not None else "?"
        self.lost = f"Ray node {node} ({where}) lost: {_first_line(err)}"
        log.warning("%s: %s", self.spec.name, self.lost)
        if self._on_lost is not None:
            self._on_lost(self.lost)

    def _update(self, state: State) -> None:
        self._mirror.update(state)

    # -- AgentHandle -------------------------------------------------------------------

    def turn_running(self) -> bool:
        state = self._mirror.state
        return self.lost is None and state.running and state.exited is None

    @property
    def exited(self) -> int | None:
        return LOST_EXIT if self.lost is not None else self._mirror.state.exited

    async def idle(self) -> None:
        if self._actor is None:
            return
        try:
            if self.lost is None:
                state: State = await self._actor.idle.remote()
                await self._mirror.catch_up(state)
                self._update(state)
                await self._branch.bring_back(self._actor)
        except Exception as err:
            self._lose(err)
        if self.lost is not None:
            # Its retire (by the on_lost hearer) ends the waiting monitor; judging the
            # lost agent's "exit" would fail a node that was only interrupted.
            await self._gone.wait()
        if self._mirror.state.exited is not None and not self._stopping:
            await self._release()

    async def _release(self) -> None:
        """The agent has exited: nothing more runs in its actor, whose slot goes back to
        the cluster now, not when the node is stopped. What it left on the node goes as
        at a stop (the sweep, the last bytes, the commits, the folder). A failure here is
        said, never a lost node: the agent's end is already known."""
        actor, self._actor = self._actor, None  # a stop from now on has nothing to ask
        await self._end_pump()  # the sweep pulls the last bytes itself
        try:
            report = await within(self._sweep_there(actor, False, STOP_GRACE),
                                  STOP_GRACE + CALL_BOUND)  # fmt: skip
            if report.survivors:
                log.warning("%s: after its end, processes survived the sweep on its node: %s",
                            self.spec.name, report.survivors)  # fmt: skip
        except Exception as err:
            log.warning("%s: letting its actor go after its end: %s", self.spec.name,
                        _first_line(err))  # fmt: skip
        with contextlib.suppress(Exception):
            self._ray.kill(actor)

    async def abort(self, *, keep_queue: bool = False, bound: float = ABORT_BOUND) -> AbortResult:
        if self._actor is None or self.lost is not None:
            return AbortResult("no-turn", 0)
        result: AbortResult
        result, state = await self._actor.abort.remote(keep_queue, bound)
        self._update(state)
        return result

    async def steer(self, text: str) -> SteerOutcome:
        if self._actor is None or self.lost is not None:
            return "intercepted"  # nobody will ever read it
        outcome: SteerOutcome
        outcome, state = await self._actor.steer.remote(text)
        self._update(state)
        return outcome

    async def deliver(self, envelope: str) -> None:
        if self._actor is None or self.lost is not None:
            why = self.lost or ("it has exited" if self.placement is not None else "not started")
            raise RuntimeError(f"{self.spec.name} is not running ({why})")
        self._update(await self._actor.deliver.remote(envelope))

    def turn_error(self) -> str | None:
        return None  # pi, the sim and exec commands say it in their session file or exit

    async def stop(self, *, force: bool, grace: float = STOP_GRACE) -> SweepReport:
        actor = self._actor
        if actor is None:
            return SweepReport(signalled=[], survivors=[])
        self._stopping = True
        report = SweepReport(signalled=[], survivors=[])
        if self.placement is None:  # still waiting for a node: nothing runs there yet
            self._abandon_actor()
            return report
        if self.lost is None:
            try:
                # Bounded like every stop: a node that died under the stop can leave the
                # call waiting until Ray notices, and a host closing waits on this.
                report = await within(self._sweep_there(actor, force, grace), grace + CALL_BOUND)
            except Exception as err:  # its node died under the stop: nothing is left there
                self._lose(err)
        await self._end_pump()
        with contextlib.suppress(Exception):
            self._ray.kill(actor)
        return report

    async def _sweep_there(self, actor: Any, force: bool, grace: float) -> SweepReport:
        """The agent's tree swept on its node, its last bytes and commits brought here,
        and its folder there gone."""
        signalled, survivors = await actor.stop.remote(force, grace)
        await self._mirror.final_bytes()
        await self._branch.bring_back(actor)
        await actor.forget.remote()
        return SweepReport(signalled=signalled, survivors=survivors)

    async def _end_pump(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump
