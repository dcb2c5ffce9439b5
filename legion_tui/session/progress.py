"""What one session file says about its agent: the parser's output record."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from legion_tui.model_records import InFlightTool, Usage, Verdict

if TYPE_CHECKING:  # a name only: the parsers (formats, entries) stay out of a verb's imports
    from legion_tui.costs import CostBasis
    from legion_tui.session.formats import Format


@dataclass(frozen=True, slots=True)
class RateSegment:
    """One assistant message: `tokens` output tokens decoded evenly over [start, end)."""

    start: float  # epoch seconds (request start)
    end: float  # epoch seconds (message end)
    tokens: int


@dataclass(slots=True)
class SessionProgress:
    """Everything derived from one session file (SPEC §3): pi's, Claude Code's or Codex's.

    `unreadable` is set (e.g. "EACCES", "deleted") when the file could not be read; the
    other figures then describe what was read before, never an empty session.
    """

    format: Format = "pi"  # who wrote the file (session.formats)
    version: int = 3
    entries: int = 0
    skipped_lines: int = 0
    skip_reasons: dict[str, int] = field(default_factory=dict)  # why, and how many each
    model: str | None = None
    tokens: Usage = field(default_factory=Usage)
    # Model calls whose cost the price table gave (the agent wrote tokens only), and those
    # it could not (a model no table knows: not in `tokens.cost`).
    estimated_calls: int = 0
    unpriced_calls: int = 0
    # The agent's own running total for the whole session, when it gives one for models
    # it prices (Claude Code: each turn's `result.total_cost_usd`, its file's
    # `cost-state` at each exit — both cumulative, a resumed process goes on from the
    # last). The cost is then the larger of it and the calls' sum: neither counts a
    # call twice, and the calls after its last report are still counted.
    reported_cost: float | None = None
    turns: int = 0
    generation_ms: float = 0.0
    rate_series: list[RateSegment] = field(default_factory=list)
    in_flight: list[InFlightTool] = field(default_factory=list)  # top = last = innermost
    last_text: str = ""
    verdict: Verdict | None = None
    empty_generation: bool = False
    last_stop_reason: str | None = None
    last_entry_at: float | None = None  # epoch seconds of the newest entry
    # User messages of the active path's last 20 turns (mail delivery evidence, SPEC §6.5).
    recent_user_texts: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    unreadable: str | None = None

    @property
    def not_written_yet(self) -> bool:
        """The file has never existed: the agent has not written it yet (pi creates it
        with its first answer; an exec command may never write one) — not an error."""
        return self.unreadable == "ENOENT"

    @property
    def read_error(self) -> str | None:
        """Why a file that exists (or existed) cannot be read; None otherwise."""
        return None if self.not_written_yet else self.unreadable

    @property
    def cost(self) -> float:
        reported = self.reported_cost
        return self.tokens.cost if reported is None else max(reported, self.tokens.cost)

    @property
    def cost_basis(self) -> CostBasis:
        """Whose figure `cost` is: the agent's own total when it covers the calls' sum;
        else any unpriced call makes it unknown (a floor, not a sum), any estimated one
        an estimate; otherwise the agent's own."""
        if self.reported_cost is not None and self.reported_cost >= self.tokens.cost:
            return "reported"
        if self.unpriced_calls:
            return "unknown"
        return "estimated" if self.estimated_calls else "reported"

    @property
    def tok_s(self) -> float:
        """Decode rate: output tokens ÷ generation seconds (never ÷ wall clock)."""
        if self.generation_ms <= 0:
            return 0.0
        return self.tokens.output / (self.generation_ms / 1000.0)
