"""The braille frame buffers: pixel grid → uint32 braille codes → row strings.

Allocated once per size (`resize` reallocates only when the size changes); `begin()`
resets them in place every frame. Each terminal cell is 2 × 4 pixels; a cell's code is
the OR of its lit dots (SPEC §7.6, `(x, y)`):

    (0,0)=0x01 (1,0)=0x08
    (0,1)=0x02 (1,1)=0x10
    (0,2)=0x04 (1,2)=0x20
    (0,3)=0x40 (1,3)=0x80

Encoding ORs eight strided pixel slices into the code grid (`out=` into preallocated
buffers: no per-cell Python, no allocation), and row strings are a `<U{cols}` view of the
uint32 code points, so a whole row becomes one Python string in one step.

Besides pixels, each cell carries a *key*: `(priority << 8) | ink`. Drawing a star does a
`np.maximum.at` of its key into its cells, so a cell ends up with the ink of the brightest
thing drawn into it, however many stars share it, in any drawing order.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from legion_tui.render.arrays import U8, U32, Idx

# BIT[y, x]: the dot bit of pixel (x, y) inside its 2 × 4 cell.
BIT = np.array([[0x01, 0x08], [0x02, 0x10], [0x04, 0x20], [0x40, 0x80]], dtype=np.uint32)
# The same as left-shift amounts, for `np.left_shift(pixels, SHIFT, out=...)`.
SHIFT = np.array([[0, 3], [1, 4], [2, 5], [6, 7]], dtype=np.uint32)
BRAILLE_BASE = np.uint32(0x2800)
SPACE = np.uint32(0x20)
INK_MASK = np.uint32(0xFF)
PRIORITY_SHIFT = 8



class BrailleCanvas:
    """Pixel grid, code grid, key/ink grids and row text for a `cols × rows` cell area.

    `pixels` and `keys` each have one extra trailing "trash" element past the real grid:
    drawing code redirects masked-out or off-canvas points there instead of filtering
    them (boolean filtering would allocate every frame); the trash is never encoded.
    """

    def __init__(self, cols: int = 0, rows: int = 0) -> None:
        self.cols = -1
        self.rows = -1
        self.allocations = 0  # how many times the buffers were (re)allocated
        self.resize(cols, rows)

    # ----- allocation ------------------------------------------------------------------
    def resize(self, cols: int, rows: int) -> bool:
        """(Re)allocate for a new size; a same-size call is free. True when reallocated."""
        cols, rows = max(0, cols), max(0, rows)
        if (cols, rows) == (self.cols, self.rows):
            return False
        self.cols, self.rows = cols, rows
        self.px_w, self.px_h = cols * 2, rows * 4
        n_px, n_cells = self.px_w * self.px_h, cols * rows
        self.pixels_flat: U8 = np.zeros(n_px + 1, dtype=np.uint8)
        self.pixels: U8 = self.pixels_flat[:n_px].reshape(self.px_h, self.px_w)
        self.pixel_trash = n_px
        self.keys_flat: U32 = np.zeros(n_cells + 1, dtype=np.uint32)
        self.keys: U32 = self.keys_flat[:n_cells].reshape(rows, cols)
        self.cell_trash = n_cells
        self.codes: U32 = np.zeros((rows, cols), dtype=np.uint32)
        self.chars: U32 = np.zeros((rows, cols), dtype=np.uint32)
        self.inks: U8 = np.zeros((rows, cols), dtype=np.uint8)
        self._tmp: U32 = np.zeros((rows, cols), dtype=np.uint32)
        self._blank = np.zeros((rows, cols), dtype=np.bool_)
        # Static background (e.g. orbit rings) copied in by `begin()`; None = all zero.
        self.background_pixels: U8 | None = None
        self.background_keys: U32 | None = None
        self.allocations += 1
        return True

    def buffers(self) -> tuple[object, ...]:
        """The arrays a frame draws into (tests check their identity across frames)."""
        return (self.pixels_flat, self.keys_flat, self.codes, self.chars, self.inks, self._tmp)

    # ----- one frame -------------------------------------------------------------------
    def begin(self) -> None:
        """Reset every per-frame buffer in place: the one entry point of a frame."""
        if self.background_pixels is None:
            self.pixels_flat.fill(0)
        else:
            np.copyto(self.pixels_flat, self.background_pixels)
        if self.background_keys is None:
            self.keys_flat.fill(0)
        else:
            np.copyto(self.keys_flat, self.background_keys)

    def plot(self, flat_px: Idx, flat_cells: Idx, keys: U32) -> None:
        """Light pixels (flat indices, trash allowed) and raise their cells' keys."""
        self.pixels_flat[flat_px] = 1
        np.maximum.at(self.keys_flat, flat_cells, keys)

    def encode(self) -> U32:
        """Pixels → braille dot bits per cell (without the 0x2800 base), in `codes`."""
        codes, tmp, px = self.codes, self._tmp, self.pixels
        codes.fill(0)
        if codes.size == 0:
            return codes
        for y in range(4):
            for x in range(2):
                np.left_shift(px[y::4, x::2], SHIFT[y, x], out=tmp, dtype=np.uint32)
                np.bitwise_or(codes, tmp, out=codes)
        return codes

    def resolve_inks(self) -> U8:
        """Keys → the ink of each cell (low byte of the winning key), in `inks`."""
        np.bitwise_and(self.keys, INK_MASK, out=self.inks, casting="unsafe")
        return self.inks

    def row_texts(self) -> list[str]:
        """One string per row: braille glyphs, a plain space for an empty cell."""
        if self.cols == 0:
            return [""] * self.rows
        np.bitwise_or(self.codes, BRAILLE_BASE, out=self.chars)
        np.equal(self.codes, 0, out=self._blank)
        np.copyto(self.chars, SPACE, where=self._blank)
        return codes_to_rows(self.chars)


def codes_to_rows(chars: U32) -> list[str]:
    """A C-contiguous (rows, cols) uint32 grid of code points → one str per row."""
    rows, cols = chars.shape
    if cols == 0:
        return [""] * rows
    rows_view: npt.NDArray[np.str_] = chars.view(f"<U{cols}")
    return rows_view.ravel().tolist()
