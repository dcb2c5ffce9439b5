"""The new-agent form (issue 12): `n` or `New agent…` in the palette.

Role card, agent kind, a multi-line task, an optional name and phases file; the parent
is the lead selected when `n` was pressed, else root. Ctrl+S (or Enter on the last
field) spawns through the same operation `legion spawn` uses; a refusal (an unknown or
broken card, a bad name, a budget, a phases file) is shown in the form, which stays
open with everything typed. The cards are the ones on disk when the form opened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Select, Static, TextArea
from textual.worker import Worker

from legion_tui.agents.cards import CardSet
from legion_tui.ops import OpError
from legion_tui.supervisor.admission import ChildRequest

# What the form offers for the agent: `auto` lets the card and the settings decide.
AGENT_KINDS: tuple[str, ...] = ("auto", "pi", "claude", "codex", "sim")
DEFAULT_CARD = "worker"
EMPTY_HINT = "Nothing started yet — n starts an agent (or Ctrl+P → New agent…)"
HINT = "Ctrl+S starts it · Enter on the last field starts it · Tab moves · Esc cancels"

Spawn = Callable[[str, ChildRequest], Awaitable[str]]


def card_options(cards: CardSet) -> list[tuple[str, str]]:
    """Every card by name, a broken one said so (choosing it shows why it is refused)."""
    options = [(f"{c.name} — {c.description}" if c.description else c.name, c.name) for c in cards]
    options += [(f"{name} — invalid (legion doctor says why)", name) for name in cards.broken]
    return sorted(options, key=lambda option: option[1])


class NewAgentScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    NewAgentScreen { align: center middle; }
    NewAgentScreen #new-agent-frame {
        width: 76; max-width: 90%; height: auto; max-height: 95%;
        border: round $primary; background: $background; padding: 0 1;
    }
    NewAgentScreen #new-agent-title { color: $primary; text-style: bold; }
    NewAgentScreen .new-agent-label { color: $text-muted; margin-top: 1; }
    NewAgentScreen #task { height: 6; }
    NewAgentScreen #new-agent-error { color: $error; height: auto; margin-top: 1; }
    NewAgentScreen #new-agent-hint { color: $text-muted; margin-top: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "submit", "Start", priority=True),
    ]

    def __init__(
        self, cards: CardSet, *, parent_id: str, parent_path: str, spawn: Spawn
    ) -> None:
        super().__init__()
        self.parent_id = parent_id
        self.parent_path = parent_path
        self._spawn = spawn
        self._options = card_options(cards)
        names = [value for _label, value in self._options]
        self._first_card = DEFAULT_CARD if DEFAULT_CARD in names else (names[0] if names else None)
        self.submitting: Worker[None] | None = None  # a spawn under way (one at a time)

    def compose(self) -> ComposeResult:
        with Vertical(id="new-agent-frame"):
            yield Static(f"New agent under {self.parent_path}", id="new-agent-title", markup=False)
            yield Static("Role card", classes="new-agent-label")
            yield Select(
                self._options,
                id="card",
                allow_blank=self._first_card is None,
                value=self._first_card if self._first_card is not None else Select.NULL,
            )
            yield Static("Agent", classes="new-agent-label")
            yield Select([(kind, kind) for kind in AGENT_KINDS], id="kind", allow_blank=False)
            yield Static("Task", classes="new-agent-label")
            yield TextArea(id="task", soft_wrap=True, show_line_numbers=False)
            yield Static("Name (optional)", classes="new-agent-label")
            yield Input(id="name", placeholder="<role>-N")
            yield Static("Phases file (optional, a lead's)", classes="new-agent-label")
            yield Input(id="phases", placeholder=".legion/phases/release.yaml")
            yield Static("", id="new-agent-error", markup=False)
            yield Static(HINT, id="new-agent-hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#task", TextArea).focus()

    def request(self) -> ChildRequest | str:
        """The form as a spawn request, or what is missing (checked before asking)."""
        card = self.query_one("#card", Select).value
        kind = self.query_one("#kind", Select).value
        task = self.query_one("#task", TextArea).text.strip()
        name = self.query_one("#name", Input).value.strip()
        phases = self.query_one("#phases", Input).value.strip()
        if not isinstance(card, str):
            return "choose a role card"
        if not task:
            return "the task is empty: say what the agent should do"
        return ChildRequest(
            role=card,
            task=task,
            name=name or None,
            phases=phases or None,
            kind=None if kind == "auto" or not isinstance(kind, str) else kind,
        )

    def show_error(self, text: str) -> None:
        self.query_one("#new-agent-error", Static).update(text)

    def action_submit(self) -> None:
        if self.submitting is not None and self.submitting.is_running:
            return  # one spawn at a time: a second Ctrl+S must not start a twin
        request = self.request()
        if isinstance(request, str):
            self.show_error(request)
            return
        self.show_error("starting…")

        async def start() -> None:
            await self._start(request)

        self.submitting = self.run_worker(start, group="new-agent", exit_on_error=False)

    async def _start(self, request: ChildRequest) -> None:
        try:
            receipt = await self._spawn(self.parent_id, request)
        except OpError as error:
            self.show_error(f"{error.code}: {error.message}")
            return
        except Exception as error:  # a failure to act is reported, never swallowed
            self.show_error(f"{type(error).__name__}: {error}")
            return
        self.dismiss(receipt)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "phases":
            self.action_submit()  # Enter on the last field starts it
        else:
            self.focus_next()

    def action_cancel(self) -> None:
        self.dismiss(None)
