"""One parsed request to its reply: the request's shape checked, its caller identified
by what the kernel says connected (`identity`), never only by what it claims, and the
op's handler (`server_ops.OPS`) run. Every refusal and failure is an error reply: a
request never takes the server down."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from legion_tui.ledger.errors import LedgerError
from legion_tui.supervisor.socket.identity import Peer, caller_of
from legion_tui.supervisor.socket.server_ops import OPS
from legion_tui.wire.names import OpError

if TYPE_CHECKING:
    from legion_tui.supervisor.front import Front

__all__ = ["Dispatcher", "encode_reply", "error_reply"]

log = logging.getLogger(__name__)


def error_reply(req_id: Any, code: str, message: str) -> dict[str, Any]:
    return {"id": req_id, "ok": False, "error": {"code": code, "message": message}}


def encode_reply(reply: dict[str, Any]) -> bytes:
    """One reply line. A lone surrogate (a request may carry `\\ud800` in its id) cannot be
    UTF-8: escaped then; a result that is not JSON (a bug) is an INTERNAL error line."""
    try:
        text = json.dumps(reply, ensure_ascii=False)
    except (TypeError, ValueError) as err:
        log.exception("unencodable reply")
        text = json.dumps(error_reply(None, "INTERNAL", f"unencodable reply: {err}"))
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(reply).encode() + b"\n"


class Dispatcher:
    """Runs requests for the supervisor `front`, counting them and the errors among them."""

    def __init__(self, front: Front) -> None:
        self._front = front
        self.requests = 0
        self.errors = 0

    def refused(self, err: OpError) -> dict[str, Any]:
        """The reply to a line that was refused or does not parse (no id to answer to)."""
        self.requests += 1
        self.errors += 1
        return error_reply(None, err.code, err.message)

    def _identify(self, peer: Peer, claimed: str) -> str:
        """The node the kernel says the peer is (identity.caller_of)."""
        front = self._front
        agents = {h.pid: node_id for node_id, h in front.ctx.roster.handles().items() if h.pid}

        def name_of(node_id: str) -> str:  # only a refusal names anyone
            view = front.ctx.model.nodes.get(node_id)
            return view.node.name if view is not None else node_id

        return caller_of(peer, claimed, agents, name_of)

    async def dispatch(self, req: Any, peer: Peer) -> dict[str, Any]:
        """Check and run one parsed request from `peer`; never raises."""
        self.requests += 1
        if not isinstance(req, dict):
            self.errors += 1
            return error_reply(None, "BAD_REQUEST", "a request must be a JSON object")
        req_id = req.get("id")
        op = req.get("op")
        if not isinstance(op, str) or not op:
            self.errors += 1
            return error_reply(req_id, "MISSING_FIELD", "field 'op' is required")
        handler = OPS.get(op)
        if handler is None:
            self.errors += 1
            return error_reply(
                req_id, "UNKNOWN_OP", f"unknown op {op!r} (known: {', '.join(OPS)})"
            )
        caller = req.get("from")
        if not isinstance(caller, str) or not caller:
            self.errors += 1
            return error_reply(
                req_id, "MISSING_FIELD", "field 'from' (the caller's node id) is required"
            )
        try:
            caller = self._identify(peer, caller)
            result = await handler(self._front, caller, req)
        except OpError as err:
            self.errors += 1
            return error_reply(req_id, err.code, err.message)
        except LedgerError as err:  # not a bug: the ledger closed (an exit) or its file went
            self.errors += 1
            log.warning("op %s: %s", op, err)
            return error_reply(req_id, "LEDGER", str(err))
        except Exception as err:  # a bug must not take the server down
            self.errors += 1
            log.exception("op %s failed", op)
            return error_reply(req_id, "INTERNAL", f"{type(err).__name__}: {err}")
        return {"id": req_id, "ok": True, "result": result}
