"""The panels hand Textual their own strips (widgets/lines.py): same cells as Textual's
styles pass, no reference cycles, unchanged rows reuse their strip."""

from __future__ import annotations

import gc

import pytest
from app_helpers import big_model, canned_app
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from legion_tui.themes import THEME_ORDER
from legion_tui.widgets.lines import PanelStrip, direct_lines

pytestmark = pytest.mark.unit


def cells(strip: Strip, width: int) -> list[tuple[str, Style | None]]:
    out: list[tuple[str, Style | None]] = []
    for text, style, _ in strip.crop(0, width):
        out.extend((ch, style) for ch in text)
    return out


@pytest.mark.parametrize("theme", THEME_ORDER)
@pytest.mark.parametrize("size", [(200, 60), (120, 40), (80, 24)])
async def test_direct_lines_paint_the_cells_textuals_styles_pass_paints(
    theme: str, size: tuple[int, int]
) -> None:
    app = canned_app(big_model(200), theme=theme)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        panels: list[Widget] = [app.header, app.railway, app.galaxy, app.chart]
        checked = 0
        for widget in panels:
            if not widget.display or not widget.size.area:
                continue
            crop = widget.size.region
            ours = widget.render_lines(crop)
            widget._styles_cache.clear()
            textual = Widget.render_lines(widget, crop)  # Textual's own path
            # With a scrollbar the tree's last column belongs to the scrollbar.
            width = widget.scrollable_content_region.width
            assert len(ours) == len(textual) == crop.height
            for y, (mine, theirs) in enumerate(zip(ours, textual, strict=True)):
                assert cells(mine, width) == cells(theirs, width), (widget.id, y)
            checked += 1
        assert checked >= 3  # header, tree and at least the chart


async def test_a_styled_box_falls_back_to_textuals_path() -> None:
    app = canned_app(big_model(20))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        tree = app.railway
        crop = tree.size.region
        assert direct_lines(tree, crop, tree.render_line) is not None
        tree.styles.padding = (0, 1)
        await pilot.pause()
        assert direct_lines(tree, crop, tree.render_line) is None
        lines = tree.render_lines(tree.size.region)
        assert lines[0].text.startswith(" ")  # the padding Textual's path adds


def test_a_panel_strip_divided_at_its_own_length_leaves_no_cycle() -> None:
    gc.collect()
    gc.disable()
    try:
        strip = PanelStrip([Segment("abc"), Segment("def")], 6)
        assert strip.divide([6]) == [strip]
        assert strip.divide([3, 6])[0].text == "abc"  # other cuts: Textual's own divide
        del strip
        assert gc.collect() == 0
        # Textual's own Strip caches [self] on itself: cyclic, freed only by the collector.
        plain = Strip([Segment("abc")], 3)
        plain.divide([3])
        del plain
        assert gc.collect() > 0
    finally:
        gc.enable()


async def test_unchanged_galaxy_rows_keep_their_strip_objects() -> None:
    app = canned_app(big_model(200))
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        first = app.galaxy.frame_lines()
        app.galaxy.invalidate()  # a new frame of the same state and clock
        second = app.galaxy.frame_lines()
        assert app.galaxy.frames_rendered >= 2
        assert all(a is b for a, b in zip(first, second, strict=True))
        assert isinstance(second[0], PanelStrip)


async def test_a_full_frame_region_crop_is_honoured() -> None:
    app = canned_app(big_model(20))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        header = app.header
        full = header.render_lines(header.size.region)[0]
        part = header.render_lines(Region(2, 0, 10, 1))[0]
        assert part.cell_length == 10
        assert part.text == full.text[2:12]
