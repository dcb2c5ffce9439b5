"""The simulated agent's turn machine (SPEC §9): a scripted plan of steps (`script`),
each a model call "decoded" at the step's rate and its tool calls run in turn; steers
and follow-ups queued for the next turn boundary; an abort that ends the turn honestly
in the file; the empty generations of `fail`. What it says goes to its `Transcript`
(the session file + pi's RPC events), the tools that act on the world to its
`SocketPlayer`. Public methods mirror pi's RPC commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from pathlib import Path
from typing import Any, Literal

from legion_tui.sim.clock import CatchUpClock, SimClock, WallClock
from legion_tui.sim.config import SimConfig, seed_material
from legion_tui.sim.player import SocketPlayer
from legion_tui.sim.script import Step, ToolStep, continuation, plan_for
from legion_tui.sim.session import Emit, SessionWriter, Transcript

__all__ = ["ABORTED_TEXT", "Disposition", "SimAgent"]

Disposition = Literal["started", "queued", "handled"]

ABORTED_TEXT = "Operation aborted"
UNTIL_LOOK_MS = 500  # a `stall_until` call looks again this often, events or not


class SimAgent:
    """The agent; public methods mirror pi's RPC commands."""

    def __init__(
        self, cfg: SimConfig, *, clock: SimClock | None = None, emit: Emit | None = None
    ) -> None:
        self.cfg = cfg
        self.rng = random.Random(seed_material(cfg))
        base = clock or WallClock()
        history = float(cfg.behaviour.get("history_seconds") or 0.0)
        self.clock: SimClock = CatchUpClock(base, history) if history > 0 else base
        self.speed = cfg.speed if cfg.speed > 0 else 1.0
        self._emit_cb = emit
        self._fail = bool(cfg.behaviour.get("fail"))
        self._fail_once = cfg.behaviour.get("fail") == "once"  # the retry answers
        self._empties = 0  # empty generations given so far
        self._quick = bool(cfg.behaviour.get("quick"))
        self._plan: list[Step] = (
            continuation(self.rng, cfg.role, self._fail, self._quick)
            if cfg.resume
            else plan_for(cfg.role, self.rng, cfg.behaviour)
        )
        self._pos = 0
        self._steering: list[str] = []
        self._follow_up: list[str] = []
        self._run_task: asyncio.Task[None] | None = None
        self._aborting = False
        self._settled = asyncio.Event()
        self._settled.set()
        self.finished = asyncio.Event()  # set when the agent exits on its own (fail)
        self.exit_code: int | None = None
        # Why the agent died, when it did of an error (its session file unwritable: EACCES,
        # a full disk): a dead agent is a failed node with that reason, not a quiet settle.
        self.crash: str | None = None
        writer = SessionWriter(cfg.session_file, self.rng, self.clock, cfg.cwd)
        self.transcript = Transcript(writer, self.rng, self.clock, self._emit)
        self._opened = False
        self.player = SocketPlayer(cfg, speed=self.speed, caught_up=self._caught_up)
        self._in_tool: tuple[str, ToolStep] | None = None
        self._gen: tuple[float, Step] | None = None  # the LLM call being "decoded"
        self._pending_tools: list[tuple[str, ToolStep]] = []

    # -- state -----------------------------------------------------------------------

    @property
    def streaming(self) -> bool:
        return self._run_task is not None and not self._run_task.done()

    @property
    def queued(self) -> int:
        return len(self._steering) + len(self._follow_up)

    @property
    def message_count(self) -> int:
        return self.transcript.messages

    @property
    def writer(self) -> SessionWriter:
        return self.transcript.writer

    async def wait_idle(self) -> None:
        await self._settled.wait()

    # -- commands ----------------------------------------------------------------------

    def prompt(self, text: str) -> Disposition:
        return self.steer(text)

    def steer(self, text: str) -> Disposition:
        """Idle ⇒ a run starts; running ⇒ queued for the next turn boundary."""
        return self._hand_over(text, self._steering)

    def follow_up(self, text: str) -> Disposition:
        """Like steer, but read when the agent would otherwise stop (mail)."""
        return self._hand_over(text, self._follow_up)

    def _hand_over(self, text: str, queue: list[str]) -> Disposition:
        if self.exit_code is not None:
            return "handled"
        if self._aborting:
            return "handled"  # the in-flight interrupt takes it: the agent never sees it
        if self.streaming:
            queue.append(text)
            return "queued"
        self._start(text)
        return "started"

    def clear_queue(self) -> dict[str, list[str]]:
        dropped = {"steering": self._steering, "followUp": self._follow_up}
        self._steering, self._follow_up = [], []
        return dropped

    async def abort(self) -> bool:
        """End the current turn (stopReason aborted), keep the context. False if idle."""
        task = self._run_task
        if task is None or task.done():
            return False
        self._aborting = True
        try:
            task.cancel()
            await asyncio.wait({task})
        finally:
            self._aborting = False
        return True

    async def close(self) -> None:
        """Stop for good (SIGTERM / stop): end the turn, close the file and the socket."""
        await self.abort()
        self.writer.close()
        await self.player.close()

    # -- the run -------------------------------------------------------------------------

    def _start(self, text: str) -> None:
        self._settled.clear()
        self._run_task = asyncio.get_running_loop().create_task(self._run(text))

    def _emit(self, event: dict[str, Any]) -> None:
        if self._emit_cb is not None:
            self._emit_cb(event)

    def _ensure_open(self) -> None:
        if not self._opened:
            self.writer.open(resume=self.cfg.resume)
            self._opened = True

    def _caught_up(self) -> None:
        if isinstance(self.clock, CatchUpClock):
            self.clock.catch_up()

    async def _run(self, text: str) -> None:
        aborted = False
        self._emit({"type": "agent_start"})
        try:
            self._ensure_open()
            self.transcript.user(text)
            if self._pos >= len(self._plan):
                self._plan.extend(continuation(self.rng, self.cfg.role, self._fail, self._quick))
            while self._pos < len(self._plan):
                step = self._plan[self._pos]
                self._emit({"type": "turn_start"})
                message, results = await self._do_step(step)
                self._pos += 1
                self._emit({"type": "turn_end", "message": message, "toolResults": results})
                if step.fail:
                    # Alive after the first (the host may prompt it once more); a second
                    # empty generation and it gives up, as an agent whose provider fails.
                    self._empties += 1
                    if self._fail_once:
                        self._fail = False
                    elif self._empties > 1:
                        self.exit_code = 1
                    break
                injected = self._steering + (self._follow_up if step.final else [])
                self._steering = []
                if step.final:
                    self._follow_up = []
                if not injected:
                    if step.final:
                        break
                    continue
                for queued in injected:
                    self.transcript.user(queued)
                if self._pos >= len(self._plan) - 1:
                    # Only the final answer (or nothing) left: react to the message first.
                    more = continuation(self.rng, self.cfg.role, self._fail, self._quick)
                    if self._pos >= len(self._plan):
                        self._plan.extend(more)
                    else:
                        self._plan[self._pos : self._pos] = more[:-1]
        except asyncio.CancelledError:
            aborted = True
            # An abort record that cannot be written (the run folder was removed) must
            # not turn the cancel into a crash of its own.
            with contextlib.suppress(OSError):
                self._write_aborted()
            raise
        except Exception as err:
            self.crash = f"{type(err).__name__}: {err}"
            self.exit_code = 1
        finally:
            self._emit({"type": "agent_end", "messages": []})
            self._emit({"type": "agent_settled", "aborted": aborted})
            self._settled.set()
            if self.exit_code is not None:
                self.finished.set()

    async def _do_step(self, step: Step) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        started = self.clock.now()
        self._gen = (started, step)
        await self.clock.sleep(step.output_tokens / step.rate / self.speed if step.rate else 0.0)
        self._gen = None
        calls = [(f"toolu_{self.rng.getrandbits(64):016x}", tool) for tool in step.tools]
        content: list[dict[str, Any]] = []
        if step.fail:
            # provider-empty-generation: blank text, no tool calls, stopReason "error".
            message = self.transcript.assistant([{"type": "text", "text": ""}], 0, "error", started)
            self.transcript.append(message)
            return message, []
        text = self._final_text(step) if step.final else step.text
        if text:
            content.append({"type": "text", "text": text})
        for call_id, tool in calls:
            content.append(
                {"type": "toolCall", "id": call_id, "name": tool.name, "arguments": tool.args}
            )
        message = self.transcript.assistant(
            content, step.output_tokens, "toolUse" if calls else "stop", started
        )
        self.transcript.append(message)
        results: list[dict[str, Any]] = []
        self._pending_tools = list(calls)
        while self._pending_tools:
            call_id, tool = self._pending_tools[0]
            self._in_tool = (call_id, tool)
            t0 = self.clock.now()
            self._emit(
                {
                    "type": "tool_execution_start",
                    "toolCallId": call_id,
                    "toolName": tool.name,
                    "args": tool.args,
                }
            )
            result_text, is_error = await self._execute(tool, step)
            self._in_tool = None
            self._pending_tools.pop(0)
            results.append(self.transcript.tool_result(call_id, tool, result_text, is_error, t0))
        return message, results

    def _write_aborted(self) -> None:
        """The cancelled turn ends honestly in the file (sync: no await may intervene)."""
        if not self._opened:
            return
        gen = self._gen
        if gen is not None:
            started, step = gen
            elapsed = max(0.0, self.clock.now() - started)
            partial = min(step.output_tokens, int(step.rate * self.speed * elapsed))
            words = step.text.split()
            shown = " ".join(words[: len(words) * partial // max(1, step.output_tokens)])
            content = [{"type": "text", "text": shown}] if shown else []
            self._gen = None
        else:
            # Abort inside a tool: each unanswered call gets an error result first.
            for call_id, tool in self._pending_tools:
                self.transcript.tool_result(call_id, tool, ABORTED_TEXT, True, self.clock.now())
            self._pending_tools = []
            self._in_tool = None
            started, partial, content = self.clock.now(), 0, []
        message = self.transcript.assistant(
            content, partial, "aborted", started, "Request was aborted."
        )
        self.transcript.append(message)

    def _final_text(self, step: Step) -> str:
        ok, reason = self.player.verdict(step.text)
        verdict = json.dumps({"ok": ok, "reason": reason})
        return f"{step.text}\n\n{verdict}"

    async def _execute(self, tool: ToolStep, step: Step) -> tuple[str, bool]:
        if tool.until is not None:
            await _until_exists(Path(tool.until))
        else:
            await self.clock.sleep(tool.duration / self.speed)
        if not self.player.acts(tool):
            return tool.result, tool.is_error
        return await self.player.play(tool, step)


async def _until_exists(path: Path) -> None:
    """Return once `path` exists: woken by the folder's events, and looking again every
    UNTIL_LOOK_MS besides (a file made before the watch began sends no event)."""
    from watchfiles import awatch

    if _made(path):
        return
    async for _changes in awatch(path.parent, rust_timeout=UNTIL_LOOK_MS, yield_on_timeout=True):
        if _made(path):
            return


def _made(path: Path) -> bool:
    return path.exists()  # one stat: nothing a loop waits on
