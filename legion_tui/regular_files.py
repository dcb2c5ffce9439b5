"""Open a file only when it is a regular one, and never block doing it.

Anything under `.legion/` can be replaced by an agent (it knows `LEGION_RUN_DIR` and the
project): a FIFO there makes a plain `open` wait for a writer — on the event loop, the
whole supervisor; in `doctor`, `run` or `tui`, a start that never ends. So the files
legion reads that way (session files, role cards, settings, phase machines) are opened
O_NONBLOCK and checked with fstat: a FIFO, socket or device is `not a regular file`.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["NotARegularFile", "open_regular", "read_regular_text"]


class NotARegularFile(OSError):
    """A FIFO, socket or device where a file should be."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(errno.EINVAL, "not a regular file", os.fspath(path))


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only fd on `path`, only if it is a regular file (else NotARegularFile)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        raise NotARegularFile(path)
    return fd


def read_regular_text(path: str | os.PathLike[str], encoding: str = "utf-8") -> str:
    """The text of a regular file (OSError / UnicodeDecodeError as `Path.read_text`)."""
    with os.fdopen(open_regular(path), "rb") as handle:
        return handle.read().decode(encoding)
