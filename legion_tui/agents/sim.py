"""The simulated agent (SPEC §9): a deterministic stand-in for pi, no network, no key.

One `SimAgent` class does the work; it runs either

- in-process, driven by method calls from the in-process backend (an asyncio task in
  the supervisor), or
- as the `legion-sim` console script (`main`), speaking a subset of pi's RPC protocol on
  stdin/stdout (notes/pi-format.md §2) so the process backend talks to it exactly as it
  talks to pi: commands prompt, steer, follow_up, abort, get_state, clear_queue; events
  agent_start, turn_start, message_end, tool_execution_start/end, turn_end, agent_end,
  agent_settled {aborted}.

It writes a real pi v3 session file, one whole line per entry. Timestamps come from the
clock, so the file's tok/s is a real decode rate: at `speed` s every duration is divided
by s, hence the decode rate the dashboard shows is s × the scripted 40–150 tok/s.
The clock (now + sleep) is injectable: tests pass a `FakeClock` and run instantly.

Behaviour knobs (`SimConfig.behaviour`, `--behaviour JSON`):
  stall_seconds    one early `bash` call that long (at speed 1) — the stall marker;
  fail             the final turn is an empty generation with stopReason "error"
                   (provider-empty-generation); the agent stays, and the prompt that
                   retries it comes back empty too, after which it exits with status 1;
                   "once": only the first comes back empty (the retry answers);
  history_seconds  start as if it had been running that long: the first entries are
                   replayed at once with past timestamps (wall seconds, not scaled);
  children         (centurion/root) the team to spawn: [{role, name, task, ...}]
                   instead of 2–4 seeded workers/scouts;
  wait_timeout     (centurion/root) seconds for `wait` at speed 1 (default 3600);
  verify           (centurion) the `legion-verify` commands its contract lists
                   (default: `true`);
  quick            (worker) a short task: one look, one or two changes, no long run;
  mail             letters to send once the work is done, before the final answer:
                   [{to, kind, subject, body}] (`to`: a name, `parent`, `parent/x`);
  worktree         set by the supervisor, never by hand: the git worktree the agent
                   works in. Only then do `edit` steps change real files there, each
                   committed on the team's branch (a sandbox's, e.g. the demo's).
Roles: scout reads and greps; worker reads, edits and runs bash; centurion writes
`<run_dir>/contracts/<name>.md` (with a `legion-verify` block), requests phases, spawns,
mails, waits, collects through the socket; root orchestrates the same way without
phases. After its final answer the agent idles until a steer, a follow-up or a stop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import stat
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from legion_tui.agents.sim_script import (
    EDIT_NEW,
    EDIT_OLD,
    MODEL,
    PROVIDER,
    Step,
    ToolStep,
    continuation,
    plan_for,
    price,
)
from legion_tui.supervisor.client import (
    ENV_NODE_ID,
    ENV_RUN_DIR,
    ENV_SOCKET,
    LegionClient,
    LegionRequestError,
)

__all__ = [
    "CatchUpClock",
    "Disposition",
    "FakeClock",
    "SimAgent",
    "SimClock",
    "SimConfig",
    "WallClock",
    "contract_path",
    "main",
]

Disposition = Literal["started", "queued", "handled"]
Emit = Callable[[dict[str, Any]], None]

ABORTED_TEXT = "Operation aborted"
API = "anthropic-messages"


class SimClock(Protocol):
    def now(self) -> float:
        """Epoch seconds."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class WallClock:
    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """Time that moves only when the agent sleeps, instantly (tests)."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self.t = start

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)
        await asyncio.sleep(0)


class CatchUpClock:
    """Starts `behind` seconds in the past and replays instantly until it reaches now.

    This is `history_seconds`: the agent looks as if it had been running that long, and a
    tool call begun in the past shows its true age at once (the demo's stall marker).
    """

    def __init__(self, base: SimClock, behind: float) -> None:
        self.base = base
        self._virtual: float | None = base.now() - behind

    def now(self) -> float:
        return self.base.now() if self._virtual is None else self._virtual

    def catch_up(self) -> None:
        """Drop what is left of the history: from here on, real time."""
        self._virtual = None

    async def sleep(self, seconds: float) -> None:
        if self._virtual is None:
            await self.base.sleep(seconds)
            return
        target = self._virtual + max(0.0, seconds)
        real = self.base.now()
        if target <= real:
            self._virtual = target
            await asyncio.sleep(0)
            return
        self._virtual = None  # caught up: from here on, real time
        await self.base.sleep(target - real)


@dataclass(frozen=True)
class SimConfig:
    node_id: str
    name: str
    role: str
    session_file: Path
    run_dir: Path
    cwd: Path
    socket_path: Path | None = None
    seed: int = 0
    speed: float = 1.0
    behaviour: dict[str, Any] = field(default_factory=dict)
    resume: bool = False


def iso(t: float) -> str:
    """pi's `new Date().toISOString()`: milliseconds and a Z."""
    stamp = datetime.fromtimestamp(t, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def ms(t: float) -> int:
    return round(t * 1000)


class SessionWriter:
    """Appends pi v3 entries, each one whole line in one O_APPEND write.

    The file is opened per append rather than held: a demo runs up to 1000 in-process
    agents, and 1000 idle descriptors (next to the tailer's own) would hit a default
    1024-descriptor limit for the sake of saving one open per entry.
    """

    def __init__(self, path: Path, rng: random.Random, clock: SimClock, cwd: Path) -> None:
        self.path = path
        self.rng = rng
        self.clock = clock
        self.cwd = cwd
        self.leaf: str | None = None
        self._open = False

    def open(self, *, resume: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existing = resume and self.path.exists() and self.path.stat().st_size > 0
        if existing:
            self.leaf = _last_entry_id(self.path)
        self._open = True
        if not existing:
            session_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            self._write(
                {
                    "type": "session",
                    "version": 3,
                    "id": session_id,
                    "timestamp": iso(self.clock.now()),
                    "cwd": str(self.cwd),
                }
            )
            self.append("model_change", provider=PROVIDER, modelId=MODEL)
            self.append("thinking_level_change", thinkingLevel="off")

    def append(self, entry_type: str, **fields: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "type": entry_type,
            "id": f"{self.rng.getrandbits(32):08x}",
            "parentId": self.leaf,
            "timestamp": iso(self.clock.now()),
            **fields,
        }
        self._write(entry)
        self.leaf = entry["id"]
        return entry

    def _write(self, entry: dict[str, Any]) -> None:
        assert self._open, "open() first"
        data = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Kept for symmetry with open(); nothing is held between appends."""


def _last_entry_id(path: Path) -> str | None:
    leaf: str | None = None
    with open(path, "rb") as fh:
        for raw in fh:
            with contextlib.suppress(ValueError):
                entry = json.loads(raw)
                if (
                    isinstance(entry, dict)
                    and isinstance(entry.get("id"), str)
                    and entry.get("type") != "session"
                ):
                    leaf = entry["id"]
    return leaf


def _seed_material(cfg: SimConfig) -> int | str:
    """The seed, or — resuming — the seed and the file's length, so a resumed agent does
    not replay the ids of its first life (duplicate entry ids would tangle the tree)."""
    if cfg.resume:
        with contextlib.suppress(OSError):
            return f"{cfg.seed}/resume/{cfg.session_file.stat().st_size}"
    return cfg.seed


def contract_path(run_dir: Path, name: str) -> Path:
    """Where a centurion sim writes its contract (with a `legion-verify` block)."""
    return run_dir / "contracts" / f"{name}.md"


class SimAgent:
    """The agent; public methods mirror pi's RPC commands."""

    def __init__(
        self, cfg: SimConfig, *, clock: SimClock | None = None, emit: Emit | None = None
    ) -> None:
        self.cfg = cfg
        self.rng = random.Random(_seed_material(cfg))
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
        self.writer = SessionWriter(cfg.session_file, self.rng, self.clock, cfg.cwd)
        self._opened = False
        self._context = self.rng.randint(3000, 9000)  # system prompt + tools, cached
        self._added = 0
        self._client: LegionClient | None = None
        self._collected: dict[str, dict[str, Any]] = {}
        self._dispatch_error: str | None = None  # a refused spawn: the team never existed
        self._declared_failure: str | None = None  # the team moved itself to `failed`
        tree = cfg.behaviour.get("worktree")
        self._worktree: Path | None = Path(str(tree)) if tree else None
        self._in_tool: tuple[str, ToolStep] | None = None
        self._gen: tuple[float, Step] | None = None  # the LLM call being "decoded"
        self._pending_tools: list[tuple[str, ToolStep]] = []
        self._messages = 0

    # -- state -----------------------------------------------------------------------

    @property
    def streaming(self) -> bool:
        return self._run_task is not None and not self._run_task.done()

    @property
    def queued(self) -> int:
        return len(self._steering) + len(self._follow_up)

    @property
    def message_count(self) -> int:
        return self._messages

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
        if self._client is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._client.close(), 0.3)
            self._client = None

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

    def _append_message(self, message: dict[str, Any]) -> None:
        self.writer.append("message", message=message)
        self._messages += 1
        self._emit({"type": "message_end", "message": message})

    def _user(self, text: str) -> None:
        self._append_message(
            {
                "role": "user",
                "content": [{"type": "text", "text": text}],
                "timestamp": ms(self.clock.now()),
            }
        )
        self._added += max(1, len(text) // 4)

    async def _run(self, text: str) -> None:
        aborted = False
        self._emit({"type": "agent_start"})
        try:
            self._ensure_open()
            self._user(text)
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
                    self._user(queued)
                if self._pos >= len(self._plan) - 1:
                    # Only the final answer (or nothing) left: react to the message first.
                    more = continuation(self.rng, self.cfg.role, self._fail, self._quick)
                    if self._pos >= len(self._plan):
                        self._plan.extend(more)
                    else:
                        self._plan[self._pos : self._pos] = more[:-1]
        except asyncio.CancelledError:
            aborted = True
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

    def _usage(self, output: int) -> dict[str, Any]:
        fresh = self.rng.randint(2, 60)
        cache_write = self._added
        usage: dict[str, Any] = {
            "input": fresh,
            "output": output,
            "cacheRead": self._context,
            "cacheWrite": cache_write,
            "totalTokens": fresh + output + self._context + cache_write,
            "cost": price(fresh, output, self._context, cache_write),
        }
        self._context += cache_write + output + fresh
        self._added = 0
        return usage

    def _assistant(
        self,
        content: list[dict[str, Any]],
        output: int,
        stop_reason: str,
        started: float,
        error: str | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": API,
            "provider": PROVIDER,
            "model": MODEL,
            "usage": self._usage(output),
            "stopReason": stop_reason,
            "timestamp": ms(started),
            "durationMs": ms(self.clock.now()) - ms(started),
        }
        if error is not None:
            message["errorMessage"] = error
        return message

    async def _do_step(self, step: Step) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        started = self.clock.now()
        self._gen = (started, step)
        await self.clock.sleep(step.output_tokens / step.rate / self.speed if step.rate else 0.0)
        self._gen = None
        calls = [(f"toolu_{self.rng.getrandbits(64):016x}", tool) for tool in step.tools]
        content: list[dict[str, Any]] = []
        if step.fail:
            # provider-empty-generation: blank text, no tool calls, stopReason "error".
            message = self._assistant([{"type": "text", "text": ""}], 0, "error", started)
            self._append_message(message)
            return message, []
        text = self._final_text(step) if step.final else step.text
        if text:
            content.append({"type": "text", "text": text})
        for call_id, tool in calls:
            content.append(
                {"type": "toolCall", "id": call_id, "name": tool.name, "arguments": tool.args}
            )
        message = self._assistant(
            content, step.output_tokens, "toolUse" if calls else "stop", started
        )
        self._append_message(message)
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
            result_text, is_error = await self._execute(tool)
            self._in_tool = None
            self._pending_tools.pop(0)
            results.append(self._tool_result(call_id, tool, result_text, is_error, t0))
        return message, results

    def _tool_result(
        self, call_id: str, tool: ToolStep, text: str, is_error: bool, t0: float
    ) -> dict[str, Any]:
        now = self.clock.now()
        result = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": tool.name,
            "content": [{"type": "text", "text": text}],
            "isError": is_error,
            "timestamp": ms(now),
            "durationMs": ms(now) - ms(t0),
        }
        self._append_message(result)
        self._added += max(1, len(text) // 4)
        self._emit(
            {
                "type": "tool_execution_end",
                "toolCallId": call_id,
                "toolName": tool.name,
                "result": {"content": result["content"], "details": {}},
                "isError": is_error,
                "durationMs": result["durationMs"],
            }
        )
        return result

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
                self._tool_result(call_id, tool, ABORTED_TEXT, True, self.clock.now())
            self._pending_tools = []
            self._in_tool = None
            started, partial, content = self.clock.now(), 0, []
        message = self._assistant(content, partial, "aborted", started, "Request was aborted.")
        self._append_message(message)

    def _final_text(self, step: Step) -> str:
        ok, reason = True, step.text
        if self._dispatch_error is not None:
            ok, reason = False, f"could not dispatch the team: {self._dispatch_error}"
        elif self._declared_failure is not None:
            ok, reason = False, self._declared_failure
        elif self._collected:
            failed = [n for n, v in self._collected.items() if not v.get("ok")]
            ok = not failed
            reason = (
                f"{len(self._collected)} children delivered"
                if ok
                else f"children not ok: {', '.join(failed)}"
            )
        verdict = json.dumps({"ok": ok, "reason": reason})
        return f"{step.text}\n\n{verdict}"

    # -- tools -------------------------------------------------------------------------

    async def _execute(self, tool: ToolStep) -> tuple[str, bool]:
        await self.clock.sleep(tool.duration / self.speed)
        if tool.action is None and tool.name == "edit" and self._worktree is not None:
            return await self._edit_for_real(tool)
        if tool.action is None:
            return tool.result, tool.is_error
        try:
            return await self._act(tool.action, tool), False
        except (LegionRequestError, OSError) as err:
            # A refused request (e.g. a phase the machine does not allow) is logged in the
            # transcript and the agent carries on, as a real agent would.
            if isinstance(err, LegionRequestError):
                text = f"{err.code}: {err.message}"
            else:
                text = f"{type(err).__name__}: {err}"
            if tool.action == "spawn":
                self._dispatch_error = text
            return text, True

    async def _request(self, op: str, **fields: Any) -> dict[str, Any]:
        if self.cfg.socket_path is None:
            raise LegionRequestError("NO_SOCKET", "no supervisor socket in this run")
        if self._client is None:
            self._client = LegionClient(self.cfg.socket_path, self.cfg.node_id)
        return await self._client.request(op, **fields)

    async def _edit_for_real(self, tool: ToolStep) -> tuple[str, bool]:
        """An `edit` in a worktree changes the file and commits it on the team's branch.

        Only ever under the `worktree` the supervisor named, and only a path inside it."""
        from legion_tui.supervisor.worktree import WorktreeError, commit_paths

        tree = self._worktree
        assert tree is not None
        rel = str(tool.args.get("path", ""))
        target = (tree / rel).resolve()
        if not rel or not target.is_relative_to(tree.resolve()):
            return f"refused: {rel!r} is outside the worktree", True
        # Read, change and write with no await in between: teammates in this process
        # edit the same checkout, and this keeps each edit whole.
        text = target.read_text(encoding="utf-8") if target.exists() else ""
        if EDIT_OLD in text:
            text = text.replace(EDIT_OLD, EDIT_NEW, 1)
            said = f"Successfully replaced text in {rel}."
        else:
            text += f"# {self.cfg.name}: checked, {EDIT_NEW} already set\n"
            said = f"{EDIT_OLD} not found in {rel}; noted the check at its end."
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        message = f"{self.cfg.name}: {EDIT_NEW} in {rel}"
        author = f"{self.cfg.name} <{self.cfg.name}@legion.invalid>"
        try:
            sha = await commit_paths(tree, [rel], message, author=author)
        except WorktreeError as err:
            return f"{said} Commit failed: {err}", True
        return f"{said} Committed {sha[:7]} on the team branch.", False

    async def _act(self, action: str, tool: ToolStep | None = None) -> str:
        kind, _, arg = action.partition(":")
        if kind == "contract":
            return self._write_contract()
        if kind == "spawn":
            step = self._plan[self._pos]
            children = step.extra.get("children", [])
            return json.dumps(await self._request("spawn", children=children))
        if kind == "wait":
            bound = float(self.cfg.behaviour.get("wait_timeout", 3600.0)) / self.speed
            replies: list[str] = []
            # A wait that returns early with mail is read and the wait resumed (bounded).
            for _ in range(20):
                reply = await self._request("wait", names=None, timeout=bound)
                replies.append(json.dumps(reply))
                if reply.get("state") != "mail":
                    break
            if isinstance(self.clock, CatchUpClock):
                # A real wait brings the agent to the present: what follows it happens
                # now, not as replayed history (a team's phases must not flash past).
                self.clock.catch_up()
            return "\n".join(replies)
        if kind == "collect":
            result = await self._request("collect", name=arg)
            verdict = result.get("verdict")
            self._collected[arg] = verdict if isinstance(verdict, dict) else {"ok": False}
            return json.dumps(result)
        if kind == "phase":
            return await self._phase(arg)
        if kind == "mail":
            letter = tool.letter if tool is not None else None
            if letter is None:
                raise LegionRequestError("BAD_REQUEST", "a mail step without a letter")
            to, mail_kind, subject, body = letter
            result = await self._request(
                "mail",
                to=to,
                subject=subject,
                body=body.replace("{me}", self.cfg.name),
                kind=mail_kind,
                urgency="normal",
            )
            return json.dumps(result)
        raise LegionRequestError("UNKNOWN_ACTION", action)

    async def _phase(self, to: str) -> str:
        """`legion phase --to <to>`. When `done` is refused and the machine leaves only
        `failed`, the team says so itself, with the refusal as its reason — as a lead
        whose verification failed and whose rework is spent would."""
        try:
            result = await self._request("phase", to=to, note=f"{self.cfg.name} → {to}")
        except LegionRequestError as err:
            legal = err.message.rpartition("Legal next phases")[2]
            if to != "done" or err.code != "PHASE_REFUSED" or "failed" not in legal:
                raise
            reason = f"done refused: {err.message}"
            failed = await self._request(
                "phase", to="failed", note=f"{self.cfg.name} → failed", reason=reason
            )
            self._declared_failure = reason
            return f"{err.code}: {err.message}\n{json.dumps(failed)}"
        return json.dumps(result)

    def _write_contract(self) -> str:
        path = contract_path(self.cfg.run_dir, self.cfg.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        commands = self.cfg.behaviour.get("verify") or ["true"]
        text = (
            f"# Contract: {self.cfg.name}\n\n"
            "Deliver the change with tests; no public API breaks.\n\n"
            "```legion-verify\n" + "".join(f"{c}\n" for c in commands) + "```\n"
        )
        path.write_text(text, encoding="utf-8")
        return f"Wrote {path} ({len(text.encode())} bytes)"


# -- legion-sim: the RPC front (pi's protocol subset) ----------------------------------


class _RpcFront:
    def __init__(self, agent: SimAgent, out: Callable[[bytes], None]) -> None:
        self.agent = agent
        self.out = out
        self._tasks: set[asyncio.Task[None]] = set()

    def send(self, obj: dict[str, Any]) -> None:
        self.out((json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode())

    def respond(
        self,
        command: str,
        req_id: Any,
        data: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        reply: dict[str, Any] = {"type": "response", "command": command, "success": error is None}
        if req_id is not None:
            reply["id"] = req_id
        if data is not None:
            reply["data"] = data
        if error is not None:
            reply["error"] = error
        self.send(reply)

    async def _abort(self, req_id: Any) -> None:
        await self.agent.abort()
        self.respond("abort", req_id)

    async def handle(self, line: bytes) -> None:
        try:
            cmd = json.loads(line)
            if not isinstance(cmd, dict):
                raise ValueError("not an object")
        except ValueError as err:
            self.respond("parse", None, error=f"Failed to parse command: {err}")
            return
        name = str(cmd.get("type", ""))
        req_id = cmd.get("id")
        agent = self.agent
        if name in ("prompt", "steer", "follow_up"):
            text = cmd.get("message")
            if not isinstance(text, str):
                self.respond(name, req_id, error="message must be a string")
                return
            if name == "follow_up" or cmd.get("streamingBehavior") == "followUp":
                disposition = agent.follow_up(text)
            else:
                disposition = agent.steer(text)
            self.respond(name, req_id, {"disposition": disposition})
        elif name == "abort":
            # Like pi, answer once the agent is idle — but keep reading commands meanwhile.
            task = asyncio.get_running_loop().create_task(self._abort(req_id))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif name == "clear_queue":
            self.respond(name, req_id, agent.clear_queue())
        elif name == "get_state":
            self.respond(
                name,
                req_id,
                {
                    "model": {"provider": PROVIDER, "id": MODEL},
                    "thinkingLevel": "off",
                    "isStreaming": agent.streaming,
                    "isCompacting": False,
                    "steeringMode": "all",
                    "followUpMode": "all",
                    "sessionFile": str(agent.cfg.session_file),
                    "sessionId": agent.cfg.node_id,
                    "autoCompactionEnabled": False,
                    "messageCount": agent.message_count,
                    "pendingMessageCount": agent.queued,
                },
            )
        else:
            self.respond(name, req_id, error=f"Unknown command: {name}")


def _is_stream(fd: int) -> bool:
    """A pipe or socket the event loop can watch (a file or /dev/null cannot be)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _parse_args(argv: list[str] | None) -> tuple[SimConfig, str | None]:
    env = os.environ
    p = argparse.ArgumentParser(
        prog="legion-sim",
        description="The simulated legion agent; speaks pi's RPC protocol on stdin/stdout.",
    )
    p.add_argument("--node-id", default=env.get(ENV_NODE_ID, "sim"))
    p.add_argument("--name", default=None)
    p.add_argument("--role", default="worker", choices=("root", "centurion", "worker", "scout"))
    p.add_argument("--session-file", default=env.get("LEGION_SESSION_FILE"))
    p.add_argument("--run-dir", default=env.get(ENV_RUN_DIR, "."))
    p.add_argument("--cwd", default=os.getcwd())
    p.add_argument("--socket", default=env.get(ENV_SOCKET))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--speed", type=float, default=1.0, help="time divisor (decode rate × speed)")
    p.add_argument("--behaviour", default="{}", help="JSON knobs: stall_seconds, fail, ...")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--task", default=None, help="start at once (no RPC prompt needed)")
    a = p.parse_args(argv)
    behaviour = json.loads(a.behaviour)
    if not isinstance(behaviour, dict):
        p.error("--behaviour must be a JSON object")
    if not a.session_file:
        p.error("--session-file (or LEGION_SESSION_FILE) is required")
    cfg = SimConfig(
        node_id=a.node_id,
        name=a.name or a.node_id,
        role=a.role,
        session_file=Path(a.session_file),
        run_dir=Path(a.run_dir),
        cwd=Path(a.cwd),
        socket_path=Path(a.socket) if a.socket else None,
        seed=a.seed,
        speed=a.speed,
        behaviour=behaviour,
        resume=a.resume,
    )
    return cfg, a.task


async def _serve(cfg: SimConfig, task: str | None) -> int:
    loop = asyncio.get_running_loop()
    stdout_fd = sys.stdout.fileno()

    def out(data: bytes) -> None:
        # Small whole lines to a pipe: a blocking write is fine and keeps order.
        view = memoryview(data)
        while view:
            view = view[os.write(stdout_fd, view) :]

    fronts: list[_RpcFront] = []  # the agent needs emit before the front exists

    def emit(event: dict[str, Any]) -> None:
        for f in fronts:
            f.send(event)

    agent = SimAgent(cfg, emit=emit)
    front = _RpcFront(agent, out)
    fronts.append(front)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGHUP, stop.set)
    aborts: set[asyncio.Task[bool]] = set()

    def on_sigint() -> None:
        t = loop.create_task(agent.abort())
        aborts.add(t)
        t.add_done_callback(aborts.discard)

    loop.add_signal_handler(signal.SIGINT, on_sigint)

    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    transport: asyncio.BaseTransport | None = None
    if _is_stream(sys.stdin.fileno()):
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), sys.stdin
        )
    elif task is None:
        print("legion-sim: stdin must be a pipe (RPC) unless --task is given", file=sys.stderr)
        return 2
    else:
        reader.feed_eof()  # standalone (stdin is a file or /dev/null): no commands
    if task is not None:
        agent.prompt(task)

    async def read_commands() -> None:
        buffer = b""
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                if task is None:
                    stop.set()  # our controller is gone
                return
            buffer += chunk
            # Strict LF framing (U+2028 inside a JSON string is not a line break).
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                line = line.removesuffix(b"\r")
                if line.strip():
                    await front.handle(line)

    commands = loop.create_task(read_commands())
    waits = {
        loop.create_task(stop.wait()),
        loop.create_task(agent.finished.wait()),
    }
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for w in (*waits, commands):
        w.cancel()
    code = agent.exit_code if agent.exit_code is not None else 0
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(agent.close(), 0.5)
    if transport is not None:
        transport.close()
    return code


def main(argv: list[str] | None = None) -> int:
    cfg, task = _parse_args(argv)
    return asyncio.run(_serve(cfg, task))


if __name__ == "__main__":
    sys.exit(main())
