"""What a child ended with, as `collect` and a completion notice hand it to its parent.

A `Result` is taken once, when the node ends (a round: its n-th ending), from the node's
row, its ending event and its session's last text; the full text goes to the output file
the result names. `FinishedResults` keeps the results of ended nodes for `collect`
(upstream finished-cache-eviction-v1): each entry holds at most `ENTRY_BYTES` of its text,
all entries together at most `TOTAL_BYTES`, the oldest evicted first. A result handed to
a caller is a frozen object the cache never touches again (eviction drops the cache's own
reference, nothing is cut in place); a text cut to the entry bound is read back whole
from its output file; an evicted entry is rebuilt from the ledger's row and the output
file by the caller (`Queries.collect`) — never "no result".
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ENTRY_BYTES",
    "TOTAL_BYTES",
    "FinishedResults",
    "Result",
    "cut_utf8",
    "team_verdict",
    "write_output",
]

ENTRY_BYTES = 8 * 1024  # resident text of one entry
TOTAL_BYTES = 1024 * 1024  # resident text of all entries


@dataclass(frozen=True, slots=True)
class Result:
    """One round of one node: what `collect` answers once the node has ended."""

    node_id: str
    name: str
    path: str
    round: int
    status: str
    verdict: Any  # the verdict object the agent wrote, or None
    error: str | None
    text: str  # the final text (whole unless `text_complete` is False)
    output_file: str
    delivery: dict[str, Any] | None = None  # a team's branch + sha
    notes: tuple[str, ...] = ()  # what the host did about this ending (a retry)
    text_complete: bool = True
    text_chars: int = 0  # the whole text's length, kept when the text is cut

    def reply(self) -> dict[str, Any]:
        """The `collect` reply: the fields the socket has always answered, plus notes."""
        out: dict[str, Any] = {
            "name": self.name,
            "path": self.path,
            "status": self.status,
            "text": self.text,
            "verdict": self.verdict,
            "output_file": self.output_file,
            "round": self.round,
        }
        if self.error:
            out["error"] = self.error
        if self.delivery is not None:
            out["delivery"] = self.delivery
        if self.notes:
            out["notes"] = list(self.notes)
        if not self.text_complete:
            out["text_truncated"] = True
        return out


def cut_utf8(text: str, limit: int) -> str:
    """The longest prefix of `text` whose UTF-8 encoding fits in `limit` bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def write_output(path: Path, text: str) -> None:
    """The output file of a result: the whole final text, newline-terminated."""
    # Not `parents=True`: a run folder removed under its host is not made again.
    path.parent.mkdir(exist_ok=True)
    path.write_text(text + ("\n" if text else ""), encoding="utf-8")


def _text_bytes(result: Result) -> int:
    return len(result.text.encode("utf-8"))


class FinishedResults:
    """Results of ended nodes by (node id, round), bounded in resident text."""

    def __init__(self, entry_bytes: int = ENTRY_BYTES, total_bytes: int = TOTAL_BYTES) -> None:
        self.entry_bytes = entry_bytes
        self.total_bytes = total_bytes
        self._entries: OrderedDict[tuple[str, int], Result] = OrderedDict()
        self._bytes = 0
        self.evicted = 0

    def put(self, result: Result) -> None:
        key = (result.node_id, result.round)
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= _text_bytes(old)
        kept = self._cut(result)
        self._entries[key] = kept
        self._bytes += _text_bytes(kept)
        while self._bytes > self.total_bytes and len(self._entries) > 1:
            _key, gone = self._entries.popitem(last=False)  # the oldest first
            self._bytes -= _text_bytes(gone)
            self.evicted += 1

    def _cut(self, result: Result) -> Result:
        """The cache's own copy, its text cut to the entry bound."""
        cut = cut_utf8(result.text, self.entry_bytes)
        if cut == result.text:
            return result
        return dataclasses.replace(
            result, text=cut, text_complete=False, text_chars=len(result.text)
        )

    def get(self, node_id: str, round_: int) -> Result | None:
        """The result, its text whole again (read from its output file) when the entry
        holds only its head; None when it was never kept or was evicted."""
        kept = self._entries.get((node_id, round_))
        if kept is None:
            return None
        self._entries.move_to_end((node_id, round_))
        if kept.text_complete:
            return kept
        try:
            text = Path(kept.output_file).read_text(encoding="utf-8").removesuffix("\n")
        except OSError:
            return kept  # the file is gone: its head, marked cut (text_truncated)
        return dataclasses.replace(kept, text=text, text_complete=True)

    @property
    def resident_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)


def team_verdict(
    verdict: dict[str, Any] | None,
    failed: list[tuple[str, str]],
    superseded: list[str],
) -> dict[str, Any] | None:
    """A lead's verdict as its team stands (upstream partial-failure-exit-v1): it names
    the members that failed (`failed`: name, why) and those a sibling superseded; a
    failure nothing superseded makes it not ok, whatever the lead said — never `✓ ok`
    over a member that failed. Unchanged when no member failed."""
    if not failed:
        return verdict
    open_failures = [(n, why) for n, why in failed if n not in superseded]
    said = dict(verdict) if verdict is not None else {}
    lead_reason = str(said.get("reason") or "").strip()
    parts: list[str] = []
    if open_failures:
        parts.append(
            "members failed: " + ", ".join(f"{n} ({why})" if why else n for n, why in open_failures)
        )
    handled = [n for n, _why in failed if n in superseded]
    if handled:
        parts.append("superseded by a sibling: " + ", ".join(handled))
    if lead_reason:
        parts.append(f"the lead said: {lead_reason}")
    out = dict(said)
    out["ok"] = bool(said.get("ok") is True and not open_failures)
    out["reason"] = "; ".join(parts)
    out["members_failed"] = [n for n, _why in open_failures]
    out["members_superseded"] = handled
    if verdict is not None:
        out["lead_verdict"] = verdict
    return out
