"""GalaxyView in a real Textual app: sizes, once-per-frame rendering, clicks, themes."""

from __future__ import annotations

import pytest
from render_helpers import Clock, OneWidgetApp, make_legion
from rich.color import Color
from textual.strip import Strip

from legion_tui.render.steps import DRAW_HZ
from legion_tui.themes import palette
from legion_tui.widgets.galaxy import GalaxyView

pytestmark = pytest.mark.unit

SIZES = [(1, 1), (2, 1), (1, 3), (7, 2), (20, 5), (40, 10), (80, 24), (133, 41), (240, 70)]


def widths(lines: list[Strip]) -> list[int]:
    return [sum(len(seg.text) for seg in line) for line in lines]


@pytest.mark.parametrize("size", SIZES)
async def test_every_line_is_exactly_the_widget_width(size: tuple[int, int]) -> None:
    clock = Clock()
    view = GalaxyView(make_legion(clock, centurions=5, workers=6), id="galaxy")
    async with OneWidgetApp(view).run_test(size=size) as pilot:
        await pilot.pause()
        lines = view.frame_lines()
        assert view.size.width == size[0]
        assert len(lines) == size[1]
        assert widths(lines) == [size[0]] * size[1]
        assert all(line.cell_length == size[0] for line in lines)


async def test_resize_to_20x5_and_back_never_overflows() -> None:
    clock = Clock()
    view = GalaxyView(make_legion(clock), id="galaxy")
    async with OneWidgetApp(view).run_test(size=(120, 40)) as pilot:
        for w, h in ((20, 5), (120, 40), (0, 0), (3, 1), (120, 40)):
            await pilot.resize_terminal(w, h)
            await pilot.pause()
            lines = [view.render_line(y) for y in range(view.size.height)]
            assert all(width <= view.size.width for width in widths(lines))
            assert view.size == (w, h) or (w, h) == (0, 0)


async def test_one_render_per_frame_however_many_lines_paint() -> None:
    clock = Clock()
    view = GalaxyView(make_legion(clock), id="galaxy")
    async with OneWidgetApp(view).run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        rendered = view.frames_rendered
        first = [view.render_line(y).text for y in range(20)]
        assert view.frames_rendered == rendered  # cached strips, no re-render
        clock.now += 10.0
        view.tick()
        moved = [view.render_line(y).text for y in range(20)]
        assert view.frames_rendered == rendered + 1
        assert moved != first


async def test_clicking_a_star_posts_star_clicked_with_the_nearest_star() -> None:
    clock = Clock()
    view = GalaxyView(make_legion(clock), id="galaxy")
    seen: list[str] = []
    sightings: set[int] = set()

    def collect(message: object) -> None:
        # The hook sees a message once per node it bubbles through: count it once.
        if isinstance(message, GalaxyView.StarClicked) and id(message) not in sightings:
            sightings.add(id(message))
            seen.append(message.node_id)

    app = OneWidgetApp(view)
    async with app.run_test(size=(80, 24), message_hook=collect) as pilot:
        await pilot.pause()
        view.frame_lines()
        k = view.renderer.star_ids.index("c1")
        col, row = int(view.renderer.star_x[k]) >> 1, int(view.renderer.star_y[k]) >> 2
        await pilot.click(GalaxyView, offset=(col, row))
        await pilot.pause()
    assert seen == ["c1"]


async def test_set_selected_invalidates_the_frame_and_model_changes_the_next_steps() -> None:
    clock = Clock()
    model = make_legion(clock)
    view = GalaxyView(model, id="galaxy")
    async with OneWidgetApp(view).run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        view.frame_lines()
        n = view.frames_rendered
        view.set_selected("c0")
        view.frame_lines()
        view.set_selected("c0")  # no change, no new frame
        view.frame_lines()
        view.model_changed(frozenset())
        view.frame_lines()
        assert view.frames_rendered == n + 1 and not view.owes_a_frame()
        view.model_changed(frozenset({"c0w1"}))
        view.frame_lines()  # this step's frame stands: the change is the next step's
        assert view.frames_rendered == n + 1 and view.owes_a_frame()
        clock.now += 1.0 / DRAW_HZ
        view.tick()  # the app's step tick
        view.frame_lines()
        assert view.frames_rendered == n + 2 and not view.owes_a_frame()


@pytest.mark.parametrize("theme", ["legion-dark", "legion-light"])
async def test_every_cell_carries_the_page_background(theme: str) -> None:
    clock = Clock()
    view = GalaxyView(make_legion(clock), id="galaxy")
    async with OneWidgetApp(view, theme=theme).run_test(size=(50, 16)) as pilot:
        await pilot.pause()
        page = Color.parse(palette(theme).page)
        for line in view.frame_lines():
            for seg in line:
                assert seg.style is not None and seg.style.bgcolor == page


def first_bg(view: GalaxyView) -> Color | None:
    """Background of the first segment of the first line of the current frame."""
    seg = next(iter(view.frame_lines()[0]))
    return seg.style.bgcolor if seg.style is not None else None


async def test_theme_change_restyles_and_ansi_keeps_the_terminal_default() -> None:
    clock = Clock()
    view = GalaxyView(make_legion(clock), id="galaxy")
    app = OneWidgetApp(view)
    async with app.run_test(size=(50, 16)) as pilot:
        await pilot.pause()
        dark = Color.parse(palette("legion-dark").page)
        assert first_bg(view) == dark
        app.theme = "legion-light"
        await pilot.pause()
        assert view.palette.name == "legion-light"
        light = Color.parse(palette("legion-light").page)
        assert first_bg(view) == light
        # The ANSI theme paints on the terminal's own default background.
        app.theme = "legion-ansi"
        await pilot.pause()
        assert view.palette.name == "legion-ansi"
        bg = first_bg(view)
        assert bg is not None and bg.is_default


async def test_a_tick_paints_every_line_from_one_render() -> None:
    # Through Textual's own compositor: a tick repaints all 20 lines, rendering once.
    clock = Clock()
    view = GalaxyView(make_legion(clock), id="galaxy")
    async with OneWidgetApp(view).run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        n = view.frames_rendered
        before = [view.render_line(y).text for y in range(20)]
        for _ in range(3):
            clock.now += 7.0
            view.tick()
            await pilot.pause()
        assert view.frames_rendered == n + 3
        assert [view.render_line(y).text for y in range(20)] != before
        assert view.frames_rendered == n + 3
