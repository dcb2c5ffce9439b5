#!/usr/bin/env python3
"""A fake `pi` that speaks the documented RPC protocol (notes/pi-format.md §2).

Usage: fake_pi.py --mode rpc --session-dir DIR [--continue]

Stdlib only, standalone. Each prompt starts a run: agent_start, turn_start, an assistant
message with one `bash` tool call (plus a nested `read` call carrying parentToolCallId),
the tool "runs" FAKE_PI_TOOL_SECONDS (default 30), then a final answer, turn_end,
agent_end, agent_settled. It writes a pi v3 session file `<ts>_<uuid>.jsonl` in the
session dir. Modes (env FAKE_PI_MODE):
  normal    abort ends the turn (stopReason "aborted") and answers once idle;
  stubborn  the running tool ignores cancellation: abort is never answered, never settles;
  legacy    no clear_queue, no agent_settled, no disposition (pi before 0.80);
  refuse    every prompt fails (like pi without an API key).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MODE = os.environ.get("FAKE_PI_MODE", "normal")
TOOL_SECONDS = float(os.environ.get("FAKE_PI_TOOL_SECONDS", "30"))


def iso() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def out(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class Session:
    def __init__(self, directory: Path, resume: bool) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        existing = sorted(directory.glob("*.jsonl")) if resume else []
        self.leaf: str | None = None
        if existing:
            self.path = existing[-1]
            for raw in self.path.read_text().splitlines():
                entry = json.loads(raw)
                if entry.get("type") != "session":
                    self.leaf = entry["id"]
            self.started = True
        else:
            stamp = iso().replace(":", "-").replace(".", "-")
            self.path = directory / f"{stamp}_{uuid.uuid4()}.jsonl"
            self.started = False

    def append(self, entry: dict[str, Any]) -> None:
        if not self.started:
            self.started = True
            self._write(
                {
                    "type": "session",
                    "version": 3,
                    "id": str(uuid.uuid4()),
                    "timestamp": iso(),
                    "cwd": os.getcwd(),
                }
            )
        entry = {"id": uuid.uuid4().hex[:8], "parentId": self.leaf, "timestamp": iso(), **entry}
        self._write(entry)
        self.leaf = entry["id"]

    def _write(self, entry: dict[str, Any]) -> None:
        with open(self.path, "a") as fh:
            fh.write(json.dumps(entry) + "\n")

    def message(self, message: dict[str, Any]) -> None:
        self.append({"type": "message", "message": message})
        out({"type": "message_end", "message": message})


def assistant(content: list[dict[str, Any]], stop: str, started: float) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": 10,
            "output": 42,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 52,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": stop,
        "timestamp": int(started * 1000),
    }


class Agent:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.run: asyncio.Task[None] | None = None
        self.steering: list[str] = []
        self.follow_up: list[str] = []

    @property
    def streaming(self) -> bool:
        return self.run is not None and not self.run.done()

    def start(self, text: str) -> None:
        self.run = asyncio.get_running_loop().create_task(self._run(text))

    def user(self, text: str) -> None:
        self.session.message(
            {
                "role": "user",
                "content": [{"type": "text", "text": text}],
                "timestamp": int(time.time() * 1000),
            }
        )

    async def _run(self, text: str) -> None:
        aborted = False
        out({"type": "agent_start"})
        self.user(text)
        call = f"toolu_{uuid.uuid4().hex[:12]}"
        nested = f"toolu_{uuid.uuid4().hex[:12]}"
        try:
            out({"type": "turn_start"})
            started = time.time()
            message = assistant(
                [
                    {"type": "text", "text": "Running the tests."},
                    {
                        "type": "toolCall",
                        "id": call,
                        "name": "bash",
                        "arguments": {"command": "pytest -q"},
                    },
                ],
                "toolUse",
                started,
            )
            self.session.message(message)
            out(
                {
                    "type": "tool_execution_start",
                    "toolCallId": call,
                    "toolName": "bash",
                    "args": {"command": "pytest -q"},
                }
            )
            out(
                {
                    "type": "tool_execution_start",
                    "toolCallId": nested,
                    "toolName": "read",
                    "args": {"path": "x"},
                    "parentToolCallId": call,
                }
            )
            out(
                {
                    "type": "tool_execution_end",
                    "toolCallId": nested,
                    "toolName": "read",
                    "result": {"content": [], "details": {}},
                    "isError": False,
                }
            )
            try:
                await asyncio.sleep(TOOL_SECONDS)
            except asyncio.CancelledError:
                if MODE == "stubborn":
                    # A tool that ignores cancellation: it just keeps going.
                    await asyncio.Event().wait()
                raise
            result = {
                "role": "toolResult",
                "toolCallId": call,
                "toolName": "bash",
                "content": [{"type": "text", "text": "3 passed"}],
                "isError": False,
                "timestamp": int(time.time() * 1000),
            }
            self.session.message(result)
            out(
                {
                    "type": "tool_execution_end",
                    "toolCallId": call,
                    "toolName": "bash",
                    "result": {"content": result["content"], "details": {}},
                    "isError": False,
                }
            )
            out({"type": "turn_end", "message": message, "toolResults": [result]})
            for queued in self.steering + self.follow_up:
                self.user(queued)
            self.steering, self.follow_up = [], []
            out({"type": "turn_start"})
            final = assistant(
                [{"type": "text", "text": 'Done.\n{"ok": true, "reason": "fake"}'}],
                "stop",
                time.time(),
            )
            self.session.message(final)
            out({"type": "turn_end", "message": final, "toolResults": []})
        except asyncio.CancelledError:
            aborted = True
            self.session.message(assistant([], "aborted", time.time()))
        finally:
            out({"type": "agent_end", "messages": []})
            if MODE != "legacy":
                out({"type": "agent_settled", "aborted": aborted})


async def main() -> int:
    if sys.argv[1:] == ["--version"]:
        # Like pi: legacy mode is a line before clear_queue (0.73 prints on stderr).
        print("0.73.1" if MODE == "legacy" else "1.6.0", file=sys.stderr)
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True, choices=["rpc"])
    parser.add_argument("--session-dir")
    parser.add_argument("--no-session", action="store_true")  # legion doctor's dry start
    parser.add_argument("--continue", dest="resume", action="store_true")
    parser.add_argument("--append-system-prompt")
    parser.add_argument("--tools")
    args = parser.parse_args()
    session_dir = Path(args.session_dir) if args.session_dir else Path(tempfile.mkdtemp())
    agent = Agent(Session(session_dir, args.resume))
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks: set[asyncio.Task[None]] = set()

    def respond(
        cmd: str, req_id: Any, data: dict[str, Any] | None = None, error: str | None = None
    ) -> None:
        reply: dict[str, Any] = {"type": "response", "command": cmd, "success": error is None}
        if req_id is not None:
            reply["id"] = req_id
        if data is not None:
            reply["data"] = data
        if error is not None:
            reply["error"] = error
        out(reply)

    async def do_abort(req_id: Any) -> None:
        run = agent.run
        if run is not None and not run.done():
            run.cancel()
            await asyncio.wait({run})  # stubborn: never returns
        respond("abort", req_id)

    buffer = b""
    while True:
        chunk = await reader.read(65536)
        if not chunk:
            return 0  # stdin closed: like pi, exit
        *lines, buffer = (buffer + chunk).split(b"\n")
        for raw in lines:
            raw = raw.removesuffix(b"\r")
            try:
                cmd = json.loads(raw)
            except ValueError:
                respond("parse", None, error="Failed to parse command")
                continue
            kind, req_id = cmd.get("type"), cmd.get("id")
            legacy = MODE == "legacy"
            if kind == "prompt" and MODE == "refuse":
                respond(kind, req_id, error="No API key found for anthropic")
                continue
            if kind in ("prompt", "steer", "follow_up"):
                text = cmd["message"]
                if kind == "prompt" and agent.streaming and not cmd.get("streamingBehavior"):
                    respond(kind, req_id, error="Agent is already processing")
                    continue
                if agent.streaming:
                    (agent.follow_up if kind == "follow_up" else agent.steering).append(text)
                    disposition = "queued"
                else:
                    agent.start(text)
                    disposition = "started"
                respond(kind, req_id, None if legacy else {"disposition": disposition})
            elif kind == "abort":
                task = loop.create_task(do_abort(req_id))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            elif kind == "clear_queue" and not legacy:
                respond(kind, req_id, {"steering": agent.steering, "followUp": agent.follow_up})
                agent.steering, agent.follow_up = [], []
            elif kind == "get_state":
                respond(
                    kind,
                    req_id,
                    {
                        "model": {"provider": "fake", "id": "fake-model"},
                        "thinkingLevel": "off",
                        "isStreaming": agent.streaming,
                        "isCompacting": False,
                        "steeringMode": "all",
                        "followUpMode": "all",
                        "sessionFile": str(agent.session.path),
                        "sessionId": "fake",
                        "autoCompactionEnabled": False,
                        "messageCount": 0,
                        "pendingMessageCount": len(agent.steering) + len(agent.follow_up),
                    },
                )
            else:
                respond(str(kind), req_id, error=f"Unknown command: {kind}")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
