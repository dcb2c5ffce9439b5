"""cgroup v2, as far as legion uses it: a folder of processes no member can leave.

A process cannot take itself out of its cgroup without write access to another one's
`cgroup.procs` (and to their common ancestor's): unsetting an env marker, `setsid`, a
double fork — none of them changes it, and every child starts where its parent is. So
an agent put into a cgroup of its own before its command runs is tracked, with all it
will ever start, by the kernel; `cgroup.kill` (Linux ≥ 5.14) SIGKILLs the whole subtree
at once — forks racing the kill included — and `populated 0` in `cgroup.events` proves
nothing is left (zombies do not count: they are dead).

Only where the machine lets us: a cgroup2 mount, and our own cgroup's folder writable
(root, or a systemd-delegated user slice). Everything here is plain file I/O on
cgroupfs; stdlib only (the watchdog uses it too).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = [
    "JOIN_SCRIPT",
    "join_prefix",
    "kill",
    "make_group",
    "members",
    "own_dir",
    "populated",
    "remove_tree",
]

# Run in the child before its command: it moves itself ("0" is the writer) into the
# group, then becomes the command — so nothing the command starts is ever outside. A
# group that cannot be joined fails the launch (126) rather than run untracked.
JOIN_SCRIPT = 'echo 0 >"$1" || exit 126; shift; exec "$@"'


def _cgroup2_mount() -> tuple[Path, str] | None:
    """(mount point, root of the mount within the hierarchy) of the cgroup2 mount."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        left, sep, right = line.partition(" - ")
        if not sep or not right.startswith("cgroup2 "):
            continue
        fields = left.split()
        if len(fields) >= 5:
            return Path(fields[4]), fields[3]
    return None


def own_dir() -> Path | None:
    """The folder of this process's own cgroup v2 (None: no cgroup2 here)."""
    mount = _cgroup2_mount()
    if mount is None:
        return None
    point, root = mount
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            path = line[3:]
            if root != "/" and (path == root or path.startswith(root + "/")):
                path = path[len(root) :]  # a mount of a sub-hierarchy (containers)
            folder = point / path.lstrip("/")
            return folder if folder.is_dir() else None
    return None


def make_group(parent: Path, name: str) -> Path | None:
    """`parent/name` as a group we can put processes into and kill (None: we cannot).

    Moving a process needs write access to the common ancestor's `cgroup.procs` (the
    parent's: the host's own group, or a group of ours below it) and to the target's;
    killing needs `cgroup.kill`, which the kernel has since 5.14."""
    if not os.access(parent / "cgroup.procs", os.W_OK):
        return None
    group = parent / name
    try:
        group.mkdir(exist_ok=True)
    except OSError:
        return None
    if os.access(group / "cgroup.procs", os.W_OK) and (group / "cgroup.kill").exists():
        return group
    with contextlib.suppress(OSError):
        group.rmdir()
    return None


def join_prefix(group: Path) -> list[str]:
    """The argv prefix that runs the command inside `group`."""
    return ["/bin/sh", "-c", JOIN_SCRIPT, "legion-join", str(group / "cgroup.procs")]


def members(group: Path) -> list[int]:
    """Every process in `group` and the groups below it (an agent may make its own)."""
    out: list[int] = []
    for folder, _dirs, _files in os.walk(group):
        with contextlib.suppress(OSError, ValueError), open(Path(folder) / "cgroup.procs") as fh:
            out.extend(int(pid) for pid in fh.read().split())
    return out


def populated(group: Path) -> bool:
    """Whether any live process is in `group` or below (a group that is gone: no)."""
    try:
        with open(group / "cgroup.events", encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(" ")
                if key == "populated":
                    return value.strip() != "0"
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unreadable: nothing can be proved
    return True


def kill(group: Path) -> bool:
    """SIGKILL everything in `group` and below, at once (False: could not ask)."""
    try:
        with open(group / "cgroup.kill", "w", encoding="ascii") as fh:
            fh.write("1")
    except OSError:
        return False
    return True


def remove_tree(group: Path) -> bool:
    """rmdir `group` and the groups below it, deepest first; True when it is gone.
    Only empty groups can go (EBUSY otherwise): a populated one stays."""
    for folder, dirs, _files in os.walk(group, topdown=False):
        for name in dirs:
            with contextlib.suppress(OSError):
                (Path(folder) / name).rmdir()
    try:
        group.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False  # EBUSY: still populated (or not ours to remove)
    return True
