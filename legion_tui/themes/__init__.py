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

from dataclasses import dataclass

from textual.theme import Theme

from legion_tui.model import Role

DEFAULT_THEME = "legion-dark"


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
    roles: dict[Role, str]
    bands: tuple[str, ...]  # chart bands, in stacking order
    selection_bg: str

    def role(self, role: Role) -> str:
        return self.roles[role]


PALETTES: dict[str, Palette] = {
    "legion-dark": Palette(
        name="legion-dark",
        page="#0f1419",
        text="#d8dee9",
        dim="#5c6773",
        accent="#ffb454",
        warning="#ff8f40",
        ok="#7fd962",
        fail="#f07178",
        track="#3d4752",
        roles={"root": "#e6b450", "centurion": "#d2a6ff", "worker": "#59c2ff", "scout": "#95e6cb"},
        bands=("#d2a6ff", "#59c2ff", "#95e6cb", "#e6b450", "#f29668", "#5c6773"),
        selection_bg="#273747",
    ),
    "legion-light": Palette(
        name="legion-light",
        page="#fafafa",
        text="#383a42",
        dim="#9da5b4",
        accent="#c18401",
        warning="#c45500",
        ok="#3f8f29",
        fail="#d1343a",
        track="#c5c9d0",
        roles={"root": "#a06c00", "centurion": "#8a3fb8", "worker": "#1f6fc4", "scout": "#1a8a7a"},
        bands=("#8a3fb8", "#1f6fc4", "#1a8a7a", "#a06c00", "#c45500", "#9da5b4"),
        selection_bg="#dde6f2",
    ),
    "legion-ansi": Palette(
        name="legion-ansi",
        page="default",
        text="default",
        dim="bright_black",
        accent="yellow",
        warning="yellow",
        ok="green",
        fail="red",
        track="bright_black",
        roles={"root": "yellow", "centurion": "magenta", "worker": "blue", "scout": "cyan"},
        bands=("magenta", "blue", "cyan", "yellow", "red", "bright_black"),
        selection_bg="bright_black",
    ),
}

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
