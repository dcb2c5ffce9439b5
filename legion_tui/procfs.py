"""Reading processes from /proc: one parser of `stat`, the children and the environment.

Stdlib only: the watchdog (`watchdog.py`) imports it in a process of its own, where a
fast start matters more than anything psutil would add.
"""

# (No `from __future__ import annotations`: see `legion_tui.commands`.)

import contextlib
import os
from collections.abc import Iterator
from typing import NamedTuple

__all__ = ["ProcStat", "all_stats", "children_of", "environ_of", "pids", "stat_of"]


class ProcStat(NamedTuple):  # not a dataclass: the verbs read one (see runs.folder.RunInfo)
    pid: int
    state: str  # R, S, D, Z (a zombie: dead, only awaiting its reaper), X …
    ppid: int
    pgrp: int
    session: int
    starttime: int  # clock ticks since boot: with the pid, one process for ever

    @property
    def dead(self) -> bool:
        return self.state in ("Z", "X")


def stat_of(pid: int) -> ProcStat | None:
    """The process's `stat` (None: gone, or not readable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    # The name is parenthesised and may itself hold spaces and parentheses.
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return ProcStat(
            pid=pid,
            state=fields[0].decode(),
            ppid=int(fields[1]),
            pgrp=int(fields[2]),
            session=int(fields[3]),
            starttime=int(fields[19]),
        )
    except (IndexError, ValueError):
        return None


def pids() -> Iterator[int]:
    """Every pid on the machine (none without procfs)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if entry.isdigit():
            yield int(entry)


def all_stats() -> dict[int, ProcStat]:
    """One pass over /proc: every process's `stat`, by pid."""
    out: dict[int, ProcStat] = {}
    for pid in pids():
        stat = stat_of(pid)
        if stat is not None:
            out[pid] = stat
    return out


def children_of(pid: int) -> set[int]:
    """The direct children of `pid` (of all its threads), from the kernel's own list."""
    out: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        with (
            contextlib.suppress(OSError, ValueError),
            open(f"/proc/{pid}/task/{task}/children", "rb") as fh,
        ):
            out.update(int(child) for child in fh.read().split())
    return out


def environ_of(pid: int) -> list[bytes] | None:
    """The process's environment as `KEY=value` items (None: gone, a zombie, not ours)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().split(b"\0")
    except OSError:
        return None
