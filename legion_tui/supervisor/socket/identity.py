"""Who is calling on the socket, from the kernel — never from the request (SPEC §5).

A request names its caller (`from`), and the CLI fills it from `LEGION_NODE_ID`; an agent
can set, change or unset that variable, and so could act as its parent or as root:
steer or stop a sibling, spawn past its depth cap. So the server asks the kernel who
connected (`SO_PEERCRED`: the peer's pid) and walks that process's ancestry:

- under a live node's agent process (its pid or any ancestor is one) → the caller IS
  that node (the nearest one): a request naming anyone else is refused;
- carrying this run's marker (`LEGION_RUN_ID` in its environment) but under no live
  agent → refused: a process that left its agent's tree (a double fork, a stopped
  node's straggler, a verification command) cannot say whom it acts for;
- otherwise it is outside the legion — the user's shell, the host itself (its
  in-process agents call from inside it), a test — and acts as root, or as any node it
  names (root may do anything a node may).

What this does not protect: processes of one uid can still signal or ptrace each other.
The promise is that no agent gets more through legion's own surface than its node has.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from legion_tui.procfs import environ_of, stat_of
from legion_tui.wire.names import ENV_RUN_ID, OpError

__all__ = ["MAX_ANCESTRY", "Peer", "caller_of", "peer_of", "peer_pid"]

MAX_ANCESTRY = 64  # deeper than any real process tree; bounds a walk through a loop
_CRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


@dataclass(frozen=True, slots=True)
class Peer:
    """A connected process: its pid, its ancestors (nearest first), and whether it carries
    this run's marker. Taken once, at connect: a connection's peer never changes."""

    pid: int | None  # None: the kernel would not say (not a Unix socket)
    ancestors: tuple[int, ...]
    marked: bool


def _ancestors(pid: int) -> tuple[int, ...]:
    out: list[int] = []
    current = pid
    for _ in range(MAX_ANCESTRY):
        stat = stat_of(current)
        parent = stat.ppid if stat is not None else None
        if parent is None or parent <= 0 or parent in out:
            break
        out.append(parent)
        if parent == 1:
            break
        current = parent
    return tuple(out)


def _carries_marker(pid: int, run_id: str) -> bool:
    """Whether the process's environment names this run (unreadable or gone: assume it
    does — refusing a stranger is safer than trusting an agent)."""
    environ = environ_of(pid)
    return environ is None or f"{ENV_RUN_ID}={run_id}".encode() in environ


def peer_pid(sock: socket.socket | None) -> int | None:
    """The pid at the other end of a Unix-socket connection (one getsockopt), or None."""
    if sock is not None:
        with contextlib.suppress(OSError):
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
            pid: int = _CRED.unpack(raw)[0]
            return pid or None
    return None


def peer_of(pid: int | None, run_id: str) -> Peer:
    """The process `peer_pid` found: its ancestors and marker, read from /proc (a walk
    and an environ read — only for a connection that is going to be served)."""
    if pid is None:
        return Peer(None, (), True)
    if pid == os.getpid():
        return Peer(pid, (), False)  # the host itself (its in-process agents, the app)
    return Peer(pid, _ancestors(pid), _carries_marker(pid, run_id))


def caller_of(
    peer: Peer, claimed: str, agents: Mapping[int, str], name_of: Callable[[str], str]
) -> str:
    """The node a request from `peer` acts as, given the node it `claimed` (`from`).

    `agents`: pid → node id of every live agent process; `name_of`: node id → name (for
    the refusal). Raises OpError FORBIDDEN for a claim the kernel contradicts.
    """
    if peer.pid is None:
        raise OpError("FORBIDDEN", "the kernel did not say who is calling: refused")
    for pid in (peer.pid, *peer.ancestors):
        node = agents.get(pid)
        if node is None:
            continue
        if claimed == node:
            return node
        who = name_of(node)
        raise OpError(
            "FORBIDDEN",
            f"this request comes from {who}'s process (pid {peer.pid}): it acts as {who} "
            f"only, not as {name_of(claimed)}",
        )
    if peer.marked:
        raise OpError(
            "FORBIDDEN",
            f"pid {peer.pid} carries this run's marker but runs under none of its live "
            "agents (it left its agent's process tree, or its agent has ended): refused",
        )
    return claimed
