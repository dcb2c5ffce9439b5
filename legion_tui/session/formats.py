"""Which agent wrote a session file, and the translator that reads its lines as entries.

Three agents write the session files legion tails: pi (notes/pi-format.md), Claude Code
(`<config>/projects/<slug>/<id>.jsonl`) and Codex (`<CODEX_HOME>/sessions/…/rollout-*.jsonl`;
notes/agent-clis.md). Their lines differ, but each says the same things — a model call's
text, tool calls and usage, a tool's result, the user's prompt — so each is translated
into the one set of entries (`session.entries`) and folded by the one `SessionFold`.

The format is told by the file's first JSON object (every agent writes one kind of file
from its first line) and kept for the file's life. A translator may keep state across
lines (Claude Code's request start times, Codex's previous input item) and may turn one
line into several entries or none; it raises only `figures.BadFigure` (the reader counts
the line as skipped).

`recognise` says whether a file is a session at all (`legion inspect`): any JSON-lines
file would otherwise read as "pi v3 · 0 entries · 207 skipped lines"; and the agents'
own stdout — Claude Code's stream-json, Codex's `exec --json` and app-server protocol —
is named as what it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from legion_tui.session.entries import Entry, interpret

__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "HEAD_LINES",
    "Format",
    "PiLines",
    "Translator",
    "detect",
    "recognise",
    "translator",
]

Format = Literal["pi", "claude", "codex"]
HEAD_LINES = 64  # the lines `recognise` looks at for a session header
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


# The stdout of each CLI, which is not its session file: where that file is instead.
def _claude_stdout(obj: dict[str, Any]) -> bool:
    return obj.get("type") in ("system", "result") and "session_id" in obj


def _codex_exec_stdout(obj: dict[str, Any]) -> bool:
    return str(obj.get("type", "")).split(".")[0] in ("thread", "turn", "item")


def _json_rpc(obj: dict[str, Any]) -> bool:
    return "method" in obj or ("id" in obj and ("result" in obj or "error" in obj))


_STDOUTS = (
    (_claude_stdout,
     "Claude Code's stream-json output (its stdout), not a session file: Claude Code writes "
     "its session under ~/.claude/projects/<project>/<session id>.jsonl"),
    (_codex_exec_stdout,
     "Codex's `exec --json` output (its stdout), not a session file: Codex writes its "
     "rollout under ~/.codex/sessions/…/rollout-*.jsonl"),
    (_json_rpc, "a JSON-RPC stream (Codex's app-server, pi's RPC), not a session file"),
)  # fmt: skip


def _unwrapped(obj: dict[str, Any]) -> dict[str, Any]:
    """A capture's line (`{"rx": t, "ev" | "msg" | "sent": …}`) as the message it holds."""
    for key in ("ev", "msg", "sent"):
        if "rx" in obj and isinstance(obj.get(key), dict):
            inner: dict[str, Any] = obj[key]
            return inner
    return obj


def recognise(objects: Sequence[dict[str, Any]]) -> str | None:
    """Why the file whose first JSON objects are `objects` is not a session, or None."""
    for obj in objects:
        if obj.get("type") == "session" or "sessionId" in obj or (
            obj.get("type") == "session_meta" and isinstance(obj.get("payload"), dict)
        ):
            return None  # pi's header, a Claude Code record, a Codex rollout's meta
    messages = [_unwrapped(obj) for obj in objects]
    for looks_like, said in _STDOUTS:
        if any(looks_like(obj) for obj in messages):
            return said
    return f"not a session file: no session header in its first {HEAD_LINES} lines"
