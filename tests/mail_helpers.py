"""Shared fixtures for the mail tests: nodes in a LegionModel, real pi session files."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from legion_tui.ledger.ledger import Ledger
from legion_tui.model import NodeStatus
from legion_tui.model_records import Node
from legion_tui.session.reader import SessionReader
from legion_tui.state import LegionModel
from legion_tui.supervisor.state.mail_record import MailRecord
from legion_tui.supervisor.state.naming import Names
from legion_tui.supervisor.state.record import Record


def make_node(
    node_id: str,
    parent: str | None,
    path: str,
    *,
    role: str = "worker",
    status: NodeStatus = NodeStatus.RUNNING,
    phase: str | None = None,
    phase_since: float | None = None,
    session_file: Path | None = None,
) -> Node:
    return Node(
        id=node_id,
        run_id="run-1",
        parent_id=parent,
        name=path.rsplit("/", 1)[-1],
        path=path,
        role=role,  # type: ignore[arg-type]
        kind="sim",
        backend="inprocess",
        status=status,
        phase=phase,
        phase_since=phase_since,
        session_file=str(session_file) if session_file is not None else None,
    )


class Handle:
    """An agent handle that only takes mail: the envelopes it was handed, in order."""

    def __init__(self) -> None:
        self.inbox: list[str] = []

    async def deliver(self, envelope: str) -> None:
        self.inbox.append(envelope)


class SessionFile:
    """A pi v3 session file that user messages are appended to, and its parsed progress."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._last: str | None = None
        self._n = 0
        header = {
            "type": "session",
            "version": 3,
            "id": str(uuid.uuid4()),
            "timestamp": "2026-11-29T14:00:00.000Z",
            "cwd": str(path.parent),
        }
        path.write_text(json.dumps(header) + "\n")
        self.reader = SessionReader(path)

    def user(self, text: str) -> None:
        self._n += 1
        entry_id = f"{self._n:08x}"
        entry = {
            "type": "message",
            "id": entry_id,
            "parentId": self._last,
            "timestamp": f"2026-11-29T14:00:{self._n % 60:02d}.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": text}],
                "timestamp": 1_764_424_800_000 + self._n,
            },
        }
        self._last = entry_id
        with self.path.open("a") as handle:
            handle.write(json.dumps(entry) + "\n")

    def publish(self, model: LegionModel, node_id: str) -> None:
        """Parse what was appended and hand it to the model (what the tailer does)."""
        self.reader.poll()
        model.set_progress(node_id, self.reader.progress)

    def close(self) -> None:
        self.reader.close()


def mail_record(ledger: Ledger, model: LegionModel) -> MailRecord:
    """The ledger as a host hands it to the mail service: every write reaches `model`."""
    record = Record(model, Names(model))
    record.open(ledger)
    return MailRecord(record, model)
