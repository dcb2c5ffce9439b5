"""`n` in the dashboard (issue 12 item 1) on a real in-process legion: the form spawns
through the supervisor's own spawn, shows its refusals with everything typed kept,
reads role cards added or broken after the host started, and `New agent…` is in the
palette. A fresh session says how to start."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from supervisor_helpers import STUCK, hosted, spawn_one
from textual.pilot import Pilot
from textual.widgets import Input, Select, Static, TextArea

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.supervisor.core import Supervisor
from legion_tui.supervisor.root_ops import RootOperations
from legion_tui.widgets.new_agent import EMPTY_HINT, NewAgentScreen, attempts_of

pytestmark = pytest.mark.host

RUNNER = """---
name: runner
description: Runs the checks.
kind: auto
role: worker
---
You run the project's checks.
"""
BROKEN = "---\nname: broken\nrole: emperor\n---\nbody\n"


async def wait_app(pilot: Pilot[None], predicate, what: str) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until `predicate` holds, with a deadline (never a blind sleep)."""
    deadline = time.monotonic() + 20
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause()


def _app(sup: Supervisor) -> LegionApp:
    return make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir)


async def _open_form(pilot: Pilot[None], app: LegionApp) -> NewAgentScreen:
    await pilot.press("n")
    await wait_app(pilot, lambda: isinstance(app.screen, NewAgentScreen), "the form")
    form = app.screen
    assert isinstance(form, NewAgentScreen)
    await pilot.pause()
    return form


def _fill(form: NewAgentScreen, *, card: str, kind: str, task: str, name: str = "") -> None:
    form.query_one("#card", Select).value = card
    form.query_one("#kind", Select).value = kind
    form.query_one("#task", TextArea).load_text(task)
    form.query_one("#name", Input).value = name


def _error(form: NewAgentScreen) -> str:
    return str(form.query_one("#new-agent-error", Static).render())


def _names(sup: Supervisor) -> set[str]:
    return {v.node.name for v in sup.model.nodes.values()}


async def test_the_form_spawns_a_sim_agent_that_appears_in_the_tree(tmp_path: Path) -> None:
    async with hosted(tmp_path, default_kind=None) as sup:
        app = _app(sup)
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await pilot.pause()
            banner = app.main_screen.query_one("#banner", Static)
            assert str(banner.render()) == EMPTY_HINT and banner.display
            form = await _open_form(pilot, app)
            assert form.parent_id == sup.model.root_id
            _fill(form, card="worker", kind="sim", task="Fix the pager.\nThen run the tests.",
                  name="pager")
            await pilot.press("ctrl+s")
            await wait_app(pilot, lambda: app.screen is app.main_screen, "the form to close")
            (node,) = [v.node for v in sup.model.nodes.values() if v.node.name == "pager"]
            assert node.kind == "sim" and node.role == "worker"
            assert node.task == "Fix the pager.\nThen run the tests."  # multi-line, as typed
            assert node.parent_id == sup.model.root_id
            await wait_app(pilot, lambda: node.id in app.railway.visible_ids(), "its row")
            assert any(n.message.startswith("Spawned root/pager (") for n in app.notifications)
            await wait_app(pilot, lambda: not banner.display, "the hint to go")


async def test_a_refusal_shows_in_the_form_and_keeps_what_was_typed(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        app = _app(sup)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            form = await _open_form(pilot, app)
            _fill(form, card="worker", kind="sim", task="Do it.", name="Bad Name!")
            await pilot.press("ctrl+s")
            await wait_app(pilot, lambda: "BAD_NAME" in _error(form), "the refusal")
            assert "Bad Name!" in _error(form)
            assert app.screen is form  # still open, everything as typed
            assert form.query_one("#name", Input).value == "Bad Name!"
            assert form.query_one("#task", TextArea).text == "Do it."
            assert _names(sup) == {"root"}  # nothing spawned
            form.query_one("#task", TextArea).load_text("")
            await pilot.press("ctrl+s")
            assert "the task is empty" in _error(form)
            await pilot.press("escape")
            await wait_app(pilot, lambda: app.screen is app.main_screen, "the form to close")
            assert _names(sup) == {"root"}


async def test_cards_written_after_the_start_are_offered_and_checked(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        app = _app(sup)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            cards = tmp_path / ".legion" / "agents"
            cards.mkdir(parents=True)
            (cards / "runner.md").write_text(RUNNER)
            (cards / "broken.md").write_text(BROKEN)
            form = await _open_form(pilot, app)
            offered = {value: str(label) for label, value in form._options}
            assert offered["runner"] == "runner" and offered["broken"] == "broken (invalid)"
            form.query_one("#card", Select).value = "runner"
            await pilot.pause()
            assert str(form.query_one("#card-about", Static).render()) == "Runs the checks."
            _fill(form, card="broken", kind="sim", task="Do it.")
            await pilot.press("ctrl+s")
            await wait_app(pilot, lambda: "CARD" in _error(form), "the card refusal")
            assert "role card 'broken' is invalid" in _error(form)
            assert _names(sup) == {"root"}
            _fill(form, card="runner", kind="sim", task="Run the checks.", name="checks")
            await pilot.press("ctrl+s")
            await wait_app(pilot, lambda: app.screen is app.main_screen, "the form to close")
            assert "checks" in _names(sup)


async def test_the_palette_offers_new_agent(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        app = _app(sup)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*"New agent")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await wait_app(pilot, lambda: isinstance(app.screen, NewAgentScreen), "the form")


async def test_the_parent_is_the_selected_lead(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", sim=dict(STUCK))
        app = _app(sup)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            app.railway.select(lead.id)
            form = await _open_form(pilot, app)
            assert form.parent_id == lead.id
            assert "New agent under root/lead" in str(form.query_one("#new-agent-title").render())
            _fill(form, card="worker", kind="sim", task="Help the lead.", name="helper")
            await pilot.press("ctrl+s")
            await wait_app(pilot, lambda: app.screen is app.main_screen, "the form to close")
            (helper,) = [v.node for v in sup.model.nodes.values() if v.node.name == "helper"]
            assert helper.parent_id == lead.id and helper.path == "root/lead/helper"
            # Over the lead's overlay too (n there, or the palette's entry).
            app.railway.select(lead.id)
            await pilot.press("o")
            await wait_app(pilot, lambda: app.screen is not app.main_screen, "the overlay")
            form = await _open_form(pilot, app)
            assert form.parent_id == lead.id


async def test_a_phases_file_is_read_from_the_project_and_its_problems_shown(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        app = _app(sup)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            form = await _open_form(pilot, app)
            _fill(form, card="centurion", kind="sim", task="Lead it.", name="lead")
            form.query_one("#phases", Input).value = "phases/missing.yaml"
            form.query_one("#phases", Input).focus()
            await pilot.press("enter")  # Enter on the last field starts it
            await wait_app(pilot, lambda: "PHASES" in _error(form), "the phases refusal")
            assert f"{sup.project_dir}/phases/missing.yaml" in _error(form)
            assert "cannot read" in _error(form) and _names(sup) == {"root"}


async def test_no_empty_hint_while_the_start_is_starting_agents(tmp_path: Path) -> None:
    """Issue 33: the demo's first second said "Nothing started yet" over a legion about
    to start 19 agents. While the app's on_start runs, the hint waits; if it started
    nothing after all, the hint shows."""
    release = asyncio.Event()

    async def start(_app: LegionApp) -> None:
        await release.wait()

    async with hosted(tmp_path, default_kind=None) as sup:
        app = make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir,
                       on_start=start)  # fmt: skip
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            banner = app.main_screen.query_one("#banner", Static)
            assert str(banner.render()) != EMPTY_HINT
            release.set()
            await wait_app(pilot, lambda: str(banner.render()) == EMPTY_HINT, "the hint")


async def test_the_form_fans_out_and_a_fanout_it_cannot_start_is_refused_in_it(
    tmp_path: Path,
) -> None:
    """`×2` in Attempts is a fan-out (issue 34): outside the demo's sandbox simulated
    attempts have no worktree to work in, so the host refuses it — in the form, with
    everything kept — and a bad Attempts field is named before anything is asked."""
    async with hosted(tmp_path) as sup:
        app = _app(sup)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            form = await _open_form(pilot, app)
            _fill(form, card="worker", kind="sim", task="Fix the pager.")
            form.query_one("#attempts", Input).value = "pi, gpt"
            await pilot.press("ctrl+s")
            assert "gpt is no agent kind" in _error(form)
            form.query_one("#attempts", Input).value = "×2"
            await pilot.press("ctrl+s")
            await wait_app(pilot, lambda: "BAD_REQUEST" in _error(form), "the refusal")
            assert "a simulated attempt needs the demo's sandbox" in _error(form)
            assert app.screen is form and _names(sup) == {"root"}


@pytest.mark.parametrize(
    ("text", "kind", "kinds"),
    [("", "pi", ["pi"]), ("×3", None, [None] * 3), ("x2", "codex", ["codex"] * 2),
     ("pi, claude, codex", None, ["pi", "claude", "codex"]), ("pi claude", "sim", ["pi", "claude"]),
     ("Pi:Qwen/Qwen3-32B, PI:m2", None, ["pi:Qwen/Qwen3-32B", "pi:m2"]),
     ("1", None, "attempts: a fan-out is 2 to 16 attempts, not 1"),
     ("codex", None, "attempts: a fan-out is 2 attempts or more (×2, or two kinds)")],
)  # fmt: skip
def test_the_attempts_field_reads_a_count_or_kinds(
    text: str, kind: str | None, kinds: list[str | None] | str
) -> None:
    assert attempts_of(text, kind) == kinds
