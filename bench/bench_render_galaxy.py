"""Galaxy benchmarks (SPEC §8): braille encode vs drawille, whole galaxy frames, and the
allocation of one galaxy + chart frame at 200×60.

Run: .venv/bin/python bench/bench_render_galaxy.py   (one figure per line, `name: value unit`)
"""

from __future__ import annotations

import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable

import drawille
import numpy as np
from calibration import calibrated

from legion_tui.model import NodeStatus, Role
from legion_tui.model_records import Node
from legion_tui.render.braille import BrailleCanvas
from legion_tui.render.chart import ChartRenderer
from legion_tui.render.galaxy import GalaxyRenderer
from legion_tui.render.inks import STYLES
from legion_tui.render.steps import DRAW_HZ
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.state import LegionModel
from legion_tui.themes import palette

T0 = 1_700_000_000.0
RUN_S = 600.0
# A frame a step: the renderers draw once per step and hand a later frame of the same
# step the step's picture back (render/steps.py); every timed frame here draws.
STEP_S = 1.0 / DRAW_HZ


def scenario(n_nodes: int = 200, live: int = 50, seed: int = 1) -> LegionModel:
    """SPEC §8: `n_nodes` (root, 10 centurions, workers/scouts), `live` of them streaming."""
    rng = random.Random(seed)
    now = T0 + RUN_S
    model = LegionModel("bench", "s", started_at=T0, clock=lambda: now)

    def add(nid: str, parent: str | None, role: Role, is_live: bool) -> None:
        status = NodeStatus.RUNNING if is_live else NodeStatus.SETTLED
        model.upsert(Node(nid, "bench", parent, nid, nid, role, "sim", "inprocess", status=status))
        end = now if is_live else T0 + rng.uniform(60, RUN_S - 30)
        segs, t = [], T0 + rng.uniform(0, 60)
        while t < end:
            d = min(rng.uniform(1.5, 8.0), end - t)
            segs.append(RateSegment(t, t + d, int(d * rng.uniform(40, 150))))
            t += d + rng.uniform(0.5, 6.0)
        model.set_progress(nid, SessionProgress(rate_series=segs))

    add("root", None, "root", True)
    centurions = [f"c{i}" for i in range(10)]
    for c in centurions:
        add(c, "root", "centurion", True)
    for i in range(n_nodes - 11):
        role: Role = "scout" if i % 5 == 4 else "worker"
        add(f"w{i}", centurions[i % 10], role, i < live - 11)
    return model


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def advance(self, dt: float) -> float:
        self.now += dt
        return self.now


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def p95(xs: list[float]) -> float:
    return float(np.percentile(xs, 95))


def main() -> None:
    # --- encode: the same points into a 400×240 px canvas (200×60 cells) ---------------
    rng = np.random.default_rng(0)
    n_points = 4000  # ≈ a busy galaxy: 200 stars × ~20 px
    xs = rng.integers(0, 400, n_points)
    ys = rng.integers(0, 240, n_points)
    canvas = BrailleCanvas(200, 60)
    flat = (ys * 400 + xs).astype(np.intp)

    def numpy_encode() -> list[str]:
        canvas.begin()
        canvas.pixels_flat[flat] = 1
        canvas.encode()
        return canvas.row_texts()

    pts = list(zip(xs.tolist(), ys.tolist(), strict=True))

    def drawille_encode() -> str:
        c = drawille.Canvas()
        for x, y in pts:
            c.set(x, y)
        return str(c.frame(0, 0, 400, 240))

    # Same picture from both (drawille leaves unset cells as spaces and empty rows empty).
    ours = [r.rstrip() for r in numpy_encode()]
    theirs = [r.rstrip() for r in drawille_encode().split("\n")]
    assert ours == theirs[: len(ours)], "encoders disagree"

    numpy_encode()
    a = timed(numpy_encode, 300)
    b = timed(drawille_encode, 20)
    print(f"galaxy_encode_numpy_400x240_median: {statistics.median(a):.3f} ms")
    print(f"galaxy_encode_numpy_400x240_p95: {p95(a):.3f} ms")
    print(f"galaxy_encode_drawille_400x240_median: {statistics.median(b):.3f} ms")
    print(f"galaxy_encode_drawille_over_numpy: {statistics.median(b) / statistics.median(a):.1f} x")

    # --- whole galaxy frames (place + shade + stamp + encode + segments) ---------------
    styles = STYLES.table(palette("legion-dark"))
    for n_nodes in (200, 1000):
        model = scenario(n_nodes, live=50)
        galaxy = GalaxyRenderer()

        clock = Clock(T0 + RUN_S)

        def frame(g: GalaxyRenderer = galaxy, m: LegionModel = model, c: Clock = clock) -> None:
            g.render(m, c.advance(STEP_S), 200, 60, styles, selected="w3")

        frame()
        f = timed(frame, 200)
        print(f"galaxy_frame_200x60_{n_nodes}_nodes_median: {statistics.median(f):.3f} ms")
        print(f"galaxy_frame_200x60_{n_nodes}_nodes_p95: {p95(f):.3f} ms")

    # --- allocation of one galaxy + chart frame at 200×60 (tracemalloc incl. numpy) ----
    model = scenario(200, live=50)
    galaxy, chart = GalaxyRenderer(), ChartRenderer()
    now = [T0 + RUN_S]

    def both() -> None:
        now[0] += STEP_S
        galaxy.render(model, now[0], 200, 60, styles, selected="w3")
        chart.render(model, now[0], 200, 60, styles)

    both()
    both()
    peaks: list[float] = []
    tracemalloc.start()
    for _ in range(20):
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        both()
        _, peak = tracemalloc.get_traced_memory()
        peaks.append((peak - base) / 1024)
    snap0 = tracemalloc.take_snapshot()
    for _ in range(20):
        both()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    domain = [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
    retained = sum(
        s.size_diff
        for s in snap1.filter_traces(domain).compare_to(snap0.filter_traces(domain), "filename")
    )
    print(f"galaxy_plus_chart_frame_alloc_peak_200x60_median: {statistics.median(peaks):.1f} KB")
    print(f"galaxy_plus_chart_frame_alloc_peak_200x60_max: {max(peaks):.1f} KB")
    print(f"numpy_bytes_retained_over_20_frames: {retained} B")


if __name__ == "__main__":
    with calibrated("numpy"):
        sys.exit(main())
