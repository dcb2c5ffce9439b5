"""Goldens of issue 12's screens, as test_snapshots_golden.py makes them (the real ANSI
through pyte, text + a colour map): the Diff tab on a real repository (fixed dates and
nonce: the same shas every run) and the new-agent form showing a refusal — the overlay
or the form only, the screen behind masked (`~`).

Update after LOOKING at the change: `LEGION_UPDATE_GOLDENS=1 pytest tests/test_golden_issue12.py`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from app_helpers import FakeOps, canned_model, capture, fixed_clock, terminal_screen
from land_helpers import FIXED_DATES, agent_work, make_repo, open_diff_tab
from supervisor_helpers import until, use_git_identity
from test_snapshots_golden import check
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.ops import Workspace
from legion_tui.widgets.new_agent import NewAgentScreen
from legion_tui.wire.names import OpError

pytestmark = pytest.mark.host

Steps = Callable[[Pilot[None], LegionApp], Awaitable[None]]


@pytest.fixture(autouse=True)
def _git(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)
    for key, value in FIXED_DATES.items():
        monkeypatch.setenv(key, value)


async def _shoot(ops: FakeOps, steps: Steps) -> tuple[object, object]:
    app = make_app(ops.model, ops, clock=fixed_clock, timers=False, theme="legion-dark")
    capture(app)
    app.animation_level = "none"
    async with app.run_test(headless=False, size=(120, 40)) as pilot:
        await pilot.pause()
        await steps(pilot, app)
        await pilot.pause()
        await pilot.pause()
        # Only the overlay or the form is pinned here: the screen behind it belongs to the
        # main screen's own goldens (test_snapshots_golden.py) and changes with them.
        (frame,) = app.screen.query("#detail-frame, #new-agent-frame")
        width, height = app.size
        mask = {
            (x, y): "~"
            for y in range(height)
            for x in range(width)
            if not frame.region.contains(x, y)
        }
        return terminal_screen(app), mask


async def test_golden_diff_tab(tmp_path: Path) -> None:
    tree = await agent_work(make_repo(tmp_path / "project"))
    model = canned_model()
    ops = FakeOps(model, workspaces={"n4": Workspace("n4", tree)})

    async def diff_tab(pilot: Pilot[None], app: LegionApp) -> None:
        await open_diff_tab(pilot, app, "n4")
        await pilot.pause()

    screen, mask = await _shoot(ops, diff_tab)
    check("detail_diff_120x40", "scout-0's Diff tab: commits, files, the diff", screen, mask)  # type: ignore[arg-type]


async def test_golden_new_agent_form_with_a_refusal() -> None:
    model = canned_model()
    ops = FakeOps(model)
    ops.fail_with = OpError(
        "BAD_NAME", "invalid name 'Pager!': use [a-z0-9][a-z0-9._-]{0,63}; nothing was spawned"
    )

    async def form(pilot: Pilot[None], app: LegionApp) -> None:
        app.railway.select("n0")
        await pilot.press("n")
        await until(lambda: isinstance(app.screen, NewAgentScreen), what="the form")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#task", TextArea).load_text(
            "Add pagination to GET /items.\nKeep the old default of 10."
        )
        screen.query_one("#name", Input).value = "Pager!"
        await pilot.press("ctrl+s")
        await until(lambda: "BAD_NAME" in str(screen.query_one("#new-agent-error").render()),
                    what="the refusal")
        await pilot.pause()

    screen, mask = await _shoot(ops, form)
    check("new_agent_refused_120x40", "n: the new-agent form showing a refusal", screen, mask)  # type: ignore[arg-type]
