"""The advisory phase clock on a real ledger: one report per stint, revived stints again."""

from __future__ import annotations

from dataclasses import replace

import pytest
from ledger_helpers import ledger_fixture  # noqa: F401 (a fixture)

from legion_tui.ledger.ledger import Ledger
from legion_tui.mail.postman import Postman
from legion_tui.model import EventType, MailKind, MailState, NodeStatus, Urgency
from legion_tui.model_records import Node
from legion_tui.phases.builtin import DEFAULT_MACHINE
from legion_tui.phases.load import parse_machine
from legion_tui.phases.timeouts import PhaseClock, restore_stint, revive_stint

pytestmark = pytest.mark.unit

T0 = 1_764_424_000.0
MINUTE = 60.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def team(phase: str = "planning", since: float = T0, machine: str | None = None) -> Node:
    return Node(
        id="lead",
        run_id="run-1",
        parent_id="root",
        name="lead-api",
        path="root/lead-api",
        role="centurion",
        kind="sim",
        backend="inprocess",
        status=NodeStatus.RUNNING,
        phase=phase,
        phase_since=since,
        machine=machine or DEFAULT_MACHINE.to_json(),
    )


async def root_node(ledger: Ledger, lead: Node) -> None:
    root = replace(
        lead,
        id="root",
        parent_id=None,
        name="root",
        path="root",
        role="root",
        phase=None,
        phase_since=None,
        machine=None,
    )
    await ledger.insert_nodes([root, lead])


async def timeouts(ledger: Ledger) -> list[dict[str, object]]:
    return [e.data for e in await ledger.get_events("lead", types=[EventType.PHASE_TIMEOUT])]


async def test_one_event_and_one_notice_per_stint(ledger: Ledger) -> None:
    clock = Clock(T0 + 14 * MINUTE)
    phase_clock = PhaseClock(ledger, clock=clock)
    node = team()
    assert await phase_clock.check(node) is None  # planning: 15 min built in

    clock.now = T0 + 16 * MINUTE
    report = await phase_clock.check(node)
    assert report is not None and report.limit_ms == 15 * 60_000
    for _ in range(3):
        clock.now += MINUTE
        assert await phase_clock.check(node) is None
    events = await timeouts(ledger)
    assert len(events) == 1
    assert events[0]["phase"] == "planning" and events[0]["phase_since"] == T0
    assert events[0]["message_id"] == report.message_id

    notices = await ledger.get_messages("root", direction="in")
    assert len(notices) == 1
    notice = notices[0]
    assert (notice.from_node, notice.kind, notice.urgency) == (
        "lead",
        MailKind.NOTICE,
        Urgency.ACTION_NEEDED,
    )
    assert notice.subject == "Phase timeout: lead-api in planning for 00:16:00"
    assert "only reports" in notice.body and "legion stop lead-api" in notice.body


async def test_a_reopened_run_does_not_announce_the_same_stint_again(ledger: Ledger) -> None:
    clock = Clock(T0 + 20 * MINUTE)
    assert await PhaseClock(ledger, clock=clock).check(team()) is not None
    fresh = PhaseClock(ledger, clock=clock)  # no memory: the ledger is the key
    assert await fresh.check(team()) is None
    assert len(await timeouts(ledger)) == 1


async def test_a_revived_team_times_out_again(ledger: Ledger) -> None:
    lead = team("implementing")
    await root_node(ledger, lead)
    clock = Clock(T0 + 61 * MINUTE)
    phase_clock = PhaseClock(ledger, clock=clock)
    assert await phase_clock.check(lead) is not None

    # the team ends in that phase, then `resume` wakes it: same phase, new clock
    revived = await revive_stint(ledger, lead, now=T0 + 90 * MINUTE)
    assert revived.phase == "implementing" and revived.phase_since == T0 + 90 * MINUTE
    changes = await ledger.get_events("lead", types=[EventType.PHASE_CHANGE])
    assert changes[-1].data["reason"] == "revived"
    assert changes[-1].data["from"] == changes[-1].data["to"] == "implementing"

    clock.now = T0 + 100 * MINUTE
    assert await phase_clock.check(revived) is None  # 10 min into the new stint
    clock.now = T0 + 151 * MINUTE
    assert await phase_clock.check(revived) is not None
    assert [e["phase_since"] for e in await timeouts(ledger)] == [T0, T0 + 90 * MINUTE]


async def test_a_failed_revival_gives_the_clock_back(ledger: Ledger) -> None:
    lead = team("implementing")
    await root_node(ledger, lead)
    await revive_stint(ledger, lead, now=T0 + 5 * MINUTE)
    await restore_stint(ledger, lead)
    restored = await ledger.get_node("lead")
    assert restored is not None and restored.phase_since == T0


async def test_re_entering_a_phase_is_a_new_stint(ledger: Ledger) -> None:
    clock = Clock(T0 + 20 * MINUTE)
    phase_clock = PhaseClock(ledger, clock=clock)
    assert await phase_clock.check(team("planning", T0)) is not None
    clock.now = T0 + 40 * MINUTE
    assert await phase_clock.check(team("planning", T0 + 21 * MINUTE)) is not None
    assert len(await timeouts(ledger)) == 2


async def test_resolution_operator_then_machine_then_builtin_then_never(ledger: Ledger) -> None:
    machine = parse_machine(
        {
            "phases": [
                {"id": "spec", "timeoutMs": 5 * 60_000, "next": ["implementing"]},
                {"id": "implementing", "timeoutMs": 2 * 60_000, "next": ["ship"]},
                {"id": "ship", "next": ["done"]},
            ]
        }
    ).to_json()
    clock = Clock(T0)
    phase_clock = PhaseClock(ledger, clock=clock, operator={"spec": 60_000, "ship": 0})
    assert phase_clock.limit_ms(team("spec", machine=machine)) == 60_000  # operator wins
    assert phase_clock.limit_ms(team("implementing", machine=machine)) == 2 * 60_000  # card
    assert phase_clock.limit_ms(team("ship", machine=machine)) is None  # operator: 0 = never
    assert phase_clock.limit_ms(team("reviewing")) == 30 * 60_000  # built in
    assert PhaseClock(ledger).limit_ms(team("ship", machine=machine)) is None  # never

    clock.now = T0 + 1000 * MINUTE
    assert await phase_clock.check(team("ship", machine=machine)) is None


async def test_a_timeout_only_reports(ledger: Ledger) -> None:
    lead = team("verifying")
    await root_node(ledger, lead)
    before = await ledger.get_node("lead")
    assert await PhaseClock(ledger, clock=Clock(T0 + 16 * MINUTE)).check(lead) is not None
    after = await ledger.get_node("lead")
    assert after == before  # status, phase and phase_since untouched
    types = {e.type for e in await ledger.get_events("lead")}
    assert types == {EventType.PHASE_TIMEOUT, EventType.MAIL_SENT}


async def test_ended_undeclared_and_terminal_teams_have_no_clock(ledger: Ledger) -> None:
    phase_clock = PhaseClock(ledger, clock=Clock(T0 + 1000 * MINUTE))
    assert await phase_clock.check(replace(team(), status=NodeStatus.SETTLED)) is None
    assert await phase_clock.check(replace(team(), phase=None, phase_since=None)) is None
    assert await phase_clock.check(team("done")) is None
    assert await timeouts(ledger) == []


async def test_the_notice_goes_obsolete_when_the_team_moves_on(ledger: Ledger) -> None:
    """End to end with the postman: the tracker's event is what the OBSOLETE rule reads."""
    lead = team("planning")
    clock = Clock(T0 + 16 * MINUTE)
    report = await PhaseClock(ledger, clock=clock).check(lead)
    assert report is not None and report.message_id is not None
    nodes = {
        "lead": replace(lead, phase="implementing", phase_since=T0 + 17 * MINUTE),
        "root": replace(lead, id="root", parent_id=None, path="root", phase=None),
    }

    class Directory:
        def node(self, node_id: str) -> Node | None:
            return nodes.get(node_id)

        def evidence(self, node_id: str) -> list[str] | None:
            return None

        def interrupted(self, node_id: str) -> bool:
            return False

    async def handover(node: Node, envelope: str) -> bool:
        raise AssertionError("a stale notice must not be handed over")

    tick = await Postman(ledger, Directory(), handover).tick("root")
    assert tick.obsolete == [report.message_id]
    (letter,) = await ledger.get_messages("root", direction="in")
    assert letter.delivered is MailState.OBSOLETE
