"""Runs of a project's sessions: a session's run made, found, reopened; the live run a
verb talks to. The parts beside it: `folder.py` (the layout, `run.json`), `privacy.py`
(owner-only folders), `host_lock.py` (a host's claim on a session) and `socket_link.py`
(the socket, and whether its owner answers).

Session continuity (SPEC §6.6, upstream legion-session-continuity-v1): the same session
name reopens the same run; a different name must never read, scan or write an old run.
So the session → run mapping is NOT found by scanning every `run.json`; it lives in one
small pointer file per session name, `.legion/sessions/<name>.run`, holding the run id.
Opening session "b" therefore touches only `sessions/b.run` and its own new run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from legion_tui.regular_files import atomic_write
from legion_tui.runs.folder import (
    RUN_SUBDIRS,
    RunInfo,
    legion_dir,
    read_run,
    runs_dir,
    session_pointer,
    validate_session_name,
    write_run,
)
from legion_tui.runs.host_lock import SessionBusy
from legion_tui.runs.privacy import PRIVATE_DIR, make_private
from legion_tui.runs.socket_link import (
    owner_alive,
    process_exists,
    resolve_socket,
    socket_refusal,
)
from legion_tui.wire.client import LegionClient
from legion_tui.wire.names import ENV_SOCKET, ROOT_ID, RequestError

__all__ = [
    "DEFAULT_SESSION",
    "client_for",
    "create_run",
    "find_live_run",
    "find_project_dir",
    "find_session_run",
    "list_runs",
    "newest_run",
    "open_session",
    "touch_run",
]

DEFAULT_SESSION = "main"


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
    runs = runs_dir(project_dir)
    run_id = new_run_id(now)
    run_dir = runs / run_id
    runs.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    # Keep .legion/ out of the user's `git status` (a no-op once git ignores it).
    from legion_tui.git.exclude import exclude_legion

    exclude_legion(project_dir)
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
    write_run(info)
    pointer = session_pointer(project_dir, session_name)
    pointer.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(pointer, run_id + "\n")
    return info


def find_session_run(project_dir: Path, session_name: str) -> RunInfo | None:
    """The run of `session_name`, reading only that session's pointer and run."""
    validate_session_name(session_name)
    try:
        run_id = session_pointer(project_dir, session_name).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not run_id or "/" in run_id or run_id.startswith("."):
        return None
    info = read_run(runs_dir(project_dir) / run_id)
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
    write_run(updated)
    return updated


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
    try:
        entries = list(runs_dir(project_dir).iterdir())
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
        if sock is not None and process_exists(info.owner_pid) and socket_refusal(sock) is None:
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

    Raises RequestError("NO_SUPERVISOR") when there is no live run."""
    if os.environ.get(ENV_SOCKET) and session_name is None:
        return LegionClient.from_env()
    project = find_project_dir(cwd or Path.cwd())
    info = find_live_run(project, session_name)
    if info is None:
        raise RequestError(
            "NO_SUPERVISOR",
            f"no live legion supervisor in {legion_dir(project)} "
            "(start one with `legion tui`, `legion run` or `legion demo`)",
        )
    sock = resolve_socket(info)
    assert sock is not None
    return LegionClient(sock, ROOT_ID)
