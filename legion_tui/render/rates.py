"""The live tok/s of one node, as every dashboard panel agrees on it."""

from __future__ import annotations

import math

from legion_tui.render.steps import step_of
from legion_tui.session.live_rate import live_tok_s
from legion_tui.state import NodeView

# node id → (view, revision, now, rate) of the last answer: a node asked again at the
# same time and unchanged is not walked again (the tree row, the detail overlay). Any
# change to a node bumps its revision; the view itself is compared too, so two models
# with the same ids never mix.
_memo: dict[str, tuple[NodeView, int, float, float]] = {}

# The panels that sum or shade every live node (the header, the chart's `now`, the
# galaxy) take the rates at one instant, a chart step's start (`instant_rate`): each
# node's series is then walked once, not once per panel (issue 35: a 1 000-agent host).
# One instant a second, not one a step: the figure is a 10 s window's, which a quarter
# second moves by nothing a reader sees, and four walks a second over a thousand live
# agents were a seventh of such a host's Python time.
RATES_PHASE = 0.5  # = the chart's phase (render/chart.py), whose frame starts its step
RATES_EVERY_S = 1.0
_OFFSET = step_of(0.0, RATES_PHASE)  # the instants: chart step starts, 1 s apart


def rates_instant(now: float) -> float:
    """The instant the whole-legion panels take their rates at, for a frame at `now`:
    the start of the chart step that began the second `now` falls in."""
    return math.floor((now - _OFFSET) / RATES_EVERY_S) * RATES_EVERY_S + _OFFSET


def node_rate(view: NodeView, now: float) -> float:
    """Live tok/s (tokens of the last few seconds, the tree's figure) of a live node;
    0 for an ended one: it is not producing anything."""
    if not view.node.live:
        return 0.0
    nid = view.node.id
    hit = _memo.get(nid)
    if hit is not None and hit[0] is view and hit[1] == view.revision and hit[2] == now:
        return hit[3]
    rate = live_tok_s(view.progress, now, streaming=view.streaming)
    _memo[nid] = (view, view.revision, now, rate)
    return rate


# The rates at the current instant: id(view) → (view, rate), as first asked in it (the
# view held, so its id is not reused within the instant; two models may share node
# ids). Not revised when the node changes later in the instant (unlike `_memo`): a
# thousand agents each append a line a second, so by the time the second and third
# panel asked, most nodes had moved and each was walked three times a second, a ninth
# of such a host's Python time (issue 35). The panels then show one figure per node
# per instant, and the header's Σ and the chart's `now` are the same sum; a change made
# after the first ask shows at the next instant, a second later at most.
_instant: dict[int, tuple[NodeView, float]] = {}
_instant_at: list[float] = [math.nan]  # the instant `_instant` holds (nan: none yet)


def instant_rate(view: NodeView, at: float) -> float:
    """`node_rate(view, at)` for the whole-legion panels, `at` being a `rates_instant`:
    taken once per node and instant, whatever changes in between (see `_instant`)."""
    if not view.node.live:
        return 0.0
    if at != _instant_at[0]:
        _instant.clear()
        _instant_at[0] = at
    hit = _instant.get(id(view))
    if hit is not None:
        return hit[1]
    # `node_rate`'s figure without its memo: asked once per node and instant, the walk
    # is never repeated here, and the memo's lookup and entry were a third of the cost
    # per node (0.7 of 2.4 µs; a thousand live nodes a second).
    rate = live_tok_s(view.progress, at, streaming=view.streaming)
    _instant[id(view)] = (view, rate)
    return rate
