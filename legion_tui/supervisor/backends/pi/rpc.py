"""Client of pi's RPC mode (`pi --mode rpc`), also spoken by `legion-sim`.

notes/pi-format.md §2: commands go to stdin, responses and events come on stdout, one
JSON object per line (the channel: `channel.JsonLinesChannel`, framed by `lines`).
Responses are correlated by the `id` we put on every command; events carry no id and
feed the live activity: in-flight tools keyed by toolCallId (with parentToolCallId for
nested calls) and the idle signal (`agent_settled`; for pi before 0.80.4, `agent_end`
confirmed by `get_state().isStreaming == false`). A refused command raises
`wire.RequestError` with the command as its code ("rpc": the channel closed first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from legion_tui.model_records import InFlightTool
from legion_tui.supervisor.processes.channel import CommandSink, JsonLinesChannel
from legion_tui.timeouts import within
from legion_tui.wire.lines import MAX_LINE_BYTES
from legion_tui.wire.names import RequestError

__all__ = ["RpcClient"]

log = logging.getLogger(__name__)

EventHook = Callable[[dict[str, Any]], None]
ReadHook = Callable[[], None]

STATE_BOUND = 5.0


class RpcClient(JsonLinesChannel):
    """One RPC connection over a child's stdin/stdout pipes."""

    def __init__(
        self,
        stdin: CommandSink,
        stdout: asyncio.StreamReader,
        *,
        on_event: EventHook | None = None,
        on_read: ReadHook | None = None,
        clock: Callable[[], float] = time.time,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        super().__init__(stdin, stdout, max_line_bytes=max_line_bytes)
        self._on_event = on_event
        self._on_read = on_read  # after the events of one read (e.g. publish what they moved)
        self._clock = clock
        self.in_flight: dict[str, InFlightTool] = {}
        self.streaming = False
        # pi retries a provider error itself (auto_retry_start … auto_retry_end): while it
        # waits to retry, get_state says not streaming, yet the run is not over.
        self.retrying = False
        self.idle = asyncio.Event()
        self.idle.set()
        self.turns = 0
        self.runs = 0  # agent_start count: tells a stale idle confirmation from a fresh one

    # -- commands --------------------------------------------------------------------

    async def request(self, command: str, *, bound: float = 30.0, **fields: Any) -> dict[str, Any]:
        """Send one command and return its response's `data` (or {}); bounded.

        Raises RequestError on success:false or a closed connection, TimeoutError past
        `bound`.
        """
        fut = self.send(command, **fields)
        try:
            reply = await within(fut, bound)
        finally:
            if not fut.done():
                fut.cancel()
        if not reply.get("success"):
            raise RequestError(command, str(reply.get("error") or "failed"))
        data = reply.get("data")
        return data if isinstance(data, dict) else {}

    def send(self, command: str, **fields: Any) -> asyncio.Future[dict[str, Any]]:
        """Write one command now; the future resolves with its raw response."""
        if self.closed.is_set():
            return self._failed(RequestError(command, "the agent's RPC channel is closed"))
        req_id, fut = self._expect(command)
        try:
            self._write({"id": req_id, "type": command, **fields})
        except (ConnectionError, RuntimeError) as err:
            fut.set_exception(RequestError(command, f"cannot write: {err}"))
        return fut

    def reply(self, payload: dict[str, Any]) -> None:
        """Write one line that answers pi (an `extension_ui_response`): no reply comes."""
        with contextlib.suppress(ConnectionError, RuntimeError):  # gone: so is its question
            self._write(payload)

    # -- reading -----------------------------------------------------------------------

    def _on_closed(self) -> None:
        self.streaming = False
        self.in_flight.clear()
        self.idle.set()

    def _closed_error(self, name: str, why: str) -> RequestError:
        return RequestError("rpc", why)

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

    def _take(self, obj: dict[str, Any]) -> None:
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

    def _read_done(self) -> None:
        if self._on_read is not None:
            self._on_read()

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
        with contextlib.suppress(RequestError, TimeoutError):
            state = await self.request("get_state", bound=STATE_BOUND)
            if (
                not state.get("isStreaming")
                and self.runs == runs
                and self.streaming
                and not self.retrying
            ):
                self._settle()
