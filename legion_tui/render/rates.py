"""The live tok/s of one node, as every dashboard panel should agree on it."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import legion_tui.session as session_pkg
from legion_tui.state import NodeView

RateFn = Callable[..., float]


def _live_tok_s() -> RateFn | None:
    # `session.live_tok_s` (tokens of the last few seconds) is the figure the tree shows;
    # resolved per call so the panels pick it up whenever the session package provides it.
    fn = getattr(session_pkg, "live_tok_s", None)
    return cast(RateFn, fn) if callable(fn) else None


def node_rate(view: NodeView, now: float) -> float:
    """Live tok/s of a live node; 0 for an ended one (it is not producing anything)."""
    if not view.node.live:
        return 0.0
    fn = _live_tok_s()
    if fn is not None:
        return float(fn(view.progress, now))
    return view.progress.tok_s
