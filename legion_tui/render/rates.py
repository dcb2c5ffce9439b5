"""The live tok/s of one node, as every dashboard panel agrees on it."""

from __future__ import annotations

from legion_tui.session.live_rate import live_tok_s
from legion_tui.state import NodeView


def node_rate(view: NodeView, now: float) -> float:
    """Live tok/s (tokens of the last few seconds, the tree's figure) of a live node;
    0 for an ended one: it is not producing anything."""
    if not view.node.live:
        return 0.0
    return live_tok_s(view.progress, now)
