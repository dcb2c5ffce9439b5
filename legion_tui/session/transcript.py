"""Lazy pages of a session file for the detail overlay's Transcript tab (SPEC §7.2).

A session file can be 50 MB; the overlay must open instantly. `TranscriptPager` indexes
line boundaries only as far as the page asked for (newlines found with numpy, a
megabyte at a time) and decodes only the lines of that page. One item per line, so page
N is a slice of the line index; bad lines show as `invalid` items rather than vanish.

The overlay opens at the newest entries: `index_more(budget)` extends the index a
bounded number of bytes per call, so the caller can walk a 50 MB file to its end in
steps and yield to the event loop between them; `stale()` is the one-stat check that
the file grew (or was replaced) since, and `generation` tells that the index restarted.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from legion_tui.inert import inert
from legion_tui.regular_files import open_regular
from legion_tui.session import figures
from legion_tui.session.entries import (
    AssistantEntry,
    Entry,
    HeaderEntry,
    OtherEntry,
    ToolResultEntry,
    UserEntry,
)
from legion_tui.session.figures import BadFigure
from legion_tui.session.formats import Format, detect, translator
from legion_tui.session.reader import MAX_LINE_BYTES

__all__ = ["TranscriptItem", "TranscriptPager"]

SCAN_CHUNK = 1024 * 1024
TEXT_LIMIT = 2000  # characters of text kept per item: a summary, not the whole output
ARGS_LIMIT = 160


@dataclass(frozen=True, slots=True)
class TranscriptItem:
    line: int  # 0-based line number in the file
    role: str  # "user", "assistant", "toolResult", "session", "invalid", or the entry type
    text: str
    tools: tuple[str, ...] = ()  # assistant tool calls as `name(args…)`; toolResult: its tool
    at: float | None = None  # epoch seconds of the entry
    is_error: bool = False


def _clip(text: str, limit: int) -> str:
    """Shown text: inert (legion_tui.inert) and at most `limit` characters."""
    text = inert(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _args_summary(arguments: Any) -> str:
    """`command="ls -la", timeout=30`: the call's arguments on one short line."""
    try:
        if isinstance(arguments, dict):
            rendered = ", ".join(
                f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items()
            )
        else:
            rendered = json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        rendered = repr(arguments)
    return _clip(rendered.replace("\n", " "), ARGS_LIMIT)


def _main_entry(entries: Sequence[Entry]) -> Entry | None:
    """The entry a line is shown as: its conversation part when it has one."""
    for entry in entries:
        if not isinstance(entry, OtherEntry):
            return entry
    return entries[0] if entries else None


def render_line(number: int, raw: bytes, fmt: Format = "pi") -> TranscriptItem:
    """One line of a session file of format `fmt` as a conversation item (never raises).

    Each line is read alone (a page is random access): a translator's cross-line state —
    Claude Code's request times, Codex's usage records — is not needed to show it."""
    if len(raw) > MAX_LINE_BYTES:
        return TranscriptItem(number, "invalid", f"line too long ({len(raw)} bytes)")
    if not raw.strip():
        return TranscriptItem(number, "blank", "")
    try:
        value: Any = figures.loads(raw.decode("utf-8"))
        if not isinstance(value, dict):
            return TranscriptItem(number, "invalid", "not a JSON object")
        entry = _main_entry(translator(fmt).entries(value))
    except BadFigure as err:
        return TranscriptItem(number, "invalid", f"skipped: {err}")
    except (UnicodeDecodeError, ValueError, RecursionError):
        return TranscriptItem(number, "invalid", "not valid JSON")
    if entry is None:
        kind = value.get("type")
        return TranscriptItem(number, kind if isinstance(kind, str) else "other", "")
    at = entry.at_ms / 1000.0 if entry.at_ms is not None else None
    if isinstance(entry, HeaderEntry):
        return TranscriptItem(number, "session", f"session v{entry.version}", at=at)
    if isinstance(entry, AssistantEntry):
        tools = tuple(inert(f"{c.name}({_args_summary(c.arguments)})") for c in entry.tool_calls)
        text = entry.text
        message = value.get("message")
        if not text.strip() and isinstance(message, dict):
            error = message.get("errorMessage")  # pi's failed call
            text = error if isinstance(error, str) else text
        if not text.strip() and not tools and entry.output:
            text = f"({entry.output} output tokens)"  # a usage-only record (Codex's)
        return TranscriptItem(
            number,
            "assistant",
            _clip(text, TEXT_LIMIT),
            tools,
            at,
            is_error=entry.stop_reason == "error",
        )
    if isinstance(entry, UserEntry):
        text = entry.text or ("(turn aborted)" if entry.aborted else "")
        return TranscriptItem(number, "user", _clip(text, TEXT_LIMIT), at=at)
    if isinstance(entry, ToolResultEntry):
        return TranscriptItem(
            number,
            "toolResult",
            _clip(entry.text, TEXT_LIMIT),
            (inert(entry.tool_name),),
            at,
            is_error=entry.is_error,
        )
    assert isinstance(entry, OtherEntry)
    text = entry.model if entry.model is not None else entry.text
    return TranscriptItem(number, entry.type, _clip(text or "", TEXT_LIMIT), at=at)


class TranscriptPager:
    """Pages of conversation items from one session file, indexed on demand."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._ends = array("q")  # offset of the b"\n" that ends each known line
        self._scanned = 0  # bytes of the file searched for newlines so far
        self._identity: tuple[int, int] | None = None
        self.at_end = False  # the index reached the end of the file (as of the last call)
        self.generation = 0  # bumped when the index starts again (file replaced, truncated)
        self.format: Format | None = None  # told by the first line, once it is indexed

    def count_known(self) -> int:
        """Lines indexed so far (grows as pages further in are asked for)."""
        return len(self._ends)

    def stale(self) -> bool:
        """The file has bytes the index has not scanned, or is another file (one stat).
        An unreadable file counts as stale: the next read says why."""
        try:
            st = os.stat(self.path)
        except OSError:
            return True
        return (st.st_dev, st.st_ino) != self._identity or st.st_size != self._scanned

    def index_more(self, budget: int) -> bool:
        """Index up to `budget` more bytes (whole chunks, at least one); True once the
        index reached the end of the file."""
        fd = open_regular(self.path)
        try:
            self._check_identity(fd)
            limit = self._scanned + max(budget, 1)
            while self._scanned < limit:
                if not self._scan_chunk(fd):
                    self.at_end = True
                    break
            return self.at_end
        finally:
            os.close(fd)

    def page(self, index: int, size: int) -> list[TranscriptItem]:
        """Items [index·size, (index+1)·size). Reads only up to the end of that page."""
        if index < 0 or size <= 0:
            return []
        first = index * size
        wanted = first + size
        fd = open_regular(self.path)
        try:
            self._check_identity(fd)
            self._index_until(fd, wanted)
            items = []
            for number in range(first, min(wanted, len(self._ends))):
                start = self._ends[number - 1] + 1 if number > 0 else 0
                end = self._ends[number]
                if end - start > MAX_LINE_BYTES:
                    items.append(
                        TranscriptItem(number, "invalid", f"line too long ({end - start} bytes)")
                    )
                    continue
                raw = os.pread(fd, end - start, start).rstrip(b"\r")
                items.append(render_line(number, raw, self._format_of(fd)))
            return items
        finally:
            os.close(fd)

    def _format_of(self, fd: int) -> Format:
        """The file's format, from its first line (pi until that line is indexed)."""
        if self.format is None and self._ends:
            first = os.pread(fd, min(self._ends[0], MAX_LINE_BYTES), 0)
            try:
                value: Any = json.loads(first.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                value = None
            self.format = detect(value) if isinstance(value, dict) else "pi"
        return self.format or "pi"

    def _check_identity(self, fd: int) -> None:
        st = os.fstat(fd)
        identity = (st.st_dev, st.st_ino)
        if identity != self._identity or st.st_size < self._scanned:
            # Another file, or truncated: the old index describes nothing here.
            if self._identity is not None:
                self.generation += 1
            self._ends = array("q")
            self._scanned = 0
            self._identity = identity
            self.format = None
        self.at_end = False

    def _index_until(self, fd: int, lines: int) -> None:
        while len(self._ends) < lines:
            if not self._scan_chunk(fd):
                self.at_end = True
                return

    def _scan_chunk(self, fd: int) -> bool:
        """Index the next chunk's newlines; False at the end of the file."""
        chunk = os.pread(fd, SCAN_CHUNK, self._scanned)
        if not chunk:
            return False
        newlines = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 0x0A)
        self._ends.extend((newlines + self._scanned).tolist())
        self._scanned += len(chunk)
        return True
