"""GalaxyView: the braille star map of the legion (SPEC §7.1), a Line API widget.

The widget only schedules frames: `tick()` (the app's timer; no timer in here, so tests
stay deterministic), `model_changed()`, `set_selected()`, a resize or a theme change mark
the frame stale; the first `render_line` after that renders the whole frame once into
the renderer's buffers and caches one Strip per row, and every other `render_line` of the
frame is a list lookup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip

from legion_tui.render.feed import ChangeFeed
from legion_tui.render.galaxy import GalaxyRenderer
from legion_tui.render.inks import STYLES, Ink, Palette
from legion_tui.render.steps import StepFrames
from legion_tui.state import LegionModel
from legion_tui.themes import palette
from legion_tui.widgets.lines import PanelStrip, direct_lines
from legion_tui.widgets.paint import FollowsTheme


class FrameWidget(FollowsTheme):
    """A Line API widget whose content is one whole-frame render, cached per frame.

    Subclasses implement `draw(cols, rows, styles)`; the base keeps the strips, the
    palette (following `App.theme`) and the staleness flag.
    """

    DEFAULT_CSS = """
    FrameWidget { width: 1fr; height: 1fr; }
    """

    def __init__(
        self,
        model: LegionModel,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.model = model
        self.steps: StepFrames | None = None  # the renderer's, if it draws once per step
        self.setup()
        self._strips: list[Strip] = []
        self._lines: list[list[Segment]] = []  # the segment lists behind `_strips`
        self._frame_size: tuple[int, int] = (-1, -1)
        self._stale = True
        self.palette: Palette = palette(self.theme_name)
        self.frames_rendered = 0

    def setup(self) -> None:
        """The subclass's own state (its renderer, and `steps` if it draws one frame per
        step); called once from `__init__`."""

    # ----- scheduling ------------------------------------------------------------------
    def theme_changed(self) -> None:
        self.palette = palette(self.theme_name)
        self.invalidate()

    def invalidate(self) -> None:
        """The next paint renders a new frame (once, however many lines it paints)."""
        self._stale = True
        self.refresh()

    def tick(self) -> None:
        """Advance to the model clock's current time (the app calls this on its timer)."""
        self.invalidate()

    def model_changed(self, dirty: frozenset[str]) -> None:
        if dirty:
            self.changed()

    def changed(self) -> None:
        """The model moved under the frame: repaint, unless the frame on screen is this
        step's — its renderer would hand it back — and then the next step draws the
        change (the app's step tick). Spares a streaming legion's repaints the panel."""
        steps = self.steps
        if steps is not None and steps.holds(self.model.clock()):
            steps.owe()
        else:
            self.invalidate()

    def owes_a_frame(self) -> bool:
        """Changes came after the frame on screen (the app's step tick draws them)."""
        return self.steps is not None and self.steps.owes()

    # ----- painting --------------------------------------------------------------------
    @property
    def styles_table(self) -> Sequence[Style]:
        return STYLES.table(self.palette)

    def draw(self, cols: int, rows: int, styles: Sequence[Style]) -> list[list[Segment]]:
        raise NotImplementedError

    def _render_frame(self, cols: int, rows: int) -> None:
        styles = self.styles_table
        lines = self.draw(cols, rows, styles)
        # The renderers hand back the very same segment list for a row that did not
        # change (blank sky, the chart's settled part): its strip — and the ANSI Textual
        # cached on it — is reused rather than rebuilt.
        previous = dict(zip(map(id, self._lines), self._strips, strict=True))
        self._strips = [
            previous.get(id(segments)) or PanelStrip(segments, cell_length=cols)
            for segments in lines
        ]
        self._lines = lines
        self._frame_size = (cols, rows)
        self._stale = False
        self.frames_rendered += 1

    def render_lines(self, crop: Region) -> list[Strip]:
        strips = self._current_frame()
        blank = Strip.blank(self._frame_size[0], self.styles_table[Ink.BLANK])

        def line(y: int) -> Strip:
            return strips[y] if 0 <= y < len(strips) else blank

        direct = direct_lines(self, crop, line)
        return super().render_lines(crop) if direct is None else direct

    def render_line(self, y: int) -> Strip:
        strips = self._current_frame()
        if 0 <= y < len(strips):
            return strips[y]
        return Strip.blank(self._frame_size[0], self.styles_table[Ink.BLANK])

    def _current_frame(self) -> list[Strip]:
        """This paint's strips, rendering the frame first if it is stale or resized."""
        size = self.size
        cols, rows = size.width, size.height
        if self._stale or self._frame_size != (cols, rows):
            self._render_frame(cols, rows)
        return self._strips

    def frame_lines(self) -> list[Strip]:
        """The strips of the current frame (rendering it first if stale); for tests."""
        return list(self._current_frame())


class GalaxyView(FrameWidget):
    """Root at the centre, centurions orbiting it, their children orbiting them."""

    DEFAULT_CSS = """
    GalaxyView { width: 1fr; height: 1fr; }
    """

    class StarClicked(Message):
        """A star was clicked: the nearest star to the clicked cell."""

        def __init__(self, node_id: str) -> None:
            super().__init__()
            self.node_id = node_id

    def setup(self) -> None:
        self.renderer = GalaxyRenderer()
        self.steps = self.renderer.steps
        self._feed = ChangeFeed(self.model)  # which stars' nodes changed between frames
        self.selected: str | None = None
        # (the renderer's top row, (cols, style), that row under the label)
        self._labelled: tuple[list[Segment], tuple[int, Style], list[Segment]] | None = None

    def set_selected(self, node_id: str | None) -> None:
        if node_id != self.selected:
            self.selected = node_id
            self.invalidate()

    def draw(self, cols: int, rows: int, styles: Sequence[Style]) -> list[list[Segment]]:
        lines = self.renderer.render(
            self.model, self.model.clock(), cols, rows, styles, selected=self.selected,
            changed=self._feed.take(),
        )  # fmt: skip
        if not lines:
            return lines
        # The labelled top row is rebuilt only when the renderer's row under it is new:
        # the frame cache reuses a row's strip by its segment list's identity.
        top, style = lines[0], styles[Ink.DIM]
        kept = self._labelled
        if kept is None or kept[0] is not top or kept[1] != (cols, style):
            kept = self._labelled = (top, (cols, style), with_label(lines[:1], cols, style)[0])
        return [kept[2], *lines[1:]]

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        node_id = self.renderer.star_at(offset.x, offset.y)
        if node_id is not None:
            event.stop()
            self.post_message(self.StarClicked(node_id))


# What the star map is, on its top row (the chart says what it is on its own).
GALAXY_LABEL = " galaxy: a star per agent · brighter = more tok/s "


def with_label(lines: list[list[Segment]], cols: int, style: Style) -> list[list[Segment]]:
    """The frame with GALAXY_LABEL over the start of its top row (cut to the width)."""
    if not lines or cols < 12:
        return lines
    label = GALAXY_LABEL[:cols]
    _under, rest = Segment.divide(lines[0], [len(label), cols])
    return [[Segment(label, style), *rest], *lines[1:]]
