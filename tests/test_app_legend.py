"""Every key and glyph is explained (issue 13): `?` lists every binding of the main
screen, the tree and the overlay, the filter words and the glyph legend; the header's
tooltip spells its glyph counts out; the galaxy says what it is."""

from __future__ import annotations

import pytest
from app_helpers import FakeOps, canned_model, fixed_clock
from textual.binding import Binding

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.widgets.galaxy import GALAXY_LABEL
from legion_tui.widgets.header import GLYPH_LEGEND
from legion_tui.widgets.help import SECTIONS, help_text
from legion_tui.widgets.overlay.detail import DetailScreen
from legion_tui.widgets.tree.railway import RailwayTree

pytestmark = pytest.mark.unit

# How the help spells a binding's key.
SHOWN = {
    "slash": "/", "question_mark": "?", "escape": "Esc", "enter": "Enter", "up": "↑",
    "down": "↓", "left": "←", "right": "→", "minus": "-", "plus": "+", "pageup": "PgUp",
    "pagedown": "PgDn", "home": "Home", "end": "End", "left_square_bracket": "[",
    "right_square_bracket": "]",
}  # fmt: skip


def keys_of(bindings: object) -> set[str]:
    out: set[str] = set()
    for binding in bindings:  # type: ignore[attr-defined]
        if isinstance(binding, Binding):
            out |= {SHOWN.get(k.strip(), k.strip()) for k in binding.key.split(",")}
    return out


def test_help_lists_every_key_the_filters_and_the_glyphs() -> None:
    text = help_text()
    keys = keys_of(LegionApp.BINDINGS) | keys_of(RailwayTree.BINDINGS)
    keys |= keys_of(DetailScreen.BINDINGS) - {str(i) for i in range(2, 7)}  # "1 … 6"
    missing = sorted(k for k in keys if k not in text)
    assert missing == []
    for word in (":live", ":waiting", ":stuck", ":failed", "Ctrl+Q", "double-click", "Tab"):
        assert word in text
    for glyph in ("●", "◐", "◆", "○", "✗", "◌", "galaxy"):
        assert f"\n  {glyph}" in text or f" {glyph} " in text


async def test_the_header_spells_out_its_glyphs_and_the_galaxy_says_what_it_is() -> None:
    model = canned_model()
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.header.tooltip == GLYPH_LEGEND
        for glyph in ("●", "○", "✗", "◌"):
            assert glyph in GLYPH_LEGEND
        top = app.galaxy.render_line(0).text
        assert top.startswith(GALAXY_LABEL[: app.galaxy.size.width].rstrip())
        await pilot.press("question_mark")
        await pilot.pause()
        assert "glyphs" in str(app.screen.query_one("Static").render())


@pytest.mark.parametrize("size", [(60, 30), (120, 40)])
async def test_every_help_line_fits_and_says_all_of_itself(size: tuple[int, int]) -> None:
    """Issue 33: at 120 columns and below, the help's longer lines were cut at the box's
    edge (the `s` line lost the receipts it names). Each description now wraps under its
    own column: every line fits, and every word of every description is there."""
    model = canned_model()
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    async with app.run_test(size=size) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        shown = app.screen.query_one("Static")
        lines = ["".join(s.text for s in shown.render_line(y)).rstrip()
                 for y in range(shown.region.height)]  # fmt: skip
        assert shown.region.right <= size[0] and shown.region.width < 130
        assert all(len(line) <= shown.region.width for line in lines)
        # (A word longer than the column, a path at 60 columns, is split, not cut.)
        everything = "".join("".join(lines).split())
        for _title, rows in SECTIONS:
            for _key, what in rows:
                assert "".join(what.split()) in everything, what
