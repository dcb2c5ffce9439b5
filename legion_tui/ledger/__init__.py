"""The ledger: the ONLY code that speaks SQL (SPEC §4).

An SQLite WAL file (`legion.db`) with nodes, events, messages and usage; one batching
writer per Ledger, a separate read-only connection, and read-only recognition of foreign
or damaged files (refused with a clear error, never written).
"""

from legion_tui.ledger.connection import CONNECTION_PRAGMAS, connect, immediate, migrate
from legion_tui.ledger.errors import LedgerError, MailInvalidText, NameConflict, NotFound
from legion_tui.ledger.ledger import Ledger, open_ledger
from legion_tui.ledger.mailtext import BODY_MAX_BYTES, SUBJECT_MAX_CHARS, check_mail_text
from legion_tui.ledger.schema import APPLICATION_ID, SCHEMA_VERSION
from legion_tui.ledger.snapshot import read_snapshot
from legion_tui.ledger.writer import WriterStats

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
