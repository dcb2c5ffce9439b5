"""The message box (issue 12 item 2): `s` on the tree and in the overlay opens it, the
text shows as typed on several lines, Enter sends, Ctrl+J breaks a line, ↑/↓ recall
earlier messages (kept in the run folder), and the agent's own receipt shows under the
box and follows it: queued while a real sim agent is in a tool call, accepted when it is
idle, delivered once its session holds the message."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_helpers import FakeOps, canned_model, fixed_clock
from supervisor_helpers import hosted, settled, spawn_one, until
from test_app_detail import open_detail
from test_app_live_stop import wait_app

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.supervisor.root_ops import RootOperations
from legion_tui.widgets.overlay.message_box import MessageBox, MessageText
from legion_tui.widgets.overlay.talk import HISTORY_FILE, MessageHistory

pytestmark = pytest.mark.host

SIZE = (120, 40)


def box_of(app: LegionApp) -> MessageBox:
    return app.screen.query_one(MessageBox)


def receipt(app: LegionApp) -> str:
    return str(box_of(app).query_one(".message-receipt").render())


async def test_the_box_shows_several_lines_as_typed_and_enter_sends_them() -> None:
    model = canned_model()
    ops = FakeOps(model)
    app = make_app(model, ops, clock=fixed_clock, timers=False)
    async with app.run_test(size=SIZE) as pilot:
        app.railway.select("n3")
        await pilot.press("s", *"use the v2 api", "ctrl+j", *"and keep the tests")
        await pilot.pause()
        area = app.screen.focused
        assert isinstance(area, MessageText)
        assert area.content_region.height == 2  # both lines on screen while typed
        assert "use the v2 api" in area.render_line(0).text
        assert "and keep the tests" in area.render_line(1).text
        head = str(box_of(app).query_one(".message-head").render())
        assert head.startswith("steer worker-1 (next turn boundary) · ⏎ sends · ^J new line")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert ops.calls == [("steer", "n3", {"text": "use the v2 api\nand keep the tests"})]
        assert receipt(app) == (
            "→ worker-1 · \u201cuse the v2 api and keep the tests\u201d · "
            "queued for its next turn boundary"
        )
        assert app.railway.has_focus  # the box gave the keys back to the tree


async def test_up_and_down_recall_earlier_messages_kept_in_the_run_folder(tmp_path: Path) -> None:
    model = canned_model()
    ops = FakeOps(model)
    app = make_app(model, ops, clock=fixed_clock, timers=False, run_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.railway.select("n3")
        for text in ("first", "second\nline two"):
            await pilot.press("s", *text.replace("\n", "|"), "enter")
            await app.workers.wait_for_complete()
        await pilot.press("s", *"draft")
        area = app.screen.query_one(MessageText)
        await pilot.press("up")
        assert area.text == "second|line two"
        await pilot.press("up")
        assert area.text == "first"
        await pilot.press("up")  # nothing older: it stays
        assert area.text == "first"
        await pilot.press("down", "down")
        assert area.text == "draft"
        await pilot.press("escape")
    # A new dashboard on the same run recalls them too.
    assert MessageHistory(tmp_path).entries == ["first", "second|line two"]
    assert (tmp_path / HISTORY_FILE).stat().st_mode & 0o077 == 0


async def test_up_inside_a_message_moves_the_cursor_not_the_history() -> None:
    model = canned_model()
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    async with app.run_test(size=SIZE) as pilot:
        app.railway.select("n3")
        await pilot.press("s", *"old", "enter")
        await app.workers.wait_for_complete()
        await pilot.press("s", *"one", "ctrl+j", *"two", "up")
        area = app.screen.query_one(MessageText)
        assert area.text == "one\ntwo" and area.cursor_location[0] == 0
        await pilot.press("up")
        assert area.text == "old"


async def test_receipts_follow_a_real_agent_queued_accepted_delivered(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        # In one bash call until the test ends it: the message waits for the turn
        # boundary after it. (A 4 s call ended, on a loaded machine, before the message
        # was typed: then it was accepted, never queued.)
        go = tmp_path / "bash-may-end"
        node = await spawn_one(sup, name="w", sim={"stall_until": str(go)})
        await until(lambda: bool(sup.model.nodes[node.id].progress.in_flight), what="in bash")
        app = make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await open_detail(pilot, app, node.id)
            await pilot.press("s", *"use the v2 api", "enter")
            await wait_app(pilot, app, lambda: "queued" in receipt(app), "queued")
            go.touch()
            await wait_app(pilot, app, lambda: "delivered" in receipt(app), "delivered")
            assert "use the v2 api" in sup.model.nodes[node.id].progress.recent_user_texts
            await settled(sup, node.id)
            await pilot.pause()
            await pilot.press("s")
            head = str(box_of(app).query_one(".message-head").render())
            assert head.startswith("follow-up w (starts a turn)")
            await pilot.press(*"one more thing", "enter")
            await wait_app(pilot, app, lambda: "one more thing" in receipt(app), "the second")
            await wait_app(pilot, app, lambda: "accepted" in receipt(app) or "delivered" in receipt(
                app), "accepted")
            await wait_app(pilot, app, lambda: "delivered" in receipt(app), "delivered again")
            await settled(sup, node.id)


async def test_a_message_to_an_agent_that_is_gone_says_why_under_the_box(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, name="w", sim={"quick": True})
        await settled(sup, node.id)
        await sup.stops.stop("root", node.id)
        app = make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            app.railway.select(node.id)
            await pilot.press("s")
            head = str(box_of(app).query_one(".message-head").render())
            # Issue 32 item 6: it said "follow-up w (starts a turn)", then the send failed.
            assert head.startswith("message w (retired — r resumes it first)"), head
            await pilot.press(*"hello", "enter")
            await wait_app(pilot, app, lambda: "not sent" in receipt(app), "the refusal")
            assert receipt(app) == "→ w · \u201chello\u201d · not sent: steer failed: w is retired"
