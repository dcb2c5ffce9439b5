"""PanelStrip: a Strip whose caches are made on first use answers every operation as
Textual's own Strip does, and a strip the compositor only divides and renders makes none."""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import Monochrome
from textual.strip import Strip

from legion_tui.widgets.lines import PanelStrip

pytestmark = pytest.mark.unit

RED, BLUE, ITALIC = Style(color="red"), Style(color="blue", bold=True), Style(italic=True)


def pair() -> tuple[Strip, PanelStrip]:
    segments = [Segment("hello ", RED), Segment("wide world", BLUE), Segment("!", ITALIC)]
    return Strip(segments, 17), PanelStrip(segments, 17)


def test_every_operation_gives_what_a_strip_gives_twice_over() -> None:
    console = Console(width=40, color_system="truecolor", force_terminal=True)
    plain, panel = pair()
    for _ in range(2):  # the second time from the panel strip's caches
        assert list(panel) == list(plain) and panel.cell_length == plain.cell_length
        assert [list(s) for s in panel.divide([3, 9, 17])] == [
            list(s) for s in plain.divide([3, 9, 17])
        ]
        assert list(panel.crop(2, 12)) == list(plain.crop(2, 12))
        assert list(panel.apply_style(BLUE)) == list(plain.apply_style(BLUE))
        filtered = panel.apply_filter(Monochrome(), Color(0, 0, 0))
        assert list(filtered) == list(plain.apply_filter(Monochrome(), Color(0, 0, 0)))
        assert list(panel.adjust_cell_length(20, RED)) == list(plain.adjust_cell_length(20, RED))
        assert list(panel.crop_extend(1, 25, RED)) == list(plain.crop_extend(1, 25, RED))
        assert list(panel.apply_offsets(3, 4)) == list(plain.apply_offsets(3, 4))
        assert panel.render(console) == plain.render(console)


def test_a_strip_only_divided_whole_and_rendered_makes_no_cache() -> None:
    console = Console(width=40, color_system="truecolor", force_terminal=True)
    _plain, panel = pair()
    assert panel.divide([17]) == [panel]
    panel.render(console)
    assert panel._caches is None
    panel.crop(0, 5)
    assert panel._caches is not None and set(panel._caches) == {"crop"}
