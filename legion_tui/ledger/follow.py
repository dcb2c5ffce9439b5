"""`LedgerFollower`: a run's ledger followed read-only by a process that does not own it
(`legion tui --view`, `legion serve`). Never writes: one `mode=ro` connection.

`PRAGMA data_version` changes only when another connection has committed since this one
last looked, so an idle legion costs one pragma per look and no table read. After a
commit the follower reads every node row (a few hundred bytes each), the events after
the last one it read, and the letters of only those recipients whose five counts moved
(every mail move changes a count of its recipient).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from legion_tui.ledger.connection import configure, readonly_uri
from legion_tui.ledger.errors import LedgerError
from legion_tui.ledger.recognise import FileState, inspect_file
from legion_tui.ledger.rows import (
    EVENT_COLUMNS,
    MESSAGE_COLUMNS,
    event_from_row,
    message_from_row,
    node_from_row,
    nodes_query,
)
from legion_tui.model import EventType, MailState
from legion_tui.model_records import Event, MailboxStats, Message, Node

# The first look reads at most this many of the newest events (the model keeps 200 a
# node); the facts below are read in full.
FIRST_EVENTS = 20_000
FACT_TYPES = (EventType.NODE_RETIRED, EventType.NODE_LAUNCHED)
_STATE_NAMES = {state: state.name.lower() for state in MailState}

MailCounts = dict[str, dict[str, int]]  # recipient → {state name: count}


@dataclass(slots=True)
class LedgerChanges:
    """What one look found. `nodes` is every row; the rest is only what is new."""

    nodes: list[Node]
    events: list[Event] = field(default_factory=list)
    mail: dict[str, tuple[MailboxStats, list[Message]]] = field(default_factory=dict)
    # On the first look only (the events carry the later ones): each node's last event
    # of each FACT_TYPES type, however old — what the view decides from (interrupted,
    # the worktree it works in) must not depend on the first look's event cap.
    facts: list[Event] = field(default_factory=list)


class LedgerFollower:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._immutable = False
        self._file_seen = (-1, -1)  # the file's (mtime, size) when an immutable look began
        self._data_version: int | None = None  # None: read at the next look
        self._looked = False
        self._last_event = 0
        self._mail_counts: MailCounts = {}
        self.reads = 0  # looks that read tables (the gate let them through)

    def open(self) -> None:
        """Connect read-only; LedgerError when the file is not a legion ledger."""
        state = inspect_file(self.path)
        if state is not FileState.LEDGER:
            what = "does not exist" if state is FileState.MISSING else "is empty"
            raise LedgerError(f"{self.path}: {what}, not a legion ledger")
        self._connect()

    def _connect(self) -> None:
        # With no -wal no writer has the file open: `immutable` reads it without leaving
        # a -wal/-shm beside a ledger nobody hosts (as read_snapshot does). A host that
        # reopens the session makes a -wal; the next look then reconnects to follow it.
        self._immutable = not os.path.exists(f"{self.path}-wal")
        self._file_seen = _stamp(self.path)
        try:
            # check_same_thread=False: the view reads off the loop (asyncio.to_thread),
            # one look at a time.
            conn = sqlite3.connect(
                readonly_uri(self.path, immutable=self._immutable),
                uri=True,
                isolation_level=None,
                check_same_thread=False,
            )
            configure(conn)
        except sqlite3.Error as exc:
            raise LedgerError(f"{self.path}: cannot open read-only ({exc})") from exc
        self._conn = conn
        self._data_version = None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def poll(self) -> LedgerChanges | None:
        """None when nothing was committed since the last look; else what changed."""
        if self._conn is None:
            raise LedgerError(f"{self.path}: the follower is closed")
        if self._immutable and (
            os.path.exists(f"{self.path}-wal") or _stamp(self.path) != self._file_seen
        ):
            # A writer came (and may have gone again: the file itself changed).
            self.close()
            self._connect()
        conn = self._conn
        assert conn is not None
        try:
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
            if version == self._data_version:
                return None
            first = not self._looked
            self._looked = True
            self._data_version = version
            self.reads += 1
            # One read transaction: nodes, events and letters from the same commit.
            conn.execute("BEGIN")
            try:
                return self._read(conn, first)
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise LedgerError(f"{self.path}: read failed ({exc})") from exc

    def _read(self, conn: sqlite3.Connection, first: bool) -> LedgerChanges:
        nodes = [
            node_from_row(r)
            for r in conn.execute(nodes_query(conn) + " ORDER BY rowid")
        ]
        changes = LedgerChanges(nodes)
        if first:
            rows = conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM (SELECT {EVENT_COLUMNS} FROM events "
                "ORDER BY id DESC LIMIT ?) ORDER BY id",
                (FIRST_EVENTS,),
            )
            types = [t.value for t in FACT_TYPES]
            facts = conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE id IN (SELECT max(id) FROM events "
                f"WHERE type IN ({', '.join('?' for _ in types)}) GROUP BY node_id, type) "
                "ORDER BY id",
                types,
            )
            changes.facts = [event_from_row(tuple(r)) for r in facts]
        else:
            rows = conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE id > ? ORDER BY id",
                (self._last_event,),
            )
        changes.events = [event_from_row(tuple(r)) for r in rows]
        if changes.events:
            self._last_event = changes.events[-1].id
        changes.mail = self._read_mail(conn)
        return changes

    def _read_mail(self, conn: sqlite3.Connection) -> dict[str, tuple[MailboxStats, list[Message]]]:
        counts: MailCounts = {}
        for to_node, state, n in conn.execute(
            "SELECT to_node, delivered, count(*) FROM messages GROUP BY to_node, delivered"
        ):
            counts.setdefault(str(to_node), {})[_STATE_NAMES[MailState(state)]] = int(n)
        moved = [node for node, c in counts.items() if self._mail_counts.get(node) != c]
        self._mail_counts = counts
        out: dict[str, tuple[MailboxStats, list[Message]]] = {}
        for node_id in moved:
            letters = [
                message_from_row(tuple(r))
                for r in conn.execute(
                    f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE to_node = ? ORDER BY id",
                    (node_id,),
                )
            ]
            out[node_id] = (MailboxStats(**counts[node_id]), letters)
        return out


def _stamp(path: Path) -> tuple[int, int]:
    """What tells a changed file from an unchanged one without reading it."""
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_size)
