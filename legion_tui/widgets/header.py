"""The header bar: `LEGION` · run · session · counts · total tok/s · $ and tokens spent ·
the stop hint.

One line through the Line API; the line is rebuilt only when what it shows changes
(counts, rate, width, theme, pause), so a model flood costs one string compare.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip

from legion_tui import receipts
from legion_tui.costs import Spend, fmt_spend, fmt_usd, total_spend
from legion_tui.model import outcome_counts
from legion_tui.render.feed import LiveIndex, SpendIndex
from legion_tui.render.rates import instant_rate, rates_instant
from legion_tui.state import LegionModel
from legion_tui.widgets.lines import PaintedLine, PanelStrip
from legion_tui.widgets.tree.rows import fmt_tokens

NARROW_BELOW = 100  # columns: the stop hint shortens below this width
# The stop hint is a palette command: led by the palette's key, it reads as "type this
# in ^p", not as a usage line thrown by a failed command.
PALETTE_KEY = "^p "
# The header's station glyphs, spelled out (its tooltip, the help screen).
GLYPH_LEGEND = "● live (◐ starting, ◆ waiting for input) · ○ settled · ✗ failed · ◌ retired"


def stop_hint(width: int, used: int, live: int) -> str:
    """The dim hint while agents are live, led by the palette's key; shortened on narrow
    terminals (the key goes last); absent when nothing is live or nothing fits beside
    the counts."""
    if live <= 0:
        return ""
    wide = [PALETTE_KEY + receipts.STOP_HINT_WIDE] if width >= NARROW_BELOW else []
    for hint in (*wide, PALETTE_KEY + receipts.STOP_HINT_NARROW, receipts.STOP_HINT_NARROW):
        if used + len(hint) + 2 <= width:
            return hint
    return ""


def filter_note(text: str, shown: int, total: int, width: int, used: int) -> str:
    """What an active filter shows, in place of the stop hint: the header's counts and
    rate follow it as the chart does, and this says so (and how to leave it)."""
    for note in (
        f"filter: {text} ({shown} of {total}) · esc clears",
        f"filter: {text} ({shown}/{total})",
        f"filter ({shown}/{total})",
    ):
        if used + len(note) + 2 <= width:
            return note
    return ""


class HeaderBar(PaintedLine):
    DEFAULT_CSS = """
    HeaderBar { height: 1; dock: top; }
    """

    def __init__(
        self,
        model: LegionModel,
        *,
        floor: bool = True,
        id: str | None = None,
    ) -> None:
        super().__init__(floor=floor, id=id)
        self.model = model
        self.paused = False
        self._key: tuple[object, ...] | None = None  # the cached strip's
        self._strip: Strip | None = None
        # The figures of the last repaint asked for. Not `_key`: Textual renders every
        # widget a partial update's crop box overlaps and sends only the dirty lines, so
        # a render is no proof the line reached the screen (a header that took it for
        # one showed a settled agent live for good).
        self._asked: tuple[object, ...] | None = None
        self._counted_at: tuple[int, int] = (-1, 0)
        self._counted: dict[str, int] = {}
        self._rate_at: tuple[float, int, int] | None = None
        self._rate = 0.0
        self._spent_at: tuple[int, int] = (-1, 0)
        self._spent = Spend()
        self._index = LiveIndex(model)
        self._spend_index = SpendIndex(model)
        # The tree's filter and the rows it shows: the figures follow them.
        self.filter_text = ""
        self._shown: frozenset[str] | None = None
        self._scope = 0  # bumped on every filter change (memo and strip keys)
        self.tooltip = GLYPH_LEGEND

    def set_filter(self, text: str, shown: frozenset[str] | None) -> None:
        """A filter on (`shown`: the rows it leaves) or off (None): counts and tok/s
        then cover those rows only, like the chart's `now`."""
        self.filter_text = text if shown is not None else ""
        self._shown = shown
        self._scope += 1
        self.refresh()

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        self.refresh()

    def model_changed(self) -> None:
        """Repaint only when the text would differ from the last repaint asked for."""
        key = self._make_key(self.size.width)
        if key != self._asked:
            self._asked = key
            self.refresh()

    def summary(self) -> tuple[dict[str, int], float]:
        """(live/settled/failed/retired counts, Σ live tok/s). The counts follow every
        change; the rate, the tree rows' figure summed as the chart's `now` sums it, is
        taken once a second, at `rates_instant` (a chart step's start): summed over
        every live node at each of up to 30 repaints a second, twice each (key check,
        paint), it was a fifth of a 1 000-agent host's CPU (issue 35), and a 10 s
        window's sum moves nothing a reader sees within a quarter second. A change in
        the live count takes it again at once (no "●0 · 40 tok/s")."""
        counts = self._counts()
        at = (rates_instant(self.model.clock()), self._scope, counts["live"])
        if self._rate_at != at:
            self._rate_at, self._rate = at, self._sum_rate(at[0])
        return counts, self._rate

    def _counts(self) -> dict[str, int]:
        """The outcome counts of every node, or of the rows a filter shows: from a
        `LiveIndex` (only changed nodes are re-read), memoised on the model's version."""
        at = (self.model.version, self._scope)
        if self._counted_at != at:
            self._counted_at = at
            if self._shown is None:
                self._counted = self._index.counts()
            else:  # a filter's rows: a short list
                nodes = self.model.nodes
                self._counted = outcome_counts(
                    nodes[nid].node.outcome for nid in self._shown if nid in nodes
                )
        return self._counted

    def _sum_rate(self, now: float) -> float:
        if self._shown is None:
            views = self._index.live()
        else:
            nodes = self.model.nodes
            views = [nodes[nid] for nid in self._shown if nid in nodes]
        rate = 0.0
        for view in views:
            rate += instant_rate(view, now)
        return rate

    def spend(self) -> Spend:
        """$ and tokens of the run's sessions (of the rows a filter shows, with one on);
        read again only when the model changed, and then only the changed nodes (a
        filter's rows are a short list: summed whole)."""
        at = (self.model.version, self._scope)
        if self._spent_at != at:
            if self._shown is None:
                self._spent = self._spend_index.total()
            else:
                nodes = self.model.nodes
                self._spent = total_spend(nodes[n].progress for n in self._shown if n in nodes)
            self._spent_at = at
        return self._spent

    def live_rate(self) -> float:
        return self.summary()[1]

    def _make_key(self, width: int) -> tuple[object, ...]:
        counts, rate = self.summary()
        spent = self.spend()
        return (width, self.theme_name, self.floor, self.paused, tuple(counts.values()),
                round(rate), self._scope, fmt_spend(spent), fmt_tokens(spent.tokens),
                self.model.budget_usd)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        paint = self.paint
        if y != 0:
            return Strip.blank(width, paint.blank)
        key = self._make_key(width)
        if key == self._key and self._strip is not None:
            return self._strip
        counts, rate = self.summary()
        text = header_text(self.model.run_id, self.model.session_name, counts, rate, width,
                           self.spend(), self.model.budget_usd)
        segs = [Segment(" LEGION", paint.accent), Segment(text, paint.base)]
        used = 7 + len(text)
        if self.paused:
            segs.append(Segment("  PAUSED", paint.warning))
            used += 8
        if self._shown is not None:
            note = filter_note(
                self.filter_text, len(self._shown), len(self.model.nodes), width, used
            )
            if note:
                segs.append(Segment(" " * (width - used - len(note) - 1), paint.blank))
                segs.append(Segment(note + " ", paint.accent))
        elif hint := stop_hint(width, used, counts["live"]):
            segs.append(Segment(" " * (width - used - len(hint) - 1), paint.blank))
            if hint.startswith(PALETTE_KEY):
                segs.append(Segment(PALETTE_KEY, paint.accent))
                hint = hint[len(PALETTE_KEY) :]
            segs.append(Segment(hint + " ", paint.dim))
        strip = PanelStrip(Strip(segs).crop(0, width).adjust_cell_length(width, paint.blank), width)
        self._key, self._strip = key, strip
        return strip


def header_text(run_id: str, session: str, counts: dict[str, int], rate: float,
                width: int, spent: Spend | None = None, limit: float | None = None) -> str:
    """The widest form that fits. With `spent` (the run's $ and tokens) the figures stay
    and the words give way to the tree's own station glyphs first, so the full stop
    hint (or the filter note) still fits beside them; then the tokens go, then the run
    and session names. Room for at least the narrow stop hint is kept at every width:
    long run ids and session names (the demo's are 20+ characters each) must not push
    the hint off the line. `limit`: the run's budget, beside its spend (`$0.03 / $1.00`)."""
    usd = f" · {fmt_spend(spent)}" if spent is not None else ""
    if usd and limit is not None:
        usd += f" / {fmt_usd(limit)}"
    tokens = f" · {fmt_tokens(spent.tokens)} tok" if spent is not None else ""
    names = f" · {run_id} · {session} · "
    words = (
        f"{counts['live']} live · {counts['settled']} settled · {counts['failed']} failed"
        f" · {counts['retired']} retired · {rate:.0f} tok/s"
    )
    glyphs = (
        f"●{counts['live']} ○{counts['settled']} ✗{counts['failed']} ◌{counts['retired']}"
        f" · {rate:.0f} tok/s"
    )
    room = width - 7 - len(receipts.STOP_HINT_NARROW) - 3
    wide = width - 7 - len(PALETTE_KEY + receipts.STOP_HINT_WIDE) - 3
    for text, fits_in in (
        (f"{names}{words}{usd}{tokens}", wide),
        (f"{names}{glyphs}{usd}{tokens}", wide),
        (f"{names}{words}{usd}{tokens}", room),
        (f"{names}{glyphs}{usd}{tokens}", room),
        (f"{names}{glyphs}{usd}", room),
        (f" {glyphs}{usd}{tokens}", room),
        (f" {glyphs}{usd}", room),
    ):
        if len(text) <= fits_in:
            return text
    return f" {glyphs}"
