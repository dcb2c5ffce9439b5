"""A team's worktrees (SPEC §6.7): the one a centurion — or an agent started from root on
its own — gets for its launch (found again on a resume), the folder each member works in
(its nearest holder's), the contract's path, and a lead's delivery (branch, HEAD, link).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui.model import EventType
from legion_tui.model_records import Node

if TYPE_CHECKING:
    from legion_tui.git.worktree import Worktree
    from legion_tui.supervisor.context import HostContext
    from legion_tui.wire.spawn_request import ChildRequest

__all__ = ["TeamWorktrees"]

log = logging.getLogger(__name__)


def _exists(path: str) -> bool:
    # One stat; cheap enough to do inline in the loop.
    return os.path.exists(path)


class TeamWorktrees:
    def __init__(self, ctx: HostContext) -> None:
        self._ctx = ctx
        self._model = ctx.model
        self._record = ctx.record
        self._run = ctx.run  # its dir: fixed for the run (a reopen keeps it)
        self._project_dir = ctx.project_dir
        self._cards = ctx.cards  # the node's role card, None when it has none loaded
        self._worktrees: dict[str, Worktree] = {}  # centurion id → its worktree
        self._worktree_lock = asyncio.Lock()

    async def worktree_for_launch(
        self, node: Node, req: ChildRequest | None, *, resume: bool
    ) -> str | None:
        """Give a centurion — and a worker or scout started from root, unless
        `[worktrees] perAgent = false` — its worktree (git repositories only) before it
        starts; return the one warning a demoted request gets. A resumed node finds its
        old one. Simulated agents get one only from a sandbox (`worktree_repo`)."""
        from legion_tui.git.worktree import (
            WorktreeError,
            demote_worktree,
            own_worktree,
            prepare_worktree,
        )
        from legion_tui.settings import load_settings
        from legion_tui.wire.names import ROOT_ID

        if node.id in self._worktrees:
            return None
        if resume:
            recorded = self._recorded(node.id)
            if recorded is not None and _exists(str(recorded.path)):
                self._worktrees[node.id] = recorded
            return None
        card = self._cards.card_for(node)
        card_tree = card.worktree if card is not None else False
        wants = req.worktree if req is not None and req.worktree is not None else card_tree
        per_agent = load_settings(self._project_dir).settings.worktree_per_agent
        asked = req.worktree if req is not None else None
        attempt = node.attempt_group is not None  # of a fan-out: its own, or none at all
        own = attempt or own_worktree(node.parent_id == ROOT_ID, node.role, asked, per_agent)
        repo = self.worktree_repo(node.kind)
        if repo is None or (node.role == "centurion" and wants is False and not attempt):
            # No repository to branch from, or a lead dispatched without one on purpose.
            if attempt:
                raise WorktreeError(f"no repository to cut {node.name}'s worktree from")
            return demote_worktree(node.role, node.name, wants, own=own).warning
        try:
            # Launches of one batch run together; git's own locks are not made for two
            # `worktree add` at once in one repository.
            async with self._worktree_lock:
                tree, warning = await prepare_worktree(
                    repo, node.role, node.name, wants, own=own,
                    base=req.base if req is not None else None,
                )
        except WorktreeError as err:
            if attempt:  # attempts sharing the project would overwrite each other's work
                raise
            log.warning("no worktree for %s: %s", node.path, err)
            return f"no worktree for {node.name}: {err}"
        if tree is None and attempt:  # the repository went since admission read its HEAD
            raise WorktreeError(f"{repo} is no git repository now: {node.name} has no worktree")
        if tree is not None:
            self._worktrees[node.id] = tree
        if warning:
            log.warning("%s", warning)
        return warning

    def worktree_repo(self, kind: str) -> Path | None:
        """The repository a centurion of `kind` branches from: the host's sandbox when it
        has one, else the project — except for simulated agents, which never branch in
        the user's repository (they would leave `legion/*` branches for a pretend run)."""
        sandbox = self._ctx.sandbox  # the host's own repository (the demo)
        if sandbox is not None:
            return sandbox
        return None if kind == "sim" else self._project_dir

    def launch_warning(self, node_id: str) -> str | None:
        """The warning a node's launch carried (a demoted worktree request), if any."""
        event = self._record.last_event(node_id, EventType.NODE_LAUNCHED)
        warning = event.data.get("warning") if event is not None else None
        return str(warning) if warning else None

    def worktree_data(self, node_id: str, warning: str | None) -> dict[str, Any]:
        """What a `node_launched` event says of the node's worktree (and its warning)."""
        data: dict[str, Any] = {}
        tree = self._worktrees.get(node_id)
        if tree is not None:
            from legion_tui.git.worktree import launch_record

            data.update(launch_record(tree))
        if warning:
            data["warning"] = warning
        return data

    def worktree_of(self, node_id: str) -> Worktree | None:
        """The worktree a node works in: its own (a centurion's) or its nearest
        ancestor's; None when the team works in the project itself."""
        holder = self.holder_of(node_id)
        return None if holder is None else self._worktrees[holder]

    def _recorded(self, node_id: str) -> Worktree | None:
        """The worktree the node's last launch record names (it may be gone since)."""
        from legion_tui.git.worktree import recorded_worktree

        event = self._record.last_event(node_id, EventType.NODE_LAUNCHED)
        return recorded_worktree(event.data) if event is not None else None

    def workspace_of(self, node_id: str) -> tuple[str, Worktree] | None:
        """(holder, worktree) for the end of a unit of work (commit, land, push, discard):
        the worktrees of this host's launches, else the ledger's launch records — a
        reopened run's settled agents were not launched by this host, and a discarded
        worktree's branch may still be there."""
        view = self._model.nodes.get(node_id)
        while view is not None:
            tree = self._worktrees.get(view.node.id) or self._recorded(view.node.id)
            if tree is not None:
                return view.node.id, tree
            view = self._model.nodes.get(view.node.parent_id or "")
        return None

    def holder_of(self, node_id: str) -> str | None:
        """The node whose worktree `node_id` works in: itself or its nearest ancestor
        holding one; None when it works in the project itself."""
        view = self._model.nodes.get(node_id)
        while view is not None:
            if view.node.id in self._worktrees:
                return view.node.id
            view = self._model.nodes.get(view.node.parent_id or "")
        return None

    def cwd_for(self, node: Node) -> Path:
        tree = self.worktree_of(node.id)
        return Path(tree.cwd) if tree is not None else self._project_dir

    def contract_path(self, node: Node) -> Path:
        """`<run>/contracts/<name>.md` (where the sim writes it), else `contract.md` in
        the team's working folder (the centurion card's wording)."""
        in_run = self._run.dir / "contracts" / f"{node.name}.md"
        if in_run.exists():
            return in_run
        local = self.cwd_for(node) / "contract.md"
        return local if local.exists() else in_run

    async def delivery_of(self, node_id: str) -> dict[str, Any] | None:
        """A centurion's delivery: its branch + HEAD sha (+ a PR/MR link only if gh/glab
        reports one — never an invented URL, SPEC §6.7); None without a worktree."""
        tree = self._worktrees.get(node_id)
        if tree is None:
            return None
        from legion_tui.git.worktree import WorktreeError, delivery

        try:
            d = await delivery(tree)
        except WorktreeError as err:
            log.warning("no delivery for %s: %s", node_id, err)
            return None
        return {
            "branch": d.branch,
            "head_sha": d.head_sha,
            "link": d.link,
            "commits": d.commits,
            "dirty": d.dirty,
        }
