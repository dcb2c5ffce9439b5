"""Client side of the supervisor's Unix socket (SPEC §5): one JSON object per line.

Request:  {"id": <int>, "op": "<op>", "from": "<caller node id>", ...fields}
Reply:    {"id": <int>, "ok": true, "result": {...}}
      or  {"id": <int>, "ok": false, "error": {"code": "<CODE>", "message": "<text>"}}

Ops and their fields (the server in `supervisor/socket/server.py` is the authority):
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
  resume   name ("all": parallel: int), with_parents: bool            -> {receipt}
  mail     to, subject, body, kind, urgency      -> {message_id, to, to_path, state}
  phase    to, note?, evidence?, reason?, supersedes?: [str]
           -> {phase, from, receipt, verification?}

Connecting and retrying: a request the server did not read — it answered `BUSY` (at its
connection limit or byte budget) or `IDLE_CLOSED` (an idle connection it closed), or the
connection failed before any reply (refused, reset, the kernel's queue full) — is sent
again on a new connection, with a growing pause, for at most `retry_seconds`; then a
`wire.RequestError` says what happened in one line. The server never drops a request it
has read without answering it (unless it is going away, and then no new connection
succeeds), so a request is never run twice.

Two clients speak it: `LegionClient` (asyncio, for callers inside a loop: the simulated
agent, the tests) and `BlockingClient` (plain blocking socket calls, for the control verbs:
a verb is one request, and importing asyncio alone costs a bare interpreter's start-up
again — SPEC §8 gives a verb 2.5× that). So this module never imports asyncio at its
top; `LegionClient` imports it where it runs. What both share — the connection, the
request line, the reply's checks, the retries — is `client_protocol`.
"""

from __future__ import annotations

import _socket
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Self, TypeVar

from legion_tui.wire.client_protocol import RECV_BYTES, Again, Backoff, ClientProtocol
from legion_tui.wire.reply_bound import LOOK_S, check_host, peer_pid, reply_bound

if TYPE_CHECKING:
    import asyncio
    import socket

__all__ = ["BlockingClient", "LegionClient"]

_T = TypeVar("_T")


class LegionClient(ClientProtocol):
    """One connection to a supervisor, for a caller inside an asyncio loop; requests are
    answered in order."""

    _lock: asyncio.Lock | None = None  # made by the first request, in the loop it runs in
    _sock: socket.socket | None  # asyncio's sock_* calls take a `socket.socket`

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

    def _open(self) -> socket.socket:
        import socket  # here, not at the top: a control verb's blocking client never needs it

        return self._connected(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))

    async def close(self) -> None:
        self._drop()

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return its `result`; raise RequestError on refusal."""
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
        backoff = Backoff(self, loop.time())
        while True:
            try:
                return await attempt()
            except Again as again:
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
        """The next reply line (`_received` raises when the connection ends first)."""
        import asyncio

        loop = asyncio.get_running_loop()
        while (line := self._next_reply()) is None:
            try:
                chunk = await loop.sock_recv(sock, RECV_BYTES)
            except OSError:  # reset (the server closed with our request unread), or gone
                chunk = b""
            self._received(chunk)
        return line


class BlockingClient(ClientProtocol):
    """One connection to a supervisor on plain blocking calls — a control verb's one
    request needs no event loop. Same requests, retries and errors as `LegionClient`."""

    @classmethod
    def like(cls, client: ClientProtocol) -> BlockingClient:
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
        """Send one request and return its `result`; raise RequestError on refusal, or
        when the host is stopped or does not answer within the op's bound (reply_bound)."""
        data = self._request_line(op, fields)
        bound = reply_bound(op, fields)
        try:
            reply = self._retrying(lambda: self._exchange(data, op, bound))
        except BaseException:
            # Out with no reply read (Ctrl-C in a wait, a broken reply): on this
            # connection its reply would answer the next request. A new one for that.
            self._drop()
            raise
        return self._result_of(reply)

    def _retrying(self, attempt: Callable[[], _T]) -> _T:
        backoff = Backoff(self, time.monotonic())
        while True:
            try:
                return attempt()
            except Again as again:
                pause = backoff.after(again, time.monotonic())
            if pause:
                time.sleep(pause)

    def _exchange(self, data: bytes, op: str, bound: float | None) -> dict[str, Any]:
        if self._sock is None:
            self._connect()
        sock = self._sock
        assert sock is not None
        # Every send and read waits at most LOOK_S, then looks at the host (reply_bound):
        # a stopped one takes the request into its buffers and never answers.
        sock.settimeout(LOOK_S)
        host, started = peer_pid(sock), time.monotonic()

        def look() -> None:
            check_host(host, op, time.monotonic() - started, bound)

        with contextlib.suppress(OSError):  # reset or closed: the server may have said why
            self._send_all(sock, data, look)
        return self._reply_of(self._read_line(sock, look))

    @staticmethod
    def _send_all(sock: _socket.socket, data: bytes, look: Callable[[], None]) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[sock.send(view) :]
            except TimeoutError:
                look()

    def _read_line(self, sock: _socket.socket, look: Callable[[], None]) -> bytes:
        """The next reply line; `look` at the host each time LOOK_S passes without one."""
        while (line := self._next_reply()) is None:
            try:
                chunk = sock.recv(RECV_BYTES)
            except TimeoutError:
                look()
                continue
            except OSError:  # reset (the server closed with our request unread), or gone
                chunk = b""
            self._received(chunk)
        return line
