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
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

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


class LegionClient:
    """One connection to a supervisor; requests are answered in order."""

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
        self._lock = asyncio.Lock()

    @classmethod
    def from_env(cls) -> LegionClient:
        socket_path = os.environ.get(ENV_SOCKET)
        if not socket_path:
            raise LegionRequestError("NO_SOCKET", f"{ENV_SOCKET} is not set")
        return cls(socket_path, os.environ.get(ENV_NODE_ID) or ROOT_CALLER)

    async def __aenter__(self) -> LegionClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Connect now (retried within the bound); a request connects by itself too."""
        if self._sock is None:
            await self._retrying(self._open)

    async def close(self) -> None:
        self._drop()

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer.clear()

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return its `result`; raise LegionRequestError on refusal."""
        async with self._lock:
            req_id = next(self._ids)
            payload = {"id": req_id, "op": op, "from": self.caller, **fields}
            data = json.dumps(payload).encode() + b"\n"
            try:
                reply = await self._retrying(lambda: self._exchange(data))
            except asyncio.CancelledError:
                # Its reply may still come: on this connection it would answer the next
                # request. A new connection for that one.
                self._drop()
                raise
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise LegionRequestError(
                str(error.get("code", "ERROR")), str(error.get("message", "request failed"))
            )
        result = reply.get("result") or {}
        if not isinstance(result, dict):
            raise LegionRequestError("BAD_REPLY", "the supervisor's result is not an object")
        return result

    async def _retrying(self, attempt: Callable[[], Awaitable[_T]]) -> _T:
        """`attempt` until it succeeds, is refused for good, or `retry_seconds` pass."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.retry_seconds
        pause = FIRST_PAUSE
        tries = 0
        while True:
            tries += 1
            try:
                return await attempt()
            except _Again as again:
                self._drop()
                left = deadline - loop.time()
                if left <= 0:
                    raise LegionRequestError(again.code, self._gave_up(again, tries)) from None
                if again.pause:
                    # Jittered: a thousand clients refused at once do not return at once.
                    await asyncio.sleep(min(left, pause * random.uniform(0.5, 1.0)))
                    pause = min(pause * 2, MAX_PAUSE)

    def _gave_up(self, again: _Again, tries: int) -> str:
        said = {
            "BUSY": f"the supervisor at {self.socket_path} is too busy to take the request",
            "NO_SUPERVISOR": f"no live supervisor at {self.socket_path}",
            "DISCONNECTED": f"the supervisor at {self.socket_path} did not answer",
        }.get(again.code, f"the supervisor at {self.socket_path} did not take the request")
        why = " ".join(again.why.split())  # one line, whatever the server said
        return f"{said}: {why} (tried {tries} times in {self.retry_seconds:g} s)"

    async def _open(self) -> None:
        """A connected socket. A non-blocking AF_UNIX connect never waits: EAGAIN is the
        kernel's queue of unaccepted connections being full (asyncio's own connect takes
        that for success, and the first write fails with EINVAL)."""
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

    async def _exchange(self, data: bytes) -> dict[str, Any]:
        """Send one request line and return the reply to it."""
        if self._sock is None:
            await self._open()
        sock = self._sock
        assert sock is not None
        with contextlib.suppress(OSError):  # reset or closed: the server may have said why
            await asyncio.get_running_loop().sock_sendall(sock, data)
        line = await self._read_line(sock)
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

    async def _read_line(self, sock: socket.socket) -> bytes:
        """One LF-terminated line (b"" when the connection ended before any byte of it)."""
        loop = asyncio.get_running_loop()
        start = 0
        while (newline := self._buffer.find(b"\n", start)) < 0:
            if len(self._buffer) > MAX_LINE:
                raise LegionRequestError(
                    "BAD_REPLY", f"the supervisor's reply is over {MAX_LINE} bytes"
                )
            start = len(self._buffer)
            try:
                chunk = await loop.sock_recv(sock, 256 * 1024)
            except OSError:  # reset (the server closed with our request unread), or gone
                chunk = b""
            if not chunk:
                if self._buffer:
                    raise LegionRequestError(
                        "DISCONNECTED", "the supervisor closed the connection mid-reply"
                    )
                return b""
            self._buffer += chunk
        line = bytes(self._buffer[: newline + 1])
        del self._buffer[: newline + 1]
        return line

