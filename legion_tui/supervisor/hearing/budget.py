"""Dollar budgets (issue 12 item 6): a subtree that spends past its budget is stopped.

A budget belongs to a node — `--budget-usd` on `legion run` / `legion spawn` (the spawn
request's `budgetUsd`), else its card's `budgetUsd` — and covers the node and everything
below it; `[budget] usd` in .legion/settings.toml covers the whole run. Spending is what
the sessions say (`costs`: the same sums as the header and `legion status`). On every
model change the nodes that changed and their ancestors are looked at; the first time a
budget is passed its subtree is stopped through the supervisor's own stop (children
first, as any stop), a `budget_exceeded` event records which budget, the spent figure,
the limit and the stop's receipt, and the user is told (root's announcement: a toast).
Each budget trips once, and while one is spent past no spawn under it is admitted
(`refusal`). A run limit changed in the settings meanwhile (`legion budget set`, an
editor: the file is looked at once a second, and at each spawn) applies at once:
raised, it reopens admission; lowered past the spend, it trips. A node under a
budget whose calls have no price (a model no price table knows: legion_tui.costs) is
said once: the budget cannot hold for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui.costs import fmt_usd, total_spend
from legion_tui.model import EventType
from legion_tui.settings import SETTINGS_FILE
from legion_tui.wire.names import ROOT_ID, OpError

if TYPE_CHECKING:
    from legion_tui.agents.cards import RoleCard
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.life.stops import Stops
    from legion_tui.wire.spawn_request import ChildRequest

__all__ = ["RUN_BUDGET", "BudgetWatch", "Limit", "budget_exceeded", "run_limit"]

log = logging.getLogger(__name__)

RUN_BUDGET = "[budget] usd in .legion/settings.toml"
SETTINGS_POLL_SECONDS = 1.0  # how often an idle run looks at the settings' budget


@dataclass(frozen=True, slots=True)
class Limit:
    usd: float
    source: str  # which budget, as the receipt names it


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def run_limit(project_dir: Path) -> Limit | None:
    from legion_tui.settings import load_settings

    usd = load_settings(project_dir).settings.budget_usd
    return None if usd is None else Limit(usd, RUN_BUDGET)


def budget_exceeded(who: str, spent: float, limit: Limit, receipt: str) -> str:
    """The honest receipt: which budget, what was spent, the limit, what the stop did."""
    return (
        f"Budget exceeded: {who} spent {fmt_usd(spent)} of {fmt_usd(limit.usd)} "
        f"({limit.source}) — {receipt}"
    )


def _over(who: str, spent: float, limit: Limit) -> str:
    return (f"over budget: {who} spent {fmt_usd(spent)} of {fmt_usd(limit.usd)} "
            f"({limit.source}); nothing was spawned — raise the limit to spawn again")  # fmt: skip


class BudgetWatch:
    def __init__(self, ctx: HostContext, stops: Stops, *, run: Limit | None = None) -> None:
        self._ctx = ctx  # its record, the user's announcements, the closed flag
        self._model = ctx.model
        self._stops = stops  # the supervisor's own stop, as root
        self._run = run
        self._model.budget_usd = None if run is None else run.usd
        self._limits: dict[str, Limit] = {}
        self._tripped: set[str] = set()  # node ids, and "" for the run's budget
        self._unpriced_said: set[str] = set()  # nodes told to be beyond any budget
        self._tasks: set[asyncio.Task[None]] = set()
        self._settings = ctx.project_dir / SETTINGS_FILE
        self._settings_seen = _stamp(self._settings)
        self._poll: asyncio.Task[None] | None = None  # `start`
        self._unsubscribe = ctx.model.subscribe(self._changed)

    def track(self, node_id: str, req: ChildRequest | None, card: RoleCard | None) -> None:
        """The node's budget at launch: the request's, else its card's."""
        if req is not None and req.budget_usd is not None:
            self._limits[node_id] = Limit(req.budget_usd, "--budget-usd")
        elif card is not None and card.budget_usd is not None:
            self._limits[node_id] = Limit(card.budget_usd, f"budgetUsd of card {card.name}")

    def close(self) -> None:
        self._unsubscribe()
        if self._poll is not None:
            self._poll.cancel()

    def refusal(self, caller_id: str) -> str | None:
        """Why a spawn under `caller_id` is not admitted: the run's budget, or one of the
        caller's or an ancestor's, is already spent past (before, a stopped worker's
        sibling was admitted and spent past it too). None: admitted."""
        self._settings_moved()
        if self._run is not None:
            spent = total_spend(view.progress for view in self._model.nodes.values()).usd
            if self._run is not None and spent > self._run.usd:
                return _over("the run", spent, self._run)
        for node_id in self._ancestry(caller_id):
            limit = self._limits.get(node_id)
            if limit is not None and (spent := self._subtree_usd(node_id)) > limit.usd:
                return _over(f"{self._model.nodes[node_id].node.name} and its subtree", spent,
                             limit)  # fmt: skip
        return None

    def _reread_run_limit(self) -> None:
        """The settings' limit as the file says now: raised (or removed) since the host
        started, it admits spawns again, and may trip again at the new figure."""
        fresh = run_limit(self._ctx.project_dir)
        if fresh != self._run:
            self._run = fresh
            self._model.budget_usd = None if fresh is None else fresh.usd
            self._tripped.discard("")

    def start(self) -> None:
        """Look at the settings file once a second (and at each spawn: `refusal`): a
        limit lowered while nothing changes (agents inside long commands) must still
        stop them."""
        self._poll = asyncio.get_running_loop().create_task(
            self._watch_settings(), name="budget-settings"
        )

    async def _watch_settings(self) -> None:
        while True:
            await asyncio.sleep(SETTINGS_POLL_SECONDS)
            if self._settings_moved():
                self._changed(frozenset())

    def _settings_moved(self) -> bool:
        """The settings file changed since it was read (`legion budget set`, an editor):
        its limit applies from now — one stat, once a second and at each spawn."""
        seen = _stamp(self._settings)
        if seen == self._settings_seen:
            return False
        self._settings_seen = seen
        self._reread_run_limit()
        return True

    def _changed(self, dirty: frozenset[str]) -> None:
        if self._ctx.closed:
            return
        nodes = self._model.nodes
        if self._run is not None and "" not in self._tripped:
            spent = total_spend(view.progress for view in nodes.values()).usd
            if spent > self._run.usd:
                self._trip("", "the run", spent, self._run)
        looked: set[str] = set()
        for node_id in dirty:
            self._say_if_unpriced(node_id)
            current: str | None = node_id
            while current is not None and current not in looked and current in nodes:
                looked.add(current)
                limit = self._limits.get(current)
                if limit is not None and current not in self._tripped:
                    spent = self._subtree_usd(current)
                    if spent > limit.usd:
                        name = nodes[current].node.name
                        self._trip(current, f"{name} and its subtree", spent, limit)
                current = nodes[current].node.parent_id

    def _say_if_unpriced(self, node_id: str) -> None:
        view = self._model.nodes.get(node_id)
        if (view is None or node_id in self._unpriced_said
                or view.progress.cost_basis != "unknown"):  # fmt: skip
            return
        limit = self._run or next(
            (self._limits[a] for a in self._ancestry(node_id) if a in self._limits), None
        )
        if limit is None:
            return
        self._unpriced_said.add(node_id)
        self._ctx.announce(
            f"Budget cannot hold for {view.node.name}: its model "
            f"({view.progress.model or 'unnamed'}) has no price, so its spend is unknown "
            f"and not counted against {fmt_usd(limit.usd)} ({limit.source})"
        )

    def _ancestry(self, node_id: str) -> Any:
        current: str | None = node_id
        nodes = self._model.nodes
        while current is not None and current in nodes:
            yield current
            current = nodes[current].node.parent_id

    def _subtree_usd(self, node_id: str) -> float:
        return total_spend(view.progress for view in self._walk(node_id)).usd

    def _walk(self, node_id: str) -> Any:
        yield self._model.nodes[node_id]
        for view, _depth in self._model.walk(node_id):
            yield view

    def _trip(self, node_id: str, who: str, spent: float, limit: Limit) -> None:
        self._tripped.add(node_id)
        under = self._walk(node_id) if node_id else self._model.nodes.values()
        if not any(view.node.live and view.node.role != "root" for view in under):
            # Nothing under it runs (a reopened run spent past its budget last time): there
            # is nothing to stop, and a stop would retire agents that ended — settled ones
            # too (issue 32). Spawns under it are refused all the same (`refusal`).
            return
        task = asyncio.get_running_loop().create_task(self._stop_over(node_id, who, spent, limit))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _stop_over(self, node_id: str, who: str, spent: float, limit: Limit) -> None:
        try:
            receipt = await self._stops.stop(ROOT_ID, node_id or "all")
        except OpError as err:
            receipt = f"not stopped: {err.message}"
        except Exception as err:  # the stop's failure is said, never swallowed
            log.exception("the budget stop of %s failed", who)
            receipt = f"the stop failed: {err}"
        text = budget_exceeded(who, spent, limit, receipt)
        data = {"budget": limit.source, "spent_usd": round(spent, 6), "limit_usd": limit.usd,
                "receipt": receipt}  # fmt: skip
        try:
            where = node_id or self._model.root_id
            await self._ctx.record.event(where, EventType.BUDGET_EXCEEDED, data)
        finally:
            self._ctx.announce(text)
