"""The keys that act on an agent, and the key-hint row at the bottom of the main screen.

The agent keys (x, X, a, s, r, A, c, P, D) are bound twice — on the main screen and inside the
detail overlay, where they act on the overlay's agent — so they are declared once here.

`KeyHints` replaces Textual's `Footer` (a widget per key, each through the styles pass
on every full frame): one Line API row whose hints are ranked, so a narrow terminal
drops the least useful ones first and `? Help` and `q Quit` always show.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rich.segment import Segment
from textual import events
from textual.binding import Binding
from textual.strip import Strip

from legion_tui.widgets.lines import PaintedLine, PanelStrip

# (key, action on the app, description, shown in the main screen's hints)
AGENT_KEYS: tuple[tuple[str, str, str, bool], ...] = (
    ("x", "stop_node(False)", "Stop", True),
    ("X", "stop_node(True)", "Force stop", False),
    ("a", "abort_node", "Abort", True),
    ("s", "steer_node", "Steer", True),
    ("r", "resume_node", "Resume", False),
    ("A", "attach_node", "Attach", False),
    ("c", "commit_node", "Commit", False),
    ("P", "push_node", "Push", False),
    ("D", "discard_node", "Discard", False),
)


def agent_bindings(namespace: str = "") -> list[Binding]:
    """The agent keys as bindings; `namespace="app."` from a screen other than the app."""
    return [
        Binding(key, namespace + action, description, show=show)
        for key, action, description, show in AGENT_KEYS
    ]


@dataclass(frozen=True, slots=True)
class Hint:
    key: str  # as shown
    label: str
    press: str  # the key a click on the hint presses
    rank: int  # 0: always shown; on a short row the highest rank goes first

    @property
    def width(self) -> int:
        return len(self.key) + len(self.label) + 3  # " key label "


HINTS: tuple[Hint, ...] = (
    Hint("⏎", "Detail", "enter", 3),
    Hint("x", "Stop", "x", 2),
    Hint("a", "Abort", "a", 5),
    Hint("s", "Steer", "s", 4),
    Hint("/", "Filter", "slash", 6),
    Hint("g", "Galaxy", "g", 7),  # below 100 columns the galaxy shows only on g
    Hint("p", "Pause", "p", 8),
    Hint("?", "Help", "question_mark", 0),
    Hint("q", "Quit", "q", 0),
)
PALETTE_HINT = Hint("^p", "palette", "ctrl+p", 9)
PALETTE_EDGE = "▏"  # sets the palette hint off at the right edge, in its leading space


@lru_cache(maxsize=32)
def fit_hints(width: int) -> tuple[tuple[Hint, ...], bool]:
    """The hints shown in `width` columns (in display order) and whether the palette
    hint fits too: drop the highest rank until the row fits, never a rank-0 hint."""
    kept = [*HINTS, PALETTE_HINT]
    while True:
        used = sum(h.width for h in kept)
        droppable = [h for h in kept if h.rank > 0]
        if used <= width or not droppable:
            break
        kept.remove(max(droppable, key=lambda h: h.rank))
    return tuple(h for h in kept if h is not PALETTE_HINT), PALETTE_HINT in kept


class KeyHints(PaintedLine):
    """One row of key hints; a click on a hint presses its key."""

    DEFAULT_CSS = """
    KeyHints { dock: bottom; height: 1; }
    """

    def __init__(self, *, floor: bool = True, id: str | None = None) -> None:
        super().__init__(floor=floor, id=id)
        self._strip: tuple[tuple[int, str, bool], Strip] | None = None
        self._spans: list[tuple[int, int, Hint]] = []  # [start, end) columns of each hint

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        key = (width, self.theme_name, self.floor)
        if self._strip is not None and self._strip[0] == key:
            return self._strip[1]
        strip = self._paint(width)
        self._strip = (key, strip)
        return strip

    def _paint(self, width: int) -> Strip:
        paint = self.paint
        hints, palette = fit_hints(width)
        segments: list[Segment] = []
        spans: list[tuple[int, int, Hint]] = []
        x = 0

        def put(hint: Hint) -> None:
            nonlocal x
            segments.append(Segment(f" {hint.key} ", paint.accent))
            segments.append(Segment(f"{hint.label} ", paint.base))
            spans.append((x, x + hint.width, hint))
            x += hint.width

        for hint in hints:
            put(hint)
        if palette:
            gap = width - x - PALETTE_HINT.width
            segments.append(Segment(" " * gap, paint.blank))
            x += gap
            put(PALETTE_HINT)
            # The edge takes the place of the hint's leading space.
            del segments[-2:]
            segments += [
                Segment(PALETTE_EDGE, paint.track),
                Segment(PALETTE_HINT.key, paint.accent),
                Segment(f" {PALETTE_HINT.label}", paint.base),
                Segment(" ", paint.blank),
            ]
        self._spans = spans
        line = Strip(segments).crop(0, width).adjust_cell_length(width, paint.blank)
        return PanelStrip(line, width)

    def on_click(self, event: events.Click) -> None:
        for start, end, hint in self._spans:
            if start <= event.x < end:
                event.stop()
                self.app.simulate_key(hint.press)
                return
