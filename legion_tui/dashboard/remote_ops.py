"""`Operations` for a dashboard that hosts nothing (`legion tui --view`, `legion serve`).

`SocketOperations` sends each act to the run's supervisor over its socket, as the user's
own shell does (`legion stop` …): caller root (a spawn: the parent it joins, as
`RootOperations` spawns), the node named by its id. What the supervisor refuses comes
back as the OpError the dashboard shows, in the supervisor's words.
`ReadOnlyOperations` refuses every act without sending it: a browser without the
control token. Both read what the view may look at — the role cards on disk — and
only the controlling one names a node's worktree: the land flow merges and pushes in
the user's repository from it, an act the read-only view must not reach.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui.ops import ControlVerb, Workspace
from legion_tui.runs.folder import RunInfo
from legion_tui.runs.socket_link import resolve_socket
from legion_tui.wire.client import LegionClient
from legion_tui.wire.names import ROOT_ID, OpError, RequestError
from legion_tui.wire.spawn_request import NEW_GROUP, ChildRequest

if TYPE_CHECKING:
    from legion_tui.agents.cards import CardSet

READ_ONLY_CODE = "FORBIDDEN"
READ_ONLY_REFUSAL = "403 Forbidden — read-only view: this operation needs the control token"
# A view waits this long for a supervisor that does not take a request (the CLI's 10 s
# is for scripts; a key pressed in a dashboard wants its answer sooner).
VIEW_RETRY_SECONDS = 3.0


class _Looking:
    """What any view may read: the role cards as they are on disk now."""

    read_only = False

    def __init__(self, project_dir: Path) -> None:
        self.project_dir = project_dir

    async def role_cards(self) -> CardSet:
        from legion_tui.agents.cards import load_cards

        return load_cards(self.project_dir)


class SocketOperations(_Looking):
    """Operations over the run's socket. The socket is looked up and connected per
    operation (a key press is one request): a host that reopened the session is the
    one asked."""

    def __init__(
        self,
        run: RunInfo,
        project_dir: Path,
        workspaces: Callable[[str], Workspace | None],
        *,
        retry_seconds: float = VIEW_RETRY_SECONDS,
    ) -> None:
        super().__init__(project_dir)
        self.run = run
        self._workspaces = workspaces
        self.retry_seconds = retry_seconds

    async def _request(
        self, op: str, fields: dict[str, Any], caller: str = ROOT_ID
    ) -> dict[str, Any]:
        sock = resolve_socket(self.run)
        if sock is None:
            raise OpError(
                "NO_SUPERVISOR",
                f"no live supervisor hosts session {self.run.session_name!r} "
                f"(reopen it with `legion tui --session {self.run.session_name}`)",
            )
        try:
            async with LegionClient(sock, caller, retry_seconds=self.retry_seconds) as client:
                return await client.request(op, **fields)
        except RequestError as err:
            raise OpError(err.code, err.message) from None

    async def act(self, verb: ControlVerb, node_id: str, **fields: bool | str) -> str:
        return str((await self._request(verb, {**fields, "name": node_id})).get("receipt") or "")

    async def spawn(self, parent_id: str, requests: Sequence[ChildRequest]) -> str:
        """The socket's `spawn`, as `legion spawn` sends it; a phases file is read here,
        from the project, with its own lines in a refusal."""
        children = []
        for request in requests:
            if isinstance(request.phases, str):
                from legion_tui.phases import MachineError, load_machine_file

                try:
                    machine = load_machine_file(str(self.project_dir / request.phases)).to_dict()
                except MachineError as err:
                    raise OpError("PHASES", str(err)) from err
                request = dataclasses.replace(request, phases=machine)
            child = {k: v for k, v in dataclasses.asdict(request).items() if v not in (None, {})}
            if child.get("group") == NEW_GROUP:
                child["group"] = True  # the wire's "name one for me"
            children.append(child)
        result = await self._request("spawn", {"children": children}, parent_id)
        nodes = result.get("nodes") or []
        failed = [f"Failed to start {n.get('path')}: {n.get('error')}" for n in nodes
                  if n.get("status") == "failed"]  # fmt: skip
        if failed:
            raise OpError("START_FAILED", "; ".join(failed))
        said = [f"Spawned {n.get('path')} ({n.get('id')})"
                + (" — simulated" if n.get("simulated") else "") for n in nodes]  # fmt: skip
        return "\n".join([*said, *(f"warning: {w}" for w in result.get("warnings") or [])])

    def workspace(self, node_id: str) -> Workspace | None:
        return self._workspaces(node_id)


class ReadOnlyOperations(_Looking):
    """Every act refused, nothing sent: the view may only look."""

    read_only = True

    @staticmethod
    def _refuse() -> OpError:
        return OpError(READ_ONLY_CODE, READ_ONLY_REFUSAL)

    async def act(self, verb: ControlVerb, node_id: str, **fields: bool | str) -> str:
        raise self._refuse()

    async def spawn(self, parent_id: str, requests: Sequence[ChildRequest]) -> str:
        raise self._refuse()

    def workspace(self, node_id: str) -> Workspace | None:
        return None
