"""A host's claim on a session: one exclusive `flock`, held for the host's life."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import weakref
from pathlib import Path

from legion_tui.runs.folder import session_pointer, validate_session_name

__all__ = ["HostLock", "SessionBusy", "claim_session"]


class SessionBusy(RuntimeError):
    """The session's run is hosted by another live supervisor."""


class HostLock:
    """A host's claim on a session: an exclusive `flock` on `.legion/sessions/<name>.lock`,
    taken before the session's run is looked up and held for the host's life.

    Checking for a live owner and then acting (creating or reopening the run, touching
    `run.json`, binding the socket) is a race between two hosts opening one session at
    the same moment; the lock makes the open itself exclusive. The kernel drops it when
    the holder dies, SIGKILL included, so it is never stale; it is close-on-exec, so an
    agent that outlives its host cannot keep the session from being reopened.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        # Also closed (so released) when a host that failed half-way is collected.
        self._close = weakref.finalize(self, os.close, fd)

    @property
    def held(self) -> bool:
        return self._close.alive

    def release(self) -> None:
        """Give the session up (safe to call twice)."""
        self._close()


def claim_session(project_dir: Path, session_name: str) -> HostLock:
    """Take the session's host lock, or raise SessionBusy naming the host that holds it."""
    validate_session_name(session_name)
    path = session_pointer(project_dir, session_name).with_suffix(".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_NONBLOCK: whatever sits at the path (a FIFO), opening it never waits.
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    fd = os.open(path, flags, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        holder = _lock_holder(fd)
        os.close(fd)
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        raise SessionBusy(
            f"session {session_name!r} is hosted by another live supervisor"
            + (f" (pid {holder})" if holder else "")
        ) from None
    # Who holds it, for the next opener's message (the lock itself says nothing).
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return HostLock(path, fd)


def _lock_holder(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).decode().strip() or "0") or None
    return None
