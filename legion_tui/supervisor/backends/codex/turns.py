"""What `codex app-server` tells of a node's turns (`codex.handle` drives the thread).

Its notifications move the turn state — `turn/started`, `turn/completed {turn: {id,
status, error}}` (completed | interrupted | failed), a steer going on to the model
(`item/started` of a userMessage) — and feed the live rate (`item/agentMessage/delta`,
`thread/tokenUsage/updated`); its server requests for approval wait on the user
(`asking`). Another thread's notifications (a sub-agent's) are not this node's.

The node goes idle only once the turn's end is in the rollout (its `task_complete` or
`turn_aborted` line, bounded wait): the supervisor reads the verdict and the aborted
mark from that file right after `idle()`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from legion_tui.session.streaming import StreamingMessage, StreamSink
from legion_tui.supervisor.backends.asking import (
    PERMISSION_HINT,
    InputSink,
    Questions,
    is_always,
    is_yes,
)
from legion_tui.supervisor.backends.codex.rpc import JsonRpcClient

__all__ = ["RECORD_BOUND", "CodexTurns"]

log = logging.getLogger(__name__)

# How long a turn's end may take to reach the rollout after `turn/completed`. Codex 0.169.0
# has written it by then (seen every time); the bound holds should a later Codex write it
# after. Past it the node goes idle on what the file says.
RECORD_BOUND = 3.0
RECORD_POLL = 0.01
TAIL_BYTES = 64 * 1024
_TURN_ENDS = frozenset({"task_complete", "turn_aborted"})


# Server requests a user answers: the approval's method → what is asked about.
_APPROVALS = {
    "item/commandExecution/requestApproval": "run",
    "item/fileChange/requestApproval": "change files",
    "execCommandApproval": "run",
    "applyPatchApproval": "change files",
}


def _approval_question(method: str, params: dict[str, Any]) -> str:
    command = params.get("command")
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    about = command or params.get("reason") or ""
    return f"approve: {_APPROVALS[method]}" + (f" {about}" if about else "") + (
        f"? {PERMISSION_HINT}"
    )


# The answers, in the v2 protocol (`item/*/requestApproval`) and the legacy one.
_DECISIONS = {"yes": "accept", "always": "acceptForSession", "no": "decline"}
_LEGACY_DECISIONS = {"yes": "approved", "always": "approved_for_session", "no": "denied"}


def _api_message(message: str) -> str:
    """The provider's own words when Codex passes its JSON error body on as the message
    (`{"error": {"message": "…"}}`); the message itself otherwise."""
    try:
        body = json.loads(message)
    except (ValueError, RecursionError):
        return message
    error = body.get("error") if isinstance(body, dict) else None
    inner = error.get("message") if isinstance(error, dict) else None
    return inner if isinstance(inner, str) and inner else message


def _turn_ended_in(path: Path, turn_id: str) -> bool:
    """Does the rollout's tail record the end (`task_complete` / `turn_aborted`) of turn
    `turn_id`? Only whole lines of the last TAIL_BYTES are looked at."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read()
    except OSError:
        return False
    for line in reversed(tail.split(b"\n")):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a partial line (first of the tail, or still being written)
        payload = obj.get("payload") if isinstance(obj, dict) else None
        if (
            isinstance(payload, dict)
            and obj.get("type") == "event_msg"
            and payload.get("type") in _TURN_ENDS
            and payload.get("turn_id") == turn_id
        ):
            return True
    return False


class CodexTurns:
    """The turn state of one node's thread, from what Codex says (module doc)."""

    def __init__(
        self,
        *,
        thread: Callable[[], str | None],
        rollout: Callable[[], Path | None],
        on_stream: StreamSink | None = None,
        on_input: InputSink | None = None,
    ) -> None:
        self._thread = thread  # the node's thread id, once Codex named it
        self._rollout = rollout  # the node's rollout file, once known
        self.turn_id: str | None = None  # the running turn
        self.running = False
        self.idle = asyncio.Event()
        self.idle.set()
        self._ends: dict[str, asyncio.Future[str]] = {}  # turn id → its final status
        self.error: str | None = None  # why the last turn failed
        self.steers: list[str] = []  # handed over to the running turn, not yet sent on
        self._recording: asyncio.Task[None] | None = None
        self._streaming = StreamingMessage(on_stream, time.time) if on_stream else None
        self._stream_open = False
        self.questions = Questions(on_input)  # approvals waiting on the user

    def close(self) -> None:
        """The agent is gone: no turn runs, nothing waits on the user."""
        if self._recording is not None:
            self._recording.cancel()
        self.questions.clear()
        self.running = False
        self.idle.set()
        if self._streaming is not None:
            self._streaming.feed({"type": "agent_end"})  # a message cut off never ends

    # -- what Codex asks and says ------------------------------------------------------

    def on_request(
        self, client: JsonRpcClient, req_id: Any, method: str, params: dict[str, Any]
    ) -> bool:
        """An approval waits on the user (True: answered later); others are refused."""
        if method not in _APPROVALS:
            return False
        legacy = method in ("execCommandApproval", "applyPatchApproval")

        def answer(text: str) -> None:
            # Once, for the session (Codex's own approval cache: never a policy file), or no.
            choice = "yes" if is_yes(text) else "always" if is_always(text) else "no"
            decisions = _LEGACY_DECISIONS if legacy else _DECISIONS
            client.respond(req_id, {"decision": decisions[choice]})

        self.questions.ask(f"request-{req_id}", _approval_question(method, params), answer)
        return True

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        thread, ours = params.get("threadId"), self._thread()
        if thread is not None and ours is not None and thread != ours:
            return  # another thread's (a sub-agent's): not this node's turn state
        handler = self._HANDLERS.get(method)
        if handler is not None:
            handler(self, params)

    def _on_turn_started(self, params: dict[str, Any]) -> None:
        turn = params.get("turn")
        turn_id = turn.get("id") if isinstance(turn, dict) else None
        if isinstance(turn_id, str):
            self.begin(turn_id)

    def _on_turn_completed(self, params: dict[str, Any]) -> None:
        turn = params.get("turn")
        if not isinstance(turn, dict) or not isinstance(turn.get("id"), str):
            return
        status = turn.get("status")
        error = turn.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        self._end(turn["id"], status if isinstance(status, str) else "completed",
                  message if isinstance(message, str) else None)

    def _on_user_message(self, params: dict[str, Any]) -> None:
        """A steer went on to the model with a request: no longer waiting."""
        item = params.get("item")
        if not isinstance(item, dict) or item.get("type") != "userMessage":
            return
        content = item.get("content")
        for block in content if isinstance(content, list) else []:
            text = block.get("text") if isinstance(block, dict) else None
            if text in self.steers:
                self.steers.remove(text)

    def _on_delta(self, params: dict[str, Any]) -> None:
        if self._streaming is None:
            return
        if not self._stream_open:
            self._stream_open = True
            self._streaming.feed({"type": "message_start", "message": {"role": "assistant"}})
        self._streaming.feed(
            {"type": "message_update", "assistantMessageEvent": {"type": "text_delta"}}
        )

    def _on_token_usage(self, params: dict[str, Any]) -> None:
        """A model call ended: its own output count (`last`), then the end of it."""
        if self._streaming is None or not self._stream_open:
            return
        usage = params.get("tokenUsage")
        last = usage.get("last") if isinstance(usage, dict) else None
        output = last.get("outputTokens") if isinstance(last, dict) else None
        if isinstance(output, int) and not isinstance(output, bool):
            self._streaming.feed({
                "type": "message_update",
                "assistantMessageEvent": {"type": "done"},
                "usage": {"output": output},
            })
        self._end_stream()

    _HANDLERS: ClassVar[dict[str, Callable[[CodexTurns, dict[str, Any]], None]]] = {
        "turn/started": _on_turn_started,
        "turn/completed": _on_turn_completed,
        "item/started": _on_user_message,
        "item/agentMessage/delta": _on_delta,
        "thread/tokenUsage/updated": _on_token_usage,
    }

    # -- turn state --------------------------------------------------------------------

    def end_of(self, turn_id: str) -> asyncio.Future[str]:
        """The future of turn `turn_id`'s final status."""
        fut = self._ends.get(turn_id)
        if fut is None:
            fut = self._ends[turn_id] = asyncio.get_running_loop().create_future()
        return fut

    def begin(self, turn_id: str) -> None:
        """Turn `turn_id` runs (turn/started, or the answer to our turn/start)."""
        if self.end_of(turn_id).done():
            return  # its end came first (the answer to turn/start was late)
        if self.turn_id != turn_id:
            self.error = None  # a new turn: the last one's failure is history
        self.turn_id = turn_id
        self.running = True
        self.idle.clear()

    def _end(self, turn_id: str, status: str, error: str | None) -> None:
        end = self.end_of(turn_id)
        if not end.done():
            end.set_result(status)
        if self.turn_id not in (turn_id, None):
            return  # an older turn's late word: the running one is another
        if status == "failed":
            self.error = _api_message(error) if error else "the turn failed"
        self.turn_id = None
        self.running = False
        self.steers.clear()
        self.questions.clear()  # a turn's end voids what it asked
        self._end_stream()
        if self._recording is not None:
            self._recording.cancel()
        self._recording = asyncio.get_running_loop().create_task(self._recorded(turn_id))

    async def _recorded(self, turn_id: str) -> None:
        """Idle once the rollout holds the turn's end (bounded): the supervisor reads
        the verdict, or the aborted mark, from it right after idle()."""
        deadline = time.monotonic() + RECORD_BOUND
        path = self._rollout()
        while path is not None and not _turn_ended_in(path, turn_id):
            if time.monotonic() > deadline:
                log.warning("codex turn %s: its end is not in %s after %g s",
                            turn_id, path, RECORD_BOUND)
                break
            await asyncio.sleep(RECORD_POLL)
        if not self.running:
            self.idle.set()

    def _end_stream(self) -> None:
        if self._streaming is not None and self._stream_open:
            self._stream_open = False
            self._streaming.feed({"type": "message_end"})
