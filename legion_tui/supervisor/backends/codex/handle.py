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
- The node goes idle only once the turn's end is in the rollout (`codex.turns`).
- Codex keeps no queue legion can clear: an abort reports `dropped` None while a steer
  waits for its model request, 0 when nothing waits.
- The live rate: each `item/agentMessage/delta` is one streamed piece, and
  `thread/tokenUsage/updated.last.outputTokens` (the call's own count, never the thread's
  `total`) ends the call — fed to `StreamingMessage` as pi-shaped events.

The parts: `codex.argv` (the command line, the approval policy, the rollout's place),
`codex.rpc` (the JSON-RPC channel), `codex.turns` (what the notifications say of the
turns), this module (the process, the thread, and the handle's start, abort and steer).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import legion_tui
from legion_tui.model import Backend
from legion_tui.session.streaming import StreamSink
from legion_tui.supervisor.backend import ABORT_BOUND, AbortResult, LaunchSpec, SteerOutcome
from legion_tui.supervisor.backends.asking import InputSink, declined_with_words
from legion_tui.supervisor.backends.codex.argv import (
    SANDBOX,
    approval_policy,
    codex_argv,
    log_words,
    rollout_of,
    rollout_thread_id,
)
from legion_tui.supervisor.backends.codex.rpc import JsonRpcClient
from legion_tui.supervisor.backends.codex.turns import CodexTurns
from legion_tui.supervisor.backends.common import (
    RESUME_PROMPT,
    START_BOUND,
    ProcessChildHandle,
    bounded_abort,
    child_env,
    log_path,
    point_session_link,
    require_executable,
)
from legion_tui.supervisor.processes.child_process import ChildProcess
from legion_tui.supervisor.processes.process import spawn_child
from legion_tui.timeouts import within
from legion_tui.wire.names import RequestError

__all__ = ["CodexHandle"]


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
        self.turns = CodexTurns(
            thread=lambda: self.thread_id,
            rollout=lambda: self.session_file,
            on_stream=on_stream,
            on_input=on_input,
        )
        self._env: dict[str, str] = {}

    @property
    def turn_id(self) -> str | None:
        """The running turn."""
        return self.turns.turn_id

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        spec = self.spec
        policy, argv = approval_policy(codex_argv(spec), spec.permissions)
        self._env = env = child_env(spec)
        require_executable(argv, env, spec.cwd)
        thread_id: str | None = None
        if spec.resume:
            thread_id = rollout_thread_id(spec.session_file)
            if thread_id is None:
                raise RequestError("start", f"no Codex rollout to resume at {spec.session_file}")
        try:
            async with asyncio.timeout(START_BOUND):
                await self._launch(argv, env, policy, thread_id)
        except Exception as err:
            # A launch that fails half-way must not leave its process behind (the caller
            # gets no handle to stop), and its reason is Codex's own last words.
            await self.stop(force=True)
            raise RequestError("start", self._start_failure(err)) from err
        except BaseException:
            await self.stop(force=True)
            raise

    async def _launch(
        self, argv: list[str], env: dict[str, str], policy: str, thread_id: str | None
    ) -> None:
        spec = self.spec
        self.child = await spawn_child(
            argv, env=env, cwd=spec.cwd, log_path=log_path(spec), pipes=True
        )
        self.pid = self.child.pid
        proc = self.child.proc
        assert proc.stdin is not None and proc.stdout is not None
        client = self.client = JsonRpcClient(
            proc.stdin, proc.stdout, on_notification=self.turns.on_notification,
            on_request=self._on_request,
        )
        info = {"name": "legion", "title": "legion-tui", "version": legion_tui.__version__}
        await client.request("initialize", {"clientInfo": info}, bound=START_BOUND)
        client.notify("initialized")
        params: dict[str, Any] = {
            "cwd": str(spec.cwd),
            "sandbox": SANDBOX,
            "approvalPolicy": policy,
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
            raise RequestError("thread/start", f"no thread id in the answer: {result!r:.200}")
        self.thread_id = found
        self._learn_session_file(thread if isinstance(thread, dict) else {})
        if spec.idle_start and thread_id is not None:  # adopted idle on its thread
            return
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
        tail = log_words(self.spec)
        return f"{why}; its log ends: {tail}" if tail else why

    def _learn_session_file(self, thread: dict[str, Any]) -> None:
        path = thread.get("path")
        target: Path | None = None
        if isinstance(path, str) and path.endswith(".jsonl"):
            target = Path(path)
        elif self.thread_id is not None:
            target = rollout_of(self._env, self.thread_id)
        if target is not None:
            self.session_file = target
            point_session_link(self.spec.session_file, target)

    def _on_request(self, req_id: Any, method: str, params: dict[str, Any]) -> bool:
        client = self.client
        return client is not None and self.turns.on_request(client, req_id, method, params)

    # -- state -------------------------------------------------------------------------

    def _live(self) -> JsonRpcClient | None:
        """The channel while the agent can still read it."""
        client = self.client
        if client is None or client.closed.is_set() or self.exited is not None:
            return None
        return client

    def turn_running(self) -> bool:
        return self.turns.running and self._live() is not None

    async def idle(self) -> None:
        if self.client is None or self.child is None:
            return
        waits: set[asyncio.Future[Any]] = {
            asyncio.ensure_future(self.turns.idle.wait()),
            asyncio.ensure_future(asyncio.shield(self.child.exited_future())),
            asyncio.ensure_future(self.client.closed.wait()),
        }
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if self.client.closed.is_set() and self.exited is None:
                # Its output closed: it is exiting. Its status says how (the monitor
                # judges a non-zero exit), so give the exit a moment to be reaped.
                with contextlib.suppress(TimeoutError):
                    await within(asyncio.shield(self.child.exited_future()), 5.0)
        finally:
            for fut in waits:
                fut.cancel()

    def turn_error(self) -> str | None:
        return self.turns.error

    # -- control -----------------------------------------------------------------------

    async def abort(self, *, keep_queue: bool = False, bound: float = ABORT_BOUND) -> AbortResult:
        # One snapshot of "is a turn running", taken before anything is sent.
        client, turn = self._live(), self.turns.turn_id
        if client is None or turn is None or not self.turns.running:
            return AbortResult("no-turn", 0)
        ended = self.turns.end_of(turn)
        waiting = len(self.turns.steers)
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
        if self.turns.questions.answer(text):
            if declined_with_words(text) and self._live() is not None:
                # Codex's `decline` carries no reason: the user's words follow it into
                # the turn, so the model hears why (issue 31 item 5).
                with contextlib.suppress(RequestError):
                    await self._hand_over(f"The user declined that: {text.strip()}")
            return "accepted"  # the answer to the approval Codex waits on
        if self._live() is None:
            return "intercepted"  # nobody will ever read it
        return await self._hand_over(text)

    async def deliver(self, envelope: str) -> None:
        if self._live() is None:
            raise RequestError("deliver", "the agent is not running")
        await self._hand_over(envelope)

    async def _hand_over(self, text: str) -> SteerOutcome:
        """Into the running turn (`turn/steer`: Codex sends it with its next model
        request) → queued; no turn running → a new one (`turn/start`) → accepted."""
        turn = self.turns.turn_id if self.turn_running() else None
        if turn is not None:
            try:
                await self._steer_into(turn, text)
                return "queued"
            except RequestError:
                if self.turn_running() and self.turns.turn_id == turn:
                    raise  # refused while that very turn runs: a real refusal
                # The turn ended meanwhile: the text starts the next one.
        try:
            await self._start_turn(text, bound=ABORT_BOUND)
        except RequestError:
            running = self.turns.turn_id
            if self.turn_running() and running is not None:
                # Raced with a turn that had just begun: hand it to that turn.
                await self._steer_into(running, text)
                return "queued"
            raise
        return "accepted"

    async def _steer_into(self, turn: str, text: str) -> None:
        assert self.client is not None
        self.turns.steers.append(text)
        try:
            await self.client.request(
                "turn/steer",
                {"threadId": self.thread_id, "expectedTurnId": turn, "input": _text(text)},
                bound=ABORT_BOUND,
            )
        except BaseException:
            with contextlib.suppress(ValueError):
                self.turns.steers.remove(text)
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
            self.turns.begin(turn_id)

    async def _close_channels(self) -> None:
        if self.client is not None:
            await self.client.close()
        self.turns.close()
