"""A pseudo-terminal for an `exec` child: its stdin, stdout and stderr (SPEC §6.1).

An interactive command (aider, a shell, an installer asking "continue? [y/N]") behaves
only when it sees a terminal: on a pipe it buffers, drops its prompts or reads EOF and
quits. So an exec child runs on the slave side of a pty, made its controlling terminal,
and legion holds the master:

- every byte the child writes is appended to its terminal log (`terminal/<nodeId>.log`,
  rendered by the detail overlay's Terminal tab through pyte, as before);
- the same bytes play on a pyte screen of the pty's size, whose current line (the
  cursor's row, else the last non-blank one above it) is the node's activity line — an
  exec command writes no session file, so this is what its row shows instead;
- a steer is typed into the terminal, so the command's question can be answered from the
  dashboard.

The reader is the event loop's (`add_reader` on the non-blocking master), so a child
that floods its output costs one bounded read per wake-up, never a blocked loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import struct
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pyte
from pyte.screens import wcwidth  # pyte's own width rule, as its `display` applies it

from legion_tui.timeouts import within

__all__ = ["COLUMNS", "ROWS", "LineSink", "PtyTerminal", "controlling_tty_prefix", "row_text"]

COLUMNS, ROWS = 160, 50
READ_BYTES = 64 * 1024
LINE_EVERY = 0.2  # the activity line is published at most 5 times a second
LINE_LIMIT = 200  # characters of it kept

# Run between the parent-death launcher and the command: the pty becomes the controlling
# terminal of the session `start_new_session` made (job control, ^C, `read` from /dev/tty).
_CTTY = (
    "import fcntl, os, sys, termios\n"
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


def controlling_tty_prefix() -> list[str]:
    return [sys.executable, "-c", _CTTY]


LineSink = Callable[[str], None]


class PtyTerminal:
    """One pty pair: `slave_fd` for the child (close it with `child_started`), the master
    read into the log and the screen."""

    def __init__(
        self,
        log_path: Path,
        *,
        on_line: LineSink | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._master, self._slave = os.openpty()
        fcntl.ioctl(self._slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        os.set_blocking(self._master, False)
        self.device = os.fstat(self._slave).st_rdev  # the pty a child reading it reads
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._screen = pyte.Screen(COLUMNS, ROWS)
        self._stream = pyte.ByteStream(self._screen)
        self._on_line = on_line
        self._clock = clock
        self._published: str | None = None
        self._published_at = -LINE_EVERY
        self._pending_publish: asyncio.TimerHandle | None = None
        self._unwritten = b""  # typed input the master could not take yet
        self._busy_at = clock()  # the last output read or input typed
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = asyncio.Event()  # the child side hung up (every slave fd closed)

    @property
    def slave_fd(self) -> int:
        return self._slave

    def child_started(self) -> None:
        """The child holds its own copies of the slave now: ours goes, or the master
        would never see the hang-up when the child's last process exits."""
        if self._slave >= 0:
            os.close(self._slave)
            self._slave = -1
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._master, self._readable)

    @property
    def line(self) -> str:
        """The terminal's current line: the cursor's row, else the last non-blank above."""
        for row in range(min(self._screen.cursor.y, ROWS - 1), -1, -1):
            text = row_text(self._screen, row).strip()
            if text:
                return text[:LINE_LIMIT]
        return ""

    def quiet_for(self) -> float:
        """Seconds since the terminal last printed or was typed into."""
        return self._clock() - self._busy_at

    def foreground(self) -> int | None:
        """The terminal's foreground process group (the one its keys go to), or None."""
        if self._master < 0:
            return None
        try:
            return os.tcgetpgrp(self._master)
        except OSError:
            return None

    def type(self, text: str) -> None:
        """Type `text` and Enter into the terminal, as a user at it would."""
        self.write(text.replace("\n", "\r").encode() + b"\r")

    def write(self, data: bytes) -> bool:
        """Write raw keys to the terminal (the Terminal tab's insert mode), in order
        after anything not yet taken; False once the terminal is closed."""
        if self._master < 0:
            return False
        self._unwritten += data
        self._busy_at = self._clock()
        self._flush()
        return True

    async def hung_up(self, bound: float) -> None:
        """Until the child side hung up (its output is all in the log), at most `bound` s;
        a grandchild still holding the terminal only delays the wait to the bound."""
        with contextlib.suppress(TimeoutError):
            await within(self.closed.wait(), bound)

    def close(self) -> None:
        """Read what is still buffered (bounded), then release everything."""
        for _ in range(16):
            if self._master < 0 or self.closed.is_set() or not self._read_once():
                break
        loop = self._loop
        if self._master >= 0:
            if loop is not None:
                loop.remove_reader(self._master)
                loop.remove_writer(self._master)
            os.close(self._master)
            self._master = -1
        if self._slave >= 0:
            os.close(self._slave)
            self._slave = -1
        if self._log >= 0:
            os.close(self._log)
            self._log = -1
        if self._pending_publish is not None:
            self._pending_publish.cancel()
            self._pending_publish = None
        self.closed.set()

    # ----- internals -------------------------------------------------------------------
    def _readable(self) -> None:
        self._read_once()

    def _read_once(self) -> bool:
        """One read of the master; False when nothing was there (or it hung up)."""
        try:
            data = os.read(self._master, READ_BYTES)
        except BlockingIOError:
            return False
        except OSError as err:
            if err.errno != errno.EIO:  # EIO: the slave side closed — the child is gone
                raise
            data = b""
        if not data:
            self._hung_up()
            return False
        self._busy_at = self._clock()
        with contextlib.suppress(OSError):
            os.write(self._log, data)
        self._stream.feed(data)
        self._publish_soon()
        return True

    def _hung_up(self) -> None:
        if self._loop is not None and self._master >= 0:
            self._loop.remove_reader(self._master)
        self._publish()
        self.closed.set()

    def _flush(self) -> None:
        loop = self._loop
        try:
            written = os.write(self._master, self._unwritten)
        except BlockingIOError:
            written = 0
        except OSError:
            self._unwritten = b""  # nobody is reading the terminal any more
            return
        self._unwritten = self._unwritten[written:]
        if loop is not None:
            if self._unwritten:
                loop.add_writer(self._master, self._flush)
            else:
                loop.remove_writer(self._master)

    def _publish_soon(self) -> None:
        if self._on_line is None or self._pending_publish is not None:
            return
        wait = self._published_at + LINE_EVERY - self._clock()
        if wait <= 0 or self._loop is None:
            self._publish()
        else:
            self._pending_publish = self._loop.call_later(wait, self._publish)

    def _publish(self) -> None:
        self._pending_publish = None
        if self._on_line is None:
            return
        line = self.line
        self._published_at = self._clock()
        if line != self._published:
            self._published = line
            self._on_line(line)


def row_text(screen: pyte.Screen, y: int) -> str:
    """Row `y` of `screen` as text, up to its last written cell (a wide character's stub
    cell adds nothing) — pyte's `display` row less its trailing blanks. Not `display`
    itself: it renders every row, 50 of 160 cells, 35 ms a call on a loaded machine, at
    each publish and each agent's hang-up (a pause of 300 exec agents spent 10 s of the
    host's loop in it)."""
    cells = screen.buffer.get(y)  # `get`: a row never written stays unmade
    if not cells:
        return ""
    # As `display` reads a row: the cell after a wide character is its stub, skipped
    # whatever a later write left in it. A stub whose character was written over reads
    # as the blank a terminal shows there (`display` itself fails on it: pyte 0.8.2).
    out: list[str] = []
    stub = False
    for x in range(min(max(cells) + 1, screen.columns)):
        if stub:
            stub = False
            continue
        data = cells[x].data
        out.append(data or " ")
        stub = bool(data) and wcwidth(data[0]) == 2
    return "".join(out)
