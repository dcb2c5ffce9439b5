"""The detail overlay (SPEC §7.2): a modal 75 % × 65 % over the main screen, centred.

The modal's own background stays the page colour (dark/light) so the gutters beside the
frame never fall back to the terminal's default background (upstream page-floor-v1).
Keys x/X/a/s/r act on the node this overlay shows: they call back into the app, which
owns the one confirm/steer flow.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static, TabbedContent, TabPane

from legion_tui.state import Clock, LegionModel
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.detail_text import (
    activity_lines,
    event_lines,
    header_line,
    mail_lines,
    skipped_line,
    stall_line,
)
from legion_tui.widgets.keys import agent_bindings
from legion_tui.widgets.paint import paint_for
from legion_tui.widgets.steer import SteerLine
from legion_tui.widgets.terminal_view import TerminalView
from legion_tui.widgets.transcript_view import TranscriptView


class DetailScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    DetailScreen { align: center middle; }
    DetailScreen #detail-frame {
        width: 75%; height: 65%;
        border: round $primary; background: $background;
    }
    DetailScreen #detail-head { height: 1; color: $primary; text-style: bold; }
    DetailScreen #detail-skipped { height: 1; color: $text-muted; }
    DetailScreen TabbedContent { height: 1fr; }
    DetailScreen TabPane { height: 1fr; padding: 0; }
    DetailScreen .detail-text { height: auto; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close"),
        *agent_bindings("app."),  # they act on this overlay's agent (App._target)
    ]

    def __init__(
        self,
        model: LegionModel,
        node_id: str,
        *,
        clock: Clock,
        theme: str,
        floor: bool,
        run_dir: Path | None,
    ) -> None:
        super().__init__()
        self.model = model
        self.node_id = node_id
        self.clock = clock
        self.theme_name = theme
        self.floor = floor
        self.run_dir = run_dir
        self._shown: dict[str, str | Text] = {}  # what each Static shows now

    def _session_path(self) -> Path | None:
        raw = self.model.nodes[self.node_id].node.session_file
        if not raw:
            return None
        path = Path(raw)
        if not path.is_absolute() and self.run_dir is not None:
            path = self.run_dir / path
        return path

    def _terminal_path(self) -> Path | None:
        if self.run_dir is None:
            return None
        path = self.run_dir / "terminal" / f"{self.node_id}.log"
        view = self.model.nodes[self.node_id]
        return path if view.node.backend == "process" or path.exists() else None

    def compose(self) -> ComposeResult:
        view = self.model.nodes[self.node_id]
        with Vertical(id="detail-frame"):
            yield Static(header_line(view), id="detail-head", markup=False)
            yield Static(skipped_line(view), id="detail-skipped", markup=False)
            with TabbedContent(id="detail-tabs"):
                with TabPane("Transcript", id="tab-transcript"):
                    yield TranscriptView(
                        self._session_path(), theme=self.theme_name, id="transcript"
                    )
                with TabPane("Activity", id="tab-activity"), VerticalScroll():
                    yield Static(id="activity", classes="detail-text", markup=False)
                with TabPane("Mail", id="tab-mail"), VerticalScroll():
                    yield Static(id="mail", classes="detail-text", markup=False)
                with TabPane("Events", id="tab-events"), VerticalScroll():
                    yield Static(id="events", classes="detail-text", markup=False)
                terminal = self._terminal_path()
                if terminal is not None:
                    with TabPane("Terminal", id="tab-terminal"):
                        yield TerminalView(terminal, theme=self.theme_name, id="terminal")
            yield SteerLine(id="detail-steer")
            yield ConfirmBar(theme=self.theme_name, floor=self.floor, id="detail-confirm")

    def on_mount(self) -> None:
        self.model_changed(frozenset({self.node_id}))
        self.query_one(TranscriptView).focus()

    def model_changed(self, dirty: frozenset[str]) -> None:
        if self.node_id not in dirty:
            return
        view = self.model.nodes[self.node_id]
        now = self.clock()
        self._show("#detail-head", header_line(view))
        self._show("#detail-skipped", skipped_line(view))
        activity = Text("\n".join(activity_lines(view, now)))
        stall = stall_line(view, now)
        if stall is not None:
            # the stall marker in the warning colour, as in the tree
            activity.highlight_words([stall], style=paint_for(self.theme_name).warning)
        self._show("#activity", activity)
        self._show("#mail", "\n".join(mail_lines(view)))
        self._show("#events", "\n".join(event_lines(view)))
        # The tabs that show files follow them: a changed node may have written more.
        self.query_one(TranscriptView).refresh_tail()
        for terminal in self.query(TerminalView):
            terminal.refresh_log()

    def _show(self, selector: str, content: str | Text) -> None:
        """Update a Static only when what it shows changed: every update is a layout
        pass, and a streaming node changes many times a second."""
        if self._shown.get(selector) == content:
            return
        self._shown[selector] = content
        self.query_one(selector, Static).update(content)

    def action_close(self) -> None:
        self.dismiss(None)
