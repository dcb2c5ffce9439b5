"""The one LF framing of every JSON-lines stream legion reads: agents' stdout (pi's RPC,
Claude Code's stream-json, Codex's app-server, a dry start's probe), the supervisor's
socket in both directions (`intake.RequestFramer`, `client`), the watchdog's pipe.

Framing is strict LF: bytes are split on b"\\n" (never a text readline, which would also
split on U+2028/U+2029 inside a JSON string). A line may arrive in many chunks; only the
new chunk is searched, and the unfinished line is kept as a list of pieces joined once
when its newline comes — linear in the stream's size. A line over its bound is dropped
as it streams (memory stays bounded) and said so: `LineSplitter` counts it, a subclass
may answer it (`LineFramer._admit`).

No asyncio at import: the control verbs' blocking client frames its replies here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "MAX_LINE_BYTES",
    "LineFramer",
    "LineSplitter",
    "chunks_of",
    "lines_of",
    "nonblank",
    "split_lines",
]

# pi's largest lines are message_end / tool results carrying a whole tool output; 16 MiB
# is far above any real one and still a bounded buffer.
MAX_LINE_BYTES = 16 * 1024 * 1024
READ_CHUNK = 65536

ItemT = TypeVar("ItemT")


def split_lines(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Whole LF-terminated records (one trailing CR stripped) and the unfinished rest, of
    a buffer held whole (the reference `LineSplitter` is tested against)."""
    *lines, rest = buffer.split(b"\n")
    return [line.removesuffix(b"\r") for line in lines], rest


class LineFramer(Generic[ItemT]):
    """What a stream's lines become (`ItemT`): the framing, with two hooks — `_admit`
    (may the unfinished line grow to this size? refuse it: the rest of it is skipped to
    its newline) and `_finished` (a whole line's item)."""

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self._size = 0
        self._dropping = False  # inside a refused line: skip to its newline

    @property
    def pending(self) -> bool:
        """Bytes of an unfinished line came (kept, or being skipped)."""
        return bool(self._pieces) or self._dropping

    def feed(self, chunk: bytes) -> list[ItemT]:
        """The items of the lines `chunk` completes or refuses, in stream order."""
        out: list[ItemT] = []
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            if piece and not self._dropping:
                if self._admit(self._size + len(piece), out):
                    self._pieces.append(piece)
                    self._size += len(piece)
                else:
                    self._discard()
                    self._dropping = True
            if newline < 0:
                return out
            if not self._dropping:
                out.append(self._finished(b"".join(self._pieces)))
            self._discard()
            self._dropping = False
            start = newline + 1

    def _admit(self, size: int, out: list[ItemT]) -> bool:
        """May the unfinished line hold `size` bytes? False refuses it (append to `out`
        what its refusal says, if anything)."""
        raise NotImplementedError

    def _finished(self, line: bytes) -> ItemT:
        raise NotImplementedError

    def _discard(self) -> None:
        """The unfinished line is done with (taken whole, or refused)."""
        self._pieces, self._size = [], 0


class LineSplitter(LineFramer[bytes]):
    """Whole LF-terminated records, one trailing CR stripped each; a line longer than
    `max_line_bytes` is dropped, counted in `too_long` and told to `on_too_long` (the
    moment it passes the bound)."""

    def __init__(
        self,
        max_line_bytes: int = MAX_LINE_BYTES,
        *,
        on_too_long: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.max_line_bytes = max_line_bytes
        self.too_long = 0
        self._on_too_long = on_too_long

    def _admit(self, size: int, out: list[bytes]) -> bool:
        if size <= self.max_line_bytes:
            return True
        self.too_long += 1
        if self._on_too_long is not None:
            self._on_too_long()
        return False

    def _finished(self, line: bytes) -> bytes:
        return line.removesuffix(b"\r")


async def chunks_of(stdout: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """Every chunk `stdout` gives until EOF or a broken pipe (at most READ_CHUNK each)."""
    with contextlib.suppress(ConnectionError, OSError):
        while chunk := await stdout.read(READ_CHUNK):
            yield chunk


def nonblank(lines: list[bytes]) -> list[bytes]:
    """The lines that say something (a blank line between JSON objects is no object)."""
    return [line for line in lines if line.strip()]


async def lines_of(
    stdout: asyncio.StreamReader, splitter: LineSplitter | None = None
) -> AsyncIterator[bytes]:
    """Every whole, non-blank line of `stdout` until EOF or a broken pipe."""
    splitter = splitter if splitter is not None else LineSplitter()
    async for chunk in chunks_of(stdout):
        for line in nonblank(splitter.feed(chunk)):
            yield line
