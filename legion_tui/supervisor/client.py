"""Client side of the supervisor's Unix socket (SPEC §5): one JSON object per line.

Request:  {"id": <int>, "op": "<op>", "from": "<caller node id>", ...fields}
Reply:    {"id": <int>, "ok": true, "result": {...}}
      or  {"id": <int>, "ok": false, "error": {"code": "<CODE>", "message": "<text>"}}

Ops and their fields (the server in `supervisor/server.py` is the authority):
  spawn    children: [{role, task, name?, phases?, kind?, worktree?}]
           -> {nodes: [{id, name, path}], warnings?: [str]}
  wait     names: [str] | null, timeout: float | null                   -> {state, nodes: [...]}
           (state "mail": the caller's letters ended the wait: {message_ids, text})
  collect  name                        -> {text, verdict, output_file, delivery?: {branch,
                                          head_sha, link, commits, dirty}}
  stop     name ("all" allowed), force: bool                            -> {receipt}
  abort    name, keep_queue: bool                                       -> {outcome, receipt}
  steer    name, text                                                   -> {outcome}
  status   name | null                                                  -> {run_id, session, nodes}
  tree                                                                  -> {text}
  resume   name                                                         -> {receipt}
  mail     to, subject, body, kind, urgency      -> {message_id, to, to_path, state}
  phase    to, note?, evidence?, reason?, supersedes?: [str]
           -> {phase, from, receipt, verification?}
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
from pathlib import Path
from typing import Any

ENV_SOCKET = "LEGION_SOCKET"
ENV_NODE_ID = "LEGION_NODE_ID"
ENV_RUN_DIR = "LEGION_RUN_DIR"
ENV_RUN_ID = "LEGION_RUN_ID"
ROOT_CALLER = "root"  # a user's own shell acts as root

MAX_LINE = 16 * 1024 * 1024


class LegionRequestError(Exception):
    """The supervisor refused or failed a request; `code` is machine-readable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class LegionClient:
    """One connection to a supervisor; requests are answered in order."""

    def __init__(self, socket_path: str | Path, caller: str = ROOT_CALLER) -> None:
        self.socket_path = str(socket_path)
        self.caller = caller
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()

    @classmethod
    def from_env(cls) -> LegionClient:
        socket_path = os.environ.get(ENV_SOCKET)
        if not socket_path:
            raise LegionRequestError("NO_SOCKET", f"{ENV_SOCKET} is not set")
        return cls(socket_path, os.environ.get(ENV_NODE_ID) or ROOT_CALLER)

    async def __aenter__(self) -> LegionClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        try:
            self._reader, self._writer = await asyncio.open_unix_connection(
                self.socket_path, limit=MAX_LINE
            )
        except OSError as err:
            raise LegionRequestError(
                "NO_SUPERVISOR", f"no live supervisor at {self.socket_path}: {err.strerror}"
            ) from err

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()
            self._writer = self._reader = None

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return its `result`; raise LegionRequestError on refusal."""
        if self._writer is None or self._reader is None:
            await self.connect()
        assert self._writer is not None and self._reader is not None
        async with self._lock:
            req_id = next(self._ids)
            payload = {"id": req_id, "op": op, "from": self.caller, **fields}
            self._writer.write(json.dumps(payload).encode() + b"\n")
            await self._writer.drain()
            line = await self._reader.readline()
        if not line:
            raise LegionRequestError("DISCONNECTED", "the supervisor closed the connection")
        reply = json.loads(line)
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise LegionRequestError(
                str(error.get("code", "ERROR")), str(error.get("message", "request failed"))
            )
        result = reply.get("result") or {}
        assert isinstance(result, dict)
        return result
