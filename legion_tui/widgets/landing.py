"""The land flow of the dashboard (issue 12): `L` on a settled agent that holds a
worktree → its plan is read (git, in a worker) → `Land BRANCH → BASE …? y confirms` →
the merge → when the repository has a remote, `Push BASE → REMOTE/BRANCH? y confirms` →
the push. Each step that touches the user's checkout or remote waits for its own `y`
on the same confirm bar as stop; every refusal is shown in git's words.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from legion_tui.land import LandPlan, LandRefused, merge, plan_land, push, remote_of
from legion_tui.ops import Operations
from legion_tui.state import LegionModel
from legion_tui.supervisor.worktree import Worktree
from legion_tui.widgets.confirm import ConfirmRequest

LANDING_KINDS = ("land", "push")
FILES_NAMED = 2  # in the confirm line; the rest are counted


def land_prompt(plan: LandPlan) -> str:
    """`Land BRANCH → BASE (N commits: files)? y confirms · …` — the question first, as
    the stop prompt asks it, so a narrow bar cuts the note, never the `y`."""
    named = ", ".join(plan.files[:FILES_NAMED])
    more = len(plan.files) - FILES_NAMED
    files = named + (f" +{more} more" if more > 0 else "")
    left = " · its uncommitted changes stay behind" if plan.uncommitted else ""
    commits = f"{plan.commits} commit{'' if plan.commits == 1 else 's'}"
    return (
        f"Land {plan.branch} → {plan.base} ({commits}: {files})? "
        f"y confirms · any other key cancels{left}"
    )


def push_prompt(plan: LandPlan, remote: str, branch: str) -> str:
    return f"Push {plan.base} → {remote}/{branch}? y confirms · any other key cancels"


@dataclass(frozen=True, slots=True)
class _Pending:
    tree: Worktree
    plan: LandPlan
    remote: tuple[str, str] | None = None  # set once landed: where a push goes


Say = Callable[[str, bool], None]  # (text, is_error)


class Landing:
    def __init__(
        self,
        model: LegionModel,
        ops: Operations,
        *,
        say: Say,
        ask: Callable[[ConfirmRequest], None],
        run: Callable[[Coroutine[Any, Any, None]], object],
    ) -> None:
        self._model = model
        self._ops = ops
        self._say = say
        self._ask = ask
        self._run = run
        self._pending: dict[str, _Pending] = {}  # node id → what its open confirm acts on

    def start(self, node_id: str) -> None:
        """`L`: refuse at once what cannot be landed, else read the plan and ask."""
        view = self._model.nodes.get(node_id)
        if view is None:
            return
        node = view.node
        space = self._ops.workspace(node_id)
        if space is None:
            self._say(f"{node.name} works in the project itself: it has no branch to land.", False)
            return
        if space.owner_id != node_id:
            owner = self._model.nodes.get(space.owner_id)
            lead = owner.node.name if owner is not None else space.owner_id
            self._say(f"{node.name} works in {lead}'s worktree: land {lead}.", False)
            return
        if node.live:
            status = node.status.value
            self._say(f"{node.name} is still {status}: land it once it has settled.", False)
            return
        self._run(self._plan(node_id, space.tree))

    async def _plan(self, node_id: str, tree: Worktree) -> None:
        try:
            plan = await plan_land(tree)
        except LandRefused as err:
            self._say(err.message, True)
            return
        self._pending[node_id] = _Pending(tree, plan)
        self._ask(ConfirmRequest("land", node_id, land_prompt(plan)))

    def answered(self, request: ConfirmRequest, confirmed: bool) -> None:
        pending = self._pending.pop(request.node_id or "", None)
        if not confirmed or pending is None:
            done = "landed" if request.kind == "land" else "pushed"
            self._say(f"Cancelled — nothing {done}.", False)
            return
        if request.kind == "land":
            self._run(self._merge(request.node_id or "", pending))
        elif pending.remote is not None:
            self._run(self._push(pending.plan, *pending.remote))

    async def _merge(self, node_id: str, pending: _Pending) -> None:
        try:
            self._say(await merge(pending.tree, pending.plan), False)
            remote = await remote_of(pending.plan)
        except LandRefused as err:
            self._say(err.message, True)
            return
        if remote is not None:
            self._pending[node_id] = _Pending(pending.tree, pending.plan, remote)
            self._ask(ConfirmRequest("push", node_id, push_prompt(pending.plan, *remote)))

    async def _push(self, plan: LandPlan, remote: str, branch: str) -> None:
        try:
            self._say(await push(plan, remote, branch), False)
        except LandRefused as err:
            self._say(err.message, True)
