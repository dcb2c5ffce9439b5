"""Whether an exec child waits for its user at its terminal (issue 12 item 5).

The signal, and why this one: a process of the pty's foreground process group asleep
(`S`) in read(2)/readv(2) on the pty itself (`/proc/<pid>/syscall`: the call's number,
then its first argument, the fd, which `/proc/<pid>/fd/<fd>` shows is our pty device).
A read of a terminal returns as soon as a line is there, so a process found in it twice
in a row has read everything typed and waits for more — the input queue is empty. Other
signals are weaker: the wait channel (`wchan`) reads `wait_woken` for any wait, a
sleeping state alone is also a `sleep 60`, and a program asleep in poll/select on fd 0
may be waiting on a socket as well, so those are not taken as a question. Reading
`syscall` needs the right to ptrace the process, which the host has over its own
descendants; a process it cannot read is never called waiting.
"""

from __future__ import annotations

import contextlib
import os

from legion_tui.procfs import children_of, stat_of

__all__ = ["READ_CALLS", "reading_terminal"]

# x86_64 and arm64 numbers of read and readv (the calls a blocking line read sleeps in).
READ_CALLS: frozenset[int] = frozenset({0, 19} if os.uname().machine == "x86_64" else {63, 65})
_MAX_PROCESSES = 256  # a child tree bigger than this is not searched further


def _tree(root: int) -> list[int]:
    found: list[int] = []
    todo = [root]
    while todo and len(found) < _MAX_PROCESSES:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children_of(pid))
    return found


def _reads_from(pid: int, device: int) -> bool:
    try:
        with open(f"/proc/{pid}/syscall", "rb") as syscall:
            fields = syscall.read().split()
        if len(fields) < 2 or int(fields[0]) not in READ_CALLS:
            return False
        fd = int(fields[1], 16)
        return os.stat(f"/proc/{pid}/fd/{fd}").st_rdev == device
    except (OSError, ValueError):
        return False


def reading_terminal(root: int, foreground: int, device: int) -> bool:
    """Whether a process under `root` in process group `foreground` sleeps reading the
    terminal `device` (a st_rdev) right now."""
    for pid in _tree(root):
        stat = stat_of(pid)
        if stat is None or stat.pgrp != foreground or stat.state != "S":
            continue
        with contextlib.suppress(OSError):
            if _reads_from(pid, device):
                return True
    return False
