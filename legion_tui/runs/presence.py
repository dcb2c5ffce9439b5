"""Whether a host's run folder is still the one it opened.

A cleanup script's `rm -rf` of a project (or of `.legion/`) under a live host takes its
ledger and session files with it: the host can no longer record anything, and nobody can
reach it through a catalogue that is gone. It must end — pausing what it can — rather
than run on unseen (issue 30: hosts found re-parented to init half an hour later).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

__all__ = ["CHECK_EVERY_S", "folder_gone"]

# One stat a second: nothing next to the session watcher's work, and a host learns within
# a second that its folder went.
CHECK_EVERY_S = 1.0


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:  # gone, or its parent no longer searchable: either way not ours now
        return None
    return st.st_dev, st.st_ino


async def folder_gone(path: Path, *, every: float = CHECK_EVERY_S) -> str:
    """Return why, once `path` is removed or another folder took its name."""
    first = _identity(path)
    while True:
        now = _identity(path)
        if now is None:
            return f"its run folder {path} was removed"
        if now != first:
            return f"its run folder {path} was replaced by another"
        await asyncio.sleep(every)
