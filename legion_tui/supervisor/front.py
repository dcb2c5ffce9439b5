"""The supervisor as its two fronts see it: the socket server's ops (`server_ops`) and
the dashboard's `root_ops.RootOperations`. They depend on this Protocol, not on
`core.Supervisor` (which satisfies it), so `core` can build them without an import
cycle and a test can serve a stand-in.

A front calls the part that owns each verb — `launcher.spawn`, `stops.stop`,
`control.abort/steer/resume`, `teams.phase_op.phase`, `queries.wait/collect/status/
tree_text` — with the caller's node id; the permission rules are those parts'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.hearing.notices import Notices
    from legion_tui.supervisor.hearing.queries import Queries
    from legion_tui.supervisor.life.control import Control
    from legion_tui.supervisor.life.launching import Launcher
    from legion_tui.supervisor.life.stops import Stops
    from legion_tui.supervisor.teams.teams import Teams

__all__ = ["Front"]


class Front(Protocol):
    """The host's context and the parts whose verbs the fronts serve."""

    @property
    def ctx(self) -> HostContext: ...
    @property
    def launcher(self) -> Launcher: ...
    @property
    def stops(self) -> Stops: ...
    @property
    def control(self) -> Control: ...
    @property
    def teams(self) -> Teams: ...
    @property
    def queries(self) -> Queries: ...
    @property
    def notices(self) -> Notices: ...
