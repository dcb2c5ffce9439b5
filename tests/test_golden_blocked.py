"""Golden of a BLOCKED row (issue 12 item 5): ◆ and the agent's own question, in the
warning colour, as test_snapshots_golden.py makes goldens (the real ANSI through pyte,
text + a colour map). Only the blocked row is pinned; the rest of the screen belongs to
the main screen's goldens and is masked (`~`).

Update after LOOKING at the change: `LEGION_UPDATE_GOLDENS=1 pytest tests/test_golden_blocked.py`.
"""

from __future__ import annotations

import pytest
from app_helpers import canned_app, canned_model, capture, fixed_clock, terminal_screen
from test_snapshots_golden import check

from legion_tui.model import EventType, NodeStatus
from legion_tui.model_records import Event

pytestmark = pytest.mark.unit

QUESTION = "allow Write (plan.md)? y allows"


async def test_golden_blocked_row_shows_the_question() -> None:
    model = canned_model()
    assert model.nodes["n7"].node.status is NodeStatus.BLOCKED
    model.add_event(Event(901, "n7", EventType.NODE_BLOCKED, {"question": QUESTION},
                          fixed_clock() - 30))  # fmt: skip
    app = canned_app(model, theme="legion-dark")
    capture(app)
    app.animation_level = "none"
    async with app.run_test(headless=False, size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
        screen = terminal_screen(app)
        width, height = app.size
        rows = [y for y in range(height) if "◆" in screen.display[y]]
        assert len(rows) == 1, rows
        assert f"needs you: {QUESTION}" in screen.display[rows[0]]
        mask = {(x, y): "~" for y in range(height) for x in range(width) if y not in rows}
        check("blocked_row_120x40", "a BLOCKED row with its question", screen, mask)
