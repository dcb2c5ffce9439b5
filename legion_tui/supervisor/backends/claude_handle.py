"""Claude Code as a long-lived stream-json session (`kind: claude`, backend claude-stream).

notes/agent-clis.md §1.3–1.9. One process per node, in the node's cwd:

    claude -p --input-format stream-json --output-format stream-json --verbose
           --include-partial-messages --replay-user-messages
           (--session-id <uuid> | --resume <id>) [--append-system-prompt …] [--allowedTools …]
           --permission-prompt-tool=stdio

- stdin takes one JSON line per message: `{"type":"user",…}` for the task, a steer or a
  letter (idle: a new turn; busy: Claude queues it and hands it to the model at the next
  tool boundary, or runs it as the next turn), and `control_request` `interrupt` to abort.
- stdout says what happens: `system/init` at the start of every turn, `stream_event`s
  (the live rate), `assistant`/`user` records, and one `result` per turn (`is_error`,
  `terminal_reason`; its `subtype` says "success" even on an API error).
- Which lines Claude has taken: `--replay-user-messages` echoes each of our user lines
  (`isReplay`) when Claude takes it — into a turn, or absorbed mid-turn. A `result` with
  lines still unechoed means a queued line will run as the next turn, so the agent is
  not idle yet (`queued_turn_count` in the result says 0 even then: measured).
- The session file is `${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects/<cwd, every
  non-alphanumeric char → "-">/<session id>.jsonl` (the child's env decides); it appears
  with the first prompt and the run's `sessions/<nodeId>.jsonl` links to it.
- Claude has no way to drop queued lines; an interrupt keeps them (they run next).
- A tool its rules neither allow nor deny is asked of us (`--permission-prompt-tool=stdio`:
  a `control_request` `can_use_tool` on stdout): the node is BLOCKED with "allow Write
  (x.txt)? y allows" until the user's steer answers — "y" allows, anything else denies
  with that text as the reason (a `control_response`). A turn's end voids the question.
- A subagent (the Task tool) runs in the background in 2.1.328: the turn that launched
  it ends with a `result` while it works, and when it completes Claude starts a turn of
  its own (a task notification) — also when the notification came before the launching
  turn's `result` (measured). So a running background subagent keeps the agent busy, and
  so does a notification, until the turn after it starts (bounded:
  `NOTIFICATION_TURN_BOUND`; a notification Claude folds into a running turn at a tool
  boundary gets no turn of its own, and costs that bound). An interrupt kills background
  subagents (their notification then says "stopped", and no turn follows). Background
  Bash commands do not keep it busy (a dev server may run for ever).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import re
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from legion_tui.model import Backend
from legion_tui.session.streaming import StreamingMessage, StreamSink
from legion_tui.supervisor.backend import ABORT_BOUND, AbortResult, LaunchSpec, SteerOutcome
from legion_tui.supervisor.backends.asking import InputSink, Questions, is_yes
from legion_tui.supervisor.backends.common import (
    ProcessChildHandle,
    bounded_abort,
    child_env,
    has_option,
    log_path,
    log_tail,
    option_value,
    point_session_link,
    require_executable,
    resolve_argv,
)
from legion_tui.supervisor.backends.rpc_handle import RESUME_PROMPT, START_BOUND
from legion_tui.supervisor.process import ChildProcess, spawn_child
from legion_tui.supervisor.rpc import (
    MAX_LINE_BYTES,
    WRITE_BOUND,
    LineSplitter,
    RpcError,
    pump_lines,
)

__all__ = [
    "ABORTED_REASONS",
    "CLAUDE_TOOL_NAMES",
    "ClaudeHandle",
    "claude_argv",
    "claude_session_file",
    "claude_tools",
]

log = logging.getLogger(__name__)

# pi's lowercase tool names (the bundled cards) → Claude Code's. Grep, Glob and LS are
# gone from 2.1.328 (its Bash searches); allowing a tool it lacks is a rule that never
# matches, not an error.
CLAUDE_TOOL_NAMES: dict[str, str] = {
    "read": "Read",
    "bash": "Bash",
    "edit": "Edit",
    "write": "Write",
    "grep": "Grep",
    "find": "Glob",
    "ls": "LS",
}
# A `result` that ends an interrupted turn: not a failure of the turn.
ABORTED_REASONS = frozenset({"aborted_streaming", "aborted_tools"})
# A background task's end that Claude answers with a turn of its own (a killed one's
# "stopped" is not answered). Measured: the turn's init follows within ~50 ms; the bound
# only keeps a notification Claude never answers from holding the node busy for ever.
NOTIFIED_STATUSES = frozenset({"completed", "failed"})
NOTIFICATION_TURN_BOUND = 10.0
_BACKGROUND_KEPT = 256  # background task ids remembered (their notifications may come late)

_SLUG = re.compile(r"[^A-Za-z0-9]")
_DELTAS = {"text_delta": "text_delta", "thinking_delta": "thinking_delta"}
_control_ids = itertools.count(1)


def claude_tools(tools: Sequence[str]) -> list[str]:
    """A card's tool names as Claude's (names it already spells pass through)."""
    return [CLAUDE_TOOL_NAMES.get(name, name) for name in tools]


def claude_argv(spec: LaunchSpec, session_id: str, *, resume: bool) -> list[str]:
    """The card's command (or `claude`) plus the flags it did not give (module doc).

    Never adds a permission bypass: tools run only as the card's `tools` allow them.
    """
    argv = resolve_argv(spec.command or ["claude"], spec)
    if not has_option(argv, "-p", "--print"):
        argv.append("-p")
    if not has_option(argv, "--input-format"):
        argv += ["--input-format", "stream-json"]
    if not has_option(argv, "--output-format"):
        argv += ["--output-format", "stream-json"]
    for flag in ("--verbose", "--include-partial-messages", "--replay-user-messages"):
        if flag not in argv:
            argv.append(flag)
    if not has_option(argv, "--session-id", "--resume", "-r", "--continue", "-c"):
        argv += ["--resume", session_id] if resume else ["--session-id", session_id]
    if spec.system_prompt and not has_option(argv, "--system-prompt", "--append-system-prompt"):
        # One `--opt=value` word: a card body starting with "-" must not read as a flag.
        argv.append(f"--append-system-prompt={spec.system_prompt}")
    if spec.tools and not has_option(argv, "--allowedTools", "--allowed-tools"):
        # One comma-separated word: the option takes a variadic list.
        argv.append(f"--allowedTools={','.join(claude_tools(spec.tools))}")
    bypass = "--dangerously-skip-permissions" in argv or option_value(
        argv, "--permission-mode"
    ) == "bypassPermissions"
    if not bypass and not has_option(argv, "--permission-prompt-tool"):
        # A tool the rules neither allow nor deny is asked of us on stdout (a
        # `can_use_tool` control request) instead of denied unseen: the node is BLOCKED
        # until the user answers (`asking`); without it `-p` denies it silently. A card
        # that bypasses permissions is never asked anything.
        argv.append("--permission-prompt-tool=stdio")
    return argv


def claude_session_file(env: dict[str, str], cwd: Path, session_id: str) -> Path:
    """Where Claude Code run with `env` in `cwd` writes session `session_id`."""
    config = env.get("CLAUDE_CONFIG_DIR") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".claude"
    )
    # Claude names the folder after its working directory as the kernel reports it.
    slug = _SLUG.sub("-", os.path.realpath(cwd))
    return Path(config) / "projects" / slug / f"{session_id}.jsonl"


def _resume_id(link: Path) -> str | None:
    """The session a resume continues: the stem of the file the node's link points at."""
    try:
        target = Path(os.path.realpath(link))
    except OSError:
        return None
    if not target.is_file() or target == link.absolute():
        return None  # no link (a real file of another kind) or nothing to continue
    stem = target.stem
    try:
        uuid.UUID(stem)
    except ValueError:
        return None
    return stem


def _user_line(text: str) -> bytes:
    message = {
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": None,
        "session_id": "",
    }
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def _turn_error(result: dict[str, Any]) -> str | None:
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


class ClaudeHandle(ProcessChildHandle):
    def __init__(
        self,
        spec: LaunchSpec,
        *,
        on_stream: StreamSink | None = None,
        on_input: InputSink | None = None,
    ) -> None:
        self.spec = spec
        self.node_id = spec.node_id
        self.backend: Backend = "claude-stream"
        self.pid: int | None = None
        self.child: ChildProcess | None = None
        self.session_id: str | None = None
        self.session_file: Path | None = None  # Claude's own file (the node's link target)
        self._env: dict[str, str] = {}
        self._stdin: asyncio.StreamWriter | None = None
        self._reader: asyncio.Task[None] | None = None
        self._lines = LineSplitter(MAX_LINE_BYTES)
        self.skipped_lines = 0  # stdout lines that were not a JSON object (or too long)
        # Turn state (module doc): a turn is open from `system/init` to its `result`; our
        # user lines not yet echoed back wait to be taken (True: sent while idle — it
        # starts a turn; False: sent into a busy agent — queued).
        self._turn_open = False
        self._unechoed: deque[bool] = deque()
        self._subagents: set[str] = set()  # background subagent task ids now running
        # Background task ids seen (a foreground Bash notifies too, and gets no turn).
        self._background: OrderedDict[str, None] = OrderedDict()
        self._notified: asyncio.TimerHandle | None = None  # a notification turn is due
        self._notice_in_turn = False  # a notification came while this turn was open
        self._results = 0  # `result` lines seen (an abort waits for the next one)
        self._turn_error: str | None = None
        self._closed = False  # stdout reached EOF: the agent is gone
        self._idle = asyncio.Event()
        self._idle.set()
        self._changed = asyncio.Event()  # pulsed on every move of the turn state
        self._init = asyncio.Event()  # Claude showed life (its first system/init)
        self._controls: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._streaming = StreamingMessage(on_stream, time.time) if on_stream else None
        self.questions = Questions(on_input)  # permission requests waiting on the user

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        spec = self.spec
        env = self._env = child_env(spec)
        resume_id = _resume_id(spec.session_file) if spec.resume else None
        session_id = resume_id or str(uuid.uuid4())
        argv = claude_argv(spec, session_id, resume=resume_id is not None)
        # A card that names the session itself (--session-id / --resume) decides it.
        session_id = option_value(argv, "--session-id", "--resume", "-r") or session_id
        require_executable(argv, env, spec.cwd)
        try:
            self.child = await spawn_child(
                argv, env=env, cwd=spec.cwd, log_path=log_path(spec), pipes=True
            )
            self.pid = self.child.pid
            proc = self.child.proc
            assert proc.stdin is not None and proc.stdout is not None
            self._stdin = proc.stdin
            self._reader = asyncio.get_running_loop().create_task(self._read_loop(proc.stdout))
            self._learn_session(session_id, env)
            prompt = RESUME_PROMPT if resume_id is not None else spec.task
            await self._send_user(prompt)
            await self._wait_for_init()
        except Exception as err:
            # Half started (a bad flag, no key, a crash): nothing may be left behind, and
            # the reason is Claude's own last words in the log.
            await self.stop(force=True)
            raise RpcError("start", self._start_failure(err)) from err
        except BaseException:
            await self.stop(force=True)
            raise

    async def _wait_for_init(self) -> None:
        init = asyncio.ensure_future(self._init.wait())
        try:
            await asyncio.wait_for(self._until_init_or_eof(init), START_BOUND)
        finally:
            init.cancel()
        if not self._init.is_set():
            raise RpcError("start", "claude closed its output before it started a turn")

    async def _until_init_or_eof(self, init: asyncio.Future[Any]) -> None:
        assert self._reader is not None
        await asyncio.wait({init, self._reader}, return_when=asyncio.FIRST_COMPLETED)

    def _start_failure(self, err: Exception) -> str:
        if isinstance(err, TimeoutError):
            why = f"claude did not start a turn within {START_BOUND:g} s"
        elif isinstance(err, RpcError):
            why = err.message
        else:
            why = str(err) or type(err).__name__
        code = self.exited
        if code is not None:
            why += f" (exit status {code})"
        tail = log_tail(self.spec)
        return f"{why}; its log ends: {tail}" if tail else why

    def _learn_session(self, session_id: str, env: dict[str, str]) -> None:
        if session_id == self.session_id:
            return
        self.session_id = session_id
        self.session_file = claude_session_file(env, self.spec.cwd, session_id)
        point_session_link(self.spec.session_file, self.session_file)

    # -- state -------------------------------------------------------------------------

    def turn_running(self) -> bool:
        if self.child is None or self._closed or self.exited is not None:
            return False
        return (
            self._turn_open
            or bool(self._unechoed)
            or bool(self._subagents)
            or self._notified is not None
        )

    async def idle(self) -> None:
        if self.child is None:
            return
        idle: asyncio.Future[Any] = asyncio.ensure_future(self._idle.wait())
        exited: asyncio.Future[Any] = asyncio.ensure_future(
            asyncio.shield(self.child.exited_future())
        )
        try:
            await asyncio.wait({idle, exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            idle.cancel()
            exited.cancel()

    def turn_error(self) -> str | None:
        return self._turn_error

    def _update_idle(self) -> None:
        if self.turn_running():
            self._idle.clear()
        else:
            self._idle.set()
        self._changed.set()
        self._changed.clear()  # a pulse: waiters already woken keep their wake-up

    # -- control -----------------------------------------------------------------------

    async def abort(self, *, keep_queue: bool = False, bound: float = ABORT_BOUND) -> AbortResult:
        # One snapshot of "is a turn running", taken before anything is sent.
        if not self.turn_running():
            return AbortResult("no-turn", 0)
        results_before = self._results
        queued = sum(1 for starts_turn in self._unechoed if not starts_turn)
        request_id = f"legion-interrupt-{os.getpid()}-{next(_control_ids)}"
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._controls[request_id] = reply
        request: dict[str, Any] = {
            "type": "control_request",
            "request_id": request_id,
            "request": {"subtype": "interrupt"},
        }

        async def nothing_queued() -> int:
            return 0

        def interrupt() -> None:
            self._write(json.dumps(request, separators=(",", ":")).encode() + b"\n")

        async def settled() -> None:
            # The interrupted turn's own `result` (terminal_reason aborted_*); or, with
            # only background subagents running (no turn, no result to come), idle.
            while self._results == results_before and self.turn_running():
                await self._changed.wait()

        try:
            result = await bounded_abort(
                bound=bound,
                keep_queue=keep_queue,
                # Claude cannot drop queued lines: only "nothing queued" is a clear queue.
                clear=nothing_queued if queued == 0 else None,
                interrupt=interrupt,
                settled=settled,
            )
        finally:
            self._controls.pop(request_id, None)
        still = self._still_queued(reply)
        if result.dropped == 0 and still and not keep_queue:
            return AbortResult(result.outcome, None)  # Claude says some wait on: kept
        return result

    @staticmethod
    def _still_queued(reply: asyncio.Future[dict[str, Any]]) -> list[Any]:
        if not reply.done() or reply.cancelled():
            return []
        response = reply.result().get("response")
        still = response.get("still_queued") if isinstance(response, dict) else None
        return still if isinstance(still, list) else []

    async def steer(self, text: str) -> SteerOutcome:
        if self.child is None or self._closed or self.exited is not None:
            return "intercepted"  # nobody will ever read it
        if self.questions.answer(text):
            return "accepted"  # the answer to the permission Claude waits on
        running = self.turn_running()
        await self._send_user(text)
        return "queued" if running else "accepted"

    async def deliver(self, envelope: str) -> None:
        if self.child is None or self._closed or self.exited is not None:
            raise RpcError("deliver", "the agent is not running")
        await self._send_user(envelope)

    async def _send_user(self, text: str) -> None:
        if self._closed or self._stdin is None:
            raise RpcError("user", "claude's input is closed")
        # The state moves before any await: a check of turn_running() right after the
        # write already sees the turn (an abort right after a steer must find it).
        self._unechoed.append(not self.turn_running())
        self._update_idle()
        self._write(_user_line(text))
        await self._drain()

    def _write(self, data: bytes) -> None:
        if self._stdin is None or self._stdin.is_closing():
            raise RpcError("write", "claude's input is closed")
        try:
            self._stdin.write(data)
        except (ConnectionError, RuntimeError) as err:
            raise RpcError("write", f"cannot write: {err}") from err
        self._spawn(self._drain())

    async def _drain(self) -> None:
        if self._stdin is None:
            return
        with contextlib.suppress(ConnectionError, TimeoutError, RuntimeError):
            await asyncio.wait_for(self._stdin.drain(), WRITE_BOUND)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _close_channels(self) -> None:
        if self._stdin is not None:
            with contextlib.suppress(Exception):
                self._stdin.close()
        for task in list(self._tasks):
            task.cancel()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.gather(self._reader, return_exceptions=True), 1.0)
        self._on_eof()

    # -- reading -----------------------------------------------------------------------

    def _dropped(self, count: int) -> None:
        self.skipped_lines += count

    async def _read_loop(self, stdout: asyncio.StreamReader) -> None:
        try:
            await pump_lines(stdout, self._lines, self._dispatch, self._dropped)
        finally:
            self._on_eof()

    def _on_eof(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._turn_open = False
        self._unechoed.clear()
        self._subagents.clear()
        self._cancel_notified()
        self._notice_in_turn = False
        self.questions.clear()
        for fut in self._controls.values():
            if not fut.done():
                fut.set_exception(RpcError("control", "the agent closed its output"))
                fut.exception()  # observed: an abort may have stopped waiting for it
        if self._streaming is not None:
            self._streaming.feed({"type": "agent_end"})  # a message cut off never ends
        self._update_idle()

    def _dispatch(self, line: bytes) -> None:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # not UTF-8 / not JSON / nested too deep
            self.skipped_lines += 1
            return
        if not isinstance(obj, dict):
            self.skipped_lines += 1
            return
        try:
            self._track(obj)
        except Exception:
            # One line the handle could not take must not end the read loop: that would
            # read as idle and settle a running node.
            log.exception("claude output line not handled: %.200r", obj)

    def _track(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        if kind == "stream_event":
            if obj.get("parent_tool_use_id") is None:  # a subagent's stream is not ours
                self._stream(obj.get("event"))
        elif kind == "system" and obj.get("subtype") == "init":
            self._turn_open = True
            self._cancel_notified()  # the turn a notification was due to start
            self._notice_in_turn = False
            self._turn_error = None  # a new turn: the last one's failure is history
            self._init.set()
            session_id = obj.get("session_id")
            if isinstance(session_id, str) and session_id:
                self._learn_session(session_id, self._env)
            self._update_idle()
        elif kind == "user" and obj.get("isReplay") is True:
            if self._unechoed:
                self._unechoed.popleft()  # Claude took our oldest line
            self._update_idle()
        elif kind == "result":
            self._turn_open = False
            if self._notice_in_turn:
                self._notice_in_turn = False
                self._expect_notification_turn()
            self._results += 1
            self.questions.clear()  # a turn's end voids what it asked (an interrupt)
            self._turn_error = _turn_error(obj)
            self._update_idle()
        elif kind == "system" and obj.get("subtype") == "background_tasks_changed":
            tasks = obj.get("tasks")
            listed = [t for t in (tasks if isinstance(tasks, list) else []) if isinstance(t, dict)]
            for task in listed:
                self._remember_background(task.get("task_id"))
            self._subagents = {
                str(t.get("task_id")) for t in listed if t.get("task_type") == "local_agent"
            }
            self._update_idle()
        elif kind == "system" and obj.get("subtype") == "task_started":
            if obj.get("is_backgrounded") is True:
                self._remember_background(obj.get("task_id"))
        elif kind == "system" and obj.get("subtype") == "task_notification":
            background = obj.get("task_id") in self._background
            if background and obj.get("status") in NOTIFIED_STATUSES:
                if self._turn_open:
                    self._notice_in_turn = True  # its turn comes after this one's result
                else:
                    self._expect_notification_turn()
                self._update_idle()
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
        tool = str(request.get("display_name") or request.get("tool_name") or "a tool")
        given = request.get("input")
        tool_input = given if isinstance(given, dict) else {}
        about = request.get("description") or tool_input.get("command") or ""
        question = f"allow {tool}" + (f" ({about})" if about else "") + "? y allows"

        def answer(text: str) -> None:
            if is_yes(text):
                self._reply(request_id, {"behavior": "allow", "updatedInput": tool_input})
            else:
                message = text.strip() if text.strip() not in ("n", "no") else "the user said no"
                self._reply(request_id, {"behavior": "deny", "message": message})

        self.questions.ask(request_id, question, answer)

    def _reply(
        self, request_id: str, response: dict[str, Any] | None, *, error: str | None = None
    ) -> None:
        body: dict[str, Any] = {"request_id": request_id}
        if error is not None:
            body.update(subtype="error", error=error)
        else:
            body.update(subtype="success", response=response)
        line = {"type": "control_response", "response": body}
        with contextlib.suppress(RpcError):  # its input closed: the question died with it
            self._write(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode()
                        + b"\n")

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
        log.warning("claude (%s) did not answer a task notification with a turn", self.node_id)
        self._notified = None
        self._update_idle()

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
