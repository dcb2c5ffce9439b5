"""The questions an agent waits on its user for (issue 12 item 5: "needs you").

Each backend learns of a question in its own protocol — Claude Code's `can_use_tool`
control request, Codex's approval server requests, pi's `extension_ui_request`, an exec
child asleep reading its terminal — and keeps it here with the way to answer it. The
supervisor hears only "needs input: <question>" and "answered" (`InputSink`: a question,
or None once nothing is asked), and writes BLOCKED / running through its one write path.
The next steer the user sends is the answer to the oldest question (`answer`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ALWAYS_WORDS", "PERMISSION_HINT", "YES_WORDS", "InputSink", "Questions",
           "declined_with_words", "is_always", "is_yes"]

# Told "needs input: question" (str) and "nothing is asked any more" (None).
InputSink = Callable[[str | None], None]

# What reads as "yes" to a permission or approval question; anything else is a no, and
# its text is the reason given to the agent.
YES_WORDS = frozenset({"y", "yes", "allow", "approve", "ok", "accept"})


# What reads as "yes, and do not ask again for this tool" (for the agent's session:
# never a rule written into the user's settings files).
ALWAYS_WORDS = frozenset({"a", "always", "allow always", "approve always", "yes always"})
# How a permission or approval question says its answers (the row shows it).
PERMISSION_HINT = "y once · a always · else no (your words say why)"


def is_yes(text: str) -> bool:
    return text.strip().lower().rstrip(".!") in YES_WORDS


def is_always(text: str) -> bool:
    return text.strip().lower().rstrip(".!") in ALWAYS_WORDS


def declined_with_words(text: str) -> bool:
    """A no that says why (not a bare `n`): the reason the agent should hear."""
    said = text.strip().lower().rstrip(".!")
    return bool(said) and not is_yes(text) and not is_always(text) and said not in ("n", "no")


@dataclass(frozen=True, slots=True)
class _Question:
    text: str
    answer: Callable[[str], None]


class Questions:
    """Open questions of one agent, oldest first; the sink hears the oldest one."""

    def __init__(self, sink: InputSink | None) -> None:
        self._sink = sink
        self._open: OrderedDict[str, _Question] = OrderedDict()
        self._told: str | None = None

    @property
    def has_sink(self) -> bool:
        """Whether anyone hears the questions (else there is no point looking for them)."""
        return self._sink is not None

    @property
    def current(self) -> str | None:
        """The question the user is asked now (the oldest), or None."""
        return next(iter(self._open.values())).text if self._open else None

    def ask(self, key: str, text: str, answer: Callable[[str], None]) -> None:
        """Open (or replace) question `key`; `answer` gets the user's reply text."""
        self._open[key] = _Question(" ".join(text.split()) or "input", answer)
        self._tell()

    def drop(self, key: str) -> None:
        """Question `key` is void (answered elsewhere, its turn ended)."""
        if self._open.pop(key, None) is not None:
            self._tell()

    def clear(self) -> None:
        self._open.clear()
        self._tell()

    def answer(self, text: str) -> bool:
        """Hand `text` to the oldest question; False when none is open."""
        if not self._open:
            return False
        _key, question = self._open.popitem(last=False)
        try:
            question.answer(text)
        finally:
            self._tell()
        return True

    def _tell(self) -> None:
        current = self.current
        if current != self._told:
            self._told = current
            if self._sink is not None:
                self._sink(current)
