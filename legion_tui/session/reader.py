"""Tail one session file incrementally (SPEC §3, runtime-facts "Tailing JSONL"): pi's,
Claude Code's or Codex's (`session.formats` tells them apart and translates the lines).

- The stat gate: `poll()` stats the path and compares (dev, ino, size, mtime_ns) with
  the last poll; an unchanged file costs exactly one `stat` and no open.
- The fd stays open between polls; new bytes come from `os.pread` at the offset, at
  most `max_bytes_per_poll` per poll (`pending` says more is waiting) so a 50 MB file
  never blocks the event loop for long. The owner may `close()` the fd of an idle file
  at any time (a watcher over 1000 files must stay under `ulimit -n`): the gate does
  not need it, and the next change reopens the path and checks that (dev, ino) is the
  file the progress came from before reading on from the offset.
- Only whole lines are decoded: the bytes after the last b"\\n" wait as bytes, so a
  UTF-8 character split across two writes is safe.
- size < offset ⇒ truncated ⇒ start again from 0 with a fresh progress; (dev, ino)
  changed ⇒ rotated ⇒ reopen, fresh progress; a rewrite that keeps or grows the size is
  caught by fingerprints of the first 256 bytes and of the 256 bytes before the offset.
- A line that is not UTF-8, not JSON, not an object or longer than `max_line_bytes` is
  skipped and counted. An over-long line is never buffered whole: once the partial line
  passes the limit its bytes are dropped until the next newline.
- A file that cannot be read sets `progress.unreadable` ("EACCES", "deleted", …) and is
  retried on the next poll — it is never cached as an empty session.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from types import TracebackType
from typing import Any

from legion_tui.regular_files import NotARegularFile, open_regular
from legion_tui.session import figures
from legion_tui.session.figures import BadFigure
from legion_tui.session.fold import SessionFold
from legion_tui.session.formats import Translator, detect, translator
from legion_tui.session.progress import SessionProgress

__all__ = ["FINGERPRINT_BYTES", "MAX_LINE_BYTES", "SessionReader", "read_session"]

MAX_LINE_BYTES = 8 * 1024 * 1024
FINGERPRINT_BYTES = 256
CHUNK_BYTES = 256 * 1024
# Parsing costs ~15-20 µs a line; half a MiB per poll keeps one poll of a big file that
# is catching up to a few tens of ms of event-loop time.
MAX_BYTES_PER_POLL = 512 * 1024

StatKey = tuple[int, int, int, int]  # dev, ino, size, mtime_ns


def _unreadable_code(exc: OSError, had_file: bool) -> str:
    if isinstance(exc, NotARegularFile):
        return "not a regular file"
    if isinstance(exc, FileNotFoundError):
        return "deleted" if had_file else "ENOENT"
    if exc.errno is not None and exc.errno in errno.errorcode:
        return errno.errorcode[exc.errno]
    return type(exc).__name__


class SessionReader:
    """An incremental reader of one session file. Not thread-safe; one owner polls it."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes_per_poll: int = MAX_BYTES_PER_POLL,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self.path = os.fspath(path)
        self.max_bytes_per_poll = max_bytes_per_poll
        self.max_line_bytes = max_line_bytes
        # Syscall counters: tests and benchmarks assert "1 stat, 0 opens" per idle poll.
        self.stats = 0
        self.opens = 0
        self.reads = 0
        self.pending = False  # bytes are known to wait beyond `max_bytes_per_poll`
        self.mtime_ns = 0  # of the last successful stat (the watcher picks the newest file)
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None  # (dev, ino) the progress comes from
        self._key: StatKey | None = None  # stat of the last fully consumed state
        self._offset = 0
        self._tail = b""  # bytes after the last newline, not yet a whole line
        self._discarding = False  # inside an over-long line: drop until b"\n"
        self._head = b""  # up to FINGERPRINT_BYTES from offset 0
        self._before = b""  # the FINGERPRINT_BYTES just before the offset
        self._fold = SessionFold()
        self._translator: Translator | None = None  # chosen by the file's first object
        self._had_file = False
        self.lines = 0  # whole non-blank lines handled (entries, header, skipped)

    # ----- public ----------------------------------------------------------------------
    @property
    def progress(self) -> SessionProgress:
        return self._fold.progress

    @property
    def offset(self) -> int:
        return self._offset

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for an unfinished line (bounded by `max_line_bytes`)."""
        return len(self._tail)

    def poll(self) -> bool:
        """Read whatever was appended. True when the progress changed."""
        self.stats += 1
        try:
            st = os.stat(self.path)
        except OSError as exc:
            return self._mark_unreadable(exc, close=True)
        if stat.S_ISDIR(st.st_mode):
            return self._mark_unreadable(IsADirectoryError(errno.EISDIR, "is a directory"))
        if not stat.S_ISREG(st.st_mode):
            # A FIFO (any agent can make one: it knows the run dir) would block an open on
            # the event loop until a writer came — the whole supervisor frozen.
            return self._mark_unreadable(NotARegularFile(self.path), close=True)
        key: StatKey = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if key == self._key:
            return False  # the gate: one stat, nothing else (with or without an open fd)
        changed = False
        identity = (st.st_dev, st.st_ino)
        if self._fd is None or identity != self._identity:
            try:
                fd = open_regular(self.path)
            except OSError as exc:
                return self._mark_unreadable(exc, close=isinstance(exc, NotARegularFile))
            self.opens += 1
            self._close_fd()
            self._fd = fd
            # Re-stat through the fd: the path may have been replaced between the
            # stat and the open; what we read is what the fd points at.
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            identity = (st.st_dev, st.st_ino)
            if self._identity is not None and identity != self._identity:
                self._restart()  # rotated: a different file now lives at the path
                changed = True
            self._identity = identity
        self._had_file = True
        self.mtime_ns = st.st_mtime_ns
        if self.progress.unreadable is not None:
            self.progress.unreadable = None
            changed = True
        try:
            changed |= self._read_new(st.st_size)
        except OSError as exc:
            return self._mark_unreadable(exc, close=True) or changed
        # Close the gate only once everything up to this size is consumed.
        self._key = None if self.pending else key
        return changed

    @property
    def has_fd(self) -> bool:
        """An fd is held open (the watcher bounds how many of its readers hold one)."""
        return self._fd is not None

    def close(self) -> None:
        """Release the fd; the reader stays usable (the next change reopens the path)."""
        self._close_fd()

    def __enter__(self) -> SessionReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ----- internals -------------------------------------------------------------------
    def _close_fd(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _mark_unreadable(self, exc: OSError, *, close: bool = False) -> bool:
        # Forget the stat key so the next poll tries again; keep what was read before.
        self._key = None
        if close:
            self._close_fd()
        code = _unreadable_code(exc, self._had_file)
        if self.progress.unreadable == code:
            return False
        self.progress.unreadable = code
        return True

    def _restart(self) -> None:
        self._fold = SessionFold()
        self._translator = None
        self._offset = 0
        self._tail = b""
        self._discarding = False
        self._head = b""
        self._before = b""
        self.pending = False

    def _pread(self, size: int, offset: int) -> bytes:
        assert self._fd is not None
        self.reads += 1
        return os.pread(self._fd, size, offset)

    def _rewritten(self, size: int) -> tuple[bool, bytes | None]:
        """Did the bytes we already consumed change (a rewrite, not an append)? With the
        first new chunk when it came in the same read as the fingerprint before the
        offset (one read an append, not two: a thousand agents append a line a second)."""
        if self._offset == 0:
            return False, None
        head = self._pread(len(self._head), 0) if self._head else b""
        if head != self._head:
            return True, None
        if self._offset <= len(self._head):
            return False, None  # the head already covers everything before the offset
        before = len(self._before)
        want = min(CHUNK_BYTES, size - self._offset, self.max_bytes_per_poll)
        data = self._pread(before + max(want, 0), self._offset - before)
        if data[:before] != self._before:
            return True, None
        return False, data[before:]

    def _read_new(self, size: int) -> bool:
        changed = False
        rewritten, first = (True, None) if size < self._offset else self._rewritten(size)
        if rewritten:
            # Truncated, or rewritten in place: what we folded is no longer the file.
            self._restart()
            changed = True
        budget = self.max_bytes_per_poll
        lines_before = self.lines
        while self._offset < size and budget > 0:
            want = min(CHUNK_BYTES, size - self._offset, budget)
            if first is not None:
                chunk, first = first, None  # read with the fingerprint (`_rewritten`)
            else:
                chunk = self._pread(want, self._offset)
            if not chunk:
                break  # the file shrank under us; the next poll sees the new size
            if len(self._head) < FINGERPRINT_BYTES:
                self._head += chunk[: FINGERPRINT_BYTES - len(self._head)]
            self._before = (self._before + chunk[-FINGERPRINT_BYTES:])[-FINGERPRINT_BYTES:]
            self._offset += len(chunk)
            budget -= len(chunk)
            self._consume(chunk)
        self.pending = self._offset < size
        if self.lines != lines_before:
            # Only a whole line (an entry, a bad line) moves the progress; a partial line
            # or a blank one does not, and on_change is not called for it.
            self._fold.finish()
            changed = True
        return changed

    def _consume(self, chunk: bytes) -> None:
        if self._discarding:
            newline = chunk.find(b"\n")
            if newline < 0:
                return  # still inside the over-long line; its bytes are dropped
            self._discarding = False
            chunk = chunk[newline + 1 :]
        data = self._tail + chunk if self._tail else chunk
        last = data.rfind(b"\n")
        if last < 0:
            self._tail = data
        else:
            for line in data[:last].split(b"\n"):
                self._line(line)
            self._tail = data[last + 1 :]
        if len(self._tail) > self.max_line_bytes:
            # Memory stays bounded: count the line now and drop the rest of it.
            self._tail = b""
            self._discarding = True
            self._skip("over the line limit")

    def _line(self, line: bytes) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]  # pi frames with LF; tolerate one CR
        if not line.strip():
            return  # blank lines carry nothing; they are not counted as bad
        if len(line) > self.max_line_bytes:
            self._skip("over the line limit")
            return
        try:
            value: Any = figures.loads(line)
        except BadFigure as err:
            self._skip(str(err))
            return
        except (UnicodeDecodeError, ValueError, RecursionError):
            self._skip("not JSON")
            return
        if not isinstance(value, dict):
            self._skip("not a JSON object")
            return
        if self._translator is None:
            fmt = detect(value)
            self._translator = translator(fmt)
            self._fold.progress.format = fmt
        try:
            entries = self._translator.entries(value)
        except BadFigure as err:  # nothing of the line is taken: its figures are not numbers
            self._skip(str(err))
            return
        self.lines += 1
        for entry in entries:
            self._fold.feed(entry)

    def _skip(self, reason: str) -> None:
        self.lines += 1
        self._fold.skip(reason)


def read_session(path: str | os.PathLike[str] | Path) -> SessionProgress:
    """Parse a whole file once (fd closed afterwards). `unreadable` tells a failure."""
    with SessionReader(path) as reader:
        reader.poll()
        while reader.pending:
            reader.poll()
        return reader.progress
