"""The dashboard's themes: only legion's own are offered, Textual's ANSI filter is
skipped where it only costs time, `t` cycles them, and a theme the user picks is said and
kept for next time in the project's settings.

The widgets follow `App.theme` themselves (`widgets.paint.FollowsTheme`); this is what
the app does around a theme, kept out of `LegionApp`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App
from textual.filter import ANSIToTruecolor
from textual.notifications import SeverityLevel

from legion_tui.settings import save_theme
from legion_tui.themes import DEFAULT_THEME, THEME_ORDER, textual_themes

__all__ = ["next_theme", "offer_legion_themes", "skip_ansi_filter", "theme_kept"]


def offer_legion_themes(app: App[Any], theme: str) -> str:
    """Register legion's themes, start in `theme` and unregister Textual's stock ones;
    returns the theme started in. Textual's stock themes style its chrome but not our
    painted widgets (the tree, header, galaxy and chart keep their own palette): the
    palette's Theme picker offers only the themes that style everything."""
    for textual_theme in textual_themes():
        app.register_theme(textual_theme)
    if theme not in THEME_ORDER:  # a typo in --theme or settings must not crash
        theme = DEFAULT_THEME
    app.theme = theme
    for stock in [name for name in app.available_themes if name not in THEME_ORDER]:
        app.unregister_theme(stock)
    return theme


def skip_ansi_filter(app: App[Any]) -> None:
    """Textual converts ANSI-named colours to truecolor on every painted line when the
    theme is not an ANSI one. Our dark/light palettes are all hex, so the filter only
    costs time (≈ 1.6 ms of a 200×60 full frame); a child's own ANSI colours in the
    Terminal tab then reach the terminal as the user's palette, which is what a terminal
    view should show. Textual re-creates the filter on theme changes: call this at mount
    and after each change."""
    if app.current_theme.ansi:
        return
    for line_filter in app._filters:  # Textual keeps its line filters only there
        if isinstance(line_filter, ANSIToTruecolor):
            line_filter.enabled = False


def next_theme(current: str) -> str:
    """`t`: the theme after `current` in legion's order (the first after any other)."""
    order = THEME_ORDER
    index = order.index(current) if current in order else -1
    return order[(index + 1) % len(order)]


def theme_kept(
    run_dir: Path | None, name: str, *, read_only: bool = False
) -> tuple[str, SeverityLevel]:
    """Keep the theme the user picked (t, the palette) for next time, in the project's
    .legion/settings.toml (the run folder sits in its .legion/runs); returns what to say
    and how (a warning when it could not be written). A read-only view writes nothing."""
    if read_only:
        return f"Theme {name} — for this page only (a read-only view saves nothing).", "information"
    runs = run_dir.parent if run_dir is not None else None
    if runs is None or runs.name != "runs" or runs.parent.name != ".legion":
        return f"Theme {name}.", "information"
    try:
        path = save_theme(runs.parent.parent, name)
    except OSError as err:
        return f"Theme {name} — not saved: {err}", "warning"
    return f"Theme {name} — saved in {path.parent.name}/{path.name} for next time.", "information"
