"""The tree's scrollbar reads as a scrollbar (issue 13): at 80×24 Textual's thumb, in
an olive chart-like colour with sub-cell ends (▁▂▅), looked like debris of the tok/s
chart under it. Now: a grey thumb of whole cells on a track a shade off the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_helpers import (
    FakeOps,
    big_model,
    canned_model,
    capture,
    fixed_clock,
    terminal_screen,
    write_run_files,
)
from supervisor_helpers import until

from legion_tui.dashboard.app import make_app
from legion_tui.widgets.overlay.transcript_view import TranscriptView

pytestmark = pytest.mark.unit

BLOCKS = set("▁▂▃▄▅▆▇█")


async def test_the_tree_scrollbar_is_whole_grey_cells_on_a_visible_track() -> None:
    model = big_model(60)
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    capture(app)
    async with app.run_test(headless=False, size=(80, 24)) as pilot:
        await pilot.pause()
        tree = app.railway.region
        assert app.railway.max_scroll_y > 0  # 60 rows in a short tree: it scrolls
        screen = terminal_screen(app)
    x = tree.right - 1
    cells = [screen.buffer[y][x] for y in range(tree.y, tree.bottom)]
    assert not {c.data for c in cells} & BLOCKS, "a partial-block glyph in the scrollbar"
    thumb = [c for c in cells if c.reverse]
    track = [c for c in cells if not c.reverse]
    assert thumb and track
    page = screen.buffer[tree.y][0].bg
    assert {c.bg for c in track} == {track[0].bg} and track[0].bg != page  # a visible track
    r, g, b = (int(thumb[0].fg[i:i + 2], 16) for i in (0, 2, 4))
    assert max(r, g, b) - min(r, g, b) < 24, f"the thumb is not grey: #{thumb[0].fg}"


async def test_the_overlays_scrollbars_are_whole_cells_too(tmp_path: Path) -> None:
    """The transcript's scrollbar showed the same ▂▂ debris at the frame's edge."""
    run_dir = write_run_files(tmp_path)
    with (run_dir / "sessions" / "n2.jsonl").open("a", encoding="utf-8") as fh:
        for i in range(60):  # more entries than the tab has rows: its scrollbar shows
            fh.write(json.dumps({
                "type": "message", "id": f"x{i}", "parentId": None,
                "timestamp": "2026-09-21T12:00:05.000Z",
                "message": {"role": "assistant", "content": [{"type": "text", "text": f"t{i}"}],
                            "usage": {"input": 1, "output": 1}, "stopReason": "stop"},
            }) + "\n")  # fmt: skip
    model = canned_model()
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False, run_dir=run_dir)
    capture(app)
    async with app.run_test(headless=False, size=(120, 40)) as pilot:
        app.railway.select("n2")
        await pilot.press("o")
        view = app.screen.query_one(TranscriptView)
        await until(lambda: view.max_scroll_y > 0, what="the transcript to outgrow its tab")
        await pilot.pause()
        region = view.region
        screen = terminal_screen(app)
    bar = [screen.buffer[y][x].data for y in range(region.y, region.bottom)
           for x in (region.right - 2, region.right - 1)]
    assert not set(bar) & BLOCKS, "a partial-block glyph in the transcript's scrollbar"
