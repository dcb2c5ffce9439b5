"""The async Ledger: one batching writer (see writer.py) and one read-only connection."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Literal, cast

import aiosqlite

from legion_tui.ledger.connection import CONNECTION_PRAGMAS, readonly_uri
from legion_tui.ledger.errors import LedgerError, NameConflict, NotFound
from legion_tui.ledger.mailtext import check_mail_text
from legion_tui.ledger.recognise import FileState, inspect_file
from legion_tui.ledger.rows import (
    EVENT_COLUMNS,
    MESSAGE_COLUMNS,
    NODE_COLUMNS,
    NODE_INSERT_SQL,
    USAGE_COLUMNS,
    check_node_value,
    dump_json,
    event_from_row,
    message_from_row,
    node_from_row,
    node_params,
    usage_from_row,
)
from legion_tui.ledger.writer import BatchWriter, WriterStats
from legion_tui.model import EventType, MailKind, MailState, Urgency, check_mail_move
from legion_tui.model_records import Event, MailboxStats, Message, Node, Usage

Clock = Callable[[], float]
_UPDATABLE = frozenset(NODE_COLUMNS) - {"id"}
# The event written by a real delivery move (upstream mailbox-delivery-v1: ACCEPTED reuses
# the `mail_sent` row; OBSOLETE reuses `mail_bounced` with a reason; no new event types).
_MOVE_EVENTS: dict[MailState, tuple[EventType, str | None]] = {
    MailState.DELIVERED: (EventType.MAIL_DELIVERED, None),
    MailState.BOUNCED: (EventType.MAIL_BOUNCED, None),
    MailState.OBSOLETE: (EventType.MAIL_BOUNCED, "obsolete_after_phase_change"),
}


async def open_ledger(path: Path, *, create: bool = False, clock: Clock = time.time) -> Ledger:
    """Open (or with `create=True` create) the ledger at `path`.

    Raises LedgerError naming the path when the file is not a legion ledger, is corrupt
    or has a newer schema; such a file is left byte-identical.
    """
    path = Path(path)
    state = inspect_file(path)
    if state is not FileState.LEDGER and not create:
        what = "does not exist" if state is FileState.MISSING else "is empty"
        raise LedgerError(f"{path}: {what}, not a legion ledger (nothing was created)")
    ledger = Ledger(path, clock)
    await ledger._open(create=create)
    return ledger


class Ledger:
    """The durable record of a legion. The only code that speaks SQL lives in this package."""

    def __init__(self, path: Path, clock: Clock) -> None:
        self.path = path
        self.clock = clock
        self.migrations_applied: list[int] = []  # versions this open migrated to
        self._writer = BatchWriter(path, clock)
        self._reader: aiosqlite.Connection | None = None

    async def _open(self, *, create: bool) -> None:
        self.migrations_applied = await self._writer.start(create=create)
        try:
            # Read-only by construction: this connection can never write the file.
            self._reader = await aiosqlite.connect(
                readonly_uri(self.path), uri=True, isolation_level=None
            )
            for pragma in CONNECTION_PRAGMAS:
                await self._reader.execute_fetchall(pragma)
        except BaseException:
            await self.close()
            raise

    @property
    def stats(self) -> WriterStats:
        return self._writer.stats

    async def close(self) -> None:
        """Commit everything queued, checkpoint, close both connections. Idempotent."""
        # The reader closes first: the writer must be the last connection, because only
        # a read-write connection checkpoints and removes the -wal/-shm files on close.
        reader, self._reader = self._reader, None
        try:
            if reader is not None:
                await reader.close()
        finally:
            await self._writer.close()

    async def __aenter__(self) -> Ledger:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    # ----- writes --------------------------------------------------------------------
    async def insert_nodes(self, nodes: list[Node]) -> None:
        """Insert nodes in one transaction, all or nothing. Timestamps are stored as given."""
        rows = [node_params(n) for n in nodes]  # validates before anything is queued

        def apply(conn: sqlite3.Connection) -> None:
            try:
                conn.executemany(NODE_INSERT_SQL, rows)
            except sqlite3.IntegrityError as exc:
                raise _conflict(exc) from exc

        await self._writer.submit(apply)

    async def update_node(self, node_id: str, **fields: Any) -> Node:
        """Set `fields` (Node field names) and `updated_at`; return the new row."""
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise TypeError(f"update_node: unknown node field(s) {', '.join(sorted(unknown))}")
        values = {k: check_node_value(k, v) for k, v in fields.items()}
        values.setdefault("updated_at", self.clock())
        assignments = ", ".join(f"{k} = ?" for k in values)
        sql = f"UPDATE nodes SET {assignments} WHERE id = ? RETURNING {', '.join(NODE_COLUMNS)}"
        params = (*values.values(), node_id)

        def apply(conn: sqlite3.Connection) -> Node:
            try:
                row = conn.execute(sql, params).fetchone()
            except sqlite3.IntegrityError as exc:
                raise _conflict(exc) from exc
            if row is None:
                raise NotFound(f"{self.path}: no node {node_id!r}")
            return node_from_row(row)

        return cast(Node, await self._writer.submit(apply, single_statement=True))

    async def append_event(
        self, node_id: str | None, type: EventType, data: dict[str, Any] | None = None
    ) -> Event:
        event_type = EventType(type)
        payload = dump_json(data or {})

        def apply(conn: sqlite3.Connection) -> Event:
            return _insert_event(conn, node_id, event_type, payload, self.clock())

        return cast(Event, await self._writer.submit(apply, single_statement=True))

    async def send_mail(
        self,
        from_node: str,
        to_node: str,
        kind: MailKind,
        urgency: Urgency,
        subject: str,
        body: str,
    ) -> Message:
        """Store a PENDING message and its `mail_sent` event in one transaction.

        NUL, unpaired surrogates and over-long text raise MailInvalidText before anything
        is queued: no message row, no event.
        """
        mail_kind, mail_urgency = MailKind(kind), Urgency(urgency)
        check_mail_text(subject, body)

        def apply(conn: sqlite3.Connection) -> Message:
            now = self.clock()
            row = conn.execute(
                "INSERT INTO messages (from_node, to_node, kind, urgency, subject, body, "
                f"delivered, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                f"RETURNING {MESSAGE_COLUMNS}",
                (
                    from_node,
                    to_node,
                    mail_kind.value,
                    mail_urgency.value,
                    subject,
                    body,
                    MailState.PENDING.value,
                    now,
                ),
            ).fetchone()
            message = message_from_row(row)
            data = {
                "message_id": message.id,
                "from": from_node,
                "to": to_node,
                "kind": mail_kind.value,
                "urgency": mail_urgency.value,
                "subject": subject,
            }
            _insert_event(conn, from_node, EventType.MAIL_SENT, dump_json(data), now)
            return message

        return cast(Message, await self._writer.submit(apply))

    async def move_mail(
        self, message_id: int, state: MailState, *, reason: str | None = None
    ) -> Message:
        """Move a letter along the five-state machine (`model.check_mail_move`).

        An illegal move raises IllegalMailMove and writes nothing; the same state is a
        no-op. A real move sets `delivered_at`; DELIVERED writes `mail_delivered`,
        BOUNCED `mail_bounced`, OBSOLETE `mail_bounced` with reason
        `obsolete_after_phase_change` (upstream), each in the same transaction and
        addressed to the sender. `reason` overrides/adds the event's reason.
        """
        target = MailState(state)

        def apply(conn: sqlite3.Connection) -> Message:
            row = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"{self.path}: no message {message_id}")
            message = message_from_row(row)
            if not check_mail_move(message.delivered, target):
                return message
            now = self.clock()
            row = conn.execute(
                f"UPDATE messages SET delivered = ?, delivered_at = ? WHERE id = ? "
                f"RETURNING {MESSAGE_COLUMNS}",
                (target.value, now, message_id),
            ).fetchone()
            moved = message_from_row(row)
            if target in _MOVE_EVENTS:
                event_type, default_reason = _MOVE_EVENTS[target]
                data: dict[str, Any] = {
                    "message_id": message_id,
                    "from": moved.from_node,
                    "to": moved.to_node,
                    "state": target.name.lower(),
                }
                if reason or default_reason:
                    data["reason"] = reason or default_reason
                _insert_event(conn, moved.from_node, event_type, dump_json(data), now)
            return moved

        return cast(Message, await self._writer.submit(apply))

    def queue_usage(self, node_id: str, usage: Usage) -> None:
        """Fire and forget: the latest usage per node is UPSERTed with the next batch."""
        self._writer.queue_usage(node_id, usage)

    async def flush(self) -> None:
        """Return once everything queued so far (usage included) is committed."""
        await self._writer.barrier()

    # ----- reads ---------------------------------------------------------------------
    async def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self._reader is None or self._writer.closed:
            raise LedgerError(f"{self.path}: ledger is closed")
        try:
            return [tuple(r) for r in await self._reader.execute_fetchall(sql, params)]
        except sqlite3.Error as exc:
            raise LedgerError(f"{self.path}: read failed ({exc})") from exc

    async def get_nodes(self, run_id: str | None = None) -> list[Node]:
        """Nodes in insertion order (launch order), of one run or of all runs."""
        sql = f"SELECT {', '.join(NODE_COLUMNS)} FROM nodes"
        if run_id is None:
            rows = await self._fetch(sql + " ORDER BY rowid")
        else:
            rows = await self._fetch(sql + " WHERE run_id = ? ORDER BY rowid", (run_id,))
        return [node_from_row(r) for r in rows]

    async def get_node(self, node_id: str) -> Node | None:
        rows = await self._fetch(
            f"SELECT {', '.join(NODE_COLUMNS)} FROM nodes WHERE id = ?", (node_id,)
        )
        return node_from_row(rows[0]) if rows else None

    async def get_events(
        self,
        node_id: str | None = None,
        *,
        types: Collection[EventType] | None = None,
        limit: int = 500,
    ) -> list[Event]:
        """The newest `limit` events (of one node, when given), oldest first."""
        where: list[str] = []
        params: list[Any] = []
        if node_id is not None:
            where.append("node_id = ?")
            params.append(node_id)
        if types is not None:
            names = [EventType(t).value for t in types]
            if not names:
                return []
            where.append(f"type IN ({', '.join('?' for _ in names)})")
            params.extend(names)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = await self._fetch(
            f"SELECT {EVENT_COLUMNS} FROM (SELECT {EVENT_COLUMNS} FROM events{clause} "
            "ORDER BY id DESC LIMIT ?) ORDER BY id",
            (*params, int(limit)),
        )
        return [event_from_row(r) for r in rows]

    async def get_messages(
        self, node_id: str, *, direction: Literal["in", "out", "both"] = "both"
    ) -> list[Message]:
        """Letters to (`in`), from (`out`) or to and from (`both`) a node, oldest first."""
        clauses = {
            "in": "to_node = ?",
            "out": "from_node = ?",
            "both": "(to_node = ? OR from_node = ?)",
        }
        if direction not in clauses:
            raise ValueError(f"direction must be in, out or both, not {direction!r}")
        params = (node_id, node_id) if direction == "both" else (node_id,)
        rows = await self._fetch(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {clauses[direction]} ORDER BY id",
            params,
        )
        return [message_from_row(r) for r in rows]

    async def get_pending_mail(self, to_node: str, states: Collection[MailState]) -> list[Message]:
        """Letters addressed to `to_node` currently in one of `states`, oldest first."""
        values = [MailState(s).value for s in states]
        if not values:
            return []
        rows = await self._fetch(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE to_node = ? "
            f"AND delivered IN ({', '.join('?' for _ in values)}) ORDER BY id",
            (to_node, *values),
        )
        return [message_from_row(r) for r in rows]

    async def mailbox_stats(self, node_id: str) -> MailboxStats:
        """The five counts of letters addressed TO `node_id`."""
        rows = await self._fetch(
            "SELECT delivered, count(*) FROM messages WHERE to_node = ? GROUP BY delivered",
            (node_id,),
        )
        counts = {MailState(state).name.lower(): int(n) for state, n in rows}
        return MailboxStats(**counts)

    async def get_usage(self, node_id: str) -> Usage | None:
        rows = await self._fetch(
            f"SELECT {', '.join(USAGE_COLUMNS)} FROM usage WHERE node_id = ?", (node_id,)
        )
        return usage_from_row(rows[0]) if rows else None


def _insert_event(
    conn: sqlite3.Connection, node_id: str | None, type: EventType, data: str, at: float
) -> Event:
    cursor = conn.execute(
        "INSERT INTO events (node_id, type, data, at) VALUES (?, ?, ?, ?)",
        (node_id, type.value, data, at),
    )
    return event_from_row((cursor.lastrowid, node_id, type.value, data, at))


def _conflict(exc: sqlite3.IntegrityError) -> LedgerError:
    text = str(exc)
    if "nodes_sibling_name" in text:
        return NameConflict(f"(run_id, parent_id, name) already taken: {text}")
    if "nodes.id" in text:
        return LedgerError(f"node id already exists: {text}")
    return LedgerError(f"refused by a constraint: {text}")
