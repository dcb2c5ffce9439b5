"""Whether an exec child waits for its user at its terminal (issue 12 item 5).

The signal, and why this one: a process of the pty's foreground process group asleep
(`S`) in read(2)/readv(2) on the pty itself (`/proc/<pid>/syscall`: the call's number,
then its first argument, the fd, which `/proc/<pid>/fd/<fd>` shows is our pty device).
A read of a terminal returns as soon as a line is there, so a process found in it twice
in a row has read everything typed and waits for more — the input queue is empty. Other
signals are weaker: the wait channel (`wchan`) reads `wait_woken` for any wait, a
sleeping state alone is also a `sleep 60`, and a program asleep in poll/select on fd 0
may be waiting on a socket as well, so those are not taken as a question. Reading
`syscall` needs the right to ptrace the process, which the host has over its own
descendants; a process it cannot read is never called waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref

from legion_tui.procfs import children_of, stat_of

__all__ = ["LOOK_TICK", "READ_CALLS", "look", "reading_terminal"]

# The looks asked within this long are made together, in one worker-thread call: a
# thousand exec agents, each looked at every 1 to 4 s, were ~250 thread hand-offs a
# second, whose waking and GIL passing cost the host several times the /proc reads
# themselves (issue 35). A look comes up to this much later than asked.
LOOK_TICK = 0.05

# x86_64 and arm64 numbers of read and readv (the calls a blocking line read sleeps in).
READ_CALLS: frozenset[int] = frozenset({0, 19} if os.uname().machine == "x86_64" else {63, 65})
_MAX_PROCESSES = 256  # a child tree bigger than this is not searched further


def _tree(root: int) -> list[int]:
    found: list[int] = []
    todo = [root]
    while todo and len(found) < _MAX_PROCESSES:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children_of(pid))
    return found


def _reads_from(pid: int, device: int) -> bool:
    try:
        with open(f"/proc/{pid}/syscall", "rb") as syscall:
            fields = syscall.read().split()
        if len(fields) < 2 or int(fields[0]) not in READ_CALLS:
            return False
        fd = int(fields[1], 16)
        return os.stat(f"/proc/{pid}/fd/{fd}").st_rdev == device
    except (OSError, ValueError):
        return False


def reading_terminal(root: int, foreground: int, device: int) -> bool:
    """Whether a process under `root` in process group `foreground` sleeps reading the
    terminal `device` (a st_rdev) right now."""
    for pid in _tree(root):
        stat = stat_of(pid)
        if stat is None or stat.pgrp != foreground or stat.state != "S":
            continue
        with contextlib.suppress(OSError):
            if _reads_from(pid, device):
                return True
    return False


Asked = tuple[int, int, int]  # reading_terminal's (root, foreground, device)


def _look_all(asked: list[Asked]) -> list[bool | Exception]:
    answers: list[bool | Exception] = []
    for root, foreground, device in asked:
        try:
            answers.append(reading_terminal(root, foreground, device))
        except Exception as exc:  # (none is expected) that look's asker gets it
            answers.append(exc)
    return answers


class _Looks:
    """The looks asked on one event loop in the current tick."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.asked: list[tuple[Asked, asyncio.Future[bool]]] = []

    def ask(self, asked: Asked) -> asyncio.Future[bool]:
        answer: asyncio.Future[bool] = self.loop.create_future()
        if not self.asked:
            self.loop.call_later(LOOK_TICK, self._look)
        self.asked.append((asked, answer))
        return answer

    def _look(self) -> None:
        batch, self.asked = self.asked, []
        try:
            done = self.loop.run_in_executor(None, _look_all, [a for a, _ in batch])
        except RuntimeError as exc:  # the loop's executor is shut down (the loop closing)
            for _asked, answer in batch:
                if not answer.done():
                    answer.set_exception(exc)
            return
        done.add_done_callback(lambda f: _answer(batch, f))


def _answer(
    batch: list[tuple[Asked, asyncio.Future[bool]]], done: asyncio.Future[list[bool | Exception]]
) -> None:
    if done.cancelled() or done.exception() is not None:
        for _asked, answer in batch:
            if not answer.done():
                if done.cancelled():
                    answer.cancel()
                else:
                    answer.set_exception(done.exception() or RuntimeError("no look"))
        return
    for (_asked, answer), value in zip(batch, done.result(), strict=True):
        if answer.done():
            continue  # its asker was cancelled meanwhile
        if isinstance(value, Exception):
            answer.set_exception(value)
        else:
            answer.set_result(value)


_looks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Looks] = weakref.WeakKeyDictionary()


async def look(root: int, foreground: int, device: int) -> bool:
    """`reading_terminal(root, foreground, device)` off the event loop, made together
    with the other looks asked within `LOOK_TICK` (one worker-thread call for them all)."""
    loop = asyncio.get_running_loop()
    looks = _looks.get(loop)
    if looks is None:
        looks = _looks[loop] = _Looks(loop)
    return await looks.ask((root, foreground, device))
