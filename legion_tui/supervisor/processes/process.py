"""Spawning agent processes and learning their exit, with every wait bounded (SPEC §6.2).

Why it looks like this (see notes/runtime-facts.md "Processes"):

- Each child gets its own session and process group (`start_new_session=True`) so a
  Ctrl-C in the terminal reaches only the supervisor, and the stop sweep can signal the
  group.
- Output goes to `terminal/<nodeId>.log`, never to an unread pipe. Only pi RPC needs
  stdin/stdout pipes; its stderr still goes to the log.
- Children die with the supervisor: the argv is prefixed with `setpriv --pdeathsig KILL`
  (or a tiny Python launcher calling prctl) and we spawn from the event-loop thread,
  because the parent-death signal fires when the parent *thread* exits.
- The exit is learned from a pidfd (`os.pidfd_open` + `loop.add_reader`), not from
  `Process.wait()`, which on 3.11 can hang while a grandchild holds a pipe (gh-119710).
  `os.waitid(P_PIDFD, …, WNOWAIT)` reads the status without reaping, leaving the reap to
  asyncio's child watcher, which owns it.
- The supervisor is a child subreaper so that orphans of its agents re-parent to it
  (not to a PID 1 that may never reap); the sweep reaps the pids it killed, by pid —
  never `waitpid(-1)`, which would steal asyncio's exit statuses.
- A child with a run marker is an agent (or a team's verify command): it joins a cgroup
  of its own before its command runs, where the machine allows one, and the host's
  watchdog is running before it starts (`containment.py`) — what it starts can shed the
  marker, its group and its session, not that; and outlives the host only by 2 s.
- A child's ^C and abort are SIGINT, so a child never starts with SIGINT (or SIGQUIT)
  ignored — which is what every child of a host started as a background job (`legion
  … &` in a script, a CI step) inherits across exec: a shell without job control starts
  its `&` commands with both ignored. The host keeps its own choice (a handler that
  does nothing stands in for the ignore); handlers, unlike an ignore, are not inherited.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from legion_tui import own_children
from legion_tui.supervisor.processes import child_watcher, containment
from legion_tui.supervisor.processes.child_process import (
    ChildProcess,
    ExitReportingProtocol,
)
from legion_tui.wire.names import (
    ENV_INBOX,
    ENV_NODE_ID,
    ENV_RUN_DIR,
    ENV_RUN_ID,
    ENV_SESSION_FILE,
    ENV_SOCKET,
)

__all__ = [
    "death_signal_prefix",
    "enable_subreaper",
    "marker_env",
    "python_launcher_prefix",
    "reap",
    "spawn_child",
    "wait_pid_exit",
]


_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36

# Used when util-linux's setpriv is missing: set the parent-death signal, then become
# the command. Kept inline so the launcher never imports this package (fast start).
_PY_LAUNCHER = (
    "import ctypes,os,signal,sys;"
    "ctypes.CDLL(None,use_errno=True).prctl(1,signal.SIGKILL,0,0,0);"
    "os.getppid()==int(sys.argv[1]) or os.kill(os.getpid(),signal.SIGKILL);"
    "os.execvp(sys.argv[2],sys.argv[2:])"
)

_subreaper_enabled = False

PIPE_LIMIT = 16 * 1024 * 1024  # StreamReader limit of a pi RPC stdout line


def enable_subreaper() -> bool:
    """Make this process the reaper of its agents' orphans (process-wide, idempotent)."""
    global _subreaper_enabled
    if _subreaper_enabled:
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _subreaper_enabled = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _subreaper_enabled = False
    return _subreaper_enabled


def death_signal_prefix() -> list[str]:
    """The argv prefix that makes the command die with this process (SIGKILL)."""
    setpriv = "/usr/bin/setpriv" if os.path.exists("/usr/bin/setpriv") else shutil.which("setpriv")
    if setpriv:
        return [setpriv, "--pdeathsig", "KILL", "--"]
    return python_launcher_prefix()


def python_launcher_prefix() -> list[str]:
    """The fallback: prctl(PR_SET_PDEATHSIG) from a tiny Python, then execvp the command.

    The launcher checks its parent is still us after prctl: had we died in between, the
    signal would never come.
    """
    return [sys.executable, "-c", _PY_LAUNCHER, str(os.getpid())]


def marker_env(
    *,
    run_id: str,
    node_id: str,
    socket_path: Path | str,
    run_dir: Path | str,
    session_file: Path | str,
    inbox: Path | str | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The child's environment: the caller's plus the run marker the sweep looks for."""
    env = dict(os.environ if base is None else base)
    env[ENV_RUN_ID] = run_id
    env[ENV_NODE_ID] = node_id
    env[ENV_SOCKET] = str(socket_path)
    env[ENV_RUN_DIR] = str(run_dir)
    env[ENV_SESSION_FILE] = str(session_file)
    if inbox is not None:
        env[ENV_INBOX] = str(inbox)
    return env


def wait_pid_exit(pid: int) -> asyncio.Future[None]:
    """A future that resolves when `pid` terminates (zombie or gone), via a pidfd.

    Works for any pid of ours to signal, not only our children. Already gone ⇒ done.
    """
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[None] = loop.create_future()
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        fut.set_result(None)
        return fut

    held = [fd]  # emptied by the one close: a cancel after the fire must not close again

    def release() -> None:
        # Twice, the second close (and remove_reader) would hit whatever reused the
        # number meanwhile: a file, a new agent's stdin pipe closed under it.
        if held:
            loop.remove_reader(held.pop())
            os.close(fd)

    def fired() -> None:
        release()
        if not fut.done():
            fut.set_result(None)

    def cancelled(f: asyncio.Future[None]) -> None:
        # Also after `fired` ran: a cancel in the same loop turn as the pidfd's readiness
        # runs this callback one turn later, after `fired` closed the fd.
        if f.cancelled():
            release()

    loop.add_reader(fd, fired)
    fut.add_done_callback(cancelled)
    return fut


def reap(pids: Sequence[int]) -> list[int]:
    """Reap the given pids if they are our zombies (WNOHANG, by pid). Returns the reaped."""
    reaped: list[int] = []
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            got, _status = os.waitpid(pid, os.WNOHANG)
            if got == pid:
                reaped.append(pid)
    return reaped


async def spawn_child(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    log_path: Path,
    pipes: bool = False,
    terminal: int | None = None,
) -> ChildProcess:
    """Start `argv` in its own session, output to `log_path`, dying with us.

    pipes=True gives stdin/stdout pipes (pi RPC); stderr still goes to the log.
    `terminal`: a pty's slave fd, the child's stdin, stdout and stderr and its controlling
    terminal (the pty's owner copies the output to the log: `pty_terminal`).
    Must run on the event-loop thread (the parent-death signal follows the thread).
    """
    if terminal is not None:
        from legion_tui.supervisor.processes.pty_terminal import controlling_tty_prefix

        return await _spawn(
            [*controlling_tty_prefix(), *argv],
            env=env,
            cwd=cwd,
            log_path=log_path,
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
        )
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # A raw descriptor: the child inherits its own copy; ours is closed right after.
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        return await _spawn(
            argv,
            env=env,
            cwd=cwd,
            log_path=log_path,
            stdin=asyncio.subprocess.PIPE if pipes else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE if pipes else log,
            stderr=log,
        )
    finally:
        os.close(log)


def _ignore(signum: int, frame: object) -> None:
    """The host's stand-in for an inherited SIG_IGN (see the module's docstring)."""


def interrupts_reach_children() -> None:
    """No SIGINT/SIGQUIT ignore for the next child to inherit: an ignored one becomes a
    handler that does nothing. Only the main thread may set a handler; from any other
    (a Ray actor's loop thread, say) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGQUIT):
        if signal.getsignal(signum) is signal.SIG_IGN:
            signal.signal(signum, _ignore)


async def _spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    log_path: Path,
    stdin: int,
    stdout: int,
    stderr: int,
) -> ChildProcess:
    enable_subreaper()
    child_watcher.install()  # a pidfd per agent, not a thread (Python 3.11's default)
    interrupts_reach_children()
    loop = asyncio.get_running_loop()
    # The group is joined after the parent-death launcher (first: the host may die at any
    # moment) and before the command: nothing the command starts is ever outside it.
    with containment.launching(env) as (join, started), own_children.spawning() as register:
        # asyncio.create_subprocess_exec, with a protocol that says when the watcher reaped.
        transport, protocol = await loop.subprocess_exec(
            lambda: ExitReportingProtocol(PIPE_LIMIT, loop),
            *death_signal_prefix(),
            *join,
            *argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=str(cwd),
            env=dict(env),
            start_new_session=True,
        )
        register(transport.get_pid())
        started(transport.get_pid())
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    return ChildProcess(proc, protocol, log_path)
