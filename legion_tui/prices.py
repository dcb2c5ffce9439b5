"""What a model call costs when its agent does not say (issue 32 item 1).

pi writes each call's cost into its session file. Claude Code's and Codex's files carry
the tokens only, so their calls are priced here from a maintained table (genai-prices,
pinned: a figure must not move under a test or a user between two installs) by provider
and model, and marked as estimates. A model no table knows is not priced at all: its
calls are counted as unpriced and the cost reads `$?`, never `$0`.

The table is asked once per (provider, model) for four rates, at a size below any tier
(1 000 tokens): a call is then four multiplications, where asking the table per call
costs about a millisecond and importing it 0.4 s (done once, on the first unpriced call).
Tiered prices (a prompt over 200k tokens) are not applied: an estimate says so.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

__all__ = ["CostBasis", "Rates", "priced", "rates"]

# Whose figure a cost is: the agent's own, the price table's, or nobody's.
CostBasis = Literal["reported", "estimated", "unknown"]

_UNIT = 1000  # tokens per rate probe: under every tier threshold
# A model name is read from a session file: a longer one is no model any table knows, and
# is not worth a search through the table.
_MAX_MODEL = 200


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per token."""

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
