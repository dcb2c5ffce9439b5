"""The host's own children that run in sessions of their own — agents (`spawn_child`),
git and gh (`git.process.run_tool`), an agent's dry start — registered by pid while
asyncio waits for them, so the orphan reaper (supervisor/processes/orphans.py), which reaps the
zombies outside the host's session that nobody registered, never steals their exit
status (an unregistered git once reported 255 for a success).

Neutral and light: whatever spawns in a session of its own registers here, in a host or
in a CLI verb (where no reaper runs and registering costs a set insertion).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

__all__ = ["forget", "registered", "spawning", "spawns_under_way"]

_spawned: set[int] = set()
# Spawns between fork and `register`: a child that exits in that window looks like an
# orphan (not registered yet, its own session) — no scan runs until they are registered.
_spawning = 0


@contextlib.contextmanager
def spawning() -> Iterator[Callable[[int], None]]:
    """Around one spawn: hands out `register` for the pid, and holds scans off meanwhile."""
    global _spawning
    _spawning += 1
    try:
        yield _spawned.add
    finally:
        _spawning -= 1


def forget(pid: int) -> None:
    """asyncio reaped `pid` (a registered child): the pid may be reused by anyone."""
    _spawned.discard(pid)


def registered() -> frozenset[int]:
    """The pids registered now (the reaper leaves them to asyncio)."""
    return frozenset(_spawned)


def spawns_under_way() -> bool:
    """A spawn is between fork and `register`: a scan now could take its child."""
    return _spawning > 0
