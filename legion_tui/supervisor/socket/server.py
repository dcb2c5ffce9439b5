"""The supervisor's Unix socket (SPEC §5): one JSON object per line each way.

The wire protocol and op list are documented in `legion_tui/wire/client.py`. The caller
is who the kernel says connected (`identity`), never only what the request claims. Each
request is answered in order on its connection; connections are served concurrently (a
long `wait` on one does not hold up another). Malformed JSON, an unknown op or a missing
field gets an error reply and the connection keeps being served.

Under load and from hostile clients (`intake` holds the limits): at most
`max_connections` from outside the host at once — one more is answered `BUSY` and
closed, or an idle one is closed to make room; a connection idle for `idle_seconds`
is told `IDLE_CLOSED` and closed (a request being answered, a `wait`, is not idle); a
line too long, too deep, with too many values, or beyond the shared byte budget is
answered with an error line. BUSY and IDLE_CLOSED say the request was not read: the
client sends it again. Refusals and failed accepts are logged once, then counted.

The ops themselves are `server_ops` (the dispatch table, `OPS`) and a
request's way to its op is `dispatch`; this module is the socket: accepting, framing,
and answering each connection in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import resource
import socket
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui.supervisor.socket import intake
from legion_tui.supervisor.socket.dispatch import Dispatcher, encode_reply, error_reply
from legion_tui.supervisor.socket.identity import Peer, peer_of, peer_pid
from legion_tui.supervisor.socket.intake import (
    ByteBudget,
    Line,
    RequestFramer,
    SocketLimits,
    connection_cap,
    parse_request,
)
from legion_tui.wire.names import OpError

if TYPE_CHECKING:
    from legion_tui.supervisor.front import Front

__all__ = ["SupervisorServer"]

log = logging.getLogger(__name__)


class _Throttled:
    """A log line for the first of a kind of trouble, then at most one per `interval`
    with the count since: a client that retries a refusal a thousand times a second, or
    an accept that keeps failing, must not fill the log (it did: hundreds of MB)."""

    def __init__(self, interval: float = 60.0) -> None:
        self.interval = interval
        self._last: dict[str, float] = {}
        self._since: dict[str, int] = {}

    def warn(self, kind: str, message: str) -> None:
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self.interval:
            self._since[kind] = self._since.get(kind, 0) + 1
            return
        self._last[kind] = now
        more = self._since.pop(kind, 0)
        said = f" ({more} more since the last report)" if more else ""
        log.warning("socket: %s%s; logged at most once a minute", message, said)


class _Idle(Exception):
    """The connection waited too long for a request (or was closed to make room)."""


@dataclass(eq=False, slots=True)
class _Connection:
    sock: socket.socket
    peer: Peer
    outside: bool  # not the host's own process: counted against the cap
    idle_since: float
    busy: bool = False  # a request is being answered: never idle, never evicted
    waiting: asyncio.Timeout | None = None  # the idle timer while waiting for a request
    evicted: bool = False

    def evict(self) -> bool:
        """Close it as soon as its task runs (it is waiting for a request)."""
        if self.busy or self.waiting is None or self.waiting.expired():
            return False
        self.evicted = True
        self.waiting.reschedule(asyncio.get_running_loop().time())
        return True


CHUNK = 64 * 1024  # one read from a connection
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_CLIENT_LEFT = frozenset({errno.ECONNABORTED, errno.EPROTO, errno.EPERM, errno.EINTR})
NOTICE_SECONDS = 1.0  # to hand an IDLE_CLOSED notice to a client before closing anyway


class SupervisorServer:
    """Serves the socket: its own accept loop (raw sockets, so that nothing is buffered or
    retried behind its back), one task per connection, at most `max_connections` from
    outside the host, idle ones closed, every request bounded (`intake`)."""

    def __init__(self, supervisor: Front, limits: SocketLimits | None = None) -> None:
        self.supervisor = supervisor
        self.dispatcher = Dispatcher(supervisor)
        self.limits = limits
        self._listener: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._path: Path | None = None
        self._link: Path | None = None
        self._connections: dict[_Connection, asyncio.Task[None]] = {}
        self._closed_one = asyncio.Event()
        self._budget = ByteBudget(0)
        self._throttled = _Throttled()
        self.max_connections = 0

    async def start(self, path: Path, *, link: Path | None = None) -> None:
        # The limits in force when serving starts (tests set intake.DEFAULT_LIMITS first).
        limits = self.limits = self.limits or intake.DEFAULT_LIMITS
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        nofile = soft if soft != resource.RLIM_INFINITY else 1 << 20
        self.max_connections = limits.max_connections or connection_cap(nofile)
        self._budget = ByteBudget(limits.total_bytes)
        # A socket file left by a host that died is stale: the caller has already checked
        # that no live owner answers on it (runs.open_session), so it is safe to replace.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(os.fspath(path))
            os.chmod(path, 0o600)  # before listen: nobody can connect to it until then
            listener.listen(limits.backlog)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        self._listener = listener
        self._path = path
        self._accepting = asyncio.create_task(self._accept_loop(), name="socket-accept")
        if link is not None and link != path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(link)
            os.symlink(path, link)
            self._link = link

    async def close(self) -> None:
        if self._accepting is not None:
            self._accepting.cancel()
            await asyncio.gather(self._accepting, return_exceptions=True)
            self._accepting = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            tasks = list(self._connections.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for p in (self._link, self._path):
            if p is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)

    @property
    def requests(self) -> int:
        return self.dispatcher.requests

    @property
    def errors(self) -> int:
        return self.dispatcher.errors

    # -- accepting ---------------------------------------------------------------------

    async def _accept_loop(self) -> None:
        assert self._listener is not None
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, _addr = await loop.sock_accept(self._listener)
            except OSError as err:
                if err.errno in _CLIENT_LEFT:
                    continue  # that client left before it was accepted
                if err.errno not in _OUT_OF_RESOURCES:
                    log.error("socket: the listener failed, no more connections: %s", err)
                    return
                # Out of fds or memory: the connection stays queued in the kernel. Shed an
                # idle connection, wait for one to close (bounded: the fds may be held by
                # something else), and never log each failure.
                self._throttled.warn("accept", f"cannot accept a connection: {err}")
                self._make_room(loop.time())
                self._closed_one.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.5):
                        await self._closed_one.wait()
                continue
            try:
                self._admit(sock, loop.time())
            except Exception as err:  # a bug here must not end the accept loop
                self._throttled.warn("admit", f"admitting a connection failed: {err!r}")
                sock.close()

    def _admit(self, sock: socket.socket, now: float) -> None:
        sock.setblocking(False)
        pid = peer_pid(sock)
        # The host's own in-process agents reach it over the socket too: never refused.
        outside = pid != os.getpid()
        if outside and not self._has_room(now):
            # Refused before /proc is read: under a storm of retries (1000 clients at
            # once, the cap 256) reading each refused peer's ancestry and environ kept
            # the host from serving the connections it had taken.
            self._refuse(sock)
            return
        peer = peer_of(pid, self.supervisor.ctx.run.run_id)
        conn = _Connection(sock, peer, outside, idle_since=now)
        self._connections[conn] = asyncio.create_task(self._serve(conn), name="socket-conn")

    def _has_room(self, now: float) -> bool:
        served = sum(1 for c in self._connections if c.outside and not c.evicted)
        return served < self.max_connections or self._make_room(now)

    def _make_room(self, now: float) -> bool:
        """Close the connection idle the longest (if idle long enough): a new client is
        served rather than refused while idle ones hold every place."""
        assert self.limits is not None
        idle = [
            c
            for c in self._connections
            if c.outside
            and not c.busy
            and not c.evicted
            and now - c.idle_since >= self.limits.evictable_after
        ]
        return any(c.evict() for c in sorted(idle, key=lambda c: c.idle_since))

    def _refuse(self, sock: socket.socket) -> None:
        """Answer BUSY (the client may try again) and close: one non-blocking send of a
        short line, no task, no fd kept."""
        message = (
            f"the supervisor is serving its limit of {self.max_connections} connections; "
            "this one was not read — try again"
        )
        with contextlib.suppress(OSError):
            sock.send(encode_reply(error_reply(None, "BUSY", message)))
        sock.close()
        self._throttled.warn(
            "refused",
            f"refused a connection: already serving {self.max_connections} (the limit)",
        )

    # -- serving one connection --------------------------------------------------------

    async def _serve(self, conn: _Connection) -> None:
        assert self.limits is not None
        limits = self.limits
        framer = RequestFramer(limits, self._budget)
        pending: deque[Line | OpError] = deque()
        try:
            while True:
                try:
                    item = await self._next_request(conn, framer, pending)
                except _Idle:
                    # A client that does not read may not hold the fd for a reply's bound.
                    await self._send(conn, self._idle_notice(conn), NOTICE_SECONDS)
                    return
                if item is None:
                    return
                conn.busy = True
                req, held = self._parse(item)
                # The raw line is no longer needed: only the parsed request (what `held`
                # charged) stays while its op runs — a wait may run for hours.
                del item
                try:
                    # A wait/collect that handed an ending over claimed it; a reply that
                    # never reaches the caller hands the claim back (completion notices).
                    with self.supervisor.notices.answering() as answer:
                        if held < 0:
                            reply = req
                        else:
                            reply = await self.dispatcher.dispatch(req, conn.peer)
                        await self._send(conn, reply)
                        answer.sent = True
                finally:
                    self._budget.give(max(held, 0))
                del req
                conn.busy = False
                conn.idle_since = asyncio.get_running_loop().time()
        except (OSError, TimeoutError, asyncio.CancelledError):
            pass  # the client went away, does not read its replies, or the host closes
        finally:
            framer.release()
            for item in pending:  # read but never answered: the client went away
                if isinstance(item, Line):
                    self._budget.give(item.charged)
            self._connections.pop(conn, None)
            conn.sock.close()
            self._closed_one.set()

    async def _next_request(
        self, conn: _Connection, framer: RequestFramer, pending: deque[Line | OpError]
    ) -> Line | OpError | None:
        """The next line (or refusal) from the client; None at its EOF; _Idle when none
        came within the idle timeout."""
        assert self.limits is not None
        loop = asyncio.get_running_loop()
        if not pending:
            try:
                async with asyncio.timeout_at(conn.idle_since + self.limits.idle_seconds) as t:
                    conn.waiting = t
                    while not pending:
                        chunk = await loop.sock_recv(conn.sock, CHUNK)
                        if not chunk:
                            return framer.finish()  # a last request without its newline
                        pending.extend(framer.feed(chunk))
            except TimeoutError as err:
                raise _Idle from err
            finally:
                conn.waiting = None
        return pending.popleft()

    def _idle_notice(self, conn: _Connection) -> dict[str, Any]:
        assert self.limits is not None
        if conn.evicted:
            why = (
                f"closed to make room: idle while the supervisor served its limit of "
                f"{self.max_connections} connections"
            )
        else:
            why = f"closed after {self.limits.idle_seconds:g} s without a request"
        return error_reply(None, "IDLE_CLOSED", f"{why}; nothing was read — connect again")

    async def _send(
        self, conn: _Connection, reply: dict[str, Any], bound: float | None = None
    ) -> None:
        assert self.limits is not None
        async with asyncio.timeout(self.limits.send_seconds if bound is None else bound):
            await asyncio.get_running_loop().sock_sendall(conn.sock, encode_reply(reply))

    def _parse(self, item: Line | OpError) -> tuple[Any, int]:
        """(the request, what it holds of the budget) — or (its error reply, -1) for a
        line that was refused or does not parse."""
        assert self.limits is not None
        try:
            if isinstance(item, OpError):
                raise item
            return parse_request(item, self.limits, self._budget)
        except OpError as err:
            return self.dispatcher.refused(err), -1
