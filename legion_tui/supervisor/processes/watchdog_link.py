"""The host's end of its watchdog (`watchdog.py`): the process, and the pipe it is told on.

The host tells it each session and inherited pid it must end should the host die
(`+session SID`, `+pid PID STARTTIME`, and `-` for those gone); a line is never allowed
to block the host's loop, so what a full pipe will not take waits for the next write.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from legion_tui.procfs import stat_of

__all__ = ["WatchdogLink"]


class WatchdogLink:
    """The host's end of the watchdog: its pid, and the pipe to its stdin.

    Started with posix_spawn, not Popen: a Popen object would warn, at the host's exit,
    that its child still runs — which is the point. It closes the descriptors it
    inherits by mistake itself."""

    def __init__(self, group: Path | None) -> None:
        read, self._write = os.pipe()  # neither end is inherited by anything else
        argv = [
            sys.executable,
            "-P",  # never import from the project's folder
            "-m",
            "legion_tui.supervisor.processes.watchdog",
            str(os.getpid()),
            str(group) if group is not None else "-",
        ]
        try:
            self.pid = os.posix_spawn(
                sys.executable,
                argv,
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_DUP2, 1, 2),
                ],
                setsid=True,  # a terminal's hang-up or ^C reaches the host, not this
            )
        except BaseException:
            os.close(self._write)
            raise
        finally:
            os.close(read)
        stat = stat_of(self.pid)
        self._starttime = stat.starttime if stat is not None else None
        os.set_blocking(self._write, False)
        self._backlog = b""

    def alive(self) -> bool:
        stat = stat_of(self.pid)
        if stat is not None and stat.starttime == self._starttime and not stat.dead:
            return self._write >= 0
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, os.WNOHANG)  # ours, not asyncio's: reaped by pid
        return False

    def send(self, line: str) -> None:
        """Queue one line; written now if the pipe takes it (never blocks the loop)."""
        if self._write < 0:
            return
        self._backlog += line.encode("ascii") + b"\n"
        self.flush()

    def flush(self) -> None:
        while self._backlog and self._write >= 0:
            try:
                written = os.write(self._write, self._backlog)
            except BlockingIOError:
                return  # the pipe is full: the next send or record writes the rest
            except OSError:
                self.close()  # it is gone: a new one is started at the next spawn
                return
            self._backlog = self._backlog[written:]

    def close(self) -> None:
        if self._write >= 0:
            os.close(self._write)
            self._write = -1
        self._backlog = b""
