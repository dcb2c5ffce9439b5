"""What a user's turn in Claude Code's or Codex's own UI leaves in the session, written by
a stand-in where that UI cannot start (no terminal UI runs offline here; issue 31's
tests ask for "a recorded stand-in").

Each stand-in appends one user message and one answer to the agent's own session file in
the agent's own format, cloned from the entries the real agent wrote earlier in the same
file (so every field it expects is there), chained after the last of them. The test then
checks that the real agent, taken back on that session, sends both to the model: the
session's gain was folded, not skipped.
"""

from __future__ import annotations

import copy
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["ui_turn"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _last(entries: list[dict[str, Any]], match: Any) -> dict[str, Any]:
    found = [e for e in entries if match(e)]
    assert found, "the real agent wrote no entry to clone"
    return copy.deepcopy(found[-1])


def _claude(entries: list[dict[str, Any]], said: str, answer: str) -> list[dict[str, Any]]:
    """A prompt (string content) and an end_turn answer, on the uuid chain's leaf."""
    leaf = _last(entries, lambda e: "uuid" in e)  # (attachments and system entries chain too)
    user = _last(entries, lambda e: e.get("type") == "user"
                 and isinstance(e.get("message", {}).get("content"), str))  # fmt: skip
    user.update(parentUuid=leaf["uuid"], uuid=str(uuid.uuid4()), timestamp=_now())
    user["message"]["content"] = said
    reply = _last(entries, lambda e: e.get("type") == "assistant")
    reply.update(parentUuid=user["uuid"], uuid=str(uuid.uuid4()), timestamp=_now())
    reply["message"].update(id=f"msg_{uuid.uuid4().hex[:20]}", stop_reason="end_turn",
                            content=[{"type": "text", "text": answer}])  # fmt: skip
    return [user, reply]


def _codex(entries: list[dict[str, Any]], said: str, answer: str) -> list[dict[str, Any]]:
    """A user message and an assistant message as response items, the rollout's ordinals
    going on."""

    def message(role: str) -> dict[str, Any]:
        return _last(entries, lambda e: e.get("type") == "response_item"
                     and e["payload"].get("type") == "message"
                     and e["payload"].get("role") == role)  # fmt: skip

    ordinal = max((e.get("ordinal", -1) for e in entries), default=-1)
    user, reply = message("user"), message("assistant")
    for n, (entry, kind, text) in enumerate(
        ((user, "input_text", said), (reply, "output_text", answer)), start=1
    ):
        entry.update(timestamp=_now(), ordinal=ordinal + n)
        entry["payload"].update(id=f"msg_{uuid.uuid4()}",
                                content=[{"type": kind, "text": text}])  # fmt: skip
    return [user, reply]


def ui_turn(kind: str, session: Path, said: str, answer: str) -> int:
    """Append the turn to `session` (the agent's own file); the entries written."""
    entries = _entries(session)
    added = (_claude if kind == "claude" else _codex)(entries, said, answer)
    with session.open("a", encoding="utf-8") as fh:
        for entry in added:
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return len(added)
