"""`?`: every key of SPEC §7.3 on one page."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("↑ ↓ / j k", "select"),
    ("← → / h l / - +", "fold / unfold a subtree"),
    ("Enter / o", "detail overlay (Esc or q closes)"),
    ("x then y", "stop the selected agent (any other key cancels)"),
    ("X then y", "force stop (no grace period)"),
    ("a then y", "abort the current turn (context kept; queued steering is dropped)"),
    ("s", "steer: text for the next turn"),
    ("r", "resume an interrupted agent"),
    ("/", "filter the tree"),
    ("w", "chart window: last 60 s / whole run"),
    ("g", "galaxy full screen"),
    ("t", "cycle theme (dark → light → ansi)"),
    ("p", "pause / resume screen updates"),
    ("Ctrl+P", "command palette: Stop/Force stop/Abort/Resume NAME, /legion stop …"),
    ("?", "this help"),
    ("q", "quit (asks first while agents are live: quitting pauses them)"),
    ("mouse", "click selects a row or a star; the wheel scrolls"),
)


def help_text() -> str:
    width = max(len(k) for k, _ in KEYS)
    return "\n".join(f"  {key:<{width}}  {what}" for key, what in KEYS)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: auto; max-width: 90%; height: auto; max-height: 90%;
        border: round $primary; background: $background; padding: 0 1;
    }
    HelpScreen Static { width: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static("legion keys\n\n" + help_text(), markup=False)

    def action_close(self) -> None:
        self.dismiss(None)
