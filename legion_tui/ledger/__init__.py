"""The ledger: the ONLY code that speaks SQL (SPEC §4).

An SQLite WAL file (`legion.db`) with nodes, events, messages and usage; one batching
writer per Ledger, a separate read-only connection, and read-only recognition of foreign
or damaged files (refused with a clear error, never written).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from legion_tui.ledger.connection import CONNECTION_PRAGMAS, connect, immediate, migrate
    from legion_tui.ledger.errors import LedgerError, MailInvalidText, NameConflict, NotFound
    from legion_tui.ledger.ledger import Ledger, open_ledger
    from legion_tui.ledger.mailtext import BODY_MAX_BYTES, SUBJECT_MAX_CHARS, check_mail_text
    from legion_tui.ledger.schema import APPLICATION_ID, SCHEMA_VERSION
    from legion_tui.ledger.snapshot import read_snapshot
    from legion_tui.ledger.writer import WriterStats

# Where each name lives: imported on first use (PEP 562), so a `legion mail` that needs
# only the text checks does not load aiosqlite, asyncio and the writer.
_HOMES = {
    "CONNECTION_PRAGMAS": "connection",
    "connect": "connection",
    "immediate": "connection",
    "migrate": "connection",
    "LedgerError": "errors",
    "MailInvalidText": "errors",
    "NameConflict": "errors",
    "NotFound": "errors",
    "Ledger": "ledger",
    "open_ledger": "ledger",
    "BODY_MAX_BYTES": "mailtext",
    "SUBJECT_MAX_CHARS": "mailtext",
    "check_mail_text": "mailtext",
    "APPLICATION_ID": "schema",
    "SCHEMA_VERSION": "schema",
    "read_snapshot": "snapshot",
    "WriterStats": "writer",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "APPLICATION_ID",
    "BODY_MAX_BYTES",
    "CONNECTION_PRAGMAS",
    "SCHEMA_VERSION",
    "SUBJECT_MAX_CHARS",
    "Ledger",
    "LedgerError",
    "MailInvalidText",
    "NameConflict",
    "NotFound",
    "WriterStats",
    "check_mail_text",
    "connect",
    "immediate",
    "migrate",
    "open_ledger",
    "read_snapshot",
]
