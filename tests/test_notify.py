"""Notifications (issue 12 item 5): a toast, the terminal bell and a desktop notification
(OSC 9 and OSC 777) when an agent needs its user, fails, a team ends, or a node is stuck
≥ 5 min in one tool call — each once, each mutable in `[notify]`.

The dashboard runs on a real host: a real exec child reading its terminal (BLOCKED), a
simulated agent told to fail; what the app writes to its terminal is captured byte for
byte (`CaptureDriver`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from app_helpers import canned_model, capture
from hypothesis import given, settings
from hypothesis import strategies as st
from supervisor_helpers import hosted, spawn_one, until
from test_needs_you_exec import _exec_card

from legion_tui import receipts
from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.dashboard.notify import Notifier, desktop_sequences
from legion_tui.model import NodeStatus
from legion_tui.model_records import InFlightTool
from legion_tui.supervisor.core import Supervisor
from legion_tui.supervisor.root_ops import RootOperations
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host

BELL = "\x07"
QUESTION = "ask needs you: Deploy to prod? [y/N]"


def written(app: LegionApp) -> str:
    return "".join(app._driver.chunks)  # type: ignore[union-attr]


def bells(app: LegionApp) -> int:
    """Bells rung: a write of BEL alone (BEL also ends every OSC, Textual's own too)."""
    return app._driver.chunks.count(BELL)  # type: ignore[union-attr]


def toasts(app: LegionApp) -> list[str]:
    return [str(n.message) for n in app.notifications]


async def wait_app(pilot: Any, predicate: Any, what: str) -> None:
    deadline = time.monotonic() + 20
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


@contextlib.asynccontextmanager
async def asked(project: Path) -> AsyncIterator[tuple[Supervisor, LegionApp, Any, str]]:
    """A real host and its dashboard (terminal output captured) once the exec child's
    prompt has blocked its node and been toasted: (host, app, pilot, node id)."""
    _exec_card(project)
    async with hosted(project) as sup:
        app = make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir)
        capture(app)
        async with app.run_test(headless=False, size=(120, 40)) as pilot:
            node = await spawn_one(sup, "asker", name="ask")
            await until(lambda: sup.names.node(node.id).status is NodeStatus.BLOCKED, 15, "blocked")
            await wait_app(pilot, lambda: QUESTION in toasts(app), "the needs-you toast")
            yield sup, app, pilot, node.id


async def test_needs_you_and_a_failure_ring_once_each_with_osc_9_and_777(
    tmp_path: Path,
) -> None:
    async with asked(tmp_path) as (sup, app, pilot, node_id):
        out = written(app)
        assert bells(app) == 1
        assert out.count(f"\x1b]9;{QUESTION}\x07") == 1
        assert out.count(f"\x1b]777;notify;legion;{QUESTION}\x07") == 1
        # More repaints of the same question tell nothing new.
        sup.model.set_note(node_id, "repaint")
        await pilot.pause(0.2)
        assert bells(app) == 1 and toasts(app).count(QUESTION) == 1
        await sup.control.steer(ROOT_ID, "ask", "yes")
        failing = await spawn_one(sup, name="boom", sim={"fail": True})
        await until(lambda: sup.names.node(failing.id).status is NodeStatus.FAILED, 20, "failed")
        await wait_app(pilot, lambda: bells(app) == 2, "the second bell")
        out = written(app)
        assert out.count("\x1b]9;boom failed") == 1
        assert out.count("\x1b]777;notify;legion;boom failed") == 1
        # Root's own child: its ending is toasted once, as the completion notice.
        assert not [t for t in toasts(app) if t.startswith("boom failed")]


async def test_each_way_can_be_muted_in_the_settings(tmp_path: Path) -> None:
    (tmp_path / ".legion").mkdir()
    (tmp_path / ".legion" / "settings.toml").write_text(
        "[notify]\nbell = false\ndesktop = false\n", encoding="utf-8"
    )
    async with asked(tmp_path) as (_sup, app, _pilot, _node_id):
        assert bells(app) == 0 and "\x1b]9;" not in written(app)
        assert "\x1b]777;" not in written(app)


def test_a_tool_call_that_passes_five_minutes_is_told_once_and_history_is_not() -> None:
    model = canned_model()
    now = model.clock()
    notifier = Notifier(model)
    assert notifier.news(now) == []  # the canned legion's failures and stalls: history
    view = model.nodes["n3"]
    started = now - receipts.STALL_SECONDS + 10  # 10 s short of stuck
    tool = InFlightTool("call-1", "bash", started)
    model.set_progress("n3", dataclasses.replace(view.progress, in_flight=[tool]))
    assert notifier.news(now) == []
    (notice,) = notifier.news(now + 10)
    assert notice.text == receipts.stall_marker("worker-1", "bash", receipts.STALL_SECONDS)
    assert notifier.news(now + 60) == []


def test_a_question_is_told_once_then_reminded_once_after_five_minutes() -> None:
    """Issue 31 item 5: one notification when it starts waiting, one reminder if it is
    still unanswered five minutes on — never one per frame."""
    from legion_tui.dashboard.notify import REMIND_SECONDS
    from legion_tui.model import EventType
    from legion_tui.model_records import Event

    model = canned_model()
    now = model.clock()
    notifier = Notifier(model)
    assert notifier.news(now) == []
    assert model.nodes["n7"].node.status is NodeStatus.BLOCKED
    model.add_event(Event(902, "n7", EventType.NODE_BLOCKED, {"question": "allow Bash?"}, now))

    def asks(at: float) -> list[str]:  # (the canned legion's other tool calls grow stuck)
        return [n.text for n in notifier.news(at) if "needs you" in n.text]

    assert asks(now) == ["worker-0 needs you: allow Bash?"]
    assert asks(now + REMIND_SECONDS - 1) == []
    assert asks(now + REMIND_SECONDS) == ["worker-0 still needs you (5 min): allow Bash?"]
    assert asks(now + 2 * REMIND_SECONDS) == []


def test_desktop_sequences_cannot_be_cut_short_and_pass_through_tmux() -> None:
    assert desktop_sequences("a\x07b;\x1b]c", tmux=False) == (
        "\x1b]9;a b, ]c\x07\x1b]777;notify;legion;a b, ]c\x07"
    )
    assert desktop_sequences("hi", tmux=True) == (
        "\x1bPtmux;\x1b\x1b]9;hi\x07\x1b\\\x1bPtmux;\x1b\x1b]777;notify;legion;hi\x07\x1b\\"
    )


STEPS = st.lists(
    st.tuples(
        st.integers(0, 40),  # which node
        st.sampled_from(["call", "answer", "status"]),
        st.sampled_from(
            [NodeStatus.RUNNING, NodeStatus.BLOCKED, NodeStatus.SETTLED, NodeStatus.FAILED,
             NodeStatus.RETIRED]
        ),
        st.floats(0.0, 400.0),  # seconds on the clock before the look
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(steps=STEPS)
def test_each_look_tells_what_a_walk_over_every_node_would(
    steps: list[tuple[int, str, NodeStatus, float]],
) -> None:
    """Issue 35: a look re-reads the changed nodes and the live ones that may grow worth
    telling with the clock (a tool call in flight, a question), kept as the changes come,
    instead of testing every live node at each look. Whatever the changes, it tells what
    a notifier walking every node at each look tells."""
    model = canned_model()
    clock = [model.clock()]
    model.clock = lambda: clock[0]
    kept, walking = Notifier(model), Notifier(model)
    walking._feed.take = lambda: None  # type: ignore[method-assign]  # every look: a walk
    ids = list(model.nodes)
    for index, action, status, wait in steps:
        view = model.nodes[ids[index % len(ids)]]
        if action == "call":
            tool = InFlightTool(f"c{len(view.progress.in_flight)}", "bash", clock[0])
            calls = [*view.progress.in_flight, tool]
            model.set_progress(view.node.id, dataclasses.replace(view.progress, in_flight=calls))
        elif action == "answer":
            model.set_progress(view.node.id, dataclasses.replace(view.progress, in_flight=[]))
        else:
            model.upsert(dataclasses.replace(view.node, status=status))
        clock[0] += wait
        assert kept.news(clock[0]) == walking.news(clock[0])
