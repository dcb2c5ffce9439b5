"""The galaxy: the legion as a braille star map (SPEC §7.1), drawn into frame buffers.

Root sits at the centre; its children (centurions) orbit it on one ring, their children
orbit them, and so on down the tree. A star's size and brightness follow its live tok/s;
ended stars are one dim dot; the selected star wears an accent ring. Orbit angles are
`base(sibling slot, crc32(parent id)) + speed(depth) × clock`: a pure function of (state,
clock) — no randomness, and crc32 rather than `hash()` because str hashes are salted per
process.

Per frame the work is a handful of vector operations over preallocated arrays: place
every star (one slice per depth level, parents first), stamp each star's stencil, raise
cell keys, encode, cut rows into runs. Python touches each node once (its rate and ink)
and each colour run once; never each pixel or cell.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rich.segment import Segment
from rich.style import Style

from legion_tui.render.arrays import F64, Bool, Idx
from legion_tui.render.braille import PRIORITY_SHIFT, BrailleCanvas
from legion_tui.render.inks import ROLE_BRIGHT_INK, ROLE_INK, Ink
from legion_tui.render.rates import instant_rate, rates_instant
from legion_tui.render.reentry import not_reentrant
from legion_tui.render.rows import RunFinder
from legion_tui.render.steps import StepFrames
from legion_tui.state import LegionModel, NodeView

# Seconds per revolution by depth (1 = around the root): inner orbits are slow and
# stately, moons quicker; alternate directions keep neighbouring levels readable.
ORBIT_PERIOD_S: tuple[float, ...] = (240.0, 90.0, 50.0, 30.0)
FAST_TOK_S = 60.0  # at or above: the biggest, bold star
CROWDED = 10  # more siblings than this: alternate two ring radii so they do not touch

# Star stencils, ordered so that size level L uses the first STENCIL_COUNT[L] offsets:
# a dot, a plus, a 3×3 block, a radius-2 disc.
_STENCIL: list[tuple[int, int]] = [(0, 0)]
_STENCIL += [(1, 0), (-1, 0), (0, 1), (0, -1)]
_STENCIL += [(1, 1), (1, -1), (-1, 1), (-1, -1)]
_STENCIL += [(2, 0), (-2, 0), (0, 2), (0, -2)]
_STENCIL += [(2, 1), (2, -1), (-2, 1), (-2, -1), (1, 2), (-1, 2), (1, -2), (-1, -2)]
STENCIL_X = np.array([p[0] for p in _STENCIL], dtype=np.intp)
STENCIL_Y = np.array([p[1] for p in _STENCIL], dtype=np.intp)
STENCIL_K = np.arange(len(_STENCIL), dtype=np.intp)
STENCIL_COUNT = np.array([1, 5, 9, len(_STENCIL)], dtype=np.intp)
K = len(_STENCIL)

# The selection ring: every pixel at (rounded) distance 4 from the star's centre.
_RING = [(x, y) for x in range(-4, 5) for y in range(-4, 5) if round(math.hypot(x, y)) == 4]
RING_X = np.array([p[0] for p in _RING], dtype=np.intp)
RING_Y = np.array([p[1] for p in _RING], dtype=np.intp)
SELECTED_KEY = np.uint32((0xFFFF << PRIORITY_SHIFT) | Ink.ACCENT)


def _crc_unit(text: str) -> float:
    """A stable number in [0, 1) from a string (the same in every process)."""
    return zlib.crc32(text.encode()) / 2**32


@dataclass(slots=True)
class _Layout:
    """The tree's shape as arrays, parents before children (rebuilt when nodes appear)."""

    ids: list[str]
    views: list[NodeView]  # LegionModel keeps one NodeView per node for its lifetime
    index: dict[str, int]  # node id → star index
    parent: Idx  # index of the parent star; -1 for the centre star
    levels: list[tuple[int, int]]  # [lo, hi) slices of each depth, depth 1 first
    base_angle: F64
    speed: F64  # rad/s, signed
    ring_scale: F64  # 1.0, or 0.72 for every other sibling on a crowded ring
    depth: Idx
    n_top_orbiters: int  # stars on the ring around the centre


def _build_layout(model: LegionModel) -> _Layout:
    """Breadth-first over the tree. Extra top-level nodes orbit the centre with the root's
    children: the centre belongs to the first root."""
    top = model.children(None)
    ids: list[str] = []
    parents: list[int] = []
    depths: list[int] = []
    slots: list[tuple[int, int]] = []  # (sibling index, sibling count)
    if top:
        ids.append(top[0])
        parents.append(-1)
        depths.append(0)
        slots.append((0, 1))
        frontier = [(0, [*model.children(top[0]), *top[1:]])]
        depth = 1
        while frontier:
            nxt: list[tuple[int, list[str]]] = []
            for parent_idx, kids in frontier:
                for i, kid in enumerate(kids):
                    ids.append(kid)
                    parents.append(parent_idx)
                    depths.append(depth)
                    slots.append((i, len(kids)))
                    nxt.append((len(ids) - 1, model.children(kid)))
            frontier = [(p, k) for p, k in nxt if k]
            depth += 1
    n = len(ids)
    base = np.empty(n, dtype=np.float64)
    speed = np.empty(n, dtype=np.float64)
    scale = np.ones(n, dtype=np.float64)
    for k in range(n):
        i, count = slots[k]
        d = depths[k]
        parent_id = ids[parents[k]] if parents[k] >= 0 else ""
        base[k] = 2 * math.pi * (i / count + _crc_unit(parent_id))
        period = ORBIT_PERIOD_S[min(d, len(ORBIT_PERIOD_S)) - 1] if d else 1.0
        speed[k] = (2 * math.pi / period) * (1 if d % 2 else -1) if d else 0.0
        if count > CROWDED and i % 2:
            scale[k] = 0.72
    levels: list[tuple[int, int]] = []
    lo = 1
    while lo < n:
        hi = lo
        while hi < n and depths[hi] == depths[lo]:
            hi += 1
        levels.append((lo, hi))
        lo = hi
    n_top = levels[0][1] - levels[0][0] if levels else 0
    return _Layout(
        ids=ids,
        views=[model.nodes[nid] for nid in ids],
        index={nid: k for k, nid in enumerate(ids)},
        parent=np.array(parents, dtype=np.intp),
        levels=levels,
        base_angle=base,
        speed=speed,
        ring_scale=scale,
        depth=np.array(depths, dtype=np.intp),
        n_top_orbiters=n_top,
    )


class GalaxyRenderer:
    """Draws a LegionModel into its own BrailleCanvas; one `render()` per frame."""

    def __init__(self) -> None:
        self.canvas = BrailleCanvas()
        self._runs = RunFinder()
        self._layout: _Layout | None = None
        self._layout_key = -1
        self._geometry_key: tuple[int, int, int, int] = (-1, -1, -1, -1)
        self._radius = np.zeros(0, dtype=np.float64)  # orbit radius per star, this size
        self._revs: list[int] = []
        self._live_stars: dict[int, NodeView] = {}
        self._shade_all = True  # the next shade compares every star's revision
        self._shaded_at = math.nan  # the rates instant the live stars were last shaded at
        self.stars_read = 0  # stars the last frame looked at (tests: flat in the node count)
        self._cap = 0
        self._alloc_star_buffers(16)
        self.star_ids: list[str] = []  # star index → node id, of the last frame
        self.frames = 0  # frames drawn (a later frame of the same step is not drawn)
        self.steps = StepFrames()  # one frame per step (render/steps.py)

    # ----- buffers ---------------------------------------------------------------------
    def _alloc_star_buffers(self, cap: int) -> None:
        """Per-star scratch, grown geometrically so a growing legion rarely reallocates."""
        self._cap = cap
        self._angle = np.zeros(cap, dtype=np.float64)
        self._cos = np.zeros(cap, dtype=np.float64)
        self._fx = np.zeros(cap, dtype=np.float64)
        self._fy = np.zeros(cap, dtype=np.float64)
        self.star_x = np.zeros(cap, dtype=np.intp)  # pixel position of each star
        self.star_y = np.zeros(cap, dtype=np.intp)
        self._level = np.zeros(cap, dtype=np.intp)
        self._count = np.zeros(cap, dtype=np.intp)
        self._key = np.zeros(cap, dtype=np.uint32)
        self._is_dot = np.zeros(cap, dtype=np.bool_)
        # Dots (one pixel: every ended star) and bodies (stencils) are stamped apart, so
        # a legion of mostly finished agents does not pay 21 stencil slots per star.
        self._dot = tuple(np.zeros(cap, dtype=np.intp) for _ in range(4))
        self._dot_key = np.zeros(cap, dtype=np.uint32)
        self._dot_ok = np.zeros(cap, dtype=np.bool_)
        self._dot_tmp = np.zeros(cap, dtype=np.bool_)
        self._body_x = np.zeros(cap, dtype=np.intp)
        self._body_y = np.zeros(cap, dtype=np.intp)
        self._body_level = np.zeros(cap, dtype=np.intp)
        self._body_key = np.zeros(cap, dtype=np.uint32)
        self._px = np.zeros((cap, K), dtype=np.intp)
        self._py = np.zeros((cap, K), dtype=np.intp)
        self._flat = np.zeros((cap, K), dtype=np.intp)
        self._cell = np.zeros((cap, K), dtype=np.intp)
        self._keys = np.zeros((cap, K), dtype=np.uint32)
        self._ok = np.zeros((cap, K), dtype=np.bool_)
        self._tmpb = np.zeros((cap, K), dtype=np.bool_)
        r = len(RING_X)
        self._ring = tuple(np.zeros(r, dtype=np.intp) for _ in range(4))
        self._ring_at: tuple[int, int, int, int] | None = None  # what `_ring` holds
        self._ring_ok = np.zeros(r, dtype=np.bool_)
        self._ring_tmp = np.zeros(r, dtype=np.bool_)
        self._ring_keys = np.full(r, SELECTED_KEY, dtype=np.uint32)

    def buffers(self) -> tuple[object, ...]:
        """Every array a frame writes into (tests pin their identity across frames)."""
        return (
            *self.canvas.buffers(),
            self._angle, self._cos, self._fx, self._fy, self.star_x, self.star_y,
            self._level, self._count, self._key, self._is_dot, *self._dot, self._dot_key,
            self._dot_ok, self._dot_tmp, self._body_x, self._body_y, self._body_level,
            self._body_key, self._px, self._py, self._flat, self._cell,
            self._keys, self._ok, self._tmpb,
        )  # fmt: skip

    # ----- geometry --------------------------------------------------------------------
    def _sync_layout(self, model: LegionModel) -> _Layout:
        # Nodes are only ever added and never re-parented, so the node count keys the
        # tree's shape.
        if self._layout is None or self._layout_key != len(model.nodes):
            self._layout = _build_layout(model)
            self._layout_key = len(model.nodes)
            n = len(self._layout.ids)
            if n > self._cap:
                self._alloc_star_buffers(max(n, 2 * self._cap))
            self._revs = [-1] * n  # revision each star was last shaded at
            self._live_stars = {}
            self._shade_all = True  # new stars: the first shade reads every one
            self._geometry_key = (-1, -1, -1, -1)
        return self._layout

    def _sync_geometry(self, layout: _Layout) -> None:
        c = self.canvas
        key = (c.cols, c.rows, len(layout.ids), layout.n_top_orbiters)
        if key == self._geometry_key:
            return
        self._geometry_key = key
        pw, ph = c.px_w, c.px_h
        # Braille pixels are about square; stretch orbits sideways on wide canvases.
        self._stretch = min(max(pw / ph, 1.0), 1.8) if ph else 1.0
        r_max = max(min(pw / (2 * self._stretch), ph / 2) - 2.0, 0.0)
        r1 = 0.66 * r_max
        n1 = max(layout.n_top_orbiters, 1)
        r2 = 0.30 * r_max if n1 < 2 else min(0.30 * r_max, r1 * math.sin(math.pi / n1))
        ring_r = [0.0, r1, r2]
        while len(ring_r) < 16:
            ring_r.append(ring_r[-1] * 0.45)
        depth = np.minimum(layout.depth, len(ring_r) - 1)
        self._radius = np.asarray(ring_r, dtype=np.float64)[depth] * layout.ring_scale
        self._draw_background(r1 if layout.n_top_orbiters else 0.0)

    def _draw_background(self, r1: float) -> None:
        """The centre ring is static for a size: drawn once, copied in by `begin()`."""
        c = self.canvas
        if r1 < 3 or c.px_w == 0:
            c.background_pixels = c.background_keys = None
            return
        cx, cy = c.px_w / 2, c.px_h / 2
        steps = max(int(2 * math.pi * r1 * self._stretch / 3), 8)  # a dot every ~3 px
        t = np.linspace(0, 2 * math.pi, steps, endpoint=False)
        x = np.rint(cx + r1 * self._stretch * np.cos(t)).astype(np.intp)
        y = np.rint(cy + r1 * np.sin(t)).astype(np.intp)
        ok = (x >= 0) & (x < c.px_w) & (y >= 0) & (y < c.px_h)
        x, y = x[ok], y[ok]
        bg_px = np.zeros_like(c.pixels_flat)
        bg_px[y * c.px_w + x] = 1
        bg_keys = np.zeros_like(c.keys_flat)
        bg_keys[(y >> 2) * c.cols + (x >> 1)] = Ink.TRACK  # priority 0: any star wins
        c.background_pixels, c.background_keys = bg_px, bg_keys

    # ----- one frame -------------------------------------------------------------------
    @not_reentrant
    def render(
        self,
        model: LegionModel,
        now: float,
        cols: int,
        rows: int,
        styles: Sequence[Style],
        selected: str | None = None,
        changed: frozenset[str] | None = None,
    ) -> list[list[Segment]]:
        """Draw one frame and return its rows as segments (every row exactly `cols` wide).
        `changed`: the ids changed since the previous frame, if the caller knows them (a
        `ChangeFeed`); None re-reads every star's node.

        One frame is drawn per step (render/steps.py), the orbits where that step puts
        them: later in the step the step's frame comes back and the changes wait for the
        next one (`steps.owes`)."""
        c = self.canvas
        c.resize(cols, rows)
        layout = self._sync_layout(model)
        self._sync_geometry(layout)
        n = len(layout.ids)
        self.star_ids = layout.ids
        step = self.steps.step(now)
        key, sources = (step, c.cols, c.rows, self._geometry_key, selected), (layout, styles)
        kept = self.steps.kept(key, sources, changed)
        if kept is not None:
            return kept
        changed = self.steps.changes(changed)
        c.begin()
        if n and c.cols and c.rows:
            self._place(layout, step)
            self._shade(layout, now, changed)
            self._stamp(n)
            k = layout.index.get(selected) if selected is not None else None
            if k is not None:
                self._ring_around(k)
        else:
            self._shade_all = True  # `changed` went unread: the next shade reads all
        c.encode()
        inks = c.resolve_inks()
        texts = c.row_texts()
        self.frames += 1
        return self.steps.keep(key, sources, self._runs.segments(texts, inks, styles))

    def _place(self, layout: _Layout, now: float) -> None:
        """Star pixel positions: the centre, then each depth level from its parents."""
        c = self.canvas
        n = len(layout.ids)
        fx, fy, ang, cs = self._fx, self._fy, self._angle, self._cos
        fx[0], fy[0] = c.px_w / 2, c.px_h / 2
        # Reduce the clock first: epoch seconds × rad/s would lose the fraction.
        t = math.fmod(now, 3600.0 * 24)
        np.multiply(layout.speed, t, out=ang[:n])
        np.add(ang[:n], layout.base_angle, out=ang[:n])
        for lo, hi in layout.levels:
            par = layout.parent[lo:hi]
            r = self._radius[lo:hi]
            np.cos(ang[lo:hi], out=cs[lo:hi])
            np.multiply(cs[lo:hi], r, out=cs[lo:hi])
            np.multiply(cs[lo:hi], self._stretch, out=cs[lo:hi])
            np.take(fx, par, out=fx[lo:hi], mode="clip")
            np.add(fx[lo:hi], cs[lo:hi], out=fx[lo:hi])
            np.sin(ang[lo:hi], out=cs[lo:hi])
            np.multiply(cs[lo:hi], r, out=cs[lo:hi])
            np.take(fy, par, out=fy[lo:hi], mode="clip")
            np.add(fy[lo:hi], cs[lo:hi], out=fy[lo:hi])
        np.floor(fx[:n], out=cs[:n])
        np.copyto(self.star_x[:n], cs[:n], casting="unsafe")
        np.floor(fy[:n], out=cs[:n])
        np.copyto(self.star_y[:n], cs[:n], casting="unsafe")

    def _shade(self, layout: _Layout, now: float, changed: frozenset[str] | None) -> None:
        """Per star: stencil size level and key (priority = live tok/s, ink = role or dim).

        Only stars whose node changed since the last frame are re-read — found from
        `changed` when it is known and every star was shaded before, else by comparing
        every star's revision; of the rest only the live ones are recomputed (their
        tok/s moves with the clock). An ended star is a constant dim dot.
        """
        views, revs, live = layout.views, self._revs, self._live_stars
        level, key = self._level, self._key
        dim_key = (1 << PRIORITY_SHIFT) | Ink.DIM
        at = rates_instant(now)  # the header's and the chart's: one walk a node a second
        # A live star's shade is its rate at the instant, which for a node already asked
        # in it stays the instant's figure (render/rates.py): all live stars are shaded
        # once an instant, and within it only the changed ones (a thousand live stars,
        # four frames a second).
        every_live = at != self._shaded_at
        if changed is None or self._shade_all:
            stale = [k for k, v in enumerate(views) if v.revision != revs[k]]
            every_live = True
            self._shade_all = False
            self.stars_read = len(views)
        else:
            index = layout.index
            stale = [k for k in map(index.get, changed) if k is not None]
            self.stars_read = len(stale)
        for k in stale:
            if views[k].revision == revs[k]:
                continue
            view = views[k]
            revs[k] = view.revision
            if view.node.live:
                live[k] = view
            else:
                live.pop(k, None)
                level[k] = 1 if k == 0 else 0
                key[k] = dim_key
        self._shaded_at = at
        shade = live.items() if every_live else [(k, live[k]) for k in stale if k in live]
        for k, view in shade:
            rate = instant_rate(view, at)
            role = view.node.role
            if rate >= FAST_TOK_S:
                lv, ink = 3, ROLE_BRIGHT_INK[role]
            else:
                lv, ink = (2 if rate > 0 else 1), ROLE_INK[role]
            level[k] = max(lv, 2) if k == 0 else lv
            key[k] = ((2 + min(int(rate), 0xFFF0)) << PRIORITY_SHIFT) | ink

    def _stamp(self, n: int) -> None:
        """Every star → pixels and cell keys, with no boolean filtering of pixels."""
        c = self.canvas
        is_dot = self._is_dot[:n]
        np.equal(self._level[:n], 0, out=is_dot)
        dots = np.flatnonzero(is_dot)  # small index arrays: the only per-frame allocations
        np.logical_not(is_dot, out=is_dot)
        bodies = np.flatnonzero(is_dot)
        nd, nb = len(dots), len(bodies)
        if nd:
            dx, dy, flat, cell = (b[:nd] for b in self._dot)
            np.take(self.star_x, dots, out=dx, mode="clip")
            np.take(self.star_y, dots, out=dy, mode="clip")
            np.take(self._key, dots, out=self._dot_key[:nd], mode="clip")
            self._dot_ok[:nd].fill(True)
            self._to_indices(dx, dy, self._dot_ok[:nd], self._dot_tmp[:nd], flat, cell)
            c.plot(flat, cell, self._dot_key[:nd])
        if nb:
            bx, by, bl, bk = (
                self._body_x[:nb], self._body_y[:nb], self._body_level[:nb], self._body_key[:nb]
            )  # fmt: skip
            np.take(self.star_x, bodies, out=bx, mode="clip")
            np.take(self.star_y, bodies, out=by, mode="clip")
            np.take(self._level, bodies, out=bl, mode="clip")
            np.take(self._key, bodies, out=bk, mode="clip")
            px, py, ok, tmp = self._px[:nb], self._py[:nb], self._ok[:nb], self._tmpb[:nb]
            flat2, cell2, keys = self._flat[:nb], self._cell[:nb], self._keys[:nb]
            np.add(bx[:, None], STENCIL_X, out=px)
            np.add(by[:, None], STENCIL_Y, out=py)
            np.take(STENCIL_COUNT, bl, out=self._count[:nb], mode="clip")
            np.less(STENCIL_K, self._count[:nb, None], out=ok)  # the first COUNT[level] offsets
            self._to_indices(px, py, ok, tmp, flat2, cell2)
            np.copyto(keys, bk[:, None])
            c.plot(flat2.ravel(), cell2.ravel(), keys.ravel())

    def _to_indices(self, px: Idx, py: Idx, ok: Bool, tmp: Bool, flat: Idx, cell: Idx) -> None:
        """Pixel coords → flat pixel and cell indices; masked/off-canvas → the trash."""
        c = self.canvas
        # 0 ≤ p < size as one unsigned comparison: a negative p reads as a huge one.
        np.less(px.view(np.uintp), c.px_w, out=tmp)
        np.logical_and(ok, tmp, out=ok)
        np.less(py.view(np.uintp), c.px_h, out=tmp)
        np.logical_and(ok, tmp, out=ok)
        np.logical_not(ok, out=tmp)
        np.multiply(py, c.px_w, out=flat)
        np.add(flat, px, out=flat)
        np.copyto(flat, c.pixel_trash, where=tmp)
        np.right_shift(py, 2, out=cell)
        np.multiply(cell, c.cols, out=cell)
        np.right_shift(px, 1, out=px)  # px is scratch from here on
        np.add(cell, px, out=cell)
        np.copyto(cell, c.cell_trash, where=tmp)

    def _ring_around(self, k: int) -> None:
        rx, ry, flat, cell = self._ring
        c = self.canvas
        # The ring's indices stay in its buffers: recomputed only when the selected star
        # changes pixel (or the canvas its size).
        key = (int(self.star_x[k]), int(self.star_y[k]), c.px_w, c.px_h)
        if key != self._ring_at:
            np.add(RING_X, key[0], out=rx)
            np.add(RING_Y, key[1], out=ry)
            self._ring_ok.fill(True)
            self._to_indices(rx, ry, self._ring_ok, self._ring_tmp, flat, cell)
            self._ring_at = key
        c.plot(flat, cell, self._ring_keys)

    # ----- hit testing -----------------------------------------------------------------
    def star_at(self, col: int, row: int) -> str | None:
        """The node id of the star nearest to a cell (cells are ~twice as tall as wide)."""
        n = len(self.star_ids)
        if n == 0 or self.frames == 0:
            return None
        dx = (self.star_x[:n] >> 1) - col
        dy = (self.star_y[:n] >> 2) - row
        d2 = dx * dx + 4 * dy * dy
        return self.star_ids[int(np.argmin(d2))]
