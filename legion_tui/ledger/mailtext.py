"""Mail text checks, run BEFORE anything is queued so a refusal stores nothing."""

from __future__ import annotations

from legion_tui.ledger.errors import MailField, MailInvalidText

SUBJECT_MAX_CHARS = 200
BODY_MAX_BYTES = 64 * 1024  # UTF-8 bytes


def _check_encodable(field: MailField, text: str) -> int:
    """Return the UTF-8 size of `text`; refuse NUL and unpaired surrogates.

    NUL first: SQLite's TEXT binding stops at it, so the stored row would silently be a
    truncation of what the sender wrote. A lone surrogate cannot be encoded at all.
    """
    nul = text.find("\x00")
    if nul >= 0:
        raise MailInvalidText(field, nul, f"contains U+0000 at offset {nul} (NUL is not supported)")
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        bad = ord(text[exc.start])
        raise MailInvalidText(
            field, exc.start, f"contains an unpaired surrogate U+{bad:04X} at offset {exc.start}"
        ) from None


def check_mail_text(subject: str, body: str) -> None:
    """Raise MailInvalidText for a subject or body the ledger must not store."""
    _check_encodable("subject", subject)
    if len(subject) > SUBJECT_MAX_CHARS:
        raise MailInvalidText(
            "subject",
            SUBJECT_MAX_CHARS,
            f"is {len(subject)} characters long; the limit is {SUBJECT_MAX_CHARS}",
        )
    size = _check_encodable("body", body)
    if size > BODY_MAX_BYTES:
        raise MailInvalidText(
            "body",
            BODY_MAX_BYTES,
            f"is {size} bytes of UTF-8; the limit is {BODY_MAX_BYTES}",
        )
