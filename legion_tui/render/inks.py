"""Colour indices ("inks") of the frame buffers and the (theme, ink) → Style cache.

The frame buffers hold one uint8 ink per cell, never a Style object: the palette is
applied only when a row is cut into segments, through a table built once per theme.
Ink 0 is the page (an empty cell); every style carries the page background so no cell
ever falls back to the terminal's default background (upstream page-floor-v1) — in
`legion-ansi` the page *is* the terminal default, on purpose.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from rich.style import Style

from legion_tui.model import ROLES, Role


class Ink(enum.IntEnum):
    BLANK = 0
    ROOT = 1
    CENTURION = 2
    WORKER = 3
    SCOUT = 4
    ROOT_BRIGHT = 5
    CENTURION_BRIGHT = 6
    WORKER_BRIGHT = 7
    SCOUT_BRIGHT = 8
    DIM = 9  # ended stars, chart labels
    ACCENT = 10  # the selection marker
    TRACK = 11  # orbit rings
    TEXT = 12  # the chart readout
    BAND0 = 13  # chart bands, in stacking order (bottom first)
    BAND1 = 14
    BAND2 = 15
    BAND3 = 16


ROLE_INK: dict[Role, Ink] = {role: Ink(1 + i) for i, role in enumerate(ROLES)}
ROLE_BRIGHT_INK: dict[Role, Ink] = {role: Ink(5 + i) for i, role in enumerate(ROLES)}
BAND_INKS: tuple[Ink, ...] = (Ink.BAND0, Ink.BAND1, Ink.BAND2, Ink.BAND3)
# The chart stacks one band per role, bottom first; band k is drawn in BAND_INKS[k],
# which every palette colours with that role's own colour.
BAND_ROLES: tuple[Role, ...] = ("centurion", "worker", "scout", "root")
INK_COUNT = len(Ink)


def _ink_style(p: Palette, ink: Ink) -> Style:
    bg = p.page
    if ink is Ink.BLANK:
        return Style(color=p.text, bgcolor=bg)
    if Ink.ROOT <= ink <= Ink.SCOUT:
        return Style(color=p.roles[ROLES[ink - Ink.ROOT]], bgcolor=bg)
    if Ink.ROOT_BRIGHT <= ink <= Ink.SCOUT_BRIGHT:
        return Style(color=p.roles[ROLES[ink - Ink.ROOT_BRIGHT]], bgcolor=bg, bold=True)
    if ink is Ink.DIM:
        return Style(color=p.dim, bgcolor=bg)
    if ink is Ink.ACCENT:
        return Style(color=p.accent, bgcolor=bg, bold=True)
    if ink is Ink.TRACK:
        return Style(color=p.track, bgcolor=bg)
    if ink is Ink.TEXT:
        return Style(color=p.text, bgcolor=bg)
    return Style(color=p.bands[(ink - Ink.BAND0) % len(p.bands)], bgcolor=bg)


class StyleCache:
    """Styles keyed by (theme name, ink); `table(palette)` is the per-frame lookup list."""

    def __init__(self) -> None:
        self._tables: dict[str, tuple[Style, ...]] = {}

    def table(self, p: Palette) -> tuple[Style, ...]:
        table = self._tables.get(p.name)
        if table is None:
            table = tuple(_ink_style(p, ink) for ink in Ink)
            self._tables[p.name] = table
        return table

    def get(self, p: Palette, ink: int) -> Style:
        return self.table(p)[ink]


STYLES = StyleCache()  # process-wide: Styles are immutable, themes are few


# A theme's colours (legion_tui.themes builds the three; render/ stays Textual-free).
@dataclass(frozen=True, slots=True)
class Palette:
    name: str
    page: str  # the page floor; "default" in the ANSI theme
    text: str
    dim: str  # ended nodes, hints
    accent: str  # selection, header title
    warning: str  # the stall marker
    ok: str  # ✓ verdicts
    fail: str  # ✗ verdicts, failed nodes
    track: str  # railway tracks
    selection_bg: str
    roles: dict[Role, str]

    def role(self, role: Role) -> str:
        return self.roles[role]

    @property
    def bands(self) -> tuple[str, ...]:
        """Chart bands, in stacking order: one per role, in the role's own colour."""
        return tuple(self.roles[role] for role in BAND_ROLES)
