"""The message box (`s`, on the tree and in the detail overlay): talk to an agent.

Docked under the tree or the overlay's tabs, hidden until `s`: one row naming whom it
talks to and how (a steer for a running agent, a follow-up that starts a turn for an
idle one), the text as typed — several lines if need be — and, once sent, the agent's
own receipt, which follows the model (`queued` → `delivered` when its session has it).

Keys: Enter sends · Ctrl+J a new line (Shift+Enter too, where the terminal reports it:
most send the same byte for Enter and Shift+Enter, Ctrl+J is the one that always works)
· ↑ on the first line / ↓ on the last recall earlier messages · Esc closes.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static, TextArea

from legion_tui.state import NodeView
from legion_tui.widgets.overlay.talk import MessageHistory, SentMessage, message_mode

__all__ = ["MessageBox", "MessageText"]

NEW_LINE_KEYS = frozenset({"ctrl+j", "shift+enter"})
KEYS_HINT = "⏎ sends · ^J new line · ↑↓ history · esc closes"


class MessageText(TextArea):
    """The box's text area: the keys of the module doc, the rest as TextArea's."""

    DEFAULT_CSS = """
    MessageText { height: auto; max-height: 6; border: none; padding: 0 1; }
    MessageText:focus { border: none; }
    """

    def __init__(self, box: MessageBox, *, id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, compact=True, tab_behavior="focus")
        self.box = box

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        row, _column = self.cursor_location
        handled = True
        if key == "enter":
            self.box.send()
        elif key in NEW_LINE_KEYS:
            start, end = self.selection
            self.replace("\n", start, end, maintain_selection_offset=False)
        elif key == "escape":
            self.box.close()
        elif key == "up" and row == 0:
            self.box.recall(-1)
        elif key == "down" and row == self.document.line_count - 1:
            self.box.recall(1)
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)


class MessageBox(Vertical):
    class Submitted(Message):
        def __init__(self, box: MessageBox, node_id: str, text: str) -> None:
            super().__init__()
            self.box = box
            self.node_id = node_id
            self.text = text

    DEFAULT_CSS = """
    MessageBox { height: auto; display: none; background: $background; }
    MessageBox.-open, MessageBox.-receipt { display: block; }
    MessageBox > .message-head { height: 1; padding: 0 1; color: $text-muted; display: none; }
    MessageBox > .message-receipt { height: 1; padding: 0 1; color: $accent; display: none; }
    MessageBox.-open > .message-head { display: block; }
    MessageBox.-open > MessageText { display: block; }
    MessageBox > MessageText { display: none; }
    MessageBox.-receipt > .message-receipt { display: block; }
    """

    def __init__(self, history: MessageHistory, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.history = history
        self.node_id: str | None = None
        self.sent: SentMessage | None = None  # the last message and its receipt
        self._head = Static("", classes="message-head", markup=False)
        self.text_area = MessageText(self)
        self._receipt = Static("", classes="message-receipt", markup=False)
        self._return_focus: Widget | None = None
        self._recalled = len(history.entries)  # == len: the draft, not a recalled message
        self._draft = ""

    def compose(self) -> ComposeResult:
        yield self._head
        yield self.text_area
        yield self._receipt

    # ----- asking ---------------------------------------------------------------------
    def ask(self, view: NodeView, *, text: str | None = None) -> None:
        """Open the box for `view`'s agent; the target is locked now, like a stop's.
        `text` prefills it (a review comment), the cursor at its end."""
        if text is not None:
            self.text_area.load_text(text)
            last = self.text_area.document.line_count - 1
            self.text_area.cursor_location = (last, len(self.text_area.document[last]))
        elif self.node_id != view.node.id:
            self.text_area.load_text("")
        self.node_id = view.node.id
        mode, how = message_mode(view)
        self._head.update(f"{mode} {view.node.name} ({how}) · {KEYS_HINT}")
        self.text_area.placeholder = f"message to {view.node.name}"
        focused = self.screen.focused
        if focused is not None and focused is not self.text_area:
            self._return_focus = focused
        self._recalled = len(self.history.entries)
        self.add_class("-open")
        self.text_area.focus()

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def close(self) -> None:
        """Hide the box (its receipt stays until the next message) and give the focus
        back: a hidden text area keeping focus would take every key typed after."""
        self.remove_class("-open")
        back = self._return_focus
        self._return_focus = None
        if back is not None and back.is_attached:
            back.focus()
        else:
            self.text_area.blur()

    def send(self) -> None:
        text, node_id = self.text_area.text.strip(), self.node_id
        self.close()
        if not text or node_id is None:
            return
        self.text_area.load_text("")
        self.history.add(text)
        self.post_message(self.Submitted(self, node_id, text))

    def recall(self, step: int) -> None:
        """↑ (-1) an older message, ↓ (+1) a newer one, back down to the draft."""
        entries = self.history.entries
        at = self._recalled + step
        if at < 0 or at > len(entries):
            return
        if self._recalled == len(entries):
            self._draft = self.text_area.text  # leaving the draft: keep it for ↓
        self._recalled = at
        text = entries[at] if at < len(entries) else self._draft
        self.text_area.load_text(text)
        # The cursor where the next ↑/↓ keeps walking: the first line going up, the last going down.
        last = self.text_area.document.line_count - 1
        self.text_area.cursor_location = (0, 0) if step < 0 else (last, 0)

    # ----- the receipt ----------------------------------------------------------------
    def show_sent(self, sent: SentMessage, view: NodeView | None) -> None:
        self.sent = sent
        self.follow(view)

    def follow(self, view: NodeView | None) -> None:
        """Repaint the receipt from the model (its node changed)."""
        if self.sent is None:
            return
        self._receipt.update(self.sent.line(view))
        self.add_class("-receipt")
