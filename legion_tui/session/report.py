"""A `SessionProgress` as plain data (JSON) and as a short human-readable block."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from legion_tui.session.formats import FORMAT_NAMES
from legion_tui.session.progress import SessionProgress

__all__ = ["progress_as_dict", "progress_as_text"]


def progress_as_dict(p: SessionProgress) -> dict[str, Any]:
    """The `legion inspect --json` object (stable keys; see SPEC §3 for their meaning)."""
    return {
        "format": p.format,
        "version": p.version,
        "entries": p.entries,
        "skipped_lines": p.skipped_lines,
        "skip_reasons": dict(p.skip_reasons),
        "model": p.model,
        "tokens": {
            "input": p.tokens.input,
            "output": p.tokens.output,
            "cache_read": p.tokens.cache_read,
            "cache_write": p.tokens.cache_write,
        },
        "cost": p.cost,
        # reported: the agent's own figure; estimated: the price table's; unknown: some
        # calls were of a model no table prices (they are not in `cost`).
        "cost_basis": p.cost_basis,
        "estimated_calls": p.estimated_calls,
        "unpriced_calls": p.unpriced_calls,
        "turns": p.turns,
        "generation_ms": p.generation_ms,
        "tok_s": p.tok_s,
        "in_flight": [
            {"id": t.id, "name": t.name, "started_at": t.started_at} for t in p.in_flight
        ],
        "verdict": (
            None
            if p.verdict is None
            else {"ok": p.verdict.ok, "reason": p.verdict.reason, "raw": p.verdict.raw}
        ),
        "empty_generation": p.empty_generation,
        "last_stop_reason": p.last_stop_reason,
        "last_entry_at": p.last_entry_at,
        "rate_segments": len(p.rate_series),
        "unreadable": p.unreadable,
    }


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def _cost(p: SessionProgress) -> str:
    if p.cost_basis == "unknown":
        known = f"${p.cost:.6f} for the others" if p.estimated_calls else "tokens only"
        return (f"unknown: {p.unpriced_calls} calls of a model no price table knows "
                f"({p.model or '-'}); {known}")  # fmt: skip
    if p.cost_basis == "estimated":
        return f"${p.cost:.6f} est. (list prices of {p.model or '-'}: the agent wrote tokens only)"
    return f"${p.cost:.6f}"


def progress_as_text(p: SessionProgress, name: str) -> str:
    t = p.tokens
    lines = [
        f"{name}",
        f"  format  {FORMAT_NAMES[p.format]}"
        + (f" v{p.version}" if p.format == "pi" else "")
        + f" · {p.entries} entries · {p.skipped_lines} skipped lines",
        f"  model   {p.model or '-'}",
        f"  tokens  in {t.input} · out {t.output} · cache read {t.cache_read}"
        f" · cache write {t.cache_write}",
        f"  cost    {_cost(p)} · {p.turns} turns",
        f"  rate    {p.tok_s:.1f} tok/s (out ÷ {p.generation_ms / 1000:.3f} s of generation)",
        f"  last    {_when(p.last_entry_at)} · stop reason {p.last_stop_reason or '-'}",
    ]
    lines.extend(f"  skipped {n} × {reason}" for reason, n in p.skip_reasons.items())
    if p.in_flight:
        lines.append("  in flight (top last):")
        lines.extend(f"    {t.name} {t.id} since {_when(t.started_at)}" for t in p.in_flight)
    else:
        lines.append("  in flight: none")
    if p.verdict is None:
        lines.append("  verdict: none")
    else:
        mark = "ok" if p.verdict.ok else "not ok"
        lines.append(f"  verdict: {mark}" + (f" — {p.verdict.reason}" if p.verdict.reason else ""))
    if p.empty_generation:
        lines.append("  provider-empty-generation: the last turn came back empty")
    return "\n".join(lines)
