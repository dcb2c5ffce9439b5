"""asyncio's child watcher for the host: a pidfd per child on the loop that started it, not
a thread per child (issue 35: the road to ten thousand agents).

Python 3.11's default (`ThreadedChildWatcher`) parks a thread in `waitpid` for each
subprocess's whole life: a host of 1 000 agents ran 1 000 threads, each spawn started
one, and the orphan reaper — which reads every thread's list of children — read 1 000
files a scan. Python 3.12 made the pidfd watcher the default where the kernel has pidfds
(Linux ≥ 5.3); this is that watcher's loop-agnostic form for 3.11, whose own
`PidfdChildWatcher` serves only the one loop it was attached to (the host also runs
subprocesses from worker threads' loops). Nothing is installed on 3.12 and later, or
where `pidfd_open` fails.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVarTuple

_Ts = TypeVarTuple("_Ts")

__all__ = ["install"]

log = logging.getLogger(__name__)

_installed = False


class _PidfdWatcher(asyncio.AbstractChildWatcher):
    """Python 3.12's `PidfdChildWatcher` (the loop is the running one, per child)."""

    def add_child_handler(self, pid: int, callback: Callable[[int, int, *_Ts], object],
                          *args: *_Ts) -> None:  # fmt: skip
        loop = asyncio.get_running_loop()
        pidfd = os.pidfd_open(pid)  # a child that exited already: readable at once
        loop._add_reader(pidfd, self._reaped, pid, pidfd, callback, args)  # type: ignore[attr-defined]

    def remove_child_handler(self, pid: int) -> bool:
        return False  # asyncio never asks (3.12's does the same)

    def _reaped(self, pid: int, pidfd: int, callback: Callable[..., object],
                args: tuple[Any, ...]) -> None:  # fmt: skip
        asyncio.get_running_loop()._remove_reader(pidfd)  # type: ignore[attr-defined]
        try:
            _pid, status = os.waitpid(pid, 0)
        except ChildProcessError:  # someone else reaped it (never us: see orphans.py)
            returncode = 255
            log.warning("child process %d: its exit status was read elsewhere", pid)
        else:
            returncode = os.waitstatus_to_exitcode(status)
        os.close(pidfd)
        callback(pid, returncode, *args)

    def attach_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
        pass  # each child's reader is on the loop that started it

    def is_active(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def __enter__(self) -> _PidfdWatcher:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:  # fmt: skip
        pass


def install() -> bool:
    """Use the pidfd watcher from now on (process-wide, idempotent); whether it is used.
    Children already started keep the watcher they were started under."""
    global _installed
    if _installed or sys.version_info >= (3, 12):
        return _installed
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False  # no pidfds here: asyncio's threads it is
    asyncio.set_child_watcher(_PidfdWatcher())
    _installed = True
    return True
