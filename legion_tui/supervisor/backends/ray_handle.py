"""An agent on a Ray cluster (issue 15): the host side of `ray_actor.NodeAgent`.

`RayHandle` is an `AgentHandle` whose agent (kind sim, exec or pi) runs in a Ray actor on
some cluster node (`[cluster] engine = "ray"`; the actor asks for the role card's
`resources:`, else the settings' `numCpus` and `resources`, spread over the nodes). Every
control goes through an actor method; the stop is the same sweep a local agent gets, run
by the actor on its node. The session file's and the terminal log's new bytes come back
by a long poll and are appended, in order, to `<run>/sessions/<id>.jsonl` and
`<run>/terminal/<id>.log` — the files a local agent writes; for pi, to
`<run>/sessions/<id>/<the name pi gave it>` with the run's `<id>.jsonl` a link to it, as a
local pi's — so the watcher, the model and the widgets read a remote agent as they read a
local one. The team's branch goes out as a git bundle through the object store and comes
back as one at every turn's end and at the stop
(fetched into the host's worktree, fast-forward only).

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
import os
import socket
from collections.abc import Callable, Collection, Mapping
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
from legion_tui.supervisor.backends.common import log_path, point_session_link
from legion_tui.supervisor.backends.ray_actor import Chunk, NodeAgent, Placement, Shipment, State
from legion_tui.supervisor.backends.rpc_handle import START_BOUND
from legion_tui.supervisor.worktree import WorktreeError, _git, run_tool

__all__ = ["RAY_KINDS", "RayHandle", "connect"]

log = logging.getLogger(__name__)

# What runs on a node: processes the actor can start and sweep there, whose session file
# the host can mirror and ship back for a resume. (Claude Code's and Codex's files live
# under their own config folders, keyed by ids they choose: not yet.)
RAY_KINDS = frozenset({"sim", "exec", "pi"})
PULL_WAIT = 1.0  # a long poll's most: one call per second from a quiet agent
LOST_EXIT = -1  # the exit status a lost agent reports (it is retired, never judged by it)
TEAM_BRANCH_PREFIX = "legion/"  # only a team's own branch travels; a user's never does

_actor_class: Any = None


def connect(cluster: ClusterSettings) -> Any:
    """Ray, connected to the cluster the settings name (once per process)."""
    global _actor_class
    try:
        import ray
    except ImportError as err:
        raise RuntimeError(
            '[cluster] engine = "ray" needs Ray: pip install "legion-tui[ray]"'
        ) from err
    if not ray.is_initialized():
        # Blocks the host's loop for the connection (≈1 s, once): ray.init must run on
        # the main thread.
        ray.init(address=cluster.address, log_to_driver=False)
    if _actor_class is None:
        _actor_class = ray.remote(max_restarts=0, max_task_retries=0)(NodeAgent)
    return ray


def _first_line(err: BaseException) -> str:
    cause = getattr(err, "cause", None)
    text = str(cause if cause is not None else err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _append(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


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
        resources: Mapping[str, float] | None = None,
    ) -> None:
        self.spec = spec
        self.node_id = spec.node_id
        self.backend: Backend = backend_for(dataclasses.replace(spec, isolate=True))
        self.session_file = spec.session_file
        self.placement: Placement | None = None
        self.lost: str | None = None  # why, once its node died
        self._cluster = cluster
        self._resources = resources  # the role card's `resources:` (None: the settings')
        self._on_lost = on_lost
        self._ray: Any = None
        self._actor: Any = None
        self._state = State(running=False, exited=None, session_size=0, log_size=0)
        self._session_at = 0  # bytes of the node's session file the mirror holds
        self._log_at = 0  # of its terminal log (the host's log may hold earlier launches)
        self._branch: str | None = None  # the team's branch, when it travelled
        self._head = ""  # the branch's HEAD the host holds
        self._pump: asyncio.Task[None] | None = None
        self._gone = asyncio.Event()  # never set: what a lost agent's idle waits on

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        if self.spec.kind not in RAY_KINDS:  # a launch failure with its reason, not a crash
            kinds = ", ".join(sorted(RAY_KINDS))
            raise RuntimeError(
                f"kind {self.spec.kind} cannot run on a Ray cluster yet ({kinds} can)"
            )
        ray = self._ray = connect(self._cluster)
        shipment = await self._shipment()
        options = actor_options(self._cluster, self._resources)
        self._actor = _actor_class.options(**options).remote(self.spec, ray.put(shipment))
        try:
            # Bounded: an actor no node has room for waits in Ray's queue for ever, and
            # the launch must fail saying so rather than keep its caller waiting.
            placement: Placement = await asyncio.wait_for(
                self._actor.start.remote(), START_BOUND
            )
        except TimeoutError as err:
            with contextlib.suppress(Exception):
                ray.kill(self._actor)
            raise RuntimeError(
                f"on the Ray cluster: no node took it within {START_BOUND:g} s (it asks for "
                f"{_asked(options)}; `ray status` shows what is free)"
            ) from err
        except Exception as err:
            with contextlib.suppress(Exception):
                ray.kill(self._actor)
            raise RuntimeError(f"on the Ray cluster: {_first_line(err)}") from err
        self.placement = placement
        self._mirror(placement)
        log.info("%s runs on Ray node %s (%s)", self.spec.name, placement.node_id, placement.host)
        if placement.host == socket.gethostname():
            self.pid = placement.pid
        self._pump = asyncio.create_task(self._stream(), name=f"ray-pump-{self.spec.name}")

    def _mirror(self, placement: Placement) -> None:
        """Where the node's session bytes land here, and how many it holds already."""
        self._session_at = placement.continued
        if placement.backend == "pi-rpc":
            # As a local pi's: pi's own file in `sessions/<id>/`, the run's file a link.
            name = Path(placement.session_file).name
            self.session_file = self.spec.run_dir / "sessions" / self.spec.node_id / name
            point_session_link(self.spec.session_file, self.session_file)

    async def _shipment(self) -> Shipment:
        spec = self.spec
        session = spec.session_file.read_bytes() if spec.resume and _exists(spec) else b""
        # pi's file is the link's target, named by pi: the node puts it back under that name.
        linked = session and spec.session_file.is_symlink()
        name = spec.session_file.resolve().name if linked else ""
        code, branch, _ = await run_tool(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"], spec.cwd
        )
        branch = branch.strip()
        if code != 0 or not branch.startswith(TEAM_BRANCH_PREFIX):
            return Shipment(session=session, session_name=name)  # no team branch: as it is
        prefix = await _git(spec.cwd, "rev-parse", "--show-prefix")
        self._head = await _git(spec.cwd, "rev-parse", "HEAD")
        bundle = spec.run_dir / "bundles" / f"{spec.node_id}.out.bundle"
        bundle.parent.mkdir(parents=True, exist_ok=True)
        try:
            await _git(spec.cwd, "bundle", "create", "--quiet", str(bundle), branch)
            data = bundle.read_bytes()
        finally:
            bundle.unlink(missing_ok=True)
        self._branch = branch
        identity = [
            (await run_tool(["git", "config", key], spec.cwd))[1].strip()
            for key in ("user.name", "user.email")
        ]
        return Shipment(
            bundle=data,
            branch=branch,
            prefix=prefix,
            session=session,
            session_name=name,
            identity=(identity[0], identity[1]),
        )

    # -- the mirror --------------------------------------------------------------------

    async def _stream(self) -> None:
        try:
            while self._state.exited is None:
                await self._pull(PULL_WAIT)
            await self._catch_up(self._state)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self._lose(err)

    async def _pull(self, wait: float) -> None:
        chunk: Chunk = await self._actor.pull.remote(
            self._session_at, self._log_at, wait, self._state
        )
        self._take(chunk)

    def _take(self, chunk: Chunk) -> None:
        """Append what the mirror lacks. Two pulls may cross (the stream's long poll and
        a catch-up): each carries its own offset, so a byte is appended once, in order."""
        fresh = chunk.session[self._session_at - chunk.session_at :]
        if fresh:
            _append(self.session_file, fresh)
            self._session_at += len(fresh)
        fresh = chunk.log[self._log_at - chunk.log_at :]
        if fresh:
            _append(log_path(self.spec), fresh)
            self._log_at += len(fresh)
        self._update(chunk.state)

    def _update(self, state: State) -> None:
        exited = state.exited if state.exited is not None else self._state.exited
        self._state = dataclasses.replace(state, exited=exited)

    async def _catch_up(self, state: State) -> None:
        """Pull until the mirror holds what the node's files held at `state`."""
        while self._session_at < state.session_size or self._log_at < state.log_size:
            await self._pull(0.0)

    def _lose(self, err: BaseException) -> None:
        if self.lost is not None:
            return
        where = self.placement.host if self.placement is not None else "?"
        node = self.placement.node_id[:12] if self.placement is not None else "?"
        self.lost = f"Ray node {node} ({where}) lost: {_first_line(err)}"
        self._state = dataclasses.replace(self._state, running=False)
        log.warning("%s: %s", self.spec.name, self.lost)
        if self._on_lost is not None:
            self._on_lost(self.lost)

    async def _bring_back(self) -> None:
        """The node's new commits on the team's branch → the host's worktree (ff only)."""
        if self._branch is None:
            return
        back: tuple[str, bytes] | None = await self._actor.commits.remote(self._head)
        if back is None:
            return
        head, data = back
        bundle = self.spec.run_dir / "bundles" / f"{self.spec.node_id}.in.bundle"
        bundle.parent.mkdir(parents=True, exist_ok=True)
        bundle.write_bytes(data)
        try:
            await _git(self.spec.cwd, "fetch", "--quiet", str(bundle), self._branch)
            await _git(self.spec.cwd, "merge", "--quiet", "--ff-only", "FETCH_HEAD")
            self._head = head
        except WorktreeError as err:  # the host's copy moved too: kept, and said so
            log.warning("%s: the node's commits did not come back: %s", self.spec.name, err)
        finally:
            bundle.unlink(missing_ok=True)

    # -- AgentHandle -------------------------------------------------------------------

    def turn_running(self) -> bool:
        return self.lost is None and self._state.running and self._state.exited is None

    @property
    def exited(self) -> int | None:
        return LOST_EXIT if self.lost is not None else self._state.exited

    async def idle(self) -> None:
        if self._actor is None:
            return
        try:
            if self.lost is None:
                state: State = await self._actor.idle.remote()
                await self._catch_up(state)
                self._update(state)
                await self._bring_back()
        except Exception as err:
            self._lose(err)
        if self.lost is not None:
            # Its retire (by the on_lost hearer) ends the waiting monitor; judging the
            # lost agent's "exit" would fail a node that was only interrupted.
            await self._gone.wait()

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
            raise RuntimeError(f"{self.spec.name} is not running ({self.lost or 'not started'})")
        self._update(await self._actor.deliver.remote(envelope))

    def turn_error(self) -> str | None:
        return None  # pi, the sim and exec commands say it in their session file or exit

    async def stop(
        self, *, force: bool, grace: float = STOP_GRACE, node_ids: Collection[str] = ()
    ) -> SweepReport:
        actor = self._actor
        if actor is None:
            return SweepReport(signalled=[], survivors=[])
        report = SweepReport(signalled=[], survivors=[])
        if self.lost is None:
            try:
                signalled, survivors = await actor.stop.remote(force, grace, list(node_ids))
                report = SweepReport(signalled=signalled, survivors=survivors)
                await self._final_bytes()
                await self._bring_back()
                await actor.forget.remote()
            except Exception as err:  # its node died under the stop: nothing is left there
                self._lose(err)
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump
        with contextlib.suppress(Exception):
            self._ray.kill(actor)
        return report

    async def _final_bytes(self) -> None:
        """Everything the agent wrote up to its end, into the mirror."""
        chunk: Chunk = await self._actor.pull.remote(self._session_at, self._log_at, 0.0, None)
        self._take(chunk)
        await self._catch_up(chunk.state)


def _exists(spec: LaunchSpec) -> bool:
    return spec.session_file.is_file()


# Ray takes these two as keywords; every other name is a custom resource.
_RAY_KEYWORDS = {"CPU": "num_cpus", "GPU": "num_gpus"}


def actor_options(
    cluster: ClusterSettings, resources: Mapping[str, float] | None
) -> dict[str, Any]:
    """The actor's Ray options: the role card's `resources:` (CPU, GPU and custom
    names, as the card load checked them), else the settings' `numCpus` and
    `[cluster.resources]`; spread over the nodes."""
    options: dict[str, Any] = {
        "scheduling_strategy": "SPREAD",  # a legion's agents over all the nodes
        "num_cpus": cluster.num_cpus,  # unless the card names its CPUs
    }
    asked = cluster.resources if resources is None else resources
    custom = {name: amount for name, amount in asked.items() if name not in _RAY_KEYWORDS}
    for name, keyword in _RAY_KEYWORDS.items():
        if name in asked:
            options[keyword] = asked[name]
    if custom:
        options["resources"] = custom
    return options


def _asked(options: Mapping[str, Any]) -> str:
    """`2 CPUs, 1 GPU and {'box': 1.0}`: what an actor asked for, for a refusal."""
    cpus = options.get("num_cpus", 1)
    parts = [f"{cpus:g} CPU{'' if cpus == 1 else 's'}"]
    gpus = options.get("num_gpus")
    if gpus:
        parts.append(f"{gpus:g} GPU{'' if gpus == 1 else 's'}")
    if options.get("resources"):
        parts.append(str(options["resources"]))
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
