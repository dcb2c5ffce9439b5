"""One spawned agent process and the moment its exit is known (`process.spawn_child`
makes them).

Two things learn of a child's exit, and they must not step on each other: a pidfd
(`os.pidfd_open` + `loop.add_reader`) reads the status without reaping (`WNOWAIT`) —
`Process.wait()` can hang on 3.11 while a grandchild holds a pipe (gh-119710) — and
asyncio's child watcher, which owns the reap. The transport is closed only after the
watcher's report (`ExitReportingProtocol`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import psutil

from legion_tui import own_children
from legion_tui.supervisor.processes import containment
from legion_tui.supervisor.processes.pipe_reader import PipeReader
from legion_tui.timeouts import within

__all__ = ["REAP_BOUND", "ChildProcess", "ExitReportingProtocol", "exit_code_of"]

REAP_BOUND = 2.0  # how long `aclose` waits for asyncio's watcher to report an exit


def exit_code_of(si_code: int, si_status: int) -> int:
    """Turn a waitid result into a returncode the way asyncio does (-N for a signal)."""
    if si_code == os.CLD_EXITED:
        return si_status
    return -si_status


class ExitReportingProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's own subprocess protocol, plus a future that resolves when asyncio's
    child watcher has reaped the child and reported its status (`process_exited`).

    That moment is the only one at which closing the transport is safe: before it,
    `transport.close()` polls the child (`Popen.poll` → `waitpid`), reaping it behind
    the watcher's back — the watcher then logs "Unknown child process pid" and reports
    255 — or, for a live child, kills it.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self._stdout_limit, self._stdout_loop = limit, loop
        self.reaped: asyncio.Future[None] = loop.create_future()
        self.close_when_reaped = False
        self._own_transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.SubprocessTransport)
        self._own_transport = transport
        stdout = transport.get_pipe_transport(1)
        if self.stdout is not None and stdout is not None:
            # The same reader, able to hold its pipe (the channels pace a trickle of
            # lines with it); nothing was fed to asyncio's one yet: pipe data is
            # delivered only after connection_made.
            self.stdout = PipeReader(self._stdout_limit, self._stdout_loop)
            self.stdout.set_transport(stdout)

    def process_exited(self) -> None:
        # The base class closes the transport itself once no pipe is open either; with
        # a pipe still held (a grandchild keeps pi's stdout open, gh-119710) it would
        # wait for that pipe forever, so a close already asked for happens now.
        super().process_exited()
        if not self.reaped.done():
            self.reaped.set_result(None)
        if self.close_when_reaped:
            self.close_transport()

    def close_transport(self) -> None:
        transport = self._own_transport
        if transport is not None and not transport.is_closing():
            transport.close()


class ChildProcess:
    """One spawned agent process: pid, log file and an exit future fed by its pidfd.

    Two things learn of the exit, and they must not step on each other: our pidfd reads
    the status without reaping (`WNOWAIT`), and asyncio's watcher reaps. The transport
    is closed only after the watcher's report (see `ExitReportingProtocol`).
    """

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        protocol: ExitReportingProtocol,
        log_path: Path,
    ) -> None:
        self.proc = proc
        self.pid: int = proc.pid
        self.log_path = log_path
        # Who the child is, fixed now (psutil keeps its start time): a stop long after its
        # end must never signal whoever the kernel has given its pid to since (sweep).
        self.process: psutil.Process | None = None
        with contextlib.suppress(psutil.Error):
            self.process = psutil.Process(self.pid)
        self._protocol = protocol
        loop = asyncio.get_running_loop()
        self._exit: asyncio.Future[int] = loop.create_future()
        self._fd: int | None = None
        # Whichever learns the exit first fills `_exit`: the pidfd (usually, and even
        # while a grandchild holds a pipe) or the watcher's report.
        protocol.reaped.add_done_callback(self._on_reaped)
        try:
            self._fd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            pass  # gone before we looked: the watcher's report fills `_exit`
        else:
            loop.add_reader(self._fd, self._on_pidfd)

    @property
    def returncode(self) -> int | None:
        return self._exit.result() if self._exit.done() else None

    @property
    def pgid(self) -> int:
        # start_new_session makes the child its own group leader: pgid == pid.
        return self.pid

    @property
    def reaped(self) -> bool:
        """asyncio's watcher has reaped the child and reported its status."""
        return self._protocol.reaped.done()

    def _on_pidfd(self) -> None:
        fd = self._fd
        assert fd is not None
        asyncio.get_running_loop().remove_reader(fd)
        try:
            # WNOWAIT: read the status but leave the zombie for asyncio's watcher to reap.
            info = os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            info = None  # the watcher reaped it first: its report fills `_exit`
        os.close(fd)
        self._fd = None
        if info is not None and not self._exit.done():
            self._exit.set_result(exit_code_of(info.si_code, info.si_status))

    def _on_reaped(self, _done: asyncio.Future[None]) -> None:
        own_children.forget(self.pid)
        box = containment.current()
        if box is not None:
            box.reaped(self.pid)
        if not self._exit.done():
            code = self.proc.returncode
            self._exit.set_result(code if code is not None else -signal.SIGKILL)

    async def wait(self, bound: float) -> int | None:
        """The exit code, or None if it did not exit within `bound` seconds."""
        try:
            return await within(asyncio.shield(self._exit), bound)
        except TimeoutError:
            return None

    def exited_future(self) -> asyncio.Future[int]:
        return self._exit

    def close(self) -> None:
        """Release the pidfd now and the transport once asyncio has reaped the child.

        Never reaps, never kills: a child still running (or not yet reported by the
        watcher) keeps its transport until the watcher's report, which closes it. Safe
        to call twice.
        """
        if self._fd is not None:
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(self._fd)
            os.close(self._fd)
            self._fd = None
        if self._protocol.reaped.done():
            self._protocol.close_transport()
        else:
            self._protocol.close_when_reaped = True

    async def aclose(self, bound: float = REAP_BOUND) -> None:
        """`close`, after waiting (at most `bound` s) for the watcher to report an
        exited child — so that, usually, nothing of it is left once this returns."""
        if self._exit.done() and not self._protocol.reaped.done():
            with contextlib.suppress(TimeoutError):
                await within(asyncio.shield(self._protocol.reaped), bound)
        self.close()
