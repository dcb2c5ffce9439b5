"""The three legion themes and the palette the Line API widgets paint with.

Textual styles the chrome through `Theme`; the tree, galaxy and chart paint their own
cells from a `Palette` (looked up once per theme change, styles cached per colour index),
so both must agree. `page` is the page floor: in dark and light every cell of the main
screen carries it, including the gutters beside the detail overlay (upstream
page-floor-v1: a terminal-default band beside the modal looked like a black bar).
In `legion-ansi` the page is the terminal's own default background, on purpose: that
theme exists for terminals whose user chose their own colours.
"""

from __future__ import annotations

from textual.theme import Theme

from legion_tui.model import ROLES
from legion_tui.render.inks import Palette

DEFAULT_THEME = "legion-dark"




def _palette(name: str, chrome: str, roles: str) -> Palette:
    """One row of the table below: `chrome` is page, text, dim, accent, warning, ok,
    fail, track and selection_bg; `roles` is root, centurion, worker and scout."""
    page, text, dim, accent, warning, ok, fail, track, selection_bg = chrome.split()
    by_role = dict(zip(ROLES, roles.split(), strict=True))
    return Palette(name, page, text, dim, accent, warning, ok, fail, track, selection_bg, by_role)


PALETTES: dict[str, Palette] = {p.name: p for p in (
    _palette("legion-dark",
             "#0f1419 #d8dee9 #5c6773 #ffb454 #ff8f40 #7fd962 #f07178 #3d4752 #273747",
             "#e6b450 #d2a6ff #59c2ff #95e6cb"),
    _palette("legion-light",
             "#fafafa #383a42 #9da5b4 #c18401 #c45500 #3f8f29 #d1343a #c5c9d0 #dde6f2",
             "#a06c00 #8a3fb8 #1f6fc4 #1a8a7a"),
    _palette("legion-ansi",
             "default default bright_black yellow yellow green red bright_black bright_black",
             "yellow magenta blue cyan"),
)}  # fmt: skip

THEME_ORDER: tuple[str, ...] = tuple(PALETTES)


def palette(name: str) -> Palette:
    return PALETTES.get(name, PALETTES[DEFAULT_THEME])


def _textual_theme(p: Palette, dark: bool) -> Theme:
    return Theme(
        name=p.name,
        primary=p.accent,
        secondary=p.roles["centurion"],
        warning=p.warning,
        error=p.fail,
        success=p.ok,
        accent=p.accent,
        foreground=p.text,
        background=p.page,
        surface=p.page,
        panel=p.selection_bg,
        dark=dark,
    )


def textual_themes() -> list[Theme]:
    """The Textual `Theme`s to register on the app."""
    ansi = Theme(
        name="legion-ansi",
        primary="ansi_yellow",
        secondary="ansi_magenta",
        warning="ansi_yellow",
        error="ansi_red",
        success="ansi_green",
        accent="ansi_yellow",
        foreground="ansi_default",
        background="ansi_default",
        surface="ansi_default",
        panel="ansi_default",
        boost="ansi_default",
        dark=True,
        ansi=True,
        # An ANSI theme must name these itself (Textual's own ansi-dark does): the
        # generated defaults are skipped for ANSI themes and Screen's CSS needs them.
        variables={
            "ansi-background": "ansi_black",
            "ansi-foreground": "ansi_white",
            "border-blurred": "ansi_black",
            "block-cursor-foreground": "ansi_black",
            "block-cursor-background": "ansi_white",
            "input-cursor-background": "ansi_black",
            "input-cursor-foreground": "ansi_bright_white",
            "input-cursor-text-style": "none",
            "input-selection-background": "ansi_bright_blue",
            "input-selection-foreground": "ansi_black",
            "screen-selection-background": "ansi_bright_blue",
            "screen-selection-foreground": "ansi_black",
        },
    )
    return [
        _textual_theme(PALETTES["legion-dark"], dark=True),
        _textual_theme(PALETTES["legion-light"], dark=False),
        ansi,
    ]
