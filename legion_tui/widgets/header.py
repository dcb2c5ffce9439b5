"""The header bar: `LEGION` · run · session · counts · total tok/s · the stop hint.

One line through the Line API; the line is rebuilt only when what it shows changes
(counts, rate, width, theme, pause), so a model flood costs one string compare.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip

from legion_tui import receipts
from legion_tui.render.feed import LiveIndex
from legion_tui.render.rates import node_rate
from legion_tui.state import LegionModel
from legion_tui.themes import DEFAULT_THEME
from legion_tui.widgets.lines import PaintedLine, PanelStrip

NARROW_BELOW = 100  # columns: the stop hint shortens below this width


def stop_hint(width: int, used: int, live: int) -> str:
    """The dim hint while agents are live; shortened on narrow terminals; absent when
    nothing is live or it would not fit beside the counts."""
    if live <= 0:
        return ""
    hint = receipts.STOP_HINT_WIDE if width >= NARROW_BELOW else receipts.STOP_HINT_NARROW
    if used + len(hint) + 2 > width:
        hint = receipts.STOP_HINT_NARROW
    return hint if used + len(hint) + 2 <= width else ""


class HeaderBar(PaintedLine):
    DEFAULT_CSS = """
    HeaderBar { height: 1; dock: top; }
    """

    def __init__(
        self,
        model: LegionModel,
        *,
        theme: str = DEFAULT_THEME,
        floor: bool = True,
        id: str | None = None,
    ) -> None:
        super().__init__(theme=theme, floor=floor, id=id)
        self.model = model
        self.paused = False
        self._key: tuple[object, ...] | None = None
        self._strip: Strip | None = None
        self._memo_at: tuple[int, float] = (-1, 0.0)
        self._memo: tuple[dict[str, int], float] = ({}, 0.0)
        self._index = LiveIndex(model)

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        self.refresh()

    def model_changed(self) -> None:
        """Repaint only when the text would differ."""
        if self._key is not None and self._key != self._make_key(self.size.width):
            self.refresh()

    def summary(self) -> tuple[dict[str, int], float]:
        """(live/settled/failed/retired counts, Σ live tok/s). The rate is the same
        figure the tree rows and the chart's `now` show. The counts and the live set
        come from a `LiveIndex` (only changed nodes are re-read); memoised on (model
        version, clock): a frame asks twice (key check, paint)."""
        now = self.model.clock()
        if self._memo_at != (self.model.version, now):
            rate = 0.0
            for view in self._index.live():
                rate += node_rate(view, now)
            self._memo_at, self._memo = (self.model.version, now), (self._index.counts(), rate)
        return self._memo

    def live_rate(self) -> float:
        return self.summary()[1]

    def _make_key(self, width: int) -> tuple[object, ...]:
        counts, rate = self.summary()
        return (width, self.theme_name, self.floor, self.paused, tuple(counts.values()),
                round(rate))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        paint = self.paint
        if y != 0:
            return Strip.blank(width, paint.blank)
        key = self._make_key(width)
        if key == self._key and self._strip is not None:
            return self._strip
        counts, rate = self.summary()
        text = header_text(self.model.run_id, self.model.session_name, counts, rate, width)
        segs = [Segment(" LEGION", paint.accent), Segment(text, paint.base)]
        used = 7 + len(text)
        if self.paused:
            segs.append(Segment("  PAUSED", paint.warning))
            used += 8
        hint = stop_hint(width, used, counts["live"])
        if hint:
            gap = width - used - len(hint) - 1
            segs.append(Segment(" " * gap, paint.blank))
            segs.append(Segment(hint + " ", paint.dim))
        strip = PanelStrip(Strip(segs).crop(0, width).adjust_cell_length(width, paint.blank), width)
        self._key, self._strip = key, strip
        return strip


def header_text(run_id: str, session: str, counts: dict[str, int], rate: float,
                width: int) -> str:
    """The widest form that leaves room for the narrow stop hint; glyph counts (the
    tree's own station glyphs) when words do not fit, at any width."""
    words = (
        f" · {run_id} · {session} · {counts['live']} live · {counts['settled']} settled"
        f" · {counts['failed']} failed · {counts['retired']} retired · {rate:.0f} tok/s"
    )
    # Room for at least the narrow stop hint, at every width: long run ids and session
    # names (the demo's are 20+ characters each) must not push the hint off the line.
    room = width - 7 - len(receipts.STOP_HINT_NARROW) - 3
    if len(words) <= room:
        return words
    glyphs = (
        f"●{counts['live']} ○{counts['settled']} ✗{counts['failed']} ◌{counts['retired']}"
        f" · {rate:.0f} tok/s"
    )
    short = f" · {run_id} · {session} · {glyphs}"
    return short if len(short) <= room else f" {glyphs}"
