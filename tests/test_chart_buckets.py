"""Rate buckets: equal to a naive per-bucket reference, visible-set only, cached per node."""

from __future__ import annotations

import math
import random

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from render_helpers import T0, node

from legion_tui.model import ROLES, NodeStatus, Role
from legion_tui.render.chart import (
    BAND_OF_ROLE,
    FEW_SEGMENTS,
    N_BANDS,
    POINT_MASS_S,
    RateBuckets,
    _convert,
    _points,
)
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.state import LegionModel

pytestmark = pytest.mark.unit


def naive_buckets(
    model: LegionModel, t0: float, t1: float, n: int, visible: frozenset[str] | None = None
) -> npt.NDArray[np.float64]:
    """Per segment, per bucket: overlap × rate ÷ bucket width (plain Python)."""
    out = [[0.0] * n for _ in range(N_BANDS)]
    width = (t1 - t0) / n
    for nid, view in model.nodes.items():
        if visible is not None and nid not in visible:
            continue
        band = BAND_OF_ROLE[view.node.role]
        for seg in view.progress.rate_series:
            if seg.end - seg.start <= POINT_MASS_S:  # an instant: all tokens in one bucket
                j = math.floor((seg.start - t0) * (n / (t1 - t0)))
                if 0 <= j < n:
                    out[band][j] += seg.tokens / width
                continue
            rate = seg.tokens / (seg.end - seg.start)
            for j in range(n):
                lo = t0 + j * width
                overlap = min(lo + width, seg.end) - max(lo, seg.start)
                if overlap > 0:
                    out[band][j] += rate * overlap / width
    return np.array(out, dtype=np.float64)


segment = st.tuples(
    st.floats(-50.0, 150.0),  # start, relative to T0
    # duration: 0 is an instant; a negative one (a clock step) is treated as an instant too
    st.one_of(st.just(0.0), st.floats(0.0, 40.0), st.floats(-5.0, 0.0)),
    st.integers(0, 5000),  # tokens
)
legion = st.lists(
    st.tuples(st.sampled_from(ROLES), st.lists(segment, max_size=12)), min_size=1, max_size=8
)


def build(
    nodes: list[tuple[Role, list[tuple[float, float, int]]]],
    base: float = T0,
    settled: frozenset[int] = frozenset(),
) -> LegionModel:
    """One node per entry, live but for the indices in `settled`."""
    model = LegionModel("run-1", "s", started_at=base, clock=lambda: base + 100)
    for i, (role, segs) in enumerate(nodes):
        status = NodeStatus.SETTLED if i in settled else NodeStatus.RUNNING
        model.upsert(node(f"n{i}", None, role, status))
        series = sorted(
            (RateSegment(base + s, base + s + d, tok) for s, d, tok in segs),
            key=lambda r: r.start,
        )
        model.set_progress(f"n{i}", SessionProgress(rate_series=series))
    return model


@settings(max_examples=150)
@given(
    nodes=legion,
    start=st.floats(-20.0, 120.0),
    span=st.floats(0.5, 200.0),
    n=st.integers(1, 130),
    data=st.data(),
)
def test_buckets_equal_the_naive_reference(
    nodes: list[tuple[Role, list[tuple[float, float, int]]]],
    start: float,
    span: float,
    n: int,
    data: st.DataObject,
) -> None:
    # Times near 0 here: at epoch scale both sides carry float64's ~0.2 µs time grain
    # (checked separately below with a tolerance to match). Settled nodes' ramps take
    # the prefix-sum path (render/ramp_integral.py), their instants and the live nodes
    # the per-point one; together they are the reference.
    settled = data.draw(st.frozensets(st.integers(0, len(nodes) - 1)))
    model = build(nodes, base=0.0, settled=settled)
    ids = sorted(model.nodes)
    visible = data.draw(st.one_of(st.none(), st.frozensets(st.sampled_from(ids))))
    t0, t1 = start, start + span
    got = RateBuckets().compute(model, t0, t1, n, visible)
    want = naive_buckets(model, t0, t1, n, visible)
    scale = max(1.0, float(np.abs(want).max()))
    assert got.shape == (N_BANDS, n)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * scale)


def test_ended_nodes_at_epoch_scale_match_the_live_path_within_float_rounding() -> None:
    # The same legion live and settled: the two paths agree far below the time grain
    # (the prefix sums' edges are taken relative to the points, not at epoch scale).
    rng = np.random.default_rng(7)
    nodes: list[tuple[Role, list[tuple[float, float, int]]]] = [
        (ROLES[i % 4], [(float(s), float(d), int(k)) for s, d, k in zip(
            rng.uniform(-30, 100, 30), rng.uniform(0.1, 8, 30), rng.integers(1, 900, 30),
            strict=True,
        )])
        for i in range(40)
    ]  # fmt: skip
    live = RateBuckets().compute(build(nodes), T0, T0 + 60, 120)
    ended = RateBuckets().compute(build(nodes, settled=frozenset(range(40))), T0, T0 + 60, 120)
    np.testing.assert_allclose(ended, live, rtol=0, atol=1e-9 * float(live.max()))


def test_buckets_at_epoch_scale_match_within_the_time_grain() -> None:
    rng = np.random.default_rng(5)
    nodes: list[tuple[Role, list[tuple[float, float, int]]]] = [
        (
            ROLES[i % 4],
            [
                (float(s), float(d), int(k))
                for s, d, k in zip(
                    rng.uniform(-30, 100, 20),
                    rng.uniform(0, 8, 20),
                    rng.integers(1, 900, 20),
                    strict=True,
                )
            ],
        )
        for i in range(12)
    ]
    model = build(nodes)
    got = RateBuckets().compute(model, T0, T0 + 60, 120)
    want = naive_buckets(model, T0, T0 + 60, 120)
    assert want.sum() > 0
    # A 0.5 s bucket against ~2.4e-7 s of float64 grain at 1.7e9 s: ≤ 1e-5 relative.
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * float(want.max()))


def test_one_segment_spreads_evenly_over_the_buckets_it_overlaps() -> None:
    model = build([("worker", [(1.5, 2.0, 400)])])  # 200 tok/s over [1.5, 3.5)
    got = RateBuckets().compute(model, T0, T0 + 5.0, 5)
    assert np.allclose(got[BAND_OF_ROLE["worker"]], [0, 100, 200, 100, 0])
    assert not got[BAND_OF_ROLE["root"]].any()


def test_only_visible_nodes_contribute() -> None:
    model = build([("worker", [(0.0, 10.0, 1000)]), ("worker", [(0.0, 10.0, 3000)])])
    rb = RateBuckets()
    both = rb.compute(model, T0, T0 + 10, 10).copy()
    only_first = rb.compute(model, T0, T0 + 10, 10, frozenset({"n0"})).copy()
    assert np.allclose(both.sum(axis=0), 400.0)
    assert np.allclose(only_first.sum(axis=0), 100.0)
    assert not rb.compute(model, T0, T0 + 10, 10, frozenset()).any()


def test_unchanged_nodes_are_not_reconverted_each_frame() -> None:
    model = build([("worker", [(0.0, 10.0, 1000)]), ("scout", [(5.0, 10.0, 500)])])
    rb = RateBuckets()
    rb.compute(model, T0, T0 + 20, 20)
    assert (rb.converted, rb.extended) == (2, 0)
    for k in range(5):
        rb.compute(model, T0 + k, T0 + 20 + k, 20)
    assert (rb.converted, rb.extended) == (2, 0)
    # A change that leaves the series alone (status, tool call) converts nothing.
    model.mark_interrupted("n0")
    rb.compute(model, T0, T0 + 20, 20)
    assert (rb.converted, rb.extended) == (2, 0)


def test_an_appended_series_converts_only_its_tail_and_stays_exact() -> None:
    model = build([("worker", [(0.0, 10.0, 1000)]), ("scout", [(5.0, 10.0, 500)])])
    rb = RateBuckets()
    rb.compute(model, T0, T0 + 20, 20)
    old = model.nodes["n1"].progress.rate_series
    grown = [*old, RateSegment(T0 + 16, T0 + 18, 80), RateSegment(T0 + 19, T0 + 19, 7)]
    model.set_progress("n1", SessionProgress(rate_series=grown))
    got = rb.compute(model, T0, T0 + 20, 20).copy()
    assert (rb.converted, rb.extended) == (2, 1)
    np.testing.assert_allclose(got, naive_buckets(model, T0, T0 + 20, 20), atol=1e-6)
    assert math.isclose(got[BAND_OF_ROLE["scout"], 16], 40.0)
    # A rewritten series (not an append) is converted whole again.
    model.set_progress("n1", SessionProgress(rate_series=[RateSegment(T0 + 1, T0 + 2, 10)]))
    got = rb.compute(model, T0, T0 + 20, 20).copy()
    assert (rb.converted, rb.extended) == (3, 1)
    np.testing.assert_allclose(got, naive_buckets(model, T0, T0 + 20, 20), atol=1e-6)


def test_a_thousand_appends_grow_the_points_in_place_and_stay_exact() -> None:
    """A message a frame for a thousand frames: each converts only its tail, and the
    history is copied only when the node's buffers double (O(1) an append) — not once
    per append, which at a thousand agents a few hours in was O(history) each."""
    model = build([("worker", [(0.0, 0.5, 10)])])
    rb = RateBuckets()
    rb.compute(model, T0, T0 + 10, 10)
    series = model.nodes["n0"].progress.rate_series
    for k in range(1, 1000):
        # (every 10th an instant: a point mass, which keeps only its start point)
        series = [*series, RateSegment(T0 + k, T0 + k + (k % 10 > 0) * 0.5, 10 + k % 7)]
        model.set_progress("n0", SessionProgress(rate_series=series))
        rb.compute(model, T0 + k - 50, T0 + k + 10, 60)
    assert (rb.converted, rb.extended) == (1, 999)
    # Doubling: fewer points copied in all than twice the history's (2 points a
    # segment), where copying the history at each append would be 2 × Σk ≈ a million.
    assert 0 < rb.regrown < 2 * (2 * len(series)), rb.regrown
    for t0, t1, n in ((T0, T0 + 1000, 100), (T0 + 900, T0 + 1000, 50)):
        got = rb.compute(model, t0, t1, n).copy()
        np.testing.assert_allclose(got, naive_buckets(model, t0, t1, n), atol=1e-6)
        # The same points, to the bit, as the series converted whole at once.
        np.testing.assert_array_equal(got, RateBuckets().compute(model, t0, t1, n))


def test_series_ended_before_the_window_add_nothing() -> None:
    model = build([("centurion", [(0.0, 10.0, 1000)])])
    got = RateBuckets().compute(model, T0 + 60, T0 + 120, 60)
    assert not got.any()


def test_zero_buckets_and_empty_windows_do_not_fail() -> None:
    model = build([("root", [(0.0, 10.0, 1000)])])
    rb = RateBuckets()
    assert rb.compute(model, T0, T0 + 10, 0).shape == (N_BANDS, 0)
    assert not rb.compute(model, T0 + 10, T0 + 10, 4).any()


def test_a_long_history_before_the_window_is_not_joined_each_frame() -> None:
    # 8 h of one message every 5 s, then the last minute's window: only the segments
    # that reach the window are bucketed, and the result is still the reference's.
    history = [(float(k * 5), 3.0, 200) for k in range(5760)]
    model = build([("worker", history), ("scout", history[-30:])])
    rb = RateBuckets()
    end = T0 + 5760 * 5.0
    got = rb.compute(model, end - 60, end, 60).copy()
    np.testing.assert_allclose(got, naive_buckets(model, end - 60, end, 60), atol=1e-6)
    assert rb.points == 2 * (12 + 12)  # 12 segments of each node reach the window
    # The whole run still joins everything.
    rb.compute(model, T0, end, 60)
    assert rb.points == 2 * (5760 + 30)


def test_an_appended_tail_keeps_the_window_cut_exact() -> None:
    model = build([("worker", [(float(k * 5), 3.0, 200) for k in range(100)])])
    rb = RateBuckets()
    rb.compute(model, T0 + 400, T0 + 500, 50)
    series = model.nodes["n0"].progress.rate_series
    # An overlapping late segment (its end before its predecessor's) and an instant.
    grown = [*series, RateSegment(T0 + 480, T0 + 490, 50), RateSegment(T0 + 499, T0 + 499, 9)]
    model.set_progress("n0", SessionProgress(rate_series=grown))
    for t0 in (T0 + 400, T0 + 485, T0 + 494.5):
        got = rb.compute(model, t0, t0 + 10, 20).copy()
        np.testing.assert_allclose(got, naive_buckets(model, t0, t0 + 10, 20), atol=1e-6)
    assert rb.extended == 1


def test_an_instant_a_rounding_step_before_the_window_is_bucketed_as_computed() -> None:
    # Found by hypothesis: (t − t0)·per_s rounds to −0.0 for t = −5e-324, t0 = 0, so the
    # bucketing counts the instant inside; the window cut must not have dropped it.
    model = build([("root", [(-5e-324, 0.0, 1)])], base=0.0)
    got = RateBuckets().compute(model, 0.0, 2.0, 1)
    np.testing.assert_allclose(got, naive_buckets(model, 0.0, 2.0, 1), atol=1e-12)


@settings(max_examples=120, deadline=None)
@given(
    nodes=st.lists(st.lists(segment, min_size=1, max_size=10), min_size=1, max_size=4),
    frames=st.lists(
        st.tuples(
            st.integers(0, 4),  # the node that appends a segment before the frame (none past)
            segment,
            st.integers(0, 40),  # the window starts at this node's k-th point time…
            st.sampled_from([-1e-6, 0.0, 1e-9, 1e-6]),  # …or around it (1e-9: the cut on it)
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_a_live_nodes_cut_kept_across_frames_is_the_cut_searched_anew(
    nodes: list[list[tuple[float, float, int]]],
    frames: list[tuple[int, tuple[float, float, int], int, float]],
) -> None:
    """Issue 35: a live node keeps the first segment its last frame's cut started at
    (and its columns) while the next cut falls in the same interval of reaches. Windows
    moving on, back and onto a segment's end, with appends between: the frame joins the
    same points, and buckets them to the bit, as a compute that searches every cut."""
    model = build([("worker", segs) for segs in nodes])
    rb = RateBuckets()
    for who, (start, duration, tokens), k, nudge in frames:
        if who < len(nodes):
            view = model.nodes[f"n{who}"]
            seg = RateSegment(T0 + start, T0 + start + duration, tokens)
            series = [*view.progress.rate_series, seg]
            model.set_progress(f"n{who}", SessionProgress(rate_series=series))
        times = sorted(t for v in model.nodes.values() for s in v.progress.rate_series
                       for t in (s.start, s.end))  # fmt: skip
        t0 = times[k % len(times)] + nudge
        got = rb.compute(model, t0, t0 + 30, 30).copy()
        fresh = RateBuckets()
        np.testing.assert_array_equal(got, fresh.compute(model, t0, t0 + 30, 30))
        assert rb.points == fresh.points


def test_appended_tails_store_the_points_of_a_whole_conversion_to_the_bit() -> None:
    """Issue 35: a streaming node's appended tail is written into its store one float at
    a time (`_Store.append_few`), not by numpy. Over a seeded run of tails of 1 to
    FEW_SEGMENTS segments — instants, clock steps back, overlaps, the buffers doubling
    on the way — every point, reach, first start and last reach are, bit for bit, what
    the whole series converted at once gives."""
    rng = random.Random(35)
    model = build([("scout", [(0.0, 1.0, 10)])])
    view = model.nodes["n0"]
    series = view.progress.rate_series
    points, _copied = _points(view)
    at = T0 + 1.0
    while len(series) < 700:
        for _ in range(rng.randint(1, FEW_SEGMENTS)):
            start = at + rng.uniform(-3.0, 1.0)  # sometimes before the last one's end
            duration = rng.choice([0.0, 1e-7, -0.5, rng.uniform(0.0, 4.0), 1.0 / 3.0])
            series.append(RateSegment(start, start + duration, rng.randint(0, 5000)))
            at += rng.uniform(0.0, 1.5)
        points, copied = _points(view, points)
        assert copied is not None  # the tail was appended, not the series converted anew
        data, reach, first, last = _convert(series, BAND_OF_ROLE["scout"])
        assert points.data.view(np.uint64).tolist() == data.view(np.uint64).tolist()
        assert points.reach.view(np.uint64).tolist() == reach.view(np.uint64).tolist()
        assert points.store.reach_list == reach.tolist()
        assert (points.first, points.last) == (first, last)
