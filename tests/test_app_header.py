"""The header bar: counts, live tok/s, and the stop hint (wide, narrow, gone)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_helpers import NOW, FakeOps, canned_model, fixed_clock
from textual import events
from textual.geometry import Region

from legion_tui import receipts
from legion_tui.costs import Spend
from legion_tui.dashboard.app import make_app
from legion_tui.model import NodeStatus
from legion_tui.render.rates import RATES_EVERY_S, node_rate, rates_instant
from legion_tui.state import NodeView
from legion_tui.widgets import header as header_module
from legion_tui.widgets.header import header_text, stop_hint

pytestmark = pytest.mark.unit


def test_stop_hint_is_wide_narrow_or_absent() -> None:
    # Led by the palette's key: "type this in ^p", not a usage line from an error.
    assert stop_hint(120, 60, live=3) == "^p /legion stop [--force] [name|all]"
    assert stop_hint(99, 40, live=3) == "^p /legion stop"
    assert stop_hint(120, 100, live=3) == "^p /legion stop"  # wide would not fit
    assert stop_hint(46, 31, live=3) == "/legion stop"  # the key goes first
    assert stop_hint(60, 50, live=3) == ""  # nothing fits beside the counts
    assert stop_hint(200, 10, live=0) == ""  # nothing live: no hint
    assert receipts.STOP_HINT_WIDE == "/legion stop [--force] [name|all]"
    assert receipts.STOP_HINT_NARROW == "/legion stop"


def test_header_text_shortens_with_the_station_glyphs() -> None:
    counts = {"live": 8, "settled": 2, "failed": 1, "retired": 1}
    wide = header_text("r-7f3a", "main", counts, 902.4, 120)
    assert wide == (" · r-7f3a · main · 8 live · 2 settled · 1 failed · 1 retired · 902 tok/s")
    assert header_text("r-7f3a", "main", counts, 902.4, 80) == (
        " · r-7f3a · main · ●8 ○2 ✗1 ◌1 · 902 tok/s"
    )
    assert header_text("r-7f3a", "main", counts, 902.4, 46) == " ●8 ○2 ✗1 ◌1 · 902 tok/s"


def test_the_runs_budget_shows_beside_its_spend_and_how_the_spend_is_known() -> None:
    """Issue 32: the limit was never shown before it tripped; a spend with estimated or
    unpriced calls in it says so."""
    counts = {"live": 2, "settled": 0, "failed": 0, "retired": 0}
    text = header_text("r", "main", counts, 10, 200, Spend(0.03, 1200), 1.0)
    assert text.endswith(" · $0.030 / $1.00 · 1.2k tok"), text
    text = header_text("r", "main", counts, 10, 200, Spend(0.03, 1200, estimated=1), 1.0)
    assert " · ~$0.030 / $1.00 · " in text, text
    text = header_text("r", "main", counts, 10, 200, Spend(0.03, 1200, unpriced=1))
    assert " · $0.030+? · " in text, text


async def test_header_total_is_the_sum_of_the_rows_and_the_hint_goes_when_all_end() -> None:
    model = canned_model()
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    async with app.run_test(size=(120, 40)) as pilot:
        line = app.header.render_line(0).text
        assert line.startswith(" LEGION · r-7f3a · main · ●8 ○2 ✗1 ◌1")  # glyphs: room for $
        assert line.rstrip().endswith(receipts.STOP_HINT_WIDE)
        rows_total = sum(
            float(app.railway.render_line(i).text.split(" tok/s")[0].split()[-1])
            for i, row in enumerate(app.railway.rows)
            if model.nodes[row.node_id].node.live
        )
        assert f"· {rows_total:.0f} tok/s" in line
        for view in list(model.nodes.values()):
            if view.node.live:
                model.upsert(replace(view.node, status=NodeStatus.SETTLED))
        await pilot.pause()
        await pilot.pause()
        line = app.header.render_line(0).text
        assert "●0 " in line and "/legion stop" not in line
        ticks: list[int] = []
        app.galaxy.tick = lambda: ticks.append(1)  # type: ignore[method-assign]
        await pilot.resize_terminal(160, 50)
        await pilot.pause()
        app.step_tick()
        assert ticks == []  # nothing live: the galaxy holds still, no CPU spent


async def test_mouse_wheel_scrolls_the_tree() -> None:
    from app_helpers import big_model

    model = big_model(300)
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    async with app.run_test(size=(120, 40)) as pilot:
        tree = app.railway
        assert tree.scroll_offset.y == 0
        for _ in range(3):
            tree.post_message(events.MouseScrollDown(tree, 5, 5, 0, 0, 0, False, False, False))
        await pilot.pause()
        assert tree.scroll_offset.y > 0
        assert tree.selected_id == "b0"  # scrolling does not move the selection


async def test_an_unknown_theme_name_falls_back_to_the_default() -> None:
    model = canned_model()
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False, theme="nope")
    async with app.run_test(size=(80, 24)):
        assert app.theme == "legion-dark" and app.railway.theme_name == "legion-dark"


def test_long_run_and_session_names_never_push_the_stop_hint_off_a_wide_header() -> None:
    counts = {"live": 18, "settled": 1, "failed": 1, "retired": 0}
    run, session = "20261129-151204-5d35f6", "demo-20261129-151204"  # the demo's names
    for width in (100, 120, 150):
        text = header_text(run, session, counts, 410.0, width)
        used = 7 + len(text)
        assert stop_hint(width, used, live=18) != "", width
        assert used + len(receipts.STOP_HINT_NARROW) + 2 <= width
    assert "18 live" in header_text(run, session, counts, 410.0, 200)  # words when they fit


async def test_a_render_textual_does_not_show_still_leaves_the_header_to_repaint() -> None:
    """Stop 41's CI: the header read ●2 ○0 for good over a settled worker's ○ row.
    Textual renders every widget a partial update's crop box overlaps but sends only the
    dirty lines; the header took such a render of the new counts for a repaint and asked
    for none. A change must ask for a repaint whatever was rendered meanwhile."""
    model = canned_model()
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    async with app.run_test(size=(120, 40)) as pilot:
        header = app.header
        assert header.render_line(0).text.startswith(" LEGION · r-7f3a · main · ●8 ○2")
        app.paused = True  # the app's own apply would repaint it: only the header decides
        live = next(view.node for view in model.nodes.values() if view.node.live)
        model.upsert(replace(live, status=NodeStatus.SETTLED))
        await pilot.pause()
        header.render_lines(Region(0, 0, 120, 1))  # as a partial update overlapping it
        asked: list[int] = []
        header.refresh = lambda *a, **k: asked.append(1) or header  # type: ignore[method-assign]
        header.model_changed()
        assert asked == [1]  # the new counts are asked for: ●7 ○3 reaches the screen
        header.model_changed()
        assert asked == [1]  # and only once while they hold


async def test_the_rate_is_summed_once_a_step_and_the_counts_at_every_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 35: Σ tok/s over every live node at each repaint (twice: key check, paint)
    was a fifth of a 1 000-agent host's CPU. The sum is taken once a second, at a chart
    step's start; a settle shows in the counts at once, and the sum follows it."""
    model = canned_model()
    clock = [NOW]
    model.clock = lambda: clock[0]
    app = make_app(model, FakeOps(model), clock=model.clock, timers=False)
    summed: list[str] = []

    def counted(view: NodeView, now: float) -> float:
        summed.append(view.node.id)
        assert now == rates_instant(clock[0])  # the step's start, not the repaint's
        return node_rate(view, now)

    async with app.run_test(size=(120, 40)) as pilot:
        monkeypatch.setattr(header_module, "instant_rate", counted)
        live = [view for view in model.nodes.values() if view.node.live]
        clock[0] = rates_instant(NOW) + RATES_EVERY_S  # a new instant
        for i in range(10):  # ten repaints within the second, the model changing at each
            clock[0] += 0.02
            model.set_note(live[0].node.id, f"note {i}")
            await pilot.pause()
            app.header.model_changed()
            app.header.render_line(0)
        assert len(summed) == len(live)  # one sum over the live nodes
        model.upsert(replace(live[0].node, status=NodeStatus.SETTLED))
        await pilot.pause()
        counts, _rate = app.header.summary()
        assert counts["live"] == len(live) - 1  # at once, within the step
        assert len(summed) == 2 * len(live) - 1  # and the sum again, without it
        clock[0] += 0.25  # a step later, within the second: the sum holds
        app.header.summary()
        assert len(summed) == 2 * len(live) - 1
        clock[0] += RATES_EVERY_S  # the next second
        app.header.summary()
        assert len(summed) == 3 * len(live) - 2
