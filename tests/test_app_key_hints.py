"""The key-hint row: ranked hints, `? Help` and `q Quit` at every width, clicks press keys."""

from __future__ import annotations

import pytest
from app_helpers import canned_app

from legion_tui.widgets.help import HelpScreen
from legion_tui.widgets.keys import HINTS, PALETTE_HINT, fit_hints

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("width", [40, 46, 60, 80, 100, 120, 200])
def test_help_and_quit_always_fit_and_the_row_never_overflows(width: int) -> None:
    hints, palette = fit_hints(width)
    labels = [h.label for h in hints]
    assert "Help" in labels and "Quit" in labels
    used = sum(h.width for h in hints) + (PALETTE_HINT.width if palette else 0)
    assert used <= width
    # Display order is kept, whatever was dropped.
    assert labels == [h.label for h in HINTS if h in hints]


def test_the_least_useful_hints_go_first() -> None:
    everything, palette = fit_hints(200)
    assert len(everything) == len(HINTS) and palette
    at_80 = [h.label for h in fit_hints(80)[0]]
    assert at_80 == ["Detail", "Stop", "Abort", "Steer", "Filter", "Galaxy", "Help", "Quit"]
    at_46 = [h.label for h in fit_hints(46)[0]]
    assert at_46 == ["Detail", "Stop", "Steer", "Help", "Quit"]


@pytest.mark.parametrize("size", [(80, 24), (46, 60), (200, 60)])
async def test_the_row_on_screen_shows_help_and_quit(size: tuple[int, int]) -> None:
    app = canned_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        line = app.key_hints.render_line(0)
        assert line.cell_length == size[0]
        assert "? Help" in line.text and "q Quit" in line.text


async def test_a_click_on_a_hint_presses_its_key() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = app.key_hints.render_line(0).text
        x = text.index("? Help") + 2
        await pilot.click("#keys", offset=(x, 0))
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
