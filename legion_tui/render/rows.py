"""Cut row strings into styled segments by runs of equal ink.

Run boundaries are found for the whole grid at once with numpy (`ink[:, 1:] !=
ink[:, :-1]`); Python then touches each *run*, never each cell. A galaxy row is mostly
one long blank run, so a 200-column row costs a handful of segments.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from rich.segment import Segment
from rich.style import Style


class RunFinder:
    """Owns the boolean change grid so run detection allocates only its (small) output."""

    def __init__(self) -> None:
        self._change: npt.NDArray[np.bool_] = np.zeros((0, 0), dtype=np.bool_)

    def runs(
        self, inks: npt.NDArray[np.uint8]
    ) -> tuple[list[int], list[int], list[int], list[int]]:
        """(row, start column, end column, ink) of every run, row-major."""
        rows, cols = inks.shape
        if rows == 0 or cols == 0:
            return [], [], [], []
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
        return r.tolist(), c.tolist(), ends.tolist(), inks[r, c].tolist()

    def segments(
        self,
        texts: Sequence[str],
        inks: npt.NDArray[np.uint8],
        styles: Sequence[Style],
        prefixes: Sequence[list[Segment]] | None = None,
    ) -> list[list[Segment]]:
        """Per row: optional prefix segments, then one Segment per run of equal ink."""
        n_rows = inks.shape[0]
        out: list[list[Segment]] = (
            [list(p) for p in prefixes] if prefixes is not None else [[] for _ in range(n_rows)]
        )
        # tuple.__new__ skips NamedTuple's Python-level __new__: this loop is the one
        # place Python runs per run, and a busy chart has thousands of runs.
        new = tuple.__new__
        for row, start, end, ink in zip(*self.runs(inks), strict=True):
            out[row].append(new(Segment, (texts[row][start:end], styles[ink], None)))
        return out
