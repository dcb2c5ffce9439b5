"""The stop sweep (SPEC §6.2): nothing of a stopped agent survives a stop, or it is named.

Order matters (notes/runtime-facts.md "Processes"):
1. snapshot BEFORE the first signal — once the root is dead its orphans cannot be found
   through `children()` any more: its tree, the members of its cgroup, its session, what
   the host recorded under it, and every process whose `/proc/<pid>/environ` carries
   `LEGION_RUN_ID=<run>` with a `LEGION_NODE_ID` of the stopped subtree;
2. SIGTERM to the process group, then wait (bounded) for the group's members to exit;
3. SIGKILL to the group, to the cgroup (`cgroup.kill`: forks racing the kill included), to
   every snapshotted process, and to whatever step 1 finds again now;
4. reap what is ours, wait (bounded) for the deaths, and report survivors.

What can be proved (issue 14 item 11): the env marker, the tree, the group and the
session can all be shed (`env -u`, a double fork, `setsid`); the cgroup cannot
(`containment.py`). With a cgroup, an empty group at the end proves nothing is left;
without one, a process the host inherited and cannot attribute to any node may be the
stopped agent's, so it is named among the survivors rather than silently left.

A force stop is the same sweep without SIGTERM and grace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Collection, Iterable, Mapping
from typing import NamedTuple

import psutil

from legion_tui.procfs import environ_of, pids, stat_of
from legion_tui.supervisor.backend import SweepReport
from legion_tui.supervisor.processes import cgroups, containment
from legion_tui.supervisor.processes.process import reap, wait_pid_exit
from legion_tui.timeouts import within
from legion_tui.wire.names import ENV_NODE_ID, ENV_RUN_ID

__all__ = ["KILL_SETTLE", "Marks", "ProcessPass", "marked_pids", "process_marks", "sweep"]

# How long SIGKILLed processes get to disappear before they count as survivors.
KILL_SETTLE = 2.0

_GONE = (ProcessLookupError, psutil.NoSuchProcess, PermissionError, psutil.AccessDenied)


class Marks(NamedTuple):
    """What a sweep looks for in one process: its parent, its session (None: dead, a
    zombie) and its environment's items (None: gone, or not ours to read)."""

    ppid: int | None
    session: int | None
    env: frozenset[bytes] | None


def process_marks() -> dict[int, Marks]:
    """One pass over /proc: every other process's parent, session and environment."""
    me = os.getpid()
    marks: dict[int, Marks] = {}
    for pid in pids():  # no procfs: the group signal is all we have
        if pid == me:
            continue
        stat = stat_of(pid)
        env = environ_of(pid)  # None: gone, a zombie, or not ours to read
        session = None if stat is None or stat.dead else stat.session
        ppid = None if stat is None else stat.ppid
        marks[pid] = Marks(ppid, session, None if env is None else frozenset(env))
    return marks


class ProcessPass:
    """One pass over /proc (`process_marks`), and the process tree it shows."""

    def __init__(self, marks: Mapping[int, Marks]) -> None:
        self.marks = marks
        self._children: dict[int, list[int]] | None = None
        # Built at the first ask, for every sweep the pass serves: a thousand sweeps
        # each testing every process was O(N²) (1.4 of a 5.3 s pause of 1 500 agents).
        self._marked: tuple[str, dict[bytes, list[int]]] | None = None
        self._in_session: dict[int, list[int]] | None = None
        self._walked = False  # the host's tree walked for it (`walk_host_tree`)

    def walk_host_tree(self, box: containment.Containment) -> None:
        """What the host inherited, recorded once for the pass (`Containment.record`):
        the sweeps it serves ask in the same instant, and each walk is O(agents)."""
        if not self._walked:
            self._walked = True
            box.record()

    def marked(self, run_id: str, node_ids: Collection[str], sessions: Collection[int] = ()
               ) -> list[int]:  # fmt: skip
        """Pids whose environment carries this run's marker with one of `node_ids`, or
        that are in one of `sessions`; each once, in order."""
        if self._marked is None or self._marked[0] != run_id:
            self._marked = (run_id, _by_node(run_id, self.marks))
        if self._in_session is None:
            self._in_session = {}
            for pid, mark in self.marks.items():
                if mark.session is not None:
                    self._in_session.setdefault(mark.session, []).append(pid)
        by_node, in_session = self._marked[1], self._in_session
        found = {pid for n in node_ids for pid in by_node.get(_node_item(n), ())}
        found.update(pid for sid in sessions for pid in in_session.get(sid, ()))
        return sorted(found)

    def descendants(self, pid: int) -> list[int]:
        """Every process below `pid` in the tree as the pass saw it. From the pass, not
        psutil's `children(recursive=True)`, which reads every process's stat per call:
        a pause of 300 agents spent 19 s of the host's loop there."""
        if self._children is None:
            self._children = {}
            for child, mark in self.marks.items():
                if mark.ppid is not None:
                    self._children.setdefault(mark.ppid, []).append(child)
        below: list[int] = []
        stack = [pid]
        while stack:
            kids = self._children.get(stack.pop(), ())
            below.extend(kids)
            stack.extend(kids)
        return below


def marked_pids(
    run_id: str,
    node_ids: Collection[str],
    sessions: Collection[int] = (),
    marks: Mapping[int, Marks] | None = None,
) -> list[int]:
    """Pids whose environment carries this run's marker with one of `node_ids`, or that
    are in one of `sessions` (the sessions the stopped agents were given). `marks`: a
    pass over /proc taken since the caller asked (None: one taken now)."""
    return ProcessPass(process_marks() if marks is None else marks).marked(
        run_id, node_ids, sessions
    )


def _node_item(node_id: str) -> bytes:
    return f"{ENV_NODE_ID}={node_id}".encode()


def _by_node(run_id: str, marks: Mapping[int, Marks]) -> dict[bytes, list[int]]:
    """The pids carrying this run's marker, by their `LEGION_NODE_ID=` item."""
    want_run = f"{ENV_RUN_ID}={run_id}".encode()
    prefix = f"{ENV_NODE_ID}=".encode()
    found: dict[bytes, list[int]] = {}
    for pid, (_ppid, _session, env) in marks.items():
        if env is not None and want_run in env:
            for item in env:
                if item.startswith(prefix):
                    found.setdefault(item, []).append(pid)
    return found


class _SharedPass:
    """One pass over /proc for every sweep that asks before it begins.

    Each sweep looks for its agent's processes (its marker, its sessions) before its first
    signal and again after its kill: a pause or a `stop all` of a thousand agents read
    every process's environment two thousand times — 38 ms a pass at 800 processes, over a
    minute of the host's loop before it could exit. A pass begins on the loop's next turn
    and serves every request made until then, so a request is always answered by a pass
    begun after it."""

    def __init__(self) -> None:
        self._next: asyncio.Future[ProcessPass] | None = None

    async def taken(self) -> ProcessPass:
        loop = asyncio.get_running_loop()
        pending = self._next
        if pending is None or pending.get_loop() is not loop:  # a closed loop's is void
            pending = self._next = loop.create_future()
            loop.call_soon(self._take, pending)
        return await asyncio.shield(pending)

    def _take(self, pending: asyncio.Future[ProcessPass]) -> None:
        if self._next is pending:
            self._next = None  # a request from now on waits for the next pass
        try:
            pending.set_result(ProcessPass(process_marks()))
        except Exception as err:  # an unreadable /proc: each sweep hears it
            pending.set_exception(err)


_PASS = _SharedPass()


def _alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (a zombie is dead; it only awaits its reaper)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except _GONE:
        return False


class _Scope:
    """Where a stopped agent's processes are: its marker, its session, its cgroup, what
    the host recorded under it (`containment`)."""

    def __init__(self, run_id: str, node_ids: Collection[str]) -> None:
        self.run_id = run_id
        self.node_ids = node_ids
        self.box = containment.current()
        self.keys = {(run_id, node) for node in node_ids}
        box = self.box
        self.groups = box.groups(self.keys) if box is not None else []
        # Spawned by this host and not in a cgroup: nothing can prove it left nothing.
        self.unproven = box is not None and any(
            box.spawned(k) and not box.contained(k) for k in self.keys
        )

    async def find(self) -> set[int]:
        """Every process of the stopped agents that can be found now (by a pass over
        /proc begun after this call, shared with the other sweeps under way)."""
        return self.found_in(await _PASS.taken())

    def found_in(self, taken: ProcessPass) -> set[int]:
        """Every process of the stopped agents that `taken` (a pass over /proc) shows."""
        box = self.box
        sessions: set[int] = set()
        recorded: list[int] = []
        if box is not None:
            taken.walk_host_tree(box)  # what the host inherited since its last walk
            sessions = box.sessions_of(self.keys)
            recorded = box.recorded(self.keys)
        found = set(taken.marked(self.run_id, self.node_ids, sessions))
        found.update(recorded)
        for group in self.groups:
            found.update(cgroups.members(group))
        found.discard(os.getpid())
        return found

    def kill_groups(self) -> None:
        for group in self.groups:
            cgroups.kill(group)

    def populated(self) -> bool:
        return any(cgroups.populated(group) for group in self.groups)

    def unattributed(self) -> list[int]:
        """Without a cgroup: the live processes the host inherited and cannot tell apart
        from the stopped agent's — named, never silently left (and never killed: they
        may as well be another agent's)."""
        if not self.unproven or self.box is None:
            return []
        self.box.record()
        return self.box.recorded([None])

    def release(self) -> None:
        if self.box is not None:
            self.box.release(self.keys)


def _processes(found: Iterable[int], known: dict[int, psutil.Process]) -> list[psutil.Process]:
    """psutil handles of the pids not in `known` yet (added to it)."""
    new: list[psutil.Process] = []
    for pid in found:
        if pid in known:
            continue
        with contextlib.suppress(*_GONE):
            known[pid] = proc = psutil.Process(pid)
            new.append(proc)
    return new


async def _snapshot(root: psutil.Process | None, scope: _Scope) -> dict[int, psutil.Process]:
    """The agent's processes before any signal: its tree and what `scope` finds, from a
    pass over /proc shared with the other sweeps under way."""
    taken = await _PASS.taken()
    procs: dict[int, psutil.Process] = {}
    # Looked at after the pass: running now, the root held its pid when the pass was
    # taken. Reaped, its pid may be anyone's now, and so may the children of that pid.
    if root is not None and root.is_running():
        procs[root.pid] = root
        _processes(taken.descendants(root.pid), procs)
    _processes(scope.found_in(taken), procs)
    return procs


def _signal_group(
    root: psutil.Process | None, group: Iterable[psutil.Process], sig: signal.Signals
) -> bool:
    """Signal the root's process group while it still holds its id: the root runs (or
    waits to be reaped) or a known member lives. An empty group's id is free for the
    kernel to hand out again, and a new session leader given it (every agent here is
    one) would take the signal: a Claude Code exits 0 on a SIGTERM, and its node then
    reads settled with its process gone (a full test run wraps the 32 768 pids)."""
    if root is None or not (root.is_running() or any(_alive(p) for p in group)):
        return False
    try:
        os.killpg(root.pid, sig)
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
        await within(asyncio.gather(*waiters), bound)
    except TimeoutError:
        pass
    finally:
        for w in waiters:
            w.cancel()


async def sweep(
    *,
    root: psutil.Process | None,
    run_id: str,
    node_ids: Collection[str],
    force: bool,
    grace: float = 5.0,
    root_exit: asyncio.Future[int] | None = None,
) -> SweepReport:
    """Stop the process tree of `root` (the agent's process, taken when it was spawned:
    a psutil handle never signals a reused pid) and everything of `node_ids`.

    Resolves only after the sweep; `survivors` lists what is still alive (should be [])
    and, where no cgroup proves the agents left nothing, what the host inherited and
    cannot attribute. `root_exit`, when given, is the root's own exit future (its reaper
    is asyncio's).
    """
    loop = asyncio.get_running_loop()
    scope = _Scope(run_id, node_ids)
    known = await _snapshot(root, scope)
    snapshot = list(known.values())
    signalled: set[int] = set()
    # Membership before any signal: a member that dies at once can no longer be asked.
    # (spawned in a session of its own, the root leads its group: pgid == its pid)
    group = [p for p in snapshot if root is not None and _in_group(p, root.pid)]
    if not force:
        if _signal_group(root, group, signal.SIGTERM):
            signalled.update(p.pid for p in group)
        await _wait_gone(group, grace)
    # SIGKILL everything, even if the group looks gone: a member may have left it.
    if _signal_group(root, group, signal.SIGKILL):
        signalled.update(p.pid for p in group)
    scope.kill_groups()
    signalled.update(_kill(snapshot, signal.SIGKILL))
    late = _processes((p for p in await scope.find() if _exists(p)), known)
    signalled.update(_kill(late, signal.SIGKILL))
    deadline = loop.time() + KILL_SETTLE
    await _wait_gone(list(known.values()), KILL_SETTLE)
    # Until the groups are empty: what they still hold is killed again and waited for.
    while scope.populated() and loop.time() < deadline:
        scope.kill_groups()
        signalled.update(p.pid for p in _processes(await scope.find(), known))
        left = [p for p in known.values() if _alive(p)]
        if left:
            await _wait_gone(left, deadline - loop.time())
        else:
            await asyncio.sleep(0.01)  # its last member is between its kill and its exit
    if root_exit is not None:
        with contextlib.suppress(TimeoutError):
            await within(asyncio.shield(root_exit), KILL_SETTLE)
    targets = list(known.values())
    # Orphans re-parented to us (we are a subreaper) are ours to reap; the root is not:
    # asyncio's watcher reaps it.
    reap([p.pid for p in targets if p is not root and _is_our_zombie(p.pid)])
    survivors = {p.pid for p in targets if _alive(p)}
    for cgroup in scope.groups:
        survivors.update(cgroups.members(cgroup))
    survivors.update(scope.unattributed())
    scope.release()
    return SweepReport(signalled=sorted(signalled), survivors=sorted(survivors))


def _exists(pid: int) -> bool:
    return psutil.pid_exists(pid)


def _in_group(proc: psutil.Process, pgid: int) -> bool:
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
