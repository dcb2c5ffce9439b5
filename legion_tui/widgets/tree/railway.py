"""The railway tree: one Line API widget for the whole legion (never a widget per agent).

Rows come from `rows.flatten`; each painted row is cached as a `Strip` keyed on
everything the row shows (node revision, rail, selection, width, theme, the clock second
for live rows), so a frame costs the visible rows that changed, not the tree size.
Selection is a node id, never a row index: rows that re-sort or appear above the cursor
cannot move it to another agent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, NamedTuple

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBarRender
from textual.strip import Strip

from legion_tui.costs import cost_text, fmt_spend, total_spend
from legion_tui.fanout.group import GROUP_GLYPH, AttemptGroup, group_state, short_name
from legion_tui.model import NodeStatus
from legion_tui.receipts import fmt_duration
from legion_tui.render.rates import node_rate
from legion_tui.session.live_rate import open_message
from legion_tui.state import Clock, LegionModel, NodeView
from legion_tui.widgets.lines import PanelStrip, direct_lines
from legion_tui.widgets.paint import FollowsTheme, Paint, paint_for
from legion_tui.widgets.tree.rows import (
    GLYPHS,
    Activity,
    TreeRow,
    activity,
    elapsed_seconds,
    flatten,
    fmt_rate,
    fmt_tokens,
)

COST_WIDTH = 9  # "$123.45 " and a space before
COST_ROOM = 50  # the activity keeps this much beside the `$` column
ACTIVITY_MIN = 26  # columns are dropped before "working · bash 00:07:31" stops fitting
# After the name of a simulated agent (kind sim): its work and verdict are pretend. Part
# of the label, so it stays when narrow layouts drop the role column; a long name is cut
# before the marker is.
SIM_MARK = " sim"
LABEL_MAX_SHARE = 0.45


@dataclass(frozen=True, slots=True)
class Columns:
    """Cell widths of one layout; 0 means the column is dropped at this width."""

    label: int
    role: int
    phase: int
    elapsed: int
    rate: int
    tokens: int
    cost: int = 0  # the `$` column: only when wide (COST_ROOM)

    @property
    def fixed(self) -> int:
        return (self.label + self.role + self.phase + self.elapsed + self.rate + self.tokens
                + self.cost)


@lru_cache(maxsize=64)
def plan_columns(width: int, label_need: int, phase_need: int) -> Columns:
    """Fit the columns into `width`, dropping the least useful first (phase, role,
    tokens, rate, elapsed) so the activity keeps room to say what an agent is doing; the
    `$` column only when every other column fits and the activity keeps COST_ROOM."""
    label = max(8, min(label_need, int(width * LABEL_MAX_SHARE)))
    widths = {"role": 10, "phase": phase_need, "elapsed": 9, "rate": 11, "tokens": 7}
    cost = COST_WIDTH if label + sum(widths.values()) + COST_WIDTH + COST_ROOM <= width else 0
    for drop in ("phase", "role", "tokens", "rate", "elapsed"):
        if label + sum(widths.values()) + ACTIVITY_MIN <= width:
            break
        widths[drop] = 0
    return Columns(label, widths["role"], widths["phase"], widths["elapsed"],
                   widths["rate"], widths["tokens"], cost)


def _tokens_out(view: NodeView) -> int:
    """Output tokens so far, the message still streaming included (the file holds a
    message only once it ends)."""
    pending = open_message(view.progress, view.streaming)
    return view.progress.tokens.output + (pending.tokens if pending else 0)


class WholeCellScrollBar(ScrollBarRender):
    """A thumb of whole cells: no partial-block glyph at its ends (the app sets it for
    every scrollbar; their colours are in app.tcss)."""

    VERTICAL_BARS: ClassVar[list[str]] = [" "] * len(ScrollBarRender.VERTICAL_BARS)


class LeftPart(NamedTuple):
    """A row's left part (rail … phase): its closed runs as segments, its last run still
    open (the figures or the activity may join it), and its width in cells."""

    closed: list[Segment]
    open: tuple[str, Style]
    width: int


def _segment(text: str, style: Style) -> Segment:
    """Segment(text, style) without NamedTuple's Python-level __new__ (a row is ~5
    segments, 57 rows a forced frame at 200×60)."""
    return tuple.__new__(Segment, (text, style, None))


def _runs(
    pieces: Iterable[tuple[str, Style]], opened: tuple[str, Style] | None = None
) -> list[tuple[str, Style]]:
    """Neighbouring pieces in the same style (the same object) joined into one run, the
    last run still open: fewer segments for Textual to crop and filter per line. With
    `opened`, the run the pieces continue from (a cached left part's last run): joining
    in two steps gives exactly the runs of one."""
    runs: list[tuple[str, Style]] = []
    it = iter(pieces)
    run_text, run_style = opened if opened is not None else next(it)
    for text, style in it:
        if style is run_style:
            run_text += text
        else:
            runs.append((run_text, run_style))
            run_text, run_style = text, style
    runs.append((run_text, run_style))
    return runs


class RailwayTree(ScrollView, FollowsTheme, can_focus=True):
    """One row per node: rails, station glyph, name, role, phase, elapsed, tok/s, tokens,
    activity."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("home", "jump(0)", show=False),
        Binding("end", "jump(-1)", show=False),
        Binding("left,h,minus", "fold", "Fold", show=False),
        Binding("right,l,plus", "unfold", "Unfold", show=False),
        Binding("enter,o", "open", "Detail"),
    ]

    DEFAULT_CSS = """
    RailwayTree { scrollbar-size-vertical: 1; overflow-x: hidden; }
    """

    class SelectionChanged(Message):
        def __init__(self, node_id: str | None) -> None:
            super().__init__()
            self.node_id = node_id

    class OpenRequested(Message):
        def __init__(self, node_id: str) -> None:
            super().__init__()
            self.node_id = node_id

    class VisibleChanged(Message):
        """The set of rows shown changed (fold/filter): the chart follows it."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, RailwayTree.VisibleChanged)

    class ColumnsChanged(Message):
        """The column plan may have moved (rows rebuilt, resized): the header follows."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, RailwayTree.ColumnsChanged)

    def __init__(
        self,
        model: LegionModel,
        *,
        clock: Clock | None = None,
        floor: bool = True,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.model = model
        self.clock: Clock = clock or model.clock
        self.floor = floor
        self.folded: set[str] = set()
        self.filter_text = ""
        self.rows: list[TreeRow] = []
        self._index: dict[str, int] = {}
        self._group_rows: dict[str, str] = {}  # an attempt's id → its group's row id
        self._visible: frozenset[str] = frozenset()
        self.selected_id: str | None = None
        self._label_need = 8
        self._phase_need = 0
        # One painted strip per node, with the key of what it shows. A plain dict, not
        # Textual's LRUCache: that one's ring of entries becomes cyclic garbage on
        # clear() (a theme change), and the number of nodes already bounds this one.
        self._cache: dict[str, tuple[tuple[object, ...], Strip]] = {}
        # The row's left columns (rail, glyph, name, role, phase) per node, with their key:
        # a live row repaints every frame for its clocks and figures, these rarely move.
        self._left: dict[str, tuple[tuple[object, ...], LeftPart]] = {}
        self.rebuild()

    # ----- public API --------------------------------------------------------------
    @property
    def paint(self) -> Paint:
        return paint_for(self.theme_name, self.floor)

    def theme_changed(self) -> None:
        self._cache.clear()
        self._left.clear()
        self.refresh()

    def visible_ids(self) -> frozenset[str]:
        """The nodes on rows now (a fan-out's group row is no node: not among them)."""
        return self._visible

    def row_of(self, node_id: str) -> int | None:
        """The row `node_id` is drawn on; None while it is not (filtered out, or its
        change not applied yet)."""
        return self._index.get(node_id)

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self.rebuild()

    def rebuild(self) -> None:
        """Re-flatten after a structural change (new node, fold, filter)."""
        old_visible = self._visible
        self.rows = flatten(self.model, self.folded, self.filter_text, self.clock())
        self._index = {row.node_id: i for i, row in enumerate(self.rows)}
        self._group_rows = {a: row.node_id for row in self.rows if row.group is not None
                            for a in row.group.attempt_ids}  # fmt: skip
        self._visible = frozenset(r.node_id for r in self.rows if r.group is None)
        label_need, phase_need = 8, 0
        for row in self.rows:
            if row.group is not None:
                name = row.group.name + (f" +{row.hidden}" if row.hidden else "") + SIM_MARK
                label_need = max(label_need, len(row.rail) + 3 + len(name) + 2)
                continue
            view = self.model.nodes[row.node_id]
            extra = len(f" +{row.hidden}") if row.hidden else 0
            extra += len(SIM_MARK) if view.node.simulated else 0
            label_need = max(label_need, len(row.rail) + 3 + len(short_name(view)) + extra + 2)
            if view.node.phase:
                phase_need = max(phase_need, min(len(view.node.phase), 14) + 2)
        self._label_need, self._phase_need = label_need, phase_need
        if self.selected_id not in self._index:
            self.selected_id = self.rows[0].node_id if self.rows else None
            if self.is_attached:
                self.post_message(self.SelectionChanged(self.selected_id))
        self.virtual_size = Size(self.size.width, len(self.rows))
        if self.is_attached:
            self.post_message(self.ColumnsChanged())
            if self._visible != old_visible:
                self.post_message(self.VisibleChanged())
            self._keep_selection_visible()
            self.refresh()

    def model_changed(self, dirty: frozenset[str]) -> None:
        """Repaint only the rows of the nodes that changed; re-flatten on new nodes."""
        structural = self.filter_text or any(nid not in self._index for nid in dirty)
        if structural and any(nid in self.model.nodes for nid in dirty):
            self.rebuild()
            return
        groups = self._group_rows
        self._refresh_rows([*dirty, *(groups[n] for n in dirty if n in groups)] if groups
                           else dirty)  # fmt: skip

    def tick(self) -> None:
        """Once a second: live rows show elapsed time, so repaint just those."""
        nodes = self.model.nodes
        self._refresh_rows(
            r.node_id for r in self._visible_rows()
            if (nodes[r.node_id].node.live if r.group is None
                else any(nodes[a].node.live for a in r.group.attempt_ids))
        )  # fmt: skip

    def select(self, node_id: str) -> None:
        if node_id not in self._index or node_id == self.selected_id:
            return
        old = self.selected_id
        self.selected_id = node_id
        if old is not None:
            self._refresh_row(old)
        self._refresh_row(node_id)
        self._keep_selection_visible()
        self.post_message(self.SelectionChanged(node_id))

    @property
    def selected_view(self) -> NodeView | None:
        return self.model.nodes.get(self.selected_id or "")

    # ----- actions -----------------------------------------------------------------
    def action_cursor(self, delta: int) -> None:
        if not self.rows:
            return
        idx = self._index.get(self.selected_id or "", 0)
        idx = max(0, min(len(self.rows) - 1, idx + delta))
        self.select(self.rows[idx].node_id)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.size.height - 1))

    def action_jump(self, idx: int) -> None:
        if self.rows:
            self.select(self.rows[idx].node_id)

    def action_fold(self) -> None:
        nid = self.selected_id
        if nid is None:
            return
        group = self.rows[self._index[nid]].group if nid in self._index else None
        below = group.attempt_ids if group is not None else self.model.children(nid)
        if below and nid not in self.folded and not self.filter_text:
            self.folded.add(nid)
            self.rebuild()
            return
        # Up to the row above it: an attempt's group, a group's or a node's parent.
        if group is not None:
            parent: str | None = group.parent_id
        else:
            parent = self._group_rows.get(nid) or self.model.nodes[nid].node.parent_id
        if parent is not None and parent in self._index:
            self.select(parent)

    def action_unfold(self) -> None:
        nid = self.selected_id
        if nid is not None and nid in self.folded:
            self.folded.discard(nid)
            self.rebuild()

    def action_open(self) -> None:
        if self.selected_id is not None:
            self.post_message(self.OpenRequested(self.selected_id))

    def on_click(self, event: events.Click) -> None:
        idx = event.y + int(self.scroll_offset.y)
        if 0 <= idx < len(self.rows):
            self.select(self.rows[idx].node_id)
            if event.chain >= 2:
                self.action_open()

    # ----- painting ----------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.rows))
        self.post_message(self.ColumnsChanged())
        self._keep_selection_visible()

    def columns(self) -> Columns:
        """The column plan of the rows as painted now (the header row follows it)."""
        width = self.scrollable_content_region.width
        return plan_columns(width, self._label_need, self._phase_need)

    def render_lines(self, crop: Region) -> list[Strip]:
        # The row width and column plan are the same for every line of one paint.
        width = self.scrollable_content_region.width
        cols = plan_columns(width, self._label_need, self._phase_need)
        now = self.clock()
        top = int(self.scroll_offset.y)

        def line(y: int) -> Strip:
            return self._row_strip(y + top, width, cols, now)

        strips = direct_lines(self, crop, line)
        return super().render_lines(crop) if strips is None else strips

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        cols = plan_columns(width, self._label_need, self._phase_need)
        return self._row_strip(y + int(self.scroll_offset.y), width, cols, self.clock())

    def _row_strip(self, idx: int, width: int, cols: Columns, now: float) -> Strip:
        """Row `idx` as exactly `width` cells (painted once per change of what it shows).

        The width is the scrollable width: with a scrollbar the last column belongs to
        it, and a row exactly that wide goes through the compositor without being cut."""
        if idx >= len(self.rows) or width <= 0:
            return Strip.blank(width, self.paint.blank)
        row = self.rows[idx]
        if row.group is not None:  # a fan-out's row: what it shows moves with its attempts
            views = [self.model.nodes[a] for a in row.group.attempt_ids]
            live = any(v.node.live for v in views)
            revision: object = tuple(v.revision for v in views)
        else:
            view = self.model.nodes[row.node_id]
            live, revision = view.node.live, view.revision
        # Live rows show seconds (elapsed, working · tool 00:07:31); ended rows do not move.
        second = int(now) if live else 0
        key = (row, revision, row.node_id == self.selected_id, width, cols,
               self.theme_name, self.floor, second)
        cached = self._cache.get(row.node_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        if row.group is not None:
            strip = self._paint_group_row(row, row.group, cols, width, now)
        else:
            strip = self._paint_row(row, view, cols, width, now)
        self._cache[row.node_id] = (key, strip)
        return strip

    def _left_part(self, row: TreeRow, view: NodeView, cols: Columns, paint: Paint) -> LeftPart:
        """Rail, glyph, name (+ fold count, sim marker), role and phase, each padded or
        cut to its column, as `_runs` joins them; kept per node while what they show is
        unchanged."""
        node = view.node
        key = (row, node.outcome, node.name, node.simulated, node.live, node.role,
               node.phase, cols, paint)  # fmt: skip
        cached = self._left.get(row.node_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        ended = not node.live
        role_style = paint.dim if ended else paint.roles[node.role]
        glyph_style = paint.fail if node.outcome is NodeStatus.FAILED else role_style
        label = f"{row.rail} {GLYPHS[node.outcome]} "
        name = short_name(view) + (f" +{row.hidden}" if row.hidden else "")
        mark = SIM_MARK if node.simulated else ""
        room = cols.label - len(label)
        if len(mark) > room - 2:  # not even two cells of name beside it: no marker
            mark = ""
        room -= len(mark)
        if len(name) > room:  # a deep rail and a long name: cut the name, keep columns
            name = name[: max(0, room - 1)] + "…" if room > 0 else ""
        pieces: list[tuple[str, Style]] = [
            (row.rail, paint.track),
            (label[len(row.rail):], glyph_style),
        ]
        if mark:
            pad = " " * max(0, room - len(name))
            pieces += [(name, role_style), (mark, paint.dim), (pad, role_style)]
        else:
            pieces.append((name.ljust(max(0, room)), role_style))
        if cols.role:
            pieces.append((node.role[: cols.role - 1].ljust(cols.role), role_style))
        if cols.phase:
            phase = (node.phase or "")[: cols.phase - 1].ljust(cols.phase)
            pieces.append((phase, paint.dim if ended else paint.accent))
        runs = _runs(pieces)
        left = LeftPart([_segment(text, style) for text, style in runs[:-1]], runs[-1],
                        sum(len(text) for text, _ in pieces))  # fmt: skip
        self._left[row.node_id] = (key, left)
        return left

    def _paint_row(
        self, row: TreeRow, view: NodeView, cols: Columns, width: int, now: float
    ) -> Strip:
        """One row as exactly `width` cells: every piece is padded or cut to its column,
        so no line is ever wider than the widget and columns stay aligned."""
        node = view.node
        left = self._left_part(row, view, cols, self.paint)
        elapsed = rate = tokens = spent = ""
        if cols.elapsed:
            parent = self.model.nodes.get(node.parent_id or "")
            launched = parent.node.created_at if parent is not None else None
            elapsed = fmt_duration(elapsed_seconds(view, now, launched))
        if cols.rate:
            rate = fmt_rate(node_rate(view, now)) if node.live else ""
        if cols.tokens:
            tokens = fmt_tokens(_tokens_out(view))
        if cols.cost:
            usd, basis = view.progress.cost, view.progress.cost_basis
            # The node's own session (root: none); blank while nothing is spent or owed.
            spent = cost_text(usd, basis) if usd or basis != "reported" else ""
        return self._finish_row(row, left, cols, width, (elapsed, rate, tokens, spent),
                                activity(view, now), ended=not node.live)  # fmt: skip

    def _paint_group_row(
        self, row: TreeRow, group: AttemptGroup, cols: Columns, width: int, now: float
    ) -> Strip:
        """A fan-out's row: its name, then its attempts' figures summed (the longest
        time) and its own status (`fanout.group.group_state`)."""
        views = [self.model.nodes[a] for a in group.attempt_ids]
        state = group_state(views)
        paint = self.paint
        style = paint.base if state.live else paint.dim
        label = f"{row.rail} {GROUP_GLYPH} "
        name = group.name + (f" +{row.hidden}" if row.hidden else "")
        # Simulated attempts (the demo's): the group's row is marked as theirs are, so
        # its summed figures never read as real work.
        if all(v.node.simulated for v in views):
            name += SIM_MARK
        room = max(0, cols.label - len(label))
        if len(name) > room:
            name = name[: max(0, room - 1)] + "…" if room > 0 else ""
        pieces = [(row.rail, paint.track), (label[len(row.rail):], style),
                  (name.ljust(room), style)]  # fmt: skip
        if cols.role:
            pieces.append(("fan-out"[: cols.role - 1].ljust(cols.role), paint.dim))
        if cols.phase:
            pieces.append((" " * cols.phase, paint.dim))
        runs = _runs(pieces)
        left = LeftPart([_segment(t, st) for t, st in runs[:-1]], runs[-1],
                        sum(len(t) for t, _ in pieces))  # fmt: skip
        elapsed = rate = tokens = spent = ""
        if cols.elapsed:
            parent = self.model.nodes.get(group.parent_id)
            launched = parent.node.created_at if parent is not None else None
            elapsed = fmt_duration(max(elapsed_seconds(v, now, launched) for v in views))
        if cols.rate and state.live:
            rate = fmt_rate(sum(node_rate(v, now) for v in views))
        if cols.tokens:
            tokens = fmt_tokens(sum(_tokens_out(v) for v in views))
        if cols.cost:
            total = total_spend(v.progress for v in views)
            spent = fmt_spend(total) if total.usd or total.unpriced else ""
        return self._finish_row(row, left, cols, width, (elapsed, rate, tokens, spent),
                                Activity(state.text, state.tone), ended=not state.live)  # fmt: skip

    def _finish_row(
        self, row: TreeRow, left: LeftPart, cols: Columns, width: int,
        figures: tuple[str, str, str, str], act: Activity, *, ended: bool,
    ) -> Strip:
        """The left part, then the figures (elapsed, tok/s, tokens, $: each right-aligned
        in its column, when it has one) and the activity in the room left."""
        paint = self.paint
        text_style = paint.dim if ended else paint.base
        used = left.width
        # The figures share one style: one piece (joined as `_runs` would join them).
        cells = [text.rjust(size - 1) + " " for text, size in zip(
            figures, (cols.elapsed, cols.rate, cols.tokens, cols.cost), strict=True) if size]
        tail: list[tuple[str, Style]] = []
        if cells:
            text = "".join(cells)
            used += len(text)
            tail.append((text, text_style))
        act_style = paint.dim if act.tone == "text" and ended else paint.tone(act.tone)
        # The activity is free text (an agent's verdict reason): measure it in cells; a
        # cut one ends in "…", so a reason cut at `veri` never reads as the whole reason.
        room = max(0, width - used)
        text = " " + act.text
        need = cell_len(text)
        if need > room > 1:
            text = set_cell_size(text, room - 1) + "…"
        elif need <= room:
            text += " " * (room - need)  # what set_cell_size pads it to, at half the cost
        else:
            text = set_cell_size(text, room)
        tail.append((text, act_style))
        selected = row.node_id == self.selected_id
        # The left part's last run stays open: the figures or the activity may join it.
        segments = left.closed + [_segment(text, style) for text, style in _runs(tail, left.open)]
        if selected:
            # Layered on top so the selection background wins over the page floor.
            segments = [Segment(t, (st or paint.blank) + paint.selection) for t, st, _ in segments]
        if used > width:  # only a width narrower than the fixed columns gets here
            return PanelStrip(Strip(segments, used).crop(0, width), width)
        return PanelStrip(segments, width)

    # ----- helpers -----------------------------------------------------------------
    def _visible_rows(self) -> list[TreeRow]:
        top = int(self.scroll_offset.y)
        return self.rows[top : top + self.size.height]

    def _refresh_rows(self, node_ids: Iterable[str]) -> None:
        """Repaint the on-screen rows of these nodes: one region per run of neighbouring
        rows, in one refresh call (each call walks Textual's dirty-region bookkeeping;
        50 streaming agents cost one). Not one region spanning them all: between 20
        live rows of 57 the settled ones would be composited again for nothing (at
        200×60 that took a third off the streaming frame)."""
        if not self.is_attached:
            return
        top, height = int(self.scroll_offset.y), self.size.height
        ys = sorted(
            y for y in (self._index.get(nid, -1) - top for nid in node_ids) if 0 <= y < height
        )
        if not ys:
            return
        width = self.size.width
        regions: list[Region] = []
        start = end = ys[0]
        for y in ys[1:]:
            if y > end + 1:
                regions.append(Region(0, start, width, end - start + 1))
                start = y
            end = y
        regions.append(Region(0, start, width, end - start + 1))
        self.refresh(*regions)

    def _refresh_row(self, node_id: str) -> None:
        idx = self._index.get(node_id)
        if idx is None or not self.is_attached:
            return
        y = idx - int(self.scroll_offset.y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _keep_selection_visible(self) -> None:
        idx = self._index.get(self.selected_id or "")
        height = self.size.height
        if idx is None or height <= 0:
            return
        top = int(self.scroll_offset.y)
        if idx < top:
            self.scroll_to(y=idx, animate=False, immediate=True)
        elif idx >= top + height:
            self.scroll_to(y=idx - height + 1, animate=False, immediate=True)
