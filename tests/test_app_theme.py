"""`t` says which theme it picked and keeps it for next time; the palette offers only the
themes that style every widget (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_helpers import (
    FakeOps,
    canned_model,
    fixed_clock,
    open_detail,
    show_tab,
    write_run_files,
)

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.settings import load_settings
from legion_tui.themes import THEME_ORDER, palette
from legion_tui.widgets.overlay.terminal_view import TerminalView
from legion_tui.widgets.overlay.transcript_view import TranscriptView
from legion_tui.widgets.paint import FollowsTheme

pytestmark = pytest.mark.unit


def build(run_dir: Path) -> LegionApp:
    model = canned_model()
    return make_app(model, FakeOps(model), clock=fixed_clock, timers=False, run_dir=run_dir)


def notes(app: LegionApp) -> list[str]:
    return [n.message for n in app.notifications]


async def test_t_names_the_theme_and_saves_it_in_the_projects_settings(tmp_path: Path) -> None:
    settings = tmp_path / ".legion" / "settings.toml"
    run_dir = write_run_files(tmp_path / ".legion" / "runs" / "r-7f3a")
    settings.write_text(
        '# mine\nstopGraceSeconds = 3\ntheme = "legion-dark"\n\n[budgets]\nmaxDepth = 2\n',
        encoding="utf-8",
    )
    app = build(run_dir)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await pilot.press("t")
        await pilot.pause()
        assert app.theme == "legion-light"
        assert notes(app) == ["Theme legion-light — saved in .legion/settings.toml for next time."]
    assert settings.read_text(encoding="utf-8") == (
        '# mine\nstopGraceSeconds = 3\ntheme = "legion-light"\n\n[budgets]\nmaxDepth = 2\n'
    )
    loaded = load_settings(tmp_path)
    assert not loaded.problems
    assert loaded.settings.theme == "legion-light" and loaded.settings.stop_grace_seconds == 3


async def test_a_project_without_settings_gets_the_line_before_any_table(tmp_path: Path) -> None:
    run_dir = write_run_files(tmp_path / ".legion" / "runs" / "r-7f3a")
    app = build(run_dir)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await pilot.press("t", "t")
        await pilot.pause()
    assert load_settings(tmp_path).settings.theme == "legion-ansi"
    assert (tmp_path / ".legion" / "settings.toml").read_text() == 'theme = "legion-ansi"\n'


async def test_the_palette_offers_only_the_legion_themes(tmp_path: Path) -> None:
    app = build(write_run_files(tmp_path))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        assert sorted(app.available_themes) == sorted(THEME_ORDER)
        await pilot.press("t")  # no project folder around the run: said, not saved
        await pilot.pause()
        assert notes(app) == ["Theme legion-light."]


async def test_every_painted_widget_follows_a_theme_change_with_the_overlay_open(
    tmp_path: Path,
) -> None:
    """The widgets read the app's theme themselves (issue 8): nothing is handed a theme
    name, so `t` pressed in the overlay reaches its transcript and terminal too — their
    cells are painted on the new theme's page, not the one they opened with."""
    app = build(write_run_files(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        detail = await open_detail(pilot, app, "n2")
        await show_tab(pilot, detail, "tab-terminal")  # built when first shown
        await pilot.press("t")  # the app's key, in the overlay as on the tree
        await pilot.pause()
        assert app.theme == "legion-light" and app.screen is detail
        # isinstance, not query(): a CSS query matches type names along the first bases
        # only, and the scrolling views have FollowsTheme as their second.
        followers = [
            widget
            for screen in (app.main_screen, detail)
            for widget in screen.walk_children()
            if isinstance(widget, FollowsTheme)
        ]
        names = {type(widget).__name__ for widget in followers}
        assert {"RailwayTree", "HeaderBar", "KeyHints", "GalaxyView", "TranscriptView",
                "TerminalView", "ConfirmBar", "TreeHeader"} <= names
        assert {widget.theme_name for widget in followers} == {"legion-light"}
        light = palette("legion-light").page.lower()
        for tab, kind in (("tab-transcript", TranscriptView), ("tab-terminal", TerminalView)):
            await show_tab(pilot, detail, tab)  # each view painted while it is shown
            view = detail.query_one(kind)
            backgrounds = {
                segment.style.bgcolor.get_truecolor().hex.lower()
                for segment in view.render_line(0)
                if segment.style is not None and segment.style.bgcolor is not None
            }
            assert backgrounds == {light}, type(view).__name__


async def test_a_settings_file_linked_to_a_dotfile_stays_a_link(tmp_path: Path) -> None:
    """Issue 30: `t` replaced a symlink to the user's dotfile with a 0600 copy."""
    dotfile = tmp_path / "dotfiles" / "legion.toml"
    dotfile.parent.mkdir()
    dotfile.write_text('theme = "legion-dark"\n# mine\n', encoding="utf-8")
    dotfile.chmod(0o644)
    run_dir = write_run_files(tmp_path / ".legion" / "runs" / "r-7f3a")
    link = tmp_path / ".legion" / "settings.toml"
    link.symlink_to(dotfile)
    app = build(run_dir)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await pilot.press("t")
        await pilot.pause()
    assert link.is_symlink() and link.readlink() == dotfile
    assert dotfile.read_text(encoding="utf-8") == 'theme = "legion-light"\n# mine\n'
    assert dotfile.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in dotfile.parent.iterdir()] == ["legion.toml"]  # no temp left


def tree_state(root: Path) -> dict[Path, tuple[int, bytes]]:
    """Every path under `root`: its mtime and, for a file, its bytes."""
    return {p: (p.lstat().st_mtime_ns, p.read_bytes() if p.is_file() else b"")
            for p in root.rglob("*")}  # fmt: skip


async def test_a_read_only_view_writes_nothing_anywhere(tmp_path: Path) -> None:
    """Issue 30: `t` on a read-only page (legion serve without its token) rewrote the
    user's settings. It changes the page's theme and says nothing was saved."""
    dotfile = tmp_path / "legion.toml"
    dotfile.write_text('theme = "legion-dark"\n', encoding="utf-8")
    run_dir = write_run_files(tmp_path / ".legion" / "runs" / "r-7f3a")
    link = tmp_path / ".legion" / "settings.toml"
    link.symlink_to(dotfile)
    before = tree_state(tmp_path)
    model = canned_model()
    app = make_app(model, FakeOps(model, read_only=True), clock=fixed_clock, timers=False,
                   run_dir=run_dir)  # fmt: skip
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await pilot.press("t")
        await pilot.pause()
        assert app.theme == "legion-light"
        app.history.add("steer: look again")  # what the message box keeps of a send
    assert notes(app) == ["Theme legion-light — for this page only (a read-only view saves "
                          "nothing)."]  # fmt: skip
    assert tree_state(tmp_path) == before
