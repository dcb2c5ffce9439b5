"""Review round 4: the supervisor decides by the whole record, not by the model's
200-event display buffer (a busy lead's launch, handled children, verification)."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import STUCK, hosted, spawn_one, until

from legion_tui.git.worktree import create_sandbox_repo
from legion_tui.model import EventType
from legion_tui.phases import DEFAULT_MACHINE
from legion_tui.sim.script import SANDBOX_FILES
from legion_tui.state import EVENTS_PER_NODE
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host

PADDING = EVENTS_PER_NODE + 50


async def _bury(sup: Supervisor, node_id: str) -> None:
    """A busy lead: more events after the facts than the display buffer holds."""
    for _ in range(PADDING):
        await sup.record.event(node_id, EventType.NODE_STEERED, {"outcome": "queued"})
    assert all(e.type is EventType.NODE_STEERED for e in sup.model.nodes[node_id].events)


def _is_dir(path: str) -> bool:
    return Path(path).is_dir()


def _launched(sup: Supervisor, node_id: str) -> dict[str, object]:
    events = [e for e in sup.model.nodes[node_id].events if e.type is EventType.NODE_LAUNCHED]
    return dict(events[-1].data)


async def test_a_busy_lead_keeps_its_worktree_handled_children_and_verification(
    tmp_path: Path,
) -> None:
    sandbox = tmp_path / ".legion" / "sandbox"
    await create_sandbox_repo(sandbox, SANDBOX_FILES, "seed")
    async with hosted(tmp_path, "s") as sup:
        sup.sandbox = sandbox
        lead = await spawn_one(
            sup, "centurion", name="lead", sim=dict(STUCK), phases=DEFAULT_MACHINE.to_dict()
        )
        tree = _launched(sup, lead.id)["worktree"]
        assert tree and _is_dir(str(tree))
        since = sup.names.node(lead.id).phase_since
        await sup.record.event(
            lead.id, EventType.NODE_HANDLED, {"node_id": "w-1", "by": "supersedes"}
        )
        await sup.record.event(
            lead.id, EventType.VERIFICATION_RESULT, {"outcome": "passed", "phase_since": since}
        )
        await _bury(sup, lead.id)
        lead_now = sup.names.node(lead.id)
        assert sup.record.handled_ids(lead_now) == ["w-1"]
        assert sup.record.stint_verification(lead_now) == "passed"
        await until(lambda: sup.names.node(lead.id).live, what="the lead to run")
    # Reopened: the facts come back from the ledger, not from the last 200 events.
    async with hosted(tmp_path, "s") as sup:
        sup.sandbox = sandbox
        assert sup.interrupted_on_open == [lead.id]
        lead_now = sup.names.node(lead.id)
        assert sup.record.handled_ids(lead_now) == ["w-1"]
        assert sup.record.stint_verification(lead_now) == "passed"
        await _bury(sup, lead.id)  # the pause's own events are buried too
        assert (await sup.control.resume(ROOT_ID, "lead")).startswith("Resumed lead")
        assert _launched(sup, lead.id)["worktree"] == tree  # its old worktree, not none
        assert sup.teams.worktree_of(lead.id) is not None
