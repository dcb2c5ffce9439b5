"""A process child's raw output (`terminal/<nodeId>.log`) through a pyte screen.

The log holds whatever the child wrote: SGR colours, carriage-return progress bars,
cursor moves. Feeding it to a terminal emulator and painting the emulator's cells shows
what the user would have seen in a terminal, instead of escape soup.

The tab follows the log: `refresh_log()` (called on the node's model changes) re-reads
it when a stat says it changed, at most once a second (a reload re-plays up to 256 KiB
through pyte), and keeps the end in view if it was.

Insert mode (`i` in the tab, Ctrl+] leaves): every key goes to the running command's pty
as a terminal would send it (Enter is CR, arrows are CSI sequences, Ctrl+letter the
control byte) — none reaches the overlay's own keys, so `q` types a q. The tab's last
row says which mode it is in (`-- INSERT --`). While typing, the log is looked at every
0.1 s (a stat; re-read when it changed) so the echo follows the keys.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pyte
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Static

from legion_tui.widgets.paint import FollowsTheme, paint_for

TAIL_BYTES = 256 * 1024  # the last 256 KiB: a progress bar can write megabytes of \r
MAX_ROWS = 5000
COLUMNS = 160
RELOAD_EVERY_S = 1.0  # the most often a changing log is re-played
RELOAD_TYPING_S = 0.1  # … while the user types into it: the echo follows the keys
LEAVE_KEY = "ctrl+right_square_bracket"  # Ctrl+]: telnet's escape, never an editing key
# Keys as a terminal sends them (xterm's normal cursor mode).
KEY_BYTES = {
    "enter": b"\r", "tab": b"\t", "shift+tab": b"\x1b[Z", "backspace": b"\x7f",
    "escape": b"\x1b", "up": b"\x1b[A", "down": b"\x1b[B", "right": b"\x1b[C",
    "left": b"\x1b[D", "home": b"\x1b[H", "end": b"\x1b[F", "delete": b"\x1b[3~",
    "insert": b"\x1b[2~", "pageup": b"\x1b[5~", "pagedown": b"\x1b[6~",
}
NORMAL_LINE = " i types into the command (insert mode) · Ctrl+] leaves it"
INSERT_LINE = " -- INSERT -- keys go to the command · Ctrl+] leaves"
NOT_TYPING_LINE = " not typing: the command is not running on a terminal any more"

Send = Callable[[bytes], bool]  # keys to the node's pty; False: it has none (any more)


def key_bytes(event: events.Key) -> bytes | None:
    """What a terminal would send for `event`; None for a key it has no bytes for."""
    key = event.key
    if key in KEY_BYTES:
        return KEY_BYTES[key]
    if key.startswith("ctrl+") and len(key) == 6 and "a" <= key[5] <= "z":
        return bytes([ord(key[5]) - ord("a") + 1])  # Ctrl+C is 0x03
    if event.is_printable and event.character:
        return event.character.encode("utf-8", "surrogatepass")
    return None

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


class TerminalView(ScrollView, FollowsTheme, can_focus=True):
    DEFAULT_CSS = """
    TerminalView { height: 1fr; overflow-x: hidden; }
    """

    def __init__(
        self, path: Path, *, send: Send | None = None, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.path = path
        self.send = send  # None: nothing to type into (a view, or not the host)
        self.inserting = False
        self.mode_line = Static(NORMAL_LINE, classes="terminal-mode", markup=False)
        self.mode_line.display = send is not None  # no keys to send: no mode to show
        self.skipped_bytes = 0
        self._lines: list[Strip] = []
        self._columns = 0
        self._style_cache: dict[tuple[str, str, bool, bool, bool], Style] = {}
        self.reloads = 0
        self._loaded_stat: tuple[int, int, int, int] | None = None  # dev, ino, size, mtime
        self._loaded_at = -RELOAD_EVERY_S
        self._trailing: Timer | None = None  # the reload a throttled change waits for
        self._typing_poll: Timer | None = None  # while inserting: the echo, as it comes

    def _stat(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def refresh_log(self) -> None:
        """Re-read the log if it changed and the last reload is a second old; a change
        inside that second is read when it is over (the last output is never left
        unshown until some later change)."""
        if not self._columns:
            return  # not laid out yet (on_resize loads it)
        if self._stat() == self._loaded_stat:
            return
        every = RELOAD_TYPING_S if self.inserting else RELOAD_EVERY_S
        wait = self._loaded_at + every - time.monotonic()
        if wait > 0:  # reloaded just now: once more when the interval is over
            if self._trailing is None and self.is_attached:
                self._trailing = self.set_timer(wait, self._reload_late)
            return
        at_bottom = self.scroll_offset.y >= self.max_scroll_y
        self.reload()
        if at_bottom:
            self.scroll_end(animate=False)

    def _reload_late(self) -> None:
        self._trailing = None
        self.refresh_log()

    def enter_insert(self) -> bool:
        """`i`: keys go to the command from now on (False: it has no terminal now)."""
        if self.send is None:
            return False
        if not self.send(b""):
            self._leave(NOT_TYPING_LINE)
            return False
        self.inserting = True
        # The model tells of a change only when the command's current line changes; an
        # echo of the same line would wait for the next second's tick.
        self._typing_poll = self.set_interval(RELOAD_TYPING_S, self.refresh_log)
        self.mode_line.update(INSERT_LINE)
        self.mode_line.add_class("-inserting")
        self.focus()
        self.scroll_end(animate=False)
        return True

    def _leave(self, line: str = NORMAL_LINE) -> None:
        self.inserting = False
        if self._typing_poll is not None:
            self._typing_poll.stop()
            self._typing_poll = None
        self.mode_line.remove_class("-inserting")
        self.mode_line.update(line)

    def on_blur(self) -> None:
        if self.inserting:  # the keys go elsewhere now: say so
            self._leave()

    async def _on_key(self, event: events.Key) -> None:
        if not self.inserting:
            await super()._on_key(event)
            return
        # Every key is the command's, none the overlay's (q types a q, 1 a 1).
        event.stop()
        event.prevent_default()
        if event.key == LEAVE_KEY:
            self._leave()
            return
        data = key_bytes(event)
        if data is not None and self.send is not None and not self.send(data):
            self._leave(NOT_TYPING_LINE)  # the command ended under the keys

    def theme_changed(self) -> None:
        # The painted rows carry the old page colour in their styles: paint them again.
        self._style_cache.clear()
        if self._columns:
            self.reload()

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


class TerminalTab(Vertical):
    """The Terminal tab: the emulated log over its one-row mode line."""

    DEFAULT_CSS = """
    TerminalTab { height: 1fr; }
    TerminalTab > .terminal-mode { height: 1; color: $text-muted; }
    TerminalTab > .terminal-mode.-inserting { color: $accent; text-style: bold; }
    """

    def __init__(self, view: TerminalView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        yield self.view
        yield self.view.mode_line
