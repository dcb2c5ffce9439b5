"""The node side of an agent on a Ray cluster: `NodeAgent`, the body of its actor.

It runs on whichever node Ray placed it. There it prepares the agent's own folder — a
run folder of its own (`sessions/`, `terminal/`, `inbox/`, never the host's, even when
the node is the host's machine: the host writes the mirror there) and the working copy:
the team's branch cloned from the git bundle the host shipped through the object store,
or, without one, the host's folder as it is (a shared filesystem). Then it starts the
agent with the very handle a local launch uses (`backends.build`: the sim as a
`legion-sim` process, exec on a pty, pi over RPC), in its own process group, dying with
this actor's worker. Everything the host asks goes through the methods below; the host
pulls the session file's and terminal log's new bytes by offset (`pull`).

The folder's path is the same on every node (`node_folder`: the run's and the node's
ids under the temp dir), so a resumed agent's working copy is where its session says it
was: pi 1.6's `--continue` only reopens a session whose header `cwd` is pi's own cwd (and
`--session` would run in the header's cwd, which a fresh node lacks).

Nothing here imports Ray: the host wraps this class with `ray.remote`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from legion_tui.git.worktree import _git
from legion_tui.session.progress import RateSegment
from legion_tui.supervisor.backend import AbortResult, AgentHandle, LaunchSpec, backend_for
from legion_tui.supervisor.backends.common import log_path
from legion_tui.supervisor.backends.pi.argv import pi_session_dir

__all__ = ["Chunk", "Live", "NodeAgent", "Placement", "Shipment", "State", "node_folder"]

CHUNK_BYTES = 1 << 20  # the most one pull carries of each file
# How often a waiting pull looks at the files (on the node, not the host): often while
# the agent has just written — a busy agent's bytes leave within POLL_STEP — and, past
# QUIET_AFTER with nothing new, every QUIET_STEP. The look costs the actor's worker: at
# 0.02 s, 2.4 % of a core per idle agent here, 1.1 % at 0.2 s (Ray's own threads are
# most of that), and 200 idle actors on 2 cores starved the next ones' starts.
POLL_STEP = 0.02
QUIET_AFTER = 1.0
QUIET_STEP = 0.2


@dataclass(frozen=True)
class Shipment:
    """What the host sends with a launch besides its spec."""

    bundle: bytes | None = None  # `git bundle` of the team's branch (None: shared folder)
    branch: str = ""  # the branch the bundle carries
    prefix: str = ""  # the team's folder inside the repository (the worktree's cwd)
    session: bytes = b""  # a resume: the host's mirror of the session so far
    # The name pi gave that file (pi names its own, in its session folder): the resume
    # puts the mirror back there under it, and pi's `--continue` reopens it. Empty: the
    # agent writes the spec's file itself (the sim, exec).
    session_name: str = ""
    # git's user.name / user.email in the host's checkout (a clone does not copy its
    # config: a sandbox's own identity would be lost and a commit refused)
    identity: tuple[str, str] = ("", "")


@dataclass(frozen=True)
class Placement:
    node_id: str  # Ray's node id
    host: str  # the node machine's hostname
    pid: int  # the agent's pid on that node (not the host's: never signalled from there)
    backend: str
    session_file: str  # the file the agent writes there (the host holds its mirror)
    # Bytes at the start of that file that are the host's mirror already: the shipped
    # session the agent continues (0: a file of its own, new).
    continued: int = 0
    # What the actor holds of the node's resources ({"CPU": 1.0, ...}: the card's or
    # the settings' ask, as Ray granted it).
    resources: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Live:
    """What the agent's handle hears besides its files, which a local agent's handle
    tells the model directly: the message it is generating now (pi's RPC deltas — its
    file says nothing of it until it ends: the live tok/s), an exec command's current
    terminal line, the question it waits on its user for (None: nothing asked)."""

    streaming: RateSegment | None = None
    line: str = ""
    question: str | None = None


@dataclass(frozen=True)
class State:
    running: bool
    exited: int | None
    session_size: int
    log_size: int
    live: Live = field(default_factory=Live)


@dataclass(frozen=True)
class Chunk:
    """New bytes of both files from the offsets asked, and the agent's state after."""

    session_at: int
    session: bytes
    log_at: int
    log: bytes
    state: State


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _same(path: Path, other: Path | None) -> bool:
    return other is not None and path.resolve() == other.resolve()


def _read(path: Path, at: int) -> bytes:
    try:
        with open(path, "rb") as file:
            file.seek(at)
            return file.read(CHUNK_BYTES)
    except OSError:
        return b""


def _same_state(state: State, known: State) -> bool:
    """Nothing the host has not heard (the files' sizes aside)."""
    return (state.running, state.exited, state.live) == (known.running, known.exited, known.live)


def node_folder(spec: LaunchSpec) -> Path:
    """The agent's folder on whichever node runs it: one path for every launch of it."""
    return Path(tempfile.gettempdir()) / f"legion-{spec.run_id}-{spec.node_id}"


class NodeAgent:
    """One agent on one node. The host calls `start` once, then anything else."""

    def __init__(self, spec: LaunchSpec, shipment: Shipment) -> None:
        self._host_spec = spec
        self._shipment = shipment
        self._dir = node_folder(spec)
        # Left by an earlier launch of this agent on this machine whose node died before
        # the host could `forget` it (its agent died with the node): nothing to keep.
        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir.mkdir(parents=True)
        self._work: Path | None = None  # the clone, when a bundle came
        self._base_sha = ""  # the clone's HEAD as shipped
        self.spec = spec
        self.handle: AgentHandle | None = None
        self._live = Live()

    async def start(self) -> Placement:
        from ray import get_runtime_context  # only ever called inside a Ray worker

        from legion_tui.supervisor.backends.local import build

        spec = self._host_spec
        run_dir = self._dir / "run"
        session_file = run_dir / "sessions" / f"{spec.node_id}.jsonl"
        session_file.parent.mkdir(parents=True)
        shipped = self._place_session(dataclasses.replace(spec, run_dir=run_dir), session_file)
        if spec.run_dir.is_dir():
            # The host's run folder is reachable here (this machine, a shared filesystem):
            # a lead's contract goes where the host's phase checks read it. Elsewhere it
            # stays on the node (not mirrored yet: a phase needing it is refused).
            (spec.run_dir / "contracts").mkdir(exist_ok=True)
            (run_dir / "contracts").symlink_to(spec.run_dir / "contracts")
        cwd = await self._working_copy(spec.cwd)
        behaviour = dict(spec.sim_behaviour)
        if "worktree" in behaviour:  # the sim commits in the team's folder: this clone
            behaviour["worktree"] = str(cwd)
        # A sim always runs as `legion-sim` here: an in-process sim would live in this
        # worker, where no process layer stops it.
        self.spec = dataclasses.replace(
            spec,
            run_dir=run_dir,
            session_file=session_file,
            cwd=cwd,
            sim_behaviour=behaviour,
            isolate=True,
        )
        backend = backend_for(self.spec)
        self.handle = build(self.spec, backend, self._hear_stream, self._hear_line,
                            self._hear_question)  # fmt: skip
        await self.handle.start()
        pid = self.handle.pid
        assert pid is not None  # every backend built here is an OS process
        # The file the agent really writes: pi names its own (the run's link points at
        # it); the sim and exec write the spec's.
        written = Path(getattr(self.handle, "session_file", session_file))
        context = get_runtime_context()
        return Placement(
            context.get_node_id(),
            socket.gethostname(),
            pid,
            backend,
            str(written),
            continued=len(self._shipment.session) if _same(written, shipped) else 0,
            resources=dict(context.get_assigned_resources()),  # type: ignore[no-untyped-call]
        )

    def _place_session(self, spec: LaunchSpec, session_file: Path) -> Path | None:
        """A resume's session, as the host mirrored it, where the agent will continue it:
        pi's in its session folder under the name pi gave it, anything else's at the
        spec's file. Returns that path (None: nothing shipped)."""
        shipment = self._shipment
        if not shipment.session:
            return None
        if shipment.session_name:
            folder = pi_session_dir(spec)
            folder.mkdir(parents=True, exist_ok=True)
            session_file = folder / Path(shipment.session_name).name  # a name, no path
        session_file.write_bytes(shipment.session)
        return session_file

    async def _working_copy(self, host_cwd: Path) -> Path:
        shipment = self._shipment
        if shipment.bundle is None:
            return host_cwd  # a shared filesystem: the host's folder is the node's too
        bundle = self._dir / "in.bundle"
        bundle.write_bytes(shipment.bundle)
        work = self._work = self._dir / "work"
        await _git(self._dir, "clone", "--quiet", "--branch", shipment.branch, str(bundle),
                   str(work))
        self._base_sha = await _git(work, "rev-parse", "HEAD")
        for key, value in zip(("user.name", "user.email"), shipment.identity, strict=True):
            if value:
                await _git(work, "config", key, value)
        cwd = work / shipment.prefix
        cwd.mkdir(parents=True, exist_ok=True)
        return cwd

    # The handle's hooks: kept for the host's next pull (a change ends its long poll).
    def _hear_stream(self, segment: RateSegment | None) -> None:
        self._live = dataclasses.replace(self._live, streaming=segment)

    def _hear_line(self, line: str) -> None:
        self._live = dataclasses.replace(self._live, line=line)

    def _hear_question(self, question: str | None) -> None:
        self._live = dataclasses.replace(self._live, question=question)

    def _state(self) -> State:
        handle = self.handle
        return State(
            running=handle is not None and handle.turn_running(),
            exited=handle.exited if handle is not None else None,
            session_size=_size(self.spec.session_file),
            log_size=_size(log_path(self.spec)),
            live=self._live,
        )

    async def pull(self, session_at: int, log_at: int, wait: float, known: State | None) -> Chunk:
        """The bytes past both offsets; with `wait`, waits (≤ wait s) for some, or for a
        state other than `known` — a long poll, so a quiet agent costs the host one call
        per `wait`, and a busy one's bytes leave within POLL_STEP of being written
        (QUIET_STEP after a quiet second; a streaming pi's segment: as often as it is
        published, every 0.1 s)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        quiet_from = loop.time() + QUIET_AFTER  # a pull ends at each change: a new start
        state = self._state()
        while (
            state.session_size <= session_at
            and state.log_size <= log_at
            and (known is None or _same_state(state, known))
            and loop.time() < deadline
        ):
            await asyncio.sleep(POLL_STEP if loop.time() < quiet_from else QUIET_STEP)
            state = self._state()
        return Chunk(
            session_at,
            _read(self.spec.session_file, session_at),
            log_at,
            _read(log_path(self.spec), log_at),
            state,
        )

    async def idle(self) -> State:
        if self.handle is not None:
            await self.handle.idle()
        return self._state()

    async def abort(self, keep_queue: bool, bound: float) -> tuple[AbortResult, State]:
        assert self.handle is not None
        result = await self.handle.abort(keep_queue=keep_queue, bound=bound)
        return result, self._state()

    async def steer(self, text: str) -> tuple[str, State]:
        assert self.handle is not None
        outcome = await self.handle.steer(text)
        return outcome, self._state()

    async def deliver(self, envelope: str) -> State:
        assert self.handle is not None
        await self.handle.deliver(envelope)
        return self._state()

    def turn_error(self) -> str | None:
        return self.handle.turn_error() if self.handle is not None else None

    async def commits(self, since: str) -> tuple[str, bytes] | None:
        """The branch as a bundle when its HEAD is not `since` (the host's last copy of
        it); None without a clone or without new commits."""
        work = self._work
        if work is None:
            return None
        head = await _git(work, "rev-parse", "HEAD")
        if head == (since or self._base_sha):
            return None
        out = self._dir / "out.bundle"
        await _git(work, "bundle", "create", "--quiet", str(out), self._shipment.branch)
        return head, out.read_bytes()

    async def stop(self, force: bool, grace: float) -> tuple[list[int], list[int]]:
        """The sweep of the agent's tree on this node (its group, its run marker)."""
        if self.handle is None:
            return [], []
        report = await self.handle.stop(force=force, grace=grace)
        return report.signalled, report.survivors

    def forget(self) -> None:
        """The node's folder goes once the host has what it needs from it."""
        shutil.rmtree(self._dir, ignore_errors=True)
