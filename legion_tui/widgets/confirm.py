"""The in-place confirm bar (SPEC §7.3): `y` confirms, any other key cancels.

The request carries the node id captured when the key was pressed, so re-sorted or new
rows can never redirect it. The bar takes focus while it asks and swallows the next key
whatever it is, so that key cannot also trigger a binding behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rich.segment import Segment
from textual import events
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from legion_tui.themes import DEFAULT_THEME
from legion_tui.widgets.lines import PaintedLine

ConfirmKind = Literal["stop", "force-stop", "quit"]


@dataclass(frozen=True, slots=True)
class ConfirmRequest:
    kind: ConfirmKind
    node_id: str | None  # locked at the key press; None for quit
    prompt: str


class ConfirmBar(PaintedLine, can_focus=True):
    DEFAULT_CSS = """
    ConfirmBar { height: 1; display: none; }
    ConfirmBar.-asking { display: block; }
    """

    class Answered(Message):
        def __init__(self, request: ConfirmRequest, confirmed: bool) -> None:
            super().__init__()
            self.request = request
            self.confirmed = confirmed

    def __init__(
        self, *, theme: str = DEFAULT_THEME, floor: bool = True, id: str | None = None
    ) -> None:
        super().__init__(theme=theme, floor=floor, id=id)
        self.request: ConfirmRequest | None = None
        self._return_focus: Widget | None = None

    @property
    def asking(self) -> bool:
        return self.request is not None

    def ask(self, request: ConfirmRequest) -> None:
        self.request = request
        self._return_focus = self.screen.focused
        self.add_class("-asking")
        self.refresh()
        self.focus()

    def _answer(self, confirmed: bool) -> None:
        request = self.request
        if request is None:
            return
        self.request = None
        self.remove_class("-asking")
        if self._return_focus is not None and self._return_focus.is_attached:
            self._return_focus.focus()
        self._return_focus = None
        self.post_message(self.Answered(request, confirmed))

    def on_key(self, event: events.Key) -> None:
        # Swallow the key whatever it is: it answers the question and nothing else.
        event.stop()
        event.prevent_default()
        self._answer(event.key == "y")

    def on_blur(self) -> None:
        # Focus moved away (a click elsewhere): that is "any other key" — cancel.
        if self.request is not None:
            self._answer(False)

    def render_line(self, y: int) -> Strip:
        paint = self.paint
        width = self.size.width
        text = self.request.prompt if self.request is not None else ""
        segs = [Segment(" " + text, paint.warning)]
        return Strip(segs).crop(0, width).adjust_cell_length(width, paint.blank)
