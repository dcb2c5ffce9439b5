"""BLOCKED from an exec child reading its terminal (issue 12 item 5).

A real shell on legion's pty prints a prompt and reads a line: the node goes BLOCKED
with the prompt as its question; the steer typed into the terminal answers it and the
node runs again, then settles when the script ends. A child busy without reading (a
sleep) is never called waiting.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import hosted, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.backends.exec_handle import (
    ASK_EVERY,
    QUIET_AFTER,
    QUIET_ASK_EVERY,
    QUIET_ASK_MOST,
    look_again_in,
)
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host

SCRIPT = """\
sleep 0.6
printf 'Deploy to prod? [y/N] '
read answer
printf '%s\\n' "answered $answer" > "$1/answer.txt"
sleep 0.6
"""


def _exec_card(project: Path) -> None:
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True)
    (project / "ask.sh").write_text(SCRIPT, encoding="utf-8")
    (agents / "asker.md").write_text(
        "---\nname: asker\ndescription: Asks a question on its terminal.\nkind: exec\n"
        f'role: worker\ncommand: ["sh", "{project / "ask.sh"}", "{project}"]\n---\nAsk.\n',
        encoding="utf-8",
    )


def _questions(view_events: object) -> list[str]:
    return [str(e.data.get("question")) for e in view_events  # type: ignore[attr-defined]
            if e.type is EventType.NODE_BLOCKED]  # fmt: skip


async def test_a_command_reading_its_terminal_blocks_until_the_steer_answers(
    tmp_path: Path,
) -> None:
    _exec_card(tmp_path)
    async with hosted(tmp_path) as sup:
        (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("asker", "ask", name="ask")])
        # The first 0.6 s it sleeps: running, not waiting.
        await until(lambda: sup.names.node(node.id).status is NodeStatus.RUNNING, 15, "running")
        assert sup.names.node(node.id).status is NodeStatus.RUNNING
        # The move's event is its last write (ledger, model, then the event): waiting on
        # the status alone read the events before it under load (`make soak`).
        await until(lambda: bool(_questions(sup.model.nodes[node.id].events)), 15,
                    "blocked, with its question")
        assert sup.names.node(node.id).status is NodeStatus.BLOCKED
        assert _questions(sup.model.nodes[node.id].events) == ["Deploy to prod? [y/N]"]
        outcome, _ = await sup.control.steer(ROOT_ID, "ask", "yes")
        assert outcome == "queued"
        await until(
            lambda: sup.names.node(node.id).status is not NodeStatus.BLOCKED, 15, "answered"
        )
        await until(lambda: not sup.names.node(node.id).live, 15, "the script to end")
        assert sup.names.node(node.id).status is NodeStatus.SETTLED
        assert (tmp_path / "answer.txt").read_text() == "answered yes\n"
        kinds = [e.type for e in sup.model.nodes[node.id].events]
        assert kinds.count(EventType.NODE_BLOCKED) == 1


async def test_a_command_that_reads_without_a_prompt_is_still_asked(tmp_path: Path) -> None:
    """Issue 35: a quiet terminal is looked at once a second, not four times — a
    command that waits without printing a prompt is still seen (the question is then
    its terminal's last line, here empty: `input`)."""
    _exec_card(tmp_path)
    (tmp_path / "ask.sh").write_text('read answer\nprintf "%s\\n" "$answer" > "$1/a.txt"\n',
                                     encoding="utf-8")  # fmt: skip
    async with hosted(tmp_path) as sup:
        (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("asker", "ask", name="ask")])
        await until(lambda: bool(_questions(sup.model.nodes[node.id].events)), 15,
                    "blocked, with no prompt printed")  # fmt: skip
        assert _questions(sup.model.nodes[node.id].events) == ["input"]
        assert (await sup.control.steer(ROOT_ID, "ask", "quiet"))[0] == "queued"
        await until(lambda: not sup.names.node(node.id).live, 15, "the script to end")
        assert (tmp_path / "a.txt").read_text() == "quiet\n"


def test_a_terminal_is_looked_at_quickly_only_while_it_is_busy_or_read() -> None:
    assert look_again_in(reading=False, quiet_for=0.5) == ASK_EVERY  # it just printed
    assert look_again_in(reading=True, quiet_for=60.0) == ASK_EVERY  # a second sighting
    assert look_again_in(reading=False, quiet_for=QUIET_AFTER) == QUIET_ASK_EVERY
    assert QUIET_ASK_EVERY <= 1.0  # a silent reader after a short quiet: asked within ~2 s
    # Quiet for long, looked at less often, never less than every QUIET_ASK_MOST s: a
    # silent reader is then asked within ~QUIET_ASK_MOST s (the sighting brings the
    # quick looks back, and the second one asks).
    assert look_again_in(reading=False, quiet_for=16.0) == 2.0
    assert look_again_in(reading=False, quiet_for=3600.0) == QUIET_ASK_MOST <= 4.0
