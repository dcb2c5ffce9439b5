"""A streaming frame is flat in the node count (SPEC §8, issue 16 item 3): with thousands
of ended nodes and a few live ones, the chart's window cut, the galaxy's shading, the
header's spend and the notifier look at the live nodes and the changed ones only — and
still find what a full walk finds."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np
import pytest
from render_helpers import T0, node
from test_chart_buckets import naive_buckets

from legion_tui import receipts
from legion_tui.costs import Spend, total_spend
from legion_tui.dashboard.notify import Notice, Notifier
from legion_tui.model import NodeStatus
from legion_tui.model_records import InFlightTool, Usage
from legion_tui.render import chart
from legion_tui.render import feed as feed_module
from legion_tui.render.chart import RateBuckets
from legion_tui.render.feed import ChangeFeed, SpendIndex
from legion_tui.render.galaxy import GalaxyRenderer
from legion_tui.render.inks import STYLES
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.state import LegionModel, NodeView
from legion_tui.themes import palette

pytestmark = pytest.mark.unit

ENDED, LIVE = 400, 4


def legion() -> tuple[LegionModel, list[str]]:
    """ENDED settled workers whose messages fall inside the chart's window, LIVE live."""
    now = {"t": T0 + 100.0}
    model = LegionModel("run-1", "s", started_at=T0, clock=lambda: now["t"])
    model.upsert(node("root", None, "root", NodeStatus.RUNNING))
    for i in range(ENDED + LIVE):
        status = NodeStatus.RUNNING if i < LIVE else NodeStatus.SETTLED
        model.upsert(node(f"n{i}", "root", "worker", status))
        segs = [RateSegment(T0 + 40 + (i % 50) + k, T0 + 41 + (i % 50) + k, 90) for k in (0, 5)]
        model.set_progress(f"n{i}", SessionProgress(rate_series=segs))
    model.flush()
    model.clock = lambda: now["t"]
    return model, [f"n{i}" for i in range(LIVE)]


def stream(model: LegionModel, live: list[str], frame: int) -> None:
    for nid in live:
        series = model.nodes[nid].progress.rate_series
        t = T0 + 100 + frame
        model.set_progress(nid, SessionProgress(rate_series=[*series, RateSegment(t, t + 0.5, 40)]))
    model.flush()


def test_the_charts_window_cut_reads_only_the_live_nodes_per_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, live = legion()
    feed = ChangeFeed(model)
    rb = RateBuckets()
    cuts: list[int] = []
    from_segment = chart._Points.from_segment

    def counted(self: chart._Points, t0: float) -> int:
        cuts.append(1)
        return from_segment(self, t0)

    monkeypatch.setattr(chart._Points, "from_segment", counted)
    rb.compute(model, T0 + 50, T0 + 110, 60, changed=feed.take())
    for frame in range(1, 6):
        stream(model, live, frame)
        t0 = T0 + 50 + frame * 0.5  # the window moves on: the cut passes ended segments
        cuts.clear()
        got = rb.compute(model, t0, t0 + 60, 60, changed=feed.take()).copy()
        assert len(cuts) == LIVE  # not one per node
        np.testing.assert_allclose(got, naive_buckets(model, t0, t0 + 60, 60), atol=1e-6)
        # Bucketed point by point: the live nodes' segments that reach the window only;
        # the ended nodes' ramps come from their prefix sums, whatever their number.
        assert rb.points == 2 * sum(
            1 for v in model.nodes.values() if v.node.live
            for s in v.progress.rate_series if s.end >= t0
        )
    # A live node ends, an ended node's series is rewritten: still a full walk's answer.
    model.upsert(node("n0", "root", "worker", NodeStatus.SETTLED))
    model.set_progress("n9", SessionProgress(rate_series=[RateSegment(T0 + 90, T0 + 99, 900)]))
    model.flush()
    got = rb.compute(model, T0 + 53, T0 + 113, 60, changed=feed.take()).copy()
    np.testing.assert_allclose(got, naive_buckets(model, T0 + 53, T0 + 113, 60), atol=1e-6)
    stream(model, live[1:], 9)
    got = rb.compute(model, T0 + 54, T0 + 114, 60, changed=feed.take()).copy()
    np.testing.assert_allclose(got, naive_buckets(model, T0 + 54, T0 + 114, 60), atol=1e-6)
    assert len(cuts) >= LIVE - 1


def test_the_galaxy_shades_only_the_changed_stars_and_draws_what_a_full_walk_draws() -> None:
    model, live = legion()
    feed = ChangeFeed(model)
    ours = GalaxyRenderer()
    styles = STYLES.table(palette("legion-dark"))
    now = T0 + 100.0
    ours.render(model, now, 80, 24, styles, changed=feed.take())
    assert ours.stars_read == 1 + ENDED + LIVE  # the first frame reads every star
    for frame in range(1, 4):
        stream(model, live, frame)
        if frame == 2:  # a live node ends: its star turns to a dim dot
            model.upsert(node("n1", "root", "worker", NodeStatus.SETTLED))
            model.flush()
        got = ours.render(model, now + frame, 80, 24, styles, changed=feed.take())
        assert ours.stars_read == LIVE  # the ended star is one of the changed live ones
        assert got == GalaxyRenderer().render(model, now + frame, 80, 24, styles)


def test_the_galaxy_shades_every_live_star_again_at_each_rates_instant() -> None:
    """Issue 35: within a rates instant only the changed stars are shaded again (a live
    star's rate is the instant's); at each new instant every live one is, changed or
    not: a quiet live node's rate falls as its last message leaves the window."""
    model, live = legion()
    feed = ChangeFeed(model)
    ours = GalaxyRenderer()
    styles = STYLES.table(palette("legion-dark"))
    now = T0 + 100.0
    stream(model, live, 1)  # every live node: a message at T0 + 101
    ours.render(model, now, 80, 24, styles, changed=feed.take())
    for frame in range(1, 60):  # quarter seconds, past the message's 10 s window
        if frame % 7 == 0:
            stream(model, live[:1], 1 + frame)  # one live node goes on streaming
        at = now + frame * 0.25
        got = ours.render(model, at, 80, 24, styles, changed=feed.take())
        assert got == GalaxyRenderer().render(model, at, 80, 24, styles), frame


def test_the_headers_spend_reads_only_the_changed_sessions_and_sums_what_a_full_walk_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, live = legion()
    index = SpendIndex(model)
    assert index.total() == total_spend(v.progress for v in model.nodes.values())
    read: list[int] = []
    each = feed_module.spend_of

    def counted(progress: SessionProgress) -> Spend:
        read.append(1)
        return each(progress)

    monkeypatch.setattr(feed_module, "spend_of", counted)
    for frame in range(1, 4):
        stream(model, live, frame)
        for k, nid in enumerate(live):  # each live session has spent a little more
            progress = model.nodes[nid].progress
            usage = Usage(input=100 * frame, output=10 * frame + k, cost=0.001 * frame * (k + 1))
            model.set_progress(nid, dataclasses.replace(progress, tokens=usage))
        model.flush()
        read.clear()
        got = index.total()
        assert len(read) == LIVE  # not one per node
        full = total_spend(v.progress for v in model.nodes.values())
        assert got.tokens == full.tokens and got.usd == pytest.approx(full.usd, abs=1e-12)


def test_the_notifier_reads_only_the_changed_and_live_nodes_and_tells_what_a_full_walk_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, live = legion()
    notifier = Notifier(model)
    assert notifier.news(model.clock()) == []  # the first look: whole, and all history
    looked: list[int] = []
    occurrences = Notifier._occurrences

    def counted(
        self: Notifier, now: float, views: Iterable[NodeView]
    ) -> list[tuple[tuple[str, str, str], Notice]]:
        views = list(views)
        looked.append(len(views))
        return occurrences(self, now, views)

    monkeypatch.setattr(Notifier, "_occurrences", counted)
    now = model.clock()
    tool = InFlightTool("call-1", "bash", now - receipts.STALL_SECONDS - 1)
    model.set_progress(live[0], dataclasses.replace(model.nodes[live[0]].progress,
                                                    in_flight=[tool]))  # fmt: skip
    model.flush()
    stream(model, live[1:], 1)
    (stuck,) = notifier.news(now)
    assert stuck.text == receipts.stall_marker(live[0], "bash", receipts.STALL_SECONDS + 1)
    assert looked == [LIVE]
    looked.clear()
    assert notifier.news(now + 1) == []  # nothing changed: the live node with a call only
    assert looked == [1]
    looked.clear()
    model.upsert(dataclasses.replace(node(live[2], "root", "worker", NodeStatus.FAILED),
                                     error="boom"))  # fmt: skip
    model.flush()
    (failed,) = notifier.news(now + 2)
    assert failed.text == f"{live[2]} failed: boom" and looked == [2]
