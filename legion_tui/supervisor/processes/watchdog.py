"""The watchdog: the one process of a host that outlives its `kill -9` (issue 14 item 10).

The agents die with the host (their parent-death signal), but that signal is the agent's
own: what the agent started — a background job, a `nohup`, a double-forked `setsid`
daemon — re-parents to init and runs on. The host cannot act on its own death, so at
its first agent it starts this process: its child, in a session of its own (a terminal's
hang-up or ^C reaches the host, not this), with no parent-death signal, holding a pidfd
of the host. When the pidfd fires — the host is gone, however it died — it ends what the
host leaves behind and exits:

- the host's cgroup (`cgroups.py`), where the machine allows one: `cgroup.kill` ends
  every agent's whole tree at once, and `populated 0` says nothing is left; then the
  groups are removed;
- without one, what the host told it on its stdin while it lived (`Watchdog.send`):
  the session each agent was given (`+session SID`; whoever is still in it) and every
  process the host inherited or saw leave an agent's session (`+pid PID STARTTIME`: the
  start time makes a reused pid a different process). Each is SIGKILLed with whatever
  descends from it, in passes until one finds nothing alive, within `KILL_BOUND`.

A stdin closed while the host lives means the host is no longer ours (it exec'd): the
same end. Stdlib only, and small: it starts in tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from legion_tui.procfs import ProcStat, all_stats
from legion_tui.supervisor.processes import cgroups
from legion_tui.wire.lines import LineSplitter

__all__ = ["KILL_BOUND", "Tracked", "main"]

KILL_BOUND = 2.0  # seconds to end everything after the host's death (the bound)
REMOVE_BOUND = 5.0  # an emptied cgroup can be removed only once its last exit is done
PASS_PAUSE = 0.01  # between kill passes: the killed need a moment to become zombies
ORPHAN_POLL = 0.1  # without a pidfd: how often we look whether the host is still our parent


class Tracked:
    """What the host said to end: sessions, and processes by (pid, start time)."""

    def __init__(self) -> None:
        self.sessions: set[int] = set()
        self.procs: set[tuple[int, int]] = set()
        self._lines = LineSplitter()

    def feed(self, data: bytes) -> None:
        for line in self._lines.feed(data):
            self._apply(line.decode("ascii", "replace").split())

    def _apply(self, words: list[str]) -> None:
        try:
            if len(words) == 2 and words[0] in ("+session", "-session"):
                sid = int(words[1])
                (self.sessions.add if words[0][0] == "+" else self.sessions.discard)(sid)
            elif len(words) == 3 and words[0] in ("+pid", "-pid"):
                proc = (int(words[1]), int(words[2]))
                (self.procs.add if words[0][0] == "+" else self.procs.discard)(proc)
        except ValueError:
            pass  # not a line the host writes: ignored

    def targets(self, stats: dict[int, ProcStat]) -> set[int]:
        """The live processes to end in this pass, with all their live descendants."""
        me = os.getpid()
        hit = {
            pid
            for pid, st in stats.items()
            if not st.dead
            and pid not in (me, 1)
            and (st.session in self.sessions or (pid, st.starttime) in self.procs)
        }
        kids: dict[int, list[int]] = {}
        for pid, st in stats.items():
            kids.setdefault(st.ppid, []).append(pid)
        stack = list(hit)
        while stack:
            for child in kids.get(stack.pop(), ()):
                if child not in hit and child != me and not stats[child].dead:
                    hit.add(child)
                    stack.append(child)
        return hit


def _watch(host: int, pidfd: int | None, tracked: Tracked) -> None:
    """Until the host is gone (its pidfd fires; without one, we are re-parented) or its
    end of our stdin closes."""
    while True:
        if pidfd is None:
            ready, _, _ = select.select([0], [], [], ORPHAN_POLL)
            if os.getppid() != host:
                return
        else:
            ready, _, _ = select.select([pidfd, 0], [], [])
            if pidfd in ready:
                return
        if not ready:
            continue
        try:
            data = os.read(0, 65536)
        except OSError:
            data = b""
        if not data:
            return
        tracked.feed(data)


def _kill_tracked(tracked: Tracked, deadline: float) -> None:
    while True:
        targets = tracked.targets(all_stats())
        for pid in targets:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not targets or time.monotonic() >= deadline:
            return
        time.sleep(PASS_PAUSE)


def _end_group(group: Path, deadline: float) -> None:
    cgroups.kill(group)
    while cgroups.populated(group) and time.monotonic() < deadline:
        time.sleep(PASS_PAUSE)
        cgroups.kill(group)  # a process that was joining as we killed
    end = time.monotonic() + REMOVE_BOUND
    while not cgroups.remove_tree(group) and time.monotonic() < end:
        time.sleep(PASS_PAUSE)


def _close_inherited() -> None:
    """Hold nothing of the host's but the pipe: an fd it let leak (a pipe another process
    waits on to close) must not live on here; and no folder is kept busy."""
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc/self/fd"):
            if entry.isdigit() and int(entry) > 2:
                with contextlib.suppress(OSError):
                    os.close(int(entry))
    with contextlib.suppress(OSError):
        os.chdir("/")


def main(argv: Sequence[str] | None = None) -> int:
    """`watchdog HOST_PID CGROUP_DIR|-`: wait for the host's end, then end its leftovers."""
    args = list(sys.argv[1:] if argv is None else argv)
    _close_inherited()
    host = int(args[0])
    group = Path(args[1]) if len(args) > 1 and args[1] != "-" else None
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    tracked = Tracked()
    pidfd: int | None = None
    with contextlib.suppress(OSError):
        pidfd = os.pidfd_open(host)
    # Opened after the host's death the pidfd would name whoever got its pid: only a
    # host that is still our parent is the host.
    if os.getppid() == host:
        _watch(host, pidfd, tracked)
    deadline = time.monotonic() + KILL_BOUND
    if group is not None:
        cgroups.kill(group)  # first: one write ends every contained tree
    _kill_tracked(tracked, deadline)
    if group is not None:
        _end_group(group, deadline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
