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
    from legion_tui.prices import CostBasis
    from legion_tui.session.progress import SessionProgress

__all__ = ["Spend", "cost_text", "fmt_spend", "fmt_usd", "spend_of", "total_spend"]


class Spend(NamedTuple):
    """A NamedTuple, not a dataclass: `dataclasses` (and `inspect` under it) was most of
    what a control verb's import of this module cost."""

    usd: float = 0.0
    tokens: int = 0  # input + output (cache reads and writes are in the cost, not here)
    estimated: int = 0  # sessions whose cost is, in part, the price table's estimate
    unpriced: int = 0  # sessions with calls no table prices: `usd` is then a floor

    # Sums, never concatenates (a tuple's own + would give a longer tuple).
    def __add__(self, other: "Spend") -> "Spend":  # type: ignore[override]
        return Spend(self.usd + other.usd, self.tokens + other.tokens,
                     self.estimated + other.estimated, self.unpriced + other.unpriced)  # fmt: skip

    def __sub__(self, other: "Spend") -> "Spend":
        return Spend(self.usd - other.usd, self.tokens - other.tokens,
                     self.estimated - other.estimated, self.unpriced - other.unpriced)  # fmt: skip


def spend_of(progress: "SessionProgress") -> Spend:
    usage = progress.tokens
    basis = progress.cost_basis
    return Spend(usage.cost, usage.input + usage.output,
                 int(progress.estimated_calls > 0), int(basis == "unknown"))  # fmt: skip


def total_spend(progresses: "Iterable[SessionProgress]") -> Spend:
    total = Spend()
    for progress in progresses:
        total += spend_of(progress)
    return total


def fmt_usd(usd: float) -> str:
    """Cents for a dollar and more; a tenth of a cent below (agents spend in small bits)."""
    return f"${usd:.2f}" if usd >= 1 else f"${usd:.3f}"


def fmt_spend(spend: Spend) -> str:
    """A sum of sessions' costs as it is known: `~$0.12` when part of it is the price
    table's estimate, `$0.12+?` when some calls have no price at all (a floor)."""
    usd = fmt_usd(spend.usd)
    if spend.unpriced:
        return f"{usd}+?"
    return f"~{usd}" if spend.estimated else usd


def cost_text(usd: float, basis: "CostBasis", *, long: bool = False) -> str:
    """One session's cost as it is known (`SessionProgress.cost`, `.cost_basis`): the
    agent's own figure; `~$0.012` (`$0.0123 est.` long) from the price table; `$?` (`$?
    tokens only` long) when a model no table knows made calls — never $0 for a cost
    nobody knows."""
    if basis == "unknown":
        return "$? tokens only" if long else "$?"
    figure = f"${usd:.4f}" if long else fmt_usd(usd)
    if basis == "estimated":
        return f"{figure} est." if long else f"~{figure}"
    return figure


def is_usd(value: object) -> bool:
    """A budget in dollars: a finite number > 0 (not a bool)."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and 0 < value < float("inf"))  # fmt: skip
