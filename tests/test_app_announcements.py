"""A completion notice to the root (the user) is a toast, once, and the root row's line
(issue 11: for a root hosted by the dashboard, a toast and an entry in its activity)."""

from __future__ import annotations

import pytest
from app_helpers import FakeOps, canned_model, fixed_clock

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.session.progress import SessionProgress
from legion_tui.widgets.tree.rows import activity

pytestmark = pytest.mark.unit


def toasts(app: LegionApp) -> list[str]:
    return [n.message for n in app.notifications]


async def test_an_announcement_is_toasted_once_and_kept_on_the_root_row() -> None:
    model = canned_model()
    root = next(v.node.id for v in model.nodes.values() if v.node.parent_id is None)
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        model.announce(root, "Finished: lead-0 ✓ ok — shipped")
        model.flush()
        await pilot.pause()
        assert toasts(app).count("Finished: lead-0 ✓ ok — shipped") == 1
        model.announce(root, "Finished: lead-1 ✗ failed — exited with status 1")
        model.flush()
        await pilot.pause()
        model.flush()  # another change: nothing is toasted twice
        await pilot.pause()
        assert toasts(app).count("Finished: lead-0 ✓ ok — shipped") == 1
        assert toasts(app).count("Finished: lead-1 ✗ failed — exited with status 1") == 1
        # The host's root runs no session of its own: its row says the last notice.
        model.set_progress(root, SessionProgress())
        line = activity(model.nodes[root], fixed_clock())
        assert line.text == "Finished: lead-1 ✗ failed — exited with status 1"


async def test_brackets_in_an_announcement_are_shown_as_written() -> None:
    """Issue 32: the budget's toast lost `[budget]` to Textual's markup."""
    model = canned_model()
    root = next(v.node.id for v in model.nodes.values() if v.node.parent_id is None)
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    text = "Budget exceeded: the run spent $0.021 of $0.020 ([budget] usd in settings.toml)"
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        model.announce(root, text)
        model.flush()
        await pilot.pause()
        shown = [str(t.render()) for t in app.screen.query("Toast")]  # Textual's own widget
        assert any("([budget] usd in settings.toml)" in s for s in shown), shown
