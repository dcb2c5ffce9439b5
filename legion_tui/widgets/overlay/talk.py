"""Talking to an agent from the dashboard (issue 12 item 2): what was sent, what the
agent answered, and the messages sent before (the message box's history).

A message is one `steer` operation: a running agent queues it for its next turn
boundary, an idle one starts a turn with it (a follow-up), both answered by the agent's
own receipt (`queued` / `accepted` / `intercepted`). It is *delivered* once the agent's
session holds it — the user messages its progress keeps (`recent_user_texts`) — so the
line under the box goes from `queued` to `delivered` when the model really read it.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from legion_tui import receipts
from legion_tui.model import NodeStatus
from legion_tui.state import NodeView

__all__ = ["HISTORY_FILE", "MessageHistory", "SentMessage", "message_mode", "steer_outcome"]

HISTORY_FILE = "message-history.jsonl"  # in the run folder: one history per session
HISTORY_KEPT = 500  # messages recalled with Up; the file keeps appending
OUTCOMES = ("queued", "accepted", "intercepted")
_SHOWN_CHARS = 40  # of the message itself in the receipt line


def message_mode(view: NodeView) -> tuple[str, str]:
    """(what the message is, what will happen to it), as the node stands: a `steer` for
    an agent inside a turn (it waits for the turn's next boundary); a `follow-up` for an
    idle one — settled, or live after an abort — (it starts a turn); for an agent that
    has ended, that nothing will until it is resumed (before, a retired agent's box said
    "follow-up (starts a turn)", then the send failed). The receipt says what did."""
    node, progress = view.node, view.progress
    if node.status in (NodeStatus.RETIRED, NodeStatus.FAILED):
        return "message", f"{node.status.value} — r resumes it first"
    if node.status is NodeStatus.BLOCKED:  # it waits on its user: this is the answer
        return "answer", "to what it asks (its row shows the question)"
    idle = progress.last_stop_reason == "aborted" and not progress.in_flight
    if node.live and not idle:
        return "steer", "next turn boundary"
    return "follow-up", "starts a turn"


def steer_outcome(name: str, receipt: str) -> str | None:
    """Which of the three outcomes a steer receipt (`receipts.steered`) says (after
    the line that says a released agent was started again, if any)."""
    said = receipt.removeprefix(receipts.woken(name) + " ")
    for outcome in OUTCOMES:
        if said == receipts.steered(name, outcome):
            return outcome
    return None


@dataclass(frozen=True, slots=True)
class SentMessage:
    """One message and what became of it: the agent's receipt (`outcome`), or the
    refusal that kept it from the agent (`refused`), or neither yet (`sending`)."""

    node_id: str
    name: str
    text: str
    outcome: str | None = None
    refused: str | None = None

    def delivered(self, view: NodeView | None) -> bool:
        """The agent's session holds the text: the model has it in its context."""
        return (
            view is not None
            and self.refused is None
            and self.outcome != "intercepted"
            and self.text in view.progress.recent_user_texts
        )

    def line(self, view: NodeView | None) -> str:
        """`→ worker-1 · "use the v2 api" · queued for its next turn boundary`."""
        shown = " ".join(self.text.split())
        if len(shown) > _SHOWN_CHARS:
            shown = shown[: _SHOWN_CHARS - 1] + "…"
        head = f"→ {self.name} · \u201c{shown}\u201d · "
        if self.refused is not None:
            return head + "not sent: " + self.refused.splitlines()[0]
        if self.delivered(view):
            return head + "delivered (its session has it)"
        said = {
            "queued": "queued for its next turn boundary",
            "accepted": "accepted (it was idle: a turn started)",
            "intercepted": "intercepted (taken by an interrupt; no turn started)",
        }
        if self.outcome is None:
            return head + "sending…"
        return head + said.get(self.outcome, self.outcome)


class MessageHistory:
    """The messages sent in this session, oldest first: in memory, and appended to
    `<run>/message-history.jsonl` so a reopened session recalls them too. A file that
    cannot be read or written costs the history, never the message."""

    def __init__(self, run_dir: Path | None, *, writable: bool = True) -> None:
        self.path = None if run_dir is None else run_dir / HISTORY_FILE
        self.entries: list[str] = self._load()
        self.writable = writable  # False: recalled, never appended to (a read-only view)

    def _load(self) -> list[str]:
        if self.path is None:
            return []
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        entries: list[str] = []
        for line in lines[-HISTORY_KEPT:]:
            with contextlib.suppress(ValueError):
                text = json.loads(line).get("text")
                if isinstance(text, str) and text:
                    entries.append(text)
        return entries

    def add(self, text: str) -> None:
        if self.entries and self.entries[-1] == text:
            return  # the same message again is one entry, as a shell's history
        self.entries.append(text)
        del self.entries[:-HISTORY_KEPT]
        if self.path is None or not self.writable:
            return
        line = json.dumps({"text": text}, ensure_ascii=False) + "\n"
        with contextlib.suppress(OSError):
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, line.encode("utf-8", "surrogatepass"))
            finally:
                os.close(fd)
