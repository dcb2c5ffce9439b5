"""The new-agent form (issue 12): `n` or `New agent…` in the palette.

Role card, agent kind, a multi-line task, how many attempts (a fan-out: `×3`, or `pi,
claude, codex`, each in its own worktree), an optional name and phases file; the parent
is the lead selected when `n` was pressed, else root. Ctrl+S (or Enter on the last
field) spawns through the same operation `legion spawn` uses; a refusal (an unknown or
broken card, a bad name, a budget, a phases file) is shown in the form, which stays
open with everything typed. The cards are the ones on disk when the form opened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Input, Select, Static, TextArea
from textual.worker import Worker

from legion_tui.agents.cards import CardSet
from legion_tui.widgets.modal import Modal
from legion_tui.wire.names import OpError
from legion_tui.wire.spawn_request import NEW_GROUP, ChildRequest, split_attempt

# What the form offers for the agent: `auto` lets the card and the settings decide.
AGENT_KINDS: tuple[str, ...] = ("auto", "pi", "claude", "codex", "sim")
DEFAULT_CARD = "worker"
PHASES_HINT = "optional · a lead's phases file, from the project"
EMPTY_HINT = "Nothing started yet — n starts an agent (or Ctrl+P → New agent…)"
HINT = "Ctrl+S starts it · Enter on the last field starts it · Tab moves · Esc cancels"

ATTEMPTS_HINT = "optional · ×3, or pi, claude, codex (pi:MODEL): a fan-out"
MAX_ATTEMPTS = 16

Spawn = Callable[[str, Sequence[ChildRequest]], Awaitable[str]]


def attempts_of(text: str, kind: str | None) -> list[str | None] | str:
    """The Attempts field: empty → one agent; `×3` (or `x3`, `3`) → three of the chosen
    kind; `pi, claude, codex` → one of each. A string: what is wrong with it."""
    text = text.strip()
    if not text:
        return [kind]
    count = text.lstrip("×xX").strip()
    if count.isdigit():
        n = int(count)
        if not 2 <= n <= MAX_ATTEMPTS:
            return f"attempts: a fan-out is 2 to {MAX_ATTEMPTS} attempts, not {n}"
        return [kind] * n
    # A kind is read in any case; a model's name is kept as typed (`pi:Qwen/Qwen3-32B`).
    kinds = [f"{k.partition(':')[0].lower()}{''.join(k.partition(':')[1:])}"
             for k in text.replace(" ", ",").split(",") if k.strip()]  # fmt: skip
    unknown = [k for k in kinds if k.partition(":")[0] not in AGENT_KINDS]
    if unknown:
        return (f"attempts: {', '.join(unknown)} is no agent kind — write ×N, or kinds "
                f"from {', '.join(AGENT_KINDS)}")  # fmt: skip
    if len(kinds) < 2:
        return "attempts: a fan-out is 2 attempts or more (×2, or two kinds)"
    return [None if k == "auto" else k for k in kinds]  # `pi:MODEL`: a kind and its model


def card_options(cards: CardSet) -> list[tuple[str, str]]:
    """Every card by name, a broken one said so (choosing it shows why it is refused)."""
    options = [(c.name, c.name) for c in cards]
    options += [(f"{name} (invalid)", name) for name in cards.broken]
    return sorted(options, key=lambda option: option[1])


def card_descriptions(cards: CardSet) -> dict[str, str]:
    about = {c.name: c.description for c in cards}
    about.update({name: "invalid: legion doctor says why" for name in cards.broken})
    return about


class NewAgentScreen(Modal[str | None]):
    DEFAULT_CSS = """
    NewAgentScreen { align: center middle; }
    NewAgentScreen #new-agent-frame {
        width: 84; max-width: 95%; height: auto; max-height: 95%;
        border: round $primary; background: $background; padding: 0 1;
    }
    NewAgentScreen #new-agent-title { color: $primary; text-style: bold; margin-bottom: 1; }
    NewAgentScreen .new-agent-row { height: auto; margin-bottom: 1; }
    NewAgentScreen .new-agent-label { width: 12; color: $text-muted; }
    NewAgentScreen .new-agent-field { width: 1fr; }
    NewAgentScreen #card-row { margin-bottom: 0; }
    NewAgentScreen #card-about { color: $text-muted; height: 1; margin: 0 0 1 12; }
    NewAgentScreen #task { height: 5; }
    NewAgentScreen #new-agent-error { color: $error; height: auto; }
    NewAgentScreen #new-agent-hint { color: $text-muted; }
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
        self._descriptions = card_descriptions(cards)
        names = [value for _label, value in self._options]
        self._first_card = DEFAULT_CARD if DEFAULT_CARD in names else (names[0] if names else None)
        self.submitting: Worker[None] | None = None  # a spawn under way (one at a time)

    def compose(self) -> ComposeResult:
        fields: list[tuple[str, Widget]] = [
            (
                "Role card",
                Select(
                    self._options,
                    id="card",
                    compact=True,
                    allow_blank=self._first_card is None,
                    value=self._first_card if self._first_card is not None else Select.NULL,
                ),
            ),
            ("", Static(self._about(self._first_card), id="card-about", markup=False)),
            (
                "Agent",
                Select([(k, k) for k in AGENT_KINDS], id="kind", compact=True, allow_blank=False),
            ),
            ("Task", TextArea(id="task", soft_wrap=True, compact=True, tab_behavior="focus")),
            ("Attempts", Input(id="attempts", placeholder=ATTEMPTS_HINT, compact=True)),
            ("Name", Input(id="name", placeholder="optional · <role>-N (a fan-out's group)",
                           compact=True)),
            ("Phases", Input(id="phases", placeholder=PHASES_HINT, compact=True)),
        ]
        # Scrolls when the terminal is too short for it: Tab brings each field into view.
        with VerticalScroll(id="new-agent-frame"):
            yield Static(f"New agent under {self.parent_path}", id="new-agent-title", markup=False)
            for label, field in fields:
                if not label:
                    yield field
                    continue
                field.add_class("new-agent-field")
                row_id = f"{field.id}-row" if field.id else None
                with Horizontal(classes="new-agent-row", id=row_id):
                    yield Static(label, classes="new-agent-label", markup=False)
                    yield field
            yield Static("", id="new-agent-error", markup=False)
            yield Static(HINT, id="new-agent-hint", markup=False)

    def _about(self, card: object) -> str:
        """One line on the chosen card: its description (the Select shows its name)."""
        return self._descriptions.get(card, "") if isinstance(card, str) else ""

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "card":
            self.query_one("#card-about", Static).update(self._about(event.value))

    def on_mount(self) -> None:
        self.query_one("#task", TextArea).focus()

    def request(self) -> list[ChildRequest] | str:
        """The form as a spawn batch — one agent, or a fan-out's attempts — or what is
        missing (checked before asking)."""
        card = self.query_one("#card", Select).value
        kind = self.query_one("#kind", Select).value
        task = self.query_one("#task", TextArea).text.strip()
        name = self.query_one("#name", Input).value.strip()
        phases = self.query_one("#phases", Input).value.strip()
        chosen = None if kind == "auto" or not isinstance(kind, str) else kind
        kinds = attempts_of(self.query_one("#attempts", Input).value, chosen)
        if not isinstance(card, str):
            return "choose a role card"
        if not task:
            return "the task is empty: say what the agent should do"
        if isinstance(kinds, str):
            return kinds
        if len(kinds) == 1:
            return [ChildRequest(role=card, task=task, name=name or None,
                                 phases=phases or None, kind=chosen)]  # fmt: skip
        if phases:
            return "a fan-out's attempts are single agents: leave Phases empty"
        group = name or NEW_GROUP  # the group's name: the host picks <role>-N without one
        attempts = [split_attempt(spec) for spec in kinds]
        return [ChildRequest(role=card, task=task, kind=k, model=m, group=group)
                for k, m in attempts]  # fmt: skip

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

    async def _start(self, request: list[ChildRequest]) -> None:
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
