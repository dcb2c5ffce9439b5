"""Teams (SPEC §6.4, §6.7): a centurion's worktree for its launch and its delivery
(`team_worktrees.py`), the `legion phase` op along the team's declared machine and the
`legion-verify` run a move out of the verification phase needs (`phase_op.py`: the
verb's one home, `teams.phase_op.phase`), and stints (revive / restore) — one front for
the launch path and the queries.

Every write goes through the record; the roster's `verifying` mark lets a stop sweep a
verification's commands; the mail service (when running) carries a declared failure to
the parent.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui.model_records import Node
from legion_tui.supervisor.teams.phase_op import PhaseOp
from legion_tui.supervisor.teams.team_worktrees import TeamWorktrees

if TYPE_CHECKING:
    from legion_tui.git.worktree import Worktree
    from legion_tui.supervisor.context import HostContext
    from legion_tui.wire.spawn_request import ChildRequest

__all__ = ["Teams"]

log = logging.getLogger(__name__)


class Teams:
    def __init__(self, ctx: HostContext) -> None:
        self._ctx = ctx  # its echo: rows and events reach the ledger and the model at once
        self.worktrees = TeamWorktrees(ctx)
        self.phase_op = PhaseOp(ctx, self.worktrees)  # `legion phase`: its one home

    # ----- worktrees (team_worktrees.TeamWorktrees) -------------------------------------
    async def worktree_for_launch(
        self, node: Node, req: ChildRequest | None, *, resume: bool
    ) -> str | None:
        """The node's worktree made (or found again) before it starts; the warning a
        demoted request gets."""
        return await self.worktrees.worktree_for_launch(node, req, resume=resume)

    def worktree_repo(self, kind: str) -> Path | None:
        return self.worktrees.worktree_repo(kind)

    def launch_warning(self, node_id: str) -> str | None:
        return self.worktrees.launch_warning(node_id)

    def worktree_data(self, node_id: str, warning: str | None) -> dict[str, Any]:
        return self.worktrees.worktree_data(node_id, warning)

    def worktree_of(self, node_id: str) -> Worktree | None:
        return self.worktrees.worktree_of(node_id)

    def holder_of(self, node_id: str) -> str | None:
        return self.worktrees.holder_of(node_id)

    def workspace_of(self, node_id: str) -> tuple[str, Worktree] | None:
        return self.worktrees.workspace_of(node_id)

    def cwd_for(self, node: Node) -> Path:
        return self.worktrees.cwd_for(node)

    def contract_path(self, node: Node) -> Path:
        return self.worktrees.contract_path(node)

    async def delivery_of(self, node_id: str) -> dict[str, Any] | None:
        return await self.worktrees.delivery_of(node_id)

    # ----- stints ---------------------------------------------------------------------------
    async def revive_stint(self, node: Node) -> Node | None:
        """A team woken after it ended starts a new stint in its phase (SPEC §6.4,
        upstream #357): `phase_since` moves to now and a `phase_change` from == to with
        reason `revived` says so, so its clock may time it out again and the notices of
        the old stint go OBSOLETE. Returns the row before (to give the clock back if the
        revival fails); None when there is no clock to restart (no declared machine, or
        a terminal phase, where the clock never runs)."""
        from legion_tui.phases.machine import TERMINALS
        from legion_tui.phases.timeouts import revive_stint

        if node.phase is None or node.phase in TERMINALS:
            return None
        # Through the echo: the node row and the event reach the live model at once.
        await revive_stint(self._ctx.echoing(), node, self._ctx.clock())
        return node

    async def restore_stint(self, before: Node) -> None:
        """A revival whose launch did not happen keeps the old stint (upstream PR #363):
        a moved clock for a run that never was would de-dupe the next real stint away."""
        from legion_tui.phases.timeouts import restore_stint

        await restore_stint(self._ctx.echoing(), before)
