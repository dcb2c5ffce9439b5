"""Completion notices, claimed once (issue 11; upstream notice-claim-v1): each duplicate
window upstream found, as a test of the one exit (`Notices._exit`). Every test that
asserts a dropped copy also asserts a sibling's copy that must arrive (a positive
control), so none can pass by sending nothing.

The windows, and where they are pinned:
- W1 join buffer flushed after a `wait` took the result → test_w1_*
- W2 outbox flushed at the turn's end after an in-turn `wait` → test_w2_* (and with a real
  pi lead in test_completion_notices.py)
- W3 an entry left in the buffer by a later round's claim → test_w3_*
- W4 claims that vanished with the job → test_w4_* (claims live in Notices, by round)
- reverse order (notice first, then collect), a timeout claims nothing, a lost reply hands
  its claim back, a grouped notice recomputed at delivery.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest
from mail_helpers import make_node
from supervisor_helpers import until

from legion_tui.model import NodeStatus
from legion_tui.model_records import Node
from legion_tui.state import LegionModel
from legion_tui.supervisor.hearing.notices import Notices
from legion_tui.supervisor.hearing.results import FinishedResults, Result

pytestmark = pytest.mark.unit

LEAD, A, B = "lead", "a", "b"


class World:
    """A lead with two members in a real LegionModel; notices sent are recorded."""

    def __init__(self, tmp_path: Path, join_seconds: float = 60.0) -> None:
        self.tmp_path = tmp_path
        self.model = LegionModel("run-1", "main")
        self.model.upsert(make_node("root", None, "root", role="root"))
        self.model.upsert(make_node(LEAD, "root", "root/lead", role="centurion"))
        for child in (A, B):
            self.model.upsert(make_node(child, LEAD, f"root/lead/{child}"))
        self.busy: set[str] = set()
        self.letters: list[tuple[str, list[str], str]] = []  # (parent, names, body)
        self.toasts: list[str] = []
        self.refuse = False  # the recipient refuses letters (a bounce)
        self.notices = Notices(
            self.model,
            FinishedResults(),
            self,  # the endings: result_of, send_notice
            announce=self.toasts.append,
            busy=lambda node_id: node_id in self.busy,
            changed=lambda: None,
            join_seconds=join_seconds,
        )

    def result_of(self, node: Node, round_: int, data: dict[str, object]) -> Result:
        out = self.tmp_path / f"{node.name}.{round_}.md"
        text = f"{node.name} round {round_} final text"
        out.write_text(text + "\n", encoding="utf-8")
        return Result(
            node.id, node.name, node.path, round_, node.status.value,
            {"ok": True, "reason": f"{node.name} done"}, node.error, text, str(out),
        )

    async def send_notice(
        self, parent: str, results: Sequence[Result], subject: str, body: str
    ) -> int | None:
        if self.refuse:
            return None
        self.letters.append((parent, [f"{r.name}#{r.round}" for r in results], body))
        return len(self.letters)

    def end(self, node_id: str, status: NodeStatus = NodeStatus.SETTLED) -> None:
        """The one write path's move of the node to `status` (a new round)."""
        before = self.model.nodes[node_id].node
        after = dataclasses.replace(before, status=status)
        self.model.upsert(after)
        self.notices.ended(after, before.status, {})

    def revive(self, node_id: str) -> None:
        node = self.model.nodes[node_id].node
        self.model.upsert(dataclasses.replace(node, status=NodeStatus.RUNNING))

    async def drained(self) -> None:
        await asyncio.wait_for(self.notices.drain(), 5.0)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


async def test_members_finishing_together_wake_the_lead_once(world: World) -> None:
    world.end(A)
    await world.drained()
    assert world.letters == []  # b still works: a joins the buffer
    world.end(B)
    await world.drained()
    assert [names for _p, names, _b in world.letters] == [["a#1", "b#1"]]
    body = world.letters[0][2]
    assert "2 of 2 members finished" in body and "a round 1 final text" in body


async def test_w1_a_buffered_result_a_wait_took_is_dropped_at_the_flush(world: World) -> None:
    world.end(A)  # buffered: b is live
    assert world.notices.claim(A, "wait")  # the lead's wait reported it
    world.end(B)  # the flush: a is dropped at the exit, b (the control) goes
    await world.drained()
    assert [names for _p, names, _b in world.letters] == [["b#1"]]
    assert "1 of 1 members finished" in world.letters[0][2]  # recomputed at delivery


async def test_w1_the_window_expiring_flushes_what_is_left(tmp_path: Path) -> None:
    world = World(tmp_path, join_seconds=0.05)
    world.end(A)
    world.end(B, NodeStatus.FAILED)
    world.revive(B)  # b runs again: a's window is the only way out for a
    world.notices.claim(B, "wait")
    await until(lambda: bool(world.letters), 5.0, "the window's flush")
    assert [names for _p, names, _b in world.letters] == [["a#1"]]


async def test_w2_the_outbox_drops_what_an_in_turn_wait_took(world: World) -> None:
    world.busy.add(LEAD)
    world.end(A)
    world.end(B)
    await world.drained()
    assert world.letters == []  # held in the outbox for the turn's end
    assert world.notices.owed(LEAD)
    assert world.notices.claim(A, "wait")  # the wait of that same turn
    world.busy.discard(LEAD)
    await world.notices.turn_ended(LEAD)
    assert [names for _p, names, _b in world.letters] == [["b#1"]]
    assert not world.notices.owed(LEAD)


async def test_w3_a_later_rounds_claim_leaves_the_earlier_round_to_be_told(world: World) -> None:
    world.end(A)  # round 1, buffered unread (b is live)
    world.revive(A)
    world.end(A)  # round 2, buffered too
    assert world.notices.claim(A, "wait")  # the wait took round 2 only
    world.end(B)
    await world.drained()
    assert [names for _p, names, _b in world.letters] == [["a#1", "b#1"]]


async def test_w4_claims_outlive_the_agent_and_are_per_round(world: World) -> None:
    world.end(A)
    world.notices.claim(A, "collect")
    world.end(B)
    await world.drained()
    assert [names for _p, names, _b in world.letters] == [["b#1"]]
    world.revive(A)  # resumed: a new agent, the old one's handle is long gone
    world.end(A)  # round 2 is a new result: it is told; round 1 stays told
    await world.drained()
    assert [names for _p, names, _b in world.letters] == [["b#1"], ["a#2"]]


async def test_a_notice_first_then_collect_claims_nothing_more(world: World) -> None:
    world.end(A)
    world.end(B)
    await world.drained()
    assert len(world.letters) == 1
    claim = world.notices.claimed(A)
    assert claim is not None and claim.via == "notice" and claim.message_id == 1
    assert not world.notices.claim(A, "collect", over="wait")  # a notice is not taken over
    assert not world.notices.claim(A, "wait")


async def test_a_wait_that_timed_out_claims_nothing(world: World) -> None:
    # A timed-out wait reports only live members: there is no round to claim yet.
    assert not world.notices.claim(A, "wait")
    world.end(A)
    world.end(B)
    await world.drained()
    assert [names for _p, names, _b in world.letters] == [["a#1", "b#1"]]


async def test_a_reply_that_never_arrived_hands_its_claim_back(world: World) -> None:
    world.end(A)
    with world.notices.answering():  # the reply was never sent (the socket closed)
        assert world.notices.claim(A, "wait")
    assert world.notices.claimed(A) is None
    world.end(B)
    await world.drained()
    assert [names for _p, names, _b in world.letters] == [["a#1", "b#1"]]


async def test_a_sent_reply_keeps_its_claim_and_a_lost_one_keeps_an_older_one(
    world: World,
) -> None:
    world.end(A)
    with world.notices.answering() as answer:
        world.notices.claim(A, "wait")
        answer.sent = True
    with world.notices.answering():  # a collect taking over the wait's claim, then lost
        assert world.notices.claim(A, "collect", over="wait")
    claim = world.notices.claimed(A)
    assert claim is not None and claim.via == "wait"  # the older delivery still stands
    world.end(B)
    await world.drained()
    assert [names for _p, names, _b in world.letters] == [["b#1"]]


async def test_a_stop_receipt_or_spawn_reply_tells_the_parent_instead(world: World) -> None:
    with world.notices.telling([A], "stop"):
        world.end(A, NodeStatus.RETIRED)
    claim = world.notices.claimed(A)
    assert claim is not None and claim.via == "stop"
    world.end(B)
    await world.drained()
    assert [names for _p, names, _b in world.letters] == [["b#1"]]


async def test_the_roots_notice_is_a_toast_that_claims_nothing(world: World) -> None:
    world.end(LEAD)
    await world.notices.drain()
    assert len(world.toasts) == 1 and world.toasts[0].startswith("Finished: lead ✓ ok")
    assert world.notices.claimed(LEAD) is None  # the user's `collect` still prints it all
    assert world.letters == []


async def test_a_refused_letter_claims_nothing(world: World) -> None:
    world.refuse = True
    world.end(A)
    world.end(B)
    await world.drained()
    assert world.notices.claimed(A) is None and world.notices.claimed(B) is None
