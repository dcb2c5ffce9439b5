"""Recognise a ledger file WITHOUT writing to it.

Opening a foreign or damaged file read-write (or even setting journal_mode) writes to
it, so every check here reads: first the raw 100-byte SQLite header (no SQLite at all),
then, where the header cannot decide, a `mode=ro` connection. A file refused here is
left byte-identical and no -wal/-shm file appears.
"""

from __future__ import annotations

import enum
import os
import sqlite3
import struct
from dataclasses import dataclass
from pathlib import Path

from legion_tui.ledger.connection import configure, readonly_uri
from legion_tui.ledger.errors import LedgerError
from legion_tui.ledger.schema import APPLICATION_ID, SCHEMA_VERSION, TABLES_BY_VERSION

_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100


class FileState(enum.Enum):
    MISSING = "missing"
    BLANK = "blank"  # zero bytes, or a valid SQLite file with no tables and no identity
    LEDGER = "ledger"


@dataclass(frozen=True, slots=True)
class _Header:
    page_size: int
    page_count: int | None  # None when the header's count is not known to be valid
    application_id: int
    user_version: int


def _refuse(path: Path, why: str) -> LedgerError:
    return LedgerError(f"{path}: {why}")


def _read_header(path: Path, size: int, *, check_size: bool) -> _Header:
    """Parse the 100-byte header; with `check_size`, refuse a file shorter than it says.

    The size checks are skipped while a -wal exists: a checkpoint in progress may have
    written the new page 1 before the pages that grow the file.
    """
    with path.open("rb") as f:
        raw = f.read(_HEADER_SIZE)
    if len(raw) < _HEADER_SIZE or not raw.startswith(_MAGIC):
        raise _refuse(path, "not an SQLite database (no SQLite header), not a legion ledger")
    (page_size,) = struct.unpack_from(">H", raw, 16)
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise _refuse(path, f"corrupt SQLite header (page size {page_size})")
    change_counter, page_count = struct.unpack_from(">II", raw, 24)
    (user_version,) = struct.unpack_from(">I", raw, 60)
    (application_id,) = struct.unpack_from(">I", raw, 68)
    (valid_for,) = struct.unpack_from(">I", raw, 92)
    if check_size and size % page_size:
        raise _refuse(
            path,
            f"truncated or corrupt: {size} bytes is not a whole number of {page_size}-byte pages",
        )
    known = valid_for == change_counter and page_count > 0
    if check_size and known and size < page_count * page_size:
        raise _refuse(
            path,
            f"truncated: the header says {page_count} pages of {page_size} "
            f"bytes but the file has {size} bytes",
        )
    return _Header(page_size, page_count if known else None, application_id, user_version)


def _wal_has_frames(path: Path) -> bool:
    """A non-empty -wal means the header in the main file may be stale (not checkpointed)."""
    try:
        return os.path.getsize(f"{path}-wal") > 0
    except OSError:
        return False


def _newer(path: Path, version: int) -> LedgerError:
    return _refuse(
        path,
        f"ledger schema version {version} is newer than this legion-tui understands "
        f"({SCHEMA_VERSION}); upgrade legion-tui",
    )


def _foreign(path: Path, app_id: int, version: int) -> LedgerError:
    return _refuse(
        path,
        f"an SQLite database of another application (application_id {app_id:#010x}, "
        f"user_version {version}), not a legion ledger",
    )


def _refuse_by_header(path: Path, header: _Header) -> None:
    """Raise when the (current) header alone says no: a foreign or a newer file."""
    if header.application_id == APPLICATION_ID and header.user_version > SCHEMA_VERSION:
        raise _newer(path, header.user_version)
    if header.application_id not in (0, APPLICATION_ID):
        raise _foreign(path, header.application_id, header.user_version)


def _check_identity(path: Path, app_id: int, version: int, tables: set[str]) -> FileState:
    if app_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise _newer(path, version)
        missing = TABLES_BY_VERSION.get(version, frozenset()) - tables
        if version == 0 or missing:
            shown = ", ".join(sorted(missing)) or "all"
            raise _refuse(path, f"corrupt legion ledger (tables missing: {shown})")
        return FileState.LEDGER
    if tables:
        shown = ", ".join(sorted(tables)[:5])
        raise _refuse(
            path,
            f"an SQLite database of another application (tables: {shown}), not a legion ledger",
        )
    if app_id != 0 or version != 0:
        raise _foreign(path, app_id, version)
    return FileState.BLANK


def _read_identity(path: Path) -> tuple[int, int, set[str]]:
    """application_id, user_version and table names through a read-only connection.

    With no -wal file nobody has the database open and the main file holds everything:
    `immutable` reads it without creating -wal/-shm. A -wal file means a live (or
    crashed) connection; then a plain read-only open, with locking, sees the live state.
    """
    immutable = not os.path.exists(f"{path}-wal")
    try:
        return _query_identity(path, immutable=immutable)
    except sqlite3.DatabaseError:
        if not immutable or not os.path.exists(f"{path}-wal"):
            raise
        # A writer opened the file while we read it without locks: read again properly.
        return _query_identity(path, immutable=False)


def _query_identity(path: Path, *, immutable: bool) -> tuple[int, int, set[str]]:
    conn = sqlite3.connect(readonly_uri(path, immutable=immutable), uri=True, isolation_level=None)
    try:
        configure(conn)
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        return app_id, version, {str(r[0]) for r in rows}
    finally:
        conn.close()


def inspect_file(path: Path) -> FileState:
    """Say what `path` is, or raise LedgerError naming the path and what is wrong."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return FileState.MISSING
    except OSError as exc:
        raise _refuse(path, f"cannot read ({exc.strerror})") from None
    if path.is_dir():
        raise _refuse(path, "is a directory, not a legion ledger")
    if size == 0:
        return FileState.BLANK
    # Any -wal file means a connection is (or was) open: a checkpoint may be rewriting
    # the main file under us, so its size says nothing; SQLite, with locks, decides.
    try:
        header = _read_header(path, size, check_size=not os.path.exists(f"{path}-wal"))
    except PermissionError:
        raise _refuse(path, "cannot read (permission denied)") from None
    if not _wal_has_frames(path):
        # The header is current: where it can decide, no SQLite connection ever opens
        # a foreign file or one written by a newer legion-tui.
        _refuse_by_header(path, header)
    try:
        app_id, version, tables = _read_identity(path)
    except sqlite3.DatabaseError as exc:
        raise _refuse(path, f"corrupt SQLite database ({exc})") from None
    return _check_identity(path, app_id, version, tables)
