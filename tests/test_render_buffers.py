"""Frame buffers: braille bits, encode, reuse across frames, resize, the reentry gate."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from render_helpers import Clock, dark_styles, make_legion

from legion_tui.render.braille import BrailleCanvas
from legion_tui.render.chart import ChartRenderer
from legion_tui.render.galaxy import GalaxyRenderer
from legion_tui.render.reentry import not_reentrant

pytestmark = pytest.mark.unit

# SPEC §7.6, (x, y) → bit.
SPEC_BITS = {
    (0, 0): 0x01,
    (0, 1): 0x02,
    (0, 2): 0x04,
    (1, 0): 0x08,
    (1, 1): 0x10,
    (1, 2): 0x20,
    (0, 3): 0x40,
    (1, 3): 0x80,
}


@pytest.mark.parametrize(("dot", "bit"), sorted(SPEC_BITS.items()))
def test_each_dot_lights_its_own_code_point(dot: tuple[int, int], bit: int) -> None:
    x, y = dot
    canvas = BrailleCanvas(3, 2)
    canvas.begin()
    # The dot inside the middle cell of the second row: pixel (2 + x, 4 + y).
    canvas.pixels[4 + y, 2 + x] = 1
    canvas.encode()
    rows = canvas.row_texts()
    assert rows[1][1] == chr(0x2800 + bit)
    assert rows[0] == "   " and rows[1][0] == " " and rows[1][2] == " "


def test_encode_matches_a_per_pixel_reference() -> None:
    rng = np.random.default_rng(3)
    canvas = BrailleCanvas(17, 9)
    canvas.begin()
    canvas.pixels[...] = rng.random(canvas.pixels.shape) < 0.3
    codes = canvas.encode()
    expected = np.zeros((9, 17), dtype=np.uint32)
    for py, px in zip(*np.nonzero(canvas.pixels), strict=True):
        expected[py // 4, px // 2] |= SPEC_BITS[(px % 2, py % 4)]
    assert np.array_equal(codes, expected)
    rows = canvas.row_texts()
    assert rows == [
        "".join(chr(0x2800 + c) if c else " " for c in row) for row in expected.tolist()
    ]


def test_begin_resets_in_place_and_only_a_resize_reallocates() -> None:
    canvas = BrailleCanvas(10, 4)
    before = [id(b) for b in canvas.buffers()]
    canvas.pixels[0, 0] = 1
    canvas.keys[0, 0] = 99
    canvas.begin()
    assert not canvas.pixels.any() and not canvas.keys.any()
    assert canvas.resize(10, 4) is False
    assert [id(b) for b in canvas.buffers()] == before
    assert canvas.resize(11, 4) is True
    assert canvas.allocations == 2
    assert canvas.codes.shape == (4, 11) and canvas.pixels.shape == (16, 22)


def test_zero_size_canvas_renders_empty_rows() -> None:
    canvas = BrailleCanvas(0, 3)
    canvas.begin()
    canvas.encode()
    assert canvas.row_texts() == ["", "", ""]
    assert BrailleCanvas(0, 0).row_texts() == []


class _Nested:
    def __init__(self) -> None:
        self.depth = 0

    @not_reentrant
    def render_frame(self, inner: _Nested | None = None) -> int:
        self.depth += 1
        if inner is not None:
            inner.render_frame()
        return self.depth


def test_nested_render_raises_with_the_function_name() -> None:
    outer = _Nested()
    with pytest.raises(RuntimeError, match=r"^render_frame is not reentrant$"):
        outer.render_frame(inner=outer)
    # The gate is released after the failure, and other instances may nest freely.
    assert outer.render_frame(inner=_Nested()) == 2


def test_a_galaxy_render_inside_a_galaxy_render_raises() -> None:
    clock = Clock()
    model = make_legion(clock)
    galaxy = GalaxyRenderer()
    styles = dark_styles()
    original = galaxy._place

    def reenter(*args: object) -> None:
        galaxy.render(model, clock.now, 20, 10, styles)

    galaxy._place = reenter  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="render is not reentrant"):
        galaxy.render(model, clock.now, 20, 10, styles)
    galaxy._place = original  # type: ignore[method-assign]
    assert len(galaxy.render(model, clock.now, 20, 10, styles)) == 10


def test_frames_at_a_fixed_size_reuse_every_buffer_and_retain_no_numpy_memory() -> None:
    clock = Clock()
    model = make_legion(clock, centurions=8, workers=20)
    galaxy, chart = GalaxyRenderer(), ChartRenderer()
    styles = dark_styles()

    def frame() -> None:
        galaxy.render(model, clock.now, 200, 30, styles, selected="c1w1")
        chart.render(model, clock.now, 200, 30, styles)
        clock.now += 0.5

    frame()
    frame()
    ids = [id(b) for b in (*galaxy.buffers(), *chart.buffers())]
    domain = np.lib.tracemalloc_domain
    tracemalloc.start()
    try:
        frame()
        first = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, domain)])
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        for _ in range(5):
            frame()
        _, peak = tracemalloc.get_traced_memory()
        last = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, domain)])
    finally:
        tracemalloc.stop()
    assert [id(b) for b in (*galaxy.buffers(), *chart.buffers())] == ids
    grown = sum(s.size_diff for s in last.compare_to(first, "filename"))
    assert grown <= 0, f"numpy memory retained across frames: {grown} B"
    # Transients (row strings, segments, run indices) stay far below a frame's budget.
    assert peak - base < 256 * 1024, f"one frame peaked at {peak - base} B"


def test_a_resize_reallocates_the_galaxy_buffers_once() -> None:
    clock = Clock()
    model = make_legion(clock)
    galaxy = GalaxyRenderer()
    styles = dark_styles()
    galaxy.render(model, clock.now, 40, 12, styles)
    allocations = galaxy.canvas.allocations
    galaxy.render(model, clock.now, 40, 12, styles)
    assert galaxy.canvas.allocations == allocations
    galaxy.render(model, clock.now, 41, 12, styles)
    galaxy.render(model, clock.now, 41, 12, styles)
    assert galaxy.canvas.allocations == allocations + 1
