"""A revived team starts a new phase stint (SPEC §6.4, upstream #357): resuming a paused
centurion with a declared machine moves its phase clock to the revival, so the clock may
time it out once more and the old stint's `Phase timeout:` notice goes OBSOLETE; a
revival whose launch fails gives the old clock back (upstream PR #363)."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import STUCK, hosted, settled, spawn_one, until

from legion_tui.model import EventType, MailState, NodeStatus
from legion_tui.model_records import Event
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID, OpError

pytestmark = pytest.mark.host

MACHINE = {
    "phases": [
        {"id": "planning", "require": ["always"], "next": ["implementing"]},
        {"id": "implementing", "require": ["children_settled"], "next": ["done"]},
    ]
}
# `done` needs every child to have failed; a quick team's worker does not, so the lead's
# request is refused and it settles where it is: an ended team in a live phase.
ENDS_IN_PLANNING = {
    "phases": [{"id": "planning", "next": [{"to": "done", "require": ["children_all_failed"]}]}]
}
QUICK_WORKER = [{"role": "worker", "name": "w", "task": "t", "sim": {"quick": True}}]
# An exec team lead that writes its session header and waits (until the pause stops it).
# It replaces the bundled `centurion` card: phases are declared for that role name.
EXEC_LEAD = """---
name: centurion
description: a team lead that is a shell script
kind: exec
role: centurion
command: ["./lead.sh", "{session_file}"]
---
Waits.
"""
LEAD_SCRIPT = """#!/bin/sh
printf '{"type":"session","version":3,"id":"x","timestamp":"2026-11-29T14:00:00.000Z"}\\n' >> "$1"
exec sleep 60
"""


def _one_millisecond_planning(project: Path) -> None:
    (project / ".legion").mkdir(exist_ok=True)
    (project / ".legion" / "settings.toml").write_text("[phaseTimeouts]\nplanning = 1\n")


def _events(sup: Supervisor, node_id: str, etype: EventType) -> list[Event]:
    return [e for e in sup.model.nodes[node_id].events if e.type is etype]


async def _timed_out_sinces(sup: Supervisor, node_id: str) -> list[float]:
    events = await sup.ledger.get_events(node_id, types=[EventType.PHASE_TIMEOUT])
    return [float(e.data["phase_since"]) for e in events]


async def _past_the_limit(sup: Supervisor, since: float) -> None:
    await until(lambda: sup.clock() > since + 0.01, what="the 1 ms planning limit to pass")


async def test_a_resumed_team_gets_a_new_stint_that_can_time_out_again(tmp_path: Path) -> None:
    _one_millisecond_planning(tmp_path)
    async with hosted(tmp_path, "s") as first:
        lead = (
            await spawn_one(first, "centurion", name="lead", phases=MACHINE, sim=dict(STUCK))
        ).id
        await until(lambda: first.names.node(lead).live, what="lead live")
        old_since = first.names.node(lead).phase_since
        assert old_since is not None and first.names.node(lead).phase == "planning"
        await _past_the_limit(first, old_since)
        await first.phase_clock.check_all([first.names.node(lead)])
        assert await _timed_out_sinces(first, lead) == [old_since]
        (old_notice,) = await first.ledger.get_messages(ROOT_ID, direction="in")
        assert old_notice.subject.startswith("Phase timeout:")
    # The pause (session shutdown) leaves the clock alone: a pause is not a new stint.

    async with hosted(tmp_path, "s") as again:
        paused = again.names.node(lead)
        assert paused.status is NodeStatus.RETIRED and paused.phase_since == old_since
        assert _events(again, lead, EventType.PHASE_CHANGE) == []  # MACHINE: it never moved
        # Without a revival this stint is still the reported one: the clock stays quiet.
        assert await again.phase_clock.check_all([paused]) == []

        await again.control.resume(ROOT_ID, "lead")
        revived = again.names.node(lead)  # as the resume left it: running, on the new clock
        assert revived.status is NodeStatus.RUNNING and revived.phase == "planning"
        new_since = revived.phase_since
        assert new_since is not None and new_since > old_since
        (change,) = _events(again, lead, EventType.PHASE_CHANGE)  # in the live model at once
        assert change.data == {
            "from": "planning",
            "to": "planning",
            "reason": "revived",
            "phase_since": new_since,
            "previous_since": old_since,
        }
        stored = await again.ledger.get_events(lead, types=[EventType.PHASE_CHANGE])
        assert [e.id for e in stored] == [change.id]

        # The new stint may time out once (the background clock may be the one that does).
        await _past_the_limit(again, new_since)
        await again.phase_clock.check_all([revived])
        assert await _timed_out_sinces(again, lead) == [old_since, new_since]
        assert await again.phase_clock.check_all([revived]) == []  # once per stint
        old, new = await again.ledger.get_messages(ROOT_ID, direction="in")
        assert old.id == old_notice.id and new.subject.startswith("Phase timeout:")

        # The old stint's notice is stale: OBSOLETE, never shown as news.
        await again.mail.postman.tick(ROOT_ID)
        old, _new = await again.ledger.get_messages(ROOT_ID, direction="in")
        assert old.id == old_notice.id and old.delivered is MailState.OBSOLETE


async def test_a_revival_whose_launch_fails_gives_the_old_clock_back(tmp_path: Path) -> None:
    cards = tmp_path / ".legion" / "agents"
    cards.mkdir(parents=True)
    (cards / "centurion.md").write_text(EXEC_LEAD)
    script = tmp_path / "lead.sh"
    script.write_text(LEAD_SCRIPT)
    script.chmod(0o755)
    async with hosted(tmp_path, "s") as first:
        lead = (await spawn_one(first, "centurion", name="lead", phases=MACHINE)).id
        await until(lambda: first.names.node(lead).live, what="lead live")
        session_file = Path(first.names.node(lead).session_file or "")
        await until(session_file.exists, what="the lead's session file")
        old_since = first.names.node(lead).phase_since
        assert old_since is not None
    script.unlink()  # the program is gone by the time the team is resumed

    async with hosted(tmp_path, "s") as again:
        with pytest.raises(OpError, match="lead did not resume — resume failed: "):
            await again.control.resume(ROOT_ID, "lead")
        node = again.names.node(lead)
        # Its session intact, it stays interrupted with the words (issue 31 item 3).
        assert node.status is NodeStatus.RETIRED and (node.error or "").startswith("resume failed")
        assert again.model.nodes[lead].interrupted
        # The revival was recorded, then its clock given back: model and ledger agree.
        (change,) = _events(again, lead, EventType.PHASE_CHANGE)
        assert change.data["reason"] == "revived" and change.data["previous_since"] == old_since
        assert node.phase == "planning" and node.phase_since == old_since  # the model…
        stored = await again.ledger.get_node(lead)
        assert stored is not None and stored.phase_since == old_since  # …and the ledger


async def test_a_settled_team_steered_into_a_new_turn_is_revived(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        spawned = await spawn_one(
            sup,
            "centurion",
            name="lead",
            phases=ENDS_IN_PLANNING,
            sim={"quick": True, "children": QUICK_WORKER},
        )
        ended = await settled(sup, spawned.id, 30.0)
        assert (ended.status, ended.phase) == (NodeStatus.SETTLED, "planning"), ended
        assert _events(sup, ended.id, EventType.PHASE_CHANGE) == []
        outcome, receipt = await sup.control.steer(ROOT_ID, "lead", "one more look")
        assert outcome == "accepted", receipt
        woken = sup.names.node(ended.id)
        assert woken.phase == "planning" and (woken.phase_since or 0) > (ended.phase_since or 0)
        (change,) = _events(sup, ended.id, EventType.PHASE_CHANGE)
        assert change.data["reason"] == "revived"
        assert change.data["previous_since"] == ended.phase_since


async def test_a_lead_handed_over_to_its_own_ui_keeps_its_phase(tmp_path: Path) -> None:
    """An attach's hand-over is no end of the team's work: its phase is not `aborted`
    (a stop's retire lands there, SPEC §6.4)."""
    from legion_tui.supervisor.root_ops import RootOperations

    async with hosted(tmp_path) as sup:
        spawned = await spawn_one(
            sup, "centurion", name="lead", phases=ENDS_IN_PLANNING,
            sim={"quick": True, "children": QUICK_WORKER},
        )  # fmt: skip
        ended = await settled(sup, spawned.id, 30.0)
        assert (ended.status, ended.phase) == (NodeStatus.SETTLED, "planning"), ended
        await RootOperations(sup).hand_over(spawned.id)
        handed = sup.names.node(spawned.id)
        assert handed.status is NodeStatus.RETIRED and handed.phase == "planning"
        assert sup.model.nodes[spawned.id].interrupted


async def test_a_member_of_a_settled_lead_is_taken_back_after_its_hand_over(
    tmp_path: Path,
) -> None:
    """Attaching to a finished member to look at its work: its lead has settled, and the
    take-back is no resume a lead must come first for (it was refused, the member left
    retired and its verdict lost)."""
    from legion_tui.supervisor.root_ops import RootOperations

    async with hosted(tmp_path) as sup:
        spawned = await spawn_one(
            sup, "centurion", name="lead", phases=ENDS_IN_PLANNING,
            sim={"quick": True, "children": QUICK_WORKER},
        )  # fmt: skip
        await settled(sup, spawned.id, 30.0)
        (member,) = sup.model.children(spawned.id)
        assert sup.names.node(member).status is NodeStatus.SETTLED
        ops = RootOperations(sup)
        await ops.hand_over(member)
        assert sup.names.node(member).status is NodeStatus.RETIRED
        await ops.take_back(member)
        await until(lambda: sup.names.node(member).status is NodeStatus.SETTLED, 30.0)
        assert sup.names.node(spawned.id).status is NodeStatus.SETTLED  # the lead untold


async def test_while_its_own_ui_holds_the_session_nothing_else_starts_its_agent(
    tmp_path: Path,
) -> None:
    """Between the hand-over and the take-back the session is the UI's: a resume (another
    shell's `legion resume`) and a steer are refused with why, never a second writer;
    taken back, the node is steerable again."""
    from legion_tui.supervisor.root_ops import RootOperations

    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, name="w", sim={"quick": True})
        await settled(sup, node.id, 30.0)
        ops = RootOperations(sup)
        await ops.hand_over(node.id)
        for verb in (sup.control.resume(ROOT_ID, "w"), sup.control.steer(ROOT_ID, "w", "hi")):
            with pytest.raises(OpError) as err:
                await verb
            assert err.value.code == "ATTACHED", err.value
            assert "session is open in its own UI" in err.value.message
        assert await ops.take_back(node.id) is not None
        await until(lambda: sup.names.node(node.id).status is NodeStatus.SETTLED, 30.0)
        assert node.id not in sup.roster.in_own_ui
