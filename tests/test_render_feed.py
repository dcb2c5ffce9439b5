"""ChangeFeed / LiveIndex and the chart's incremental members: whatever the sequence of
changes, what they answer equals a walk over every node."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from render_helpers import T0, Clock, make_legion, node, streaming

from legion_tui.model import NodeStatus
from legion_tui.render.chart import ChartRenderer, RateBuckets
from legion_tui.render.feed import ChangeFeed, LiveIndex
from legion_tui.render.rates import RATES_EVERY_S, instant_rate, node_rate, rates_instant
from legion_tui.session.live_rate import live_tok_s
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.state import LegionModel

pytestmark = pytest.mark.unit

STATUSES = list(NodeStatus)
# One step: (node index, action, argument); applied to whichever node exists.
STEP = st.tuples(
    st.integers(0, 30),
    st.sampled_from(["status", "append", "clear", "spawn", "rewrite"]),
    st.integers(0, len(STATUSES) - 1),
)


def apply(model: LegionModel, clock: Clock, step: tuple[int, str, int]) -> None:
    ids = list(model.nodes)
    index, action, arg = step
    nid = ids[index % len(ids)]
    view = model.nodes[nid]
    if action == "status":
        model.upsert(replace(view.node, status=STATUSES[arg]))
    elif action == "append":
        clock.now += 0.5
        seg = RateSegment(clock.now - 2.0, clock.now, 40 + arg)
        model.set_progress(nid, replace(view.progress,
                                        rate_series=[*view.progress.rate_series, seg]))
    elif action == "clear":
        model.set_progress(nid, SessionProgress())
    elif action == "rewrite":
        model.set_progress(nid, streaming(clock.now, 10.0 + arg))
    else:
        new_id = f"n{len(ids)}"
        model.upsert(node(new_id, nid, "worker", STATUSES[arg]))
        model.set_progress(new_id, streaming(clock.now, 30.0))


def walk_counts(model: LegionModel) -> dict[str, int]:
    return model.counts()


def walk_live(model: LegionModel) -> list[str]:
    return [nid for nid, v in model.nodes.items() if v.node.live]


@settings(max_examples=60)
@given(steps=st.lists(STEP, max_size=40), visible_every=st.integers(1, 4))
def test_incremental_members_and_index_equal_a_full_walk(
    steps: list[tuple[int, str, int]], visible_every: int
) -> None:
    clock = Clock()
    model = make_legion(clock, centurions=3, workers=4)
    index = LiveIndex(model)
    feed = ChangeFeed(model)
    incremental = ChartRenderer()
    visible = frozenset(list(model.nodes)[::visible_every])
    for step in [*steps, (0, "status", 0)]:
        apply(model, clock, step)
        if step[1] == "spawn":
            visible = frozenset(list(model.nodes)[::visible_every])
        # No running loop here: every change is signalled at once, so the feed knows.
        changed = feed.take()
        assert changed is not None
        got = incremental.buckets.compute(model, clock.now - 60, clock.now, 40, visible, changed)
        fresh = RateBuckets()
        want = fresh.compute(model, clock.now - 60, clock.now, 40, visible)
        # Equal up to summation order: an appended tail's points follow the older ones,
        # a fresh conversion interleaves them differently.
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
        assert [v.node.id for v in incremental.buckets.live_views()] == [
            v.node.id for v in fresh.live_views()
        ]
        assert index.counts() == walk_counts(model)
        assert [v.node.id for v in index.live()] == walk_live(model)


def test_a_streaming_frame_re_reads_only_the_changed_nodes() -> None:
    clock = Clock()
    model = make_legion(clock, centurions=4, workers=20)
    feed = ChangeFeed(model)
    chart = ChartRenderer()
    chart.buckets.compute(model, clock.now - 60, clock.now, 60, None, feed.take())
    rescans = chart.buckets.rescans
    for _ in range(20):
        clock.now += 1.0
        view = model.nodes["c1w2"]
        seg = RateSegment(clock.now - 1.0, clock.now, 90)
        model.set_progress("c1w2", replace(view.progress,
                                           rate_series=[*view.progress.rate_series, seg]))
        chart.buckets.compute(model, clock.now - 60, clock.now, 60, None, feed.take())
    assert chart.buckets.rescans == rescans
    # Without the hint every frame walks every node.
    chart.buckets.compute(model, clock.now - 60, clock.now, 60, None, None)
    assert chart.buckets.rescans == rescans + 1


async def test_changes_not_yet_signalled_make_the_feed_answer_unknown() -> None:
    clock = Clock(T0 + 120)
    model = make_legion(clock)
    await asyncio.sleep(0)  # the build's own flush
    feed = ChangeFeed(model)
    index = LiveIndex(model)
    assert feed.take() is None  # nothing heard yet: unknown
    model.upsert(replace(model.nodes["c0"].node, status=NodeStatus.SETTLED))
    assert feed.take() is None  # touched, flush still scheduled: unknown, not "nothing"
    assert index.counts() == model.counts()  # the index rescans rather than go stale
    await asyncio.sleep(0)  # the flush runs
    model.upsert(replace(model.nodes["c1"].node, status=NodeStatus.FAILED))
    await asyncio.sleep(0)
    assert feed.take() == frozenset({"c0", "c1"})
    assert index.counts() == model.counts()
    feed.close()
    index.close()
    model.upsert(replace(model.nodes["c2"].node, status=NodeStatus.SETTLED))
    await asyncio.sleep(0)
    assert feed.take() is None  # closed: it no longer hears the model


def two_streaming_roots() -> tuple[Clock, LegionModel, LegionModel]:
    """Two models on one clock, each a root streaming at its own rate (20, 90 tok/s)
    with the same id and revision: an answer kept for one must not serve the other."""
    clock = Clock()
    a = LegionModel("run-a", "s", started_at=T0, clock=clock)
    b = LegionModel("run-b", "s", started_at=T0, clock=clock)
    for model, tok_s in ((a, 20.0), (b, 90.0)):
        model.upsert(node("root", None, "root", NodeStatus.RUNNING))
        model.set_progress("root", streaming(clock.now, tok_s))
    return clock, a, b


def test_the_rate_memo_follows_the_view_its_revision_and_the_clock() -> None:
    clock, a, b = two_streaming_roots()
    # Same node id, same revision, same clock: two models must still not share an answer.
    assert a.nodes["root"].revision == b.nodes["root"].revision
    ra, rb = node_rate(a.nodes["root"], clock.now), node_rate(b.nodes["root"], clock.now)
    assert ra != rb
    assert node_rate(a.nodes["root"], clock.now) == ra
    a.set_progress("root", streaming(clock.now, 60.0))  # new revision
    assert node_rate(a.nodes["root"], clock.now) == live_tok_s(a.nodes["root"].progress,
                                                               clock.now)
    later = clock.now + 4.0
    assert node_rate(a.nodes["root"], later) == live_tok_s(a.nodes["root"].progress, later)


def test_the_panels_take_one_rate_per_node_and_instant() -> None:
    """Issue 35: the header, the chart's `now` and the galaxy ask each live node's rate
    at the same instant; a node that changed between their asks was walked again, three
    times a second per agent. Within an instant they all get the first answer (their
    figures agree); the tree's own figure follows every change; the next instant reads
    the node as it is then."""
    clock, a, b = two_streaming_roots()
    at = rates_instant(clock.now)
    first = instant_rate(a.nodes["root"], at)
    assert first == live_tok_s(a.nodes["root"].progress, at) > 0
    # Same node id, same instant: another model's node is not this one.
    assert instant_rate(b.nodes["root"], at) == live_tok_s(b.nodes["root"].progress, at)
    a.set_progress("root", streaming(clock.now, 60.0))  # a new revision, the same instant
    changed = live_tok_s(a.nodes["root"].progress, at)
    assert changed != first
    assert instant_rate(a.nodes["root"], at) == first  # every panel: the instant's figure
    assert node_rate(a.nodes["root"], at) == changed  # the tree row's: the node as it is
    nxt = at + RATES_EVERY_S
    assert instant_rate(a.nodes["root"], nxt) == live_tok_s(a.nodes["root"].progress, nxt)
    a.upsert(replace(a.nodes["root"].node, status=NodeStatus.SETTLED))
    assert instant_rate(a.nodes["root"], nxt) == 0.0  # an ended node produces nothing


def test_an_instants_rate_is_the_nodes_rate_at_that_instant_to_the_bit() -> None:
    """`instant_rate` walks a node's series itself, not through `node_rate`'s memo (issue
    35: the memo was a third of the Σ tok/s per node): over seeded nodes — streaming an
    open message or not, live or ended — each instant's figure is `node_rate`'s."""
    rng = random.Random(35)
    now = T0 + 500.0
    model = LegionModel("run-1", "s", started_at=T0, clock=lambda: now)
    for i in range(60):
        status = rng.choice([NodeStatus.RUNNING, NodeStatus.RUNNING, NodeStatus.SETTLED])
        model.upsert(node(f"n{i}", None, "worker", status))
        at, series = now - 40.0, []
        while at < now:
            span = rng.choice([0.0, rng.uniform(0.1, 3.0)])
            series.append(RateSegment(at, at + span, rng.randint(1, 400)))
            at += span + rng.uniform(0.0, 1.5)
        model.set_progress(f"n{i}", SessionProgress(rate_series=series))
        if rng.random() < 0.5:  # a message being generated after the file's last one
            model.set_streaming(f"n{i}", RateSegment(at - rng.uniform(0.0, 4.0), now, 50))
    seen = 0.0
    for k in range(12):
        instant = rates_instant(now - 6.0 + k)
        for view in model.nodes.values():
            got = instant_rate(view, instant)
            assert got == node_rate(view, instant), (view.node.id, instant)
            seen += got
    assert seen > 0


async def test_a_change_made_while_listeners_are_told_is_never_taken_as_seen() -> None:
    """A listener told before the index changes the model in its turn (the change is in
    the next flush); the index asked between the two flushes took the version as covered
    and, the next flush bringing no new version, kept a settled agent counted live for
    good — the header said ●2 ○0 under a tree row that said ○ settled."""
    clock = Clock()
    model = make_legion(clock, centurions=1, workers=1)
    worker = next(nid for nid, v in model.nodes.items() if v.node.role == "worker")
    other = next(nid for nid, v in model.nodes.items() if v.node.role == "centurion")
    model.upsert(replace(model.nodes[worker].node, status=NodeStatus.RUNNING))
    await asyncio.sleep(0)  # its flush: nothing pending from here on

    def settle_worker_once(dirty: frozenset[str]) -> None:
        if other in dirty and model.nodes[worker].node.status is NodeStatus.RUNNING:
            model.upsert(replace(model.nodes[worker].node, status=NodeStatus.SETTLED))

    model.subscribe(settle_worker_once)  # told before the index's feed
    index = LiveIndex(model)
    assert index.counts() == walk_counts(model)
    model.set_progress(other, streaming(clock.now, 20.0))  # its flush is due
    # Asked between that flush (which settles the worker) and the next (which tells it),
    # as a frame or a timer due in between asks.
    asked: list[dict[str, int]] = []
    asyncio.get_running_loop().call_soon(lambda: asked.append(index.counts()))
    for _ in range(3):
        await asyncio.sleep(0)
    assert model.nodes[worker].node.status is NodeStatus.SETTLED and asked
    assert index.counts() == walk_counts(model)
    assert worker not in [v.node.id for v in index.live()]
