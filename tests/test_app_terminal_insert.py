"""The Terminal tab's insert mode (issue 12 item 2) on a REAL exec child under a pty:
`i` enters it (`-- INSERT --` on the tab's last row), keys go to the child's terminal —
`cat` echoes them back into the log the tab shows — and none reaches the overlay (q
types a q), Ctrl+] leaves it, Ctrl+C in it is the child's interrupt, and once the child
has ended typing says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import hosted, until
from test_app_detail import open_detail
from test_app_live_stop import wait_app

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.supervisor.root_ops import RootOperations
from legion_tui.widgets.overlay.detail import DetailScreen
from legion_tui.widgets.overlay.terminal_view import (
    INSERT_LINE,
    NORMAL_LINE,
    NOT_TYPING_LINE,
    TerminalView,
)
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host


def _card(project: Path) -> None:
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "echoer.md").write_text(
        "---\nname: echoer\ndescription: Echoes what it is typed.\nkind: exec\nrole: worker\n"
        'command: ["cat"]\n---\nEcho.\n',
        encoding="utf-8",
    )


def shown(view: TerminalView) -> str:
    return "\n".join(line.text for line in view._lines)


def mode(view: TerminalView) -> str:
    return str(view.mode_line.render())


async def test_insert_mode_types_into_a_real_childs_pty(tmp_path: Path) -> None:
    _card(tmp_path)
    async with hosted(tmp_path) as sup:
        (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("echoer", "echo", name="cat")])
        await until(lambda: sup.roster.handle(node.id) is not None, what="cat started")
        log = sup.run.dir / "terminal" / f"{node.id}.log"
        app: LegionApp = make_app(
            sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir
        )
        async with app.run_test(size=(120, 40)) as pilot:
            detail = await open_detail(pilot, app, node.id)
            await pilot.press("5")  # the Terminal tab
            await pilot.pause()
            view = detail.query_one(TerminalView)
            assert mode(view) == NORMAL_LINE
            await pilot.press("i")
            assert view.inserting and mode(view) == INSERT_LINE
            await pilot.press(*"hello q1", "enter")
            # The pty's echo and cat's own copy: the line twice, in the log and on the tab.
            await wait_app(pilot, app, lambda: log.read_text().count("hello q1") == 2, "the echo")
            await wait_app(pilot, app, lambda: shown(view).count("hello q1") == 2, "the tab")
            assert app.screen is detail and detail.showing  # q and 1 were the child's
            await pilot.press("ctrl+right_square_bracket")
            assert not view.inserting and mode(view) == NORMAL_LINE
            await pilot.press("i", "ctrl+c")  # the child's interrupt: cat ends
            await wait_app(pilot, app, lambda: not sup.names.node(node.id).live, "cat to end")
            await pilot.press("x")
            assert not view.inserting and mode(view) == NOT_TYPING_LINE
            await pilot.press("q")  # the overlay's own key again
            await pilot.pause()
            assert not isinstance(app.screen, DetailScreen)
            assert "x" not in log.read_text().replace("exit", "")
