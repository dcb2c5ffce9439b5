"""A stop is a pause the user chose (issue 31 item 3): `x` `y` on a working agent keeps
its session, its row says `stopped · r resumes`, and `r` starts it again on that session;
a resume whose agent will not start leaves the node interrupted with the agent's words —
never `failed` and lost — and `r` tries again."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from supervisor_helpers import hosted, spawn_one, stuck_worker, until

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.model import NodeStatus
from legion_tui.supervisor.root_ops import RootOperations
from legion_tui.widgets.tree.rows import activity
from legion_tui.wire.names import ROOT_ID, OpError

pytestmark = pytest.mark.host


def size(path: Path) -> int:
    return path.stat().st_size


def notes(app: LegionApp) -> list[str]:
    return [n.message for n in app.notifications]


async def wait_app(pilot, app: LegionApp, predicate: Callable[[], bool], what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 20
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {notes(app)}")
        await pilot.pause()


async def test_x_y_then_r_resumes_the_stopped_agent_on_its_session(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        node = await stuck_worker(sup, "paused")
        session = Path(sup.names.node(node.id).session_file or "")
        app = make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir)
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await pilot.pause()
            app.railway.select(node.id)
            await pilot.press("x", "y")
            await wait_app(pilot, app, lambda: "Stopped paused." in notes(app), "the stop")
            view = sup.model.nodes[node.id]
            assert view.node.status is NodeStatus.RETIRED and view.stopped
            assert activity(view, time.time()).text == "stopped · r resumes"
            before = size(session)
            await pilot.press("r")
            resumed = f"Resumed paused on its session file {session}."
            await wait_app(pilot, app, lambda: resumed in notes(app), "the resume")
            # The resumed run is past its stall and may settle before the app's next
            # frame (a CI run under load saw it settled): it is no longer stopped, and
            # it wrote on the same session file.
            await until(lambda: size(session) > before, 20, "the session to grow")
            resumed_node = sup.names.node(node.id)
            assert resumed_node.live or resumed_node.status is NodeStatus.SETTLED
            assert not sup.model.nodes[node.id].stopped


async def test_a_stop_of_a_settled_agent_is_no_pause_to_resume(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, name="done")
        await until(lambda: sup.names.node(node.id).status is NodeStatus.SETTLED, 30)
        await sup.stops.stop(ROOT_ID, "done")
        view = sup.model.nodes[node.id]
        assert view.node.status is NodeStatus.RETIRED and not view.stopped
        assert activity(view, time.time()).text == "retired · do it"  # (its task)


async def test_a_resume_that_cannot_start_stays_interrupted_with_the_words(
    tmp_path: Path,
) -> None:
    tool = tmp_path / "bin" / "tool.sh"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho started\nexec sleep 600\n")
    tool.chmod(0o755)
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "looper.md").write_text(
        "---\nname: looper\ndescription: Runs until stopped.\nkind: exec\nrole: worker\n"
        f'command: ["{tool}"]\n---\nLoop.\n',
        encoding="utf-8",
    )
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, "looper", name="l")
        view = sup.model.nodes[node.id]
        await until(lambda: view.terminal_line == "started", 30, "the command")
        assert await sup.stops.stop(ROOT_ID, "l") == "Stopped l."
        tool.rename(tool.with_suffix(".gone"))
        with pytest.raises(OpError) as refused:
            await sup.control.resume(ROOT_ID, "l")
        assert refused.value.code == "START_FAILED"
        assert "l did not resume — resume failed: " in refused.value.message
        assert "tool.sh" in refused.value.message
        assert "It stays interrupted with its session: `legion resume l` (r) tries again." in (
            refused.value.message
        )
        now = sup.names.node(node.id)
        assert now.status is NodeStatus.RETIRED and view.interrupted, now.status
        shown = activity(view, time.time())
        assert shown.text.startswith("interrupted · resume failed: ") and shown.tone == "fail"
        assert shown.text.endswith(" · r retries")
        tool.with_suffix(".gone").rename(tool)
        said = await sup.control.resume(ROOT_ID, "l")
        assert said.startswith("Restarted l"), said
        await until(lambda: sup.names.node(node.id).live and view.terminal_line == "started", 30)
        assert sup.names.node(node.id).error is None
