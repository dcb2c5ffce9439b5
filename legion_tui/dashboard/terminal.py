"""The dashboard's terminal driver: Textual's Linux driver, minus its ways to hang the host.

The dashboard shares its event loop with the supervisor, so a loop that blocks on the
terminal stops every agent's supervision and every signal handler with it. Textual's
driver (8.2.8) has three ways to get there, all seen when a terminal closes under it:

- its writer thread dies on the first write that fails (EIO once the terminal hung up),
  and the loop thread then blocks for ever in `Queue.put` on the dead thread's full queue
  (30 writes later: a few frames, or the exit's own escape sequences);
- a SIGCONT restarts application mode unconditionally, and the kernel sends one with
  every hangup: a second writer thread starts on the dead terminal (and dies at once),
  a second input thread starts, and the exit then fills the new queue;
- a terminal that is open but not reading blocks the loop for as long as it stalls.

So here the writer never dies: a failed write marks the terminal lost and everything after
is dropped (the app is told, and exits the way a hangup does: agents paused). A SIGCONT
resumes application mode only after our own SIGTSTP suspended it. A host signal (SIGTERM,
SIGHUP, SIGINT) bounds the wait for a terminal that does not drain: `abandon_after`.
Without one, a slow terminal still holds frames back, as Textual's own writer does.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import time
from collections.abc import Callable
from queue import Full
from typing import IO, Any

from textual.drivers._writer_thread import WriterThread
from textual.drivers.linux_driver import LinuxDriver

# How often a blocked writer looks again at a deadline a signal may have set meanwhile.
POLL_S = 0.1
# After a host signal, how long a write may wait for a terminal that does not drain (the
# exit wants to leave the alternate screen and mouse mode; a dead terminal is not waited on).
SIGNAL_GRACE_S = 1.0
# How long the exit's last writes (leave the alternate screen, mouse off) may wait for a
# terminal that takes output but slowly, before the host stops waiting for it.
STOP_WAIT_S = 2.0


class TerminalWriter(WriterThread):
    """Textual's writer thread (same queue bound, same flush on an empty queue) that
    survives its terminal: a write that fails loses the terminal instead of the thread.

    Output goes to the file's descriptor with `os.write`, not through its buffered text
    layer: a thread blocked in a buffered write holds that buffer's lock, and the
    interpreter's exit flush of stderr would then abort the process."""

    def __init__(self, file: IO[str], on_lost: Callable[[str], None]) -> None:
        super().__init__(file)
        self._fd = file.fileno()
        self._encoding = getattr(file, "encoding", None) or "utf-8"
        self._errors = getattr(file, "errors", None) or "strict"
        self._on_lost = on_lost
        self.lost: str | None = None  # why the terminal takes no more output, once it does not
        self._give_up_at: float | None = None
        with contextlib.suppress(OSError, ValueError):
            file.flush()  # whatever the text layer holds goes out before our own bytes

    def abandon_after(self, seconds: float) -> None:
        """From now on, a write waits at most `seconds` for the terminal to drain; then the
        terminal is lost. Safe inside a signal handler: it takes no lock."""
        if self._give_up_at is None:
            self._give_up_at = time.monotonic() + seconds

    def lose(self, reason: str) -> None:
        if self.lost is None:
            self.lost = reason
            self._on_lost(reason)

    def _gave_up(self) -> bool:
        deadline = self._give_up_at
        if deadline is not None and time.monotonic() >= deadline:
            self.lose("the terminal stopped reading")
        return self.lost is not None

    def write(self, text: str) -> None:
        """Queue `text` (the loop thread's side). Never blocks on a lost terminal, and
        after a host signal no longer than `abandon_after` allows."""
        while self.lost is None:
            try:
                self._queue.put(text, timeout=POLL_S)
                return
            except Full:
                if self._gave_up():
                    return

    def run(self) -> None:
        get, qsize = self._queue.get, self._queue.qsize
        pending: list[bytes] = []
        while True:
            text = get()
            if text is None:
                break
            if self.lost is not None:
                continue  # keep draining: the loop thread must never wait on this queue
            pending.append(text.encode(self._encoding, self._errors))
            if qsize() == 0:
                self._send(b"".join(pending))
                pending.clear()
        if pending:
            self._send(b"".join(pending))

    def _send(self, data: bytes) -> None:
        view = memoryview(data)
        while view and self.lost is None:
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:  # someone set the tty non-blocking: wait until writable
                select.select([], [self._fd], [], POLL_S)
                self._gave_up()
            except OSError as error:  # EIO after a hangup, EBADF, EPIPE …
                self.lose(errno.errorcode.get(error.errno or 0, str(error)))

    def stop(self) -> None:
        """Queue the end and wait for the thread, both within STOP_WAIT_S: a terminal that
        stalls loses the rest of the output rather than holding the host's exit."""
        self.abandon_after(STOP_WAIT_S)
        deadline = time.monotonic() + STOP_WAIT_S
        while True:
            try:
                self._queue.put(None, timeout=POLL_S)  # a lost terminal drains at once
                break
            except Full:
                if time.monotonic() >= deadline:  # a stalled one is given up on
                    self.lose("the terminal stopped reading")
                    break
        self.join(timeout=max(0.0, deadline - time.monotonic()))


class LegionDriver(LinuxDriver):
    """The Linux driver with `TerminalWriter` in place of Textual's writer thread, and a
    SIGCONT that resumes only what our own SIGTSTP suspended."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._terminal: TerminalWriter | None = None
        self._suspended = False  # our SIGTSTP stopped us: the next SIGCONT resumes
        super().__init__(*args, **kwargs)

    # Textual's `start_application_mode` builds `WriterThread(self._file)` and assigns it
    # here (and `__init__` assigns None): the property puts ours in its place, so the rest
    # of Textual's start-up — and its `write`, `close` — run unchanged on ours.
    @property
    def _writer_thread(self) -> TerminalWriter | None:
        return self._terminal

    @_writer_thread.setter
    def _writer_thread(self, made: WriterThread | None) -> None:
        file = self._file
        self._terminal = None if made is None or file is None else TerminalWriter(file, self._lost)

    @property
    def terminal(self) -> TerminalWriter | None:
        return self._terminal

    def _lost(self, reason: str) -> None:
        """The terminal is gone (or given up on): the app ends as on a hangup. Called from
        the writer thread or the loop thread; the app hears it on the loop."""
        with contextlib.suppress(RuntimeError):  # the loop has closed: nothing to tell
            self._loop.call_soon_threadsafe(self._app.exit)

    def check_terminal(self) -> None:
        """A terminal that hung up fails `isatty` (its ioctls answer EIO): the host learns
        it even when nothing is drawn and no SIGHUP reached it (one ioctl, once a second)."""
        terminal = self._terminal
        if terminal is not None and self.input_tty and not os.isatty(self.fileno):
            terminal.lose("the terminal hung up")

    def abandon_after(self, seconds: float) -> None:
        if self._terminal is not None:
            self._terminal.abandon_after(seconds)

    def _sigtstp_application(self, *args: Any) -> None:
        self._suspended = True
        super()._sigtstp_application(*args)

    def _sigcont_application(self, *args: Any) -> None:
        # Not ours to resume (the kernel's SIGCONT after a hangup, a stray `kill -CONT`):
        # restarting application mode would start a second writer and input thread.
        if not self._suspended:
            return
        self._suspended = False
        if self._terminal is not None and self._terminal.lost is not None:
            return
        super()._sigcont_application(*args)


def say_after_exit(text: str, fd: int = 2) -> None:
    """One line for the user once the dashboard has given the terminal back — only if the
    terminal takes it now: a hung-up terminal (EIO) or one that stopped reading (not
    writable) loses the line, never the exit (a plain print blocked the host for ever, or
    failed it with EIO after the agents were paused)."""
    with contextlib.suppress(OSError, ValueError):
        _, writable, _ = select.select([], [fd], [], 0)
        if writable:
            os.write(fd, (text + "\n").encode("utf-8", "replace"))
