"""Rich styles for the Line API widgets, built once per (theme, floor) and cached, and
`FollowsTheme`, the one way a widget learns which theme to paint in.

Every style carries the page background unless the floor is switched off: a segment
without a background is painted in the terminal's default colour, which is exactly the
"black band" upstream's page-floor contract forbids. The `floor=False` switch exists only
so a test can show the band coming back.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rich.style import Style
from textual.widget import Widget

from legion_tui.model import ROLES, Role
from legion_tui.render.inks import Palette
from legion_tui.themes import DEFAULT_THEME, palette

# A tone's name → the Paint field that holds its style.
_TONES = {"text": "base", "dim": "dim", "warning": "warning", "ok": "ok", "fail": "fail",
          "accent": "accent"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Paint:
    palette: Palette
    base: Style  # text on the page floor
    blank: Style  # empty cells (page floor only)
    dim: Style
    track: Style
    accent: Style
    warning: Style
    ok: Style
    fail: Style
    roles: dict[Role, Style]
    selection: Style  # layered on top of a row's styles

    def tone(self, name: str) -> Style:
        style: Style = getattr(self, _TONES[name])  # every painted row asks
        return style


def _colour(value: str) -> str | None:
    return None if value == "default" else value


@lru_cache(maxsize=16)
def paint_for(theme: str, floor: bool = True) -> Paint:
    p = palette(theme)
    bg = _colour(p.page) if floor else None
    # In the ANSI theme the page *is* the terminal default, so there is nothing to paint.

    def fg(colour: str, bold: bool = False) -> Style:
        return Style(color=_colour(colour), bgcolor=bg, bold=bold)

    return Paint(
        palette=p,
        base=fg(p.text),
        blank=Style(bgcolor=bg),
        dim=fg(p.dim),
        track=fg(p.track),
        accent=fg(p.accent, bold=True),
        warning=fg(p.warning, bold=True),
        ok=fg(p.ok),
        fail=fg(p.fail),
        roles={role: fg(p.role(role)) for role in ROLES},
        selection=Style(bgcolor=_colour(p.selection_bg)),
    )


class FollowsTheme(Widget):
    """A widget painted in the app's theme: `theme_name` follows `App.theme` from mount
    (`self.app` does not exist before), and `theme_changed()` runs on each change.

    A base, or mixed in *after* the widget's own base (`class Tree(ScrollView,
    FollowsTheme)`): Textual takes default CSS and CSS type names only along each class's
    first base, so ahead of ScrollView this would drop ScrollView's CSS (its scrollbars).
    Textual calls every class's `on_mount` along the MRO, so a subclass's own `on_mount`
    needs no `super()` call for this one to run.
    """

    theme_name: str = DEFAULT_THEME

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._follow_theme, init=True)

    def _follow_theme(self, theme: str) -> None:
        if theme != self.theme_name:
            self.theme_name = theme
            self.theme_changed()

    def theme_changed(self) -> None:
        """What a new theme costs this widget: by default one repaint."""
        self.refresh()
