"""What the dashboard may ask of a supervisor. The supervisor implements it; tests may
hand the app any object with these methods. Every call returns the receipt text that the
user sees (legion_tui.receipts) or raises OpError with a message worth showing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from legion_tui.agents.attach import AttachPlan
    from legion_tui.agents.cards import CardSet
    from legion_tui.git.worktree import Worktree
    from legion_tui.wire.spawn_request import ChildRequest




@dataclass(frozen=True, slots=True)
class Workspace:
    """The git worktree a node works in, and the node that holds it: the node itself
    (an agent the user started, a lead) or its lead (a team member). Only the holder's
    branch is landed."""

    owner_id: str
    tree: Worktree


class Operations(Protocol):
    async def stop(self, node_id: str, *, force: bool = False) -> str: ...

    async def abort(self, node_id: str, *, keep_queue: bool = False) -> str: ...

    async def steer(self, node_id: str, text: str) -> str: ...

    async def resume(self, node_id: str) -> str: ...

    async def spawn(self, parent_id: str, request: ChildRequest) -> str:
        """Start one child under `parent_id` (root or a lead) as `legion spawn` does; the
        receipt names it, or OpError with the same refusal the CLI prints."""
        ...

    async def role_cards(self) -> CardSet:
        """The role cards as they are on disk now (`.legion/agents/` re-read)."""
        ...

    def workspace(self, node_id: str) -> Workspace | None:
        """The worktree `node_id` works in; None when it works in the project itself."""
        ...


@runtime_checkable
class HostOperations(Protocol):
    """What only the dashboard that hosts the agents can do (a view of a run hosted
    elsewhere has neither): hand an agent's session to its own UI, type into an exec
    child's terminal."""

    def attach_plan(self, node_id: str) -> AttachPlan:
        """How to open `node_id`'s agent UI on its session (attach.AttachRefused)."""
        ...

    def terminal_input(self, node_id: str, data: bytes) -> bool:
        """Write keys to `node_id`'s pty; False when it has none (not an exec child
        under a pty, or ended)."""
        ...
