"""The commit message editor (`e` on the commit confirm): the message the confirm named,
in a text area; Ctrl+S keeps the edit and asks again, Esc keeps the old message."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static, TextArea

from legion_tui.widgets.modal import Modal

__all__ = ["CommitMessageScreen"]


class CommitMessageScreen(Modal[str | None]):
    DEFAULT_CSS = """
    CommitMessageScreen { align: center middle; }
    CommitMessageScreen #commit-frame {
        width: 80%; height: auto; max-height: 80%;
        border: round $primary; background: $background; padding: 0 1;
    }
    CommitMessageScreen TextArea { height: auto; min-height: 4; max-height: 16; }
    CommitMessageScreen .commit-hint { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "keep", "Keep", priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
    ]

    def __init__(self, branch: str, message: str) -> None:
        super().__init__()
        self.branch = branch
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(id="commit-frame"):
            yield Static(f"Commit message for {self.branch}", markup=False)
            yield TextArea(self.message, id="commit-text", soft_wrap=True)
            yield Static("Ctrl+S keeps it · Esc cancels", classes="commit-hint", markup=False)

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_keep(self) -> None:
        text = self.query_one(TextArea).text.strip()
        self.dismiss(text + "\n" if text else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
