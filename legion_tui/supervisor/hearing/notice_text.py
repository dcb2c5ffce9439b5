"""The words of a completion notice: one subject line (who ended and how) and a body
holding the result `collect` would give for each round, each final text cut so that one
letter stays within the mail path's limits (the rest is a `collect` away)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from legion_tui.ledger.mailtext import BODY_MAX_BYTES, SUBJECT_MAX_CHARS
from legion_tui.model import NodeStatus
from legion_tui.supervisor.hearing.results import Result, cut_utf8

if TYPE_CHECKING:
    from legion_tui.state import LegionModel

__all__ = [
    "NOTICE_TEXT_CHARS",
    "NOTICE_TEXT_TOTAL",
    "REASON_CHARS",
    "notice_body",
    "notice_subject",
]

NOTICE_TEXT_CHARS = 1500  # of each member's final text in a notice; the rest: collect
NOTICE_TEXT_TOTAL = 24_000  # of all members' texts in one notice (many members: less each)
REASON_CHARS = 300


def _mark(result: Result) -> str:
    if result.status == NodeStatus.FAILED.value:
        return "✗ failed"
    if result.status == NodeStatus.RETIRED.value:
        return "◌ retired"
    verdict = result.verdict
    if isinstance(verdict, dict) and "ok" in verdict:
        return "✓ ok" if verdict.get("ok") is True else "✗ not ok"
    return "○ settled, no verdict"


def _clean(text: str) -> str:
    """Text a letter may carry: no NUL, no unpaired surrogate (the ledger refuses both)."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def _reason(result: Result) -> str:
    verdict = result.verdict
    reason = verdict.get("reason") if isinstance(verdict, dict) else None
    text = " ".join(_clean(str(reason or result.error or "")).split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def _still_running(model: LegionModel, parent: str, results: Sequence[Result]) -> list[str]:
    told = {r.node_id for r in results}
    nodes = model.nodes
    return [
        nodes[c].node.name
        for c in model.children(parent)
        if c in nodes and c not in told and nodes[c].node.live
    ]


def notice_subject(model: LegionModel, parent: str, results: Sequence[Result]) -> str:
    """One line: who ended and how (`worker-a ✓ ok — parsed; worker-b ✗ failed — …`)."""
    parts = [f"{r.name} {_mark(r)}" + (f" — {_reason(r)}" if _reason(r) else "") for r in results]
    line = "Finished: " + "; ".join(parts)
    still = _still_running(model, parent, results)
    if still:
        line += f" (still running: {', '.join(still)})"
    return line if len(line) <= SUBJECT_MAX_CHARS else line[: SUBJECT_MAX_CHARS - 1] + "…"


def notice_body(model: LegionModel, parent: str, results: Sequence[Result]) -> str:
    """The result `collect` would give for each round (verdict, reason, output file,
    delivery), each final text cut to NOTICE_TEXT_CHARS with the rest a `collect` away."""
    still = _still_running(model, parent, results)
    head = f"{len(results)} of {len(results) + len(still)} members finished" + (
        f"; still running: {', '.join(still)}." if still else "; none still running."
    )
    blocks = [head]
    each = max(200, min(NOTICE_TEXT_CHARS, NOTICE_TEXT_TOTAL // max(1, len(results))))
    for r in results:
        lines = [f"## {r.name} — {r.status} · {_mark(r)}"]
        if _reason(r):
            lines.append(f"reason: {_reason(r)}")
        for note in r.notes:
            lines.append(f"note: {note}")
        if r.delivery:
            branch, sha = r.delivery.get("branch"), r.delivery.get("head_sha")
            lines.append(f"delivery: {branch} @ {str(sha)[:12]}")
        lines.append(f"output file: {r.output_file}")
        text = _clean(r.text.strip())
        if len(text) > each:
            whole = r.text_chars or len(r.text)
            lines.append(
                f"final text (first {each} of {whole} characters; "
                f"`legion collect {r.name} --again` prints it all):"
            )
            lines.append(text[:each] + "…")
        elif text:
            lines.append("final text:")
            lines.append(text)
        blocks.append("\n".join(lines))
    blocks.append(
        "This is the result `legion collect` gives; it has been reported to you now, so "
        "`wait` and `collect` will say so (`legion collect NAME --again` shows it again)."
    )
    return cut_utf8("\n\n".join(blocks), BODY_MAX_BYTES - 1024)
