"""The tok/s chart: rate buckets once per frame, stacked role bands in ⅛ blocks (SPEC §7.1).

Bands are **per role** (centurion, worker, scout, root — the palette's band order,
bottom first) rather than top-N nodes + "others": the band colours then mean the same
thing as the tree's and the galaxy's role colours, and a band never changes colour when
the ranking of nodes reshuffles.

Bucketing. A RateSegment decodes `tokens` evenly over [start, end), i.e. at the constant
rate r = tokens / (end − start). In bucket units (u = (t − t0) / width) the tok/s of
bucket j is Σ r · |[a, b) ∩ [j, j+1)|. Write each segment as a ramp up at `a` (+r) and a
ramp down at `b` (−r); for a ramp of weight w starting at `a` (m = ⌊a⌋, f = a − m) the
bucket values are w·(1−f) at j = m and w for every j > m. So with
    V[m] = Σ w·(1−f),  W[m] = Σ w        (both accumulated by `np.add.at`)
bucket j = V[j] + Σ_{m<j} W[m]: one scatter-add and one cumsum, O(segments + buckets),
whatever the segments' lengths. Points before the window clamp to u = 0 (their ramps
only add a constant that the differences cancel), points after it clamp to u = B (never
plotted). A zero-length segment is a point mass: tokens / width into its own bucket.

Per node the segment → point conversion is cached by `NodeView.revision`: an unchanged
node costs nothing, a node whose series only grew converts just the new tail, and only a
rewritten series is converted whole. The frame concatenates the cached arrays into
preallocated buffers (`out=`, skipped when no contributing node changed) and leaves out
nodes with nothing inside the window. A node's points are laid out segment by segment
(start, end, start, end, …) next to a running maximum of the segments' ends, so a
binary search finds the first segment that can reach the window and only the points
from there on are joined: a node 8 h into a run adds its last minute to the 60 s
window, not its whole history (segments wholly before the window add exactly nothing).
The ended nodes' ramps do not move at all: they are bucketed from prefix sums
(`render/ramp_integral.py`), so a frame costs the live nodes' points and the buckets,
not the settled agents' history in the window.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from rich.segment import Segment
from rich.style import Style

from legion_tui.model import Role
from legion_tui.render.arrays import F64
from legion_tui.render.braille import codes_to_rows
from legion_tui.render.inks import BAND_INKS, BAND_ROLES, Ink
from legion_tui.render.ramp_integral import RampIntegral
from legion_tui.render.rates import RATES_PHASE, instant_rate, rates_instant
from legion_tui.render.reentry import not_reentrant
from legion_tui.render.rows import RunFinder
from legion_tui.render.steps import StepFrames
from legion_tui.session.progress import RateSegment
from legion_tui.state import LegionModel, NodeView

BAND_OF_ROLE: dict[Role, int] = {role: i for i, role in enumerate(BAND_ROLES)}
N_BANDS = len(BAND_ROLES)
RECENT_WINDOW_S = 60.0
READOUT_FORMAT = "now {now} · avg {avg} · peak {peak} tok/s"
READOUT_UNIT = " tok/s"
# An idle window says so, not "now 0 · avg 0 · peak 0" over an empty chart (issue 32).
READOUT_IDLE = "no tokens in this window"
WINDOW_LABELS: dict[bool, str] = {False: "last 60 s", True: "whole run"}
CHART_PHASE = RATES_PHASE  # its steps start half a step after the galaxy's (render/steps.py)
POINT_MASS_S = 1e-6  # shorter segments are instants (their rate would be meaningless)
DUST_TOK_S = 1e-6  # a bucket's rate below this is the sums' rounding, not tokens
# ' ' then ▁▂▃▄▅▆▇█: the glyph for 0..8 eighths of a cell filled from the bottom.
EIGHTHS = np.array([0x20, *range(0x2581, 0x2589)], dtype=np.uint32)


def fmt_rate(value: float) -> str:
    """Compact tok/s: `410`, `12.5k`."""
    if value < 999.5:
        return f"{value:.0f}"
    return f"{value / 1000:.1f}k"


def readout(now: float, avg: float, peak: float, width: int | None = None) -> str:
    """The readout line; on a narrow chart the unit goes first, then the text is cut."""
    if now <= 0 and peak <= 0:
        return READOUT_IDLE if width is None else READOUT_IDLE[:width]
    text = READOUT_FORMAT.format(now=fmt_rate(now), avg=fmt_rate(avg), peak=fmt_rate(peak))
    if width is None or len(text) <= width:
        return text
    return text.removesuffix(READOUT_UNIT)[:width]


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k that is ≥ value (10 for an empty chart)."""
    if value <= 0 or not math.isfinite(value):
        return 10.0
    exp = math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        top = step * 10.0**exp
        if top >= value * (1 - 1e-12):
            return top
    return 10.0 ** (exp + 1)


T, RAMP, MASS, BAND = range(4)  # the rows of a `_Points.data` array
FEW_SEGMENTS = 8  # an appended tail this short is converted in Python (`_Store.append_few`)


class _Store:
    """One node's converted points, grown in place: an appended message's tail is
    written after the others, the buffers doubling when full, so a series of n messages
    costs O(n) copies in all, not O(n) per append (a thousand agents a few hours in
    copied their whole histories a thousand times a second). Each `_Points` made from it
    reads its own prefix, which a later append never changes."""

    __slots__ = ("cells", "data", "reach", "reach_cells", "reach_list", "segments")

    def __init__(self) -> None:
        self.data: F64 = np.empty((4, 0), dtype=np.float64)  # 2 columns a segment
        self.reach: F64 = np.empty(0, dtype=np.float64)
        self.reach_list: list[float] = []  # `reach` for `bisect`, as far as written
        self.segments = 0
        self._views()

    def _views(self) -> None:
        # `data` and `reach` as flat memoryviews (row r, column c of `data` is cell
        # r · columns + c), for `append_few`: a point's four values stored through one
        # cost a third of numpy's column assignment (75 against 243 ns), and a thousand
        # streaming agents append a segment a second each.
        self.cells = cast("memoryview[float]", self.data.reshape(-1).data)  # format "d"
        self.reach_cells = cast("memoryview[float]", self.reach.data)

    def append(self, data: F64, reach: F64) -> int:
        """Write a tail's points after the others; the points copied to make room."""
        n, k = self.segments, len(reach)
        copied = self._room(n + k)
        self.data[:, 2 * n : 2 * (n + k)] = data
        self.reach[n : n + k] = reach
        self.reach_list.extend(reach.tolist())
        self.segments = n + k
        return copied

    def append_few(self, tail: Sequence[RateSegment], band: int, reached: float) -> int:
        """`append` of `_convert(tail)`'s values, computed in Python: a streaming node's
        append is one segment, for which numpy's per-call cost was most of the work.
        `reached`: the running max so far. Returns the points copied to make room."""
        n = self.segments
        copied = self._room(n + len(tail))
        cells, reach, reach_list = self.cells, self.reach_cells, self.reach_list
        cols = self.data.shape[1]
        ramp, mass, bands = RAMP * cols, MASS * cols, BAND * cols  # (T's row starts at 0)
        for i, seg in enumerate(tail, start=n):
            start, end, tokens = seg.start, seg.end, float(seg.tokens)
            a, b = 2 * i, 2 * i + 1  # the segment's start and end point
            if end - start > POINT_MASS_S:
                rate = tokens / (end - start)
                cells[a], cells[ramp + a], cells[mass + a] = start, rate, 0.0
                cells[b], cells[ramp + b], cells[mass + b] = end, -rate, 0.0
            else:  # a point mass keeps only its start point; its end carries nothing
                cells[a], cells[ramp + a], cells[mass + a] = start, 0.0, tokens
                cells[b], cells[ramp + b], cells[mass + b] = start, -0.0, 0.0
            cells[bands + a] = cells[bands + b] = band
            reached = max(reached, start, end)
            reach[i] = reached
            reach_list.append(reached)
        self.segments = n + len(tail)
        return copied

    def _room(self, segments: int) -> int:
        """Buffers for `segments` (doubling); the points copied to grow them."""
        n = self.segments
        if segments <= len(self.reach):
            return 0
        cap = max(16, 2 * segments)
        data = np.empty((4, 2 * cap), dtype=np.float64)
        reach = np.empty(cap, dtype=np.float64)
        data[:, : 2 * n] = self.data[:, : 2 * n]
        reach[:n] = self.reach[:n]
        self.data, self.reach = data, reach
        self._views()
        return 2 * n


_NO_POINTS: F64 = np.empty((4, 0), dtype=np.float64)  # (never written)


@dataclass(slots=True, eq=False)  # identity equality: join keys compare objects, not arrays
class _Points:
    """One node's segments as bucketing points (see the module docstring).

    Point order does not matter to the scatter-add, so a grown series is converted by
    appending its new tail's points, not by redoing the whole series. Segment k's
    points are columns 2k (its start) and 2k + 1 (its end).
    """

    view: NodeView  # the converted view (a cache hit must be this very object)
    revision: int
    n_segments: int
    last_segment: RateSegment | None  # series[n_segments − 1], to recognise a pure append
    store: _Store  # its points are the store's first `n_segments` (see `data`, `reach`)
    first: float  # earliest start
    last: float  # latest end
    # The last frame's cut: the cuts in (cut_lo, cut_hi] start at the same segment, whose
    # (self, segment) pair is `cut_at` and whose columns on are `cut_data`. A live node
    # is cut at every frame, and the cut passes one of its segments a few times a
    # minute: the search and the slices, for a thousand nodes, were most of a frame's
    # join (issue 35).
    cut_lo: float = math.inf  # (an empty interval: no cut yet)
    cut_hi: float = -math.inf
    cut_at: tuple[_Points, int] | None = None
    cut_data: F64 = field(default_factory=lambda: _NO_POINTS)

    def at_cut(self, cut: float) -> tuple[_Points, int]:
        """(self, `from_segment(cut)`), the columns from there on then `cut_data`."""
        if self.cut_lo < cut <= self.cut_hi and self.cut_at is not None:
            return self.cut_at
        k, n = self.from_segment(cut), self.n_segments
        reach = self.store.reach_list
        # from_segment is k for exactly the cuts in (reach[k − 1], reach[k]] (−∞ and +∞
        # past the ends): it is the first segment whose reach is ≥ the cut.
        self.cut_lo = reach[k - 1] if k > 0 else -math.inf
        self.cut_hi = reach[k] if k < n else math.inf
        self.cut_at = (self, k)
        self.cut_data = self.store.data[:, 2 * k : 2 * n]
        return self.cut_at

    @property
    def data(self) -> F64:
        """Rows T, RAMP, MASS, BAND of one (4, points) array, so a frame joins every node
        with one concatenate instead of four: T point times (epoch s); RAMP +r at a
        segment's start, −r at its end, 0 for a point mass; MASS tokens of a point mass,
        else 0; BAND the node's band index."""
        values: F64 = self.store.data[:, : 2 * self.n_segments]
        return values

    @property
    def reach(self) -> F64:
        """reach[k] = the latest point time of segments 0..k (a running max, so sorted
        even when segments overlap or a clock stepped back): segments before the first k
        with reach[k] ≥ t0 lie wholly before a window starting at t0."""
        values: F64 = self.store.reach[: self.n_segments]
        return values

    def from_segment(self, t0: float) -> int:
        """The first segment that can add anything to a window starting at `t0` (what
        `np.searchsorted(reach, t0, side="left")` finds). On the store's list: each live
        node's cut is searched every frame, and one numpy call costs more than the
        search in a few hundred segments."""
        if self.first >= t0:
            return 0
        return bisect_left(self.store.reach_list, t0, 0, self.n_segments)

    @property
    def t(self) -> F64:
        values: F64 = self.data[T]
        return values

    @property
    def ramp(self) -> F64:
        values: F64 = self.data[RAMP]
        return values

    @property
    def mass(self) -> F64:
        values: F64 = self.data[MASS]
        return values


def _convert(series: Sequence[RateSegment], band: int) -> tuple[F64, F64, float, float]:
    """Segments → (the T/RAMP/MASS/BAND rows, the running max of ends, first start,
    last end)."""
    n = len(series)
    start = np.fromiter((s.start for s in series), dtype=np.float64, count=n)
    end = np.fromiter((s.end for s in series), dtype=np.float64, count=n)
    tokens = np.fromiter((s.tokens for s in series), dtype=np.float64, count=n)
    dur = end - start
    spread = dur > POINT_MASS_S
    rate = np.where(spread, tokens / np.where(spread, dur, 1.0), 0.0)
    # A point mass keeps only its start point; its end point carries nothing.
    data = np.empty((4, 2 * n), dtype=np.float64)
    data[T, 0::2] = start
    data[T, 1::2] = np.where(spread, end, start)
    data[RAMP, 0::2] = rate
    data[RAMP, 1::2] = -rate
    data[MASS, 0::2] = np.where(spread, 0.0, tokens)
    data[MASS, 1::2] = 0.0
    data[BAND] = band
    reach = np.maximum.accumulate(np.maximum(start, end)) if n else end
    first = float(start.min()) if n else math.inf
    last = float(reach[-1]) if n else -math.inf
    return data, reach, first, last


def _points(view: NodeView, previous: _Points | None = None) -> tuple[_Points, int | None]:
    """Convert a node's series; with `previous`, only its appended tail if it is one (and
    its store is not ahead of it). The second item: for such an append, the points the
    store copied to grow, else None."""
    series = view.progress.rate_series
    band = BAND_OF_ROLE[view.node.role]
    done = previous.n_segments if previous is not None else 0
    if previous is not None and (
        done == 0
        or len(series) < done
        # `is` first: a streaming node's series keeps its segment objects (a dataclass
        # `!=` costs ~0.6 µs, and a thousand agents append a segment a second each).
        or (
            series[done - 1] is not previous.last_segment
            and series[done - 1] != previous.last_segment
        )
        or previous.store.segments != done
    ):
        previous, done = None, 0  # not an append: the series was replaced or rewritten
    if previous is not None and len(series) - done <= FEW_SEGMENTS:
        store, tail = previous.store, series[done:]
        copied = store.append_few(tail, band, previous.last)
        first = previous.first
        for seg in tail:  # `min([first, *starts])`: the same comparisons, in order
            if seg.start < first:
                first = seg.start
        last = store.reach_list[-1] if tail else previous.last
    else:
        data, reach, first, last = _convert(series[done:] if done else series, band)
        store = previous.store if previous is not None else _Store()
        if previous is not None:
            reach = np.maximum(reach, previous.last)
            first, last = min(first, previous.first), max(last, previous.last)
        copied = store.append(data, reach)
    points = _Points(
        view=view,
        revision=view.revision,
        n_segments=len(series),
        last_segment=series[-1] if series else None,
        store=store,
        first=first,
        last=last,
    )
    return points, copied if previous is not None else None


class RateBuckets:
    """Bands × buckets of tok/s, from the visible nodes' rate series, once per frame."""

    def __init__(self) -> None:
        self._cache: dict[str, _Points] = {}
        self._joined_key: tuple[object, ...] | None = None
        self._n_points = 0
        self._alloc_points(1024)
        self._n_buckets = -1
        self._alloc_buckets(0)
        self.converted = 0  # whole-series conversions so far (tests: no needless redo)
        self.extended = 0  # conversions of only an appended tail
        self.regrown = 0  # points copied by those appends (amortised: O(1) an append)
        # Contributing nodes (visible, with a series) in the model's order, and the live
        # ones among them; kept from the changed ids a frame is given (see `_sync`).
        self._members: dict[str, _Points] = {}
        self._live: dict[str, NodeView] = {}
        self._members_of: tuple[LegionModel, frozenset[str] | None, int] | None = None
        self.rescans = 0  # full membership walks (tests: a streaming frame needs none)
        # The members split for `_join`: the live ones (their points move every frame,
        # joined one by one) and the ended ones, whose points do not move. Their ramps
        # are bucketed from prefix sums (`RampIntegral`: a frame costs the buckets, not
        # the points); their point masses are held as one array with each point's
        # `reach` beside it, so which of them reach the window is one comparison however
        # many there are (a frame stays flat in the node count). `_ended_version` is
        # bumped whenever the ended set or its points change.
        self._moving: dict[str, _Points] = {}
        self._ended_ramps = RampIntegral()
        self._ended_version = 0
        self._ended_built = -1
        self._ended: tuple[_Points, ...] = ()  # the points objects the array was built from
        self._ended_data: F64 = np.zeros((4, 0), dtype=np.float64)
        self._ended_reach: F64 = np.zeros(0, dtype=np.float64)  # per point
        self._ended_written: tuple[int, int] | None = None  # (version, points) in _joined

    def _alloc_points(self, cap: int) -> None:
        self._cap = cap
        self._joined = np.zeros((4, cap), dtype=np.float64)  # every part's `data`, side by side
        self._band = np.zeros(cap, dtype=np.intp)
        self._u = np.zeros(cap, dtype=np.float64)
        self._f = np.zeros(cap, dtype=np.float64)
        self._v = np.zeros(cap, dtype=np.float64)
        self._m = np.zeros(cap, dtype=np.intp)
        self._flat = np.zeros(cap, dtype=np.intp)
        self._before = np.zeros(cap, dtype=np.bool_)
        self._joined_key = None
        self._ended_written = None

    def _alloc_buckets(self, n: int) -> None:
        self._n_buckets = n
        self._V = np.zeros((N_BANDS, n + 1), dtype=np.float64)
        self._W = np.zeros((N_BANDS, n + 1), dtype=np.float64)
        self.values = np.zeros((N_BANDS, n), dtype=np.float64)  # the result, tok/s
        self._dust = np.zeros((N_BANDS, n), dtype=np.bool_)

    def buffers(self) -> tuple[object, ...]:
        return (self._joined, self._band, self._u, self._f, self._v, self._m, self._flat,
                self._before, self._V, self._W, self.values, self._dust,
                *self._ended_ramps.buffers())  # fmt: skip

    def begin(self, n_buckets: int) -> None:
        """Start a frame: the accumulators zeroed in place (reallocated on a new width)."""
        if n_buckets != self._n_buckets:
            self._alloc_buckets(n_buckets)
        self._V.fill(0.0)
        self._W.fill(0.0)

    def _node_points(self, view: NodeView) -> _Points:
        cached = self._cache.get(view.node.id)
        if cached is not None and cached.view is view and cached.revision == view.revision:
            return cached
        series = view.progress.rate_series
        same = cached is not None and cached.view is view
        if (
            same
            and cached is not None
            and cached.n_segments == len(series)
            # `is` first: a streaming node's series keeps its segment objects, and this
            # runs for every live node every frame (a dataclass == costs ~1 µs).
            and (not series or series[-1] is cached.last_segment
                 or series[-1] == cached.last_segment)
        ):
            # The node changed (a tool call, a status) but its series did not: keep the
            # same points object, so the frame's joined buffers stay valid.
            cached.revision = view.revision
            return cached
        fresh, copied = _points(view, cached if same else None)
        if copied is None:
            self.converted += 1
        else:
            self.extended += 1
            self.regrown += copied
        self._cache[view.node.id] = fresh
        return fresh

    def _sync(
        self, model: LegionModel, visible: frozenset[str] | None, changed: frozenset[str] | None
    ) -> None:
        """Bring the members up to date: only the `changed` ids, or every node when that
        is None, the model, visible set or node count differ, or a node joins (so the
        members keep the model's order and sums come out as a full walk's would)."""
        if changed is None or self._members_of != (model, visible, len(model.nodes)):
            self._rescan(model, visible)
            return
        nodes, moving = model.nodes, self._moving
        for nid in changed:
            view = nodes.get(nid)
            if view is None:
                continue
            points = moving.get(nid)
            if (
                points is not None
                and points.view is view
                and view.node.live
                and (visible is None or nid in visible)
            ):
                series = view.progress.rate_series
                if series and len(series) == points.n_segments and (
                    series[-1] is points.last_segment
                ):
                    # A streaming node whose series stood still (its tokens moved): what
                    # the walk below and `_node_points` would keep, without them (every
                    # live node, every frame).
                    points.revision = view.revision
                    continue
            if (visible is not None and nid not in visible) or not view.progress.rate_series:
                if self._members.pop(nid, None) is not None and nid not in self._moving:
                    self._ended_version += 1
                self._live.pop(nid, None)
                self._moving.pop(nid, None)
            elif nid not in self._members or (view.node.live and nid not in self._live):
                self._rescan(model, visible)
                return
            else:
                points = self._node_points(view)
                self._members[nid] = points
                if view.node.live:
                    self._moving[nid] = points
                else:
                    self._live.pop(nid, None)
                    self._moving.pop(nid, None)
                    self._ended_version += 1  # it ended now, or its points changed

    def _rescan(self, model: LegionModel, visible: frozenset[str] | None) -> None:
        self.rescans += 1
        self._members = {
            nid: self._node_points(view)
            for nid, view in model.nodes.items()
            if (visible is None or nid in visible) and view.progress.rate_series
        }
        self._live = {nid: p.view for nid, p in self._members.items() if p.view.node.live}
        self._moving = {nid: p for nid, p in self._members.items() if p.view.node.live}
        ended = tuple(p for nid, p in self._members.items() if nid not in self._moving)
        if ended != self._ended:  # the same points objects: the array stands
            self._ended = ended
            self._ended_version += 1
        self._members_of = (model, visible, len(model.nodes))

    def _build_ended(self) -> None:
        """The ended members' ramps into the prefix sums; their point masses side by side
        (model order), with each point's reach."""
        ended = [p for nid, p in self._members.items() if nid not in self._moving]
        self._ended = tuple(ended)
        if ended:
            data = np.concatenate([p.data for p in ended], axis=1)
            reach = np.repeat(np.concatenate([p.reach for p in ended]), 2)
            masses = data[MASS] != 0.0
            self._ended_data, self._ended_reach = data[:, masses], reach[masses]
            # A point with neither (a point mass's end, a segment of no tokens) adds 0.
            self._ended_ramps.build(data[:, data[RAMP] != 0.0])
        else:
            self._ended_data = np.zeros((4, 0), dtype=np.float64)
            self._ended_reach = np.zeros(0, dtype=np.float64)
            self._ended_ramps.build(self._ended_data)
        self._ended_built = self._ended_version
        self._ended_written = None

    def forget(self) -> None:
        """Changes were not read this frame: the next compute re-reads every node."""
        self._members_of = None

    @property
    def points(self) -> int:
        """Points the last compute bucketed one by one (tests: an old history is not
        re-joined; the ended nodes' ramps are not among them)."""
        return self._n_points

    def live_views(self) -> list[NodeView]:
        """The live contributing nodes as of the last `compute` (a node with no series
        yet has no rate to add)."""
        return list(self._live.values())

    def _join(self, t0: float, per_s: float) -> int:
        """Concatenate the contributing nodes' points into the frame buffers."""
        # Anything ending before the window adds nothing: whole nodes, and in a node
        # the segments before the first one that reaches the cut. The cut sits a
        # billionth of a bucket before t0: a point closer than that may round to u = 0
        # (inside) in `compute`, and must be bucketed as `compute` sees it.
        cut = t0 - 1e-9 / per_s
        if self._ended_built != self._ended_version:
            self._build_ended()
        # An ended node's segments that reach the cut are exactly those `from_segment`
        # keeps (its reach is a running max): one mask over all of them. Their number
        # names the kept set, the cut being the only thing that moves it.
        keep = self._ended_reach >= cut
        n_ended = int(np.count_nonzero(keep))
        parts = [pts.at_cut(cut) for pts in self._moving.values() if pts.last >= cut]
        # A node's points object is replaced whenever it changes, so the tuple of
        # (object, first segment) pairs, compared by identity, says whether the joined
        # buffers are current.
        ended_key = (self._ended_version, n_ended)
        key = (ended_key, *parts)
        if key == self._joined_key:
            return self._n_points
        datas = [p.cut_data for p, _k in parts]
        n = n_ended + 2 * sum(p.n_segments - k for p, k in parts)
        if n > self._cap:
            self._alloc_points(max(n, 2 * self._cap))
        if self._ended_written != ended_key:
            np.compress(keep, self._ended_data, axis=1, out=self._joined[:, :n_ended])
            np.copyto(self._band[:n_ended], self._joined[BAND, :n_ended], casting="unsafe")
            self._ended_written = ended_key
        if datas:
            np.concatenate(datas, axis=1, out=self._joined[:, n_ended:n])
            np.copyto(self._band[n_ended:n], self._joined[BAND, n_ended:n], casting="unsafe")
        self._joined_key = key
        self._n_points = n
        return n

    @not_reentrant
    def compute(
        self,
        model: LegionModel,
        t0: float,
        t1: float,
        n_buckets: int,
        visible: frozenset[str] | None = None,
        changed: frozenset[str] | None = None,
    ) -> F64:
        """tok/s per (band, bucket) over [t0, t1) split into `n_buckets` equal buckets.

        `changed`: the ids changed since the previous compute, if the caller knows them
        (a `ChangeFeed`); None re-reads every node. Returns `self.values` (reused across
        frames: copy it to keep it).
        """
        self._sync(model, visible, changed)
        self.begin(n_buckets)
        V, W, out = self._V, self._W, self.values
        if n_buckets == 0 or t1 <= t0:
            out.fill(0.0)
            return out
        per_s = n_buckets / (t1 - t0)  # buckets per second
        n = self._join(t0, per_s)
        t, ramp, mass = self._joined[T, :n], self._joined[RAMP, :n], self._joined[MASS, :n]
        band = self._band[:n]
        u, f, v, m, before = self._u[:n], self._f[:n], self._v[:n], self._m[:n], self._before[:n]
        np.subtract(t, t0, out=u)
        np.multiply(u, per_s, out=u)
        np.less(u, 0.0, out=before)
        np.clip(u, 0.0, float(n_buckets), out=u)
        np.floor(u, out=f)
        np.copyto(m, f, casting="unsafe")
        np.subtract(u, f, out=f)  # fraction inside the bucket
        # V weight: r·(1 − f) for ramps, tokens/width for point masses inside the window.
        np.subtract(1.0, f, out=f)
        np.multiply(ramp, f, out=v)
        np.multiply(mass, per_s, out=f)
        np.copyto(f, 0.0, where=before)
        np.add(v, f, out=v)
        flat = self._flat[:n]  # (band, bucket) → index into the raveled V / W
        np.multiply(band, n_buckets + 1, out=flat)
        np.add(flat, m, out=flat)
        # Σ per (band, bucket): bincount adds in the points' order from zero, as
        # np.add.at into the zeroed grids did — the same sums, several times faster.
        size = V.size
        np.copyto(V.reshape(size), np.bincount(flat, weights=v, minlength=size))
        np.copyto(W.reshape(size), np.bincount(flat, weights=ramp, minlength=size))
        np.cumsum(W, axis=1, out=W)
        out[:, 0] = V[:, 0]
        np.add(V[:, 1:n_buckets], W[:, : n_buckets - 1], out=out[:, 1:])
        self._ended_ramps.add_to(out, t0, per_s)
        # Float dust either side of zero: the sums of a ramp that began and ended before
        # the window leave ±1e-12 tok/s in its buckets, which drew a full chart of
        # nothing under a y axis of 1e-11 labelled 0 (the demo's idle minute).
        np.less(out, DUST_TOK_S, out=self._dust)
        np.copyto(out, 0.0, where=self._dust)
        return out


@dataclass(frozen=True, slots=True)
class ChartStats:
    """The readout's figures, all from the visible nodes only.

    now: Σ live tok/s of the visible live nodes (the tree's "live tok/s" figure: the
        newest buckets only fill in when a message ends, so they would read low);
    avg: mean bucket total since the run started (or since the first tokens, if earlier);
    peak: the largest bucket total; y_max: the nice round top of the y axis.
    """

    now: float
    avg: float
    peak: float
    y_max: float


class ChartRenderer:
    """Readout line + y labels + stacked ⅛-block bands, from preallocated grids."""

    def __init__(self) -> None:
        self.buckets = RateBuckets()
        self._runs = RunFinder()
        self._shape = (-1, -1)
        self._alloc(0, 0)
        self.stats = ChartStats(0.0, 0.0, 0.0, nice_ceiling(0.0))
        self.steps = StepFrames(CHART_PHASE)  # one frame per step (render/steps.py)
        self.frames = 0  # frames drawn (a later frame of the same step is not drawn)

    def _alloc(self, h: int, b: int) -> None:
        self._shape = (h, b)
        self._tops = np.zeros((N_BANDS + 1, b), dtype=np.float64)  # band edges, eighths
        self._fill = np.zeros((h, b), dtype=np.float64)  # eighths filled per cell
        self._mid = np.zeros((h, b), dtype=np.float64)
        self._above = np.zeros((h, b), dtype=np.bool_)
        self._level = np.zeros((h, b), dtype=np.intp)
        self._band = np.zeros((h, b), dtype=np.intp)
        self._empty = np.zeros((h, b), dtype=np.bool_)
        self.codes = np.zeros((h, b), dtype=np.uint32)
        self.inks = np.zeros((h, b), dtype=np.uint8)
        # Bottom edge of each cell row in eighths, top row first.
        self._lo = (8.0 * np.arange(h - 1, -1, -1, dtype=np.float64)).reshape(h, 1)
        self._band_ink = np.array(BAND_INKS, dtype=np.uint8)

    def buffers(self) -> tuple[object, ...]:
        return (*self.buckets.buffers(), self._tops, self._fill, self._mid, self._above,
                self._level, self._band, self._empty, self.codes, self.inks)  # fmt: skip

    def window(self, model: LegionModel, now: float, whole_run: bool) -> tuple[float, float]:
        if not whole_run:
            return now - RECENT_WINDOW_S, now
        return min(model.started_at, now - 1.0), now

    @not_reentrant
    def render(
        self,
        model: LegionModel,
        now: float,
        cols: int,
        rows: int,
        styles: Sequence[Style],
        visible: frozenset[str] | None = None,
        whole_run: bool = False,
        changed: frozenset[str] | None = None,
    ) -> list[list[Segment]]:
        """One frame; every returned row is exactly `cols` cells wide. `changed`: the
        ids changed since the previous frame, if known (see `RateBuckets.compute`).

        One frame is drawn per step (render/steps.py): later in the step the step's
        frame comes back and the changes wait for the next one (`steps.owes`)."""
        key = (self.steps.step(now), cols, rows, visible, whole_run)
        sources = (model, styles)
        kept = self.steps.kept(key, sources, changed)
        if kept is not None:
            return kept
        changed = self.steps.changes(changed)
        self.frames += 1
        rows_drawn = self._draw(model, now, cols, rows, styles, visible, whole_run, changed)
        return self.steps.keep(key, sources, rows_drawn)

    def _draw(
        self,
        model: LegionModel,
        now: float,
        cols: int,
        rows: int,
        styles: Sequence[Style],
        visible: frozenset[str] | None,
        whole_run: bool,
        changed: frozenset[str] | None,
    ) -> list[list[Segment]]:
        if rows <= 0:
            self.buckets.forget()  # `changed` goes unread: the next frame re-reads all
            return []
        t0, t1 = self.window(model, now, whole_run)
        # Labels need the y max, which needs the buckets, whose count needs the label
        # width: size the label column for the widest label a chart can have ("12.5k").
        label_w = 6 if cols >= 6 + 8 else 0
        plot_w, plot_h = max(cols - label_w, 0), rows - 1
        if plot_h <= 0:
            plot_w = 0  # a one-row chart is the readout alone; no bucket to compute
        values = self.buckets.compute(model, t0, t1, plot_w, visible, changed)
        self.stats = self._stats(model, now, values, t0, t1)
        head = self._readout_row(cols, styles, whole_run)
        if plot_h <= 0:
            return [head]
        if self._shape != (plot_h, plot_w):
            self._alloc(plot_h, plot_w)
        self._stack(values, plot_h)
        texts = codes_to_rows(self.codes)
        prefixes = self._labels(plot_h, label_w, styles)
        return [head, *self._runs.segments(texts, self.inks, styles, prefixes)]

    def _stats(
        self,
        model: LegionModel,
        now: float,
        values: F64,
        t0: float,
        t1: float,
    ) -> ChartStats:
        n = values.shape[1]
        totals = values.sum(axis=0)
        peak = float(totals.max()) if n else 0.0
        avg = 0.0
        if n:
            # Average over the buckets since the run started — or since the first tokens,
            # when resumed agents bring history from before it — so it never exceeds peak.
            first = int(np.clip((model.started_at - t0) * n / (t1 - t0), 0, n - 1))
            nonzero = np.flatnonzero(totals[:first])
            if nonzero.size:
                first = int(nonzero[0])
            avg = float(totals[first:].mean())
        at = rates_instant(now)  # the header's instant: its walks are shared
        live = 0.0
        for view in self.buckets.live_views():  # the visible live nodes with a series
            live += instant_rate(view, at)
        return ChartStats(now=live, avg=avg, peak=peak, y_max=nice_ceiling(peak))

    def _readout_row(self, cols: int, styles: Sequence[Style], whole_run: bool) -> list[Segment]:
        s = self.stats
        text = readout(s.now, s.avg, s.peak, cols)
        label = WINDOW_LABELS[whole_run]
        gap = cols - len(text) - len(label)
        out = [Segment(text, styles[Ink.TEXT])]
        if gap >= 2:
            out += [Segment(" " * gap, styles[Ink.BLANK]), Segment(label, styles[Ink.DIM])]
        elif cols > len(text):
            out.append(Segment(" " * (cols - len(text)), styles[Ink.BLANK]))
        return out

    def _labels(self, h: int, label_w: int, styles: Sequence[Style]) -> list[list[Segment]]:
        if label_w == 0:
            return [[] for _ in range(h)]
        y_max = self.stats.y_max
        texts = [""] * h
        texts[0] = fmt_rate(y_max)
        texts[h - 1] = "0" if h > 1 else texts[0]
        if h >= 4 and h % 2 == 0:
            # A label marks its row's top edge; only an even height has a row whose top
            # edge is exactly half way (odd heights would show an unround value).
            texts[h // 2] = fmt_rate(y_max / 2)
        style = styles[Ink.DIM]
        return [[Segment(t.rjust(label_w - 1)[: label_w - 1] + " ", style)] for t in texts]

    def _stack(self, values: F64, h: int) -> None:
        """Band values → glyph codes and inks of the plot grid (top row first)."""
        tops, fill, mid = self._tops, self._fill, self._mid
        tops[0].fill(0.0)
        np.cumsum(values, axis=0, out=tops[1:])
        np.multiply(tops, 8.0 * h / self.stats.y_max, out=tops)
        np.rint(tops, out=tops)  # whole eighths: every glyph is exact
        np.subtract(tops[N_BANDS], self._lo, out=fill)
        np.clip(fill, 0.0, 8.0, out=fill)
        np.copyto(self._level, fill, casting="unsafe")
        np.take(EIGHTHS, self._level, out=self.codes, mode="clip")  # clip: never buffered
        # A cell takes the colour of the band at the middle of its filled part (the band
        # filling most of it, but for slivers): count the band tops below that point.
        np.multiply(fill, 0.5, out=mid)
        np.add(mid, self._lo, out=mid)
        self._band.fill(0)
        for k in range(1, N_BANDS):
            np.greater_equal(mid, tops[k], out=self._above)
            np.add(self._band, self._above, out=self._band)
        np.take(self._band_ink, self._band, out=self.inks, mode="clip")
        np.equal(self._level, 0, out=self._empty)
        np.copyto(self.inks, np.uint8(Ink.BLANK), where=self._empty)
