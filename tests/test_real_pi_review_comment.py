"""A review comment from the Diff tab reaches a real pi agent (issue 28 item 9), both pinned
pi lines, against the scripted model server.

A hosted Supervisor runs a `kind: pi` worker in its own worktree of a real git project;
the pi agent commits through its bash tool and settles. The dashboard (run_test, the
real RootOperations) opens its Diff tab, the cursor goes to the `+` line, `m` opens the
message box with `app.py:1` and the hunk, the user types a comment and Enter sends it:
pi is idle, so it is a follow-up that starts a turn — and the model request pi sends
next holds the prefix, the hunk and the comment, as the server's log shows. The
agent's next commit then shows in the tab. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from model_server import Text, ToolCall
from real_pi_helpers import TURN_LIMIT, PiWorld, pi_host, settle, spawn_pi, verdict_line
from supervisor_helpers import git, until
from test_app_live_stop import wait_app

from legion_tui.dashboard.app import make_app
from legion_tui.model import NodeStatus
from legion_tui.supervisor.root_ops import RootOperations
from legion_tui.widgets.overlay.diff_view import DiffView
from legion_tui.widgets.overlay.message_box import MessageBox, MessageText

pytestmark = pytest.mark.real

COMMENT = "REVIEW-7: the API caps a page at 25, use that"
HUNK = "@@ -1 +1 @@\n-PAGE_SIZE = 10\n+PAGE_SIZE = 50\n"


def _commit(text: str, subject: str) -> ToolCall:
    command = f"printf '{text}\\n' > app.py && git commit -qam '{subject}'"
    return ToolCall("bash", {"command": command})


async def test_a_diff_tab_comment_reaches_the_real_pi_agents_next_request(world: PiWorld) -> None:
    project = world.project
    (project / "app.py").write_text("PAGE_SIZE = 10\n")
    git(project, "add", "app.py")
    git(project, "commit", "-qm", "first")
    world.server.script(
        _commit("PAGE_SIZE = 50", "raise the page size"),
        Text(f"Raised it.\n{verdict_line('raised the page size')}"),
        # after the comment:
        _commit("PAGE_SIZE = 25", "cap the page at 25"),
        Text(f"Capped it.\n{verdict_line('capped at 25')}"),
    )
    async with pi_host(world) as sup:
        node = await spawn_pi(sup, "pager", "Raise the page size, commit, then give a verdict.")
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        ops = RootOperations(sup)
        workspace = ops.workspace(node.id)
        assert workspace is not None and workspace.owner_id == node.id  # its own worktree
        app = make_app(sup.model, ops, timers=False, run_dir=sup.run.dir)
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            app.railway.select(node.id)
            await pilot.press("o")
            await wait_app(pilot, app, lambda: bool(app.screen.query("#diff")), "the Diff tab")
            tabs = app.screen._tab_ids  # type: ignore[attr-defined]
            await pilot.press(str(tabs.index("tab-diff") + 1))  # its number key
            view = app.screen.query_one("#diff", DiffView)
            await wait_app(
                pilot,
                app,
                lambda: view.has_focus and "+PAGE_SIZE = 50" in [t for t, _ in view.lines],
                "the Diff tab shown, with the agent's commit",
            )
            target = [t for t, _ in view.lines].index("+PAGE_SIZE = 50")
            await pilot.press("home", *["j"] * target, "m")
            area = app.screen.query_one(MessageText)
            assert area.text == f"app.py:1\n{HUNK}"
            head = str(app.screen.query_one(MessageBox).query_one(".message-head").render())
            assert head.startswith("follow-up pager (starts a turn)")
            await pilot.press(*COMMENT, "enter")
            sent = f"app.py:1\n{HUNK}{COMMENT}"
            requests = await asyncio.to_thread(world.server.wait_for_requests, 3, TURN_LIMIT)
            # The request pi sent after the comment holds it whole: path:line, the hunk
            # and what the user typed; none before it did.
            assert requests[2].last_user_text() == sent, requests[2].last_user_text()
            assert all(COMMENT not in json.dumps(r.messages) for r in requests[:2])
            # Its next commit shows in the tab (read again as the agent moved on).
            await wait_app(
                pilot,
                app,
                lambda: any(t.endswith(" cap the page at 25") for t, _ in view.lines),
                "the agent's next commit in the Diff tab",
            )
            await until(
                lambda: "capped" in (sup.names.node(node.id).verdict or ""),
                TURN_LIMIT,
                "the settle",
            )
        assert world.server.unscripted() == []
