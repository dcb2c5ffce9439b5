"""x → y stop confirm (SPEC §7.3): names the node, locked to its id, any other key
cancels, an ended node is reported not acted on, failures are reported."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_helpers import NOW, FakeOps, canned_model, fixed_clock

from legion_tui import receipts
from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.model import NodeStatus
from legion_tui.model_records import Node
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.overlay.detail import DetailScreen
from legion_tui.wire.names import OpError

pytestmark = pytest.mark.unit


def notes(app: LegionApp) -> list[str]:
    return [n.message for n in app.notifications]


async def settle(pilot, app: LegionApp) -> None:  # type: ignore[no-untyped-def]
    """Let the ops worker run and the model signal reach the widgets."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.model.flush()
    await pilot.pause()


async def select(pilot, app: LegionApp, node_id: str) -> None:  # type: ignore[no-untyped-def]
    app.railway.select(node_id)
    await pilot.pause()
    assert app.railway.selected_id == node_id


def build() -> tuple[LegionApp, FakeOps]:
    model = canned_model()
    ops = FakeOps(model)
    return make_app(model, ops, clock=fixed_clock, timers=False), ops


async def test_x_then_y_stops_the_selected_node_and_shows_the_receipt() -> None:
    app, ops = build()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await select(pilot, app, "n3")
        await pilot.press("x")
        bar = app.screen.query_one(ConfirmBar)
        assert bar.asking and bar.has_focus
        assert bar.request is not None
        assert bar.request.prompt == receipts.stop_confirm("worker-1", "worker", None)
        assert ops.calls == []  # nothing happens before y
        await pilot.press("y")
        await settle(pilot, app)
        assert ops.calls == [("stop", "n3", {"force": False})]
        assert app.model.nodes["n3"].node.status is NodeStatus.RETIRED
        assert "Stopped worker-1." in notes(app)
        assert not bar.asking and app.railway.has_focus


async def test_prompt_names_role_and_pid_of_a_process_child_and_force_variant() -> None:
    app, ops = build()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await select(pilot, app, "n2")
        await pilot.press("X")
        bar = app.screen.query_one(ConfirmBar)
        assert bar.request is not None
        assert bar.request.prompt == (
            "Force stop worker-0 (worker, pid 4711)? y confirms · any other key cancels"
        )
        await pilot.press("y")
        await settle(pilot, app)
        assert ops.calls == [("stop", "n2", {"force": True})]


@pytest.mark.parametrize("key", ["n", "escape", "x", "j", "q", "enter", "Y"])
async def test_any_key_other_than_y_cancels_and_does_nothing_else(key: str) -> None:
    app, ops = build()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await select(pilot, app, "n3")
        await pilot.press("x")
        await pilot.press(key)
        await settle(pilot, app)
        assert ops.calls == []
        assert app.model.nodes["n3"].node.status is NodeStatus.RUNNING
        assert not app.screen.query_one(ConfirmBar).asking
        # the cancelling key was swallowed: no cursor move, no quit prompt, no overlay
        assert app.railway.selected_id == "n3"
        assert app.is_running and not isinstance(app.screen, DetailScreen)
        assert "Cancelled — nothing stopped." in notes(app)


async def test_the_prompt_is_locked_to_the_node_id_when_rows_shift_under_it() -> None:
    app, ops = build()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await select(pilot, app, "n7")  # lead-ui/worker-0, below lead-api's children
        row_before = app.railway.row_of("n7")
        await pilot.press("x")
        # A new child of lead-api appears above: every lead-ui row moves down one.
        app.model.upsert(Node("n12", "r-7f3a", "n1", "worker-3", "root/lead-api/worker-3",
                              "worker", "sim", "inprocess", NodeStatus.STARTING,
                              created_at=NOW, updated_at=NOW))
        await settle(pilot, app)
        assert app.railway.rows[row_before].node_id == "n6"  # that row is someone else now
        await pilot.press("y")
        await settle(pilot, app)
        assert ops.calls == [("stop", "n7", {"force": False})]
        assert app.model.nodes["n12"].node.status is NodeStatus.STARTING


async def test_a_node_that_ended_meanwhile_is_reported_not_stopped() -> None:
    app, ops = build()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await select(pilot, app, "n3")
        await pilot.press("x")
        view = app.model.nodes["n3"]
        app.model.upsert(replace(view.node, status=NodeStatus.SETTLED))
        await settle(pilot, app)
        await pilot.press("y")
        await settle(pilot, app)
        assert ops.calls == []
        assert receipts.already_ended("worker-1", "settled") in notes(app)


async def test_x_on_an_already_ended_node_reports_it_without_asking() -> None:
    app, ops = build()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await select(pilot, app, "n4")
        await pilot.press("x")
        assert not app.screen.query_one(ConfirmBar).asking
        assert receipts.already_ended("scout-0", "settled") in notes(app)
        assert ops.calls == []


async def test_a_failed_stop_is_reported_never_swallowed() -> None:
    app, ops = build()
    ops.fail_with = OpError("STOP_SURVIVORS", "worker-1: 1 process survived the sweep: 999")
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await select(pilot, app, "n3")
        await pilot.press("x", "y")
        await settle(pilot, app)
        errors = [n for n in app.notifications if n.severity == "error"]
        assert [n.message for n in errors] == ["worker-1: 1 process survived the sweep: 999"]
        assert errors[0].title == "STOP_SURVIVORS"


async def test_x_y_inside_the_detail_overlay_stops_the_overlay_node() -> None:
    app, ops = build()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await select(pilot, app, "n2")
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen) and app.screen.node_id == "n2"
        app.railway.select("n3")  # the tree behind moves: the overlay's node still counts
        await pilot.press("x")
        bar = app.screen.query_one(ConfirmBar)
        assert bar.request is not None and bar.request.node_id == "n2"
        await pilot.press("y")
        await settle(pilot, app)
        assert ops.calls == [("stop", "n2", {"force": False})]
        assert isinstance(app.screen, DetailScreen)  # y did not close the overlay
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, DetailScreen)
