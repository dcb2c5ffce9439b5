"""The dim column-header row above the railway tree: name · role · phase · elapsed ·
tok/s · out · $ · activity, cut to the tree's own column plan (a dropped column drops its
title too), so each title sits over its column at every width."""

from __future__ import annotations

from rich.segment import Segment
from textual.geometry import Region
from textual.strip import Strip

from legion_tui.widgets.lines import PanelStrip, direct_lines
from legion_tui.widgets.paint import FollowsTheme, paint_for
from legion_tui.widgets.tree.railway import Columns, RailwayTree


def header_text(cols: Columns, width: int) -> str:
    """The titles padded exactly as `RailwayTree._paint_row` pads the cells below."""
    parts = ["name".ljust(cols.label)[: cols.label]]
    if cols.role:
        parts.append("role".ljust(cols.role))
    if cols.phase:
        parts.append("phase"[: cols.phase - 1].ljust(cols.phase))
    if cols.elapsed:
        parts.append("elapsed".rjust(cols.elapsed - 1) + " ")
    if cols.rate:
        parts.append("tok/s".rjust(cols.rate - 1) + " ")
    if cols.tokens:
        parts.append("out".rjust(cols.tokens - 1) + " ")
    if cols.cost:
        parts.append("$".rjust(cols.cost - 1) + " ")
    text = "".join(parts)
    text += " activity" if len(text) + 9 <= width else ""
    return text[:width].ljust(width)


class TreeHeader(FollowsTheme):
    DEFAULT_CSS = """
    TreeHeader { height: 1; }
    """

    def __init__(self, railway: RailwayTree, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.railway = railway
        self._strip: tuple[tuple[object, ...], Strip] | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        strips = direct_lines(self, crop, self.render_line)
        return super().render_lines(crop) if strips is None else strips

    def render_line(self, y: int) -> Strip:
        tree = self.railway
        width = self.size.width
        cols = tree.columns()
        key = (width, cols, self.theme_name, tree.floor)
        if self._strip is not None and self._strip[0] == key:
            return self._strip[1]
        paint = paint_for(self.theme_name, tree.floor)
        strip = PanelStrip([Segment(header_text(cols, width), paint.dim)], width)
        self._strip = (key, strip)
        return strip
