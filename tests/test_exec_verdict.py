"""An exec command's report is its terminal (issue 32 item 6): a verdict JSON printed as
its last line — colours and all — is its verdict, as an agent's closing line is; one
that prints none settles without, its last line on its row; its detail never says it is
"waiting for its first answer"."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from supervisor_helpers import hosted, settled, spawn_one, until

from legion_tui import receipts
from legion_tui.model import NodeStatus
from legion_tui.widgets.overlay.detail_text import skipped_line
from legion_tui.widgets.tree.rows import activity
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host


def _card(project: Path, name: str, script: str) -> None:
    tool = project / "bin" / f"{name}.sh"
    tool.parent.mkdir(exist_ok=True)
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(0o755)
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: A script.\nkind: exec\nrole: worker\n"
        f'command: ["{tool}"]\n---\nRun.\n', encoding="utf-8",
    )  # fmt: skip


async def test_a_verdict_printed_last_is_the_commands_verdict(tmp_path: Path) -> None:
    coloured = """printf '\\033[32m{"ok": false, "reason": "2 tests failed"}\\033[0m\\r\\n'"""
    _card(tmp_path, "checker", "echo checking\n" + coloured)
    _card(tmp_path, "quiet", "echo all done here")
    async with hosted(tmp_path) as sup:
        checker = await spawn_one(sup, "checker", name="c")
        quiet = await spawn_one(sup, "quiet", name="q")
        done = await settled(sup, checker.id, 30)
        assert done.status is NodeStatus.SETTLED
        assert done.verdict_data == {"ok": False, "reason": "2 tests failed"}, done.verdict
        view = sup.model.nodes[checker.id]
        assert activity(view, time.time()).text == "✗ 2 tests failed"
        assert skipped_line(view) == receipts.COMMAND_NO_SESSION
        plain = await settled(sup, quiet.id, 30)
        assert plain.status is NodeStatus.SETTLED and plain.verdict is None
        assert activity(sup.model.nodes[quiet.id], time.time()).text == "all done here"


async def test_a_working_commands_terminal_line_is_its_row_in_the_tree(tmp_path: Path) -> None:
    """`legion tree` says what `legion status` says an exec command does, not "between
    tool calls" (a lead watches its members with it)."""
    _card(tmp_path, "busy", "echo building the index\nexec tail -f /dev/null")
    async with hosted(tmp_path) as sup:
        busy = await spawn_one(sup, "busy", name="b")
        await until(lambda: sup.model.nodes[busy.id].terminal_line == "building the index",
                    30.0, "its line")  # fmt: skip
        assert "● b (worker) — running · terminal: building the index" in sup.queries.tree_text(
            ROOT_ID
        )
