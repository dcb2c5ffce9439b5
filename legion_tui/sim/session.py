"""The simulated agent's session: a real pi v3 session file, one whole line per entry
(`SessionWriter`), and the transcript written into it (`Transcript`): user, assistant and
tool-result messages with pi's usage accounting, each also told to the agent's
controller as pi's RPC events (message_end, tool_execution_end)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from legion_tui.sim.clock import SimClock
from legion_tui.sim.script import MODEL, PROVIDER, ToolStep, price

__all__ = ["API", "Emit", "SessionWriter", "Transcript", "iso", "ms"]

Emit = Callable[[dict[str, Any]], None]

API = "anthropic-messages"


def iso(t: float) -> str:
    """pi's `new Date().toISOString()`: milliseconds and a Z."""
    stamp = datetime.fromtimestamp(t, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def ms(t: float) -> int:
    return round(t * 1000)


class SessionWriter:
    """Appends pi v3 entries, each one whole line in one O_APPEND write.

    The file is opened per append rather than held: a demo runs up to 1000 in-process
    agents, and 1000 idle descriptors (next to the tailer's own) would hit a default
    1024-descriptor limit for the sake of saving one open per entry.
    """

    def __init__(self, path: Path, rng: random.Random, clock: SimClock, cwd: Path) -> None:
        self.path = path
        self.rng = rng
        self.clock = clock
        self.cwd = cwd
        self.leaf: str | None = None
        self._open = False

    def open(self, *, resume: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existing = resume and self.path.exists() and self.path.stat().st_size > 0
        if existing:
            self.leaf = last_entry_id(self.path)
        self._open = True
        if not existing:
            session_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            self._write(
                {
                    "type": "session",
                    "version": 3,
                    "id": session_id,
                    "timestamp": iso(self.clock.now()),
                    "cwd": str(self.cwd),
                }
            )
            self.append("model_change", provider=PROVIDER, modelId=MODEL)
            self.append("thinking_level_change", thinkingLevel="off")

    def append(self, entry_type: str, **fields: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "type": entry_type,
            "id": f"{self.rng.getrandbits(32):08x}",
            "parentId": self.leaf,
            "timestamp": iso(self.clock.now()),
            **fields,
        }
        self._write(entry)
        self.leaf = entry["id"]
        return entry

    def _write(self, entry: dict[str, Any]) -> None:
        assert self._open, "open() first"
        data = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Kept for symmetry with open(); nothing is held between appends."""


def last_entry_id(path: Path) -> str | None:
    leaf: str | None = None
    with open(path, "rb") as fh:
        for raw in fh:
            with contextlib.suppress(ValueError):
                entry = json.loads(raw)
                if (
                    isinstance(entry, dict)
                    and isinstance(entry.get("id"), str)
                    and entry.get("type") != "session"
                ):
                    leaf = entry["id"]
    return leaf


class Transcript:
    """What the agent says, in its file and to its controller, with the token accounting
    pi's usage reports: the context (system prompt + tools, then all said) is read from
    cache, and what was added since the last call is written to it."""

    def __init__(
        self, writer: SessionWriter, rng: random.Random, clock: SimClock, emit: Emit
    ) -> None:
        self.writer = writer
        self._rng = rng
        self._clock = clock
        self._emit = emit
        self._context = rng.randint(3000, 9000)  # system prompt + tools, cached
        self._added = 0
        self.messages = 0

    def append(self, message: dict[str, Any]) -> None:
        self.writer.append("message", message=message)
        self.messages += 1
        self._emit({"type": "message_end", "message": message})

    def user(self, text: str) -> None:
        self.append(
            {
                "role": "user",
                "content": [{"type": "text", "text": text}],
                "timestamp": ms(self._clock.now()),
            }
        )
        self._added += max(1, len(text) // 4)

    def _usage(self, output: int) -> dict[str, Any]:
        fresh = self._rng.randint(2, 60)
        cache_write = self._added
        usage: dict[str, Any] = {
            "input": fresh,
            "output": output,
            "cacheRead": self._context,
            "cacheWrite": cache_write,
            "totalTokens": fresh + output + self._context + cache_write,
            "cost": price(fresh, output, self._context, cache_write),
        }
        self._context += cache_write + output + fresh
        self._added = 0
        return usage

    def assistant(
        self,
        content: list[dict[str, Any]],
        output: int,
        stop_reason: str,
        started: float,
        error: str | None = None,
    ) -> dict[str, Any]:
        """An assistant message (not appended yet): one model call's answer and usage."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": API,
            "provider": PROVIDER,
            "model": MODEL,
            "usage": self._usage(output),
            "stopReason": stop_reason,
            "timestamp": ms(started),
            "durationMs": ms(self._clock.now()) - ms(started),
        }
        if error is not None:
            message["errorMessage"] = error
        return message

    def tool_result(
        self, call_id: str, tool: ToolStep, text: str, is_error: bool, t0: float
    ) -> dict[str, Any]:
        """A tool call's result, appended and announced (tool_execution_end)."""
        now = self._clock.now()
        result = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": tool.name,
            "content": [{"type": "text", "text": text}],
            "isError": is_error,
            "timestamp": ms(now),
            "durationMs": ms(now) - ms(t0),
        }
        self.append(result)
        self._added += max(1, len(text) // 4)
        self._emit(
            {
                "type": "tool_execution_end",
                "toolCallId": call_id,
                "toolName": tool.name,
                "result": {"content": result["content"], "details": {}},
                "isError": is_error,
                "durationMs": result["durationMs"],
            }
        )
        return result
