"""RateChart in a real Textual app: sizes, window toggle, visible set, frame caching."""

from __future__ import annotations

import pytest
from render_helpers import Clock, OneWidgetApp, make_legion
from textual.strip import Strip

from legion_tui.render.steps import DRAW_HZ
from legion_tui.widgets.rate_chart import RateChart

pytestmark = pytest.mark.unit

SIZES = [(1, 1), (3, 2), (12, 3), (20, 5), (40, 10), (80, 24), (200, 60), (240, 70)]


def widths(lines: list[Strip]) -> list[int]:
    return [sum(len(seg.text) for seg in line) for line in lines]


@pytest.mark.parametrize("size", SIZES)
async def test_every_line_is_exactly_the_widget_width(size: tuple[int, int]) -> None:
    clock = Clock()
    chart = RateChart(make_legion(clock, centurions=4, workers=6), id="chart")
    async with OneWidgetApp(chart).run_test(size=size) as pilot:
        await pilot.pause()
        lines = chart.frame_lines()
        assert len(lines) == size[1]
        assert widths(lines) == [size[0]] * size[1]


async def test_resize_to_20x5_and_back_never_overflows() -> None:
    clock = Clock()
    chart = RateChart(make_legion(clock), id="chart")
    async with OneWidgetApp(chart).run_test(size=(120, 40)) as pilot:
        for w, h in ((20, 5), (120, 40), (2, 1), (120, 40)):
            await pilot.resize_terminal(w, h)
            await pilot.pause()
            lines = [chart.render_line(y) for y in range(chart.size.height)]
            assert widths(lines) == [w] * h


async def test_toggle_window_switches_between_60_s_and_the_whole_run() -> None:
    clock = Clock()
    chart = RateChart(make_legion(clock), id="chart")
    async with OneWidgetApp(chart).run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        assert chart.frame_lines()[0].text.endswith("last 60 s")
        chart.toggle_window()
        assert chart.frame_lines()[0].text.endswith("whole run")
        chart.toggle_window()
        assert chart.frame_lines()[0].text.endswith("last 60 s")


async def test_visible_set_drives_the_readout_and_hidden_changes_do_not_repaint() -> None:
    clock = Clock()
    model = make_legion(clock, centurions=2, workers=3)
    chart = RateChart(model, id="chart")
    async with OneWidgetApp(chart).run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        everyone = chart.frame_lines()[0].text
        chart.set_visible(frozenset({"root"}))
        only_root = chart.frame_lines()[0].text
        assert only_root != everyone
        # root decoded 20 tok/s for the last 30 s of the 60 s window.
        assert only_root.startswith("now 20 · avg 10 · peak 20 tok/s")
        n = chart.frames_rendered
        chart.model_changed(frozenset({"c0w0"}))  # hidden: cannot move the chart
        chart.frame_lines()
        assert chart.frames_rendered == n and not chart.owes_a_frame()
        chart.model_changed(frozenset({"root", "c0w0"}))
        chart.frame_lines()  # this step's frame stands: the change is the next step's
        assert chart.frames_rendered == n and chart.owes_a_frame()
        chart.set_visible(None)  # drawn at once
        assert chart.frame_lines()[0].text == everyone and not chart.owes_a_frame()
        chart.model_changed(frozenset({"root"}))
        assert chart.owes_a_frame()
        clock.now += 1.0 / DRAW_HZ
        chart.tick()  # what the app's step tick does for a chart that owes a frame
        chart.frame_lines()
        assert chart.frames_rendered == n + 2 and not chart.owes_a_frame()


async def test_tick_renders_one_frame_for_all_lines() -> None:
    clock = Clock()
    chart = RateChart(make_legion(clock), id="chart")
    async with OneWidgetApp(chart).run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        n = chart.frames_rendered
        clock.now += 5
        chart.tick()
        for y in range(20):
            chart.render_line(y)
        assert chart.frames_rendered == n + 1
