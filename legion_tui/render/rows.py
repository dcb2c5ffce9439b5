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

    def runs(self, inks: npt.NDArray[np.uint8]) -> tuple[list[int], list[int], list[int]]:
        """(row, start column, ink) of every run, row-major."""
        rows, cols = inks.shape
        if rows == 0 or cols == 0:
            return [], [], []
        if self._change.shape != (rows, cols):
            self._change = np.zeros((rows, cols), dtype=np.bool_)
        change = self._change
        change[:, 0] = True
        np.not_equal(inks[:, 1:], inks[:, :-1], out=change[:, 1:])
        r, c = np.nonzero(change)
        return r.tolist(), c.tolist(), inks[r, c].tolist()

    def segments(
        self,
        texts: Sequence[str],
        inks: npt.NDArray[np.uint8],
        styles: Sequence[Style],
        prefixes: Sequence[list[Segment]] | None = None,
    ) -> list[list[Segment]]:
        """Per row: optional prefix segments, then one Segment per run of equal ink."""
        n_rows, cols = inks.shape
        out: list[list[Segment]] = (
            [list(p) for p in prefixes] if prefixes is not None else [[] for _ in range(n_rows)]
        )
        rows, starts, run_inks = self.runs(inks)
        n = len(rows)
        for i in range(n):
            row = rows[i]
            start = starts[i]
            end = starts[i + 1] if i + 1 < n and rows[i + 1] == row else cols
            out[row].append(Segment(texts[row][start:end], styles[run_inks[i]]))
        return out
