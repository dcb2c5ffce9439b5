"""The ledger's exceptions. Callers catch these, never `sqlite3` errors."""

from __future__ import annotations

from typing import Literal

MailField = Literal["subject", "body"]


class LedgerError(Exception):
    """Not a ledger, corrupt, newer schema, closed, or a write the ledger refused."""


class NameConflict(LedgerError):
    """`(run_id, parent_id, name)` is already taken by another node."""


class NotFound(LedgerError):
    """The node or message a write names does not exist."""


class MailInvalidText(ValueError):
    """Mail text the ledger refuses to store (upstream #353: SQLite cut TEXT at a NUL).

    `code` is the stable machine-readable code; `field` names the offending field;
    `offset` is the character offset of the first bad character, or the limit that an
    over-long text exceeded.
    """

    code = "MAIL_INVALID_TEXT"

    def __init__(self, field: MailField, offset: int, problem: str) -> None:
        self.field: MailField = field
        self.offset = offset
        self.problem = problem
        super().__init__(f"{self.code}: {field} {problem}")
