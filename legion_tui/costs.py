"""What a run has spent (issue 12 item 6): dollars and tokens, summed from the sessions.

One source for every figure: `SessionProgress.tokens` (the cost each agent's own session
records; a simulated agent's is pretend, and counted like any other so a budget can be
tried without money). The header's total, the tree's `$` column, `legion status` and
the budget all sum the same fields, so they agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from legion_tui.session.progress import SessionProgress

__all__ = ["Spend", "fmt_usd", "spend_of", "total_spend"]


@dataclass(frozen=True, slots=True)
class Spend:
    usd: float = 0.0
    tokens: int = 0  # input + output (cache reads and writes are in the cost, not here)

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.usd + other.usd, self.tokens + other.tokens)


def spend_of(progress: SessionProgress) -> Spend:
    usage = progress.tokens
    return Spend(usage.cost, usage.input + usage.output)


def total_spend(progresses: Iterable[SessionProgress]) -> Spend:
    total = Spend()
    for progress in progresses:
        total += spend_of(progress)
    return total


def fmt_usd(usd: float) -> str:
    """Cents for a dollar and more; a tenth of a cent below (agents spend in small bits)."""
    return f"${usd:.2f}" if usd >= 1 else f"${usd:.3f}"
