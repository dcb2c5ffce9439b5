"""The client's half of the supervisor's socket protocol, without the waiting (`client`
adds how each client waits for the socket: asyncio or blocking calls).

One connection, the request line, the reply's checks, and the retry schedule of a
request the server did not read. Replies are framed by `lines.LineSplitter`. No asyncio
here (the control verbs' client imports this).
"""

from __future__ import annotations

import _socket  # not `socket`: see `ClientProtocol._open`
import itertools
import json
import os
from collections import deque
from pathlib import Path
from typing import Any, Self, TypeVar

from legion_tui.wire.lines import MAX_LINE_BYTES, LineSplitter
from legion_tui.wire.names import ENV_NODE_ID, ENV_SOCKET, ROOT_ID, RequestError

__all__ = ["MAX_LINE", "RECV_BYTES", "RETRY_SECONDS", "Again", "Backoff", "ClientProtocol"]

MAX_LINE = MAX_LINE_BYTES  # one reply line at most (the server's request bound too)
RETRY_SECONDS = 10.0  # how long a client keeps trying a supervisor that does not take it
FIRST_PAUSE = 0.02
MAX_PAUSE = 0.5
NOT_READ = frozenset({"BUSY", "IDLE_CLOSED"})  # server notices: the request was not read
SocketT = TypeVar("SocketT", bound=_socket.socket)  # the blocking or the asyncio client's
RECV_BYTES = 256 * 1024


class Again(Exception):
    """This attempt failed before the request was read: try again (code, why)."""

    def __init__(self, code: str, why: str, *, pause: bool = True) -> None:
        super().__init__(why)
        self.code = code
        self.why = why
        self.pause = pause


class Backoff:
    """The retry schedule of one request: growing, jittered pauses within a deadline."""

    def __init__(self, client: ClientProtocol, now: float) -> None:
        self.client = client
        self.deadline = now + client.retry_seconds
        self.pause = FIRST_PAUSE
        self.tries = 0

    def after(self, again: Again, now: float) -> float:
        """The pause before the next try; RequestError once the time is up."""
        self.tries += 1
        self.client._drop()
        left = self.deadline - now
        if left <= 0:
            raise RequestError(again.code, self.client._gave_up(again, self.tries))
        if not again.pause:
            return 0.0
        # Jittered: a thousand clients refused at once do not return at once. One byte
        # of the OS's randomness, not `random` (its import is 2 % of a verb's start).
        pause = min(left, self.pause * (0.5 + os.urandom(1)[0] / 510))
        self.pause = min(self.pause * 2, MAX_PAUSE)
        return pause


class ClientProtocol:
    """The protocol without the waiting: the connection, the request line, the reply's
    checks. `LegionClient` and `BlockingClient` add only how they wait for the socket."""

    def __init__(
        self,
        socket_path: str | Path,
        caller: str = ROOT_ID,
        *,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self.socket_path = str(socket_path)
        self.caller = caller
        self.retry_seconds = retry_seconds
        self._sock: _socket.socket | None = None
        self._lines = LineSplitter(MAX_LINE)
        self._replies: deque[bytes] = deque()  # lines read past the one asked for
        self._ids = itertools.count(1)

    @classmethod
    def from_env(cls) -> Self:
        socket_path = os.environ.get(ENV_SOCKET)
        if not socket_path:
            raise RequestError("NO_SOCKET", f"{ENV_SOCKET} is not set")
        return cls(socket_path, os.environ.get(ENV_NODE_ID) or ROOT_ID)

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._forget_replies()

    def _forget_replies(self) -> None:
        self._lines = LineSplitter(MAX_LINE)
        self._replies.clear()

    def _request_line(self, op: str, fields: dict[str, Any]) -> bytes:
        payload = {"id": next(self._ids), "op": op, "from": self.caller, **fields}
        return json.dumps(payload).encode() + b"\n"

    @staticmethod
    def _result_of(reply: dict[str, Any]) -> dict[str, Any]:
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise RequestError(
                str(error.get("code", "ERROR")), str(error.get("message", "request failed"))
            )
        result = reply.get("result") or {}
        if not isinstance(result, dict):
            raise RequestError("BAD_REPLY", "the supervisor's result is not an object")
        return result

    def _gave_up(self, again: Again, tries: int) -> str:
        said = {
            "BUSY": f"the supervisor at {self.socket_path} is too busy to take the request",
            "NO_SUPERVISOR": f"no live supervisor at {self.socket_path}",
            "DISCONNECTED": f"the supervisor at {self.socket_path} did not answer",
        }.get(again.code, f"the supervisor at {self.socket_path} did not take the request")
        why = " ".join(again.why.split())  # one line, whatever the server said
        return f"{said}: {why} (tried {tries} times in {self.retry_seconds:g} s)"

    def _open(self) -> _socket.socket:
        """A connected (non-blocking) socket: the C module's own object, which has every
        call a blocking request makes. `socket.py` would cost a control verb 8 % of its
        start (at import it turns `_socket`'s constants into four IntEnums); the
        asyncio client, whose loop imports it anyway, opens a `socket.socket`."""
        return self._connected(_socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM))

    def _connected(self, sock: SocketT) -> SocketT:
        """`sock`, connected without waiting: a non-blocking AF_UNIX connect never waits;
        EAGAIN is the kernel's queue of unaccepted connections being full (asyncio's own
        connect takes that for success, and the first write fails with EINVAL)."""
        sock.setblocking(False)
        try:
            sock.connect(self.socket_path)
        except BlockingIOError:
            sock.close()
            raise Again("BUSY", "its queue of new connections is full") from None
        except ConnectionRefusedError:
            sock.close()  # a socket file nobody listens on (yet, or any more)
            raise Again("NO_SUPERVISOR", "connection refused") from None
        except OSError as err:
            sock.close()
            raise RequestError(
                "NO_SUPERVISOR",
                f"no live supervisor at {self.socket_path}: {err.strerror or err}",
            ) from err
        self._sock = sock
        self._forget_replies()
        return sock

    def _next_reply(self) -> bytes | None:
        """The next reply line read already; None while there is none yet."""
        return self._replies.popleft() if self._replies else None

    def _received(self, chunk: bytes) -> None:
        """`chunk` came from the socket; b"": the connection ended (reset or closed)."""
        if not chunk:
            if self._lines.pending:
                raise RequestError(
                    "DISCONNECTED", "the supervisor closed the connection mid-reply"
                )
            raise Again("DISCONNECTED", "the connection was reset or closed with no reply")
        too_long = self._lines.too_long
        self._replies.extend(self._lines.feed(chunk))
        if self._lines.too_long != too_long:
            self._drop()  # out of step with its replies: a new connection for the next
            raise RequestError("BAD_REPLY", f"the supervisor's reply is over {MAX_LINE} bytes")

    @staticmethod
    def _reply_of(line: bytes) -> dict[str, Any]:
        """The reply on `line`; Again when it is the server's notice it did not read."""
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError) as err:
            raise RequestError(
                "BAD_REPLY", f"the supervisor's reply is not JSON: {err}"
            ) from err
        if not isinstance(reply, dict):
            raise RequestError("BAD_REPLY", "the supervisor's reply is not an object")
        error = reply.get("error")
        if reply.get("id") is None and isinstance(error, dict) and error.get("code") in NOT_READ:
            code = str(error["code"])
            raise Again(code, str(error.get("message", "")), pause=code != "IDLE_CLOSED")
        return reply


