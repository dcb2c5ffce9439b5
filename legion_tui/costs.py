"""What a run has spent (issue 12 item 6), and what a model call costs (issue 32 item 1).

One source for every figure: `SessionProgress.tokens` (the cost each agent's own session
records; a simulated agent's is pretend, and counted like any other so a budget can be
tried without money). The header's total, the tree's `$` column, `legion status` and
the budget all sum the same fields, so they agree.

What a call costs when its agent does not say: pi writes each call's
cost into its session file; Claude Code's and Codex's files carry the tokens only, so
their calls are priced here from a maintained table (genai-prices, pinned: a figure must
not move under a test or a user between two installs) by provider and model, and marked
as estimates. A model no table knows is not priced at all: its calls are counted as
unpriced and the cost reads `$?`, never `$0`. The table is asked once per (provider,
model) for four rates, at a size below any tier (1 000 tokens): a call is then four
multiplications, where asking the table per call costs about a millisecond and importing
it 0.4 s (done once, on the first unpriced call). Tiered prices (a prompt over 200k
tokens) are not applied: an estimate says so.
"""

# (No `from __future__ import annotations`: see `legion_tui.commands`.)

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

if TYPE_CHECKING:  # a name only: `legion status` formats a document and needs no parser
    from legion_tui.model_records import Usage

__all__ = [
    "CostBasis",
    "Rates",
    "Spend",
    "cost_text",
    "fmt_spend",
    "fmt_usd",
    "priced",
    "rates",
    "spend_of",
    "total_spend",
]

# Whose figure a cost is: the agent's own, the price table's, or nobody's.
CostBasis = Literal["reported", "estimated", "unknown"]


class SessionFigures(Protocol):
    """What a sum reads of a `SessionProgress` (named here, not imported: the session
    parsers price their calls with this module)."""

    @property
    def tokens(self) -> "Usage": ...

    @property
    def cost(self) -> float: ...

    @property
    def cost_basis(self) -> CostBasis: ...

    # What those two are made of (`total_spend` reads them directly).
    @property
    def reported_cost(self) -> float | None: ...

    @property
    def estimated_calls(self) -> int: ...

    @property
    def unpriced_calls(self) -> int: ...


class Spend(NamedTuple):
    """A NamedTuple, not a dataclass: `dataclasses` (and `inspect` under it) was most of
    what a control verb's import of this module cost."""

    usd: float = 0.0
    tokens: int = 0  # input + output (cache reads and writes are in the cost, not here)
    estimated: int = 0  # sessions whose cost is, in part, the price table's estimate
    unpriced: int = 0  # sessions with calls no table prices: `usd` is then a floor
    pretend: int = 0  # simulated agents' sessions with a cost: the demo's made-up dollars

    # Sums, never concatenates (a tuple's own + would give a longer tuple).
    def __add__(self, other: "Spend") -> "Spend":  # type: ignore[override]
        return Spend(self.usd + other.usd, self.tokens + other.tokens,
                     self.estimated + other.estimated, self.unpriced + other.unpriced,
                     self.pretend + other.pretend)  # fmt: skip

    def __sub__(self, other: "Spend") -> "Spend":
        return Spend(self.usd - other.usd, self.tokens - other.tokens,
                     self.estimated - other.estimated, self.unpriced - other.unpriced,
                     self.pretend - other.pretend)  # fmt: skip


def spend_of(progress: SessionFigures) -> Spend:
    usage, basis = progress.tokens, progress.cost_basis
    return Spend(progress.cost, usage.input + usage.output,
                 int(basis == "estimated"), int(basis == "unknown"))  # fmt: skip


def total_spend(progresses: Iterable[SessionFigures]) -> Spend:
    """The sum of `spend_of` over the sessions, in plain locals: the budget sums a whole
    run on every model change, and a `Spend` built and added per session made 1 000
    sessions cost 3.1 ms instead of 0.17. So `SessionProgress.cost` and `.cost_basis`
    are read from their fields here, not through the two properties (1 000 sessions:
    0.45 ms through them, 0.18 so)."""
    usd, tokens, estimated, unpriced = 0.0, 0, 0, 0
    for progress in progresses:
        usage = progress.tokens
        tokens += usage.input + usage.output
        reported = progress.reported_cost
        if reported is not None and reported >= usage.cost:
            usd += reported  # the agent's own total: "reported"
            continue
        usd += usage.cost
        if progress.unpriced_calls:
            unpriced += 1
        elif progress.estimated_calls:
            estimated += 1
    return Spend(usd, tokens, estimated, unpriced)


def fmt_usd(usd: float) -> str:
    """Cents for a dollar and more; a tenth of a cent below (agents spend in small bits)."""
    return f"${usd:.2f}" if usd >= 1 else f"${usd:.3f}"


def fmt_spend(spend: Spend) -> str:
    """A sum of sessions' costs as it is known: `~$0.12` when part of it is the price
    table's estimate, `$0.12+?` when some calls have no price at all (a floor), `$0.12
    pretend` when simulated agents made some of it up."""
    usd = fmt_usd(spend.usd)
    if spend.pretend:  # a simulated agent's cost is made up: never read as money spent
        return f"{usd} pretend"
    if spend.unpriced:
        return f"{usd}+?"
    return f"~{usd}" if spend.estimated else usd


def cost_text(usd: float, basis: CostBasis, *, long: bool = False) -> str:
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


_UNIT = 1000  # tokens per rate probe: under every tier threshold
# A model name is read from a session file: a longer one is no model any table knows, and
# is not worth a search through the table.
_MAX_MODEL = 200


class Rates(NamedTuple):
    """USD per token (a NamedTuple, not a dataclass: see `Spend`)."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, fresh_input: int, output: int, cache_read: int, cache_write: int) -> float:
        """`fresh_input`: input tokens neither read from nor written to the cache."""
        return (fresh_input * self.input + output * self.output
                + cache_read * self.cache_read + cache_write * self.cache_write)  # fmt: skip


@functools.lru_cache(maxsize=256)
def rates(provider: str | None, model: str) -> Rates | None:
    """The list rates of `model` at `provider` (None, or a provider the table does not
    know, such as a local proxy's name: matched by the model alone); None when no table
    knows the model."""
    if not model or len(model) > _MAX_MODEL:
        return None
    from genai_prices import Usage, calc_price

    def per_token(provider_id: str | None, **usage: int) -> float:
        price = calc_price(Usage(**usage), model_ref=model, provider_id=provider_id)
        return float(price.total_price) / _UNIT

    for provider_id in dict.fromkeys((provider, None)):
        try:
            return Rates(
                input=per_token(provider_id, input_tokens=_UNIT),
                output=per_token(provider_id, output_tokens=_UNIT),
                cache_read=per_token(provider_id, input_tokens=_UNIT, cache_read_tokens=_UNIT),
                cache_write=per_token(provider_id, input_tokens=_UNIT, cache_write_tokens=_UNIT),
            )
        except Exception:  # a name read from a file: whatever the table raises, unpriced
            continue
    return None


def priced(
    provider: str | None,
    model: str | None,
    *,
    fresh_input: int,
    output: int,
    cache_read: int,
    cache_write: int,
) -> tuple[float, CostBasis]:
    """One model call's cost from the table, and how it is known. A record with no tokens
    (a call's second content block) costs nothing, and that is known."""
    if not (fresh_input or output or cache_read or cache_write):
        return 0.0, "reported"
    found = rates(provider, model) if model else None
    if found is None:
        return 0.0, "unknown"
    return found.cost(fresh_input, output, cache_read, cache_write), "estimated"
