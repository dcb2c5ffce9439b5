"""Run directories, `run.json`, session continuity and finding the live supervisor.

Layout (SPEC §2)::

    .legion/runs/<runId>/{run.json, legion.db, sessions/, terminal/, outputs/, supervisor.sock}

Session continuity (SPEC §6.6, upstream legion-session-continuity-v1): the same session
name reopens the same run; a different name must never read, scan or write an old run.
So the session → run mapping is NOT found by scanning every `run.json`; it lives in one
small pointer file per session name, `.legion/sessions/<name>.run`, holding the run id.
Opening session "b" therefore touches only `sessions/b.run` and its own new run.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import socket
import stat
import struct
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from legion_tui.supervisor.client import (
    ENV_SOCKET,
    ROOT_CALLER,
    LegionClient,
    LegionRequestError,
)
from legion_tui.supervisor.procfs import stat_of

__all__ = [
    "DEFAULT_SESSION",
    "OWNER_ONLY_ACL",
    "HostLock",
    "RunInfo",
    "SessionBusy",
    "SessionNameError",
    "UnsafeSocketDir",
    "claim_session",
    "client_for",
    "create_run",
    "find_live_run",
    "find_session_run",
    "legion_dir",
    "list_runs",
    "make_private",
    "newest_run",
    "open_session",
    "owner_alive",
    "read_run",
    "resolve_socket",
    "socket_path_for",
    "socket_refusal",
    "socket_target",
    "touch_run",
    "validate_session_name",
]

DEFAULT_SESSION = "main"
SESSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RUN_SUBDIRS = ("sessions", "terminal", "outputs")
# Run data is its user's alone (an agent's terminal, a task text): `runs/` and every
# folder in it 0700, files 0600.
PRIVATE_DIR = 0o700
# A default ACL of owner-only entries (the POSIX ACL xattr, version 2: user::rwx,
# group::---, other::---): a file or folder created inside gets no group/other bits
# whatever its creator's umask — the host's, or an agent writing its own session file —
# and folders made inside inherit it. The umask itself is never touched, so an agent's
# work in the user's repository keeps the modes it always had.
_ACL_UNDEFINED_ID = 0xFFFFFFFF
OWNER_ONLY_ACL = struct.pack("<I", 2) + b"".join(
    struct.pack("<HHI", tag, perm, _ACL_UNDEFINED_ID)
    for tag, perm in ((0x01, 0o7), (0x04, 0), (0x20, 0))  # USER_OBJ, GROUP_OBJ, OTHER
)
# AF_UNIX paths are limited to 108 bytes (107 + NUL) on Linux; keep a margin.
MAX_SOCKET_PATH = 100


class SessionNameError(ValueError):
    """A session name that cannot name a pointer file."""


class SessionBusy(RuntimeError):
    """The session's run is hosted by another live supervisor."""


@dataclass(frozen=True, slots=True)
class RunInfo:
    run_id: str
    session_name: str
    created_at: float
    updated_at: float
    cwd: str
    owner_pid: int
    task: str
    dir: Path

    @property
    def ledger_path(self) -> Path:
        return self.dir / "legion.db"

    @property
    def sessions_dir(self) -> Path:
        return self.dir / "sessions"

    @property
    def outputs_dir(self) -> Path:
        return self.dir / "outputs"

    @property
    def socket_link(self) -> Path:
        """`supervisor.sock` in the run dir (a symlink when the real path is too long)."""
        return self.dir / "supervisor.sock"

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "sessionName": self.session_name,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "cwd": self.cwd,
            "ownerPid": self.owner_pid,
            "task": self.task,
        }


def legion_dir(project_dir: Path) -> Path:
    return project_dir / ".legion"


def validate_session_name(name: str) -> str:
    if not SESSION_NAME.fullmatch(name):
        raise SessionNameError(
            f"invalid session name {name!r}: use 1-64 of [A-Za-z0-9._-], starting alphanumeric"
        )
    return name


def _atomic_write(path: Path, text: str) -> None:
    # A reader (legion status in another terminal) must never see half a run.json.
    import tempfile  # here: a control verb that never writes a run file skips it

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_run(run_dir: Path) -> RunInfo | None:
    """The run described by `run_dir/run.json`, or None when it is missing or unreadable."""
    try:
        data = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        return RunInfo(
            run_id=str(data["runId"]),
            session_name=str(data["sessionName"]),
            created_at=float(data["createdAt"]),
            updated_at=float(data["updatedAt"]),
            cwd=str(data["cwd"]),
            owner_pid=int(data["ownerPid"]),
            task=str(data.get("task", "")),
            dir=run_dir,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_run(info: RunInfo) -> None:
    _atomic_write(info.dir / "run.json", json.dumps(info.to_json(), indent=2) + "\n")


def _private_dir(path: Path) -> None:
    """Make an existing folder of ours 0700, with the owner-only default ACL where the
    file system has ACLs (elsewhere the 0700 folders above the files still keep others
    out)."""
    # Followed if a link: `runs/` linked to another disk is the folder to close.
    os.chmod(path, PRIVATE_DIR)
    with contextlib.suppress(OSError, AttributeError):  # no ACLs here, or no xattrs at all
        os.setxattr(path, "system.posix_acl_default", OWNER_ONLY_ACL)


def make_private(run_dir: Path) -> None:
    """`runs/` and everything in one run made its user's alone: folders as `_private_dir`,
    files without group/other bits. A run made before this rule reopens private."""
    _private_dir(run_dir.parent)
    for folder, dirs, files in os.walk(run_dir):  # never follows a link out of the run
        _private_dir(Path(folder))
        for name in dirs + files:
            path = os.path.join(folder, name)
            # Gone meanwhile, or a link by now (never followed: NotImplementedError).
            with contextlib.suppress(OSError, NotImplementedError):
                st = os.lstat(path)
                if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
                    os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077, follow_symlinks=False)


def _pointer(project_dir: Path, session_name: str) -> Path:
    return legion_dir(project_dir) / "sessions" / f"{session_name}.run"


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
    path = _pointer(project_dir, session_name).with_suffix(".lock")
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


def new_run_id(clock: float) -> str:
    """Sortable by creation time, unique by a random suffix."""
    import secrets

    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(clock)) + "-" + secrets.token_hex(3)


def create_run(
    project_dir: Path, session_name: str, *, task: str = "", now: float | None = None
) -> RunInfo:
    """A brand-new run for `session_name`; the session pointer is moved to it."""
    validate_session_name(session_name)
    now = time.time() if now is None else now
    runs = legion_dir(project_dir) / "runs"
    run_id = new_run_id(now)
    run_dir = runs / run_id
    runs.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    run_dir.mkdir(mode=PRIVATE_DIR)
    make_private(run_dir)  # before anything is written in it: all of it inherits that
    for sub in RUN_SUBDIRS:
        (run_dir / sub).mkdir(mode=PRIVATE_DIR)
    info = RunInfo(
        run_id=run_id,
        session_name=session_name,
        created_at=now,
        updated_at=now,
        cwd=str(project_dir.resolve()),
        owner_pid=os.getpid(),
        task=task,
        dir=run_dir,
    )
    _write_run(info)
    pointer = _pointer(project_dir, session_name)
    pointer.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(pointer, run_id + "\n")
    return info


def find_session_run(project_dir: Path, session_name: str) -> RunInfo | None:
    """The run of `session_name`, reading only that session's pointer and run."""
    validate_session_name(session_name)
    try:
        run_id = _pointer(project_dir, session_name).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not run_id or "/" in run_id or run_id.startswith("."):
        return None
    info = read_run(legion_dir(project_dir) / "runs" / run_id)
    # A pointer to a run of another session (hand-edited) is not this session's run.
    if info is None or info.session_name != session_name:
        return None
    return info


def touch_run(info: RunInfo, *, now: float | None = None, owner_pid: int | None = None) -> RunInfo:
    """Reopen: the same run, a new owner and updatedAt (upstream §2: never a new run.json)."""
    updated = RunInfo(
        run_id=info.run_id,
        session_name=info.session_name,
        created_at=info.created_at,
        updated_at=time.time() if now is None else now,
        cwd=info.cwd,
        owner_pid=os.getpid() if owner_pid is None else owner_pid,
        task=info.task,
        dir=info.dir,
    )
    _write_run(updated)
    return updated


def socket_path_for(info: RunInfo) -> Path:
    """Where the supervisor binds. `supervisor.sock` in the run dir when the path fits
    AF_UNIX's limit; otherwise a short path under the temp dir, linked from the run dir."""
    link = info.socket_link
    if len(os.fsencode(link)) <= MAX_SOCKET_PATH:
        return link
    import tempfile

    short_dir = Path(tempfile.gettempdir()) / f"legion-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        short_dir.mkdir(mode=0o700)
    _check_private_dir(short_dir)
    return short_dir / f"{info.run_id}.sock"


class UnsafeSocketDir(RuntimeError):
    """The shared temp dir's `legion-<uid>` is not ours alone: whoever made it could answer
    (or watch) every verb sent to a socket in it."""


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
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(os.fspath(path))
    except OSError as err:
        return err.strerror or type(err).__name__
    finally:
        sock.close()
    return None


def _process_exists(pid: int) -> bool:
    """A process with this pid runs (a zombie does not): one /proc read, no psutil — a
    control verb from a shell asks this of the run's owner."""
    proc = stat_of(pid)
    return proc is not None and not proc.dead


def owner_alive(info: RunInfo) -> bool:
    """Is the run's owner still hosting it? A pid alone can be reused, so a live pid
    whose socket does not answer counts as dead."""
    if info.owner_pid == os.getpid():
        return True
    if not _process_exists(info.owner_pid):
        return False
    sock = resolve_socket(info)
    return sock is not None and socket_refusal(sock) is None


def open_session(
    project_dir: Path, session_name: str, *, task: str = "", now: float | None = None
) -> tuple[RunInfo, bool]:
    """(run, reopened): the session's run reopened, or a new run when it has none.

    A host holds the session's `claim_session` lock first (this alone is a check, then
    an act); raises SessionBusy when another live supervisor hosts that run."""
    found = find_session_run(project_dir, session_name)
    if found is None:
        return create_run(project_dir, session_name, task=task, now=now), False
    if found.owner_pid != os.getpid() and owner_alive(found):
        raise SessionBusy(
            f"session {session_name!r} (run {found.run_id}) is hosted by pid {found.owner_pid}"
        )
    make_private(found.dir)
    return found, True


def list_runs(project_dir: Path) -> list[RunInfo]:
    """Every readable run of the project, newest first. Used by the CLI only (status,
    finding the live run) — never by a supervisor opening a session."""
    runs_dir = legion_dir(project_dir) / "runs"
    try:
        entries = list(runs_dir.iterdir())
    except OSError:
        return []
    infos = [info for d in entries if d.is_dir() and (info := read_run(d)) is not None]
    infos.sort(key=lambda i: i.created_at, reverse=True)
    return infos


def newest_run(project_dir: Path, session_name: str | None = None) -> RunInfo | None:
    if session_name is not None:
        return find_session_run(project_dir, session_name)
    runs = list_runs(project_dir)
    return runs[0] if runs else None


def find_live_run(project_dir: Path, session_name: str | None = None) -> RunInfo | None:
    """The newest run whose supervisor answers on its socket."""
    if session_name is not None:
        candidates = [r for r in [find_session_run(project_dir, session_name)] if r]
    else:
        candidates = list_runs(project_dir)
    for info in candidates:
        sock = resolve_socket(info)
        if sock is not None and _process_exists(info.owner_pid) and socket_refusal(sock) is None:
            return info
    return None


def find_project_dir(start: Path) -> Path:
    """The nearest directory at or above `start` holding `.legion/` (else `start`)."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".legion").is_dir():
            return candidate
    return start


def client_for(cwd: Path | None = None, session_name: str | None = None) -> LegionClient:
    """The client the CLI verbs use: env `LEGION_SOCKET`/`LEGION_NODE_ID` (an agent inside
    a legion), else root on the newest live run of `./.legion/` (a user's own shell).

    Raises LegionRequestError("NO_SUPERVISOR") when there is no live run."""
    if os.environ.get(ENV_SOCKET) and session_name is None:
        return LegionClient.from_env()
    project = find_project_dir(cwd or Path.cwd())
    info = find_live_run(project, session_name)
    if info is None:
        raise LegionRequestError(
            "NO_SUPERVISOR",
            f"no live legion supervisor in {legion_dir(project)} "
            "(start one with `legion tui`, `legion run` or `legion demo`)",
        )
    sock = resolve_socket(info)
    assert sock is not None
    return LegionClient(sock, ROOT_CALLER)
