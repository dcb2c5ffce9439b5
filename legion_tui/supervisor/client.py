"""Client side of the supervisor's Unix socket (SPEC §5): one JSON object per line.

Request:  {"id": <int>, "op": "<op>", "from": "<caller node id>", ...fields}
Reply:    {"id": <int>, "ok": true, "result": {...}}
      or  {"id": <int>, "ok": false, "error": {"code": "<CODE>", "message": "<text>"}}

Ops and their fields (the server in `supervisor/server.py` is the authority):
  spawn    children: [{role, task, name?, phases?, kind?, worktree?}]
           -> {nodes: [{id, name, path}], warnings?: [str]}
  wait     names: [str] | null, timeout: float | null                   -> {state, nodes: [...]}
           (state "mail": the caller's letters ended the wait: {message_ids, text})
  collect  name                        -> {text, verdict, output_file, delivery?: {branch,
                                          head_sha, link, commits, dirty}}
  stop     name ("all" allowed), force: bool                            -> {receipt}
  abort    name, keep_queue: bool                                       -> {outcome, receipt}
  steer    name, text                                                   -> {outcome}
  status   name | null                                                  -> {run_id, session, nodes}
  tree                                                                  -> {text}
  resume   name                                                         -> {receipt}
  mail     to, subject, body, kind, urgency      -> {message_id, to, to_path, state}
  phase    to, note?, evidence?, reason?, supersedes?: [str]
           -> {phase, from, receipt, verification?}

Connecting and retrying: a request the server did not read — it answered `BUSY` (at its
connection limit or byte budget) or `IDLE_CLOSED` (an idle connection it closed), or the
connection failed before any reply (refused, reset, the kernel's queue full) — is sent
again on a new connection, with a growing pause, for at most `retry_seconds`; then a
LegionRequestError says what happened in one line. The server never drops a request it
has read without answering it (unless it is going away, and then no new connection
succeeds), so a request is never run twice.

Two clients speak it: `LegionClient` (asyncio, for callers inside a loop: the simulated
agent, the tests) and `BlockingClient` (plain blocking socket calls, for the control verbs:
a verb is one request, and importing asyncio alone costs a bare interpreter's start-up
again — SPEC §8 gives a verb 2.5× that). So this module never imports asyncio at its
top; `LegionClient` imports it where it runs.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

if TYPE_CHECKING:
    import asyncio

ENV_SOCKET = "LEGION_SOCKET"
ENV_NODE_ID = "LEGION_NODE_ID"
ENV_RUN_DIR = "LEGION_RUN_DIR"
ENV_RUN_ID = "LEGION_RUN_ID"
ROOT_CALLER = "root"  # a user's own shell acts as root

MAX_LINE = 16 * 1024 * 1024
RETRY_SECONDS = 10.0  # how long a client keeps trying a supervisor that does not take it
FIRST_PAUSE = 0.02
MAX_PAUSE = 0.5
NOT_READ = frozenset({"BUSY", "IDLE_CLOSED"})  # server notices: the request was not read
RECV_BYTES = 256 * 1024

_T = TypeVar("_T")


class LegionRequestError(Exception):
    """The supervisor refused or failed a request; `code` is machine-readable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Again(Exception):
    """This attempt failed before the request was read: try again (code, why)."""

    def __init__(self, code: str, why: str, *, pause: bool = True) -> None:
        super().__init__(why)
        self.code = code
        self.why = why
        self.pause = pause


class _Backoff:
    """The retry schedule of one request: growing, jittered pauses within a deadline."""

    def __init__(self, client: _Wire, now: float) -> None:
        self.client = client
        self.deadline = now + client.retry_seconds
        self.pause = FIRST_PAUSE
        self.tries = 0

    def after(self, again: _Again, now: float) -> float:
        """The pause before the next try; LegionRequestError once the time is up."""
        self.tries += 1
        self.client._drop()
        left = self.deadline - now
        if left <= 0:
            raise LegionRequestError(again.code, self.client._gave_up(again, self.tries))
        if not again.pause:
            return 0.0
        # Jittered: a thousand clients refused at once do not return at once.
        pause = min(left, self.pause * random.uniform(0.5, 1.0))
        self.pause = min(self.pause * 2, MAX_PAUSE)
        return pause


class _Wire:
    """The protocol without the waiting: the connection, the request line, the reply's
    checks. `LegionClient` and `BlockingClient` add only how they wait for the socket."""

    def __init__(
        self,
        socket_path: str | Path,
        caller: str = ROOT_CALLER,
        *,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self.socket_path = str(socket_path)
        self.caller = caller
        self.retry_seconds = retry_seconds
        self._sock: socket.socket | None = None
        self._buffer = bytearray()
        self._ids = itertools.count(1)

    @classmethod
    def from_env(cls) -> Self:
        socket_path = os.environ.get(ENV_SOCKET)
        if not socket_path:
            raise LegionRequestError("NO_SOCKET", f"{ENV_SOCKET} is not set")
        return cls(socket_path, os.environ.get(ENV_NODE_ID) or ROOT_CALLER)

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer.clear()

    def _request_line(self, op: str, fields: dict[str, Any]) -> bytes:
        payload = {"id": next(self._ids), "op": op, "from": self.caller, **fields}
        return json.dumps(payload).encode() + b"\n"

    @staticmethod
    def _result_of(reply: dict[str, Any]) -> dict[str, Any]:
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise LegionRequestError(
                str(error.get("code", "ERROR")), str(error.get("message", "request failed"))
            )
        result = reply.get("result") or {}
        if not isinstance(result, dict):
            raise LegionRequestError("BAD_REPLY", "the supervisor's result is not an object")
        return result

    def _gave_up(self, again: _Again, tries: int) -> str:
        said = {
            "BUSY": f"the supervisor at {self.socket_path} is too busy to take the request",
            "NO_SUPERVISOR": f"no live supervisor at {self.socket_path}",
            "DISCONNECTED": f"the supervisor at {self.socket_path} did not answer",
        }.get(again.code, f"the supervisor at {self.socket_path} did not take the request")
        why = " ".join(again.why.split())  # one line, whatever the server said
        return f"{said}: {why} (tried {tries} times in {self.retry_seconds:g} s)"

    def _open(self) -> socket.socket:
        """A connected (non-blocking) socket. A non-blocking AF_UNIX connect never waits:
        EAGAIN is the kernel's queue of unaccepted connections being full (asyncio's own
        connect takes that for success, and the first write fails with EINVAL)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(self.socket_path)
        except BlockingIOError:
            sock.close()
            raise _Again("BUSY", "its queue of new connections is full") from None
        except ConnectionRefusedError:
            sock.close()  # a socket file nobody listens on (yet, or any more)
            raise _Again("NO_SUPERVISOR", "connection refused") from None
        except OSError as err:
            sock.close()
            raise LegionRequestError(
                "NO_SUPERVISOR",
                f"no live supervisor at {self.socket_path}: {err.strerror or err}",
            ) from err
        self._sock = sock
        self._buffer.clear()
        return sock

    def _take_line(self, start: int) -> bytes | None:
        """The buffer's first LF-terminated line, taken out of it; None while there is
        none yet (bytes before `start` were searched already)."""
        newline = self._buffer.find(b"\n", start)
        if newline < 0:
            if len(self._buffer) > MAX_LINE:
                raise LegionRequestError(
                    "BAD_REPLY", f"the supervisor's reply is over {MAX_LINE} bytes"
                )
            return None
        line = bytes(self._buffer[: newline + 1])
        del self._buffer[: newline + 1]
        return line

    def _ended(self) -> bytes:
        """The connection ended: b"" when no byte of a reply came, else an error."""
        if self._buffer:
            raise LegionRequestError(
                "DISCONNECTED", "the supervisor closed the connection mid-reply"
            )
        return b""

    @staticmethod
    def _reply_of(line: bytes) -> dict[str, Any]:
        """The reply on `line`; _Again when it is the server's notice it did not read."""
        if not line:
            raise _Again("DISCONNECTED", "the connection was reset or closed with no reply")
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError) as err:
            raise LegionRequestError(
                "BAD_REPLY", f"the supervisor's reply is not JSON: {err}"
            ) from err
        if not isinstance(reply, dict):
            raise LegionRequestError("BAD_REPLY", "the supervisor's reply is not an object")
        error = reply.get("error")
        if reply.get("id") is None and isinstance(error, dict) and error.get("code") in NOT_READ:
            code = str(error["code"])
            raise _Again(code, str(error.get("message", "")), pause=code != "IDLE_CLOSED")
        return reply


class LegionClient(_Wire):
    """One connection to a supervisor, for a caller inside an asyncio loop; requests are
    answered in order."""

    _lock: asyncio.Lock | None = None  # made by the first request, in the loop it runs in

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Connect now (retried within the bound); a request connects by itself too."""
        if self._sock is None:
            await self._retrying(self._connect)

    async def _connect(self) -> None:
        self._open()

    async def close(self) -> None:
        self._drop()

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return its `result`; raise LegionRequestError on refusal."""
        import asyncio

        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            data = self._request_line(op, fields)
            try:
                reply = await self._retrying(lambda: self._exchange(data))
            except asyncio.CancelledError:
                # Its reply may still come: on this connection it would answer the next
                # request. A new connection for that one.
                self._drop()
                raise
        return self._result_of(reply)

    async def _retrying(self, attempt: Callable[[], Awaitable[_T]]) -> _T:
        """`attempt` until it succeeds, is refused for good, or `retry_seconds` pass."""
        import asyncio

        loop = asyncio.get_running_loop()
        backoff = _Backoff(self, loop.time())
        while True:
            try:
                return await attempt()
            except _Again as again:
                pause = backoff.after(again, loop.time())
            if pause:
                await asyncio.sleep(pause)

    async def _exchange(self, data: bytes) -> dict[str, Any]:
        """Send one request line and return the reply to it."""
        import asyncio

        sock = self._sock or self._open()
        with contextlib.suppress(OSError):  # reset or closed: the server may have said why
            await asyncio.get_running_loop().sock_sendall(sock, data)
        return self._reply_of(await self._read_line(sock))

    async def _read_line(self, sock: socket.socket) -> bytes:
        """One LF-terminated line (b"" when the connection ended before any byte of it)."""
        import asyncio

        loop = asyncio.get_running_loop()
        start = 0
        while (line := self._take_line(start)) is None:
            start = len(self._buffer)
            try:
                chunk = await loop.sock_recv(sock, RECV_BYTES)
            except OSError:  # reset (the server closed with our request unread), or gone
                chunk = b""
            if not chunk:
                return self._ended()
            self._buffer += chunk
        return line


class BlockingClient(_Wire):
    """One connection to a supervisor on plain blocking calls — a control verb's one
    request needs no event loop. Same requests, retries and errors as `LegionClient`."""

    @classmethod
    def like(cls, client: _Wire) -> BlockingClient:
        """The blocking twin of `client` (same socket, caller and retry bound)."""
        return cls(client.socket_path, client.caller, retry_seconds=client.retry_seconds)

    def __enter__(self) -> Self:
        self._retrying(self._connect)
        return self

    def __exit__(self, *exc: object) -> None:
        self._drop()

    def _connect(self) -> None:
        self._open().setblocking(True)  # connected without waiting; now wait on replies

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return its `result`; raise LegionRequestError on refusal."""
        data = self._request_line(op, fields)
        try:
            reply = self._retrying(lambda: self._exchange(data))
        except BaseException:
            # Out with no reply read (Ctrl-C in a wait, a broken reply): on this
            # connection its reply would answer the next request. A new one for that.
            self._drop()
            raise
        return self._result_of(reply)

    def _retrying(self, attempt: Callable[[], _T]) -> _T:
        backoff = _Backoff(self, time.monotonic())
        while True:
            try:
                return attempt()
            except _Again as again:
                pause = backoff.after(again, time.monotonic())
            if pause:
                time.sleep(pause)

    def _exchange(self, data: bytes) -> dict[str, Any]:
        if self._sock is None:
            self._connect()
        sock = self._sock
        assert sock is not None
        with contextlib.suppress(OSError):  # reset or closed: the server may have said why
            sock.sendall(data)
        return self._reply_of(self._read_line(sock))

    def _read_line(self, sock: socket.socket) -> bytes:
        start = 0
        while (line := self._take_line(start)) is None:
            start = len(self._buffer)
            try:
                chunk = sock.recv(RECV_BYTES)
            except OSError:  # reset (the server closed with our request unread), or gone
                chunk = b""
            if not chunk:
                return self._ended()
            self._buffer += chunk
        return line
