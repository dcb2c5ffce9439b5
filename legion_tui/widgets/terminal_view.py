"""A process child's raw output (`terminal/<nodeId>.log`) through a pyte screen.

The log holds whatever the child wrote: SGR colours, carriage-return progress bars,
cursor moves. Feeding it to a terminal emulator and painting the emulator's cells shows
what the user would have seen in a terminal, instead of escape soup.

The tab follows the log: `refresh_log()` (called on the node's model changes) re-reads
it when a stat says it changed, at most once a second (a reload re-plays up to 256 KiB
through pyte), and keeps the end in view if it was.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyte
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from legion_tui.widgets.paint import paint_for

TAIL_BYTES = 256 * 1024  # the last 256 KiB: a progress bar can write megabytes of \r
MAX_ROWS = 5000
COLUMNS = 160
RELOAD_EVERY_S = 1.0  # the most often a changing log is re-played

_PYTE_NAMES = {
    "brightblack": "bright_black",
    "brightred": "bright_red",
    "brightgreen": "bright_green",
    "brown": "yellow",
    "brightbrown": "bright_yellow",
    "brightyellow": "bright_yellow",
    "brightblue": "bright_blue",
    "brightmagenta": "bright_magenta",
    "bfightmagenta": "bright_magenta",  # pyte's own typo in FG_AIXTERM
    "brightcyan": "bright_cyan",
    "brightwhite": "bright_white",
}


def pyte_colour(name: str) -> str | None:
    """pyte's colour names (`red`, `brightred`, `ff8700`) as Rich colour strings."""
    if name == "default":
        return None
    if len(name) == 6 and all(c in "0123456789abcdefABCDEF" for c in name):
        return "#" + name
    return _PYTE_NAMES.get(name, name)


def emulate(data: bytes, columns: int = COLUMNS) -> pyte.Screen:
    """Play `data` on a screen tall enough to keep every line it produces."""
    rows = min(MAX_ROWS, data.count(b"\n") + 2)
    screen = pyte.Screen(columns, rows)
    # A log file has bare \n (no tty to translate it): LNM makes \n also return the carriage.
    screen.set_mode(pyte.modes.LNM)
    pyte.ByteStream(screen).feed(data)
    return screen


def read_tail(path: Path) -> tuple[bytes, int]:
    """The last TAIL_BYTES of the log, starting at a line boundary, and the bytes skipped."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            start = max(0, size - TAIL_BYTES)
            fh.seek(start)
            data = fh.read()
    except OSError:
        return b"", 0
    if start:
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut >= 0 else data
    return data, size - len(data)


class TerminalView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    TerminalView { height: 1fr; overflow-x: hidden; }
    """

    def __init__(self, path: Path, *, theme: str, id: str | None = None) -> None:
        super().__init__(id=id)
        self.path = path
        self.theme_name = theme
        self.skipped_bytes = 0
        self._lines: list[Strip] = []
        self._columns = 0
        self._style_cache: dict[tuple[str, str, bool, bool, bool], Style] = {}
        self.reloads = 0
        self._loaded_stat: tuple[int, int, int, int] | None = None  # dev, ino, size, mtime
        self._loaded_at = -RELOAD_EVERY_S

    def _stat(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def refresh_log(self) -> None:
        """Re-read the log if it changed and the last reload is a second old."""
        if not self._columns or time.monotonic() - self._loaded_at < RELOAD_EVERY_S:
            return  # not laid out yet (on_resize loads it), or reloaded just now
        if self._stat() == self._loaded_stat:
            return
        at_bottom = self.scroll_offset.y >= self.max_scroll_y
        self.reload()
        if at_bottom:
            self.scroll_end(animate=False)

    def on_resize(self) -> None:
        # The emulated terminal is as wide as the view: long lines wrap as they would
        # in a real terminal of this width, and there is no sideways scrolling.
        if self.size.width and self.size.width != self._columns:
            self.reload()

    def reload(self) -> None:
        self._loaded_stat = self._stat()  # before the read: a write during it is not lost
        self._loaded_at = time.monotonic()
        self.reloads += 1
        data, self.skipped_bytes = read_tail(self.path)
        self._columns = max(20, self.size.width or COLUMNS)
        screen = emulate(data, self._columns)
        lines = [self._paint(screen, y) for y in range(screen.lines)]
        # Drop the blank rows the emulator kept below the last output.
        while lines and not lines[-1].text.strip():
            lines.pop()
        self._lines = lines
        self.virtual_size = Size(screen.columns, len(lines))
        self.refresh()

    def _style(self, fg: str, bg: str, bold: bool, underline: bool, reverse: bool) -> Style:
        key = (fg, bg, bold, underline, reverse)
        style = self._style_cache.get(key)
        if style is None:
            page = paint_for(self.theme_name).palette.page
            style = Style(
                color=pyte_colour(fg),
                bgcolor=pyte_colour(bg) or (None if page == "default" else page),
                bold=bold,
                underline=underline,
                reverse=reverse,
            )
            self._style_cache[key] = style
        return style

    def _paint(self, screen: pyte.Screen, y: int) -> Strip:
        row = screen.buffer[y]
        segs: list[Segment] = []
        run: list[str] = []
        run_key: tuple[str, str, bool, bool, bool] | None = None
        for x in range(screen.columns):
            ch = row[x]
            key = (ch.fg, ch.bg, ch.bold, ch.underscore, ch.reverse)
            if key != run_key and run:
                assert run_key is not None
                segs.append(Segment("".join(run), self._style(*run_key)))
                run = []
            run_key = key
            run.append(ch.data)
        if run and run_key is not None:
            segs.append(Segment("".join(run), self._style(*run_key)))
        return Strip(segs, screen.columns)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        idx = y + scroll_y
        width = self.size.width
        blank = paint_for(self.theme_name).blank
        if idx >= len(self._lines):
            return Strip.blank(width, blank)
        return self._lines[idx].crop_extend(scroll_x, scroll_x + width, blank)
