"""The Transcript tab: the session file as a conversation, paged lazily.

Opening a 50 MB session must be instant: `TranscriptPager` indexes line boundaries only
as far as the page asked for, so the view asks for the pages on screen and grows its
virtual height as the index grows (scrolling to the bottom pulls the next page in).
"""

from __future__ import annotations

from pathlib import Path

from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from legion_tui.session.transcript import TranscriptItem, TranscriptPager
from legion_tui.widgets.paint import Paint, paint_for

PAGE = 200  # items per pager call
MAX_PAGES = 64  # pages kept decoded; older ones are dropped and re-read if scrolled back


class TranscriptView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    TranscriptView { height: 1fr; }
    """

    def __init__(self, path: Path | None, *, theme: str, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pager = TranscriptPager(path) if path is not None else None
        self.theme_name = theme
        self._pages: dict[int, list[TranscriptItem]] = {}
        self.error: str | None = None if path is not None else "no session file"

    def _page(self, number: int) -> list[TranscriptItem]:
        items = self._pages.get(number)
        if items is None:
            items = []
            if self.pager is not None and self.error is None:
                try:
                    items = self.pager.page(number, PAGE)
                except OSError as error:  # deleted / EACCES: say so, retry on reopen
                    self.error = f"session unreadable: {error.strerror or error}"
            if len(self._pages) >= MAX_PAGES:
                self._pages.pop(next(iter(self._pages)))
            self._pages[number] = items
            self._update_height()
        return items

    def _update_height(self) -> None:
        known = self.pager.count_known() if self.pager is not None else 0
        more = 0 if self.pager is None or self.pager.at_end else 1
        height = known + more if self.error is None else 1
        if self.virtual_size.height != height or self.virtual_size.width != self.size.width:
            self.virtual_size = Size(self.size.width, height)

    def on_mount(self) -> None:
        self._page(0)

    def on_resize(self) -> None:
        self._update_height()

    def _paint(self, paint: Paint, item: TranscriptItem, width: int) -> Strip:
        style = {
            "user": paint.roles["worker"],
            "assistant": paint.roles["centurion"],
            "invalid": paint.warning,
        }.get(item.role, paint.dim)
        text = " ".join(item.text.split())  # one row per entry: newlines folded
        if item.tools:
            text = (text + " " if text else "") + " ".join(f"→ {t}" for t in item.tools)
        segs = [
            Segment(f" {item.role:>10} ", style),
            Segment(text, paint.fail if item.is_error else paint.base),
        ]
        return Strip(segs).crop(0, width).adjust_cell_length(width, paint.blank)

    def render_line(self, y: int) -> Strip:
        idx = y + int(self.scroll_offset.y)
        width = self.size.width
        paint = paint_for(self.theme_name)
        if self.error is not None:
            text = f" {self.error}" if idx == 0 else ""
            return Strip([Segment(text, paint.warning)]).crop(0, width).adjust_cell_length(
                width, paint.blank
            )
        items = self._page(idx // PAGE)
        offset = idx % PAGE
        if offset >= len(items):
            return Strip.blank(width, paint.blank)
        return self._paint(paint, items[offset], width)
