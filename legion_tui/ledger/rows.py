"""Rows ↔ the dataclasses of `legion_tui.model`. Column lists come from the dataclasses."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from typing import Any, cast

from legion_tui.model import (
    BACKENDS,
    KINDS,
    ROLES,
    Backend,
    EventType,
    Kind,
    MailKind,
    MailState,
    NodeStatus,
    Role,
    Urgency,
)
from legion_tui.model_records import Event, Message, Node, Usage

NODE_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Node))
USAGE_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Usage))
# Fields of the JSON-text columns, accepted as a dict/list and stored as TEXT.
NODE_JSON_FIELDS = frozenset({"machine", "verdict"})

NODE_INSERT_SQL = (
    f"INSERT INTO nodes ({', '.join(NODE_COLUMNS)}) VALUES ({', '.join('?' for _ in NODE_COLUMNS)})"
)
USAGE_UPSERT_SQL = (
    f"INSERT INTO usage (node_id, {', '.join(USAGE_COLUMNS)}, updated_at) "
    f"VALUES (?, {', '.join('?' for _ in USAGE_COLUMNS)}, ?) "
    f"ON CONFLICT (node_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in (*USAGE_COLUMNS, "updated_at"))
)
EVENT_COLUMNS = "id, node_id, type, data, at"
MESSAGE_COLUMNS = (
    "id, from_node, to_node, kind, urgency, subject, body, delivered, delivered_at, created_at"
)


# One encoder, built once (json.dumps with options builds a new one per call).
# allow_nan=False: NaN is not JSON and json_valid() would refuse the row later.
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def dump_json(value: Any) -> str:
    return _ENCODER.encode(value)


def check_node_value(name: str, value: Any) -> Any:
    """Validate one node field before it is queued; return the value to bind."""
    if name == "status":
        return NodeStatus(value).value
    if name == "role" and value not in ROLES:
        raise ValueError(f"unknown role {value!r}; one of {', '.join(ROLES)}")
    if name == "kind" and value not in KINDS:
        raise ValueError(f"unknown kind {value!r}; one of {', '.join(KINDS)}")
    if name == "backend" and value not in BACKENDS:
        raise ValueError(f"unknown backend {value!r}; one of {', '.join(BACKENDS)}")
    if name in NODE_JSON_FIELDS and value is not None and not isinstance(value, str):
        return dump_json(value)
    return value


def node_params(node: Node) -> tuple[Any, ...]:
    return tuple(check_node_value(c, getattr(node, c)) for c in NODE_COLUMNS)


def nodes_query(conn: sqlite3.Connection) -> str:
    """`SELECT` every node column `FROM nodes`, as this file has them: a ledger no host has
    migrated yet (a read-only reader of a v1–v4 file) lacks the columns later versions
    added, which then read NULL."""
    have = {str(r[1]) for r in conn.execute("PRAGMA table_info(nodes)")}
    columns = ", ".join(c if c in have else f"NULL AS {c}" for c in NODE_COLUMNS)
    return f"SELECT {columns} FROM nodes"


def node_from_row(row: sqlite3.Row | tuple[Any, ...]) -> Node:
    values = dict(zip(NODE_COLUMNS, row, strict=True))
    values["status"] = NodeStatus(values["status"])
    values["role"] = cast(Role, values["role"])
    values["kind"] = cast(Kind, values["kind"])
    values["backend"] = cast(Backend, values["backend"])
    return Node(**values)


def event_from_row(row: tuple[Any, ...]) -> Event:
    id_, node_id, type_, data, at = row
    return Event(
        id=int(id_), node_id=node_id, type=EventType(type_), data=json.loads(data), at=float(at)
    )


def message_from_row(row: tuple[Any, ...]) -> Message:
    id_, from_node, to_node, kind, urgency, subject, body, delivered, delivered_at, created = row
    return Message(
        id=int(id_),
        from_node=from_node,
        to_node=to_node,
        kind=MailKind(kind),
        urgency=Urgency(urgency),
        subject=subject,
        body=body,
        delivered=MailState(delivered),
        delivered_at=delivered_at,
        created_at=float(created),
    )


def usage_params(node_id: str, usage: Usage, now: float) -> tuple[Any, ...]:
    return (node_id, *(getattr(usage, c) for c in USAGE_COLUMNS), now)


def usage_from_row(row: tuple[Any, ...]) -> Usage:
    return Usage(**dict(zip(USAGE_COLUMNS, row, strict=True)))
