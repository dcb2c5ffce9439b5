"""One run's folder on disk: where its parts live, and `run.json`, read and written whole.

Layout (SPEC §2)::

    .legion/runs/<runId>/{run.json, legion.db, sessions/, terminal/, outputs/, supervisor.sock}
    .legion/sessions/<name>.run    the session's pointer: the id of its run
    .legion/sessions/<name>.lock   the session's host lock (`host_lock.py`)
"""

# (No `from __future__ import annotations`: see `legion_tui.commands`.)

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from legion_tui.regular_files import atomic_write

__all__ = [
    "RUN_SUBDIRS",
    "RunInfo",
    "SessionNameError",
    "agent_sessions_dir",
    "inbox_file",
    "legion_dir",
    "read_run",
    "runs_dir",
    "session_file",
    "session_pointer",
    "terminal_log",
    "validate_session_name",
    "write_run",
]

SESSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RUN_SUBDIRS = ("sessions", "terminal", "outputs")


class SessionNameError(ValueError):
    """A session name that cannot name a pointer file."""


class RunInfo(NamedTuple):
    """A run's pointer file, read. A NamedTuple, not a dataclass: `legion status` from a
    shell reads one, and `dataclasses` costs its `inspect` import (~20 % of the verb)."""

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


# One node's files in its run folder: every part that reads or writes them asks here.
def session_file(run_dir: Path, node_id: str) -> Path:
    """The node's session file, as the spec names it (a pi agent's is a link to its own)."""
    return run_dir / "sessions" / f"{node_id}.jsonl"


def agent_sessions_dir(run_dir: Path, node_id: str) -> Path:
    """The folder an agent that names its own session file (pi) writes it in."""
    return run_dir / "sessions" / node_id


def terminal_log(run_dir: Path, node_id: str) -> Path:
    """A process child's terminal output, as written (ANSI and all)."""
    return run_dir / "terminal" / f"{node_id}.log"


def inbox_file(run_dir: Path, node_id: str) -> Path:
    """An exec command's mail, appended as it comes (ENV_INBOX)."""
    return run_dir / "inbox" / f"{node_id}.md"


def task_file(run_dir: Path, node_id: str) -> Path:
    """An agent's task, written before it starts (`$LEGION_TASK_FILE`, `{task_file}`)."""
    return run_dir / "tasks" / f"{node_id}.txt"


def legion_dir(project_dir: Path) -> Path:
    return project_dir / ".legion"


def runs_dir(project_dir: Path) -> Path:
    return legion_dir(project_dir) / "runs"


def session_pointer(project_dir: Path, session_name: str) -> Path:
    """`.legion/sessions/<name>.run`; the session's lock is the same path with `.lock`."""
    return legion_dir(project_dir) / "sessions" / f"{session_name}.run"


def validate_session_name(name: str) -> str:
    if not SESSION_NAME.fullmatch(name):
        raise SessionNameError(
            f"invalid session name {name!r}: use 1-64 of [A-Za-z0-9._-], starting alphanumeric"
        )
    return name


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


def write_run(info: RunInfo) -> None:
    atomic_write(info.dir / "run.json", json.dumps(info.to_json(), indent=2) + "\n")
