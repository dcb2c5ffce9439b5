"""Which layout a terminal size gets (SPEC §7.1), as CSS classes on the main screen.

≥ 150 columns: tree | galaxy over chart; 100–149: tree over galaxy + chart side by
side; < 100: tree over chart (galaxy only on `g`); portrait or < 60 columns: tree and a
compact chart; below 40×10 only a "terminal too small" notice.
"""

from __future__ import annotations

WIDE = 150
MEDIUM = 100
COMPACT = 60
TOO_SMALL = (40, 10)


def is_portrait(width: int, height: int) -> bool:
    # A cell is about twice as tall as it is wide: 80×40 cells is a square-ish window.
    return height * 2 > width


def layout_classes(width: int, height: int, *, galaxy_full: bool = False) -> set[str]:
    if width < TOO_SMALL[0] or height < TOO_SMALL[1]:
        return {"-tiny"}
    if galaxy_full:
        return {"-galaxy-full"}
    if width < COMPACT or is_portrait(width, height):
        return {"-compact"}
    if width >= WIDE:
        return {"-wide"}
    if width >= MEDIUM:
        return {"-medium"}
    return {"-narrow"}
