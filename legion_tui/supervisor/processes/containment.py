"""What an agent's processes cannot shed, and who ends them when the host dies (issue 14
items 10 and 11).

The env marker (`LEGION_RUN_ID`/`LEGION_NODE_ID`) is a convention: `env -u` drops it, and
a double fork with `setsid` leaves the agent's tree, group and session. The stop sweep
and a killed host both need something a child cannot take off:

- **a cgroup per agent** where the machine lets us make one (`cgroups.py`): under the
  host's own cgroup, `legion-<pid>-<starttime>/` for this host, and in it one group per
  (run, node) that spawn_child's child joins before its command runs. The kernel keeps
  every descendant in it; the sweep kills the group and proves it empty.
- **otherwise, what the host sees** (it is a child subreaper: nothing its agents start can
  leave its process tree while it lives): the session each agent was given (its pid —
  only `setsid` leaves it) and, from a walk of the host's tree (`record`, every
  `RECORD_EVERY` s and at each sweep), every process outside those sessions — the pids
  the host inherits — with the node it was first seen under (by tree, session or marker),
  or none. A sweep that must rely on this cannot prove a stopped agent left nothing:
  whatever the host inherited and cannot attribute is named as a survivor.

One host process, one `Containment` (like the subreaper and the orphan reaper: the
process is the unit), made at the first spawn; `LEGION_NO_CGROUP=1` in the host's
environment turns the cgroups off (the second way, on a machine that has the first).

And one watchdog (`watchdog.py`), started with the first agent: the process that
outlives a `kill -9` of the host and ends the host's cgroup — or the sessions and pids
the host told it about — within 2 s.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from legion_tui.procfs import ProcStat, children_of, environ_of, stat_of
from legion_tui.supervisor.processes import cgroups
from legion_tui.supervisor.processes.watchdog_link import WatchdogLink
from legion_tui.wire.names import ENV_NO_CGROUP, ENV_NODE_ID, ENV_RUN_ID

__all__ = ["RECORD_EVERY", "Containment", "Key", "current", "get", "key_of", "launching"]

RECORD_EVERY = 1.0  # without cgroups: how often the host's tree is walked for new pids

Key = tuple[str, str]  # (run id, node id): whose processes these are

_HOST_GROUP = re.compile(r"legion-(\d+)-(\d+)")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def key_of(env: Mapping[str, str]) -> Key | None:
    """The (run, node) a child's marker env names (None: it is nobody's agent)."""
    run, node = env.get(ENV_RUN_ID), env.get(ENV_NODE_ID)
    return (run, node) if run and node else None


def _group_name(key: Key) -> str:
    run, node = key
    digest = hashlib.blake2s(f"{run}\0{node}".encode(), digest_size=4).hexdigest()
    # "n-" first: never a cgroup control file's name (cgroup.*, memory.* …).
    return f"n-{_UNSAFE.sub('_', node)[:64]}-{digest}"


def _alive(pid: int, starttime: int) -> ProcStat | None:
    stat = stat_of(pid)
    if stat is None or stat.dead or stat.starttime != starttime:
        return None
    return stat


@dataclass(frozen=True)
class _Seen:
    key: Key | None  # the node it was first seen under; None: nobody's that we can tell
    starttime: int


class Containment:
    """This host's agents, by something they cannot shed; see the module's doc."""

    def __init__(self, *, use_cgroups: bool = True) -> None:
        self.root: Path | None = self._make_root() if use_cgroups else None
        self._groups: dict[Key, Path] = {}
        self._spawned: set[Key] = set()
        self._agents: dict[int, Key] = {}  # live agent pid → key
        self._sessions: dict[int, Key] = {}  # the session each agent was given → key
        # … and back, key → sessions: each stop sweep asks for its agent's, and a walk of
        # every session per ask made a pause of N agents O(N²).
        self._sessions_of: dict[Key, set[int]] = {}
        self._seen: dict[int, _Seen] = {}  # processes outside those sessions (no cgroup)
        self._watchdog: WatchdogLink | None = None
        # Spawns between `prepare` and `started`: their child would look inherited.
        self._launching = 0

    # ----- spawn ------------------------------------------------------------------------
    @contextlib.contextmanager
    def launching(self, key: Key) -> Iterator[tuple[list[str], Callable[[int], None]]]:
        """Around one spawn of `key`'s child: (argv prefix, `started` for its pid); no
        record is taken meanwhile."""
        self._launching += 1
        try:
            yield self.prepare(key), lambda pid: self.started(key, pid)
        finally:
            self._launching -= 1

    def prepare(self, key: Key) -> list[str]:
        """Before `key`'s child is spawned: the watchdog runs, and the argv prefix that
        puts the child into the key's group ([] without one)."""
        self._spawned.add(key)
        group = self._group_for(key)
        self._ensure_watchdog()
        return cgroups.join_prefix(group) if group is not None else []

    def started(self, key: Key, pid: int) -> None:
        """`key`'s child runs as `pid`, in a session of its own (sid == pid)."""
        self._agents[pid] = key
        self._add_session(pid, key)
        if key not in self._groups:
            self._tell(f"+session {pid}")

    def reaped(self, pid: int) -> None:
        """The agent `pid` is reaped: the pid may be anyone's now. Its session lives on
        while members are left (their sid keeps the number from reuse)."""
        key = self._agents.pop(pid, None)
        if key is not None and key in self._groups:
            self._drop_session(pid)  # the group tracks them; nothing to forget later

    # ----- what the sweep asks ----------------------------------------------------------
    def contained(self, key: Key) -> bool:
        return key in self._groups

    def spawned(self, key: Key) -> bool:
        return key in self._spawned

    def groups(self, keys: Collection[Key]) -> list[Path]:
        return [self._groups[k] for k in keys if k in self._groups]

    def sessions_of(self, keys: Collection[Key]) -> set[int]:
        return {sid for key in keys for sid in self._sessions_of.get(key, ())}

    def recorded(self, keys: Collection[Key | None]) -> list[int]:
        """Live processes the host recorded (outside every agent's session) under one of
        `keys` (None: the ones it could not attribute)."""
        return sorted(
            pid
            for pid, seen in self._seen.items()
            if seen.key in keys and _alive(pid, seen.starttime) is not None
        )

    def release(self, keys: Collection[Key]) -> None:
        """Remove the groups of `keys` that are empty (a resumed node gets a new one)."""
        for key in keys:
            group = self._groups.get(key)
            if group is not None and not cgroups.populated(group) and cgroups.remove_tree(group):
                del self._groups[key]
                for sid in list(self._sessions_of.get(key, ())):
                    if sid not in self._agents:
                        self._drop_session(sid)

    # ----- the record of what the host inherits (no cgroup) ----------------------------
    def needs_record(self) -> bool:
        """Whether any agent runs outside a cgroup (then `record` is what tracks it)."""
        return any(key not in self._groups for key in self._sessions_of)

    def record(self) -> None:
        """Walk the host's tree: remember every process outside the agents' sessions,
        under the node it is first seen under; forget the dead, and sessions emptied."""
        if self._watchdog is not None:
            self._watchdog.flush()
        if self._launching or not self.needs_record():
            return  # a child between fork and `started` would be taken for an orphan
        me, own_session = os.getpid(), os.getsid(0)
        watchdog = self._watchdog.pid if self._watchdog is not None else None
        found: dict[int, tuple[Key | None, ProcStat]] = {}
        stack: list[tuple[int, Key | None]] = []
        for pid in children_of(me):
            stat = stat_of(pid)
            if stat is None or stat.dead or pid == watchdog:
                continue
            if pid in self._agents:
                stack.append((pid, self._agents[pid]))
            elif stat.session != own_session:  # the host's own helpers are in its session
                key = self._attribute(pid, stat, None)
                found[pid] = (key, stat)
                stack.append((pid, key))
        while stack:
            parent, key = stack.pop()
            for pid in children_of(parent):
                stat = stat_of(pid)
                if stat is None or stat.dead:
                    continue
                child_key = self._attribute(pid, stat, key)
                found[pid] = (child_key, stat)
                stack.append((pid, child_key))
        self._remember(found)

    def _attribute(self, pid: int, stat: ProcStat, under: Key | None) -> Key | None:
        seen = self._seen.get(pid)
        if seen is not None and seen.starttime == stat.starttime and seen.key is not None:
            return seen.key  # first sight wins: a later setsid changes nothing
        if under is not None:
            return under
        if stat.session in self._sessions:
            return self._sessions[stat.session]  # a session cannot be joined, only left
        marker = _marker_of(environ_of(pid) or [])
        # Forgeable, so it only ever names one of ours.
        return marker if marker in self._spawned else None

    def _remember(self, found: dict[int, tuple[Key | None, ProcStat]]) -> None:
        for pid, (key, stat) in found.items():
            if key in self._groups or self._sessions.get(stat.session, False) == key:
                continue  # its group, or its agent's session, covers it
            seen = self._seen.get(pid)
            if seen is not None and seen.starttime == stat.starttime and seen.key == key:
                continue
            if seen is not None and seen.starttime != stat.starttime:
                self._tell(f"-pid {pid} {seen.starttime}")
            if seen is None or seen.starttime != stat.starttime:
                self._tell(f"+pid {pid} {stat.starttime}")
            self._seen[pid] = _Seen(key, stat.starttime)
        for pid, seen in list(self._seen.items()):
            if pid not in found:
                del self._seen[pid]
                self._tell(f"-pid {pid} {seen.starttime}")
        live_sessions = {stat.session for _key, stat in found.values()}
        for sid in list(self._sessions):
            if sid not in self._agents and sid not in live_sessions and not _session_alive(sid):
                self._drop_session(sid)
                self._tell(f"-session {sid}")

    # ----- internals --------------------------------------------------------------------
    def _add_session(self, sid: int, key: Key) -> None:
        self._drop_session(sid)  # a session id the kernel gave out again
        self._sessions[sid] = key
        self._sessions_of.setdefault(key, set()).add(sid)

    def _drop_session(self, sid: int) -> None:
        key = self._sessions.pop(sid, None)
        sids = None if key is None else self._sessions_of.get(key)
        if key is not None and sids is not None:
            sids.discard(sid)
            if not sids:
                del self._sessions_of[key]

    def _tell(self, line: str) -> None:
        if self._watchdog is not None:
            self._watchdog.send(line)

    def _ensure_watchdog(self) -> None:
        if self._watchdog is not None and self._watchdog.alive():
            return
        if self._watchdog is not None:
            self._watchdog.close()
        self._watchdog = WatchdogLink(self.root)
        # A watchdog started again (the last one was killed) learns all there is.
        for sid, key in self._sessions.items():
            if key not in self._groups:
                self._watchdog.send(f"+session {sid}")
        for pid, seen in self._seen.items():
            self._watchdog.send(f"+pid {pid} {seen.starttime}")

    def _group_for(self, key: Key) -> Path | None:
        if self.root is None:
            return None
        group = self._groups.get(key)
        if group is None or not group.is_dir():
            group = cgroups.make_group(self.root, _group_name(key))
            if group is None:
                self._groups.pop(key, None)
                return None
            self._groups[key] = group
        return group

    @staticmethod
    def _make_root() -> Path | None:
        base = cgroups.own_dir()
        me = stat_of(os.getpid())
        if base is None or me is None:
            return None
        _prune_stale(base)
        return cgroups.make_group(base, f"legion-{me.pid}-{me.starttime}")


def _marker_of(env: list[bytes]) -> Key | None:
    run = node = None
    for item in env:
        name, _, value = item.partition(b"=")
        if name == ENV_RUN_ID.encode():
            run = value.decode(errors="replace")
        elif name == ENV_NODE_ID.encode():
            node = value.decode(errors="replace")
    return (run, node) if run and node else None


def _session_alive(sid: int) -> bool:
    """Whether any process is still in session `sid` (the session's leader, or — the
    leader gone — a member: a sid's number is not reused while one is left)."""
    stat = stat_of(sid)
    return stat is not None and stat.session == sid and not stat.dead


def _prune_stale(base: Path) -> None:
    """End the groups of hosts that died without their watchdog (both killed): whatever is
    still in them belonged to a host that is gone."""
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            match = _HOST_GROUP.fullmatch(entry.name)
            if match is None or not entry.is_dir():
                continue
            owner = stat_of(int(match.group(1)))
            if owner is not None and owner.starttime == int(match.group(2)):
                continue  # its host lives
            cgroups.kill(entry)
            cgroups.remove_tree(entry)  # emptied a moment later; the next host retries


_current: Containment | None = None


@contextlib.contextmanager
def launching(env: Mapping[str, str]) -> Iterator[tuple[list[str], Callable[[int], None]]]:
    """`Containment.launching` for a child with this env; a child without a run marker is
    nobody's agent: no prefix, nothing recorded."""
    key = key_of(env)
    if key is None:
        yield [], lambda _pid: None
        return
    with get().launching(key) as launch:
        yield launch


def current() -> Containment | None:
    """This process's containment, if anything was ever spawned here."""
    return _current


def get() -> Containment:
    """This process's containment, made at the first spawn."""
    global _current
    if _current is None:
        _current = Containment(use_cgroups=os.environ.get(ENV_NO_CGROUP, "") in ("", "0"))
    return _current
