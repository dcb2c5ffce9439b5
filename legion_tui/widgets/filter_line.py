"""The one-line input docked at the bottom for the tree filter (`/`). Hidden until asked
for; Esc closes without acting. (Steering has its own box: widgets/overlay/message_box.py.)"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input


class _BottomLine(Input):
    DEFAULT_CSS = """
    _BottomLine { height: 1; border: none; padding: 0 1; display: none; }
    _BottomLine.-open { display: block; }
    /* Input's own `:focus { border: tall }` outranks the plain rule: without this the
       one-line box is all border and the typed text has no row to show in. */
    _BottomLine:focus { border: none; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Cancel", show=False)]

    _return_focus: Widget | None = None

    def open(self, placeholder: str, value: str = "") -> None:
        self.placeholder = placeholder
        self.value = value
        focused = self.screen.focused
        if focused is not self:  # opened again before it took focus: keep the way back
            self._return_focus = focused
        self.add_class("-open")
        self.focus()

    def finish(self) -> None:
        """Hide the line and give focus back to whoever had it (the tree, the overlay)."""
        self.remove_class("-open")
        back = self._return_focus
        self._return_focus = None
        # A hidden line must not keep focus: it would take every key typed after.
        if back is not None and back is not self and back.is_attached:
            back.focus()
        else:
            self.blur()

    def action_close(self) -> None:
        self.finish()
        self.closed()

    def closed(self) -> None:
        """Hook for subclasses."""


class FilterLine(_BottomLine):
    class FilterChanged(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def ask(self, current: str) -> None:
        self.open(
            "filter: name, role or path; :live :waiting :stuck :failed :settled :retired"
            " (Enter keeps, Esc clears)",
            current,
        )

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.FilterChanged(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.finish()

    def closed(self) -> None:
        self.post_message(self.FilterChanged(""))
