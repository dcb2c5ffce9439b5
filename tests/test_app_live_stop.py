"""x → y on a real in-process legion: the dashboard over a real Supervisor's model, its
real RootOperations, real sim agents stuck in a tool call."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from supervisor_helpers import STUCK, hosted, spawn_one, stuck_worker

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.model import NodeStatus
from legion_tui.supervisor.root_ops import RootOperations
from legion_tui.widgets.confirm import ConfirmBar

pytestmark = pytest.mark.host


def notes(app: LegionApp) -> list[str]:
    return [n.message for n in app.notifications]


async def wait_app(pilot, app: LegionApp, predicate, what: str) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until `predicate` holds, with a deadline (never a blind sleep)."""
    deadline = time.monotonic() + 20
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause()


async def test_x_y_retires_a_real_agent_and_x_n_leaves_it_running(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        keep = await stuck_worker(sup, "keep")
        kill = await stuck_worker(sup, "kill")
        app = make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir)
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await pilot.pause()
            app.railway.select(keep.id)
            await pilot.press("x", "n")
            app.railway.select(kill.id)
            await pilot.press("x")
            bar = app.screen.query_one(ConfirmBar)
            assert bar.request is not None and bar.request.node_id == kill.id
            assert bar.request.prompt.startswith("Stop kill (worker, ")
            await pilot.press("y")
            await wait_app(pilot, app, lambda: "Stopped kill." in notes(app), "the receipt")
            assert sup.names.node(kill.id).status is NodeStatus.RETIRED
            assert sup.names.node(keep.id).status is NodeStatus.RUNNING
            assert sup.model.nodes[keep.id].node.live


async def test_rows_shifting_under_the_prompt_do_not_redirect_a_real_stop(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        # a centurion (only it may have children) stuck in a tool call
        parent = await spawn_one(sup, "centurion", name="lead", sim=dict(STUCK))
        target = await stuck_worker(sup, "target")
        app = make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir)
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await pilot.pause()
            app.railway.select(target.id)
            row = app.railway.row_of(target.id)
            assert row is not None
            await pilot.press("x")
            # a child of `parent` lands between parent and target: target's row moves down
            child = await spawn_one(sup, name="newcomer", caller=parent.id, sim=dict(STUCK))
            await wait_app(
                pilot, app, lambda: app.railway.row_of(child.id) is not None, "the new row"
            )
            assert app.railway.rows[row].node_id == child.id
            await pilot.press("y")
            await wait_app(pilot, app, lambda: "Stopped target." in notes(app), "the receipt")
            assert sup.names.node(target.id).status is NodeStatus.RETIRED
            assert sup.names.node(child.id).live and sup.names.node(parent.id).live
