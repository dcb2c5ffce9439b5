"""The ledger's schema, generated from the closed sets in `legion_tui.model`.

Version history (each step is a tuple of single statements, applied in order inside one
`BEGIN IMMEDIATE` transaction; never `executescript`, which would commit first):
- v1: nodes, events, messages (the pi-legion 3.x ledger).
- v2: the `usage` table (token counts written from the session tailer).
- v3: nodes may run Claude Code and Codex (`kind` claude/codex, their backends): SQLite
  cannot change a CHECK, so the table is rebuilt with the new one and its rows copied.
- v4: the `checks` event (the project's checks on an agent's work): events rebuilt alike.
- v5: `nodes.attempt_group`: the attempts of one fan-out (issue 34), a plain new column.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from legion_tui.model import (
    BACKENDS,
    KINDS,
    ROLES,
    EventType,
    MailKind,
    MailState,
    NodeStatus,
    Urgency,
)

SCHEMA_VERSION = 5
# `PRAGMA application_id`: header bytes 68..71 say "this file is a legion ledger", so a
# file can be recognised from its first 100 bytes without SQLite touching it.
APPLICATION_ID = int.from_bytes(b"LGN1", "big")

LEDGER_TABLES: frozenset[str] = frozenset({"nodes", "events", "messages", "usage"})
TABLES_BY_VERSION: dict[int, frozenset[str]] = {
    1: frozenset({"nodes", "events", "messages"}),
    2: LEDGER_TABLES,
    3: LEDGER_TABLES,
    4: LEDGER_TABLES,
    5: LEDGER_TABLES,
}

# The closed sets of v1 and v2, frozen: a migration must build what that version built,
# whatever the sets have grown to since.
_V1_KINDS = ("sim", "pi", "exec")
_V1_BACKENDS = ("inprocess", "process", "pi-rpc")


def _sql_literal(value: str | int) -> str:
    if isinstance(value, int):
        return str(int(value))
    return "'" + value.replace("'", "''") + "'"


def check_in(column: str, values: Iterable[str | int | enum.Enum]) -> str:
    """`CHECK (column IN (...))` from a closed set — the only way such lists reach SQL."""
    literals = []
    for v in values:
        raw = v.value if isinstance(v, enum.Enum) else v
        literals.append(_sql_literal(raw))
    return f"CHECK ({column} IN ({', '.join(literals)}))"


def _nodes_table(name: str, kinds: Iterable[str], backends: Iterable[str]) -> str:
    return f"""CREATE TABLE {name} (
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        parent_id TEXT,
        name TEXT NOT NULL,
        path TEXT NOT NULL,
        role TEXT NOT NULL {check_in("role", ROLES)},
        kind TEXT NOT NULL {check_in("kind", kinds)},
        backend TEXT NOT NULL {check_in("backend", backends)},
        status TEXT NOT NULL {check_in("status", NodeStatus)},
        phase TEXT,
        phase_since REAL,
        rework_count INTEGER NOT NULL DEFAULT 0,
        machine TEXT,
        session_file TEXT,
        pid INTEGER,
        task TEXT NOT NULL DEFAULT '',
        verdict TEXT,
        error TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    )"""


_NODES_INDEXES = (
    # A NULL parent_id is never equal to another NULL in a UNIQUE index, so two roots
    # of one run with one name would both pass; fold NULL to '' (ids are never empty).
    "CREATE UNIQUE INDEX nodes_sibling_name ON nodes (run_id, ifnull(parent_id, ''), name)",
    "CREATE INDEX nodes_run ON nodes (run_id)",
)

def _events_table(name: str) -> str:
    return f"""CREATE TABLE {name} (
        id INTEGER PRIMARY KEY,
        node_id TEXT,
        type TEXT NOT NULL {check_in("type", EventType)},
        data TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(data)),
        at REAL NOT NULL
    )"""


_EVENTS_INDEX = "CREATE INDEX events_node ON events (node_id, id)"

_V1: tuple[str, ...] = (
    _nodes_table("nodes", _V1_KINDS, _V1_BACKENDS),
    *_NODES_INDEXES,
    _events_table("events"),
    _EVENTS_INDEX,
    f"""CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        from_node TEXT NOT NULL,
        to_node TEXT NOT NULL,
        kind TEXT NOT NULL {check_in("kind", MailKind)},
        urgency TEXT NOT NULL {check_in("urgency", Urgency)},
        subject TEXT NOT NULL,
        body TEXT NOT NULL,
        delivered INTEGER NOT NULL DEFAULT 0 {check_in("delivered", MailState)},
        delivered_at REAL,
        created_at REAL NOT NULL
    )""",
    "CREATE INDEX messages_to ON messages (to_node, delivered)",
    "CREATE INDEX messages_from ON messages (from_node)",
)

_V2: tuple[str, ...] = (
    """CREATE TABLE usage (
        node_id TEXT PRIMARY KEY,
        input INTEGER NOT NULL DEFAULT 0,
        output INTEGER NOT NULL DEFAULT 0,
        cache_read INTEGER NOT NULL DEFAULT 0,
        cache_write INTEGER NOT NULL DEFAULT 0,
        cost REAL NOT NULL DEFAULT 0,
        generation_ms REAL NOT NULL DEFAULT 0,
        turns INTEGER NOT NULL DEFAULT 0,
        updated_at REAL NOT NULL
    )""",
)

_V3: tuple[str, ...] = (
    _nodes_table("nodes_v3", KINDS, BACKENDS),
    "INSERT INTO nodes_v3 SELECT * FROM nodes",
    "DROP TABLE nodes",  # its indexes go with it
    "ALTER TABLE nodes_v3 RENAME TO nodes",
    *_NODES_INDEXES,
)

_V4: tuple[str, ...] = (
    _events_table("events_v4"),
    "INSERT INTO events_v4 SELECT * FROM events",
    "DROP TABLE events",  # its index goes with it
    "ALTER TABLE events_v4 RENAME TO events",
    _EVENTS_INDEX,
)

# A new nullable column needs no rebuild, and `_nodes_table` stays v3's table (v3's
# migration copies `SELECT *` into it): v5 adds its column on top.
_V5: tuple[str, ...] = ("ALTER TABLE nodes ADD COLUMN attempt_group TEXT",)

# MIGRATIONS[n] brings a version n-1 ledger to version n (v0 = a blank file).
MIGRATIONS: dict[int, tuple[str, ...]] = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5}
assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))
