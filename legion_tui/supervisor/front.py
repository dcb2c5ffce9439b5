"""The supervisor as its two fronts see it: the socket server's ops (`server_ops`) and
the dashboard's `root_ops.RootOperations`. They depend on this Protocol, not on
`core.Supervisor` (which satisfies it), so `core` can build them without an import
cycle and a test can serve a stand-in."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from legion_tui.mail.service import MailService
    from legion_tui.model_records import Node
    from legion_tui.runs.folder import RunInfo
    from legion_tui.state import LegionModel
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.hearing.notices import Notices
    from legion_tui.supervisor.state.roster import Roster
    from legion_tui.supervisor.teams.teams import Teams
    from legion_tui.wire.spawn_request import ChildRequest

__all__ = ["Front"]


class Front(Protocol):
    """Ops take the caller's node id; the permission rules are the supervisor's."""

    @property
    def project_dir(self) -> Path: ...
    @property
    def run(self) -> RunInfo: ...
    @property
    def model(self) -> LegionModel: ...
    @property
    def roster(self) -> Roster: ...
    @property
    def notices(self) -> Notices: ...
    @property
    def ctx(self) -> HostContext: ...
    @property
    def teams(self) -> Teams: ...
    @property
    def mail(self) -> MailService | None: ...

    def node(self, node_id: str) -> Node: ...
    def launch_warning(self, node_id: str) -> str | None: ...
    async def spawn(self, caller_id: str, requests: Sequence[ChildRequest]) -> list[Node]: ...
    async def wait(
        self, caller_id: str, names: Sequence[str] | None, seconds: float | None
    ) -> dict[str, Any]: ...
    async def collect(
        self, caller_id: str, name: str, *, again: bool = False
    ) -> dict[str, Any]: ...
    async def stop(self, caller_id: str, name: str, *, force: bool = False) -> str: ...
    async def abort(
        self, caller_id: str, name: str, *, keep_queue: bool = False
    ) -> tuple[str, str]: ...
    async def steer(self, caller_id: str, name: str, text: str) -> tuple[str, str]: ...
    async def resume(self, caller_id: str, name: str) -> str: ...
    async def phase(
        self,
        caller_id: str,
        to: str,
        *,
        note: str | None = None,
        evidence: str | None = None,
        reason: str | None = None,
        supersedes: Sequence[str] = (),
    ) -> dict[str, Any]: ...
    def status(self, caller_id: str, name: str | None = None) -> dict[str, Any]: ...
    def tree_text(self, caller_id: str) -> str: ...
