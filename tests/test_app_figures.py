"""Figures that agree with each other (issue 13): one "tok/s now" in the row, the overlay
header, the header and the chart; a stopped agent shows no live rate; the header follows
the filter as the chart does; elapsed and tool clocks fit the tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_helpers import NOW, FakeOps, canned_model, fixed_clock, write_run_files
from test_app_detail import open_detail
from textual.widgets import Static

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.render.rates import node_rate
from legion_tui.widgets.overlay.detail import DetailScreen

pytestmark = pytest.mark.unit

SIZE = (120, 40)


def build(run_dir: Path | None = None) -> tuple[LegionApp, FakeOps]:
    model = canned_model()
    ops = FakeOps(model)
    return make_app(model, ops, clock=fixed_clock, timers=False, run_dir=run_dir), ops


def row_text(app: LegionApp, node_id: str) -> str:
    row = app.railway.row_of(node_id)
    assert row is not None, f"{node_id} has no row"
    return app.railway.render_line(row).text


def head_shown(detail: DetailScreen) -> str:
    """The head line as the frame shows it: cut at the widget's width."""
    head = detail.query_one("#detail-head", Static)
    return str(head.render())[: head.size.width]


async def test_the_overlay_says_the_rows_tok_s_now_and_labels_the_average(
    tmp_path: Path,
) -> None:
    app, _ = build(write_run_files(tmp_path))
    async with app.run_test(size=(160, 40)) as pilot:  # room for every part of the head
        view = app.model.nodes["n3"]
        now_rate = f"{node_rate(view, NOW):.0f} tok/s"
        assert now_rate in row_text(app, "n3")
        detail = await open_detail(pilot, app, "n3")
        head = head_shown(detail)
        assert f"{now_rate} now" in head
        # The session's decode average is a different figure, and says so.
        assert f"decode avg {view.progress.tok_s:.0f} tok/s" in head
        assert head.count("tok/s") == 2


async def test_a_stopped_agent_shows_no_live_rate(tmp_path: Path) -> None:
    app, _ = build(write_run_files(tmp_path))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        detail = await open_detail(pilot, app, "n3")
        assert "tok/s now" in head_shown(detail)
        await pilot.press("x", "y")
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.model.flush()
        await pilot.pause()
        head = head_shown(detail)
        assert "retired" in head and "tok/s now" not in head
        assert "decode avg" in head  # what it did stays, labelled


async def test_the_overlay_header_keeps_the_cost_at_80x24(tmp_path: Path) -> None:
    app, _ = build(write_run_files(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        detail = await open_detail(pilot, app, "n11")  # scout-1: the one real (pi) agent
        cost = f"${app.model.nodes['n11'].progress.cost:.4f}"
        head = head_shown(detail)
        assert head.startswith("scout-1 · scout · pi · settled")
        assert cost in head


async def test_the_header_follows_the_filter_says_so_and_esc_clears_it() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        whole = app.header.render_line(0).text
        assert "●8 " in whole and "filter" not in whole  # glyph counts: room for the $
        await pilot.press("slash", *":failed", "enter")
        await pilot.pause()
        assert app.railway.filter_text == ":failed"
        assert not app.main_screen.filter_line.has_class("-open")
        line = app.header.render_line(0).text
        # root, lead-api and worker-2 are shown: two live rows, one failed, and their rate.
        rate = sum(node_rate(app.model.nodes[n], NOW) for n in ("n0", "n1", "n5"))
        assert "●2 ○0 ✗1 ◌0" in line
        assert f" · {rate:.0f} tok/s" in line
        assert line.rstrip().endswith("filter: :failed (3 of 12) · esc clears")
        await pilot.press("escape")
        await pilot.pause()
        assert app.railway.filter_text == "" and len(app.railway.rows) == 12
        assert app.header.render_line(0).text == whole


async def test_at_200x60_the_activity_gets_the_columns_and_a_cut_one_says_so() -> None:
    app, _ = build()
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        assert app.railway.size.width >= 200 - 64  # the panels stop growing at 64
        row = row_text(app, "n3")  # worker-1's stall marker is longer than any row
        assert "stuck 7m in bash — steer c" in row  # beside the $ column
        assert row.rstrip().endswith("…")


async def test_a_team_failing_in_its_phase_is_counted_in_the_headers_failed() -> None:
    from dataclasses import replace

    from legion_tui.model import NodeStatus

    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        assert " ✗1 " in app.header.render_line(0).text
        lead = app.model.nodes["n1"].node
        app.model.upsert(replace(lead, status=NodeStatus.SETTLED, phase="failed"))
        await pilot.pause()
        await pilot.pause()
        line = app.header.render_line(0).text
        assert " ○2 ✗2 " in line  # the team that failed its phase: ✗, not ○
        assert app.model.counts()["failed"] == 2  # the model's own count agrees
