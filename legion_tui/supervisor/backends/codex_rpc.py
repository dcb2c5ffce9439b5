"""A JSON-RPC client of `codex app-server` over the child's stdin/stdout.

The app server speaks JSON-RPC 2.0 without the `"jsonrpc"` field: one object per line
(notes/agent-clis.md §2.4). Three kinds of line come back:

- a response `{id, result}` / `{id, error: {code, message}}` to one of our requests;
- a notification `{method, params}` (turn/started, item/agentMessage/delta, …) — handed
  to `on_notification`;
- a server request `{id, method, params}` (an approval, a question for the user): handed
  to `on_request`, which takes the ones a user can answer (`respond` later sends the
  answer: the node is BLOCKED meanwhile); any other is refused at once with an error
  reply, so the tool that asked fails instead of Codex waiting forever.

The read loop must outlive any output (as for pi's RPC, `supervisor/rpc.py`): framing
is LF (`LineSplitter`: incremental, an over-long line dropped and counted), each line is
decoded and handled alone, and a bad line or a hook that raises is counted or logged,
never fatal. Writes are bounded: a child that stops draining its stdin fails the write
after `WRITE_BOUND`, never hangs the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

from legion_tui.supervisor.rpc import (
    MAX_LINE_BYTES,
    WRITE_BOUND,
    CommandSink,
    LineSplitter,
    pump_lines,
)

__all__ = ["JsonRpcClient", "JsonRpcError", "NotificationHook", "RequestHook"]

log = logging.getLogger(__name__)

NotificationHook = Callable[[str, dict[str, Any]], None]
# A server request (id, method, params): True when it will be answered with `respond`.
RequestHook = Callable[[Any, str, dict[str, Any]], bool]

METHOD_NOT_FOUND = -32601  # JSON-RPC's code for a method the peer does not serve


class JsonRpcError(Exception):
    """A request answered with an error, not answered in time, or the channel is gone."""

    def __init__(self, method: str, message: str, code: int | None = None) -> None:
        super().__init__(f"{method}: {message}")
        self.method = method
        self.message = message
        self.code = code


class JsonRpcClient:
    """One JSON-RPC connection to a child process."""

    def __init__(
        self,
        stdin: CommandSink,
        stdout: asyncio.StreamReader,
        *,
        on_notification: NotificationHook | None = None,
        on_request: RequestHook | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self._on_notification = on_notification
        self._on_request = on_request
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._lines = LineSplitter(max_line_bytes)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closed = asyncio.Event()  # stdout reached EOF: the agent is gone
        self.skipped_lines = 0  # lines that were not a JSON object (or too long)
        self.refused: list[str] = []  # methods of the server requests we refused
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    # -- writing -----------------------------------------------------------------------

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, bound: float = 30.0
    ) -> dict[str, Any]:
        """Send one request and return its `result` (a non-object result reads as {}).

        Raises JsonRpcError on an error reply, a closed channel or no answer in `bound`.
        """
        fut = self.send(method, params)
        try:
            reply = await asyncio.wait_for(fut, bound)
        except TimeoutError:
            raise JsonRpcError(method, f"no answer within {bound:g} s") from None
        finally:
            if not fut.done():
                fut.cancel()
        error = reply.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            code = error.get("code") if isinstance(error, dict) else None
            raise JsonRpcError(method, str(message), code if isinstance(code, int) else None)
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    def send(
        self, method: str, params: dict[str, Any] | None = None
    ) -> asyncio.Future[dict[str, Any]]:
        """Write one request now; the future resolves with its raw reply object."""
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if self.closed.is_set():
            fut.set_exception(JsonRpcError(method, "the agent's channel is closed"))
            return fut
        req_id = next(self._ids)
        self._pending[req_id] = (method, fut)
        fut.add_done_callback(lambda _f: self._pending.pop(req_id, None))
        message: dict[str, Any] = {"id": req_id, "method": method}
        if params is not None:
            message["params"] = params
        if not self._write(message):
            fut.set_exception(JsonRpcError(method, "cannot write to the agent"))
        return fut

    def respond(self, req_id: Any, result: dict[str, Any]) -> None:
        """The answer to a server request `on_request` took."""
        self._write({"id": req_id, "result": result})

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """A notification (no id, no answer)."""
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    def _write(self, message: dict[str, Any]) -> bool:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            self._stdin.write(line.encode())
        except (ConnectionError, RuntimeError):
            return False
        self._spawn(self._drain())
        return True

    async def _drain(self) -> None:
        with contextlib.suppress(ConnectionError, TimeoutError, RuntimeError):
            await asyncio.wait_for(self._stdin.drain(), WRITE_BOUND)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Close stdin (the app server exits on EOF) and stop reading; never blocks long."""
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
            self._fail_pending("the agent closed its output")

    def _fail_pending(self, why: str) -> None:
        for method, fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(JsonRpcError(method, why))

    def _dispatch(self, line: bytes) -> None:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # not UTF-8 / not JSON / nested too deep
            self.skipped_lines += 1
            return
        if not isinstance(obj, dict):
            self.skipped_lines += 1
            return
        method = obj.get("method")
        req_id = obj.get("id")
        if not isinstance(method, str):
            pending = self._pending.get(req_id) if isinstance(req_id, int) else None
            if pending is not None and not pending[1].done():
                pending[1].set_result(obj)
            return
        params = obj.get("params")
        if req_id is not None:
            taken = False
            try:
                if self._on_request is not None:
                    taken = self._on_request(
                        req_id, method, params if isinstance(params, dict) else {}
                    )
            except Exception:
                log.exception("codex request not handled: %.200r", obj)
            if not taken:
                self._refuse(req_id, method)
            return
        try:
            if self._on_notification is not None:
                self._on_notification(method, params if isinstance(params, dict) else {})
        except Exception:
            # One notification we could not take must not end the read loop: the
            # handle would then read as idle and its node settle mid-turn.
            log.exception("codex notification not handled: %.200r", obj)

    def _refuse(self, req_id: Any, method: str) -> None:
        self.refused.append(method)
        self._write({
            "id": req_id,
            "error": {"code": METHOD_NOT_FOUND,
                      "message": f"legion runs Codex unattended and cannot answer {method}"},
        })
