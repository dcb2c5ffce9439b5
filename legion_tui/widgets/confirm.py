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

from legion_tui.widgets.lines import PaintedLine

ConfirmKind = Literal[
    "stop", "force-stop", "abort", "quit", "land", "commit", "push", "discard", "attach"
]


@dataclass(frozen=True, slots=True)
class ConfirmRequest:
    kind: ConfirmKind
    node_id: str | None  # locked at the key press; None for quit
    prompt: str
    choices: tuple[str, ...] = ()  # other keys that answer it (the land's `m` mode), not "no"


class ConfirmBar(PaintedLine, can_focus=True):
    DEFAULT_CSS = """
    ConfirmBar { height: 1; display: none; }
    ConfirmBar.-asking { display: block; }
    """

    class Answered(Message):
        def __init__(
            self, request: ConfirmRequest, confirmed: bool, choice: str | None = None
        ) -> None:
            super().__init__()
            self.request = request
            self.confirmed = confirmed
            self.choice = choice  # one of the request's `choices`, pressed instead of y

    def __init__(self, *, floor: bool = True, id: str | None = None) -> None:
        super().__init__(floor=floor, id=id)
        self.request: ConfirmRequest | None = None
        self._return_focus: Widget | None = None

    @property
    def asking(self) -> bool:
        return self.request is not None

    def ask(self, request: ConfirmRequest) -> None:
        if self.request is not None:
            # Focus reaches the bar a moment after `ask` (Textual defers it), so a fast
            # next key can still hit a binding and ask again: that key is the answer to
            # the open question — any key but y: no.
            self._answer(False)
            return
        self.request = request
        focused = self.screen.focused
        if focused is not self:  # still here from the last answer: keep its way back
            self._return_focus = focused
        self.add_class("-asking")
        self.refresh()
        self.focus()

    def cancel(self) -> None:
        """Answer "no" to a question still open (nothing happens when none is): the
        screen went under another one, and a prompt the user cannot see must never be
        answered by a key pressed long after, somewhere else."""
        self._answer(False)

    def _answer(self, confirmed: bool, choice: str | None = None) -> None:
        request = self.request
        if request is None:
            return
        self.request = None
        self.remove_class("-asking")
        back = self._return_focus
        # Never left focused while not asking: with focus it took every key (500 fast
        # keys once left a bar holding it, and the dashboard ignored all keys after).
        if back is not None and back is not self and back.is_attached:
            back.focus()
        else:
            self.blur()
        answered = self.Answered(request, confirmed, choice)
        # Sent as the bar's own, whoever's handler runs now: Textual stops a message at
        # its sender, and one made while the screen handles its ScreenSuspend (cancel)
        # stopped there and never reached the app.
        answered.set_sender(self)
        self.post_message(answered)

    def on_key(self, event: events.Key) -> None:
        if self.request is None:
            return  # no question (focus has not moved back yet): not ours to swallow
        # Swallow the key whatever it is: it answers the question and nothing else.
        event.stop()
        event.prevent_default()
        choice = event.character if event.character in self.request.choices else None
        self._answer(event.key == "y", choice)

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
