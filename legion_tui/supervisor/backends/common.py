"""What the backends share: the launch bounds, paths, env, argv placeholders, the bounded
abort, the steer outcome words, and the exit status and stop of a process child
(`ProcessChildHandle`)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from legion_tui.agents.installed import agent_environment
from legion_tui.agents.placeholders import fill
from legion_tui.agents.resolve import find_program
from legion_tui.regular_files import atomic_write
from legion_tui.runs.folder import inbox_file, task_file, terminal_log
from legion_tui.supervisor.backend import (
    ABORT_BOUND,
    STOP_GRACE,
    AbortResult,
    LaunchSpec,
    SteerOutcome,
    SweepReport,
)
from legion_tui.supervisor.processes.child_process import ChildProcess
from legion_tui.supervisor.processes.process import marker_env
from legion_tui.supervisor.processes.sweep import sweep
from legion_tui.timeouts import within
from legion_tui.wire.names import ENV_TASK, ENV_TASK_FILE

__all__ = [
    "MAX_BOUND",
    "RESUME_PROMPT",
    "START_BOUND",
    "STEER_OUTCOMES",
    "ProcessChildHandle",
    "bounded_abort",
    "child_env",
    "has_option",
    "inbox_path",
    "log_path",
    "log_tail",
    "normalize_bound",
    "option_value",
    "point_session_link",
    "require_executable",
    "resolve_argv",
]

MAX_BOUND = 3600.0
# Spawn until pi answers. One pi starts in 2–5 s on this 2-core machine; six started
# together share the cores and took over 10 s each (the old bound failed all six). A
# start that truly fails ends sooner: the process exits and the pipe closes.
START_BOUND = 90.0
# Sent on resume instead of the task: the session already holds the task (pi reopens it
# with --continue), so sending the task again would show the agent two copies of it.
RESUME_PROMPT = (
    "You were stopped and have been resumed. Continue the task where you left off; "
    "end with the verdict line as instructed."
)

# The in-process sim and pi's RPC answer a steer/prompt with the same disposition words.
STEER_OUTCOMES: dict[str, SteerOutcome] = {
    "started": "accepted",
    "queued": "queued",
    "handled": "intercepted",
}

MAX_ENV_STRING = 128 * 1024  # MAX_ARG_STRLEN: one `NAME=value`, its NUL included


def normalize_bound(bound: float) -> float:
    """A junk bound (≤ 0, NaN, ∞) falls back to the shared 5 s; a huge one is capped.

    Upstream #314: a bad value must not turn every abort into a fake `timeout`.
    """
    if not math.isfinite(bound) or bound <= 0:
        return ABORT_BOUND
    return min(bound, MAX_BOUND)


def log_path(spec: LaunchSpec) -> Path:
    return terminal_log(spec.run_dir, spec.node_id)


def log_tail(spec: LaunchSpec, *, max_lines: int = 6, max_bytes: int = 4096) -> str:
    """The last lines the agent wrote to its terminal log, joined with ` ⏎ ` — what a
    failed start reports, so the agent's own reason (a bad provider, a missing key)
    reaches the user instead of sitting in a file nobody opens."""
    try:
        with open(log_path(spec), "rb") as log:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - max_bytes))
            data = log.read()
    except OSError:
        return ""
    lines = [ln.strip() for ln in data.decode(errors="replace").splitlines() if ln.strip()]
    return " ⏎ ".join(lines[-max_lines:])


def option_value(argv: Sequence[str], *names: str) -> str | None:
    """The value a card's argv gives one of `names` (`--x v` or `--x=v`), if any."""
    for index, arg in enumerate(argv):
        for name in names:
            if arg == name and index + 1 < len(argv):
                return argv[index + 1]
            if arg.startswith(name + "="):
                return arg[len(name) + 1 :]
    return None


def has_option(argv: Sequence[str], *names: str) -> bool:
    """Whether a card's argv already gives one of `names` (alone or as `--x=v`)."""
    return any(arg in names or arg.startswith(tuple(n + "=" for n in names)) for arg in argv)


def point_session_link(link: Path, target: Path) -> None:
    """`sessions/<nodeId>.jsonl` (the run's one file per node, SPEC §2) → the file the
    agent really writes (pi's in its session dir, Claude Code's under its config dir,
    Codex's rollout). A real file there is never replaced; a link to another file — a
    launch that never wrote (pi 0.73 stopped before its first answer names a new file
    on its restart), a dangling one — is pointed at this one, or the node would read
    "not found" and lose the verdict the agent writes."""
    if link == target or (link.exists() and not link.is_symlink()):
        return
    if link.is_symlink():
        if os.readlink(link) == str(target):
            return
        with contextlib.suppress(OSError):
            link.unlink()
    with contextlib.suppress(OSError):
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link)


def inbox_path(spec: LaunchSpec) -> Path:
    return inbox_file(spec.run_dir, spec.node_id)


def child_env(spec: LaunchSpec, *, inbox: Path | None = None) -> dict[str, str]:
    """The agent's environment: the run marker, and its task as `$LEGION_TASK` and in
    the file `$LEGION_TASK_FILE` (and `{task_file}`) names — written here, 0600, before
    the agent starts: the safe way for a script to read it (agents.placeholders)."""
    env = marker_env(
        run_id=spec.run_id,
        node_id=spec.node_id,
        socket_path=spec.socket_path,
        run_dir=spec.run_dir,
        session_file=spec.session_file,
        inbox=inbox,
        base=agent_environment({**os.environ, **spec.env}, (spec.command or [""])[0]),
    )
    path = task_file(spec.run_dir, spec.node_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, spec.task)
    env[ENV_TASK_FILE] = str(path)
    # One environment string holds at most MAX_ARG_STRLEN (128 KiB) bytes: a task at the
    # very limit is in the file alone.
    if len(ENV_TASK) + 1 + len(spec.task.encode()) < MAX_ENV_STRING:
        env[ENV_TASK] = spec.task
    return env


def resolve_argv(command: list[str], spec: LaunchSpec) -> list[str]:
    """Fill `{task}`, `{task_file}`, `{session_file}`, `{cwd}`, `{name}` in each argument
    (SPEC §6.1; agents.placeholders.fill: a literal brace elsewhere — a JSON snippet, a
    shell `${VAR}`, a task quoting a card — survives untouched)."""
    return fill(
        command,
        {
            "task": spec.task,
            "task_file": str(task_file(spec.run_dir, spec.node_id)),
            "session_file": str(spec.session_file),
            "cwd": str(spec.cwd),
            "name": spec.name,
        },
    )


async def bounded_abort(
    *,
    bound: float,
    keep_queue: bool,
    clear: Callable[[], Awaitable[int]] | None,
    interrupt: Callable[[], None],
    settled: Callable[[], Awaitable[object]],
) -> AbortResult:
    """SPEC §6.3 after the caller saw a running turn: clear, interrupt, wait — one bound.

    The clear is best effort: failing or hanging, it counts 0 dropped and the interrupt
    still goes out (upstream abort-soft-interrupt D4). `clear` None: the agent has no way
    to clear its queue — nothing is sent for it and `dropped` is None (kept, and said so).
    `timeout` is a report, not a kill.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + normalize_bound(bound)
    dropped: int | None = 0
    if clear is None:
        dropped = 0 if keep_queue else None
    elif not keep_queue:
        with contextlib.suppress(Exception):
            dropped = await within(clear(), max(0.0, deadline - loop.time()))
    interrupt()
    try:
        await within(settled(), max(0.0, deadline - loop.time()))
    except TimeoutError:
        return AbortResult("timeout", dropped)
    return AbortResult("interrupted", dropped)




def require_executable(argv: list[str], env: dict[str, str], cwd: Path) -> None:
    """Refuse a launch whose program is not there, before anything is spawned.

    Without this the failure would surface late and vaguely: the parent-death launcher
    (setpriv) starts fine and only its exec fails, as exit status 127 in the log.
    """
    if not argv:
        raise FileNotFoundError("empty command")
    if find_program(argv[0], cwd=cwd, path=env.get("PATH")) is None:
        raise FileNotFoundError(f"command not found: {argv[0]} (looked on PATH)")


class ProcessChildHandle:
    """What the exec and RPC handles share: one OS child (None until started), its exit
    status, and its stop (SPEC §6.2) — the sweep of its tree, its group and whatever
    carries this node's run marker, then the handle's own channels, then the child
    itself."""

    spec: LaunchSpec
    child: ChildProcess | None

    @property
    def exited(self) -> int | None:
        return self.child.returncode if self.child is not None else None

    async def stop(self, *, force: bool, grace: float = STOP_GRACE) -> SweepReport:
        child = self.child
        if child is None:
            return SweepReport(signalled=[], survivors=[])  # never spawned: nothing to signal
        report = await sweep(
            root=child.process,
            run_id=self.spec.run_id,
            node_ids={self.spec.node_id},
            force=force,
            grace=grace,
            root_exit=child.exited_future(),
        )
        await self._close_channels()
        await child.aclose()
        return report

    def turn_error(self) -> str | None:
        return None  # pi, the sim and exec commands say it in their session file or exit

    async def _close_channels(self) -> None:
        """What the handle holds open to the child closes here, before the child does
        (the RPC handle: its JSON-lines client; an exec child has nothing open)."""
