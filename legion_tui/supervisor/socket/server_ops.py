"""The socket's ops (SPEC §5): one handler per op, reading and checking its fields, then
calling the part that owns the verb (`front.Front`) for the caller the server identified.

`OPS` is the dispatch table: later ops (`mail`, `phase`) plug in by adding one entry.
The wire protocol and op list are documented in `legion_tui/wire/client.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from legion_tui.supervisor.life.control import RESUME_PARALLEL
from legion_tui.wire.names import OpError
from legion_tui.wire.spawn_request import ChildRequest

if TYPE_CHECKING:
    from legion_tui.supervisor.front import Front

__all__ = ["OPS", "Handler"]

log = logging.getLogger(__name__)

Handler = Callable[["Front", str, dict[str, Any]], Awaitable[dict[str, Any]]]


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


async def _spawn(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    children = req.get("children")
    if not isinstance(children, list) or not children:
        raise OpError("MISSING_FIELD", "field 'children' is required (a non-empty list)")
    nodes = await sup.launcher.spawn(caller, [ChildRequest.from_wire(c) for c in children])
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
    warnings = [w for n in nodes if (w := sup.teams.launch_warning(n.id))]
    if warnings:  # e.g. a worker that asked for a worktree was demoted (SPEC §6.7)
        result["warnings"] = warnings
    return result


async def _wait(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    names = req.get("names")
    if names is not None and (
        not isinstance(names, list) or not all(isinstance(n, str) for n in names)
    ):
        raise OpError("BAD_REQUEST", "field 'names' must be a list of strings or null")
    timeout = req.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)):
        raise OpError("BAD_REQUEST", "field 'timeout' must be a number of seconds or null")
    return await sup.queries.wait(caller, names, None if timeout is None else float(timeout))


async def _collect(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    return await sup.queries.collect(caller, _str(req, "name"), again=_bool(req, "again"))


async def _stop(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    return {"receipt": await sup.stops.stop(caller, _str(req, "name"), force=_bool(req, "force"))}


async def _abort(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    outcome, receipt = await sup.control.abort(
        caller, _str(req, "name"), keep_queue=_bool(req, "keep_queue")
    )
    return {"outcome": outcome, "receipt": receipt}


async def _steer(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    text = req.get("text")
    if not isinstance(text, str):
        raise OpError("MISSING_FIELD", "field 'text' is required (a string)")
    outcome, receipt = await sup.control.steer(caller, _str(req, "name"), text)
    return {"outcome": outcome, "receipt": receipt}


async def _status(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    return sup.queries.status(caller, _opt_str(req, "name"))


async def _tree(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    return {"text": sup.queries.tree_text(caller)}


async def _resume(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    name = _str(req, "name")
    if name == "all":  # `legion resume --all [--parallel N]`
        parallel = req.get("parallel", RESUME_PARALLEL)
        if not isinstance(parallel, int) or isinstance(parallel, bool):
            raise OpError("BAD_REQUEST", f"parallel must be a whole number, got {parallel!r}")
        return {"receipt": await sup.control.resume_all(caller, parallel)}
    if _bool(req, "with_parents"):  # `legion resume NAME --with-parents`
        return {"receipt": await sup.control.resume_with_parents(caller, name)}
    return {"receipt": await sup.control.resume(caller, name)}


async def _mail(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    mail = sup.ctx.mail
    if mail is None:
        raise OpError("NOT_READY", "mail is not running in this supervisor")
    result: dict[str, Any] = await mail.op(caller, req)
    return result


async def _phase(sup: Front, caller: str, req: dict[str, Any]) -> dict[str, Any]:
    supersedes = req.get("supersedes") or []
    if not isinstance(supersedes, list) or not all(isinstance(n, str) for n in supersedes):
        raise OpError("BAD_REQUEST", "field 'supersedes' must be a list of names")
    return await sup.teams.phase_op.phase(
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

