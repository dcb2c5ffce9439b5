"""The tree's "live tok/s": the decode rate of the last few seconds, from the rate series."""

from __future__ import annotations

from legion_tui.receipts import LIVE_WINDOW_S
from legion_tui.session.progress import RateSegment, SessionProgress

__all__ = ["live_tok_s", "open_message"]


def live_tok_s(
    progress: SessionProgress,
    now: float,
    window: float = LIVE_WINDOW_S,
    streaming: RateSegment | None = None,
) -> float:
    """Output tokens decoded during [now − window, now] ÷ window.

    Each segment spreads its tokens evenly over its generation interval (SPEC §3), so a
    segment that only partly overlaps the window contributes that share of its tokens.
    Segments are in file order, which for one agent is time order (one model call at a
    time), so the walk stops at the first segment that ended before the window.
    `streaming`: the message being generated now (not in the file until it ends).
    """
    if window <= 0:
        return 0.0
    lo = now - window
    series = progress.rate_series
    tokens = 0.0
    for seg in reversed(series):
        end = seg.end
        if end <= lo:
            break
        start = seg.start
        if lo <= start and end <= now:
            # Wholly inside (most of the window's segments): its overlap is its span,
            # and `tokens * (span / span)` is exactly `tokens` (x / x = 1.0), so the
            # sum takes the same value without the division (a thousand live nodes,
            # ten segments each, a second).
            if end > start:
                tokens += seg.tokens
            continue
        # `_share(seg, lo, now)` inline (every live node, every frame): the same
        # operations — min(end, now), max(start, lo) — in the same order.
        overlap = (now if now < end else end) - (lo if lo > start else start)
        span = end - start
        if overlap > 0 and span > 0:
            tokens += seg.tokens * (overlap / span)
    pending = open_message(progress, streaming)
    if pending is not None:
        tokens += _share(pending, lo, now)
    return tokens / window


def open_message(progress: SessionProgress, streaming: RateSegment | None) -> RateSegment | None:
    """The message being generated now, while the file does not hold it yet: one model
    call at a time, so a file segment that ends after it began is that message."""
    series = progress.rate_series
    if streaming is None or (series and series[-1].end > streaming.start):
        return None
    return streaming


def _share(seg: RateSegment, lo: float, hi: float) -> float:
    """The tokens of `seg` decoded within [lo, hi], spread evenly over its span."""
    overlap = min(seg.end, hi) - max(seg.start, lo)
    span = seg.end - seg.start
    return seg.tokens * (overlap / span) if overlap > 0 and span > 0 else 0.0
