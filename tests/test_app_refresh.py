"""What a tick or a model change repaints: nothing that did not change (SPEC §7.5)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_helpers import FakeOps, canned_app, canned_model, show_tab
from textual.widgets import Static

from legion_tui import receipts
from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.model import NodeStatus
from legion_tui.render.steps import DRAW_HZ
from legion_tui.session.progress import RateSegment
from legion_tui.widgets.overlay.detail import DetailScreen

pytestmark = pytest.mark.unit


async def test_a_flood_of_changes_never_touches_the_banner_unless_it_changes() -> None:
    app = canned_app(canned_model(interrupted=True))
    model = app.model
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        banner = app.main_screen.query_one("#banner", Static)
        updates: list[object] = []
        original = banner.update

        def spy(content: object = "", *, layout: bool = True) -> None:
            updates.append(content)
            original(content, layout=layout)  # type: ignore[arg-type]

        banner.update = spy  # type: ignore[method-assign]
        live = [v for v in model.nodes.values() if v.node.live]
        for i in range(20):  # streaming: progress moves, nobody is interrupted
            view = live[i % len(live)]
            model.set_progress(view.node.id, replace(view.progress, turns=view.progress.turns + 1))
            await pilot.pause()
        assert updates == []  # an update would be a layout pass of the whole screen
        worker = next(v for v in live if v.node.role == "worker")
        model.upsert(replace(worker.node, status=NodeStatus.RETIRED))
        model.mark_interrupted(worker.node.id)
        await pilot.pause()
        assert len(updates) == 1
        names = [v.node.name for v in model.nodes.values() if v.interrupted]
        assert updates[0] == receipts.interrupted_banner(names)
        assert worker.node.name in str(banner.render())


async def test_the_second_tick_slides_the_chart_only_while_it_shows_something() -> None:
    app = canned_app()
    model = app.model
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        before = app.chart.frames_rendered
        app.second_tick()
        await pilot.pause()
        assert app.chart.frames_rendered == before + 1  # live agents: the window slides
        for view in list(model.nodes.values()):
            if view.node.live:
                model.upsert(replace(view.node, status=NodeStatus.SETTLED))
        await pilot.pause()
        app.chart.renderer.stats = replace(app.chart.renderer.stats, peak=0.0)
        before = app.chart.frames_rendered
        app.second_tick()
        await pilot.pause()
        assert app.chart.frames_rendered == before  # nothing live, nothing shown: still


async def test_the_overlay_touches_a_tab_only_when_its_text_changes() -> None:
    app = canned_app()
    model = app.model
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        view = next(v for v in model.nodes.values() if v.node.live and v.node.role == "worker")
        app.railway.select(view.node.id)
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        for tab in ("tab-mail", "tab-events", "tab-transcript"):  # built when first shown
            await show_tab(pilot, screen, tab)
        updates: list[str] = []
        for selector in ("#detail-head", "#letters-counts", "#letter-body", "#events"):
            static = screen.query_one(selector, Static)
            original = static.update

            def spy(content: object = "", *, layout: bool = True, _s: str = selector,
                    _o: object = original) -> None:
                updates.append(_s)
                _o(content, layout=layout)  # type: ignore[operator]

            static.update = spy  # type: ignore[method-assign]
        for _ in range(5):  # the same tokens again: nothing on screen changes
            model.set_progress(view.node.id, replace(view.progress))
            await pilot.pause()
        assert updates == []
        tokens = replace(view.progress.tokens, output=view.progress.tokens.output + 5000)
        model.set_progress(view.node.id, replace(view.progress, tokens=tokens))
        await pilot.pause()
        assert updates == ["#detail-head"]  # the header's token count moved; mail did not


def on_a_clock_we_move() -> tuple[LegionApp, list[float]]:
    """The canned dashboard on a clock the test moves (`now[0]`), without timers."""
    model = canned_model()
    now = [model.clock()]
    model.clock = lambda: now[0]
    return make_app(model, FakeOps(model), clock=model.clock, timers=False), now


async def test_the_step_tick_draws_the_changes_the_chart_owes_and_only_then() -> None:
    app, now = on_a_clock_we_move()
    model = app.model
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        chart = app.chart
        before = chart.frame_lines()[0].text
        drawn = chart.renderer.frames
        view = next(v for v in model.nodes.values() if v.node.live)
        burst = RateSegment(now[0] - 5.0, now[0], 25_000)  # 5000 tok/s: a new peak
        series = [*view.progress.rate_series, burst]
        model.set_progress(view.node.id, replace(view.progress, rate_series=series))
        await pilot.pause()
        # The same step: its frame stands, the change is owed.
        assert chart.frame_lines()[0].text == before and chart.renderer.frames == drawn
        assert chart.owes_a_frame()
        now[0] += 1.0 / DRAW_HZ
        app.step_tick()
        head = chart.frame_lines()[0].text  # the repaint the tick asked for, if not yet done
        assert chart.renderer.frames == drawn + 1 and not chart.owes_a_frame()
        assert "peak 5.0k tok/s" in head
        rendered = chart.frames_rendered
        now[0] += 1.0 / DRAW_HZ
        app.step_tick()  # nothing owed: the chart is left alone (the galaxy may move)
        await pilot.pause()
        assert chart.frames_rendered == rendered


async def test_the_step_tick_draws_the_last_agent_ending_although_nothing_is_live() -> None:
    app, now = on_a_clock_we_move()
    model = app.model
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        galaxy = app.galaxy.renderer
        app.galaxy.frame_lines()  # the first frame, drawn if the first paint has not been
        drawn = galaxy.frames
        for view in list(model.nodes.values()):  # the legion ends within the step
            if view.node.live:
                model.upsert(replace(view.node, status=NodeStatus.SETTLED))
        await pilot.pause()
        assert galaxy.frames == drawn and app.galaxy.owes_a_frame()
        now[0] += 1.0 / DRAW_HZ
        app.step_tick()
        app.galaxy.frame_lines()  # the repaints the tick asked for, if not yet done
        app.chart.frame_lines()
        assert galaxy.frames == drawn + 1 and not app.galaxy.owes_a_frame()
        assert not app.chart.owes_a_frame()
        drawn = galaxy.frames
        now[0] += 1.0 / DRAW_HZ
        app.step_tick()  # nothing live, nothing owed: the sky holds still
        await pilot.pause()
        assert galaxy.frames == drawn


async def test_streaming_rows_repaint_as_runs_of_neighbours_not_one_span() -> None:
    from textual.geometry import Region

    app = canned_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        tree = app.railway
        regions: list[tuple[Region, ...]] = []
        tree.refresh = lambda *r, **_: regions.append(r)  # type: ignore[method-assign,assignment]
        rows = [row.node_id for row in tree.rows]
        assert len(rows) >= 10
        tree._refresh_rows([rows[5], rows[0], rows[1], rows[9], rows[2]])
        width = tree.size.width
        assert regions == [(Region(0, 0, width, 3), Region(0, 5, width, 1), Region(0, 9, width, 1))]
