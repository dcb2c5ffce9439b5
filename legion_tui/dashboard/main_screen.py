"""The dashboard's main screen: header, banner, the tree, the galaxy and the chart over
the prompt rows (confirm bar, message box, filter line) and the key hints, and the
banner that names the interrupted agents. The panels are
the app's (`Panels`): they outlive the screen's compose and the app reads them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from textual import events
from textual.app import ComposeResult
from textual.containers import Container
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static
from textual.widgets._toast import ToastRack  # the screen's own rack: kept above the prompts

from legion_tui import receipts
from legion_tui.state import NodeView
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.filter_line import FilterLine
from legion_tui.widgets.new_agent import EMPTY_HINT
from legion_tui.widgets.overlay.message_box import MessageBox
from legion_tui.widgets.overlay.talk import MessageHistory

__all__ = ["Backdrop", "Body", "MainScreen", "Panels"]


class Panels(Protocol):
    """What the main screen shows and tells: the app's panels and its layout."""

    @property
    def floor(self) -> bool: ...

    @property
    def history(self) -> MessageHistory: ...

    @property
    def header(self) -> Widget: ...

    @property
    def tree_header(self) -> Widget: ...

    @property
    def railway(self) -> Widget: ...

    @property
    def galaxy(self) -> Widget: ...

    @property
    def chart(self) -> Widget: ...

    @property
    def key_hints(self) -> Widget: ...

    def main_mounted(self) -> None: ...

    def apply_layout(self, width: int, height: int) -> None: ...


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
        self.legion.main_mounted()

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
        self.legion.apply_layout(event.size.width, event.size.height)

    def update_banner(
        self, nodes: Mapping[str, NodeView], dirty: frozenset[str] | None = None
    ) -> None:
        """The interrupted-nodes banner, or the empty-state hint while only root exists.
        Only nodes in `dirty` can have changed it (None: look at all), and the Static is
        touched only when its text changes: an update is a layout pass of the whole
        screen, which must not happen 30 times a second."""
        if not self.is_attached:
            return
        empty = len(nodes) == 1  # a fresh session: root and nothing started yet
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
