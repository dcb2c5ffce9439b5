"""Cut row strings into styled segments by runs of equal ink.

Run boundaries are found for the whole grid at once with numpy (`ink[:, 1:] !=
ink[:, :-1]`); Python then touches each *run*, never each cell. A galaxy row is mostly
one long blank run, so a 200-column row costs a handful of segments.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rich.segment import Segment
from rich.style import Style

from legion_tui.render.arrays import U8, Bool


class RunFinder:
    """Owns the boolean change grid so run detection allocates only its (small) output."""

    def __init__(self) -> None:
        self._change: Bool = np.zeros((0, 0), dtype=np.bool_)
        # Per row: ((text, prefix), segments) of the previous frame; its inks in `_inks`.
        self._rows: list[tuple[tuple[str, tuple[Segment, ...]], list[Segment]] | None] = []
        self._inks: U8 = np.zeros((0, 0), dtype=np.uint8)
        self._ink_moved: Bool = np.zeros((0, 0), dtype=np.bool_)
        self._styles: Sequence[Style] | None = None

    def runs(
        self, inks: U8
    ) -> tuple[list[int], list[int], list[int], list[int]]:
        """Runs row-major: (first run index of each row + a final total, start column,
        end column, ink) — the first list has rows + 1 entries."""
        rows, cols = inks.shape
        if rows == 0 or cols == 0:
            return [0] * (rows + 1), [], [], []
        if self._change.shape != (rows, cols):
            self._change = np.zeros((rows, cols), dtype=np.bool_)
        change = self._change
        change[:, 0] = True
        np.not_equal(inks[:, 1:], inks[:, :-1], out=change[:, 1:])
        r, c = np.nonzero(change)
        # A run ends where the next one starts, or at the row's end.
        ends = np.full_like(c, cols)
        same_row = r[1:] == r[:-1]
        ends[:-1][same_row] = c[1:][same_row]
        bounds = np.searchsorted(r, np.arange(rows + 1))
        return bounds.tolist(), c.tolist(), ends.tolist(), inks[r, c].tolist()

    def segments(
        self,
        texts: Sequence[str],
        inks: U8,
        styles: Sequence[Style],
        prefixes: Sequence[list[Segment]] | None = None,
    ) -> list[list[Segment]]:
        """Per row: optional prefix segments, then one Segment per run of equal ink.

        A row whose text, inks and prefix equal the previous frame's gets the previous
        frame's segment list back (blank rows, a chart's settled part): no new objects.
        The inks are compared for the whole grid at once, and the runs are found only
        when some row is new.
        """
        n_rows = inks.shape[0]
        if styles is not self._styles or self._inks.shape != inks.shape:
            self._styles = styles
            self._rows = [None] * n_rows
            self._inks = np.zeros_like(inks)
            self._ink_moved = np.zeros(inks.shape, dtype=np.bool_)
        # Which rows' inks moved since the previous frame: for the whole grid at once.
        np.not_equal(inks, self._inks, out=self._ink_moved)
        inks_moved: list[bool] = np.any(self._ink_moved, axis=1).tolist()
        np.copyto(self._inks, inks)
        runs: tuple[list[int], list[int], list[int], list[int]] | None = None
        # tuple.__new__ skips NamedTuple's Python-level __new__: this is the one place
        # Python runs per run, and a busy chart has thousands of runs.
        new = tuple.__new__
        out: list[list[Segment]] = []
        for row in range(n_rows):
            text = texts[row]
            prefix = prefixes[row] if prefixes is not None else _NO_PREFIX
            key = (text, tuple(prefix))
            cached = self._rows[row]
            if cached is not None and not inks_moved[row] and cached[0] == key:
                out.append(cached[1])
                continue
            if runs is None:  # only when some row is new
                runs = self.runs(inks)
            bounds, starts, ends, run_inks = runs
            a, b = bounds[row], bounds[row + 1]
            segs = [*prefix]
            segs += [
                new(Segment, (text[s:e], styles[k], None))
                for s, e, k in zip(starts[a:b], ends[a:b], run_inks[a:b], strict=True)
            ]
            self._rows[row] = (key, segs)
            out.append(segs)
        return out


_NO_PREFIX: list[Segment] = []
