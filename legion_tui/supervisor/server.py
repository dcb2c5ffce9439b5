"""The supervisor's Unix socket (SPEC §5): one JSON object per line each way.

The wire protocol and op list are documented in `legion_tui/supervisor/client.py`. The caller
is who the kernel says connected (`identity`), never only what the request claims. Each
request is answered in order on its connection; connections are served concurrently (a
long `wait` on one does not hold up another). Malformed JSON, an unknown op or a missing
field gets an error reply and the connection keeps being served.

`OPS` is the dispatch table: later ops (`mail`, `phase`) plug in by adding one entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui.ops import OpError
from legion_tui.supervisor.client import MAX_LINE, ROOT_CALLER
from legion_tui.supervisor.identity import Peer, caller_of, peer_of

if TYPE_CHECKING:
    from legion_tui.supervisor.core import Supervisor

__all__ = ["OPS", "Handler", "SupervisorServer", "register_op"]

log = logging.getLogger(__name__)

Handler = Callable[["Supervisor", str, dict[str, Any]], Awaitable[dict[str, Any]]]


def _str(req: dict[str, Any], key: str) -> str:
    value = req.get(key)
    if not isinstance(value, str) or not value:
        raise OpError("MISSING_FIELD", f"field {key!r} is required (a non-empty string)")
    return value


def _opt_str(req: dict[str, Any], key: str) -> str | None:
    value = req.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise OpError("BAD_REQUEST", f"field {key!r} must be a string")
    return value


def _bool(req: dict[str, Any], key: str) -> bool:
    value = req.get(key, False)
    if not isinstance(value, bool):
        raise OpError("BAD_REQUEST", f"field {key!r} must be true or false")
    return value


async def _spawn(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    from legion_tui.supervisor.core import ChildRequest

    children = req.get("children")
    if not isinstance(children, list) or not children:
        raise OpError("MISSING_FIELD", "field 'children' is required (a non-empty list)")
    nodes = await sup.spawn(caller, [ChildRequest.from_wire(c) for c in children])
    result: dict[str, Any] = {
        "nodes": [
            # status + error: a child whose agent failed to start is reported as such.
            {"id": n.id, "name": n.name, "path": n.path, "status": n.status.value}
            | ({"error": n.error} if n.error else {})
            for n in nodes
        ]
    }
    for entry, node in zip(result["nodes"], nodes, strict=True):
        # The kind each child resolved to (`auto` cards): a simulated one is said so.
        entry["kind"] = node.kind
        entry["simulated"] = node.simulated
    warnings = [w for n in nodes if (w := sup.launch_warning(n.id))]
    if warnings:  # e.g. a worker that asked for a worktree was demoted (SPEC §6.7)
        result["warnings"] = warnings
    return result


async def _wait(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    names = req.get("names")
    if names is not None and (
        not isinstance(names, list) or not all(isinstance(n, str) for n in names)
    ):
        raise OpError("BAD_REQUEST", "field 'names' must be a list of strings or null")
    timeout = req.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)):
        raise OpError("BAD_REQUEST", "field 'timeout' must be a number of seconds or null")
    return await sup.wait(caller, names, None if timeout is None else float(timeout))


async def _collect(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    return await sup.collect(caller, _str(req, "name"))


async def _stop(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    return {"receipt": await sup.stop(caller, _str(req, "name"), force=_bool(req, "force"))}


async def _abort(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    outcome, receipt = await sup.abort(
        caller, _str(req, "name"), keep_queue=_bool(req, "keep_queue")
    )
    return {"outcome": outcome, "receipt": receipt}


async def _steer(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    text = req.get("text")
    if not isinstance(text, str):
        raise OpError("MISSING_FIELD", "field 'text' is required (a string)")
    outcome, receipt = await sup.steer(caller, _str(req, "name"), text)
    return {"outcome": outcome, "receipt": receipt}


async def _status(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    return sup.status(caller, _opt_str(req, "name"))


async def _tree(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    return {"text": sup.tree_text(caller)}


async def _resume(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    return {"receipt": await sup.resume(caller, _str(req, "name"))}


async def _mail(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    if sup.mail is None:
        raise OpError("NOT_READY", "mail is not running in this supervisor")
    result: dict[str, Any] = await sup.mail.op(sup, caller, req)
    return result


async def _phase(sup: Supervisor, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    supersedes = req.get("supersedes") or []
    if not isinstance(supersedes, list) or not all(isinstance(n, str) for n in supersedes):
        raise OpError("BAD_REQUEST", "field 'supersedes' must be a list of names")
    return await sup.phase(
        caller,
        _str(req, "to"),
        note=_opt_str(req, "note"),
        evidence=_opt_str(req, "evidence"),
        reason=_opt_str(req, "reason"),
        supersedes=supersedes,
    )


OPS: dict[str, Handler] = {
    "spawn": _spawn,
    "wait": _wait,
    "collect": _collect,
    "stop": _stop,
    "abort": _abort,
    "steer": _steer,
    "status": _status,
    "tree": _tree,
    "resume": _resume,
    "mail": _mail,
    "phase": _phase,
}


def register_op(name: str, handler: Handler) -> None:
    """Add or replace an op (the postman and phase engine register theirs)."""
    OPS[name] = handler


def _error(req_id: Any, code: str, message: str) -> dict[str, Any]:
    return {"id": req_id, "ok": False, "error": {"code": code, "message": message}}


class SupervisorServer:
    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self._server: asyncio.AbstractServer | None = None
        self._path: Path | None = None
        self._link: Path | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.requests = 0
        self.errors = 0

    async def start(self, path: Path, *, link: Path | None = None) -> None:
        # A socket file left by a host that died is stale: the caller has already checked
        # that no live owner answers on it (runs.open_session), so it is safe to replace.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        self._server = await asyncio.start_unix_server(self._serve, path=path, limit=MAX_LINE)
        os.chmod(path, 0o600)
        self._path = path
        if link is not None and link != path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(link)
            os.symlink(path, link)
            self._link = link

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None
        for p in (self._link, self._path):
            if p is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = peer_of(writer.get_extra_info("socket"), self.supervisor.run.run_id)
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as err:
                    if not err.partial.strip():
                        return
                    line = err.partial  # a last request without its newline
                except asyncio.LimitOverrunError:
                    # Too long to be a request: answer, then skip to the next newline.
                    await self._reply(writer, _error(None, "TOO_LONG", "request line too long"))
                    if not await self._skip_line(reader):
                        return
                    continue
                reply = await self.handle_line(line, peer)
                await self._reply(writer, reply)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _identify(self, peer: Peer, claimed: str) -> str:
        """The node the kernel says the peer is (identity.caller_of)."""
        sup = self.supervisor
        agents = {h.pid: node_id for node_id, h in sup.roster.handles().items() if h.pid}
        names = {node_id: view.node.name for node_id, view in sup.model.nodes.items()}
        return caller_of(peer, claimed, agents, names)

    @staticmethod
    async def _skip_line(reader: asyncio.StreamReader) -> bool:
        while True:
            try:
                await reader.readuntil(b"\n")
                return True
            except asyncio.LimitOverrunError as err:
                await reader.readexactly(err.consumed)
            except asyncio.IncompleteReadError:
                return False

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, reply: dict[str, Any]) -> None:
        writer.write(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
        await writer.drain()

    async def handle_line(self, line: bytes, peer: Peer) -> dict[str, Any]:
        """Parse, check and dispatch one request from `peer`; never raises."""
        self.requests += 1
        try:
            req = json.loads(line)
        except (ValueError, UnicodeDecodeError) as err:
            self.errors += 1
            return _error(None, "BAD_JSON", f"malformed JSON: {err}")
        if not isinstance(req, dict):
            self.errors += 1
            return _error(None, "BAD_REQUEST", "a request must be a JSON object")
        req_id = req.get("id")
        op = req.get("op")
        if not isinstance(op, str) or not op:
            self.errors += 1
            return _error(req_id, "MISSING_FIELD", "field 'op' is required")
        handler = OPS.get(op)
        if handler is None:
            self.errors += 1
            return _error(req_id, "UNKNOWN_OP", f"unknown op {op!r} (known: {', '.join(OPS)})")
        caller = req.get("from")
        if not isinstance(caller, str) or not caller:
            self.errors += 1
            return _error(
                req_id, "MISSING_FIELD", "field 'from' (the caller's node id) is required"
            )
        if caller == ROOT_CALLER:
            from legion_tui.supervisor.core import ROOT_ID

            caller = ROOT_ID
        try:
            caller = self._identify(peer, caller)
            result = await handler(self.supervisor, caller, req)
        except OpError as err:
            self.errors += 1
            return _error(req_id, err.code, err.message)
        except Exception as err:  # a bug must not take the server down
            self.errors += 1
            log.exception("op %s failed", op)
            return _error(req_id, "INTERNAL", f"{type(err).__name__}: {err}")
        return {"id": req_id, "ok": True, "result": result}
