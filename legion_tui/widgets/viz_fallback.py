"""Stand-ins for the galaxy and the rate chart, used only while the real widgets
(`widgets/galaxy.py`, `widgets/rate_chart.py`) are not in the tree. Same constructor and
methods, so the app composes either without knowing which it got.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from legion_tui.state import LegionModel
from legion_tui.widgets.paint import paint_for


class _Panel(Widget):
    TITLE = ""

    def __init__(self, model: LegionModel, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model

    def model_changed(self, dirty: frozenset[str]) -> None:
        self.refresh()

    def render_line(self, y: int) -> Strip:
        paint = paint_for(self.app.theme)
        width = self.size.width
        text = f" {self.TITLE}" if y == 0 else ""
        return Strip([Segment(text, paint.dim)]).crop(0, width).adjust_cell_length(
            width, paint.blank
        )


class GalaxyView(_Panel):
    TITLE = "galaxy"

    class StarClicked(Message):
        def __init__(self, node_id: str) -> None:
            super().__init__()
            self.node_id = node_id

    def set_selected(self, node_id: str | None) -> None:
        self.refresh()

    def tick(self) -> None:
        self.refresh()


class RateChart(_Panel):
    TITLE = "tok/s"

    def set_visible(self, ids: frozenset[str] | None) -> None:
        self.refresh()

    def toggle_window(self) -> None:
        self.refresh()
