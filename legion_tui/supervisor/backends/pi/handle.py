"""Process children that speak pi's RPC protocol: `legion-sim` (process) and `pi` (pi-rpc).

Both run with stdin/stdout pipes (stderr to `terminal/<nodeId>.log`); the exit comes from
the pidfd, so a grandchild holding a pipe cannot hang us; the stop is the sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

from legion_tui.agents.resolve import find_program
from legion_tui.model import Backend
from legion_tui.model_records import InFlightTool
from legion_tui.session.streaming import StreamingMessage, StreamSink
from legion_tui.supervisor.backend import (
    ABORT_BOUND,
    AbortResult,
    LaunchSpec,
    SteerOutcome,
)
from legion_tui.supervisor.backends.asking import InputSink, Questions, is_yes
from legion_tui.supervisor.backends.common import (
    RESUME_PROMPT,
    START_BOUND,
    STEER_OUTCOMES,
    ProcessChildHandle,
    bounded_abort,
    child_env,
    log_path,
    log_tail,
    point_session_link,
    require_executable,
)
from legion_tui.supervisor.backends.pi.argv import pi_argv, pi_session_dir, sim_argv
from legion_tui.supervisor.backends.pi.cli import PiVersion, pi_version
from legion_tui.supervisor.backends.pi.rpc import RpcClient
from legion_tui.supervisor.processes.child_process import ChildProcess
from legion_tui.supervisor.processes.process import spawn_child
from legion_tui.wire.names import RequestError

# Names other modules still import from here: the launch bounds live in `common`, the
# command lines in `pi.argv`.
__all__ = ["RpcHandle"]

def _succeeded(fut: asyncio.Future[Any]) -> bool:
    if fut.cancelled() or fut.exception() is not None:
        return False
    reply = fut.result()
    return isinstance(reply, dict) and bool(reply.get("success"))


# pi's extension UI methods that wait for the user's answer.
_DIALOGS = frozenset({"select", "confirm", "input", "editor"})


def _ui_answer(method: str, text: str, options: list[str]) -> dict[str, Any]:
    """The `extension_ui_response` fields for the user's `text`: a confirm is y or not; a
    select takes an option's text or its number (1-based); input/editor take the text."""
    if method == "confirm":
        return {"confirmed": is_yes(text)}
    if method == "select" and options:
        picked = text.strip()
        if picked.isdigit() and 1 <= int(picked) <= len(options):
            return {"value": options[int(picked) - 1]}
        if picked not in options:
            return {"cancelled": True}
        return {"value": picked}
    return {"value": text}


class RpcHandle(ProcessChildHandle):
    def __init__(
        self,
        spec: LaunchSpec,
        backend: Backend,
        *,
        on_stream: StreamSink | None = None,
        on_input: InputSink | None = None,
    ) -> None:
        self.spec = spec
        self.node_id = spec.node_id
        self.backend: Backend = backend
        self.pid: int | None = None
        # pi picks its own file name; updated from get_state (sim: the spec's path).
        self.session_file: Path = spec.session_file
        self.child: ChildProcess | None = None
        self.rpc: RpcClient | None = None
        self.version: PiVersion | None = None  # pi's (None: the sim, or pi would not say)
        # Batched: the RPC client reads pi's lines a chunk at a time and flushes after
        # each (`_on_read`), so the tree hears one count per read, not one per token.
        self._streaming = (
            StreamingMessage(on_stream, time.time, batched=True) if on_stream else None
        )
        self.questions = Questions(on_input)  # an extension's dialogs waiting on the user

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        spec = self.spec
        is_pi = self.backend == "pi-rpc"
        if is_pi:
            pi_session_dir(spec).mkdir(parents=True, exist_ok=True)
            argv = pi_argv(spec)
        else:
            argv = sim_argv(spec)
        env = child_env(spec)
        require_executable(argv, env, spec.cwd)
        version: asyncio.Task[PiVersion | None] | None = None
        if is_pi:
            program = find_program(argv[0], cwd=spec.cwd, path=env.get("PATH")) or argv[0]
            version = asyncio.create_task(pi_version(program, env))  # beside pi's start
        try:
            self.child = await spawn_child(
                argv, env=env, cwd=spec.cwd, log_path=log_path(spec), pipes=True
            )
            self.pid = self.child.pid
            proc = self.child.proc
            assert proc.stdin is not None and proc.stdout is not None
            self.rpc = RpcClient(
                proc.stdin, proc.stdout, on_event=self._on_event, on_read=self._on_read
            )
            if is_pi:
                await self._learn_session_file()
            if version is not None:
                self.version = await version
            runs = self.rpc.runs
            if is_pi and spec.idle_start:  # adopted idle: pi answered get_state, it runs
                return
            prompt = RESUME_PROMPT if spec.resume and is_pi else spec.task
            data = await self.rpc.request("prompt", bound=START_BOUND, message=prompt)
        except Exception as err:
            # A launch that fails half-way (pi refuses the prompt: no API key, bad model…)
            # must not leave its process behind: the caller gets no handle to stop. Its
            # reason is the agent's own last words, not an empty TimeoutError.
            await self._abandon_start(version)
            raise RequestError("start", self._start_failure(err)) from err
        except BaseException:
            await self._abandon_start(version)
            raise
        if data.get("disposition") != "handled":
            self.rpc.expect_run(runs)

    async def _abandon_start(self, version: asyncio.Task[PiVersion | None] | None) -> None:
        if version is not None and not version.done():
            version.cancel()
            with contextlib.suppress(BaseException):
                await version
        await self.stop(force=True)

    def _start_failure(self, err: Exception) -> str:
        what = "pi" if self.backend == "pi-rpc" else "the agent"
        if isinstance(err, TimeoutError):
            why = f"{what} did not answer within {START_BOUND:g} s"
        elif isinstance(err, RequestError) and err.code == "rpc":
            why = f"{what} closed its output before it answered"
        else:
            why = str(err) or type(err).__name__
        code = self.exited
        if code is not None:
            why += f" (exit status {code})"
        tail = log_tail(self.spec)
        return f"{why}; its log ends: {tail}" if tail else why

    async def _learn_session_file(self) -> None:
        assert self.rpc is not None
        state = await self.rpc.request("get_state", bound=START_BOUND)
        found = state.get("sessionFile")
        if not isinstance(found, str) or not found:
            return
        self.session_file = Path(found)
        point_session_link(self.spec.session_file, self.session_file)

    def turn_running(self) -> bool:
        return self.rpc is not None and self.rpc.streaming and self.exited is None

    @property
    def in_flight(self) -> list[InFlightTool]:
        """Live tool calls from the RPC events (top = last started)."""
        return list(self.rpc.in_flight.values()) if self.rpc is not None else []

    async def idle(self) -> None:
        if self.rpc is None or self.child is None:
            return
        idle: asyncio.Future[Any] = asyncio.ensure_future(self.rpc.idle.wait())
        exited: asyncio.Future[Any] = asyncio.ensure_future(
            asyncio.shield(self.child.exited_future())
        )
        try:
            await asyncio.wait({idle, exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            idle.cancel()
            exited.cancel()

    # -- control -----------------------------------------------------------------------

    async def abort(self, *, keep_queue: bool = False, bound: float = ABORT_BOUND) -> AbortResult:
        if self.rpc is not None:
            await self.rpc.catch_up()  # the lines pi wrote until now tell the snapshot
        # One snapshot of "is a turn running", taken before anything is sent (upstream D4).
        if not self.turn_running():
            return AbortResult("no-turn", 0)
        rpc = self.rpc
        assert rpc is not None
        abort_reply: list[asyncio.Future[dict[str, Any]]] = []

        async def clear() -> int:
            data = await rpc.request("clear_queue")
            return sum(len(v) for v in data.values() if isinstance(v, list))

        # pi 0.73 has no clear_queue: ask nothing, keep the queue, and say so. (The sim's
        # RPC front and pi ≥ 0.84.4 can clear.)
        can_clear = self.backend != "pi-rpc" or (
            self.version is not None and self.version.clear_queue
        )

        def interrupt() -> None:
            abort_reply.append(rpc.send("abort"))

        async def settled() -> None:
            # pi answers `abort` once idle; agent_settled says the same. Either will do.
            idle: asyncio.Future[Any] = asyncio.ensure_future(rpc.idle.wait())
            try:
                pending: set[asyncio.Future[Any]] = {idle, *abort_reply}
                while pending:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    if idle in done or any(_succeeded(f) for f in done):
                        return
                await idle
            finally:
                idle.cancel()

        result = await bounded_abort(
            bound=bound,
            keep_queue=keep_queue,
            clear=clear if can_clear else None,
            interrupt=interrupt,
            settled=settled,
        )
        for fut in abort_reply:
            # Observe a late failure so it never surfaces as "exception never retrieved".
            fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        return result

    async def steer(self, text: str) -> SteerOutcome:
        if self.rpc is None or self.exited is not None:
            return "intercepted"  # nobody will ever read it
        # pi queues a steer sent to an idle agent and starts no turn: whether it runs
        # (or asks something) is read from every line it wrote until now.
        await self.rpc.catch_up()
        if self.questions.answer(text):
            return "accepted"  # the answer to the extension's dialog pi waits on
        running = self.turn_running()
        # Idle pi wants `prompt` (a turn starts); a running one takes `steer`.
        command = "steer" if running else "prompt"
        runs = self.rpc.runs
        try:
            data = await self.rpc.request(command, bound=ABORT_BOUND, message=text)
        except (RequestError, TimeoutError):
            if running:
                raise
            # Raced with a turn that just started: pi refuses prompt while streaming.
            data = await self.rpc.request("steer", bound=ABORT_BOUND, message=text)
        disposition = data.get("disposition")
        if isinstance(disposition, str) and disposition in STEER_OUTCOMES:
            outcome = STEER_OUTCOMES[disposition]
        else:
            outcome = "queued" if running else "accepted"  # pi before 0.99 says nothing
        if outcome == "accepted":
            self.rpc.expect_run(runs)
        return outcome

    def _on_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "extension_ui_request":
            self._on_ui_request(event)
        elif event.get("type") == "agent_end":
            self.questions.clear()  # a run's end voids what it asked
        if self._streaming is not None:
            self._streaming.feed(event)

    def _on_read(self) -> None:
        if self._streaming is not None:
            self._streaming.flush()

    def _on_ui_request(self, event: dict[str, Any]) -> None:
        """pi's extension asks the user (notes/pi-format.md: select, confirm, input,
        editor wait for an `extension_ui_response`; the others only show something)."""
        ui_id, method = event.get("id"), event.get("method")
        if not isinstance(ui_id, str) or method not in _DIALOGS or self.rpc is None:
            return
        rpc = self.rpc
        options = [str(o) for o in event.get("options") or [] if isinstance(o, (str, int))]
        title, message = event.get("title"), event.get("message")
        question = " · ".join(str(t) for t in (title, message) if t) or str(method)
        question += f" [{' / '.join(options)}]" if options else ""
        if method == "confirm":
            question += " · y confirms"

        def answer(text: str) -> None:
            rpc.reply({"type": "extension_ui_response", "id": ui_id,
                       **_ui_answer(str(method), text, options)})  # fmt: skip

        self.questions.ask(ui_id, question, answer)

    async def deliver(self, envelope: str) -> None:
        if self.rpc is None or self.exited is not None:
            raise RequestError("follow_up", "the agent is not running")
        await self.rpc.catch_up()
        command = "follow_up" if self.turn_running() else "prompt"
        runs = self.rpc.runs
        data = await self.rpc.request(command, bound=ABORT_BOUND, message=envelope)
        if command == "prompt" and data.get("disposition") != "handled":
            self.rpc.expect_run(runs)

    async def _close_channels(self) -> None:
        if self.rpc is not None:
            await self.rpc.close()
        if self._streaming is not None:
            self._streaming.feed({"type": "agent_end"})  # a message cut off never ends
