"""The simulated agent (SPEC §9): a deterministic stand-in for pi, no network, no key.

One `SimAgent` (the turn machine, `agent.py`) does the work; it runs either

- in-process, driven by method calls from the in-process backend (an asyncio task in
  the supervisor), or
- as the `legion-sim` console script (`main`), speaking a subset of pi's RPC protocol on
  stdin/stdout (notes/pi-format.md §2) so the process backend talks to it exactly as it
  talks to pi: commands prompt, steer, follow_up, abort, get_state, clear_queue; events
  agent_start, turn_start, message_end, tool_execution_start/end, turn_end, agent_end,
  agent_settled {aborted}. That front is this module (`_RpcFront`, `main`).

Its parts: `script.py` (the scenario: steps, tools, prices), `agent.py` (the turn
machine), `session.py` (the session file and the transcript in it), `player.py`
(the tools that act: legion verbs over the socket, the contract, real edits in a
worktree), `clock.py` and `config.py`.

It writes a real pi v3 session file, one whole line per entry. Timestamps come from the
clock, so the file's tok/s is a real decode rate: at `speed` s every duration is divided
by s, hence the decode rate the dashboard shows is s × the scripted 40–150 tok/s.
The clock (now + sleep) is injectable: tests pass a `FakeClock` and run instantly.

Behaviour knobs (`SimConfig.behaviour`, `--behaviour JSON`):
  stall_seconds    one early `bash` call that long (at speed 1) — the stall marker;
  stall_until      a path: that call lasts until the file exists (a test ends it when
                   it has seen what it waits for, never at a time it guessed);
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
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from legion_tui.sim.agent import SimAgent
from legion_tui.sim.config import SimConfig
from legion_tui.sim.script import MODEL, PROVIDER
from legion_tui.timeouts import within
from legion_tui.wire.lines import lines_of
from legion_tui.wire.names import ENV_NODE_ID, ENV_RUN_DIR, ENV_SESSION_FILE, ENV_SOCKET

__all__ = ["main"]


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
    p.add_argument("--session-file", default=env.get(ENV_SESSION_FILE))
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
        async for line in lines_of(reader):  # strict LF framing, as pi's
            await front.handle(line)
        if task is None:
            stop.set()  # our controller is gone

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
        await within(agent.close(), 0.5)
    if transport is not None:
        transport.close()
    return code


def main(argv: list[str] | None = None) -> int:
    cfg, task = _parse_args(argv)
    return asyncio.run(_serve(cfg, task))


if __name__ == "__main__":
    sys.exit(main())
