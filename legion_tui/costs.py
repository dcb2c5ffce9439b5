"""What a run has spent (issue 12 item 6): dollars and tokens, summed from the sessions.

One source for every figure: `SessionProgress.tokens` (the cost each agent's own session
records; a simulated agent's is pretend, and counted like any other so a budget can be
tried without money). The header's total, the tree's `$` column, `legion status` and
the budget all sum the same fields, so they agree.
"""

# (No `from __future__ import annotations`: see `legion_tui.commands`.)

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # a name only: `legion status` formats a document and needs no parser
    from legion_tui.session.progress import SessionProgress

__all__ = ["Spend", "fmt_usd", "spend_of", "total_spend"]


class Spend(NamedTuple):
    """A NamedTuple, not a dataclass: `dataclasses` (and `inspect` under it) was most of
    what a control verb's import of this module cost."""

    usd: float = 0.0
    tokens: int = 0  # input + output (cache reads and writes are in the cost, not here)

    # Sums, never concatenates (a tuple's own + would give a 4-tuple).
    def __add__(self, other: "Spend") -> "Spend":  # type: ignore[override]
        return Spend(self.usd + other.usd, self.tokens + other.tokens)


def spend_of(progress: "SessionProgress") -> Spend:
    usage = progress.tokens
    return Spend(usage.cost, usage.input + usage.output)


def total_spend(progresses: "Iterable[SessionProgress]") -> Spend:
    usd, tokens = 0.0, 0
    for progress in progresses:
        usage = progress.tokens
        usd += usage.cost
        tokens += usage.input + usage.output
    return Spend(usd, tokens)


def fmt_usd(usd: float) -> str:
    """Cents for a dollar and more; a tenth of a cent below (agents spend in small bits)."""
    return f"${usd:.2f}" if usd >= 1 else f"${usd:.3f}"


def is_usd(value: object) -> bool:
    """A budget in dollars: a finite number > 0 (not a bool)."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and 0 < value < float("inf"))  # fmt: skip
