"""RateChart: the stacked tok/s chart (SPEC §7.1), a Line API widget.

Only the nodes in the visible set contribute (`set_visible`: the tree's unfolded,
unfiltered nodes; None = all), so a folded subtree or a filtered-out node does not lift
the average. `toggle_window()` switches between the last 60 s and the whole run. Frames
are rendered once per paint from the model clock, as in `GalaxyView`; the app should
also call `tick()` now and then (~1 Hz) so the 60 s window slides while nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style

from legion_tui.render.chart import ChartRenderer
from legion_tui.render.feed import ChangeFeed
from legion_tui.widgets.galaxy import FrameWidget


class RateChart(FrameWidget):
    DEFAULT_CSS = """
    RateChart { width: 1fr; height: 1fr; }
    """

    def setup(self) -> None:
        self.renderer = ChartRenderer()
        self.steps = self.renderer.steps
        self._feed = ChangeFeed(self.model)  # which nodes changed between two frames
        self.visible_ids: frozenset[str] | None = None
        self.whole_run = False

    def set_visible(self, visible: frozenset[str] | None) -> None:
        """The node ids that contribute (None: every node)."""
        if visible != self.visible_ids:
            self.visible_ids = visible
            self.invalidate()

    def toggle_window(self) -> None:
        """Last 60 s ⇄ the whole run."""
        self.whole_run = not self.whole_run
        self.invalidate()

    def model_changed(self, dirty: frozenset[str]) -> None:
        # A change to a node outside the visible set cannot move the chart.
        if dirty and (self.visible_ids is None or not dirty.isdisjoint(self.visible_ids)):
            self.changed()

    def draw(self, cols: int, rows: int, styles: Sequence[Style]) -> list[list[Segment]]:
        return self.renderer.render(
            self.model,
            self.model.clock(),
            cols,
            rows,
            styles,
            visible=self.visible_ids,
            whole_run=self.whole_run,
            changed=self._feed.take(),
        )
