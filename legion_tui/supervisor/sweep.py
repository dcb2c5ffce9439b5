"""The stop sweep (SPEC §6.2): nothing carrying the run marker survives a stop.

Order matters (notes/runtime-facts.md "Processes"):
1. snapshot the process tree BEFORE the first signal — once the root is dead its orphans
   cannot be found through `children()` any more;
2. SIGTERM to the process group, then wait (bounded) for the group's members to exit;
3. SIGKILL to the group, to every snapshotted descendant and to every process whose
   `/proc/<pid>/environ` carries `LEGION_RUN_ID=<run>` and a `LEGION_NODE_ID` of the
   stopped subtree — the only way to catch a double-forked `setsid` daemon;
4. reap what is ours, wait (bounded) for the deaths, and report survivors.

A force stop is the same sweep without SIGTERM and grace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Collection, Iterable

import psutil

from legion_tui.supervisor.backend import SweepReport
from legion_tui.supervisor.client import ENV_NODE_ID, ENV_RUN_ID
from legion_tui.supervisor.process import reap, wait_pid_exit

__all__ = ["KILL_SETTLE", "marked_pids", "sweep"]

# How long SIGKILLed processes get to disappear before they count as survivors.
KILL_SETTLE = 2.0

_GONE = (ProcessLookupError, psutil.NoSuchProcess, PermissionError, psutil.AccessDenied)


def marked_pids(run_id: str, node_ids: Collection[str]) -> list[int]:
    """Pids whose environment carries this run's marker with one of `node_ids`."""
    want_run = f"{ENV_RUN_ID}={run_id}".encode()
    want_nodes = {f"{ENV_NODE_ID}={n}".encode() for n in node_ids}
    me = os.getpid()
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found  # no procfs: the group signal is all we have
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue  # gone, a zombie, or not ours to read
        if want_run in env and not want_nodes.isdisjoint(env):
            found.append(int(entry))
    return found


def _alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (a zombie is dead; it only awaits its reaper)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except _GONE:
        return False


def _snapshot(root_pid: int | None, run_id: str, node_ids: Collection[str]) -> list[psutil.Process]:
    procs: dict[int, psutil.Process] = {}
    if root_pid is not None:
        with contextlib.suppress(*_GONE):
            root = psutil.Process(root_pid)
            procs[root.pid] = root
            for child in root.children(recursive=True):
                procs[child.pid] = child
    for pid in marked_pids(run_id, node_ids):
        with contextlib.suppress(*_GONE):
            procs.setdefault(pid, psutil.Process(pid))
    return list(procs.values())


def _signal_group(pgid: int | None, sig: signal.Signals) -> bool:
    if pgid is None:
        return False
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _kill(procs: Iterable[psutil.Process], sig: signal.Signals) -> list[int]:
    hit: list[int] = []
    for proc in procs:
        try:
            # psutil checks the create time first, so a reused pid is never signalled.
            proc.send_signal(sig)
        except _GONE:
            continue
        hit.append(proc.pid)
    return hit


async def _wait_gone(procs: Collection[psutil.Process], bound: float) -> None:
    """Wait until none of `procs` is alive, at most `bound` seconds."""
    live = [p for p in procs if _alive(p)]
    if not live or bound <= 0:
        return
    waiters = [wait_pid_exit(p.pid) for p in live]
    try:
        await asyncio.wait_for(asyncio.gather(*waiters), bound)
    except TimeoutError:
        pass
    finally:
        for w in waiters:
            w.cancel()


async def sweep(
    *,
    root_pid: int | None,
    pgid: int | None,
    run_id: str,
    node_ids: Collection[str],
    force: bool,
    grace: float = 5.0,
    root_exit: asyncio.Future[int] | None = None,
) -> SweepReport:
    """Stop the process tree of `root_pid` and everything marked with `node_ids`.

    Resolves only after the sweep; `survivors` lists what is still alive (should be []).
    `root_exit`, when given, is the root's own exit future (its reaper is asyncio's).
    """
    snapshot = _snapshot(root_pid, run_id, node_ids)
    signalled: set[int] = set()
    # Membership before any signal: a member that dies at once can no longer be asked.
    group = [p for p in snapshot if _in_group(p, pgid)]
    if not force:
        if _signal_group(pgid, signal.SIGTERM):
            signalled.update(p.pid for p in group)
        await _wait_gone(group, grace)
    # SIGKILL everything, even if the group looks gone: a member may have left it.
    if _signal_group(pgid, signal.SIGKILL):
        signalled.update(p.pid for p in group)
    signalled.update(_kill(snapshot, signal.SIGKILL))
    late = [
        psutil.Process(pid)
        for pid in marked_pids(run_id, node_ids)
        if pid not in {p.pid for p in snapshot} and _exists(pid)
    ]
    signalled.update(_kill(late, signal.SIGKILL))
    targets = snapshot + late
    await _wait_gone(targets, KILL_SETTLE)
    if root_exit is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(root_exit), KILL_SETTLE)
    # Orphans re-parented to us (we are a subreaper) are ours to reap; the root is not:
    # asyncio's watcher reaps it.
    reap([p.pid for p in targets if p.pid != root_pid and _is_our_zombie(p.pid)])
    survivors = sorted(p.pid for p in targets if _alive(p))
    return SweepReport(signalled=sorted(signalled), survivors=survivors)


def _exists(pid: int) -> bool:
    return psutil.pid_exists(pid)


def _in_group(proc: psutil.Process, pgid: int | None) -> bool:
    if pgid is None:
        return False
    try:
        return os.getpgid(proc.pid) == pgid
    except (ProcessLookupError, PermissionError):
        return False


def _is_our_zombie(pid: int) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.ppid() == os.getpid() and proc.status() == psutil.STATUS_ZOMBIE
    except _GONE:
        return False
