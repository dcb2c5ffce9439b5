"""`read_snapshot`: the whole tree from a ledger file, synchronously and read-only.

For `legion status` when no supervisor is live: no event loop, no writer, no WAL switch.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from legion_tui.ledger.connection import configure, readonly_uri
from legion_tui.ledger.errors import LedgerError
from legion_tui.ledger.recognise import FileState, inspect_file
from legion_tui.ledger.rows import USAGE_COLUMNS, node_from_row, nodes_query, usage_from_row
from legion_tui.model import EventType
from legion_tui.model_records import Node, Usage


@contextlib.contextmanager
def _readonly(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a ledger file; LedgerError if it is not one."""
    path = Path(path)
    state = inspect_file(path)
    if state is not FileState.LEDGER:
        what = "does not exist" if state is FileState.MISSING else "is empty"
        raise LedgerError(f"{path}: {what}, not a legion ledger")
    # With no -wal every committed row is in the main file; `immutable` then reads it
    # without creating -wal/-shm next to a ledger nobody has open.
    immutable = not os.path.exists(f"{path}-wal")
    try:
        conn = sqlite3.connect(
            readonly_uri(path, immutable=immutable), uri=True, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise LedgerError(f"{path}: cannot open read-only ({exc})") from exc
    try:
        configure(conn)
        yield conn
    except sqlite3.Error as exc:
        raise LedgerError(f"{path}: read failed ({exc})") from exc
    finally:
        conn.close()


def read_snapshot(path: Path) -> tuple[list[Node], dict[str, Usage]]:
    """Nodes (insertion order) and usage by node id. Raises LedgerError if not a ledger."""
    with _readonly(path) as conn:
        nodes = [
            node_from_row(r)
            for r in conn.execute(nodes_query(conn) + " ORDER BY rowid")
        ]
        usage: dict[str, Usage] = {}
        has_usage = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'usage'"
        ).fetchone()
        if has_usage:  # a v1 ledger read before any writer migrated it
            for row in conn.execute(f"SELECT node_id, {', '.join(USAGE_COLUMNS)} FROM usage"):
                usage[row[0]] = usage_from_row(row[1:])
        return nodes, usage


def read_retired_reasons(path: Path) -> dict[str, str]:
    """Node id → the reason of its last `node_retired` (`session-shutdown`: interrupted
    by the host's exit, resumable), as the reopened dashboard reads them."""
    with _readonly(path) as conn:
        rows = conn.execute(
            "SELECT node_id, json_extract(data, '$.reason') FROM events "
            "WHERE type = ? ORDER BY id",
            (EventType.NODE_RETIRED.value,),
        )
        return {str(n): str(r) for n, r in rows if n is not None}


def read_launches(path: Path) -> dict[str, dict[str, Any]]:
    """Node id → the data of its last `node_launched` (the worktree it was given:
    `worktree`, `worktree_cwd`, `branch`, `base_sha`), for the verbs that act on an
    agent's work without a live host (`legion diff | commit | land | discard`)."""
    return read_last_events(path, EventType.NODE_LAUNCHED)


def read_last_events(path: Path, etype: EventType) -> dict[str, dict[str, Any]]:
    """Node id → the data of its last event of `etype` (a launch, the checks' last run)."""
    with _readonly(path) as conn:
        rows = conn.execute(
            "SELECT node_id, data FROM events WHERE type = ? ORDER BY id", (etype.value,)
        )
        last: dict[str, dict[str, Any]] = {}
        for node_id, data in rows:
            try:
                value = json.loads(data)
            except (TypeError, ValueError):
                continue
            if node_id is not None and isinstance(value, dict):
                last[str(node_id)] = value
        return last
