"""Claude Code's stream-json channel: what its stdout says of its turns, and the lines we
write to its stdin (`claude.handle` drives it; the protocol is told in its module doc).

The turn state: a turn is open from `system/init` to its `result`; our user lines not
yet echoed back (`--replay-user-messages`) wait to be taken (True: sent while idle — it
starts a turn; False: sent into a busy agent — queued); a background subagent running,
or a task notification whose turn has not started yet, keeps the agent busy too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from legion_tui.session.figures import BadFigure
from legion_tui.session.figures import cost as dollars
from legion_tui.session.streaming import StreamingMessage, StreamSink
from legion_tui.supervisor.backends.asking import (
    PERMISSION_HINT,
    InputSink,
    Questions,
    declined_with_words,
    is_always,
    is_yes,
)
from legion_tui.supervisor.processes.channel import WRITE_BOUND, JsonLinesChannel
from legion_tui.timeouts import within
from legion_tui.wire.names import RequestError

__all__ = ["ABORTED_REASONS", "NOTIFICATION_TURN_BOUND", "ClaudeChannel", "turn_error"]

log = logging.getLogger(__name__)

# A `result` that ends an interrupted turn: not a failure of the turn.
ABORTED_REASONS = frozenset({"aborted_streaming", "aborted_tools"})
# A background task's end that Claude answers with a turn of its own (a killed one's
# "stopped" is not answered). Measured: the turn's init follows within ~50 ms; the bound
# only keeps a notification Claude never answers from holding the node busy for ever.
NOTIFIED_STATUSES = frozenset({"completed", "failed"})
NOTIFICATION_TURN_BOUND = 10.0
_BACKGROUND_KEPT = 256  # background task ids remembered (their notifications may come late)
_DELTAS = {"text_delta": "text_delta", "thinking_delta": "thinking_delta"}


def turn_error(result: dict[str, Any]) -> str | None:
    """Why a turn failed in Claude's words, or None (done, or ended by an interrupt)."""
    if result.get("is_error") is not True or result.get("terminal_reason") in ABORTED_REASONS:
        return None
    text = result.get("result")
    if isinstance(text, str) and text.strip():
        return text.strip()
    errors = result.get("errors")
    if isinstance(errors, list) and errors:
        return "; ".join(str(e) for e in errors)
    return str(result.get("terminal_reason") or result.get("subtype") or "error")


def reported_cost(result: dict[str, Any]) -> float | None:
    """Claude's own total for the session so far (`total_cost_usd`: cumulative, a resumed
    process goes on from its last), or None: absent, not a bounded amount, nothing spent,
    or priced for a model Claude does not know (`costBasis: unknown`, its guess)."""
    try:
        total = dollars(result.get("total_cost_usd"), "total_cost_usd")
    except BadFigure:
        return None
    usage = result.get("modelUsage")
    models = usage.values() if isinstance(usage, dict) else ()
    if not total or any(isinstance(m, dict) and m.get("costBasis") == "unknown" for m in models):
        return None
    return total


class ClaudeChannel(JsonLinesChannel):
    """One Claude Code process's stdin/stdout, and the turn state its output tells."""

    def __init__(
        self,
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        *,
        node_id: str,
        on_session: Callable[[str], None],
        on_stream: StreamSink | None = None,
        on_input: InputSink | None = None,
        on_cost: Callable[[float], None] | None = None,
    ) -> None:
        super().__init__(stdin, stdout)
        self._on_cost = on_cost  # Claude's own total for the session, after each turn
        self._writer = stdin
        self._node_id = node_id  # for the log
        self._on_session = on_session  # Claude named its session (every system/init)
        self._turn_open = False
        self._unechoed: deque[bool] = deque()
        self._subagents: set[str] = set()  # background subagent task ids now running
        # Background task ids seen (a foreground Bash notifies too, and gets no turn).
        self._background: OrderedDict[str, None] = OrderedDict()
        self._notified: asyncio.TimerHandle | None = None  # a notification turn is due
        self._notice_in_turn = False  # a notification came while this turn was open
        self.results = 0  # `result` lines seen (an abort waits for the next one)
        self.turn_error: str | None = None  # why the last turn failed
        self.idle = asyncio.Event()
        self.idle.set()
        self.changed = asyncio.Event()  # pulsed on every move of the turn state
        self.started = asyncio.Event()  # Claude showed life (its first system/init)
        self._controls: dict[str, asyncio.Future[dict[str, Any]]] = {}
        # Batched: flushed after each read of the pipe (`_read_done`), one count per read.
        self._streaming = (
            StreamingMessage(on_stream, time.time, batched=True) if on_stream else None
        )
        self.questions = Questions(on_input)  # permission requests waiting on the user

    # -- state -------------------------------------------------------------------------

    def busy(self) -> bool:
        """A turn is open, will open (a line not taken yet, a notification's turn), or a
        background subagent works."""
        if self.closed.is_set():
            return False
        return (
            self._turn_open
            or bool(self._unechoed)
            or bool(self._subagents)
            or self._notified is not None
        )

    def queued(self) -> int:
        """Our lines sent into a busy agent that it has not taken yet."""
        return sum(1 for starts_turn in self._unechoed if not starts_turn)

    def _moved(self) -> None:
        if self.busy():
            self.idle.clear()
        else:
            self.idle.set()
        self.changed.set()
        self.changed.clear()  # a pulse: waiters already woken keep their wake-up

    # -- writing -----------------------------------------------------------------------

    async def send_user(self, text: str) -> None:
        """One user message (a task, a steer, a letter) in; RequestError when closed."""
        if self.closed.is_set():
            raise RequestError("user", "claude's input is closed")
        # The state moves before any await: a check of busy() right after the write
        # already sees the turn (an abort right after a steer must find it).
        self._unechoed.append(not self.busy())
        self._moved()
        self._send({
            "type": "user",
            "message": {"role": "user", "content": text},
            "parent_tool_use_id": None,
            "session_id": "",
        })  # fmt: skip
        with contextlib.suppress(ConnectionError, TimeoutError, RuntimeError):
            await within(self._writer.drain(), WRITE_BOUND)

    def interrupt(self, request_id: str) -> asyncio.Future[dict[str, Any]]:
        """Send the `interrupt` control request; the future gets Claude's response (its
        `still_queued`), or fails when the output ends first."""
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._controls[request_id] = reply
        reply.add_done_callback(lambda _f: self._controls.pop(request_id, None))
        self._hurry()  # its answer is read as it comes, not at the next read pace
        self._send({
            "type": "control_request",
            "request_id": request_id,
            "request": {"subtype": "interrupt"},
        })  # fmt: skip
        return reply

    def _send(self, message: dict[str, Any]) -> None:
        if self._writer.is_closing():
            raise RequestError("write", "claude's input is closed")
        try:
            self._write(message)
        except (ConnectionError, RuntimeError) as err:
            raise RequestError("write", f"cannot write: {err}") from err

    def _reply(
        self, request_id: str, response: dict[str, Any] | None, *, error: str | None = None
    ) -> None:
        body: dict[str, Any] = {"request_id": request_id}
        if error is not None:
            body.update(subtype="error", error=error)
        else:
            body.update(subtype="success", response=response)
        with contextlib.suppress(RequestError):  # its input closed: the question died with it
            self._send({"type": "control_response", "response": body})

    # -- reading -----------------------------------------------------------------------

    def _on_closed(self) -> None:
        self._turn_open = False
        self._unechoed.clear()
        self._subagents.clear()
        self._cancel_notified()
        self._notice_in_turn = False
        self.questions.clear()
        for fut in list(self._controls.values()):
            if not fut.done():
                fut.set_exception(RequestError("control", "the agent closed its output"))
                fut.exception()  # observed: an abort may have stopped waiting for it
        if self._streaming is not None:
            self._streaming.feed({"type": "agent_end"})  # a message cut off never ends
        self._moved()

    def _awaiting_reply(self) -> bool:
        return bool(self._controls) or super()._awaiting_reply()

    def _read_done(self) -> None:
        if self._streaming is not None:
            self._streaming.flush()

    def _take(self, obj: dict[str, Any]) -> None:
        try:
            self._track(obj)
        except Exception:
            # One line the channel could not take must not end the read loop: that would
            # read as idle and settle a running node.
            log.exception("claude output line not handled: %.200r", obj)

    def _track(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        subtype = obj.get("subtype") if kind == "system" else None
        if kind == "stream_event":
            if obj.get("parent_tool_use_id") is None:  # a subagent's stream is not ours
                self._stream(obj.get("event"))
        elif subtype == "init":
            self._on_init(obj)
        elif kind == "user" and obj.get("isReplay") is True:
            if self._unechoed:
                self._unechoed.popleft()  # Claude took our oldest line
            self._moved()
        elif kind == "result":
            self._on_result(obj)
        elif subtype == "background_tasks_changed":
            tasks = obj.get("tasks")
            listed = [t for t in (tasks if isinstance(tasks, list) else []) if isinstance(t, dict)]
            for task in listed:
                self._remember_background(task.get("task_id"))
            self._subagents = {
                str(t.get("task_id")) for t in listed if t.get("task_type") == "local_agent"
            }
            self._moved()
        elif subtype == "task_started":
            if obj.get("is_backgrounded") is True:
                self._remember_background(obj.get("task_id"))
        elif subtype == "task_notification":
            self._on_notification(obj)
        elif kind == "control_request":
            self._on_control_request(obj)
        elif kind == "control_cancel_request":
            self.questions.drop(str(obj.get("request_id")))
        elif kind == "control_response":
            response = obj.get("response")
            request_id = response.get("request_id") if isinstance(response, dict) else None
            fut = self._controls.get(request_id) if isinstance(request_id, str) else None
            if fut is not None and not fut.done() and isinstance(response, dict):
                fut.set_result(response)

    def _on_init(self, obj: dict[str, Any]) -> None:
        self._turn_open = True
        self._cancel_notified()  # the turn a notification was due to start
        self._notice_in_turn = False
        self.turn_error = None  # a new turn: the last one's failure is history
        self.started.set()
        session_id = obj.get("session_id")
        if isinstance(session_id, str) and session_id:
            self._on_session(session_id)
        self._moved()

    def _on_result(self, obj: dict[str, Any]) -> None:
        self._turn_open = False
        if self._notice_in_turn:
            self._notice_in_turn = False
            self._expect_notification_turn()
        self.results += 1
        self.questions.clear()  # a turn's end voids what it asked (an interrupt)
        self.turn_error = turn_error(obj)
        total = reported_cost(obj)
        if total is not None and self._on_cost is not None:
            self._on_cost(total)
        self._moved()

    def _on_notification(self, obj: dict[str, Any]) -> None:
        background = obj.get("task_id") in self._background
        if background and obj.get("status") in NOTIFIED_STATUSES:
            if self._turn_open:
                self._notice_in_turn = True  # its turn comes after this one's result
            else:
                self._expect_notification_turn()
            self._moved()

    def _on_control_request(self, obj: dict[str, Any]) -> None:
        """Claude asks us something: a permission (`can_use_tool`) waits on the user;
        anything else is answered with an error at once (nothing here serves it)."""
        request_id = obj.get("request_id")
        request = obj.get("request")
        if not isinstance(request_id, str) or not isinstance(request, dict):
            return
        if request.get("subtype") != "can_use_tool":
            self._reply(request_id, None, error=f"legion cannot answer {request.get('subtype')}")
            return
        name = request.get("tool_name")
        tool = str(request.get("display_name") or name or "a tool")
        given = request.get("input")
        tool_input = given if isinstance(given, dict) else {}
        about = (request.get("description") or tool_input.get("command")
                 or tool_input.get("file_path") or "")  # fmt: skip
        question = f"allow {tool}" + (f" ({about})" if about else "") + f"? {PERMISSION_HINT}"

        def answer(text: str) -> None:
            if is_yes(text):
                self._reply(request_id, {"behavior": "allow", "updatedInput": tool_input})
            elif is_always(text) and isinstance(name, str):
                # A rule for this session only (Claude's `destination: session`): never
                # one written into the user's .claude settings.
                rule = {"type": "addRules", "rules": [{"toolName": name}],
                        "behavior": "allow", "destination": "session"}  # fmt: skip
                self._reply(request_id, {"behavior": "allow", "updatedInput": tool_input,
                                         "updatedPermissions": [rule]})  # fmt: skip
            else:
                message = text.strip() if declined_with_words(text) else "the user said no"
                self._reply(request_id, {"behavior": "deny", "message": message})

        self.questions.ask(request_id, question, answer)

    def _remember_background(self, task_id: Any) -> None:
        if isinstance(task_id, str):
            self._background[task_id] = None
            while len(self._background) > _BACKGROUND_KEPT:
                self._background.popitem(last=False)

    def _expect_notification_turn(self) -> None:
        self._cancel_notified()
        loop = asyncio.get_running_loop()
        self._notified = loop.call_later(NOTIFICATION_TURN_BOUND, self._notified_late)

    def _cancel_notified(self) -> None:
        if self._notified is not None:
            self._notified.cancel()
            self._notified = None

    def _notified_late(self) -> None:
        log.warning("claude (%s) did not answer a task notification with a turn", self._node_id)
        self._notified = None
        self._moved()

    def _stream(self, event: Any) -> None:
        """A stream event in pi's shape for `StreamingMessage` (one delta ≈ one token;
        message_delta's output count wins when it says more)."""
        if self._streaming is None or not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "message_start":
            self._streaming.feed({"type": "message_start", "message": {"role": "assistant"}})
        elif kind == "content_block_delta":
            delta = event.get("delta")
            name = delta.get("type") if isinstance(delta, dict) else None
            piece = _DELTAS.get(str(name), "toolcall_delta")
            self._streaming.feed(
                {"type": "message_update", "assistantMessageEvent": {"type": piece}}
            )
        elif kind == "message_delta":
            usage = event.get("usage")
            output = usage.get("output_tokens") if isinstance(usage, dict) else None
            if isinstance(output, int) and not isinstance(output, bool):
                self._streaming.feed(
                    {
                        "type": "message_update",
                        "assistantMessageEvent": {"type": "usage"},
                        "usage": {"output": output},
                    }
                )
        elif kind == "message_stop":
            self._streaming.feed({"type": "message_end"})
