"""One agent child's stdin/stdout as a JSON-lines channel — what pi's RPC client (`rpc`),
Codex's JSON-RPC client (`codex.rpc`) and Claude Code's stream-json channel
(`claude.stream`) share: bounded writes, the one read loop, requests waiting on
their answers, and a close that never blocks for long.

The read loop must outlive any output: if it died, the client would read as idle and a
running node would settle mid-turn. So lines are framed by `lines` (an over-long one
dropped and counted), each line's decoding fails alone (not UTF-8, not JSON, nested deep
enough for RecursionError: counted in `skipped_lines`), and a subclass's `_take` handles
each object alone (what it cannot take it logs, never raises). Writes are bounded: a
child that stops draining its stdin fails the write after `WRITE_BOUND`, never hangs the
caller.

The loop reads a chunk at a time and takes all its lines before the next read; after a
small chunk that ended on a line's end it holds the pipe (`pipe_reader`) until the next
`READ_PACE` tick, so a streaming agent's ~100 lines a second wake the host ~10 times, not
100 (each wake-up costs more than the lines it reads). A hold never delays an answer: no
hold while a request waits for its reply, and a request sent during one ends it; a
big chunk or a line still coming is read on at once (no throughput is lost). What the
lines of one read changed is told once, after them (`_read_done`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Coroutine
from typing import Any, Protocol

from legion_tui.supervisor.processes.pipe_reader import PipeReader, next_tick
from legion_tui.timeouts import within
from legion_tui.wire.lines import MAX_LINE_BYTES, LineSplitter, chunks_of, nonblank
from legion_tui.wire.names import RequestError

__all__ = ["READ_PACE", "WRITE_BOUND", "CommandSink", "JsonLinesChannel", "json_line"]

log = logging.getLogger(__name__)

WRITE_BOUND = 5.0  # a child that does not drain its stdin for this long is stuck
CLOSE_BOUND = 1.0  # how long a close waits for the read loop to end
# The reads of a trickle: the dashboard shows a stream at ~10 Hz (`session/streaming`
# publishes at most every 0.1 s), so lines held for up to this long are shown no later.
READ_PACE = 0.1
# A chunk this big is a burst (a tool's whole output, a backlog): read on without a hold.
HOLD_BELOW = 16 * 1024
CATCH_UP_BOUND = 1.0  # a decision waits this long at most for the lines a hold kept


class CommandSink(Protocol):
    """The write side (a StreamWriter on the child's stdin, or a test double)."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...


def json_line(message: dict[str, Any]) -> bytes:
    """One compact JSON object and its LF, the way every agent reads its stdin."""
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class JsonLinesChannel:
    """The channel; a subclass says what an object read means (`_take`) and what the
    end of the output ends (`_on_closed`)."""

    def __init__(
        self,
        stdin: CommandSink,
        stdout: asyncio.StreamReader,
        *,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self._lines = LineSplitter(max_line_bytes, on_too_long=self._skipped)
        self._ids = itertools.count(1)
        # id → (what was asked, its answer to come), in the order they were sent
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closed = asyncio.Event()  # stdout reached EOF: the agent is gone
        self.skipped_lines = 0  # lines that were not a JSON object (or too long)
        # Starts at the loop's next turn: a subclass's __init__ has finished by then.
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    # -- writing -----------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        """Write one object now (its drain goes on in the background, bounded); raises
        ConnectionError or RuntimeError when the child's stdin is gone."""
        self._stdin.write(json_line(message))
        self._spawn(self._drain())

    def _expect(self, name: str) -> tuple[int, asyncio.Future[dict[str, Any]]]:
        """A new request id and the future its answer resolves."""
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        req_id = next(self._ids)
        self._pending[req_id] = (name, fut)
        fut.add_done_callback(lambda _f: self._pending.pop(req_id, None))
        self._hurry()
        return req_id, fut

    @staticmethod
    def _failed(error: RequestError) -> asyncio.Future[dict[str, Any]]:
        """A request refused before it was sent: its future, failed already."""
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        fut.set_exception(error)
        return fut

    def _answer(self, req_id: object, reply: dict[str, Any]) -> None:
        """The reply to request `req_id` came (an answer to nothing is ignored)."""
        pending = self._pending.get(req_id) if isinstance(req_id, int) else None
        if pending is not None and not pending[1].done():
            pending[1].set_result(reply)

    async def _drain(self) -> None:
        with contextlib.suppress(ConnectionError, TimeoutError, RuntimeError):
            await within(self._stdin.drain(), WRITE_BOUND)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Close stdin (every agent here exits on EOF) and stop reading."""
        with contextlib.suppress(Exception):
            self._stdin.close()
        # Taken, whatever it says: a write to a child that had exited leaves its close
        # waiter holding BrokenPipeError, which Python 3.11 logs as "never retrieved"
        # when nobody awaits it (the traceback under the demo's exit hint).
        with contextlib.suppress(BaseException):
            await within(self._stdin.wait_closed(), CLOSE_BOUND)
        self._reader.cancel()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(BaseException):
            await within(
                asyncio.gather(self._reader, return_exceptions=True), CLOSE_BOUND
            )
        if not self.closed.is_set():  # the read loop was cancelled before it ever ran
            self.closed.set()
            self._on_closed()
        self._fail_pending("closed")

    # -- reading -----------------------------------------------------------------------

    def _skipped(self) -> None:
        self.skipped_lines += 1

    async def catch_up(self) -> None:
        """Take the lines the agent wrote until now (a hold may keep some) before a
        decision on the state they tell (is a turn running?)."""
        if isinstance(self._stdout, PipeReader):
            await self._stdout.caught_up(CATCH_UP_BOUND)

    async def _read_loop(self) -> None:
        pipe = self._stdout if isinstance(self._stdout, PipeReader) else None
        try:
            async for chunk in chunks_of(self._stdout):
                self._received(chunk)
                if pipe is not None and self._may_hold(chunk):
                    loop = asyncio.get_running_loop()
                    await pipe.hold(next_tick(loop.time(), READ_PACE))
        finally:
            self.closed.set()
            self._on_closed()
            self._fail_pending("the agent closed its output")

    def _received(self, chunk: bytes) -> None:
        """Every whole line of one read, then `_read_done` once."""
        for line in nonblank(self._lines.feed(chunk)):
            self._dispatch(line)
        try:
            self._read_done()
        except Exception:
            log.exception("a read's lines were taken, but telling it failed")

    def _may_hold(self, chunk: bytes) -> bool:
        """Hold the pipe after this read? Only a small one that ended on a line's end (the
        rest of a long line is coming now), with no reply awaited."""
        return len(chunk) < HOLD_BELOW and not self._lines.pending and not self._awaiting_reply()

    def _awaiting_reply(self) -> bool:
        """A request of ours waits for its answer (a subclass adds its own kinds)."""
        return bool(self._pending)

    def _hurry(self) -> None:
        """An answer is now awaited: end a hold of the pipe, so it is read as it comes."""
        if isinstance(self._stdout, PipeReader):
            self._stdout.release()

    def _read_done(self) -> None:
        """The lines of one read were all taken (a subclass tells what they changed)."""

    def _fail_pending(self, why: str) -> None:
        for name, fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(self._closed_error(name, why))

    def _closed_error(self, name: str, why: str) -> RequestError:
        """What a request still waiting when the channel ends fails with."""
        return RequestError(name, why)

    def _dispatch(self, line: bytes) -> None:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # not UTF-8 / not JSON / nested too deep
            self.skipped_lines += 1  # e.g. a stray print from an extension
            return
        if not isinstance(obj, dict):
            self.skipped_lines += 1
            return
        self._take(obj)

    def _take(self, obj: dict[str, Any]) -> None:
        """One object read; handles it alone (logs what it cannot take, never raises)."""
        raise NotImplementedError

    def _on_closed(self) -> None:
        """The output ended (EOF, a broken pipe, or the close): the state it held ends."""
