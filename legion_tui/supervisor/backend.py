"""The one interface the supervisor core drives an agent through (SPEC §6).

Five backends implement `AgentHandle`:

- ``inprocess`` — the simulated agent as an asyncio task in the supervisor (pid None);
- ``process``   — a child OS process: ``legion-sim`` speaking pi's RPC subset, or an
                  ``exec`` command from a card (no turn notion);
- ``pi-rpc``    — ``pi --mode rpc`` on stdin/stdout pipes;
- ``claude-stream`` — one long-lived ``claude -p --input-format stream-json
                  --output-format stream-json`` (prompts and steers are stdin lines);
- ``codex-app-server`` — ``codex app-server``, JSON-RPC over stdio (thread/turn methods).

With ``[cluster] engine = "ray"`` a sim or exec agent runs under its process backend
inside a Ray actor on some cluster node instead (``ray.handle.py``).

`backend_for` names the one a launch spec's kind and ``isolate`` flag get. This module is
the contract only: it imports no backend (they all import it). The handles are built by
`legion_tui.supervisor.backends.registry.make_handle`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from legion_tui.model import Backend

__all__ = [
    "ABORT_BOUND",
    "STOP_GRACE",
    "AbortOutcome",
    "AbortResult",
    "AgentHandle",
    "LaunchSpec",
    "SteerOutcome",
    "SweepReport",
    "backend_for",
]

AbortOutcome = Literal["interrupted", "no-turn", "timeout"]
SteerOutcome = Literal["queued", "accepted", "intercepted"]

# SPEC §6.3: the whole abort (clear queue + interrupt + wait for the turn to end) fits
# in one bound; §6.2: SIGTERM grace before SIGKILL.
ABORT_BOUND = 5.0
STOP_GRACE = 5.0


@dataclass(frozen=True)
class SweepReport:
    signalled: list[int]  # pids signalled
    survivors: list[int]  # pids still alive after the sweep (should be empty)


@dataclass(frozen=True)
class AbortResult:
    outcome: AbortOutcome
    # Queued steering messages dropped first; None when the agent cannot clear its queue
    # (pi before 0.84.4 has no `clear_queue`): the messages are kept and the receipt says so.
    dropped: int | None
    # The agent ended because of the abort (an exec command has no turn to end: SIGINT
    # ends the command): its exit status — no context was kept, whatever "abort" promises.
    exited: int | None = None


@dataclass(frozen=True)
class LaunchSpec:
    node_id: str
    run_id: str
    name: str
    role: str
    kind: str  # a model.Kind: "sim" | "pi" | "claude" | "codex" | "exec"
    task: str
    session_file: Path
    run_dir: Path
    cwd: Path
    socket_path: Path  # the supervisor's socket (for LEGION_SOCKET)
    command: list[str] | None = None  # exec/pi argv from the card (placeholders unresolved)
    env: Mapping[str, str] = field(default_factory=dict)  # added to the agent's environment
    isolate: bool = False  # sim as an OS process
    seed: int = 0
    speed: float = 1.0
    sim_behaviour: dict[str, Any] = field(default_factory=dict)  # stall_seconds, fail, ...
    resume: bool = False  # continue on an existing session file
    # Adopted idle on its session (after an attach): the agent starts and is sent nothing;
    # the next steer, letter or notice starts its turn. Only with `resume`.
    idle_start: bool = False
    # Its permission and approval requests (model.PERMISSIONS; None: the kind's default).
    permissions: str | None = None
    # The role card's body and tool list: what a real agent is told it is and may use
    # (pi: --append-system-prompt / --tools). Empty: the agent's own defaults.
    system_prompt: str = ""
    tools: tuple[str, ...] = ()
    # The role card's `resources:` in Ray's names ({"CPU": 2.0, "my-box": 1.0}): what the
    # agent's actor asks of a node on a Ray cluster. None: the settings' ask; unused locally.
    resources: Mapping[str, float] | None = None


@runtime_checkable
class AgentHandle(Protocol):
    node_id: str
    backend: Backend
    pid: int | None

    async def start(self) -> None:
        """Launch the agent; returns once it runs (the task prompt is sent)."""
        ...

    def turn_running(self) -> bool:
        """True while a turn is in progress (exec: while the process lives)."""
        ...

    async def idle(self) -> None:
        """Return when no turn runs (settled/idle) or the agent exited."""
        ...

    @property
    def exited(self) -> int | None:
        """Exit code once the agent is gone (in-process: 0 ok, 1 failed); else None."""
        ...

    async def abort(self, *, keep_queue: bool = False, bound: float = ABORT_BOUND) -> AbortResult:
        """SPEC §6.3: drop queued steering (unless keep_queue), interrupt, within `bound`."""
        ...

    async def steer(self, text: str) -> SteerOutcome:
        """Hand a steering message over; `accepted` starts a turn when idle."""
        ...

    async def deliver(self, envelope: str) -> None:
        """Mail hand-over: a follow-up the agent reads at its next turn boundary."""
        ...

    def turn_error(self) -> str | None:
        """Why the last turn failed, in the agent's words, when the agent says so itself
        (Claude Code's `result` with `is_error`, Codex's failed turn); None otherwise —
        pi and the sim tell it in their session file instead."""
        ...

    async def stop(self, *, force: bool, grace: float = STOP_GRACE) -> SweepReport:
        """SPEC §6.2: the sweep of the agent's tree; resolves only after it, reporting
        survivors."""
        ...


def backend_for(spec: LaunchSpec) -> Backend:
    """Which backend a launch spec gets: pi ⇒ pi-rpc, claude ⇒ claude-stream, codex ⇒
    codex-app-server, exec or isolated sim ⇒ process."""
    if spec.kind == "pi":
        return "pi-rpc"
    if spec.kind == "claude":
        return "claude-stream"
    if spec.kind == "codex":
        return "codex-app-server"
    if spec.kind == "exec" or spec.isolate:
        return "process"
    return "inprocess"
