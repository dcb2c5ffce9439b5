"""An agent's stdout: asyncio's own StreamReader, plus a hold on the pipe it reads.

Every chunk an agent writes wakes the host's event loop — at the cost of a whole wake-up
(the kernel's, then asyncio's), a few hundred µs on a loaded 2-core machine, whatever the
chunk says. pi writes one line per streamed token, ~100 a second. A reader that holds
the pipe for a moment after a small chunk (`hold`: asyncio stops polling the descriptor,
the kernel keeps what the agent writes meanwhile — a pipe holds 64 KiB, and node buffers
beyond that without blocking) takes the lines of the whole moment in one read; holds end
on a shared grid (`next_tick`), so one timer wakes the reads of every agent at once.

A decision on what the agent said (is a turn running?) must not be taken on lines a
hold still keeps: `caught_up` ends the hold and waits until the reads have returned all
the child wrote before that moment (counted: what the pipe holds, FIONREAD, plus what
asyncio took from it and no read has returned yet).

`process.spawn_child` gives each piped child one of these (`child_process` makes it);
the policy — when to hold, when a reply is awaited and must not wait — is the channel's
(`channel.JsonLinesChannel`). Anything else reading the StreamReader sees plain asyncio.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import fcntl
import math
import termios
from collections.abc import Iterable, Sized
from typing import SupportsIndex

__all__ = ["PipeReader", "next_tick"]


def next_tick(now: float, pace: float) -> float:
    """The first point of the `pace` grid after `now` (loop time): every hold of every
    reader that started in the same pace ends at the same moment, in one loop turn."""
    return (math.floor(now / pace) + 1) * pace


class PipeReader(asyncio.StreamReader):
    """The StreamReader of a child's stdout pipe that can stop reading it for a while."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self._pipe: asyncio.ReadTransport | None = None
        self._wake: asyncio.Future[None] | None = None  # set while a hold lasts
        self._fed = 0  # bytes asyncio took from the pipe into this reader
        self._returned = 0  # bytes its reads gave back
        self._read = asyncio.Event()  # pulsed on each read

    def set_transport(self, transport: asyncio.BaseTransport) -> None:
        super().set_transport(transport)
        if isinstance(transport, asyncio.ReadTransport):
            self._pipe = transport

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        if isinstance(data, Sized):  # the pipe's bytes (typeshed allows any ints)
            self._fed += len(data)
        super().feed_data(data)

    async def read(self, n: int = -1) -> bytes:
        data = await super().read(n)
        self._returned += len(data)
        self._read.set()
        self._read.clear()  # a pulse: the waiters woken keep their wake-up
        return data

    async def caught_up(self, bound: float) -> None:
        """Until the reads have returned what the child wrote before now (at once when
        no hold keeps anything: then each line is read as it comes), or `bound` s."""
        if self._wake is None:
            return
        upto = self._fed + self._in_pipe()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(bound):
                while self._returned < upto and not self.at_eof():
                    self.release()  # this hold, or one its reader began after a read
                    await self._read.wait()

    def _in_pipe(self) -> int:
        """Bytes written to the pipe that asyncio has not taken from it yet."""
        pipe = self._pipe.get_extra_info("pipe") if self._pipe is not None else None
        if pipe is None:
            return 0
        count = array.array("i", [0])
        try:
            fcntl.ioctl(pipe.fileno(), termios.FIONREAD, count)
        except (AttributeError, OSError, ValueError):  # no pipe, or closed already
            return 0
        return count[0]

    async def hold(self, until: float) -> None:
        """Leave the pipe unread until loop time `until` (or `release`, or a cancel):
        what the child writes meanwhile waits in the kernel, read in one go after."""
        pipe = self._pipe
        if pipe is None or pipe.is_closing() or self._wake is not None:
            return
        loop = asyncio.get_running_loop()
        wake: asyncio.Future[None] = loop.create_future()
        timer = loop.call_at(until, _wake_up, wake)
        self._wake = wake
        pipe.pause_reading()
        try:
            await wake
        finally:
            timer.cancel()
            self._wake = None
            # Never left paused: asyncio's own flow control (the StreamReader's limit)
            # takes over again from here.
            pipe.resume_reading()

    def release(self) -> None:
        """End a hold now (an answer is awaited: it must not wait for the grid)."""
        if self._wake is not None:
            _wake_up(self._wake)


def _wake_up(wake: asyncio.Future[None]) -> None:
    if not wake.done():
        wake.set_result(None)
