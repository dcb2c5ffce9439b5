"""Chart benchmarks (SPEC §8): rate buckets for 200 series × 120 buckets vs a plain Python
loop, and a whole chart frame vs building the same stacked chart with plotext (what
`textual-plotext` renders through).

Run: .venv/bin/python bench/bench_render_chart.py   (one figure per line, `name: value unit`)
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import plotext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_render_galaxy import RUN_S, STEP_S, T0, p95, scenario, timed
from calibration import calibrated

from legion_tui.model import NodeStatus
from legion_tui.model_records import Node
from legion_tui.render import chart as chart_module
from legion_tui.render.chart import BAND_OF_ROLE, N_BANDS, ChartRenderer, RateBuckets
from legion_tui.render.inks import STYLES
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.state import LegionModel
from legion_tui.themes import palette

N_BUCKETS = 120


def naive_buckets(model: LegionModel, t0: float, t1: float, n: int) -> list[list[float]]:
    """The loop a user would write: each segment walks the buckets it overlaps."""
    out = [[0.0] * n for _ in range(N_BANDS)]
    width = (t1 - t0) / n
    for view in model.nodes.values():
        row = out[BAND_OF_ROLE[view.node.role]]
        for seg in view.progress.rate_series:
            if seg.end <= t0 or seg.start >= t1 or seg.end <= seg.start:
                continue
            rate = seg.tokens / (seg.end - seg.start)
            j0 = max(int((seg.start - t0) // width), 0)
            j1 = min(math.ceil((seg.end - t0) / width), n)
            for j in range(j0, j1):
                lo = t0 + j * width
                overlap = min(lo + width, seg.end) - max(lo, seg.start)
                if overlap > 0:
                    row[j] += rate * overlap / width
    return out


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def long_run(nodes: int, segments: int, now: float) -> LegionModel:
    """`nodes` live workers, each with one 3 s message every 5 s up to `now`."""
    model = LegionModel("r", "s", started_at=now - segments * 5.0, clock=lambda: now)
    for i in range(nodes):
        model.upsert(Node(id=f"n{i}", run_id="r", parent_id=None, name=f"n{i}", path=f"n{i}",
                          role="worker", kind="sim", backend="inprocess",
                          status=NodeStatus.RUNNING, created_at=0, updated_at=0))  # fmt: skip
        series = [RateSegment(now - (segments - k) * 5.0, now - (segments - k) * 5.0 + 3.0, 200)
                  for k in range(segments)]  # fmt: skip
        model.set_progress(f"n{i}", SessionProgress(rate_series=series))
    return model


def long_run_frames(segments: int, *, cut: bool) -> list[float]:
    """Last-60 s frames over 50 live nodes `segments` messages into a run, one node
    finishing a message per frame; `cut=False` joins whole histories (the old way)."""
    now = 100_000.0
    model = long_run(50, segments, now)
    real = chart_module._Points.from_segment
    if not cut:
        chart_module._Points.from_segment = lambda self, t0: 0  # type: ignore[method-assign]
    try:
        rb = RateBuckets()
        rb.compute(model, now - 60, now, N_BUCKETS)
        out = []
        for frame in range(60):
            view = model.nodes[f"n{frame % 50}"]
            grown = [*view.progress.rate_series, RateSegment(now - 1, now - 0.5, 100)]
            model.set_progress(view.node.id, SessionProgress(rate_series=grown))
            t = time.perf_counter()
            rb.compute(model, now - 60, now, N_BUCKETS, changed=frozenset({view.node.id}))
            out.append((time.perf_counter() - t) * 1e3)
        return out
    finally:
        chart_module._Points.from_segment = real  # type: ignore[method-assign]


def main() -> None:
    model = scenario(200, live=50)
    now = T0 + RUN_S
    segments = sum(len(v.progress.rate_series) for v in model.nodes.values())
    print(f"chart_series: {len(model.nodes)} series")
    print(f"chart_segments: {segments} segments")
    rb = RateBuckets()
    for label, t0 in (("whole_run", T0), ("last_60s", now - 60.0)):
        got = rb.compute(model, t0, now, N_BUCKETS)
        ref = np.array(naive_buckets(model, t0, now, N_BUCKETS))
        assert np.allclose(got, ref, atol=1e-6 * max(1.0, float(ref.max()))), label
        ours = timed(lambda t0=t0: rb.compute(model, t0, now, N_BUCKETS), 300)
        naive = timed(lambda t0=t0: naive_buckets(model, t0, now, N_BUCKETS), 10)
        print(f"chart_buckets_{label}_200x120_numpy_median: {med(ours):.3f} ms")
        print(f"chart_buckets_{label}_200x120_numpy_p95: {p95(ours):.3f} ms")
        print(f"chart_buckets_{label}_200x120_naive_python_median: {med(naive):.3f} ms")
        print(f"chart_buckets_{label}_naive_over_numpy: {med(naive) / med(ours):.1f} x")

    # Streaming: each frame some live nodes finish a message (append one segment): their
    # tails are converted and the join redone. 2 per frame is already generous (50 live
    # nodes with ~5 s messages at 30 fps append ~0.3 per frame); 50 is the worst case.
    live = [nid for nid, v in model.nodes.items() if v.node.live]
    clock = [now]
    for per_frame in (2, 50):
        stream = []
        for frame in range(100):
            clock[0] += 0.05
            for i in range(per_frame):
                nid = live[(frame * per_frame + i) % len(live)]
                series = model.nodes[nid].progress.rate_series
                seg = RateSegment(clock[0] - 2, clock[0], 150)
                model.set_progress(nid, SessionProgress(rate_series=[*series, seg]))
            # Only the bucketing is timed, not the list copies standing in for the tailer.
            t = time.perf_counter()
            rb.compute(model, T0, clock[0], N_BUCKETS)
            stream.append((time.perf_counter() - t) * 1e3)
        name = f"chart_buckets_whole_run_{per_frame}_appends_per_frame_numpy"
        print(f"{name}_median: {med(stream):.3f} ms")
        print(f"{name}_p95: {p95(stream):.3f} ms")

    # 8 h into a run (a message every 5 s: 5760 segments a node), 50 live nodes, the
    # 60 s window: joining only the segments that reach the window vs whole histories.
    for label, segments in (("fresh", 12), ("8h", 5760)):
        cut = long_run_frames(segments, cut=True)
        whole = long_run_frames(segments, cut=False)
        name = f"chart_buckets_last_60s_50_live_{label}"
        print(f"{name}_window_cut_median: {med(cut):.3f} ms")
        print(f"{name}_window_cut_p95: {p95(cut):.3f} ms")
        print(f"{name}_whole_history_median: {med(whole):.3f} ms")
        print(f"{name}_whole_history_p95: {p95(whole):.3f} ms")

    # Whole chart frame at 200×60 (buckets + stacked ⅛ bands + labels + segments) vs the
    # same stacked chart built with plotext from the same buckets.
    model = scenario(200, live=50)
    styles = STYLES.table(palette("legion-dark"))
    chart = ChartRenderer()
    tick = [now]

    def our_frame() -> None:
        tick[0] += STEP_S
        chart.render(model, tick[0], 200, 60, styles)

    our_frame()
    ours = timed(our_frame, 300)
    values = RateBuckets().compute(model, now - 60, now, 194).copy()
    xs = list(range(values.shape[1]))
    bands = [values[b].tolist() for b in range(N_BANDS)]

    def plotext_frame() -> str:
        plotext.clf()
        plotext.plotsize(200, 60)
        plotext.stacked_bar(xs, bands, width=1)
        return str(plotext.build())

    plotext_frame()
    theirs = timed(plotext_frame, 20)
    print(f"chart_frame_200x60_numpy_median: {med(ours):.3f} ms")
    print(f"chart_frame_200x60_numpy_p95: {p95(ours):.3f} ms")
    print(f"chart_frame_200x60_plotext_median: {med(theirs):.3f} ms")
    print(f"chart_frame_plotext_over_numpy: {med(theirs) / med(ours):.1f} x")


if __name__ == "__main__":
    with calibrated("numpy"):
        main()
