"""The overlay's Mail tab: the mailbox's counts, one row per letter, the chosen one open.

A letter's subject is rarely the message: a handoff says "contract" and the body says
where the contract is and what to do with it. So the list is a cursor (↑/↓, j/k, a
click) and the highlighted letter shows whole underneath — its sender, addressee, what
became of it, and its body — the two-pane reading a mail client gives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from legion_tui.model_records import Message
from legion_tui.state import NodeView
from legion_tui.widgets.overlay.detail_text import letter_row, letter_text, mailbox_line


class LetterList(OptionList):
    """The letters, one row each; j/k move like everywhere else in the dashboard."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", show=False),
        Binding("k", "cursor_up", show=False),
    ]


class Letters(Vertical):
    DEFAULT_CSS = """
    Letters { height: 1fr; }
    Letters #letters-counts { height: 1; color: $text-muted; }
    Letters LetterList { height: auto; max-height: 40%; border: none; padding: 0; }
    Letters LetterList:focus { border: none; }
    Letters #letter-scroll { height: 1fr; border-top: solid $primary-darken-2; }
    Letters #letter-body { height: auto; }
    """

    def __init__(self, name_of: Callable[[str], str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._name_of = name_of
        self._counts = Static(id="letters-counts", markup=False)
        self._list = LetterList(id="letters-list", markup=False)
        self._body = Static(id="letter-body", markup=False)
        self._letters: dict[str, Message] = {}
        self._shown: tuple[tuple[int, int], ...] = ()  # (id, state) of the rows on screen
        self._counts_shown = ""

    def compose(self) -> ComposeResult:
        yield self._counts
        yield self._list
        with VerticalScroll(id="letter-scroll"):
            yield self._body

    def show(self, view: NodeView) -> None:
        """The node's mailbox as it is now; the open letter stays open as mail arrives."""
        counts = mailbox_line(view)
        if counts != self._counts_shown:  # every update is a layout pass: only on change
            self._counts_shown = counts
            self._counts.update(counts)
        rows = tuple((m.id, int(m.delivered)) for m in view.messages)
        if rows == self._shown:
            return  # nothing moved: no rebuild, no lost scroll position
        self._shown = rows
        self._letters = {str(m.id): m for m in view.messages}
        chosen = self._list.highlighted_option
        keep = chosen.id if chosen is not None else None
        self._list.clear_options()
        self._list.add_options(Option(letter_row(m, view.node.id), id=str(m.id))
                               for m in view.messages)
        if not self._letters:
            self._body.update(Text("no mail", style="dim"))
            return
        # The letter that was open stays open; otherwise the newest one opens.
        at = self._list.get_option_index(keep) if keep in self._letters else len(rows) - 1
        self._list.highlighted = at
        self._open(self._list.get_option_at_index(at).id)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self._open(event.option.id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()  # Enter on a letter: it is already open below; nothing else to do

    def _open(self, letter_id: str | None) -> None:
        msg = self._letters.get(letter_id or "")
        if msg is not None:
            self._body.update(letter_text(msg, self._name_of))
