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

from legion_tui.regular_files import file_identity

__all__ = ["CHECK_EVERY_S", "FolderPresence"]

# One stat a second: nothing next to the session watcher's work, and a host learns within
# a second that its folder went.
CHECK_EVERY_S = 1.0


class FolderPresence:
    """The folder at `path` as it was when this was made. Asked at once (`why_gone`)
    as well as watched: a host whose ledger failed because the folder went must say
    the folder went, not the symptom, even in the second before the watch looks.

    The folder is held open until `close`: a folder removed and made again at once (git
    working inside it makes its folders again) may otherwise get the freed inode back,
    and look like the same folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self._final: str | None = None

    def why_gone(self) -> str | None:
        if self._fd is None:
            return self._final
        held = os.fstat(self._fd)
        now = file_identity(self.path)  # None: gone, or its parent no longer searchable
        if now is None:
            return f"its run folder {self.path} was removed"
        if now != (held.st_dev, held.st_ino):
            return f"its run folder {self.path} was replaced by another"
        return None

    async def gone(self, *, every: float = CHECK_EVERY_S) -> str:
        """Return why, once the folder is removed or another folder took its name."""
        while True:
            why = self.why_gone()
            if why is not None:
                return why
            await asyncio.sleep(every)

    def close(self) -> None:
        """Stop holding the folder; `why_gone` answers from then on as it did here."""
        if self._fd is not None:
            self._final = self.why_gone()
            os.close(self._fd)
            self._fd = None
