"""The Transcript tab: the session file as a conversation, paged lazily, opened at its end.

Opening a 50 MB session must be instant: the view indexes line boundaries in steps of a
few MiB (`TranscriptPager.index_more`), yielding to the event loop between steps, and
decodes only the pages on screen. It opens on the newest entries and follows the file:
`refresh_tail()` (called on the node's model changes) indexes what was appended, drops
the cached pages the new lines land in, and keeps the end in view — unless the user
scrolled up to read, in which case the view stays where it is.

It shows the conversation — the user, the replies, tool calls and results, errors — and
hides the agents' internal records (Claude Code's attachments and api-requests, Codex's
events and turn contexts, pi's session header): a note on the first row says how many,
and `v` (`toggle_raw`) shows every line of the file again, or hides them again. The rows
are the pager's conversation index, so hiding costs nothing per row drawn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path

from rich.cells import chop_cells
from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import Worker

from legion_tui.session.transcript import SCAN_CHUNK, TranscriptItem, TranscriptPager
from legion_tui.widgets.paint import FollowsTheme, Paint, paint_for

PAGE = 200  # items per pager call
MAX_PAGES = 64  # pages kept decoded; older ones are dropped and re-read if scrolled back
# Bytes indexed per step before yielding: ~4 MiB is a few ms of numpy, so a 50 MB file
# reaches its end in a dozen steps and the loop is never held for long.
INDEX_STEP_BYTES = 4 * SCAN_CHUNK
# Wrapped, the view lays out the newest entries only: a wrapped row's height depends on
# its text, so laying out a 50 MB session would decode every page of it.
WRAP_ITEMS = 2000
LABEL_WIDTH = 12  # " assistant " and its padding
RAW_KEY = "v"  # the overlay's key for every line (DetailScreen binds it; the note names it)


class TranscriptView(ScrollView, FollowsTheme, can_focus=True):
    # Rows are cut or wrapped to the width: nothing to scroll sideways (the virtual width
    # is the widget's, which the vertical scrollbar, once shown, overflows by two).
    DEFAULT_CSS = """
    TranscriptView { height: 1fr; overflow-x: hidden; }
    """

    def __init__(self, path: Path | None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pager = TranscriptPager(path) if path is not None else None
        self._pages: dict[int, list[TranscriptItem]] = {}
        self.error: str | None = None if path is not None else "no session file"
        self.follow = True  # keep the newest entry in view (off while scrolled up)
        self.index_steps = 0  # indexing steps so far (tests: a big file takes several)
        self._indexing = False
        self._generation = 0
        self.walker: Worker[None] | None = None  # the running (or last) walk to the end
        self.wrap = False  # long entries on as many rows as they need (the overlay's w)
        self.raw = False  # every line of the file, internal records too (the overlay's v)
        # Wrapped layout: (known entries, width, file generation, raw) → (entry, chunk,
        # first).
        self._wrapped: tuple[
            tuple[int, int, int, bool], list[tuple[TranscriptItem, str, bool]]
        ] = ((-1, -1, -1, False), [])

    def toggle_wrap(self) -> None:
        self.wrap = not self.wrap
        self._relaid()

    def toggle_raw(self) -> None:
        """Every line of the file, or the conversation only (the default)."""
        self.raw = not self.raw
        self._pages.clear()  # pages are of rows, and the rows are other lines now
        self._relaid()

    def _relaid(self) -> None:
        self._update_height()
        self.refresh()
        if self.follow:
            self.scroll_end(animate=False)

    def _entries(self) -> int:
        """The rows' entries known so far: every line indexed, or its conversation."""
        if self.pager is None:
            return 0
        return self.pager.count_known() if self.raw else self.pager.count_said()

    def note(self) -> str | None:
        """The first row: how many internal records are hidden (or shown) and the key
        that shows (or hides) them; None when the file has none (so far)."""
        if self.pager is None or self.error is not None:
            return None
        hidden = self.pager.count_known() - self.pager.count_said()
        if hidden <= 0:
            return None
        records = "internal record" if hidden == 1 else "internal records"
        if self.raw:
            return f"every line shown, {hidden} {records} among them · {RAW_KEY} hides them"
        return f"{hidden} {records} hidden · {RAW_KEY} shows them"

    def _page(self, number: int) -> list[TranscriptItem]:
        items = self._pages.get(number)
        if items is None:
            items = []
            if self.pager is not None and self.error is None:
                try:
                    if self.raw:
                        items = self.pager.page(number, PAGE)
                    else:
                        items = self.pager.conversation_page(number, PAGE)
                except OSError as error:  # deleted / EACCES: say so, retry on reopen
                    self.error = f"session unreadable: {error.strerror or error}"
            if len(self._pages) >= MAX_PAGES:
                self._pages.pop(next(iter(self._pages)))
            self._pages[number] = items
            self._update_height()
        return items

    def _wrapped_rows(self) -> list[tuple[TranscriptItem, str, bool]]:
        """The newest WRAP_ITEMS entries cut into rows of the text width (cached)."""
        known = self._entries()
        # The text's width is what the scrollbar leaves: wrapped to the whole width, each
        # row's last two characters sat under the scrollbar, lost at every break.
        width = max(8, self.scrollable_content_region.width - LABEL_WIDTH)
        key = (known, width, self._generation, self.raw)
        if self._wrapped[0] != key:
            # Claimed first: the pages read below update the height, which asks again.
            self._wrapped = (key, [])
            rows: list[tuple[TranscriptItem, str, bool]] = []
            for idx in range(max(0, known - WRAP_ITEMS), known):
                items = self._page(idx // PAGE)
                if idx % PAGE < len(items):
                    item = items[idx % PAGE]
                    chunks = chop_cells(_row_text(item), width) or [""]
                    rows += [(item, chunk, i == 0) for i, chunk in enumerate(chunks)]
            self._wrapped = (key, rows)
        return self._wrapped[1]

    def _update_height(self) -> None:
        known = self._entries()
        more = 0 if self.pager is None or self.pager.at_end else 1
        if self.wrap and self.error is None:
            known = len(self._wrapped_rows())
        top = 1 if self.note() is not None else 0
        height = top + known + more if self.error is None else 1
        if self.virtual_size.height != height or self.virtual_size.width != self.size.width:
            self.virtual_size = Size(self.size.width, height)

    def on_mount(self) -> None:
        self.refresh_tail()

    def refresh_tail(self) -> None:
        """The session may have grown: index the new lines in steps and show them. An
        unchanged file costs one stat; a call while a walk runs is absorbed by it."""
        if self.pager is None or self._indexing or not self.pager.stale():
            return
        self._indexing = True
        # The method, not a coroutine: a worker cancelled before it starts (the overlay
        # closed at once) then leaves no never-awaited coroutine behind.
        walk: Callable[[], Coroutine[None, None, None]] = self._index_to_end
        self.walker = self.run_worker(
            walk, group="transcript-index", exit_on_error=False
        )

    async def _index_to_end(self) -> None:
        assert self.pager is not None
        pager = self.pager
        known = self._entries()
        raw = self.raw
        at_bottom = self.follow  # decided before the height grows under the scroll
        try:
            while True:
                try:
                    done = pager.index_more(INDEX_STEP_BYTES)
                except OSError as error:  # deleted / EACCES: say so; a later call retries
                    self.error = f"session unreadable: {error.strerror or error}"
                    break
                self.error = None
                self.index_steps += 1
                if done:
                    break
                await asyncio.sleep(0)  # a big file: let the loop breathe between steps
        finally:
            self._indexing = False
        if pager.generation != self._generation:
            self._generation = pager.generation  # another file now: nothing cached holds
            self._pages.clear()
            known = 0
        if raw != self.raw:
            known = 0  # toggled during the walk: the cached pages are of the new rows
        # The page the old last row sat in, and any after it, gained rows.
        for number in [n for n in self._pages if n >= known // PAGE]:
            del self._pages[number]
        self._update_height()
        self.refresh()
        if at_bottom:
            self.scroll_end(animate=False)
        if pager.stale():
            self.refresh_tail()  # it grew again during the walk

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Scrolled up by the user: stop following; back at the bottom: follow again.
        self.follow = new_value >= self.max_scroll_y

    def on_resize(self) -> None:
        self._update_height()

    def _paint(
        self, paint: Paint, item: TranscriptItem, width: int, text: str | None = None,
        label: bool = True,
    ) -> Strip:
        """One row: the role label (blank under a wrapped entry's first row) and its text
        (the entry's whole text, or one wrapped chunk of it)."""
        style = {
            "user": paint.roles["worker"],
            "assistant": paint.roles["centurion"],
            "invalid": paint.warning,
        }.get(item.role, paint.dim)
        # An internal record (shown by v) reads dim: the conversation stands out.
        body = paint.fail if item.is_error else paint.base if item.said else paint.dim
        segs = [
            Segment(f" {item.role:>10} " if label else " " * LABEL_WIDTH, style),
            Segment(_row_text(item) if text is None else text, body),
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
        note = self.note()
        if note is not None:
            if idx == 0:
                return Strip([Segment(f" {note}", paint.dim)]).crop(0, width).adjust_cell_length(
                    width, paint.blank
                )
            idx -= 1  # the rows below the note
        if self.wrap:
            rows = self._wrapped_rows()
            if idx >= len(rows):
                return Strip.blank(width, paint.blank)
            item, chunk, first = rows[idx]
            return self._paint(paint, item, width, chunk, first)
        items = self._page(idx // PAGE)
        offset = idx % PAGE
        if offset >= len(items):
            return Strip.blank(width, paint.blank)
        return self._paint(paint, items[offset], width)


def _row_text(item: TranscriptItem) -> str:
    """An entry's text on one line (newlines folded), its tool calls after it."""
    text = " ".join(item.text.split())
    if item.tools:
        text = (text + " " if text else "") + " ".join(f"→ {t}" for t in item.tools)
    return text
