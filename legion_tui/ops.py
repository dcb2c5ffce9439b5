"""What the dashboard may ask of a supervisor. The supervisor implements it; tests may
hand the app any object with these methods. Every call returns the receipt text that the
user sees (legion_tui.receipts) or raises OpError with a message worth showing.

The control verbs are the socket's own ops, by name (`act`): the in-process supervisor
runs the socket's handler for them, a view sends them over the socket — so a verb is
written once on the wire side, not once per way of reaching a supervisor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from legion_tui.agents.attach import AttachPlan
    from legion_tui.agents.cards import CardSet
    from legion_tui.git.worktree import Worktree
    from legion_tui.wire.spawn_request import ChildRequest

# The socket ops the dashboard acts with on one node (SPEC §5), with their fields:
# stop (force), abort (keep_queue), steer (text), resume.
ControlVerb = Literal["stop", "abort", "steer", "resume"]


@dataclass(frozen=True, slots=True)
class Workspace:
    """The git worktree a node works in, and the node that holds it: the node itself
    (an agent the user started, a lead) or its lead (a team member). Only the holder's
    branch is landed."""

    owner_id: str
    tree: Worktree


class Operations(Protocol):
    # True: a view that may only look (`legion serve` without its token) — it sends no
    # operation and writes nothing anywhere, not even the user's settings or history.
    read_only: bool

    async def act(self, verb: ControlVerb, node_id: str, **fields: bool | str) -> str:
        """The socket op `verb` on `node_id` with its other fields, caller root: its
        receipt, or OpError in the supervisor's words."""
        ...

    async def spawn(self, parent_id: str, requests: Sequence[ChildRequest]) -> str:
        """Start children under `parent_id` (root or a lead) as `legion spawn` does — one,
        or a fan-out's attempts; the receipt names each, or OpError with the same refusal
        the CLI prints."""
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

    async def hand_over(self, node_id: str) -> None:
        """Give `node_id`'s session to its own UI: its agent ended, the node left
        `attached`, nothing else writes there until `take_back` (OpError)."""
        ...

    async def take_back(self, node_id: str, *, resume: bool = True) -> str | None:
        """After the attach: the session is legion's again; with `resume`, its agent
        again, idle on the session, and the receipt."""
        ...

    def terminal_input(self, node_id: str, data: bytes) -> bool:
        """Write keys to `node_id`'s pty; False when it has none (not an exec child
        under a pty, or ended)."""
        ...
