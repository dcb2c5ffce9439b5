"""Hand Textual our cached row strips as they are, instead of re-wrapping every line.

Textual's default `Widget.render_lines` sends each line through its styles cache, which
re-reads border, outline, padding, tint, opacity and hatch for every line and wraps the
line in a new `Strip` (seven small caches each). For the Line API panels here — boxes
with none of those — the result is our own strip again, only a new object, which also
throws away that strip's divide and ANSI caches. Measured in `bench/bench_frame.py`, that
wrapping was the largest single cost of a full frame.

`direct_lines` returns the widget's strips untouched (line filters still applied, since
an app-level filter such as NO_COLOR's monochrome must still see every line), or None
when the widget's box is not plain, in which case the caller falls back to Textual's
path. `tests/test_render_direct_lines.py` pins that both paths paint the same cells.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.segment import Segment
from textual.cache import FIFOCache
from textual.css.styles import RenderStyles
from textual.geometry import Region, Spacing
from textual.strip import Strip
from textual.widget import Widget

from legion_tui.widgets.paint import FollowsTheme, Paint, paint_for

NO_SPACING = Spacing(0, 0, 0, 0)


def _lazy_cache(name: str, size: int) -> Any:
    """One of Strip's per-strip caches (`name`, of `size` entries), made on first use."""

    def get(strip: PanelStrip) -> FIFOCache[Any, Any]:
        caches = strip._caches
        if caches is None:
            caches = strip._caches = {}
        cache = caches.get(name)
        if cache is None:
            cache = caches[name] = FIFOCache(size)
        return cache

    def set_(strip: PanelStrip, cache: FIFOCache[Any, Any]) -> None:
        if strip._caches is None:
            strip._caches = {}
        strip._caches[name] = cache

    return property(get, set_)


class PanelStrip(Strip):
    """A Strip that does not keep itself alive in a reference cycle, and that makes its
    caches only when it uses them.

    The compositor divides every line at the screen's cuts; for a line that lies inside
    one cut Textual's `Strip.divide` caches `[self]` on the strip itself, so every such
    strip becomes cyclic garbage that only the garbage collector frees. With the
    panels' new strips each frame that was ≈ 2,800 tracked objects a frame and a
    young-generation collection (≈ 2.5 ms) every ~7 frames at 200×60 — the frame
    benchmark's p95. Answering that one case without the cache keeps the strip acyclic;
    every other division is Textual's own.

    `Strip.__init__` makes seven small caches (divide, crop, style, filter, line length,
    crop-extend, offsets) for every strip; a panel's strip goes through the compositor
    by the one division above and its rendered text, and uses none of them. Making them
    on first use (the properties below shadow Strip's slots) took a third off the cost
    of painting a tree row (57 rows a forced frame at 200×60); a strip that is cropped,
    styled or filtered gets its cache then and keeps it, as Textual's own would.
    """

    __slots__ = ("_caches",)

    _divide_cache = _lazy_cache("divide", 4)
    _crop_cache = _lazy_cache("crop", 16)
    _style_cache = _lazy_cache("style", 16)
    _filter_cache = _lazy_cache("filter", 4)
    _line_length_cache = _lazy_cache("line_length", 4)
    _crop_extend_cache = _lazy_cache("crop_extend", 4)
    _offsets_cache = _lazy_cache("offsets", 4)

    def __init__(self, segments: Iterable[Segment], cell_length: int | None = None) -> None:
        # Strip.__init__'s attributes, but for the caches (see the class docstring).
        self._segments = list(segments)
        self._cell_length = cell_length
        self._render_cache: str | None = None
        self._link_ids: set[str] | None = None
        self._cell_count: int | None = None
        self._caches: dict[str, FIFOCache[Any, Any]] | None = None

    def divide(self, cuts: Iterable[int]) -> Sequence[Strip]:
        length = self.cell_length
        inside = [cut for cut in cuts if cut <= length]  # as Textual's own divide does
        if inside == [length]:
            return [self]
        return super().divide(inside)


# widget → (the style versions of it and its ancestors, its `plain_box` answer then).
_plain_at: weakref.WeakKeyDictionary[Widget, tuple[tuple[int, ...], bool]] = (
    weakref.WeakKeyDictionary()
)


def plain_box(widget: Widget) -> bool:
    """True when Textual's styles pass would leave the widget's lines as they are.

    Asked for every panel every frame, and reading its styles costs more than a frame's
    row: the answer is kept until a style of the widget or of an ancestor (opacity
    multiplies down the tree) changes — Textual counts every change in `_cache_key`."""
    at = tuple(node.styles._cache_key for node in widget.ancestors_with_self)
    kept = _plain_at.get(widget)
    if kept is not None and kept[0] == at:
        return kept[1]
    plain = _plain_box(widget)
    _plain_at[widget] = (at, plain)
    return plain


def _plain_box(widget: Widget) -> bool:
    styles: RenderStyles = widget.styles
    if styles.padding != NO_SPACING or styles.tint.a or styles.text_opacity != 1.0:
        return False
    if any(edge for edge, _ in styles.border) or any(edge for edge, _ in styles.outline):
        return False
    if styles.has_rule("hatch") and styles.hatch != "none":
        return False
    return widget.opacity == 1.0


def direct_lines(
    widget: Widget, crop: Region, line: Callable[[int], Strip]
) -> list[Strip] | None:
    """The lines `crop` covers, straight from `line(y)`; None if the box is not plain."""
    if not plain_box(widget):
        return None
    strips = [line(y) for y in crop.line_range]
    filters = widget.app.get_line_filters()
    if filters:
        background = widget.background_colors[1]
        for line_filter in filters:
            strips = [strip.apply_filter(line_filter, background) for strip in strips]
    x1, x2 = crop.column_span
    # A plain box has no gutter: its content is its outer size (`size` asks the
    # compositor for the widget's region; `outer_size` is a field).
    if (x1, x2) != (0, widget.outer_size.width):
        strips = [strip.crop(x1, x2) for strip in strips]
    return strips


class PaintedLine(FollowsTheme):
    """A one-line widget that paints itself in the app theme's `Paint` (header, key
    hints, confirm bar): the page-floor switch and direct lines."""

    def __init__(self, *, floor: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self.floor = floor

    @property
    def paint(self) -> Paint:
        return paint_for(self.theme_name, self.floor)

    def render_lines(self, crop: Region) -> list[Strip]:
        strips = direct_lines(self, crop, self.render_line)
        return super().render_lines(crop) if strips is None else strips
