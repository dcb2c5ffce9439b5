"""The dashboard's main screen: header, banner, the tree, the galaxy and the chart over
the prompt rows (confirm bar, message box, filter line) and the key hints; how the panels
answer each other (the tree's selection lights its star, a click on a star selects its
row, the filter narrows the tree, the chart and the header), its layouts (by size, and
`g`'s galaxy over the whole body), the galaxy's and chart's draw steps, the banner that
names the interrupted agents, and the tree's Enter opening the detail overlay. The
panels are the app's (`Panels`): they outlive the screen's compose and the app reads
them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Container
from textual.screen import Screen
from textual.widgets import Static
from textual.widgets._toast import ToastRack  # the screen's own rack: kept above the prompts

from legion_tui import receipts
from legion_tui.fanout.compare import Attempt, compare
from legion_tui.fanout.group import AttemptGroup, group_of_row
from legion_tui.git.worktree import Worktree
from legion_tui.ops import HostOperations, Operations
from legion_tui.state import Clock, LegionModel, NodeView
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.filter_line import FilterLine
from legion_tui.widgets.galaxy import GalaxyView
from legion_tui.widgets.header import HeaderBar
from legion_tui.widgets.keys import KeyHints
from legion_tui.widgets.layout import layout_classes
from legion_tui.widgets.new_agent import EMPTY_HINT
from legion_tui.widgets.overlay.compare_view import CompareScreen
from legion_tui.widgets.overlay.detail import DetailScreen
from legion_tui.widgets.overlay.message_box import MessageBox
from legion_tui.widgets.overlay.talk import MessageHistory
from legion_tui.widgets.rate_chart import RateChart
from legion_tui.widgets.tree.header import TreeHeader
from legion_tui.widgets.tree.railway import RailwayTree

__all__ = ["Backdrop", "Body", "MainScreen", "Panels"]


class Panels(Protocol):
    """What the main screen shows and tells: the app's panels."""

    @property
    def model(self) -> LegionModel: ...

    @property
    def ops(self) -> Operations: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def run_dir(self) -> Path | None: ...

    @property
    def floor(self) -> bool: ...

    @property
    def starting(self) -> bool: ...  # its on_start (the demo's legion) has not returned

    @property
    def history(self) -> MessageHistory: ...

    @property
    def header(self) -> HeaderBar: ...

    @property
    def tree_header(self) -> TreeHeader: ...

    @property
    def railway(self) -> RailwayTree: ...

    @property
    def galaxy(self) -> GalaxyView: ...

    @property
    def chart(self) -> RateChart: ...

    @property
    def key_hints(self) -> KeyHints: ...

    def main_mounted(self) -> None: ...


class Backdrop(Container):
    """A layout container that only ever shows its background where no child covers it.

    `BLANK` makes Textual paint it as one cached blank strip per line instead of sending
    every line through its styles pass: on a full frame the screen, `#body` and `#viz`
    were 176 of 362 rendered lines, all hidden behind the panels."""

    BLANK = True


class Body(Backdrop):
    """The panels' container (1fr): everything under it is prompt rows and key hints,
    which grow and shrink (a message box, a steer's receipt row, the confirm bar)."""

    def on_resize(self) -> None:
        screen = self.screen
        if isinstance(screen, MainScreen):
            screen.keep_toasts_above(self.region.bottom)


class MainScreen(Screen[None]):
    """Header, banner, tree, galaxy, chart, confirm bar, inputs, footer."""

    BLANK = True  # as Backdrop: a solid page colour under everything

    def __init__(self, app: Panels) -> None:
        super().__init__(id="main")
        self.legion = app
        self.confirm_bar = ConfirmBar(floor=app.floor, id="confirm")
        self.steer_line = MessageBox(app.history, id="steer")
        self.filter_line = FilterLine(id="filter")
        self._interrupted: set[str] = set()  # ids the banner names
        self._banner_text: str | None = None  # None: not drawn yet
        self.galaxy_full = False  # g: the galaxy over the whole body, the tree hidden

    def compose(self) -> ComposeResult:
        legion = self.legion
        yield legion.header
        yield Static("", id="banner")
        with Body(id="body"):
            with Backdrop(id="tree-pane"):
                yield legion.tree_header
                yield legion.railway
            with Backdrop(id="viz"):
                yield legion.galaxy
                yield legion.chart
        yield Static(
            "terminal too small — make it at least 40×10", id="too-small", markup=False
        )
        # The prompt lines sit in the normal flow under the body (the body is 1fr), and
        # only the footer is docked: docked siblings would overlap each other.
        yield self.confirm_bar
        yield self.steer_line
        yield self.filter_line
        yield legion.key_hints

    def on_mount(self) -> None:
        legion = self.legion
        legion.railway.focus()
        legion.chart.set_visible(legion.railway.visible_ids())
        legion.galaxy.set_selected(legion.railway.selected_id)
        legion.main_mounted()

    def keep_toasts_above(self, prompts_top: int) -> None:
        """Toasts sit above the rows under the body, whatever their height: a receipt
        must never cover the question being asked (a fixed margin did, once a steer's
        receipt row pushed the prompt up one row)."""
        margin = max(1, self.size.height - prompts_top)
        for rack in self.query(ToastRack):
            rack.styles.margin = (0, 0, margin, 0)

    def on_screen_suspend(self) -> None:
        # An overlay, the help or the palette now covers the stop/quit prompt: a prompt
        # out of sight is cancelled, never left for a later key to answer (fast keys had
        # left one open under the overlay, locked to an agent chosen long before).
        self.confirm_bar.cancel()

    def on_resize(self, event: events.Resize) -> None:
        self.apply_layout(event.size.width, event.size.height)

    def apply_layout(self, width: int, height: int) -> None:
        wanted = layout_classes(width, height, galaxy_full=self.galaxy_full)
        for cls in ("-wide", "-medium", "-narrow", "-compact", "-tiny", "-galaxy-full"):
            self.set_class(cls in wanted, cls)

    def toggle_galaxy(self) -> None:
        """`g`: the galaxy over the whole body, or back beside the tree."""
        self.galaxy_full = not self.galaxy_full
        self.apply_layout(self.app.size.width, self.app.size.height)
        if not self.galaxy_full:
            # Hiding the tree took its focus away; j/k/Enter must act on it again.
            self.legion.railway.focus()

    def model_changed(self, nodes: Mapping[str, NodeView], dirty: frozenset[str]) -> None:
        """Each panel repaints what the ids in `dirty` touch; the banner follows."""
        legion = self.legion
        legion.railway.model_changed(dirty)
        legion.header.model_changed()
        legion.galaxy.model_changed(dirty)
        legion.chart.model_changed(dirty)
        self.update_banner(nodes, dirty)

    def second(self) -> None:
        """Once a second: the tree's elapsed times and tool clocks, the header's figures;
        the chart's 60 s window slides even when no file changes, but an empty, idle
        chart is left alone (a legion with nothing happening costs ~no CPU)."""
        legion = self.legion
        legion.railway.tick()
        legion.header.model_changed()
        if legion.header.summary()[0]["live"] or legion.chart.renderer.stats.peak > 0:
            legion.chart.tick()

    def draw_step(self) -> None:
        """One draw step (render/steps.py): the chart and the galaxy draw what changed
        after their last frame, and the orbits advance while something is live (an
        ended legion holds still and costs nothing)."""
        chart, galaxy = self.legion.chart, self.legion.galaxy
        if chart.owes_a_frame():
            chart.invalidate()
        if not galaxy.display or not galaxy.size.area:
            return
        if galaxy.owes_a_frame() or self.legion.header.summary()[0].get("live", 0):
            galaxy.tick()

    # ----- the panels answer each other ---------------------------------------------
    @on(RailwayTree.SelectionChanged)
    def _selection_changed(self, event: RailwayTree.SelectionChanged) -> None:
        self.legion.galaxy.set_selected(event.node_id)

    @on(RailwayTree.ColumnsChanged)
    def _columns_changed(self, _event: RailwayTree.ColumnsChanged) -> None:
        self.legion.tree_header.refresh()

    @on(RailwayTree.VisibleChanged)
    def _visible_changed(self, _event: RailwayTree.VisibleChanged) -> None:
        self.legion.chart.set_visible(self.legion.railway.visible_ids())
        self._header_follows_filter()

    @on(GalaxyView.StarClicked)
    def _star_clicked(self, event: GalaxyView.StarClicked) -> None:
        self.legion.railway.select(event.node_id)

    @on(FilterLine.FilterChanged)
    def _filter_changed(self, event: FilterLine.FilterChanged) -> None:
        self.legion.railway.set_filter(event.text)
        self._header_follows_filter()

    @on(RailwayTree.OpenRequested)
    def _open_detail(self, event: RailwayTree.OpenRequested) -> None:
        # Only onto the main screen, and one overlay at a time. The request is a message:
        # fast Enter/o keys all reached the tree before the first push landed and each
        # pushed another overlay (a stack of identical overlays Esc seemed unable to
        # close), and one landing after `?` opened over the help. The screen on top now
        # is not the one the key was pressed on: the request is stale.
        if self.app.screen is not self:
            return
        group = group_of_row(self.legion.model, event.node_id)
        if group is not None:
            self._open_compare(group)
            return
        self._push_detail(event.node_id)

    def _open_compare(self, group: AttemptGroup) -> None:
        """Enter on a fan-out's row: its attempts side by side (issue 34)."""
        legion, ops = self.legion, self.legion.ops

        def worktree_of(node_id: str) -> Worktree | None:
            space = ops.workspace(node_id)
            return space.tree if space is not None and space.owner_id == node_id else None

        async def load() -> list[Attempt]:
            return await compare(legion.model, group, worktree_of, legion.clock())

        self.app.push_screen(CompareScreen(
            legion.model, group, load, floor=legion.floor, history=legion.history,
            open_detail=self._push_detail,
        ))  # fmt: skip

    def _push_detail(self, node_id: str) -> None:
        legion, ops = self.legion, self.legion.ops
        self.app.push_screen(
            DetailScreen(
                legion.model,
                node_id,
                clock=legion.clock,
                floor=legion.floor,
                run_dir=legion.run_dir,
                workspace=ops.workspace(node_id),
                history=legion.history,
                # Keys typed in a Terminal tab's insert mode, to the node's pty (host only).
                terminal_input=ops.terminal_input if isinstance(ops, HostOperations) else None,
            )
        )

    def _header_follows_filter(self) -> None:
        """With a filter on, the header's counts and tok/s cover the rows it shows (as
        the chart does) and the header names the filter; without one, everything."""
        railway = self.legion.railway
        text = railway.filter_text.strip()
        self.legion.header.set_filter(text, railway.visible_ids() if text else None)

    def open_filter(self) -> None:
        """`/`: the filter line, holding the filter kept so far (a main-screen key)."""
        if self.app.screen is self:
            self.filter_line.ask(self.legion.railway.filter_text)

    def clear_filter(self) -> None:
        """Esc on the main screen: the filter kept by Enter goes (the header said so)."""
        if self.app.screen is self and self.legion.railway.filter_text:
            self.legion.railway.set_filter("")
            self._header_follows_filter()

    def update_banner(
        self, nodes: Mapping[str, NodeView], dirty: frozenset[str] | None = None
    ) -> None:
        """The interrupted-nodes banner, or the empty-state hint while only root exists.
        Only nodes in `dirty` can have changed it (None: look at all), and the Static is
        touched only when its text changes: an update is a layout pass of the whole
        screen, which must not happen 30 times a second."""
        if not self.is_attached:
            return
        # A fresh session: root, nothing started yet, and nothing about to be.
        empty = len(nodes) == 1 and not self.legion.starting
        if dirty is not None and (self._banner_text == EMPTY_HINT) == empty and not any(
            (nid in self._interrupted) != (nid in nodes and nodes[nid].interrupted)
            for nid in dirty
        ):
            return
        self._interrupted = {nid for nid, v in nodes.items() if v.interrupted}
        names = [nodes[nid].node.name for nid in nodes if nid in self._interrupted]
        text = receipts.interrupted_banner(names) if names else EMPTY_HINT if empty else ""
        if text == self._banner_text:
            return
        self._banner_text = text
        banner = self.query_one("#banner", Static)
        banner.update(text)
        banner.set_class(bool(text), "-shown")
        banner.set_class(text == EMPTY_HINT, "-hint")
