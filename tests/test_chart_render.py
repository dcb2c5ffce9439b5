"""The chart frame: readout format, y labels, ⅛ glyphs, role bands, the visible set."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from render_helpers import T0, Clock, dark_styles, make_legion, node

from legion_tui.model import NodeStatus
from legion_tui.render.chart import (
    BAND_OF_ROLE,
    CHART_PHASE,
    READOUT_FORMAT,
    ChartRenderer,
    fmt_rate,
    nice_ceiling,
    readout,
)
from legion_tui.render.feed import ChangeFeed
from legion_tui.render.galaxy import GalaxyRenderer
from legion_tui.render.inks import BAND_INKS, Ink
from legion_tui.render.steps import DRAW_HZ, step_of
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.state import LegionModel

pytestmark = pytest.mark.unit


def text_rows(rows: list[list[object]]) -> list[str]:
    return ["".join(seg.text for seg in row) for row in rows]  # type: ignore[attr-defined]


def test_readout_format_is_pinned() -> None:
    assert READOUT_FORMAT == "now {now} · avg {avg} · peak {peak} tok/s"
    assert readout(123.4, 98.0, 410.2) == "now 123 · avg 98 · peak 410 tok/s"
    assert readout(12_500, 999.4, 1000) == "now 12.5k · avg 999 · peak 1.0k tok/s"
    # Narrow: the unit goes first, then the line is cut; never wider than asked.
    assert readout(123, 98, 410, 28) == "now 123 · avg 98 · peak 410"
    assert readout(123, 98, 410, 10) == "now 123 · "
    assert readout(0, 0, 0) == "no tokens in this window"  # idle: said, not "peak 0"


@pytest.mark.parametrize(
    ("peak", "top"),
    [(0, 10), (0.3, 0.5), (1, 1), (1.01, 2), (2.2, 2.5), (3, 5), (7, 10), (410, 500), (2600, 5000)],
)
def test_nice_round_y_max(peak: float, top: float) -> None:
    assert nice_ceiling(peak) == pytest.approx(top)


def test_fmt_rate() -> None:
    assert [fmt_rate(v) for v in (0, 9.6, 999.4, 999.6, 25_000)] == [
        "0",
        "10",
        "999",
        "1.0k",
        "25.0k",
    ]


def constant_model(rates: dict[str, tuple[str, float]], clock: Clock) -> LegionModel:
    """One node per entry: (role, tok/s) decoded steadily over the whole last 120 s."""
    model = LegionModel("run-1", "s", started_at=clock.now - 120, clock=clock)
    for nid, (role, rate) in rates.items():
        model.upsert(node(nid, None, role, NodeStatus.RUNNING))  # type: ignore[arg-type]
        seg = RateSegment(clock.now - 120, clock.now, round(rate * 120))
        model.set_progress(nid, SessionProgress(rate_series=[seg]))
    return model


def test_full_block_heights_and_eighths_are_exact() -> None:
    # 250 tok/s → nice max 250 (2.5 × 10²): 8 plot rows = 64 eighths; 250 fills them all.
    clock = Clock()
    model = constant_model({"a": ("worker", 250.0)}, clock)
    chart = ChartRenderer()
    rows = text_rows(chart.render(model, clock.now, 30, 9, dark_styles()))  # type: ignore[arg-type]
    assert chart.stats.y_max == 250
    plot = [r[6:] for r in rows[1:]]
    assert all(set(r) == {"█"} for r in plot)
    # 100 of 250 → 8 × 8 × 0.4 = 25.6 → 26 eighths: 3 full rows and a ▂ (2/8).
    model2 = constant_model({"a": ("worker", 100.0), "b": ("scout", 150.0)}, clock)
    rows2 = text_rows(
        chart.render(model2, clock.now, 30, 9, dark_styles(), visible=frozenset({"a"}))
    )  # type: ignore[arg-type]
    assert chart.stats.y_max == 100  # only `a` is visible: its own scale
    model3 = constant_model({"a": ("worker", 100.0), "b": ("root", 1.0)}, clock)
    rows3 = text_rows(chart.render(model3, clock.now, 30, 9, dark_styles()))  # type: ignore[arg-type]
    assert chart.stats.y_max == 200
    # 101 / 200 of 64 eighths = 32.32 → 32: exactly four full rows, nothing above.
    assert [set(r[6:]) for r in rows3[1:]] == [{" "}] * 4 + [{"█"}] * 4
    assert rows2[0].startswith("now ")


def test_bands_stack_by_role_in_palette_order() -> None:
    clock = Clock()
    model = constant_model({"w": ("worker", 100.0), "c": ("centurion", 100.0)}, clock)
    chart = ChartRenderer()
    chart.render(model, clock.now, 30, 9, dark_styles())
    column = chart.inks[:, 10].tolist()  # top row first
    assert BAND_OF_ROLE["centurion"] < BAND_OF_ROLE["worker"]  # centurion at the bottom
    assert column == [BAND_INKS[BAND_OF_ROLE["worker"]]] * 4 + [BAND_INKS[0]] * 4
    assert Ink.BLANK not in column


def test_hidden_nodes_do_not_lift_now_avg_or_peak() -> None:
    clock = Clock()
    model = constant_model({"a": ("worker", 100.0), "ghost": ("worker", 900.0)}, clock)
    chart = ChartRenderer()
    chart.render(model, clock.now, 60, 10, dark_styles())
    everyone = chart.stats
    chart.render(model, clock.now, 60, 10, dark_styles(), visible=frozenset({"a"}))
    alone = chart.stats
    assert everyone.avg == pytest.approx(1000, rel=1e-6)
    assert alone.avg == pytest.approx(100, rel=1e-6)
    assert alone.peak == pytest.approx(100, rel=1e-6)
    assert alone.now == pytest.approx(100, rel=1e-6)
    assert everyone.now == pytest.approx(1000, rel=1e-6)


def test_avg_covers_only_the_time_since_the_run_started() -> None:
    clock = Clock(T0 + 20)
    model = LegionModel("run-1", "s", started_at=T0, clock=clock)
    model.upsert(node("a", None, "worker", NodeStatus.RUNNING))
    model.set_progress("a", SessionProgress(rate_series=[RateSegment(T0, T0 + 20, 2000)]))
    chart = ChartRenderer()
    chart.render(model, clock.now, 60, 10, dark_styles())
    assert chart.stats.avg == pytest.approx(100, rel=1e-6)  # not diluted by 40 empty seconds
    chart.render(model, clock.now, 60, 10, dark_styles(), whole_run=True)
    assert chart.stats.avg == pytest.approx(100, rel=1e-6)


def test_whole_run_window_reaches_back_to_the_run_start() -> None:
    clock = Clock(T0 + 600)
    model = LegionModel("run-1", "s", started_at=T0, clock=clock)
    model.upsert(node("a", None, "worker", NodeStatus.SETTLED))
    model.set_progress("a", SessionProgress(rate_series=[RateSegment(T0, T0 + 60, 6000)]))
    chart = ChartRenderer()
    chart.render(model, clock.now, 60, 10, dark_styles())
    assert chart.stats.peak == 0  # nothing in the last 60 s
    rows = text_rows(chart.render(model, clock.now, 60, 10, dark_styles(), whole_run=True))  # type: ignore[arg-type]
    assert chart.stats.peak == pytest.approx(100, rel=1e-6)
    assert rows[0].endswith("whole run")


@pytest.mark.parametrize("size", [(1, 1), (5, 1), (13, 2), (14, 3), (30, 2), (200, 60), (240, 70)])
def test_rows_are_exactly_the_requested_width(size: tuple[int, int]) -> None:
    clock = Clock()
    model = make_legion(clock, centurions=4, workers=5)
    cols, n_rows = size
    rows = ChartRenderer().render(model, clock.now, cols, n_rows, dark_styles())
    assert [sum(len(s.text) for s in r) for r in rows] == [cols] * n_rows


def test_y_labels_show_the_max_the_middle_and_zero() -> None:
    clock = Clock()
    model = constant_model({"a": ("worker", 410.0)}, clock)
    rows = text_rows(ChartRenderer().render(model, clock.now, 40, 11, dark_styles()))  # type: ignore[arg-type]
    labels = [r[:6] for r in rows[1:]]
    assert labels[0] == "  500 " and labels[-1] == "    0 "
    assert labels[5] == "  250 "
    assert all(lab.strip() == "" for i, lab in enumerate(labels) if i not in (0, 5, 9))


def test_avg_never_exceeds_peak_when_history_predates_the_run() -> None:
    # A resumed (or demo) agent brings tokens from before the run started: they are in
    # the window, so the time they cover must be too, or avg reads above peak.
    clock = Clock(T0 + 5)
    model = LegionModel("run-1", "s", started_at=T0, clock=clock)
    model.upsert(node("a", None, "worker", NodeStatus.RUNNING))
    model.set_progress("a", SessionProgress(rate_series=[RateSegment(T0 - 40, T0 + 5, 4500)]))
    chart = ChartRenderer()
    chart.render(model, clock.now, 60, 10, dark_styles())
    assert chart.stats.avg <= chart.stats.peak + 1e-9
    assert chart.stats.avg == pytest.approx(100, rel=0.05)


def test_one_frame_per_step_and_what_came_later_is_drawn_by_the_next_step() -> None:
    clock = Clock()
    model = constant_model({"a": ("worker", 100.0), "b": ("scout", 100.0)}, clock)
    feed = ChangeFeed(model)
    feed.take()
    chart = ChartRenderer()
    step = step_of(clock.now, CHART_PHASE)
    first = chart.render(model, step, 60, 10, dark_styles(), changed=frozenset())
    assert not chart.steps.owes()
    # Later in the step: "a" doubles its rate for the last 10 s. The step's frame stands.
    view = model.nodes["a"]
    burst = RateSegment(step - 10.0, step, 2000)
    model.set_progress("a", replace(view.progress, rate_series=[*view.progress.rate_series, burst]))
    model.flush()
    later = step + 0.5 / DRAW_HZ
    assert chart.render(model, later, 60, 10, dark_styles(), changed=feed.take()) is first
    assert chart.frames == 1 and chart.steps.owes()
    # The next step draws it, as a renderer that never skipped a frame would.
    next_step = step + 1.0 / DRAW_HZ
    got = text_rows(chart.render(model, next_step, 60, 10, dark_styles(), changed=feed.take()))
    want = text_rows(ChartRenderer().render(model, next_step, 60, 10, dark_styles()))
    assert got == want and got != text_rows(first)
    assert chart.frames == 2 and not chart.steps.owes()


def test_a_new_size_visible_set_or_window_is_drawn_within_the_step() -> None:
    clock = Clock()
    model = constant_model({"a": ("worker", 100.0), "b": ("scout", 300.0)}, clock)
    chart = ChartRenderer()
    step = step_of(clock.now, CHART_PHASE)
    assert "peak 400 tok/s" in text_rows(chart.render(model, step, 60, 10, dark_styles()))[0]
    later = step + 0.5 / DRAW_HZ
    narrower = text_rows(chart.render(model, later, 50, 10, dark_styles()))
    assert {len(row) for row in narrower} == {50}
    only_a = text_rows(chart.render(model, later, 60, 10, dark_styles(), visible=frozenset("a")))
    assert "peak 100 tok/s" in only_a[0]
    whole = text_rows(chart.render(model, later, 60, 10, dark_styles(), whole_run=True))
    assert whole[0].endswith("whole run")
    assert chart.frames == 4


def test_at_30_frames_a_second_the_chart_and_the_galaxy_never_draw_in_one_frame() -> None:
    clock = Clock()
    model = make_legion(clock)
    chart, galaxy = ChartRenderer(), GalaxyRenderer()
    chart.render(model, clock.now, 60, 10, dark_styles())  # the first frame: both draw
    galaxy.render(model, clock.now, 60, 20, dark_styles())
    both = 0
    for frame in range(1, 91):  # 3 s: twelve steps of each
        now = clock.now + frame / 30.0
        before = (chart.frames, galaxy.frames)
        chart.render(model, now, 60, 10, dark_styles())
        galaxy.render(model, now, 60, 20, dark_styles())
        both += chart.frames > before[0] and galaxy.frames > before[1]
    assert both == 0 and chart.frames == galaxy.frames == 13


@pytest.mark.parametrize("seed", range(1, 6))
def test_a_window_after_every_segment_ended_is_idle_not_a_block_of_rounding(seed: int) -> None:
    """The demo's last minute: every agent's segments ended before the 60 s window. The
    buckets' sums left ~1e-12 tok/s in them (settled agents' ramps against live ones'),
    drawn as a full chart under a y axis of 1e-11 labelled 0, `now 0 · avg 0 · peak 0`
    over it. Twenty agents, a third settled, uneven segments from a seeded generator."""
    draw = random.Random(seed)
    clock = Clock()
    model = LegionModel("run-1", "s", started_at=clock.now - 300, clock=clock)
    for i in range(20):
        status = NodeStatus.SETTLED if i % 3 == 0 else NodeStatus.RUNNING
        model.upsert(node(f"n{i}", None, "worker", status))
        t, segments = clock.now - 300 + draw.random() * 50, []
        while (span := draw.random() * 5 + 0.01) and t + span < clock.now - 61:
            segments.append(RateSegment(t, t + span, draw.randint(1, 900)))
            t += span + draw.random() * 3
        model.set_progress(f"n{i}", SessionProgress(rate_series=segments))
    chart = ChartRenderer()
    rows = text_rows(chart.render(model, clock.now, 60, 14, dark_styles()))  # type: ignore[arg-type]
    assert (chart.stats.peak, chart.stats.avg, chart.stats.y_max) == (0.0, 0.0, 10.0)
    assert rows[0].startswith("no tokens in this window")
    assert not any(set(r) & set("▁▂▃▄▅▆▇█") for r in rows[1:])
