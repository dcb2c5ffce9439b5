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

The channel (`supervisor/processes/channel.py`, shared with pi's RPC and Claude's stream-json)
keeps the read loop alive through any output; a hook that raises is logged here, never
fatal. A request refused or unanswered raises `wire.RequestError` with its method as
the code.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from legion_tui.supervisor.processes.channel import CommandSink, JsonLinesChannel
from legion_tui.timeouts import within
from legion_tui.wire.lines import MAX_LINE_BYTES
from legion_tui.wire.names import RequestError

__all__ = ["JsonRpcClient", "NotificationHook", "RequestHook"]

log = logging.getLogger(__name__)

NotificationHook = Callable[[str, dict[str, Any]], None]
# A server request (id, method, params): True when it will be answered with `respond`.
RequestHook = Callable[[Any, str, dict[str, Any]], bool]

METHOD_NOT_FOUND = -32601  # JSON-RPC's code for a method the peer does not serve


class JsonRpcClient(JsonLinesChannel):
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
        super().__init__(stdin, stdout, max_line_bytes=max_line_bytes)
        self._on_notification = on_notification
        self._on_request = on_request
        self.refused: list[str] = []  # methods of the server requests we refused

    # -- writing -----------------------------------------------------------------------

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, bound: float = 30.0
    ) -> dict[str, Any]:
        """Send one request and return its `result` (a non-object result reads as {}).

        Raises RequestError on an error reply, a closed channel or no answer in `bound`.
        """
        fut = self.send(method, params)
        try:
            reply = await within(fut, bound)
        except TimeoutError:
            raise RequestError(method, f"no answer within {bound:g} s") from None
        finally:
            if not fut.done():
                fut.cancel()
        error = reply.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            raise RequestError(method, str(message))
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    def send(
        self, method: str, params: dict[str, Any] | None = None
    ) -> asyncio.Future[dict[str, Any]]:
        """Write one request now; the future resolves with its raw reply object."""
        if self.closed.is_set():
            return self._failed(RequestError(method, "the agent's channel is closed"))
        req_id, fut = self._expect(method)
        message: dict[str, Any] = {"id": req_id, "method": method}
        if params is not None:
            message["params"] = params
        if not self._send(message):
            fut.set_exception(RequestError(method, "cannot write to the agent"))
        return fut

    def respond(self, req_id: Any, result: dict[str, Any]) -> None:
        """The answer to a server request `on_request` took."""
        self._send({"id": req_id, "result": result})

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """A notification (no id, no answer)."""
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def _send(self, message: dict[str, Any]) -> bool:
        """Write `message`; False when the agent's stdin is gone."""
        try:
            self._write(message)
        except (ConnectionError, RuntimeError):
            return False
        return True

    # -- reading -----------------------------------------------------------------------

    def _take(self, obj: dict[str, Any]) -> None:
        method = obj.get("method")
        req_id = obj.get("id")
        if not isinstance(method, str):
            self._answer(req_id, obj)
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
        self._send({
            "id": req_id,
            "error": {"code": METHOD_NOT_FOUND,
                      "message": f"legion runs Codex unattended and cannot answer {method}"},
        })
