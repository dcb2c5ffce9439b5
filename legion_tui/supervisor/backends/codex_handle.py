"""`codex app-server`, one per node, driven over JSON-RPC on stdio (backend `codex-app-server`).

The protocol (the schema `codex app-server generate-json-schema` writes; notes/agent-clis.md
§2.4): `initialize {clientInfo}` then the notification `initialized`; `thread/start {cwd,
sandbox, approvalPolicy, developerInstructions}` (or `thread/resume {threadId, …}`);
`turn/start {threadId, input}`; `turn/steer {threadId, expectedTurnId, input}` into a
running turn; `turn/interrupt {threadId, turnId}`. The turn state comes from the
notifications `turn/started` and `turn/completed {turn: {id, status, error}}` (status
completed | interrupted | failed).

- The sandbox is `workspace-write` rooted at the node's cwd, approvals `never` unless the
  card's argv asks for others (`-c approval_policy=untrusted|on-request|on-failure`):
  then a command or file change Codex asks to approve is the node's question (BLOCKED,
  `asking`) and the user's steer answers it — "y" accepts, anything else declines.
  The role card's body is Codex's `developerInstructions`; the model and provider
  come from the card's argv (`-c model=… -c model_provider=…`, agents.resolve) or the
  user's own `config.toml`, never from legion.
- The session file is Codex's rollout (`thread.path` of the thread/start answer, else
  `$CODEX_HOME/sessions/*/*/*/rollout-*-<thread>.jsonl`); the run's `sessions/<nodeId>.jsonl`
  links to it. Codex creates it at the first turn; the link is made when the path is known.
- The node goes idle only once the turn's end is in the rollout (its `task_complete` or
  `turn_aborted` line, bounded wait): the supervisor reads the verdict and the aborted
  mark from that file right after `idle()`.
- Codex keeps no queue legion can clear: an abort reports `dropped` None while a steer
  waits for its model request, 0 when nothing waits.
- The live rate: each `item/agentMessage/delta` is one streamed piece, and
  `thread/tokenUsage/updated.last.outputTokens` (the call's own count, never the thread's
  `total`) ends the call — fed to `StreamingMessage` as pi-shaped events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import legion_tui
from legion_tui.model import Backend
from legion_tui.session.streaming import StreamingMessage, StreamSink
from legion_tui.supervisor.backend import ABORT_BOUND, AbortResult, LaunchSpec, SteerOutcome
from legion_tui.supervisor.backends.asking import InputSink, Questions, is_yes
from legion_tui.supervisor.backends.codex_rpc import JsonRpcClient, JsonRpcError
from legion_tui.supervisor.backends.common import (
    ProcessChildHandle,
    bounded_abort,
    child_env,
    log_path,
    log_tail,
    point_session_link,
    require_executable,
    resolve_argv,
)
from legion_tui.supervisor.backends.rpc_handle import RESUME_PROMPT, START_BOUND
from legion_tui.supervisor.process import ChildProcess, spawn_child

__all__ = ["CodexHandle", "codex_argv", "rollout_thread_id"]

log = logging.getLogger(__name__)

SANDBOX = "workspace-write"
APPROVAL_POLICY = "never"
# How long a turn's end may take to reach the rollout after `turn/completed`. Codex 0.169.0
# has written it by then (seen every time); the bound holds should a later Codex write it
# after. Past it the node goes idle on what the file says.
RECORD_BOUND = 3.0
RECORD_POLL = 0.01
TAIL_BYTES = 64 * 1024
_THREAD_IN_NAME = re.compile(
    r"rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$"
)
_TURN_ENDS = frozenset({"task_complete", "turn_aborted"})
_FRAME = re.compile(r"\d+: (<unknown>|at .*|0x[0-9a-f]+ .*)$")  # a Rust backtrace frame


def codex_argv(spec: LaunchSpec) -> list[str]:
    """The card's argv (or `codex`) with `app-server` appended unless it is there."""
    argv = resolve_argv(spec.command or ["codex"], spec)
    if "app-server" not in argv:
        argv.append("app-server")
    return argv


def approval_policy(argv: list[str]) -> tuple[str, list[str]]:
    """The card's `-c approval_policy=…` (TOML: quotes allowed), else `never`, and the
    argv without it: the policy goes in `thread/start`, as Codex 0.169 refuses
    `untrusted` in its config ("no longer supported") yet takes it there."""
    policy, kept, index = APPROVAL_POLICY, [], 0
    while index < len(argv):
        arg = argv[index]
        key, _eq, value = (argv[index + 1] if index + 1 < len(argv) else "").partition("=")
        if arg in ("-c", "--config") and key.strip() == "approval_policy":
            policy = value.strip().strip("'\"") or policy
            index += 2
            continue
        kept.append(arg)
        index += 1
    return policy, kept


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
    return f"approve: {_APPROVALS[method]}" + (f" {about}" if about else "") + "? y approves"


def rollout_thread_id(path: Path) -> str | None:
    """The thread id a rollout file is named after (`rollout-<time>-<thread>.jsonl`),
    following the node's session link; None when it names none."""
    found = _THREAD_IN_NAME.search(os.path.realpath(path))
    return found.group(1) if found else None


def _codex_home(env: dict[str, str]) -> Path:
    home = env.get("CODEX_HOME")
    if home:
        return Path(home)
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".codex"


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


def _log_words(spec: LaunchSpec, *, max_lines: int = 6) -> str:
    """The last lines of Codex's log that say something: a refused start prints its
    reason (`Error: Model provider … not found`) and then a Rust stack backtrace of
    `N: <unknown>` frames, which would push the reason out of `log_tail`'s last lines."""
    lines = log_tail(spec, max_lines=64).split(" ⏎ ")
    kept = [ln for ln in lines if ln and ln != "Stack backtrace:" and not _FRAME.match(ln)]
    return " ⏎ ".join(kept[-max_lines:])


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


class CodexHandle(ProcessChildHandle):
    def __init__(
        self,
        spec: LaunchSpec,
        *,
        on_stream: StreamSink | None = None,
        on_input: InputSink | None = None,
    ) -> None:
        self.spec = spec
        self.node_id = spec.node_id
        self.backend: Backend = "codex-app-server"
        self.pid: int | None = None
        self.child: ChildProcess | None = None
        self.client: JsonRpcClient | None = None
        self.thread_id: str | None = None
        self.session_file: Path | None = None  # the rollout, once known
        self.turn_id: str | None = None  # the running turn
        self._running = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._ends: dict[str, asyncio.Future[str]] = {}  # turn id → its final status
        self._error: str | None = None  # why the last turn failed
        self._steers: list[str] = []  # handed over to the running turn, not yet sent on
        self._recording: asyncio.Task[None] | None = None
        self._streaming = StreamingMessage(on_stream, time.time) if on_stream else None
        self._stream_open = False
        self._env: dict[str, str] = {}
        self.questions = Questions(on_input)  # approvals waiting on the user
        self._policy = APPROVAL_POLICY

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        spec = self.spec
        self._policy, argv = approval_policy(codex_argv(spec))
        self._env = env = child_env(spec)
        require_executable(argv, env, spec.cwd)
        thread_id: str | None = None
        if spec.resume:
            thread_id = rollout_thread_id(spec.session_file)
            if thread_id is None:
                raise JsonRpcError("start", f"no Codex rollout to resume at {spec.session_file}")
        try:
            async with asyncio.timeout(START_BOUND):
                await self._launch(argv, env, thread_id)
        except Exception as err:
            # A launch that fails half-way must not leave its process behind (the caller
            # gets no handle to stop), and its reason is Codex's own last words.
            await self.stop(force=True)
            raise JsonRpcError("start", self._start_failure(err)) from err
        except BaseException:
            await self.stop(force=True)
            raise

    async def _launch(self, argv: list[str], env: dict[str, str], thread_id: str | None) -> None:
        spec = self.spec
        self.child = await spawn_child(
            argv, env=env, cwd=spec.cwd, log_path=log_path(spec), pipes=True
        )
        self.pid = self.child.pid
        proc = self.child.proc
        assert proc.stdin is not None and proc.stdout is not None
        client = self.client = JsonRpcClient(
            proc.stdin, proc.stdout, on_notification=self._on_notification,
            on_request=self._on_request,
        )
        info = {"name": "legion", "title": "legion-tui", "version": legion_tui.__version__}
        await client.request("initialize", {"clientInfo": info}, bound=START_BOUND)
        client.notify("initialized")
        params: dict[str, Any] = {
            "cwd": str(spec.cwd),
            "sandbox": SANDBOX,
            "approvalPolicy": self._policy,
        }
        if spec.system_prompt:
            params["developerInstructions"] = spec.system_prompt
        if thread_id is not None:
            result = await client.request(
                "thread/resume", {"threadId": thread_id, **params}, bound=START_BOUND
            )
        else:
            result = await client.request("thread/start", params, bound=START_BOUND)
        thread = result.get("thread")
        found = thread.get("id") if isinstance(thread, dict) else None
        if not isinstance(found, str) or not found:
            raise JsonRpcError("thread/start", f"no thread id in the answer: {result!r:.200}")
        self.thread_id = found
        self._learn_session_file(thread if isinstance(thread, dict) else {})
        await self._start_turn(RESUME_PROMPT if spec.resume else spec.task, bound=START_BOUND)
        if self.session_file is None:
            self._learn_session_file({})  # Codex names the file at the first turn

    def _start_failure(self, err: Exception) -> str:
        if isinstance(err, TimeoutError):
            why = f"codex did not start a turn within {START_BOUND:g} s"
        else:
            why = str(err) or type(err).__name__
        code = self.exited
        if code is not None:
            why += f" (exit status {code})"
        tail = _log_words(self.spec)
        return f"{why}; its log ends: {tail}" if tail else why

    def _learn_session_file(self, thread: dict[str, Any]) -> None:
        path = thread.get("path")
        target: Path | None = None
        if isinstance(path, str) and path.endswith(".jsonl"):
            target = Path(path)
        elif self.thread_id is not None:
            sessions = _codex_home(self._env) / "sessions"
            found = sorted(sessions.glob(f"*/*/*/rollout-*-{self.thread_id}.jsonl"))
            target = found[-1] if found else None
        if target is not None:
            self.session_file = target
            point_session_link(self.spec.session_file, target)

    def turn_running(self) -> bool:
        return (
            self._running
            and self.exited is None
            and self.client is not None
            and not self.client.closed.is_set()
        )

    async def idle(self) -> None:
        if self.client is None or self.child is None:
            return
        waits: set[asyncio.Future[Any]] = {
            asyncio.ensure_future(self._idle.wait()),
            asyncio.ensure_future(asyncio.shield(self.child.exited_future())),
            asyncio.ensure_future(self.client.closed.wait()),
        }
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if self.client.closed.is_set() and self.exited is None:
                # Its output closed: it is exiting. Its status says how (the monitor
                # judges a non-zero exit), so give the exit a moment to be reaped.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.child.exited_future()), 5.0)
        finally:
            for fut in waits:
                fut.cancel()

    def turn_error(self) -> str | None:
        return self._error

    # -- control -----------------------------------------------------------------------

    async def abort(self, *, keep_queue: bool = False, bound: float = ABORT_BOUND) -> AbortResult:
        # One snapshot of "is a turn running", taken before anything is sent.
        if not self.turn_running() or self.turn_id is None:
            return AbortResult("no-turn", 0)
        client, turn = self.client, self.turn_id
        assert client is not None
        ended = self._end_of(turn)
        waiting = len(self._steers)
        replies: list[asyncio.Future[dict[str, Any]]] = []

        def interrupt() -> None:
            replies.append(client.send("turn/interrupt", {"threadId": self.thread_id,
                                                         "turnId": turn}))

        async def settled() -> None:
            gone: asyncio.Future[Any] = asyncio.ensure_future(client.closed.wait())
            try:
                await asyncio.wait({ended, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                gone.cancel()

        result = await bounded_abort(
            bound=bound, keep_queue=keep_queue, clear=None, interrupt=interrupt, settled=settled
        )
        for fut in replies:
            # Observe a late failure so it never surfaces as "exception never retrieved".
            fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        if result.dropped is None and waiting == 0:
            return AbortResult(result.outcome, 0)  # nothing was queued: none kept either
        return result

    async def steer(self, text: str) -> SteerOutcome:
        if self.questions.answer(text):
            return "accepted"  # the answer to the approval Codex waits on
        if self.client is None or self.exited is not None or self.client.closed.is_set():
            return "intercepted"  # nobody will ever read it
        return await self._hand_over(text)

    async def deliver(self, envelope: str) -> None:
        if self.client is None or self.exited is not None or self.client.closed.is_set():
            raise JsonRpcError("deliver", "the agent is not running")
        await self._hand_over(envelope)

    async def _hand_over(self, text: str) -> SteerOutcome:
        """Into the running turn (`turn/steer`: Codex sends it with its next model
        request) → queued; no turn running → a new one (`turn/start`) → accepted."""
        turn = self.turn_id if self.turn_running() else None
        if turn is not None:
            try:
                await self._steer_into(turn, text)
                return "queued"
            except JsonRpcError:
                if self.turn_running() and self.turn_id == turn:
                    raise  # refused while that very turn runs: a real refusal
                # The turn ended meanwhile: the text starts the next one.
        try:
            await self._start_turn(text, bound=ABORT_BOUND)
        except JsonRpcError:
            if self.turn_running() and self.turn_id is not None:
                # Raced with a turn that had just begun: hand it to that turn.
                await self._steer_into(self.turn_id, text)
                return "queued"
            raise
        return "accepted"

    async def _steer_into(self, turn: str, text: str) -> None:
        assert self.client is not None
        self._steers.append(text)
        try:
            await self.client.request(
                "turn/steer",
                {"threadId": self.thread_id, "expectedTurnId": turn, "input": _text(text)},
                bound=ABORT_BOUND,
            )
        except BaseException:
            with contextlib.suppress(ValueError):
                self._steers.remove(text)
            raise

    async def _start_turn(self, text: str, *, bound: float) -> None:
        assert self.client is not None
        result = await self.client.request(
            "turn/start", {"threadId": self.thread_id, "input": _text(text)}, bound=bound
        )
        turn = result.get("turn")
        turn_id = turn.get("id") if isinstance(turn, dict) else None
        if isinstance(turn_id, str):
            # The answer comes before turn/started: the turn runs from now (an abort or a
            # steer right after must see it), unless its end was already heard.
            self._begin(turn_id)

    async def _close_channels(self) -> None:
        if self._recording is not None:
            self._recording.cancel()
        if self.client is not None:
            await self.client.close()
        self.questions.clear()
        self._running = False
        self._idle.set()
        if self._streaming is not None:
            self._streaming.feed({"type": "agent_end"})  # a message cut off never ends

    # -- notifications -----------------------------------------------------------------

    def _on_request(self, req_id: Any, method: str, params: dict[str, Any]) -> bool:
        """An approval waits on the user (True: answered later); others are refused."""
        if method not in _APPROVALS or self.client is None:
            return False
        client, legacy = self.client, method in ("execCommandApproval", "applyPatchApproval")

        def answer(text: str) -> None:
            yes = is_yes(text)
            if legacy:
                client.respond(req_id, {"decision": "approved" if yes else "denied"})
            else:
                client.respond(req_id, {"decision": "accept" if yes else "decline"})

        self.questions.ask(f"request-{req_id}", _approval_question(method, params), answer)
        return True

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        thread = params.get("threadId")
        if thread is not None and self.thread_id is not None and thread != self.thread_id:
            return  # another thread's (a sub-agent's): not this node's turn state
        handler = self._HANDLERS.get(method)
        if handler is not None:
            handler(self, params)

    def _on_turn_started(self, params: dict[str, Any]) -> None:
        turn = params.get("turn")
        turn_id = turn.get("id") if isinstance(turn, dict) else None
        if isinstance(turn_id, str):
            self._begin(turn_id)

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
            if text in self._steers:
                self._steers.remove(text)

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

    _HANDLERS: ClassVar[dict[str, Callable[[CodexHandle, dict[str, Any]], None]]] = {
        "turn/started": _on_turn_started,
        "turn/completed": _on_turn_completed,
        "item/started": _on_user_message,
        "item/agentMessage/delta": _on_delta,
        "thread/tokenUsage/updated": _on_token_usage,
    }

    # -- turn state --------------------------------------------------------------------

    def _end_of(self, turn_id: str) -> asyncio.Future[str]:
        fut = self._ends.get(turn_id)
        if fut is None:
            fut = self._ends[turn_id] = asyncio.get_running_loop().create_future()
        return fut

    def _begin(self, turn_id: str) -> None:
        if self._end_of(turn_id).done():
            return  # its end came first (the answer to turn/start was late)
        if self.turn_id != turn_id:
            self._error = None  # a new turn: the last one's failure is history
        self.turn_id = turn_id
        self._running = True
        self._idle.clear()

    def _end(self, turn_id: str, status: str, error: str | None) -> None:
        end = self._end_of(turn_id)
        if not end.done():
            end.set_result(status)
        if self.turn_id not in (turn_id, None):
            return  # an older turn's late word: the running one is another
        if status == "failed":
            self._error = _api_message(error) if error else "the turn failed"
        self.turn_id = None
        self._running = False
        self._steers.clear()
        self.questions.clear()  # a turn's end voids what it asked
        self._end_stream()
        if self._recording is not None:
            self._recording.cancel()
        self._recording = asyncio.get_running_loop().create_task(self._recorded(turn_id))

    async def _recorded(self, turn_id: str) -> None:
        """Idle once the rollout holds the turn's end (bounded): the supervisor reads
        the verdict, or the aborted mark, from it right after idle()."""
        deadline = time.monotonic() + RECORD_BOUND
        path = self.session_file
        while path is not None and not _turn_ended_in(path, turn_id):
            if time.monotonic() > deadline:
                log.warning("codex turn %s: its end is not in %s after %g s",
                            turn_id, path, RECORD_BOUND)
                break
            await asyncio.sleep(RECORD_POLL)
        if not self._running:
            self._idle.set()

    def _end_stream(self) -> None:
        if self._streaming is not None and self._stream_open:
            self._stream_open = False
            self._streaming.feed({"type": "message_end"})
