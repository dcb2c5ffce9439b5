"""A run's socket: where its supervisor binds, what the run folder's link stands for, and
whether anyone answers on it (the one proof a run's owner is still hosting it)."""

from __future__ import annotations

import _socket  # not `socket` (a verb's start: see `client_protocol.ClientProtocol._open`)
import contextlib
import os
import stat
from pathlib import Path

from legion_tui.procfs import stat_of
from legion_tui.runs.folder import RunInfo

__all__ = [
    "MAX_SOCKET_PATH",
    "UnsafeSocketDir",
    "owner_alive",
    "process_exists",
    "resolve_socket",
    "socket_path_for",
    "socket_refusal",
    "socket_target",
]

# AF_UNIX paths are limited to 108 bytes (107 + NUL) on Linux; keep a margin.
MAX_SOCKET_PATH = 100


class UnsafeSocketDir(RuntimeError):
    """The shared temp dir's `legion-<uid>` is not ours alone: whoever made it could answer
    (or watch) every verb sent to a socket in it."""


def socket_path_for(info: RunInfo) -> Path:
    """Where the supervisor binds. `supervisor.sock` in the run dir when the path fits
    AF_UNIX's limit; otherwise a short path under the temp dir, linked from the run dir."""
    link = info.socket_link
    if len(os.fsencode(link)) <= MAX_SOCKET_PATH:
        return link
    import tempfile

    # The temp dir a user's TMPDIR names may itself be long (a tool's scratch dir under
    # a deep project): then /tmp, which every Linux has and is short.
    for temp in (tempfile.gettempdir(), "/tmp"):
        short_dir = Path(temp) / f"legion-{os.getuid()}"
        path = short_dir / f"{info.run_id}.sock"
        if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
            with contextlib.suppress(FileExistsError):
                short_dir.mkdir(mode=0o700)
            _check_private_dir(short_dir)
            return path
    raise UnsafeSocketDir(f"no socket path short enough for run {info.run_id} (AF_UNIX "
                          f"allows {MAX_SOCKET_PATH} bytes here)")


def _check_private_dir(path: Path) -> None:
    """Refuse a socket dir another user made first, a link, or one others can enter."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeSocketDir(f"{path} is not a directory (a link or a file took its place)")
    if st.st_uid != os.getuid():
        raise UnsafeSocketDir(
            f"{path} belongs to uid {st.st_uid}, not to you (uid {os.getuid()}): another "
            "user made it first; remove it, or run from a shorter path"
        )
    if st.st_mode & 0o077:
        raise UnsafeSocketDir(
            f"{path} is open to others (mode {stat.S_IMODE(st.st_mode):o}); "
            f"chmod 700 {path}, or run from a shorter path"
        )


def resolve_socket(info: RunInfo) -> Path | None:
    """The socket path to connect to for `info`, following the run-dir link."""
    return socket_target(info.socket_link)


def socket_target(link: Path) -> Path | None:
    """What a run dir's `supervisor.sock` stands for: the link's target (a symlink when
    the real path is too long for a socket), else the file itself; None when absent."""
    try:
        if link.is_symlink():
            return Path(os.readlink(link))
    except OSError:
        return None
    return link if link.exists() else None


def socket_refusal(path: Path) -> str | None:
    """None when something accepts a connection on `path`; else why not (the OS words)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(os.fspath(path))
    except OSError as err:
        return err.strerror or type(err).__name__
    finally:
        sock.close()
    return None


def process_exists(pid: int) -> bool:
    """A process with this pid runs (a zombie does not): one /proc read, no psutil — a
    control verb from a shell asks this of the run's owner."""
    proc = stat_of(pid)
    return proc is not None and not proc.dead


def owner_alive(info: RunInfo) -> bool:
    """Is the run's owner still hosting it? A pid alone can be reused, so a live pid
    whose socket does not answer counts as dead."""
    if info.owner_pid == os.getpid():
        return True
    if not process_exists(info.owner_pid):
        return False
    sock = resolve_socket(info)
    return sock is not None and socket_refusal(sock) is None
