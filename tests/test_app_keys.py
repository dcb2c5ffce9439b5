"""Keys, mouse, palette and the data feed of the dashboard (SPEC §7.1, §7.3, §7.5)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from app_helpers import NOW, FakeOps, big_model, canned_model, fixed_clock
from textual.widgets import Static

from legion_tui import receipts
from legion_tui.dashboard.app import LegionApp, ModelChanged, make_app
from legion_tui.model import NodeStatus
from legion_tui.model_records import Node
from legion_tui.state import LegionModel
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.galaxy import GalaxyView
from legion_tui.widgets.help import HelpScreen, help_text
from legion_tui.widgets.palette import LegionCommands, SlashStop, parse_slash_stop

pytestmark = pytest.mark.unit

SIZE = (120, 40)


def build(model: LegionModel | None = None) -> tuple[LegionApp, FakeOps]:
    model = model or canned_model()
    ops = FakeOps(model)
    return make_app(model, ops, clock=fixed_clock, timers=False), ops


def notes(app: LegionApp) -> list[str]:
    return [n.message for n in app.notifications]


def names(app: LegionApp) -> list[str]:
    return [app.model.nodes[r.node_id].node.path for r in app.railway.rows]


def new_node(nid: str, parent: str, name: str) -> Node:
    return Node(nid, "r-7f3a", parent, name, f"root/{name}", "worker", "sim", "inprocess",
                NodeStatus.RUNNING, created_at=NOW, updated_at=NOW)


async def test_vim_and_arrow_keys_move_fold_and_unfold() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        assert app.railway.selected_id == "n0"
        await pilot.press("j", "down")
        assert app.railway.selected_id == "n2"
        await pilot.press("k")
        assert app.railway.selected_id == "n1"
        await pilot.press("h")  # fold lead-api
        assert "root/lead-api/worker-0" not in names(app)
        assert app.railway.rows[1].hidden == 4
        await pilot.press("h")  # on a folded row, ← goes to the parent
        assert app.railway.selected_id == "n0"
        await pilot.press("j", "l")
        assert "root/lead-api/worker-0" in names(app)
        await pilot.press("j", "left")  # on a leaf, ← goes to the parent
        assert app.railway.selected_id == "n1"
        await pilot.press("minus", "plus")
        assert len(app.railway.rows) == 12


async def test_slash_filters_incrementally_and_the_chart_follows_the_visible_rows() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", "s", "c", "o")
        await pilot.pause()
        assert names(app) == ["root", "root/lead-api", "root/lead-api/scout-0", "root/lead-ui",
                              "root/lead-ui/scout-0", "root/scout-1"]
        assert app.chart.visible_ids == app.railway.visible_ids()  # folded/filtered out
        assert len(app.chart.visible_ids or ()) == 6  # rows lift no band in the chart
        await pilot.press("enter")  # keeps the filter, back to the tree
        assert len(app.railway.rows) == 6 and app.railway.has_focus
        await pilot.press("slash", "escape")  # Esc clears it
        await pilot.pause()
        assert len(app.railway.rows) == 12


async def test_a_flood_of_changes_is_one_message_and_repaints_only_changed_rows() -> None:
    app, _ = build()
    seen: list[ModelChanged] = []

    def hook(message: Any) -> None:
        if isinstance(message, ModelChanged):
            seen.append(message)

    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await pilot.pause()
        seen.clear()
        painted: list[str] = []
        original = app.railway._paint_row

        def spy(row, *args):  # type: ignore[no-untyped-def]
            painted.append(row.node_id)
            return original(row, *args)

        app.railway._paint_row = spy  # type: ignore[method-assign]
        view = app.model.nodes["n3"]
        for i in range(500):  # 500 appends to one session in one loop turn
            progress = replace(view.progress, entries=view.progress.entries + i)
            app.model.set_progress("n3", progress)
        await pilot.pause()
        await pilot.pause()
        assert len(seen) == 1
        assert painted == ["n3"]  # one row repainted, the other eleven from the cache


async def test_virtualised_first_frame_paints_only_the_visible_rows() -> None:
    app, _ = build(big_model(1000))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tree = app.railway
        assert len(tree.rows) == 1000
        painted: list[str] = []
        original = tree._paint_row

        def spy(row, *args):  # type: ignore[no-untyped-def]
            painted.append(row.node_id)
            return original(row, *args)

        tree._paint_row = spy  # type: ignore[method-assign]
        tree._cache.clear()
        tree.refresh()
        await pilot.pause()
        assert 0 < len(painted) <= tree.size.height
        await pilot.press("end")
        await pilot.pause()
        assert tree.selected_id == tree.rows[-1].node_id
        assert int(tree.scroll_offset.y) == 1000 - tree.size.height


async def test_pause_stops_applying_updates_until_unpaused() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        assert app.paused and app.header.paused
        app.model.upsert(new_node("n20", "n0", "late"))
        await pilot.pause()
        assert app.railway.row_of("n20") is None  # the screen holds still
        assert "n20" in app.pending
        await pilot.press("p")
        await pilot.pause()
        assert app.railway.row_of("n20") is not None and not app.pending


async def test_t_cycles_the_three_themes() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        seen = [app.theme]
        for _ in range(3):
            await pilot.press("t")
            await pilot.pause()
            seen.append(app.theme)
            assert app.railway.theme_name == app.theme == app.header.theme_name
        assert seen == ["legion-dark", "legion-light", "legion-ansi", "legion-dark"]


async def test_help_galaxy_full_screen_and_chart_window() -> None:
    app, _ = build()
    async with app.run_test(size=(80, 24)) as pilot:
        assert not app.galaxy.display or app.galaxy.size.area == 0
        await pilot.press("g")
        await pilot.pause()
        assert app.galaxy.size.area > 0 and app.railway.size.area == 0
        await pilot.press("g")
        await pilot.pause()
        assert app.railway.size.area > 0
        assert app.chart.whole_run is False
        await pilot.press("w")
        assert app.chart.whole_run is True
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main_screen


async def test_the_help_wraps_its_text_to_the_terminal_it_is_resized_to() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        text = app.screen.query_one(Static)
        wide = str(text.render())
        assert wide == help_text(int(SIZE[0] * 0.9) - 6)
        await pilot.resize_terminal(70, 40)
        await pilot.pause()
        await pilot.pause()
        narrow = str(text.render())
        assert narrow == help_text(int(70 * 0.9) - 6) and narrow != wide


async def test_q_asks_while_agents_are_live_and_y_quits() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        bar = app.screen.query_one(ConfirmBar)
        assert bar.request is not None and bar.request.prompt == receipts.QUIT_CONFIRM
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running
        await pilot.press("q", "y")
        await pilot.pause()
        assert not app.is_running


async def test_q_quits_at_once_when_nothing_is_live() -> None:
    model = canned_model()
    for view in list(model.nodes.values()):
        if view.node.live:
            model.upsert(replace(view.node, status=NodeStatus.SETTLED))
    app, _ = build(model)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_abort_steer_and_resume_act_on_the_selected_node() -> None:
    app, ops = build(canned_model(interrupted=True))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.railway.select("n3")
        await pilot.press("a", "y")  # abort asks first
        await app.workers.wait_for_complete()
        await pilot.press("s")
        app.railway.select("n2")  # the steer line is locked to n3 already
        await pilot.press(*"go on", "enter")
        await app.workers.wait_for_complete()
        app.railway.select("n9")
        await pilot.press("r")
        await app.workers.wait_for_complete()
        app.railway.select("n4")
        await pilot.press("r")
        await pilot.pause()
        assert ops.calls == [
            ("abort", "n3", {"keep_queue": False}),
            ("steer", "n3", {"text": "go on"}),
            ("resume", "n9", {}),
        ]
        assert receipts.aborted("worker-1") in notes(app)
        assert receipts.steered("worker-1", "queued") in notes(app)
        said = "scout-0 was neither interrupted nor stopped mid-run — nothing to resume."
        assert said in notes(app)


async def test_x_on_a_settled_agent_that_holds_its_process_stops_it_and_not_once_released(
) -> None:
    """Issue 31 item 4: `x` on a settled agent with a process ends it (before: "already
    ended — nothing stopped" while it held ~100 MB); a released one has nothing to end."""
    model = canned_model()
    scout = model.nodes["n4"].node  # lead-api's scout-0: ✓ settled
    model.upsert(replace(scout, kind="pi", pid=4242))
    app, ops = build(model)
    async with app.run_test(size=SIZE) as pilot:
        app.railway.select("n4")
        await pilot.press("x")
        bar = app.screen.query_one(ConfirmBar)
        assert bar.request is not None and bar.request.prompt.startswith("Stop scout-0 (scout, ")
        await pilot.press("y")
        await app.workers.wait_for_complete()
        assert ops.calls[-1][:2] == ("stop", "n4")
        model.mark_released("n4")
        await pilot.press("x")
        await pilot.pause()
        assert notes(app)[-1] == receipts.already_ended("scout-0", "settled")


async def test_the_interrupted_banner_names_the_nodes_and_goes_when_resumed() -> None:
    app, _ = build(canned_model(interrupted=True))
    async with app.run_test(size=SIZE) as pilot:
        banner = app.main_screen.query_one("#banner")
        assert banner.has_class("-shown")
        assert "scout-0" in str(banner.render())
        app.railway.select("n9")
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not banner.has_class("-shown")


async def test_click_selects_a_row_and_a_star_click_selects_its_node() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.click("#tree", offset=(4, 3))
        assert app.railway.selected_id == app.railway.rows[3].node_id
        app.galaxy.post_message(GalaxyView.StarClicked("n6"))
        await pilot.pause()
        assert app.railway.selected_id == "n6"


def test_slash_stop_parsing() -> None:
    assert parse_slash_stop("/legion stop") == SlashStop(False, None)
    assert parse_slash_stop("/legion stop all") == SlashStop(False, None)
    assert parse_slash_stop("/legion stop --force worker-2") == SlashStop(True, "worker-2")
    assert parse_slash_stop("/legion stop -f root/lead-ui") == SlashStop(True, "root/lead-ui")
    assert parse_slash_stop("/legion stop a b") is None
    assert parse_slash_stop("/legion status") is None
    assert parse_slash_stop('/legion stop "unclosed') is None


async def test_palette_hits_and_the_typed_slash_stop() -> None:
    app, ops = build()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        provider = LegionCommands(app.screen)
        hits = [hit async for hit in provider.search("force stop lead-ui")]
        assert hits and hits[0].text == "Force stop lead-ui"
        hits[0].command()
        await pilot.pause()
        bar = app.screen.query_one(ConfirmBar)
        assert bar.request is not None and bar.request.node_id == "n6"
        assert bar.request.kind == "force-stop"
        await pilot.press("n")
        typed = [hit async for hit in provider.search("/legion stop worker-1")]
        typed[0].command()
        await pilot.pause()
        assert ops.calls == []  # ambiguous: two worker-1s
        assert any("worker-1 is ambiguous" in n for n in notes(app))
        typed = [hit async for hit in provider.search("/legion stop --force root/lead-ui/worker-1")]
        typed[0].command()
        await app.workers.wait_for_complete()
        assert ops.calls == [("stop", "n8", {"force": True})]
        resume = [hit async for hit in provider.search("Resume")]
        assert resume == []  # nothing interrupted in this legion


async def test_slash_stop_all_stops_every_live_child_of_root() -> None:
    app, ops = build()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.operator.slash_stop(SlashStop(False, None))
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert sorted(c[1] for c in ops.calls) == ["n1", "n6"]
        assert app.model.counts()["live"] == 1  # root itself keeps running


async def test_selection_follows_its_node_when_rows_are_inserted_above() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        app.railway.select("n7")
        before = app.railway.row_of("n7")
        app.model.upsert(Node("n12", "r-7f3a", "n1", "worker-3", "root/lead-api/worker-3",
                              "worker", "sim", "inprocess", NodeStatus.STARTING,
                              created_at=NOW, updated_at=NOW))
        await pilot.pause()
        await pilot.pause()
        assert app.railway.selected_id == "n7"
        assert app.railway.row_of("n7") == before + 1
        selection_bg = app.railway.paint.selection.bgcolor
        highlighted = [
            y for y in range(len(app.railway.rows))
            if any(seg.style is not None and seg.style.bgcolor == selection_bg
                   for seg in app.railway.render_line(y))
        ]
        assert highlighted == [before + 1]


async def test_an_empty_legion_takes_every_key_and_fills_in_when_nodes_arrive() -> None:
    model = LegionModel("r-empty", "main", clock=fixed_clock)
    app, ops = build(model)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("j", "k", "h", "l", "o", "x", "X", "a", "s", "r", "w", "g", "g", "t")
        await pilot.pause()
        assert ops.calls == [] and app.railway.rows == [] and app.is_running
        assert app.screen is app.main_screen
        model.upsert(Node("n0", "r-empty", None, "root", "root", "root", "sim", "inprocess",
                          NodeStatus.RUNNING, created_at=NOW, updated_at=NOW))
        await pilot.pause()
        await pilot.pause()
        assert [r.node_id for r in app.railway.rows] == ["n0"]
        assert app.railway.selected_id == "n0"


async def test_the_filter_and_steer_lines_show_what_is_typed() -> None:
    # Input's `:focus { border: tall }` once won over the line's `border: none`: a
    # one-row box that was all border, the typed text nowhere on screen.
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        for key, typed in (("slash", "sco"), ("s", "hello")):
            await pilot.press(key, *typed)
            await pilot.pause()
            line = app.screen.focused
            assert line is not None and line.content_region.height == 1
            assert typed in line.render_line(0).text
            await pilot.press("escape")


async def test_the_filter_line_covers_the_key_hints_and_the_panels_keep_their_size() -> None:
    # A row taken from the body laid the tree, the galaxy and the chart out again one row
    # shorter, and the galaxy redrew its whole frame: most of `/`'s time at 1 000 agents.
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panels = (app.railway, app.galaxy, app.chart)
        before = [w.region for w in panels]
        await pilot.press("slash")
        await pilot.pause()
        line = app.main_screen.filter_line
        assert line.has_focus and line.region.y == SIZE[1] - 1  # the key hints' row
        assert [w.region for w in panels] == before
        await pilot.press("escape")
        await pilot.pause()
        assert app.main_screen.query_one("KeyHints").region.y == SIZE[1] - 1
        assert [w.region for w in panels] == before


async def test_the_tree_has_the_keys_again_after_the_full_screen_galaxy() -> None:
    app, _ = build()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")
        await pilot.pause()
        await pilot.press("g")
        await pilot.pause()
        await pilot.press("j")  # once: nothing moved until an undocumented Tab
        assert app.railway.has_focus and app.railway.selected_id == "n1"
