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

The parts: `claude.argv` (the command line, the session file's place), `claude.stream`
(the channel: reading the turn state off stdout, the lines we write), this module (the
process, and the handle's start, abort, steer and stop).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from legion_tui.model import Backend
from legion_tui.session.streaming import StreamSink
from legion_tui.supervisor.backend import ABORT_BOUND, AbortResult, LaunchSpec, SteerOutcome
from legion_tui.supervisor.backends.asking import InputSink
from legion_tui.supervisor.backends.claude.argv import (
    claude_argv,
    claude_session_file,
    resume_id,
)
from legion_tui.supervisor.backends.claude.stream import (
    ClaudeChannel,
)
from legion_tui.supervisor.backends.common import (
    RESUME_PROMPT,
    START_BOUND,
    ProcessChildHandle,
    bounded_abort,
    child_env,
    log_path,
    log_tail,
    option_value,
    point_session_link,
    require_executable,
)
from legion_tui.supervisor.processes.child_process import ChildProcess
from legion_tui.supervisor.processes.process import spawn_child
from legion_tui.timeouts import within
from legion_tui.wire.names import RequestError

__all__ = ["ClaudeHandle"]

_control_ids = itertools.count(1)


class ClaudeHandle(ProcessChildHandle):
    def __init__(
        self,
        spec: LaunchSpec,
        *,
        on_stream: StreamSink | None = None,
        on_input: InputSink | None = None,
        on_cost: Callable[[float], None] | None = None,
    ) -> None:
        self.spec = spec
        self.node_id = spec.node_id
        self.backend: Backend = "claude-stream"
        self.pid: int | None = None
        self.child: ChildProcess | None = None
        self.channel: ClaudeChannel | None = None
        self.session_id: str | None = None
        self.session_file: Path | None = None  # Claude's own file (the node's link target)
        self._env: dict[str, str] = {}
        self._on_stream = on_stream
        self._on_input = on_input
        self._on_cost = on_cost

    @property
    def skipped_lines(self) -> int:
        """stdout lines that were not a JSON object (or too long)."""
        return self.channel.skipped_lines if self.channel is not None else 0

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        spec = self.spec
        env = self._env = child_env(spec)
        resumed = resume_id(spec.session_file) if spec.resume else None
        session_id = resumed or str(uuid.uuid4())
        argv = claude_argv(spec, session_id, resume=resumed is not None)
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
            channel = self.channel = ClaudeChannel(
                proc.stdin,
                proc.stdout,
                node_id=self.node_id,
                on_session=self._learn_session,
                on_stream=self._on_stream,
                on_input=self._on_input,
                on_cost=self._on_cost,
            )
            self._learn_session(session_id)
            if spec.idle_start and resumed is not None:
                # Adopted idle: Claude shows life only with a first message, which is
                # the next steer's; its exit until then is the monitor's to judge.
                return
            await channel.send_user(RESUME_PROMPT if resumed is not None else spec.task)
            await self._wait_for_init(channel)
        except Exception as err:
            # Half started (a bad flag, no key, a crash): nothing may be left behind, and
            # the reason is Claude's own last words in the log.
            await self.stop(force=True)
            raise RequestError("start", self._start_failure(err)) from err
        except BaseException:
            await self.stop(force=True)
            raise

    @staticmethod
    async def _wait_for_init(channel: ClaudeChannel) -> None:
        waits: set[asyncio.Future[Any]] = {
            asyncio.ensure_future(channel.started.wait()),
            asyncio.ensure_future(channel.closed.wait()),
        }
        try:
            await within(
                asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED), START_BOUND
            )
        finally:
            for fut in waits:
                fut.cancel()
        if not channel.started.is_set():
            raise RequestError("start", "claude closed its output before it started a turn")

    def _start_failure(self, err: Exception) -> str:
        if isinstance(err, TimeoutError):
            why = f"claude did not start a turn within {START_BOUND:g} s"
        elif isinstance(err, RequestError):
            why = err.message
        else:
            why = str(err) or type(err).__name__
        code = self.exited
        if code is not None:
            why += f" (exit status {code})"
        tail = log_tail(self.spec)
        return f"{why}; its log ends: {tail}" if tail else why

    def _learn_session(self, session_id: str) -> None:
        if session_id == self.session_id:
            return
        self.session_id = session_id
        self.session_file = claude_session_file(self._env, self.spec.cwd, session_id)
        point_session_link(self.spec.session_file, self.session_file)

    # -- state -------------------------------------------------------------------------

    def _live(self) -> ClaudeChannel | None:
        """The channel while the agent can still read it."""
        channel = self.channel
        if channel is None or channel.closed.is_set() or self.exited is not None:
            return None
        return channel

    def turn_running(self) -> bool:
        channel = self._live()
        return channel is not None and channel.busy()

    async def idle(self) -> None:
        if self.child is None or self.channel is None:
            return
        waits: set[asyncio.Future[Any]] = {
            asyncio.ensure_future(self.channel.idle.wait()),
            asyncio.ensure_future(asyncio.shield(self.child.exited_future())),
        }
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in waits:
                fut.cancel()

    def turn_error(self) -> str | None:
        return self.channel.turn_error if self.channel is not None else None

    # -- control -----------------------------------------------------------------------

    async def abort(self, *, keep_queue: bool = False, bound: float = ABORT_BOUND) -> AbortResult:
        # One snapshot of "is a turn running", taken before anything is sent.
        channel = self._live()
        if channel is None or not channel.busy():
            return AbortResult("no-turn", 0)
        results_before = channel.results
        queued = channel.queued()
        request_id = f"legion-interrupt-{os.getpid()}-{next(_control_ids)}"
        replies: list[asyncio.Future[dict[str, Any]]] = []

        async def nothing_queued() -> int:
            return 0

        def interrupt() -> None:
            replies.append(channel.interrupt(request_id))

        async def settled() -> None:
            # The interrupted turn's own `result` (terminal_reason aborted_*); or, with
            # only background subagents running (no turn, no result to come), idle.
            while channel.results == results_before and self.turn_running():
                await channel.changed.wait()

        result = await bounded_abort(
            bound=bound,
            keep_queue=keep_queue,
            # Claude cannot drop queued lines: only "nothing queued" is a clear queue.
            clear=nothing_queued if queued == 0 else None,
            interrupt=interrupt,
            settled=settled,
        )
        still = [item for reply in replies for item in _still_queued(reply)]
        for reply in replies:
            reply.cancel()  # an answer later than the abort is not waited for
        if result.dropped == 0 and still and not keep_queue:
            return AbortResult(result.outcome, None)  # Claude says some wait on: kept
        return result

    async def steer(self, text: str) -> SteerOutcome:
        channel = self._live()
        if channel is None:
            return "intercepted"  # nobody will ever read it
        if channel.questions.answer(text):
            return "accepted"  # the answer to the permission Claude waits on
        running = channel.busy()
        await channel.send_user(text)
        return "queued" if running else "accepted"

    async def deliver(self, envelope: str) -> None:
        channel = self._live()
        if channel is None:
            raise RequestError("deliver", "the agent is not running")
        await channel.send_user(envelope)

    async def _close_channels(self) -> None:
        if self.channel is not None:
            await self.channel.close()


def _still_queued(reply: asyncio.Future[dict[str, Any]]) -> list[Any]:
    """What Claude's answer to an interrupt says still waits to run (nothing, unanswered)."""
    if not reply.done() or reply.cancelled() or reply.exception() is not None:
        return []
    response = reply.result().get("response")
    still = response.get("still_queued") if isinstance(response, dict) else None
    return still if isinstance(still, list) else []
