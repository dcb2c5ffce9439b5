"""Golden of the message box while typing (issue 12 item 2), made as the other goldens
(the real ANSI through pyte, text + a colour map): the overlay on worker-1 with a first
message sent (its receipt under the box) and a second one of two lines being typed.

Update after LOOKING at the change:
`LEGION_UPDATE_GOLDENS=1 pytest tests/test_golden_message_box.py`.
"""

from __future__ import annotations

import pytest
from app_helpers import FakeOps, canned_model
from test_golden_issue12 import _shoot
from test_snapshots_golden import check
from textual.pilot import Pilot

from legion_tui.dashboard.app import LegionApp
from legion_tui.widgets.overlay.message_box import MessageText

pytestmark = pytest.mark.unit


async def test_golden_message_box_while_typing() -> None:
    ops = FakeOps(canned_model())

    async def typing(pilot: Pilot[None], app: LegionApp) -> None:
        app.railway.select("n3")
        await pilot.press("o")
        await pilot.pause()
        await pilot.press("s", *"use the v2 api", "enter")
        await app.workers.wait_for_complete()
        await pilot.press("s", *"and keep the old", "ctrl+j", *"tests passing")
        # The cursor shown steadily: its blink phase is the clock's, not the layout's.
        app.screen.query_one(MessageText).cursor_blink = False
        await pilot.pause()

    screen, mask = await _shoot(ops, typing)
    check("message_box_typing_120x40", "s in the overlay: a receipt, two lines typed", screen, mask)  # type: ignore[arg-type]
