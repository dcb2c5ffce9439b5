"""Client of pi's RPC mode (`pi --mode rpc`), also spoken by `legion-sim`.

notes/pi-format.md §2: commands go to stdin, responses and events come on stdout, one
JSON object per line. Framing is strict LF: we read bytes and split on b"\\n" (never a
text readline that would also split on U+2028/U+2029 inside a JSON string), stripping
one trailing \\r. Responses are correlated by the `id` we put on every command; events
carry no id and feed the live activity: in-flight tools keyed by toolCallId (with
parentToolCallId for nested calls) and the idle signal (`agent_settled`; for pi before
0.80.4, `agent_end` confirmed by `get_state().isStreaming == false`).

The read loop must outlive any output: if it died, the client would read as idle and a
running pi node would settle mid-run. So lines are split incrementally (`LineSplitter`:
only the new chunk is searched, never the buffered prefix again), a line over
`max_line_bytes` is dropped and counted instead of buffered, and each line's decoding
and handling fails alone (bad JSON, nesting deep enough for RecursionError, a hook that
raises) — counted or logged, never fatal to the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from legion_tui.model import InFlightTool

__all__ = ["CommandSink", "LineSplitter", "RpcClient", "RpcError", "pump_lines", "split_lines"]

log = logging.getLogger(__name__)

EventHook = Callable[[dict[str, Any]], None]

WRITE_BOUND = 5.0  # a child that does not drain its stdin for this long is stuck
STATE_BOUND = 5.0
# pi's largest lines are message_end / tool results carrying a whole tool output; 16 MiB
# is far above any real one and still a bounded buffer.
MAX_LINE_BYTES = 16 * 1024 * 1024


class CommandSink(Protocol):
    """The write side (a StreamWriter on the child's stdin, or a test double)."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class RpcError(Exception):
    """A command answered with success:false (or the connection is gone)."""

    def __init__(self, command: str, message: str) -> None:
        super().__init__(f"{command}: {message}")
        self.command = command
        self.message = message


def split_lines(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Whole LF-terminated records (one trailing CR stripped) and the unfinished rest."""
    *lines, rest = buffer.split(b"\n")
    return [line.removesuffix(b"\r") for line in lines], rest


class LineSplitter:
    """Whole LF-terminated records out of a byte stream, in time linear in its size.

    The unfinished line is kept as a list of pieces (joined once, when its newline
    comes), so a long line arriving in many chunks is never re-copied or re-searched.
    A line longer than `max_line_bytes` is dropped as it streams (memory stays bounded)
    and counted in `too_long`.
    """

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self.too_long = 0
        self._pieces: list[bytes] = []
        self._size = 0
        self._dropping = False  # inside an over-long line: skip to its newline

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines `chunk` completes (one trailing CR stripped each)."""
        out: list[bytes] = []
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                self._keep(chunk[start:])
                return out
            self._keep(chunk[start:newline])
            if not self._dropping:
                out.append(b"".join(self._pieces).removesuffix(b"\r"))
            self._pieces, self._size, self._dropping = [], 0, False
            start = newline + 1

    def _keep(self, piece: bytes) -> None:
        if self._dropping or not piece:
            return
        self._size += len(piece)
        if self._size > self.max_line_bytes:
            self.too_long += 1
            self._pieces, self._size, self._dropping = [], 0, True
            return
        self._pieces.append(piece)


READ_CHUNK = 65536


async def pump_lines(
    stdout: asyncio.StreamReader,
    splitter: LineSplitter,
    dispatch: Callable[[bytes], None],
    dropped: Callable[[int], None],
) -> None:
    """Hand every whole, non-blank line of `stdout` to `dispatch` (and the count of lines
    dropped for their length to `dropped`) until EOF or a broken pipe.

    The one read loop of the three JSON-lines clients — pi's RPC here, Claude Code's
    stream-json, Codex's app-server: it must outlive any output, so `dispatch` handles
    each line alone and never raises."""
    with contextlib.suppress(ConnectionError, OSError):
        while chunk := await stdout.read(READ_CHUNK):
            too_long = splitter.too_long
            for line in splitter.feed(chunk):
                if line.strip():
                    dispatch(line)
            if splitter.too_long != too_long:
                dropped(splitter.too_long - too_long)


class RpcClient:
    """One RPC connection over a child's stdin/stdout pipes."""

    def __init__(
        self,
        stdin: CommandSink,
        stdout: asyncio.StreamReader,
        *,
        on_event: EventHook | None = None,
        clock: Callable[[], float] = time.time,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self._on_event = on_event
        self._clock = clock
        self._ids = itertools.count(1)
        # id → (command, future): a reply without an id is matched by its command.
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self.in_flight: dict[str, InFlightTool] = {}
        self.streaming = False
        # pi retries a provider error itself (auto_retry_start … auto_retry_end): while it
        # waits to retry, get_state says not streaming, yet the run is not over.
        self.retrying = False
        self.idle = asyncio.Event()
        self.idle.set()
        self.closed = asyncio.Event()  # stdout reached EOF: the agent is gone
        self.skipped_lines = 0  # lines that were not a JSON object (or too long)
        self._lines = LineSplitter(max_line_bytes)
        self.turns = 0
        self.runs = 0  # agent_start count: tells a stale idle confirmation from a fresh one
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    # -- commands --------------------------------------------------------------------

    async def request(self, command: str, *, bound: float = 30.0, **fields: Any) -> dict[str, Any]:
        """Send one command and return its response's `data` (or {}); bounded.

        Raises RpcError on success:false or a closed connection, TimeoutError past `bound`.
        """
        fut = self.send(command, **fields)
        try:
            reply = await asyncio.wait_for(fut, bound)
        finally:
            if not fut.done():
                fut.cancel()
        if not reply.get("success"):
            raise RpcError(command, str(reply.get("error") or "failed"))
        data = reply.get("data")
        return data if isinstance(data, dict) else {}

    def send(self, command: str, **fields: Any) -> asyncio.Future[dict[str, Any]]:
        """Write one command now; the future resolves with its raw response."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[dict[str, Any]] = loop.create_future()
        if self.closed.is_set():
            fut.set_exception(RpcError(command, "the agent's RPC channel is closed"))
            return fut
        req_id = next(self._ids)
        self._pending[req_id] = (command, fut)
        fut.add_done_callback(lambda _f: self._pending.pop(req_id, None))
        payload = {"id": req_id, "type": command, **fields}
        line = json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            self._stdin.write(line.encode())
        except (ConnectionError, RuntimeError) as err:
            fut.set_exception(RpcError(command, f"cannot write: {err}"))
            return fut
        self._spawn(self._drain())
        return fut

    def reply(self, payload: dict[str, Any]) -> None:
        """Write one line that answers pi (an `extension_ui_response`): no reply comes."""
        line = json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n"
        with contextlib.suppress(ConnectionError, RuntimeError):  # gone: so is its question
            self._stdin.write(line.encode())
            self._spawn(self._drain())

    async def _drain(self) -> None:
        with contextlib.suppress(ConnectionError, TimeoutError, RuntimeError):
            await asyncio.wait_for(self._stdin.drain(), WRITE_BOUND)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Close stdin (pi exits on EOF) and stop reading; never blocks for long."""
        with contextlib.suppress(Exception):
            self._stdin.close()
        self._reader.cancel()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.gather(self._reader, return_exceptions=True), 1.0)
        self._fail_pending("closed")

    # -- reading -----------------------------------------------------------------------

    def _dropped(self, count: int) -> None:
        self.skipped_lines += count

    async def _read_loop(self) -> None:
        try:
            await pump_lines(self._stdout, self._lines, self._dispatch, self._dropped)
        finally:
            self.closed.set()
            self.streaming = False
            self.in_flight.clear()
            self.idle.set()
            self._fail_pending("the agent closed its output")

    def _fail_pending(self, why: str) -> None:
        for _command, fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(RpcError("rpc", why))

    def _waiting_for(self, reply: dict[str, Any]) -> asyncio.Future[dict[str, Any]] | None:
        """The request a response answers: by its id, or — pi answers an unknown command
        (0.73 has no `clear_queue`) and a line it cannot parse without one — the oldest
        open request of the same command."""
        req_id = reply.get("id")
        if isinstance(req_id, int):
            pending = self._pending.get(req_id)
            return None if pending is None else pending[1]
        command = reply.get("command")
        for name, fut in self._pending.values():  # dicts keep insertion (= send) order
            if name == command and not fut.done():
                return fut
        return None

    def _dispatch(self, line: bytes) -> None:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # not UTF-8 / not JSON / nested too deep
            self.skipped_lines += 1  # e.g. a stray print from an extension
            return
        if not isinstance(obj, dict):
            self.skipped_lines += 1
            return
        if obj.get("type") == "response":
            fut = self._waiting_for(obj)
            if fut is not None and not fut.done():
                fut.set_result(obj)
            return
        try:
            self._track(obj)
            if self._on_event is not None:
                self._on_event(obj)
        except Exception:
            # One event the supervisor could not take (a bug, a malformed field) must
            # not end the read loop: that would read as idle and settle a running node.
            log.exception("rpc event not handled: %.200r", obj)

    def _track(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "agent_start":
            self.runs += 1
            self.streaming = True
            self.idle.clear()
        elif kind == "turn_start":
            self.turns += 1
        elif kind == "tool_execution_start":
            call_id = str(event.get("toolCallId", ""))
            parent = event.get("parentToolCallId")
            self.in_flight[call_id] = InFlightTool(
                id=call_id,
                name=str(event.get("toolName", "")),
                started_at=self._clock(),
                parent_id=parent if isinstance(parent, str) else None,
            )
        elif kind == "tool_execution_end":
            self.in_flight.pop(str(event.get("toolCallId", "")), None)
        elif kind == "auto_retry_start":
            self.retrying = True
        elif kind == "auto_retry_end":
            self.retrying = False
            if not event.get("success"):
                # Retries given up (or cancelled): the agent_end before it was the last.
                self._spawn(self._confirm_idle())
        elif kind == "agent_settled":
            self._settle()
        elif kind == "agent_end" and not event.get("willRetry"):
            # Older pi has no agent_settled: confirm with get_state (retries, compaction
            # and queued messages can follow agent_end). pi 0.73 announces a retry with
            # auto_retry_start right after agent_end, before it reads our get_state.
            self._spawn(self._confirm_idle())

    def expect_run(self, runs_before: int) -> None:
        """A prompt was accepted: a run is starting even if agent_start is still in flight.

        pi answers `prompt` before it emits agent_start; without this an abort right
        after a launch would wrongly read the agent as idle. `runs_before` is `runs` when
        the prompt was sent: if an agent_start came since, the events already tell the
        truth (the run may even be over) and must not be overridden.
        """
        if self.runs == runs_before and not self.closed.is_set():
            self.streaming = True
            self.idle.clear()

    def _settle(self) -> None:
        self.streaming = False
        self.retrying = False
        self.in_flight.clear()
        self.idle.set()

    async def _confirm_idle(self) -> None:
        runs = self.runs
        with contextlib.suppress(RpcError, TimeoutError):
            state = await self.request("get_state", bound=STATE_BOUND)
            if (
                not state.get("isStreaming")
                and self.runs == runs
                and self.streaming
                and not self.retrying
            ):
                self._settle()
