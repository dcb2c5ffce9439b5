"""Resize sweep (SPEC §7.1, §10): from 20×5 to 240×70 and back, no crash, no line wider
than the terminal, the right layout at each size, and the too-small notice below 40×10."""

from __future__ import annotations

import pytest
from app_helpers import FakeOps, canned_model, fixed_clock
from textual._compositor import LayoutUpdate
from textual.geometry import Region

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.widgets.keys import KeyHints
from legion_tui.widgets.layout import layout_classes

pytestmark = pytest.mark.unit

SIZES = [(20, 5), (39, 10), (40, 9), (40, 10), (46, 60), (59, 20), (60, 20), (80, 24),
         (99, 30), (100, 30), (120, 40), (149, 40), (150, 40), (200, 60), (240, 70),
         (80, 24), (20, 5), (120, 40)]


def composed_line_widths(app: LegionApp) -> set[int]:
    update = app.screen._compositor.render_update(
        full=True, screen_stack=app._background_screens
    )
    assert isinstance(update, LayoutUpdate)
    return {sum(strip.cell_length for strip in line) for line in update.strips}


def own_widget_overflow(app: LegionApp) -> list[str]:
    """Our Line API widgets must paint exactly their width, never more."""
    bad = []
    for widget in (app.header, app.railway, app.galaxy, app.chart):
        if not widget.display or not widget.size.area:
            continue
        for y in range(widget.size.height):
            length = widget.render_line(y).cell_length
            if length > widget.size.width:
                bad.append(f"{widget.id} line {y}: {length} > {widget.size.width}")
    return bad


async def test_resize_sweep_never_overflows_and_picks_the_layout() -> None:
    model = canned_model(interrupted=True)
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    async with app.run_test(size=(120, 40)) as pilot:
        for width, height in SIZES:
            await pilot.resize_terminal(width, height)
            await pilot.pause()
            assert app.size == (width, height)
            wanted = layout_classes(width, height)
            assert wanted <= app.main_screen.classes, (width, height, app.main_screen.classes)
            assert composed_line_widths(app) == {width}, (width, height)
            assert own_widget_overflow(app) == [], (width, height)
            notice = app.main_screen.query_one("#too-small")
            tiny = width < 40 or height < 10
            assert notice.display == tiny, (width, height)
            assert app.railway.display != tiny or app.railway.size.area == 0
            if not tiny:  # the key hints stay on the last row, never covered by a panel
                footer = app.main_screen.query_one(KeyHints)
                assert footer.region == Region(0, height - 1, width, 1), (width, height)


def test_layout_breakpoints() -> None:
    assert layout_classes(200, 60) == {"-wide"}
    assert layout_classes(150, 40) == {"-wide"}
    assert layout_classes(149, 40) == {"-medium"}
    assert layout_classes(100, 40) == {"-medium"}
    assert layout_classes(99, 30) == {"-narrow"}
    assert layout_classes(80, 24) == {"-narrow"}
    assert layout_classes(59, 20) == {"-compact"}
    assert layout_classes(46, 60) == {"-compact"}  # portrait
    assert layout_classes(39, 20) == {"-tiny"}
    assert layout_classes(80, 9) == {"-tiny"}
    assert layout_classes(120, 40, galaxy_full=True) == {"-galaxy-full"}
