"""BLOCKED from a pi extension's dialog (issue 12 item 5), on each pinned pi line.

A real pi run by legion in RPC mode with an extension (`-e`) that asks `ctx.ui.confirm`
before every bash call: pi writes an `extension_ui_request` and waits. The node is
BLOCKED with the dialog's title and message; the user's steer is the
`extension_ui_response` — "y" confirms and the command runs, anything else refuses and
the extension blocks it.
"""

from __future__ import annotations

import pytest
from model_server import Reply, Text, ToolCall
from real_pi_helpers import PI_COMMAND, PiWorld, agent_host, settle, until, verdict_line, write_card

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.real

TURN_LIMIT = 60.0
EXTENSION = """\
export default function (pi: any) {
  pi.on("tool_call", async (event: any, ctx: any) => {
    if (event.toolName !== "bash") return undefined;
    const ok = await ctx.ui.confirm("Run this command?", String(event.input.command));
    return ok ? undefined : { block: true, reason: "Refused by the user" };
  });
}
"""


def _asking_card(world: PiWorld) -> None:
    extension = world.project / "ask-first.ts"
    extension.write_text(EXTENSION, encoding="utf-8")
    write_card(world.project, command=(*PI_COMMAND, "-e", str(extension)))


def _questions(sup: Supervisor, node_id: str) -> list[str]:
    return [str(e.data.get("question")) for e in sup.model.nodes[node_id].events
            if e.type is EventType.NODE_BLOCKED]  # fmt: skip


@pytest.mark.parametrize(("answer", "runs"), [("y", True), ("no", False)])
async def test_an_extension_dialog_blocks_until_the_steer_answers_it(
    world: PiWorld, answer: str, runs: bool
) -> None:
    _asking_card(world)
    world.server.script(
        Reply([ToolCall("bash", {"command": "printf hi > asked.txt"})]),
        Text(f"Done.\n{verdict_line('asked first')}"),
    )
    async with agent_host(world.project) as sup:
        (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", "write it", name="w")])
        await until(lambda: bool(_questions(sup, node.id)), TURN_LIMIT, "the node to ask")
        assert sup.names.node(node.id).status is NodeStatus.BLOCKED
        assert _questions(sup, node.id) == [
            "Run this command? · printf hi > asked.txt · y confirms"
        ]
        outcome, _ = await sup.control.steer(ROOT_ID, "w", answer)
        assert outcome == "accepted"
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, done.error
        asked = world.project / "asked.txt"
        assert (asked.read_text() if runs else asked.exists()) == ("hi" if runs else False)
