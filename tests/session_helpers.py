"""Build pi v3 session lines for the session tests (no fixtures files needed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FIXTURES = Path("/work/shared/fixtures/pi-sessions")
V3_FIXTURE = FIXTURES / "prpilot_real_pi_transcript_v3.jsonl"
V1_FIXTURE = FIXTURES / "pi-mono_large-session_v1_first7lines.jsonl"

BASE_MS = 1_786_622_042_000  # 2026-08-13T11:54:02Z


def iso(ms: int) -> str:
    return (
        datetime.fromtimestamp(ms / 1000, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")


def header(session_id: str = "s-1", version: int | None = 3) -> dict[str, Any]:
    h: dict[str, Any] = {"type": "session", "id": session_id, "timestamp": iso(BASE_MS)}
    if version is not None:
        h["version"] = version
    h["cwd"] = "/tmp/x"
    return h


def message_entry(
    eid: str, parent: str | None, at_ms: int, message: dict[str, Any]
) -> dict[str, Any]:
    """A pi `message` entry: the tree fields around one user/assistant/toolResult message."""
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": iso(at_ms),
        "message": message,
    }


def user(eid: str, parent: str | None, text: str, at_ms: int) -> dict[str, Any]:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": at_ms}
    return message_entry(eid, parent, at_ms, message)


def assistant(
    eid: str,
    parent: str | None,
    *,
    start_ms: int,
    end_ms: int,
    output: int = 10,
    text: str = "",
    tools: list[tuple[str, str]] | None = None,
    stop: str = "stop",
    duration_ms: int | None = None,
    cost: float = 0.0,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for call_id, name in tools or []:
        content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": {"a": 1}})
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "model": "m-1",
        "usage": {
            "input": 1,
            "output": output,
            "cacheRead": 2,
            "cacheWrite": 3,
            "cost": {"total": cost},
        },
        "stopReason": stop,
        "timestamp": start_ms,
    }
    if duration_ms is not None:
        message["durationMs"] = duration_ms
    return message_entry(eid, parent, end_ms, message)


def tool_result(eid: str, parent: str | None, call_id: str, at_ms: int) -> dict[str, Any]:
    message = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "bash",
        "content": [{"type": "text", "text": "ok"}],
        "isError": False,
        "timestamp": at_ms,
    }
    return message_entry(eid, parent, at_ms, message)


def conversation(turns: int, *, session_id: str = "s-1", text: str = "done") -> bytes:
    """A linear v3 session: per turn a user line, a tool-calling assistant, a result,
    and a final assistant text (the last one ends with a verdict line)."""
    out = [line(header(session_id))]
    parent: str | None = None
    t = BASE_MS
    for i in range(turns):
        out.append(line(user(f"u{i}", parent, f"task {i} — ünïcödé ✓", t)))
        out.append(
            line(
                assistant(
                    f"a{i}",
                    f"u{i}",
                    start_ms=t + 5,
                    end_ms=t + 1005,
                    output=40,
                    tools=[(f"c{i}", "bash")],
                    stop="toolUse",
                )
            )
        )
        out.append(line(tool_result(f"r{i}", f"a{i}", f"c{i}", t + 2000)))
        final = f'{text} {i}\n{{"ok": true, "reason": "turn {i}"}}'
        out.append(
            line(
                assistant(
                    f"f{i}", f"r{i}", start_ms=t + 2001, end_ms=t + 2501, output=20, text=final
                )
            )
        )
        parent = f"f{i}"
        t += 10_000
    return b"".join(out)
