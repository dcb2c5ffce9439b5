"""The tree's "live tok/s": the decode rate of the last few seconds, from the rate series."""

from __future__ import annotations

from legion_tui.session.progress import SessionProgress

__all__ = ["live_tok_s"]


def live_tok_s(progress: SessionProgress, now: float, window: float = 10.0) -> float:
    """Output tokens decoded during [now − window, now] ÷ window.

    Each segment spreads its tokens evenly over its generation interval (SPEC §3), so a
    segment that only partly overlaps the window contributes that share of its tokens.
    Segments are in file order, which for one agent is time order (one model call at a
    time), so the walk stops at the first segment that ended before the window.
    """
    if window <= 0:
        return 0.0
    lo = now - window
    tokens = 0.0
    for seg in reversed(progress.rate_series):
        if seg.end <= lo:
            break
        overlap = min(seg.end, now) - max(seg.start, lo)
        span = seg.end - seg.start
        if overlap > 0 and span > 0:
            tokens += seg.tokens * (overlap / span)
    return tokens / window
