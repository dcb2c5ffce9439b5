"""Lazy pages of a session file for the detail overlay's Transcript tab (SPEC §7.2).

A session file can be 50 MB; the overlay must open instantly. `TranscriptPager` indexes
line boundaries only as far as the page asked for (newlines found with numpy, a
megabyte at a time) and decodes only the lines of that page. One item per line, so page
N is a slice of the line index; bad lines show as `invalid` items rather than vanish.

The overlay opens at the newest entries: `index_more(budget)` extends the index a
bounded number of bytes per call, so the caller can walk a 50 MB file to its end in
steps and yield to the event loop between them; `stale()` is the one-stat check that
the file grew (or was replaced) since, and `generation` tells that the index restarted.

The tab shows the conversation and hides the agents' internal records unless asked
(`legion_tui.session.conversation`): as each step is indexed, its lines are sorted into
conversation or not (mostly from their leading bytes, without decoding them), and the
numbers of the conversation lines kept in a second index — so the rows the tab shows
map to lines at once (`conversation_page`), and `page` still gives every line.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from legion_tui.inert import inert
from legion_tui.regular_files import open_regular
from legion_tui.session.conversation import (
    PAD,
    conversation,
    conversation_lines,
    decode_line,
    first_format,
)
from legion_tui.session.entries import (
    AssistantEntry,
    Entry,
    HeaderEntry,
    OtherEntry,
    ToolResultEntry,
    UserEntry,
)
from legion_tui.session.formats import Format
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
    said: bool = True  # conversation (shown by default), or an internal record


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


def render_line(number: int, raw: bytes, fmt: Format = "pi") -> TranscriptItem:
    """One line of a session file of format `fmt` as a conversation item (never raises).

    Each line is read alone (a page is random access): a translator's cross-line state —
    Claude Code's request times, Codex's usage records — is not needed to show it."""
    decoded = decode_line(raw, fmt)
    if isinstance(decoded, str):
        return TranscriptItem(number, "invalid" if decoded else "blank", decoded,
                              said=bool(decoded))  # fmt: skip
    item = _item(number, decoded.value, decoded.entry)
    said = conversation(fmt, decoded)
    return item if said else replace(item, said=False)


def _item(number: int, value: dict[str, Any], entry: Entry | None) -> TranscriptItem:
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


def _read_into(fd: int, into: memoryview, offset: int) -> int:
    """Read at `offset` straight into `into` (no bytes object made and copied)."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [into], offset)
    chunk = os.pread(fd, len(into), offset)  # a platform without preadv
    into[: len(chunk)] = chunk
    return len(chunk)


class TranscriptPager:
    """Pages of conversation items from one session file, indexed on demand."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._ends = array("q")  # offset of the b"\n" that ends each known line
        self._said = array("q")  # numbers of the known lines that are conversation
        self._scanned = 0  # bytes of the file searched for newlines so far
        # The line still being written (bytes past the last newline), kept to sort it
        # once its newline comes; past MAX_LINE_BYTES only that it is too long (shown).
        self._partial = b""
        self._overlong = False
        self._buffer = bytearray()  # a step's bytes (reused: allocating 4 MiB is not free)
        self._identity: tuple[int, int] | None = None
        self.at_end = False  # the index reached the end of the file (as of the last call)
        self.generation = 0  # bumped when the index starts again (file replaced, truncated)
        self.format: Format | None = None  # told by the first line, once it is indexed

    def count_known(self) -> int:
        """Lines indexed so far (grows as pages further in are asked for)."""
        return len(self._ends)

    def count_said(self) -> int:
        """Of those, the conversation lines: the rows the tab shows by default."""
        return len(self._said)

    def stale(self) -> bool:
        """The file has bytes the index has not scanned, or is another file (one stat).
        An unreadable file counts as stale: the next read says why."""
        try:
            st = os.stat(self.path)
        except OSError:
            return True
        return (st.st_dev, st.st_ino) != self._identity or st.st_size != self._scanned

    def index_more(self, budget: int) -> bool:
        """Index up to `budget` more bytes (at least one chunk; read and sorted in one
        go); True once the index reached the end of the file."""
        fd = open_regular(self.path)
        try:
            self._check_identity(fd)
            size = max(budget, SCAN_CHUNK)
            before = self._scanned
            # A short read (or none) reached the end of the file as it is now.
            if not self._scan(fd, size) or self._scanned - before < size:
                self.at_end = True
            return self.at_end
        finally:
            os.close(fd)

    def page(self, index: int, size: int) -> list[TranscriptItem]:
        """Items [index·size, (index+1)·size) of every line. Reads only up to the end of
        that page."""
        return self._page(index, size, conversation=False)

    def conversation_page(self, index: int, size: int) -> list[TranscriptItem]:
        """The same of the conversation lines only: row r is the r-th of them."""
        return self._page(index, size, conversation=True)

    def _page(self, index: int, size: int, *, conversation: bool) -> list[TranscriptItem]:
        if index < 0 or size <= 0:
            return []
        first = index * size

        def indexed() -> int:
            return len(self._said) if conversation else len(self._ends)

        fd = open_regular(self.path)
        try:
            self._check_identity(fd)
            self._index_until(fd, lambda: indexed() >= first + size)
            numbers = (self._said[first:first + size] if conversation
                       else range(first, min(first + size, len(self._ends))))  # fmt: skip
            return [self._item(fd, number) for number in numbers]
        finally:
            os.close(fd)

    def _item(self, fd: int, number: int) -> TranscriptItem:
        start = self._ends[number - 1] + 1 if number > 0 else 0
        end = self._ends[number]
        if end - start > MAX_LINE_BYTES:
            return TranscriptItem(number, "invalid", f"line too long ({end - start} bytes)")
        raw = os.pread(fd, end - start, start).rstrip(b"\r")
        return render_line(number, raw, self.format or "pi")

    def _check_identity(self, fd: int) -> None:
        st = os.fstat(fd)
        identity = (st.st_dev, st.st_ino)
        if identity != self._identity or st.st_size < self._scanned:
            # Another file, or truncated: the old index describes nothing here.
            if self._identity is not None:
                self.generation += 1
            self._ends = array("q")
            self._said = array("q")
            self._scanned = 0
            self._partial = b""
            self._overlong = False
            self._identity = identity
            self.format = None
        self.at_end = False

    def _index_until(self, fd: int, enough: Callable[[], bool]) -> None:
        while not enough():
            if not self._scan(fd, SCAN_CHUNK):
                self.at_end = True
                return

    def _scan(self, fd: int, size: int) -> bool:
        """Index the next `size` bytes' newlines and sort the lines they end into
        conversation or not; False at the end of the file."""
        # One buffer: the line carried over, then the bytes read (straight into place),
        # then the zeros the classifier may read past the last line.
        keep = len(self._partial)
        if len(self._buffer) < keep + size + PAD:
            self._buffer = bytearray(keep + size + PAD)  # kept: a step reuses it
        buf = self._buffer
        buf[:keep] = self._partial
        got = _read_into(fd, memoryview(buf)[keep : keep + size], self._scanned)
        if not got:
            return False
        buf[keep + got : keep + got + PAD] = bytes(PAD)  # zeros after the last line
        data = np.frombuffer(buf, dtype=np.uint8)
        newlines = np.flatnonzero(data[keep : keep + got] == 0x0A) + keep
        first = len(self._ends)
        self._ends.extend((newlines + (self._scanned - keep)).tolist())
        self._scanned += got
        if not len(newlines):
            self._keep_partial(bytes(buf[keep : keep + got]))
            return True
        said: list[int] = []
        number = first
        starts = np.concatenate([[0], newlines[:-1] + 1])
        ends = newlines
        if self._overlong:
            # The line that was too long to keep is whole now: shown, as invalid.
            said.append(first)
            starts, ends, number = starts[1:], ends[1:], first + 1
        self._partial, self._overlong = b"", False
        if self.format is None:
            self.format = "pi" if number != 0 else first_format(buf[: int(ends[0])])
        if len(ends):
            shown = conversation_lines(buf, starts, ends, self.format)
            said.extend((np.flatnonzero(shown) + number).tolist())
        self._said.extend(said)
        self._keep_partial(bytes(buf[int(newlines[-1]) + 1 : keep + got]))
        return True

    def _keep_partial(self, tail: bytes) -> None:
        """Keep the bytes of the line still being written (bounded: past MAX_LINE_BYTES
        it is shown as too long without being read, so its bytes need not be kept)."""
        if self._overlong or not tail:
            return
        if len(self._partial) + len(tail) > MAX_LINE_BYTES:
            self._partial, self._overlong = b"", True
        else:
            self._partial += tail
