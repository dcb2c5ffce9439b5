"""Reap every orphan the host adopts (issue 14 item 9).

The host is a child subreaper (`process.enable_subreaper`), so an agent's double-forked
helpers (`nohup x &`, git's detached gc, a shell's `( cmd & )`) re-parent to it when their
parent exits. asyncio reaps only the children it started; without this, every such
helper that ends stays a zombie of the host for the run's life (200 of 200 in a test) —
until the pid space runs out.

Which zombies are ours to reap, without stealing an exit status asyncio waits for:
- asyncio's children are either `spawn_child`'s (registered here by pid while they run)
  or helper commands in the host's own session (`pi --version`, git);
- an adopted orphan is neither: it comes from an agent's tree, and every agent runs in
  its own session, so its sid is not the host's — and it is not registered.
So a zombie child of the host, unregistered, outside the host's session, is reaped by
pid (never `waitpid(-1)`). The scan reads the host's `/proc/self/task/*/children` and the
zombies' `stat`: a few syscalls per child, on SIGCHLD (coalesced) and every few seconds.

The same loop keeps the record of what the host inherits where no cgroup tracks the
agents (`containment.Containment.record`, every `RECORD_EVERY` s then): the pids a stop
or the watchdog must end although they shed every marker (issue 14 items 10, 11).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from legion_tui.own_children import registered, spawns_under_way
from legion_tui.procfs import children_of, stat_of
from legion_tui.supervisor.processes import containment
from legion_tui.timeouts import within

__all__ = ["OrphanReaper", "reap_orphans"]

SWEEP_EVERY = 5.0  # a SIGCHLD can be lost in a storm (signals coalesce); the sweep is not
RECORD_EVERY = containment.RECORD_EVERY
RETRY_AFTER = 0.02

def _zombie_session(pid: int) -> int | None:
    """The session id of `pid` if it is a zombie; None otherwise (or gone)."""
    stat = stat_of(pid)
    return stat.session if stat is not None and stat.state == "Z" else None


def reap_orphans() -> list[int] | None:
    """Reap the adopted orphans that have exited; the pids reaped (None: a spawn is in
    progress, try again in a moment)."""
    if spawns_under_way():
        return None
    own_session = os.getsid(0)
    reaped: list[int] = []
    for pid in children_of(os.getpid()) - registered():
        session = _zombie_session(pid)
        if session is None or session == own_session:
            continue  # running, or asyncio's own helper (in the host's session)
        with contextlib.suppress(ChildProcessError, OSError):
            got, _status = os.waitpid(pid, os.WNOHANG)
            if got == pid:
                reaped.append(pid)
    return reaped


class OrphanReaper:
    """Reaps on SIGCHLD (coalesced: one scan per burst) and every `SWEEP_EVERY` s."""

    def __init__(self) -> None:
        self.reaped = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGCHLD, self.wake)
            # A storm of SIGCHLD (hundreds of agents ending at a pause) fills the loop's
            # wakeup socket, and Python printed "Exception ignored when trying to write
            # to the signal wakeup fd … BlockingIOError" for each signal, over the user's
            # terminal. A full socket means the loop is woken already, and a SIGCHLD lost
            # to it is the periodic sweep's: the socket stays, the warning goes.
            signal.set_wakeup_fd(signal.set_wakeup_fd(-1), warn_on_full_buffer=False)
        self._task = loop.create_task(self._run(), name="orphan-reaper")

    def wake(self) -> None:
        """A child exited (SIGCHLD): scan now."""
        self._wake.set()

    async def close(self) -> None:
        if self._loop is not None:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self._loop.remove_signal_handler(signal.SIGCHLD)
        if self._task is not None:
            self._task.cancel()
            # gather, not a suppressed CancelledError: a cancel of the close itself goes on
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self.reaped += len(reap_orphans() or ())

    async def _run(self) -> None:
        while True:
            box = containment.current()
            every = RECORD_EVERY if box is not None and box.needs_record() else SWEEP_EVERY
            with contextlib.suppress(TimeoutError):
                await within(self._wake.wait(), every)
            self._wake.clear()
            if box is not None:
                box.record()
            reaped = reap_orphans()
            while reaped is None:  # a spawn is between fork and register: a moment
                await asyncio.sleep(RETRY_AFTER)
                reaped = reap_orphans()
            self.reaped += len(reaped)
