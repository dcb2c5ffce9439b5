"""A hosting process always ends: within a bound once it is told to, and never held by a
thread its exit path forgot.

Seen here (issue 30): hosts re-parented to init 13–35 minutes after their terminal closed
mid-pause, or after their project folder was removed; the main thread waited for ever in
`threading._shutdown` on a thread (the ledger reader's) that a failed step of the close
never ended. The close now runs every step (supervisor.services.close_each); this module
is the bound behind it:

- `ExitDeadline.arm()`: from the moment a host signal arrives (or the run folder goes),
  the host has `EXIT_BOUND_S` to pause its agents and exit; past it, the process ends
  itself. Its agents end with it: they are contained (the watchdog kills a dead host's
  cgroup and process groups), and what the ledger had committed stays — the pause writes
  the retirements first, and the next start marks whatever it missed as orphans.
- `end_lingering_threads()`: after the host's loop has ended, a thread still running is
  named and the process exits anyway instead of waiting for it; with none, the process
  exits at once too (`os._exit`, its output flushed): the interpreter's teardown freed a
  thousand agents' host heap (1.6 GB) object by object — 20 s after the last agent had
  ended, the terminal not yet given back (issue 35 item 3).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
import traceback

__all__ = ["EXIT_BOUND_S", "ExitDeadline", "end_lingering_threads"]

# How long a host told to end (a signal, its terminal or run folder gone) may take to
# pause its agents and exit: three times the stop grace (5 s), for a loaded machine.
EXIT_BOUND_S = 15.0
# How often the deadline's thread looks: it reads one float, so a signal handler can arm
# it with a plain assignment (no lock a handler could deadlock on).
_POLL_S = 0.25
# How long a thread left after the loop ended may take to finish before the exit names it.
LINGER_S = 2.0


def _say(line: str) -> None:
    # os.write: the buffered stderr may be held by the thread being cut short, or gone.
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode("utf-8", "replace"))


class ExitDeadline:
    """A daemon thread that ends the process once an armed deadline passes."""

    def __init__(self, verb: str, bound: float = EXIT_BOUND_S) -> None:
        self.verb = verb
        self.bound = bound
        self.deadline: float | None = None  # monotonic; set once, by `arm`
        self.why = ""
        self._thread = threading.Thread(target=self._watch, name="exit-deadline", daemon=True)
        self._thread.start()

    def arm(self, why: str) -> None:
        """Safe inside a signal handler: two assignments. The first call counts."""
        if self.deadline is None:
            self.why = why
            self.deadline = time.monotonic() + self.bound

    def _watch(self) -> None:
        while True:
            time.sleep(_POLL_S)
            deadline = self.deadline
            if deadline is not None and time.monotonic() >= deadline:
                _say(
                    f"legion {self.verb}: {self.why}; the pause did not end within "
                    f"{self.bound:g} s — exiting (its agents end with it; resume them "
                    "from the ledger when you reopen the session)"
                )
                os._exit(1)


def end_lingering_threads(verb: str, code: int, *, linger: float = LINGER_S) -> None:
    """Called once the host's loop has ended: threads that would keep the interpreter
    from exiting get `linger` seconds, then the process exits with `code` naming them."""
    until = time.monotonic() + linger
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon:
            continue
        thread.join(max(0.0, until - time.monotonic()))
    left = [
        t.name
        for t in threading.enumerate()
        if t is not threading.current_thread() and not t.daemon and t.is_alive()
    ]
    error = sys.exc_info()[1]
    if not left and error is not None:
        return  # an error on its way out: Python's own exit prints it
    if left:
        if error is not None:  # said before the exit, which would lose it
            traceback.print_exc()
        _say(f"legion {verb}: exiting although thread(s) {', '.join(left)} did not end")
    logging.shutdown()  # what the handlers hold, written
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
