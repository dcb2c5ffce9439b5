"""Every destructive path asks first and says what it will end (issue 13): Ctrl+Q and the
palette's Quit ask like `q`, Ctrl+C points at `q`, a lead's stop names its subtree,
`a` asks and names the steering it drops, the root is never offered for a stop, and no
toast covers the question being asked."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_helpers import FakeOps, canned_model, fixed_clock
from textual.widgets._toast import Toast

from legion_tui import receipts
from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.model import NodeStatus
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.palette import LegionCommands

pytestmark = pytest.mark.unit

SIZE = (120, 40)


def build() -> tuple[LegionApp, FakeOps]:
    model = canned_model()
    ops = FakeOps(model)
    return make_app(model, ops, clock=fixed_clock, timers=False), ops


def notes(app: LegionApp) -> list[str]:
    return [n.message for n in app.notifications]


def asked(app: LegionApp) -> str | None:
    bar = app.screen.query_one(ConfirmBar)
    return bar.request.prompt if bar.request is not None else None


async def test_ctrl_q_asks_like_q_while_agents_are_live() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert app.is_running
        assert asked(app) == receipts.QUIT_CONFIRM
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+q", "y")
        await pilot.pause()
        assert not app.is_running


async def test_with_only_the_host_live_q_quits_without_asking() -> None:
    """Issue 33: the quit prompt warned of live agents when only root was live."""
    app, _ = build()
    for view in app.model.nodes.values():
        if view.node.parent_id is not None and view.node.live:
            app.model.upsert(replace(view.node, status=NodeStatus.SETTLED))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert asked(app) is None and not app.is_running


async def test_ctrl_q_over_the_help_closes_it_and_asks() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert app.is_running and app.screen is app.main_screen
        assert asked(app) == receipts.QUIT_CONFIRM


async def test_the_palettes_quit_asks_too() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        quit_command = next(
            c for c in app.get_system_commands(app.screen) if c.title == "Quit"
        )
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"quit")
        await pilot.pause()
        await pilot.press("enter")  # the palette closes, then runs the command
        await pilot.pause()
        await pilot.pause()
        assert app.is_running and app.screen is app.main_screen
        assert asked(app) == receipts.QUIT_CONFIRM
        await pilot.press("n")
        await pilot.pause()
        await quit_command.callback()  # type: ignore[misc]  # async action_quit
        await pilot.pause()
        assert app.is_running and asked(app) == receipts.QUIT_CONFIRM


async def test_ctrl_c_points_at_q_which_asks_first() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert notes(app) == [receipts.CTRL_C_HINT]
        assert "ctrl+q" not in receipts.CTRL_C_HINT.lower()
        assert app.is_running


async def test_stopping_a_lead_names_its_subtree() -> None:
    app, ops = build()
    async with app.run_test(size=SIZE) as pilot:
        app.railway.select("n1")  # lead-api: worker-0, worker-1 live; scout-0 ✓, worker-2 ✗
        await pilot.pause()
        await pilot.press("x")
        assert asked(app) == (
            "Stop lead-api (centurion, in-process) and its 4 members, 2 live? "
            "y confirms · any other key cancels"
        )
        await pilot.press("n")
        app.railway.select("n3")  # a leaf names only itself
        await pilot.pause()
        await pilot.press("X")
        assert asked(app) == receipts.stop_confirm("worker-1", "worker", None, force=True)
        assert ops.calls == []


async def test_a_asks_first_and_names_the_steering_it_drops() -> None:
    app, ops = build()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.railway.select("n3")
        await pilot.pause()
        await pilot.press("a")
        assert asked(app) == receipts.abort_confirm("worker-1", [])
        await pilot.press("n")
        await pilot.pause()
        assert ops.calls == [] and notes(app)[-1] == "Cancelled — nothing aborted."
        await pilot.press("s", *"use the v2 api", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("a")
        prompt = asked(app)
        assert prompt is not None and '"use the v2 api"' in prompt and "drops" in prompt
        assert len(prompt) <= SIZE[0] - 2  # the whole question fits the bar: its y too
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert ops.calls == [
            ("steer", "n3", {"text": "use the v2 api"}),
            ("abort", "n3", {"keep_queue": False}),
        ]
        # The abort dropped it: the next prompt no longer names it.
        await pilot.press("a")
        assert asked(app) == receipts.abort_confirm("worker-1", [])


async def test_the_root_is_never_offered_for_a_stop() -> None:
    app, ops = build()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        provider = LegionCommands(app.screen)
        offered = [hit.text async for hit in provider.discover()]
        assert offered and not [t for t in offered if t and t.endswith(" root")]
        hits = [hit.text async for hit in provider.search("stop root")]
        assert "Stop root" not in hits and "Force stop root" not in hits
        app.railway.select("n0")
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause()
        assert asked(app) is None
        assert notes(app) == [receipts.root_not_stoppable("root")]
        assert ops.calls == []


async def ask_under_a_toast(*keys: str) -> None:
    """A toast showing ("Cancelled — nothing stopped."), then `keys` on worker-1 ask a
    question: no toast may cover the prompt row."""
    app, _ = build()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.railway.select("n3")
        await pilot.pause()
        for key in keys[:-1]:
            await pilot.press(key)
        await pilot.pause()
        await pilot.press("x", "n")
        await pilot.pause()
        await pilot.press(keys[-1])
        await pilot.pause()
        await pilot.pause()
        bar = app.screen.query_one(ConfirmBar)
        assert bar.asking
        toasts = list(app.screen.query(Toast))
        assert toasts
        for toast in toasts:
            assert not toast.region.overlaps(bar.region), (toast.region, bar.region)


async def test_a_toast_never_covers_the_force_stop_prompt() -> None:
    await ask_under_a_toast("X")


async def test_no_toast_covers_the_prompt_with_a_steer_receipt_open() -> None:
    """A steer's receipt row under the prompt pushed the prompt up one row, into the
    toasts' fixed margin: the abort question was covered from column 59 (seen in tmux)."""
    await ask_under_a_toast("s", *"use the v2 api", "enter", "a")  # its receipt row stays open
