"""Open a file only when it is a regular one, and never block doing it; write one whole.

Anything under `.legion/` can be replaced by an agent (it knows `LEGION_RUN_DIR` and the
project): a FIFO there makes a plain `open` wait for a writer — on the event loop, the
whole supervisor; in `doctor`, `run` or `tui`, a start that never ends. So the files
legion reads that way (session files, role cards, settings, phase machines) are opened
O_NONBLOCK and checked with fstat: a FIFO, socket or device is `not a regular file`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

__all__ = [
    "FileTooLarge",
    "NotARegularFile",
    "atomic_write",
    "file_identity",
    "open_regular",
    "read_regular_text",
]


class NotARegularFile(OSError):
    """A FIFO, socket or device where a file should be."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(errno.EINVAL, "not a regular file", os.fspath(path))


class FileTooLarge(OSError):
    """A file over the size its reader bounds it to: never read whole."""

    def __init__(self, path: str | os.PathLike[str], limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {limit} bytes", os.fspath(path))


def file_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(dev, ino) of what is at `path` now; None when nothing is (or it cannot be
    reached): how a file or folder that was replaced under a holder is told apart."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


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


def read_regular_text(
    path: str | os.PathLike[str], encoding: str = "utf-8", *, max_bytes: int | None = None
) -> str:
    """The text of a regular file (OSError / UnicodeDecodeError as `Path.read_text`);
    FileTooLarge past `max_bytes`, having read at most one byte more."""
    with os.fdopen(open_regular(path), "rb") as handle:
        data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise FileTooLarge(path, max_bytes)
    return data.decode(encoding)


def _umask() -> int:
    """The process's umask, read without setting it (os.umask would change it for every
    thread of the host while it looks)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def atomic_write(path: Path, text: str, *, new_mode: int = 0o600) -> Path:
    """Write `text` as the whole of `path`: a reader sees the old file or the new one,
    never half of one. Returns the file written.

    A symlink is followed — its target is written, keeping the target's mode — never
    replaced: a user's dotfile linked into `.legion/` stays their dotfile (issue 30: a
    theme change replaced such a link with a 0600 copy). A new file gets `new_mode`
    (less the umask)."""
    import tempfile  # here: it imports `random`, which no control verb may pay for

    target = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = new_mode & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target
