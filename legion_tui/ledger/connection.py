"""Sync SQLite plumbing shared by the async Ledger, `read_snapshot`, tests and bench.

One pragma list for every connection; `immediate()` for every writing transaction
(a deferred BEGIN that upgrades from read to write gets SQLITE_BUSY at once, without
busy_timeout applying — the source of "database is locked").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from legion_tui.ledger.errors import LedgerError
from legion_tui.ledger.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_MS = 5000
# Per-connection settings (journal_mode=WAL persists in the file and is set once by the
# writer; these two do not persist and must be set on every connection).
CONNECTION_PRAGMAS: tuple[str, ...] = (
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA synchronous = NORMAL",
)


def configure(conn: sqlite3.Connection) -> None:
    for pragma in CONNECTION_PRAGMAS:
        conn.execute(pragma)


def readonly_uri(path: Path, *, immutable: bool = False) -> str:
    """A `file:` URI opening `path` read-only (percent-encoded, so any path works)."""
    uri = path.resolve().as_uri() + "?mode=ro"
    return uri + "&immutable=1" if immutable else uri


def connect(path: Path, *, must_exist: bool = False) -> sqlite3.Connection:
    """A configured read-write sqlite3 connection in autocommit mode, the file in WAL.

    `isolation_level=None`: the sqlite3 module never opens a (deferred) transaction on
    its own; writers say `BEGIN IMMEDIATE` themselves (see `immediate`).
    journal_mode=WAL persists in the file and needs no transaction open.
    `must_exist`: `mode=rw`, so a ledger gone from the path is an error, never a new
    empty file made in its place.
    """
    if must_exist:
        uri = path.resolve().as_uri() + "?mode=rw"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    else:
        conn = sqlite3.connect(path, isolation_level=None)
    try:
        configure(conn)
        conn.execute("PRAGMA journal_mode = WAL")
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """`BEGIN IMMEDIATE … COMMIT`, rolled back if the body raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _table_names(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    return {str(r[0]) for r in rows}


def migrate(conn: sqlite3.Connection, *, create: bool, target: int = SCHEMA_VERSION) -> list[int]:
    """Bring the file to `target` inside one BEGIN IMMEDIATE; return the versions applied.

    The version is re-read under the write lock, so of N processes racing to migrate the
    same file exactly one applies each step and the others see it done.
    """
    with immediate(conn):
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = _table_names(conn)
        if app_id != APPLICATION_ID:
            if app_id != 0 or version != 0 or tables:
                raise LedgerError(_not_a_ledger_reason(app_id, version, tables))
            if not create:
                raise LedgerError("an empty SQLite database, not a legion ledger")
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        if version > SCHEMA_VERSION:
            raise LedgerError(_newer_reason(version))
        applied: list[int] = []
        for step in range(version + 1, target + 1):
            for statement in MIGRATIONS[step]:
                conn.execute(statement)
            applied.append(step)
        if applied:
            conn.execute(f"PRAGMA user_version = {target}")
    return applied


def _newer_reason(version: int) -> str:
    return (
        f"ledger schema version {version} is newer than this legion-tui understands "
        f"({SCHEMA_VERSION}); upgrade legion-tui"
    )


def _not_a_ledger_reason(app_id: int, version: int, tables: set[str]) -> str:
    if tables:
        shown = ", ".join(sorted(tables)[:5])
        return f"an SQLite database of another application (tables: {shown}), not a legion ledger"
    return (
        f"an SQLite database of another application (application_id {app_id:#010x}, "
        f"user_version {version}), not a legion ledger"
    )
