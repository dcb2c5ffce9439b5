"""The page floor on the real ANSI stream (SPEC §7.4, upstream page-floor-v1).

The app runs with a driver that captures every byte Textual writes to the terminal; the
bytes go through pyte, a terminal emulator, and the test reads the background colour of
the cells beside the detail overlay. In dark and light those gutters must carry the
page colour — explicitly non-empty, since `"" == ""` would pass a broken floor. The
`floor=False` rows switch the floor off and must fail the same assertion, which is what
proves the assertion can see the black band at all.
"""

from __future__ import annotations

import pyte
import pytest
from app_helpers import FakeOps, canned_model, capture, fixed_clock, terminal_screen

from legion_tui.dashboard.app import make_app
from legion_tui.themes import palette
from legion_tui.widgets.overlay.detail import DetailScreen

pytestmark = pytest.mark.unit

W, H = 120, 40


Frame = tuple[int, int, int, int]


async def overlay_screen(theme: str, floor: bool) -> tuple[pyte.Screen, Frame, int]:
    """The terminal as pyte sees it with the overlay open, the overlay's frame, and the
    screen row of the tree's selected row."""
    model = canned_model()
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False, theme=theme,
                   floor=floor)
    capture(app)
    async with app.run_test(headless=False, size=(W, H)) as pilot:
        await pilot.pause()
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        frame = app.screen.query_one("#detail-frame").region
        selected_row = app.railway.region.y + app.railway.row_of(app.railway.selected_id or "")
        await pilot.pause()
        screen = terminal_screen(app)
    return screen, (frame.x, frame.y, frame.right, frame.bottom), selected_row


def gutter_cells(frame: Frame) -> list[tuple[int, int]]:
    """Every cell left and right of the overlay, on every row the overlay spans."""
    x0, y0, x1, y1 = frame
    return [(x, y) for y in range(y0, y1) for x in [*range(0, x0), *range(x1, W)]]


NO_FLOOR = pytest.mark.xfail(
    strict=True, raises=AssertionError, reason="no floor: the black band is back"
)


@pytest.mark.parametrize(
    ("theme", "floor"),
    [
        ("legion-dark", True),
        ("legion-light", True),
        pytest.param("legion-dark", False, marks=NO_FLOOR),
        pytest.param("legion-light", False, marks=NO_FLOOR),
    ],
)
async def test_gutters_beside_the_overlay_carry_the_page_colour(theme: str, floor: bool) -> None:
    screen, frame, selected_row = await overlay_screen(theme, floor)
    x0, y0, x1, y1 = frame
    # the overlay is 75 % × 65 % and centred, so both gutters exist
    assert x1 - x0 == W * 3 // 4 and y1 - y0 == round(H * 0.65)
    assert x0 > 0 and x1 < W
    page = palette(theme).page.lstrip("#").lower()
    backgrounds = {screen.buffer[y][x].bg for x, y in gutter_cells(frame)}
    assert page and backgrounds == {page}, f"gutter backgrounds {backgrounds} != {{{page}}}"
    # the rest of the main screen too: every cell outside the overlay has the floor,
    # except the selected tree row (its highlight, dimmed by the overlay)
    outside = {
        screen.buffer[y][x].bg
        for y in range(H) for x in range(W)
        if not (x0 <= x < x1 and y0 <= y < y1) and y != selected_row
    }
    assert outside == {page}


async def test_ansi_theme_keeps_the_terminal_default_background() -> None:
    """legion-ansi is for terminals whose user chose their own colours: the page IS the
    terminal default there, on purpose (documented in legion_tui/themes)."""
    screen, frame, _row = await overlay_screen("legion-ansi", True)
    backgrounds = {screen.buffer[y][x].bg for x, y in gutter_cells(frame)}
    assert backgrounds == {"default"}
