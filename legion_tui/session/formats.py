"""Which agent wrote a session file, and the translator that reads its lines as entries.

Three agents write the session files legion tails: pi (notes/pi-format.md), Claude Code
(`<config>/projects/<slug>/<id>.jsonl`) and Codex (`<CODEX_HOME>/sessions/…/rollout-*.jsonl`;
notes/agent-clis.md). Their lines differ, but each says the same things — a model call's
text, tool calls and usage, a tool's result, the user's prompt — so each is translated
into the one set of entries (`session.entries`) and folded by the one `SessionFold`.

The format is told by the file's first JSON object (every agent writes one kind of file
from its first line) and kept for the file's life. A translator may keep state across
lines (Claude Code's request start times, Codex's previous input item) and may turn one
line into several entries or none; it never raises on any JSON object.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from legion_tui.session.entries import Entry, interpret

__all__ = ["FORMATS", "FORMAT_NAMES", "Format", "PiLines", "Translator", "detect", "translator"]

Format = Literal["pi", "claude", "codex"]
FORMATS: tuple[Format, ...] = ("pi", "claude", "codex")
FORMAT_NAMES: dict[Format, str] = {"pi": "pi", "claude": "Claude Code", "codex": "Codex"}

# Record types only Claude Code writes (its lines carry `sessionId` too, most of them).
_CLAUDE_TYPES = frozenset(
    {"queue-operation", "user", "assistant", "attachment", "api-request", "summary", "last-prompt"}
)


class Translator(Protocol):
    def entries(self, obj: dict[str, Any]) -> Sequence[Entry]:
        """The entries one decoded line (a JSON object) says; BadFigure (figures.py)
        for a figure no model call reports, and nothing else."""
        ...


class PiLines:
    """pi's lines are the entries' own shape: one line, one entry, no state."""

    def entries(self, obj: dict[str, Any]) -> Sequence[Entry]:
        return (interpret(obj),)


def detect(obj: dict[str, Any]) -> Format:
    """The format of a file whose first JSON object is `obj` (pi when nothing else fits)."""
    if isinstance(obj.get("payload"), dict) and isinstance(obj.get("type"), str):
        return "codex"  # {timestamp, type, payload}: a Codex rollout line
    if "sessionId" in obj or obj.get("type") in _CLAUDE_TYPES:
        return "claude"
    return "pi"


def translator(fmt: Format) -> Translator:
    """A fresh translator for a file of format `fmt`."""
    if fmt == "claude":
        from legion_tui.session.claude_code import ClaudeLines

        return ClaudeLines()
    if fmt == "codex":
        from legion_tui.session.codex import CodexLines

        return CodexLines()
    return PiLines()
