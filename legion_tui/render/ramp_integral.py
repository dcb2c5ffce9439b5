"""The ended nodes' part of the rate buckets, from prefix sums instead of per point.

An ended node's points never move, but the chart's window does, every frame: bucketing
them point by point (chart.py's scatter-add) costs O(points) a frame, and a legion of
10 000 settled agents whose last messages fall in the last minute holds 100 000 of them.

Here they are sorted by time once per band (when the ended set changes) and kept as
prefix sums of the ramp weights w and of w·(t − origin). The bucketing of chart.py gives
bucket j, for bucket edges e_j = t0 + j/per_s,

    Σ_{t < e_j} w  +  Σ_{e_j ≤ t < e_(j+1)} w·(1 − (t − e_j)·per_s)
  = P_w(e_(j+1)) − per_s·(Σ_bucket w·(t − origin) − (e_j − origin)·Σ_bucket w)

(points before the window count whole — they clamp to the window's start — and points
from t1 on count nothing), so a frame costs one `searchsorted` of the B + 1 edges and a
few operations over B, whatever the number of points. The sums come out in another
order than the point-by-point ones: equal to within float64 rounding (≈ 1e-12 of a
bucket's value here), not bit for bit. Point masses (instants) jump from bucket to
bucket rather than ramp, so they stay with chart.py's per-point path.
"""

from __future__ import annotations

import numpy as np

from legion_tui.render.arrays import F64, Idx

T, RAMP, BAND = 0, 1, 3  # rows of chart.py's (4, points) arrays (MASS, row 2, not used)


class _Band:
    """One band's ramp points in time order, as prefix sums."""

    __slots__ = ("origin", "pw", "pwt", "t")

    def __init__(self, t: F64, w: F64) -> None:
        order = np.argsort(t, kind="stable")
        # Times relative to the first point, and the bucket edges too (see `add_to`): at
        # epoch scale an edge t0 + j/per_s rounds to float64's ~0.2 µs grain, and w·t
        # would lose the bucket fraction altogether.
        self.origin = float(t[order[0]])
        self.t: F64 = t[order] - self.origin  # exact: both at the same scale
        w = w[order]
        self.pw: F64 = np.concatenate(([0.0], np.cumsum(w)))
        self.pwt: F64 = np.concatenate(([0.0], np.cumsum(w * self.t)))


class RampIntegral:
    """Bands × buckets of the ended nodes' ramp points for any window (see the module)."""

    def __init__(self) -> None:
        self._bands: dict[int, _Band] = {}
        self.points = 0  # ramp points held (tests)
        self._n = -1
        self._alloc(0)

    def _alloc(self, n_buckets: int) -> None:
        self._n = n_buckets
        self._steps: F64 = np.arange(n_buckets + 1, dtype=np.float64)
        self._offsets: F64 = np.zeros(n_buckets + 1, dtype=np.float64)  # j / per_s
        self._edges: F64 = np.zeros(n_buckets + 1, dtype=np.float64)
        self._rel: F64 = np.zeros(n_buckets, dtype=np.float64)
        self._idx: Idx = np.zeros(n_buckets + 1, dtype=np.intp)
        self._at_w: F64 = np.zeros(n_buckets + 1, dtype=np.float64)
        self._at_wt: F64 = np.zeros(n_buckets + 1, dtype=np.float64)
        self._sw: F64 = np.zeros(n_buckets, dtype=np.float64)
        self._swt: F64 = np.zeros(n_buckets, dtype=np.float64)

    def buffers(self) -> tuple[object, ...]:
        return (self._offsets, self._edges, self._rel, self._idx, self._at_w, self._at_wt, self._sw,
                self._swt)  # fmt: skip

    def build(self, data: F64) -> None:
        """Hold these ramp points (chart.py's rows T, RAMP, BAND; no point masses)."""
        bands: dict[int, _Band] = {}
        band_of = data[BAND]
        for band in np.unique(band_of).tolist():
            sel = band_of == band
            bands[int(band)] = _Band(data[T, sel], data[RAMP, sel])
        self._bands = bands
        self.points = int(data.shape[1])

    def add_to(self, out: F64, t0: float, per_s: float) -> None:
        """out[band, j] += the held points' tok/s in bucket j of the window from `t0`
        with `per_s` buckets a second (out: bands × buckets)."""
        if not self._bands:
            return
        n = out.shape[1]
        if n != self._n:
            self._alloc(n)
        offsets, edges, rel, idx = self._offsets, self._edges, self._rel, self._idx
        at_w, at_wt, sw, swt = self._at_w, self._at_wt, self._sw, self._swt
        np.divide(self._steps, per_s, out=offsets)
        for band, held in self._bands.items():
            # The edges relative to the band's origin: t0 − origin is exact, and j/per_s
            # then adds at the scale of the window, not of the epoch.
            np.add(offsets, t0 - held.origin, out=edges)
            idx[:] = np.searchsorted(held.t, edges, side="left")
            np.take(held.pw, idx, out=at_w)
            np.take(held.pwt, idx, out=at_wt)
            np.subtract(at_w[1:], at_w[:-1], out=sw)
            np.subtract(at_wt[1:], at_wt[:-1], out=swt)
            np.multiply(edges[:-1], sw, out=rel)
            np.subtract(swt, rel, out=swt)
            np.multiply(swt, per_s, out=swt)
            np.subtract(at_w[1:], swt, out=sw)
            np.add(out[band], sw, out=out[band])
