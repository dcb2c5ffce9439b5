"""Golden screens, as text a reviewer can read (SPEC §7; notes/tui-notes.md).

Each golden is what a terminal shows: the app's real ANSI output (captured from the
driver) played through pyte, written as the screen text plus a per-cell colour map with
a legend. Deterministic: the canned legion, a fixed clock, no timers, no animations.

The galaxy and the rate chart belong to the render engineer and are pinned by their own
tests; here their cells are masked (`.` galaxy, `:` chart, colour `-`) so these goldens
pin what the dashboard owns — layout geometry, tree, header, overlay, confirm bar —
and do not break when the renderers evolve.

Update after LOOKING at the change: `LEGION_UPDATE_GOLDENS=1 pytest tests/test_snapshots_golden.py`.
A mismatch writes `<name>.actual.txt` beside the golden for review.
"""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pyte
import pytest
from app_helpers import (
    FANOUT,
    FakeOps,
    canned_attempts,
    canned_model,
    capture,
    fanout_model,
    fixed_clock,
    show_tab,
    terminal_screen,
    write_run_files,
)
from textual.pilot import Pilot

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.fanout.compare import Attempt
from legion_tui.fanout.group import group_of_row
from legion_tui.model import NodeStatus
from legion_tui.state import LegionModel
from legion_tui.widgets.overlay.compare_view import CompareScreen
from legion_tui.widgets.overlay.detail import DetailScreen

pytestmark = pytest.mark.unit

GOLDENS = Path(__file__).resolve().parent.parent / "snapshots"
UPDATE = os.environ.get("LEGION_UPDATE_GOLDENS") == "1"


@pytest.fixture(autouse=True)
def utc_wall_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Letters and events show wall-clock times (local time, as a user reads them): the
    goldens are shot in UTC so they do not depend on the machine's time zone."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
LEGEND_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

Steps = Callable[[Pilot[None], LegionApp], Awaitable[None]]


Mask = dict[tuple[int, int], str]


def render_golden(title: str, screen: pyte.Screen, mask: Mask) -> str:
    """Screen text between `|` fences, then one legend letter per cell for (fg, bg, bold)."""
    legend: dict[tuple[str, str, bool], str] = {}
    text_rows, colour_rows = [], []
    for y in range(screen.lines):
        row = screen.buffer[y]
        chars, codes = [], []
        for x in range(screen.columns):
            cell = row[x]
            if (x, y) in mask:
                chars.append(mask[(x, y)])
                codes.append("-")
                continue
            chars.append(cell.data)
            key = (cell.fg, cell.bg, cell.bold)
            if key not in legend:
                legend[key] = LEGEND_CHARS[len(legend) % len(LEGEND_CHARS)]
            codes.append(legend[key])
        text_rows.append("|" + "".join(chars) + "|")
        colour_rows.append("".join(codes))
    out = [
        f"# {title}",
        f"# {screen.columns}x{screen.lines}",
        "",
        "## screen",
        *text_rows,
        "",
        "## colours (one letter per cell; legend below)",
        *colour_rows,
        "",
        "## legend",
    ]
    out += [
        f"{code} = fg {fg} · bg {bg}{' · bold' if bold else ''}"
        for (fg, bg, bold), code in legend.items()
    ]
    return "\n".join(out) + "\n"


def panel_mask(app: LegionApp) -> Mask:
    """Cells of the galaxy and the chart on the main screen, minus an open overlay."""
    mask: Mask = {}
    overlay = None
    frames = app.screen.query("#detail-frame, #compare-frame")
    if app.screen is not app.main_screen and frames:
        overlay = frames.first().region
    for widget, char in ((app.galaxy, "."), (app.chart, ":")):
        if not widget.display:
            continue
        region = widget.region
        for y in range(region.y, region.bottom):
            for x in range(region.x, region.right):
                if overlay is None or not overlay.contains(x, y):
                    mask[(x, y)] = char
    return mask


async def shoot(
    size: tuple[int, int],
    run_dir: Path,
    *,
    theme: str = "legion-dark",
    steps: Steps | None = None,
    interrupted: bool = False,
    model: LegionModel | None = None,
) -> tuple[pyte.Screen, Mask]:
    model = model or canned_model(interrupted=interrupted)
    app = make_app(
        model,
        FakeOps(model),
        clock=fixed_clock,
        timers=False,
        theme=theme,
        run_dir=write_run_files(run_dir),
    )
    capture(app)
    app.animation_level = "none"  # tab underlines would otherwise be caught mid-slide
    async with app.run_test(headless=False, size=size) as pilot:
        await pilot.pause()
        if steps is not None:
            await steps(pilot, app)
        await pilot.pause()
        await pilot.pause()
        return terminal_screen(app), panel_mask(app)


def check(name: str, title: str, screen: pyte.Screen, mask: Mask) -> None:
    golden = GOLDENS / f"{name}.txt"
    actual = render_golden(title, screen, mask)
    if UPDATE:
        GOLDENS.mkdir(exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
        return
    if not golden.exists():
        pytest.fail(f"no golden {golden}; run with LEGION_UPDATE_GOLDENS=1 and review it")
    expected = golden.read_text(encoding="utf-8")
    if actual != expected:
        golden.with_suffix(".actual.txt").write_text(actual, encoding="utf-8")
        diff = "".join(
            list(
                difflib.unified_diff(
                    expected.splitlines(True), actual.splitlines(True), "golden", "actual", n=1
                )
            )[:80]
        )
        pytest.fail(f"{name} differs from its golden:\n{diff}")


async def open_detail_on_worker_0(pilot: Pilot[None], app: LegionApp) -> None:
    app.railway.select("n2")
    await pilot.press("o")
    await pilot.pause()


async def stop_prompt_on_worker_0(pilot: Pilot[None], app: LegionApp) -> None:
    app.railway.select("n2")
    await pilot.press("x")


async def stop_prompt_on_lead_api(pilot: Pilot[None], app: LegionApp) -> None:
    app.railway.select("n1")
    await pilot.press("x")


async def failed_team_row(pilot: Pilot[None], app: LegionApp) -> None:
    """lead-api settled in its machine's failed phase: a failed team (✗, counted in ✗)."""
    lead = app.model.nodes["n1"].node
    verdict = '{"ok": false, "reason": "verification failed (1 of 2 commands failed)"}'
    app.model.upsert(
        replace(lead, status=NodeStatus.SETTLED, phase="failed", verdict=verdict,
                updated_at=lead.created_at + 600)
    )  # fmt: skip
    await pilot.pause()


async def filter_kept_on_failed(pilot: Pilot[None], app: LegionApp) -> None:
    await pilot.press("slash", *":failed", "enter")


async def open_tab(pilot: Pilot[None], app: LegionApp, node_id: str, tab: str) -> None:
    app.railway.select(node_id)
    await pilot.press("o")
    await pilot.pause()
    assert isinstance(app.screen, DetailScreen)
    await show_tab(pilot, app.screen, tab)


async def stalled_activity_tab(pilot: Pilot[None], app: LegionApp) -> None:
    await open_tab(pilot, app, "n3", "tab-activity")


async def terminal_tab(pilot: Pilot[None], app: LegionApp) -> None:
    await open_tab(pilot, app, "n2", "tab-terminal")


async def mail_tab(pilot: Pilot[None], app: LegionApp) -> None:
    await open_detail_on_worker_0(pilot, app)
    await pilot.press("3")


CASES: list[tuple[str, str, tuple[int, int], str, Steps | None, bool]] = [
    (
        "main_80x24",
        "main screen, narrow layout (tree over chart)",
        (80, 24),
        "legion-dark",
        None,
        False,
    ),
    (
        "main_120x40",
        "main screen, medium layout (tree over galaxy + chart); interrupted banner",
        (120, 40),
        "legion-dark",
        None,
        True,
    ),
    (
        "main_200x60",
        "main screen, wide layout (tree | galaxy over chart)",
        (200, 60),
        "legion-dark",
        None,
        False,
    ),
    (
        "main_46x60",
        "main screen, portrait: tree and a compact chart",
        (46, 60),
        "legion-dark",
        None,
        False,
    ),
    (
        "detail_overlay_120x40",
        "detail overlay on worker-0 (75% × 65%, centred)",
        (120, 40),
        "legion-dark",
        open_detail_on_worker_0,
        False,
    ),
    (
        "stop_confirm_120x40",
        "x pressed on worker-0: the in-place stop confirm",
        (120, 40),
        "legion-dark",
        stop_prompt_on_worker_0,
        False,
    ),
    (
        "stop_confirm_lead_120x40",
        "x pressed on lead-api: the prompt names its subtree",
        (120, 40),
        "legion-dark",
        stop_prompt_on_lead_api,
        False,
    ),
    (
        "failed_team_120x40",
        "lead-api settled in its failed phase: ✗ row, counted as failed",
        (120, 40),
        "legion-dark",
        failed_team_row,
        False,
    ),
    (
        "filter_failed_120x40",
        "/ :failed Enter: the filter stays visible, the header follows it",
        (120, 40),
        "legion-dark",
        filter_kept_on_failed,
        False,
    ),
    (
        "stalled_activity_120x40",
        "worker-1 stuck 7m in bash: the Activity tab",
        (120, 40),
        "legion-dark",
        stalled_activity_tab,
        False,
    ),
    (
        "detail_terminal_120x40",
        "worker-0's Terminal tab: its log through pyte (colours, \\r)",
        (120, 40),
        "legion-dark",
        terminal_tab,
        False,
    ),
    (
        "detail_mail_120x40",
        "worker-0's Mail tab: the letters, the highlighted one open below",
        (120, 40),
        "legion-dark",
        mail_tab,
        False,
    ),
    ("main_120x40_light", "main screen in legion-light", (120, 40), "legion-light", None, False),
    ("too_small_36x8", "below 40×10: the notice only", (36, 8), "legion-dark", None, False),
]


@pytest.mark.parametrize(
    ("name", "title", "size", "theme", "steps", "interrupted"), CASES, ids=[c[0] for c in CASES]
)
async def test_golden(
    name: str,
    title: str,
    size: tuple[int, int],
    theme: str,
    steps: Steps | None,
    interrupted: bool,
    tmp_path: Path,
) -> None:
    screen, mask = await shoot(size, tmp_path, theme=theme, steps=steps, interrupted=interrupted)
    check(name, title, screen, mask)


async def test_golden_fanout(tmp_path: Path) -> None:
    """A fan-out of three kinds under the root (issue 34): the group's row with its own
    status and summed figures, its attempts below it by kind and number."""
    screen, mask = await shoot((120, 40), tmp_path, model=fanout_model())
    check("fanout_120x40", "a fan-out's attempt group: pi working, claude ✓ checks, codex ✗",
          screen, mask)  # fmt: skip


async def open_compare(pilot: Pilot[None], app: LegionApp) -> None:
    """The compare view of `fanout_model`'s group, its attempts read as `canned_attempts`
    (no git), the second attempt lit: the first file's diff by each."""
    group = group_of_row(app.model, f"group:n0/{FANOUT}")
    assert group is not None

    async def load() -> list[Attempt]:
        return canned_attempts()

    await app.push_screen(CompareScreen(app.model, group, load, floor=True))
    await pilot.pause()
    await pilot.press("right")
    await pilot.pause()


@pytest.mark.parametrize("size", [(120, 40), (200, 60)], ids=["120x40", "200x60"])
async def test_golden_compare(tmp_path: Path, size: tuple[int, int]) -> None:
    """Enter on a fan-out's row (issue 34 item 4): one column per attempt, claude-2 lit,
    the second file's diff as each attempt changed it — side by side, or one after the
    other where three columns do not fit."""
    screen, mask = await shoot(size, tmp_path, model=fanout_model(), steps=open_compare)
    name = f"compare_{size[0]}x{size[1]}"
    check(name, "the compare view of a fan-out of three kinds", screen, mask)
