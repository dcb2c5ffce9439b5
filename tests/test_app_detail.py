"""The detail overlay (SPEC §7.2): lazy transcript, terminal through pyte, live header,
keys inside it, an unreadable session shown as such."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from app_helpers import (
    NOW,
    SESSION_LINES,
    FakeOps,
    canned_model,
    fixed_clock,
    open_detail,
    show_tab,
    write_run_files,
)
from textual.widgets import OptionList, Static, TabPane

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.model import MailKind, MailState, Urgency
from legion_tui.model_records import MailboxStats, Message
from legion_tui.widgets.overlay import terminal_view
from legion_tui.widgets.overlay.terminal_view import TerminalView, emulate, pyte_colour
from legion_tui.widgets.overlay.transcript_view import INDEX_STEP_BYTES, TranscriptView

pytestmark = pytest.mark.unit

SIZE = (120, 40)


def build(run_dir: Path) -> tuple[LegionApp, FakeOps]:
    model = canned_model()
    ops = FakeOps(model)
    return make_app(model, ops, clock=fixed_clock, timers=False, run_dir=run_dir), ops


async def until(pilot, condition, what: str) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until `condition()` holds (bounded)."""
    deadline = time.monotonic() + 10.0
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause()


def shown(view: TranscriptView | TerminalView) -> str:
    return "\n".join(view.render_line(y).text for y in range(view.size.height))


async def test_a_50mb_session_opens_at_once_at_its_end_indexed_in_steps(tmp_path: Path) -> None:
    run_dir = write_run_files(tmp_path)
    session = run_dir / "sessions" / "n2.jsonl"
    message = json.dumps(SESSION_LINES[3]) + "\n"
    copies = 50 * 1024 * 1024 // len(message)
    newest = dict(SESSION_LINES[2], id="z9")
    newest["message"] = {"role": "user", "content": [{"type": "text", "text": "the newest ask"}]}
    with session.open("a", encoding="utf-8") as fh:
        fh.write(message * copies)
        fh.write(json.dumps(newest) + "\n")
    assert session.stat().st_size > 50 * 1024 * 1024
    app, _ = build(run_dir)
    async with app.run_test(size=SIZE) as pilot:
        # No wall-clock bound here (a timed test fails on a loaded machine, and it did
        # under `make soak`): "at once" is what the steps below pin — the open reads
        # nothing whole, the walk yields to the loop between bounded steps.
        screen = await open_detail(pilot, app, "n2")
        view = screen.query_one(TranscriptView)
        assert view.pager is not None
        pager = view.pager
        await until(pilot, lambda: pager.at_end and "the newest ask" in shown(view), "the end")
        # Walked to the end in bounded steps (the loop ran between them), and only the
        # pages on screen were decoded.
        assert view.index_steps >= 50 * 1024 * 1024 // INDEX_STEP_BYTES
        assert pager.count_known() == copies + len(SESSION_LINES) + 1
        assert len(view._pages) <= 2
        view.scroll_home(animate=False)
        await until(pilot, lambda: "Add pagination to GET /items." in shown(view), "the start")


async def test_appended_session_lines_and_terminal_output_show_while_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = write_run_files(tmp_path)
    app, _ = build(run_dir)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_detail(pilot, app, "n2")
        view = detail.query_one(TranscriptView)
        await until(pilot, lambda: "Add pagination" in shown(view), "the transcript")
        late = dict(SESSION_LINES[2], id="late")
        late["message"] = {"role": "user", "content": [{"type": "text", "text": "one more"}]}
        with (run_dir / "sessions" / "n2.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(late) + "\n")
        app.second_tick()  # the overlay's once-a-second refresh of its node
        await until(pilot, lambda: "one more" in shown(view), "the appended entry")

        await show_tab(pilot, detail, "tab-terminal")
        term = detail.query_one(TerminalView)
        await until(pilot, lambda: "retrying once" in shown(term), "the terminal log")
        reloads = term.reloads
        with (run_dir / "terminal" / "n2.log").open("ab") as fh:
            fh.write(b"\x1b[32mall green\x1b[0m\n")
        app.second_tick()
        assert term.reloads == reloads  # reloaded under a second ago: throttled
        monkeypatch.setattr(terminal_view, "RELOAD_EVERY_S", 0.0)
        app.second_tick()
        await until(pilot, lambda: "all green" in shown(term), "the appended output")
        assert term.reloads == reloads + 1
        app.second_tick()
        assert term.reloads == reloads + 1  # unchanged log: one stat, no reload


async def test_terminal_tab_honours_colours_and_carriage_returns(tmp_path: Path) -> None:
    screen = emulate(b"\x1b[31mred\x1b[0m plain\nprogress  10%\rprogress 100%\n")
    assert screen.display[0].rstrip() == "red plain"
    assert screen.display[1].rstrip() == "progress 100%"
    assert screen.buffer[0][0].fg == "red" and screen.buffer[0][4].fg == "default"
    assert pyte_colour("brightred") == "bright_red" and pyte_colour("ff8700") == "#ff8700"
    app, _ = build(write_run_files(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_detail(pilot, app, "n2")
        await show_tab(pilot, detail, "tab-terminal")
        term = detail.query_one(TerminalView)
        lines = [term.render_line(y).text.rstrip() for y in range(4)]
        assert lines == ["==> building api", "progress 100%",
                         "error: 1 test failed (test_items_page)", "warning: retrying once"]
        styles = {seg.text: seg.style for seg in term.render_line(2) if seg.text.strip()}
        assert styles["error:"] is not None and str(styles["error:"].color.name) == "red"


async def test_no_terminal_tab_for_an_in_process_node(tmp_path: Path) -> None:
    app, _ = build(write_run_files(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_detail(pilot, app, "n3")
        assert not detail.query("#tab-terminal")


async def test_missing_session_file_is_shown_not_cached_as_empty(tmp_path: Path) -> None:
    run_dir = write_run_files(tmp_path)
    (run_dir / "sessions" / "n2.jsonl").unlink()
    app, _ = build(run_dir)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_detail(pilot, app, "n2")
        view = detail.query_one(TranscriptView)
        assert view.render_line(0).text.startswith(" session unreadable: ")


async def test_overlay_header_follows_the_model_and_keys_act_inside(tmp_path: Path) -> None:
    app, ops = build(write_run_files(tmp_path))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        detail = await open_detail(pilot, app, "n3")
        head = detail.query_one("#detail-head", Static)
        assert "worker-1 · worker · simulated · running" in str(head.render())
        view = app.model.nodes["n3"]
        app.model.set_progress("n3", view.progress.__class__(skipped_lines=7))
        await pilot.pause()
        await pilot.pause()
        assert "7 skipped lines" in str(detail.query_one("#detail-skipped", Static).render())
        await pilot.press("a", "y")  # abort asks first
        await app.workers.wait_for_complete()
        await pilot.press("s", *"stop editing", "enter")
        await app.workers.wait_for_complete()
        assert ops.calls == [("abort", "n3", {"keep_queue": False}),
                             ("steer", "n3", {"text": "stop editing"})]
        await pilot.press("q")
        await pilot.pause()
        assert app.screen is app.main_screen and app.is_running


async def test_the_galaxy_ticks_only_while_visible_and_not_paused(tmp_path: Path) -> None:
    app, _ = build(write_run_files(tmp_path))
    ticks: list[int] = []
    async with app.run_test(size=(80, 24)) as pilot:  # < 100 cols: galaxy hidden
        app.galaxy.tick = lambda: ticks.append(1)  # type: ignore[method-assign]
        app.step_tick()
        assert ticks == []
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        app.step_tick()
        assert ticks == [1]
        await pilot.press("p")
        app.step_tick()
        assert ticks == [1]


def clocked_app(tmp_path: Path) -> tuple[LegionApp, list[float]]:
    """The canned legion on a clock the test moves (`now[0]`), its run files written."""
    model = canned_model()
    now = [1_790_000_000.0]
    model.clock = lambda: now[0]
    app = make_app(model, FakeOps(model), clock=model.clock, timers=False,
                   run_dir=write_run_files(tmp_path))
    return app, now


async def test_the_overlay_activity_clock_moves_with_the_second_tick(tmp_path: Path) -> None:
    app, now = clocked_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_detail(pilot, app, "n3")
        await show_tab(pilot, detail, "tab-activity")
        activity = detail.query_one("#activity", Static)
        assert "working · bash 00:07:31" in str(activity.render())
        now[0] += 2
        app.second_tick()  # what the 1 s timer calls
        await pilot.pause()
        assert "working · bash 00:07:33" in str(activity.render())


def letter(id_: int, subject: str, at: float) -> Message:
    return Message(id_, "n1", "n2", MailKind.HANDOFF, Urgency.NORMAL, subject, "body",
                   MailState.DELIVERED, at + 5, at)


async def test_a_tab_built_when_first_shown_shows_the_node_as_it_is_then_and_follows_it(
    tmp_path: Path,
) -> None:
    """Only the Transcript's content is composed with the overlay (Enter's first frame
    is the sooner for it); Activity, Mail, Events and Terminal are built when first
    shown — with what the node is by then, and they follow it from there."""
    app, now = clocked_app(tmp_path)
    model = app.model
    async with app.run_test(size=SIZE) as pilot:
        detail = await open_detail(pilot, app, "n2")
        hidden = ("tab-activity", "tab-mail", "tab-events", "tab-terminal")
        assert [bool(detail.query_one(f"#{t}", TabPane).children) for t in hidden] == [
            False, False, False, False]
        assert not detail.query(TerminalView)
        # While the tabs are unbuilt the node moves on: a letter, and time passes.
        model.set_mail("n2", MailboxStats(delivered=1), [letter(7, "contract", NOW - 60)])
        now[0] += 5
        app.second_tick()
        await pilot.pause()
        await show_tab(pilot, detail, "tab-mail")
        assert "subject: contract" in str(detail.query_one("#letter-body", Static).render())
        await show_tab(pilot, detail, "tab-activity")
        activity = detail.query_one("#activity", Static)
        assert "read 00:00:17" in str(activity.render())  # 12 s when opened, 5 s later
        await show_tab(pilot, detail, "tab-terminal")
        term = detail.query_one(TerminalView)
        await until(pilot, lambda: "retrying once" in shown(term), "the terminal log")
        # Built, each follows the node as before.
        model.set_mail("n2", MailboxStats(delivered=2), [
            letter(7, "contract", NOW - 60), letter(9, "review", NOW - 10)])
        now[0] += 2
        app.second_tick()
        await pilot.pause()
        assert "read 00:00:19" in str(activity.render())
        await show_tab(pilot, detail, "tab-mail")
        assert detail.query_one("#letters-list", OptionList).option_count == 2


async def test_opening_the_overlay_lays_out_neither_it_nor_the_dashboard_twice(
    tmp_path: Path,
) -> None:
    # Textual's own Resize handler, on the Resize an opening screen's first layout sends
    # it, laid the overlay out again at the same size and the dashboard under it too:
    # ~10 ms of the one event loop at 1 000 agents, queued behind every Enter.
    app, _ = build(write_run_files(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        layouts: list[str] = []
        real = app.main_screen._refresh_layout

        def counted(*args: Any, **kwargs: Any) -> None:
            layouts.append("main")
            real(*args, **kwargs)

        app.main_screen._refresh_layout = counted  # type: ignore[method-assign]
        detail = await open_detail(pilot, app, "n3")
        await pilot.pause()
        assert layouts == []
        frame = detail.query_one("#detail-frame")
        assert frame.region.width == SIZE[0] * 3 // 4
        # A real resize with the overlay open lays out both, each at the new size.
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        await pilot.pause()
        assert "main" in layouts
        assert app.main_screen.size == detail.size == (160, 48)
        assert frame.region.width == 160 * 3 // 4
        assert app.railway.region.bottom <= 48 and app.railway.region.width > SIZE[0] // 2
