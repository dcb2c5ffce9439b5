"""The postman on a real ledger file, with real session files as delivery evidence."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from ledger_helpers import ledger_fixture  # noqa: F401 (a fixture)
from mail_helpers import SessionFile, make_node

from legion_tui.ledger.ledger import Ledger
from legion_tui.mail.postman import CONFIRM_BATCH, ModelDirectory, Postman
from legion_tui.model import (
    MAIL_MOVES,
    EventType,
    IllegalMailMove,
    MailKind,
    MailState,
    NodeStatus,
    Urgency,
)
from legion_tui.model_records import Message, Node
from legion_tui.state import LegionModel

pytestmark = pytest.mark.unit

PHASE_SINCE = 1_764_424_000.0


class Inbox:
    """The recipients' side of the hand-over: what each was given, and whether it can take."""

    def __init__(self) -> None:
        self.given: list[tuple[str, str]] = []
        self.closed: set[str] = set()
        self.broken: set[str] = set()

    async def __call__(self, node: Node, envelope: str) -> bool:
        if node.id in self.broken:
            raise ConnectionError("pipe closed")
        if node.id in self.closed:
            return False
        self.given.append((node.id, envelope))
        return True

    def to(self, node_id: str) -> list[str]:
        return [text for nid, text in self.given if nid == node_id]


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[dict[str, SessionFile]]:
    files = {nid: SessionFile(tmp_path / f"{nid}.jsonl") for nid in ("root", "lead", "w0", "w1")}
    yield files
    for f in files.values():
        f.close()


@pytest.fixture
def model(sessions: dict[str, SessionFile]) -> LegionModel:
    m = LegionModel("run-1", "main", clock=lambda: PHASE_SINCE)
    m.upsert(make_node("root", None, "root", role="root", session_file=sessions["root"].path))
    m.upsert(
        make_node(
            "lead",
            "root",
            "root/lead",
            role="centurion",
            phase="implementing",
            phase_since=PHASE_SINCE,
            session_file=sessions["lead"].path,
        )
    )
    m.upsert(make_node("w0", "lead", "root/lead/w0", session_file=sessions["w0"].path))
    m.upsert(make_node("w1", "lead", "root/lead/w1", session_file=sessions["w1"].path))
    return m


@pytest.fixture
def inbox() -> Inbox:
    return Inbox()


@pytest.fixture
def postman(ledger: Ledger, model: LegionModel, inbox: Inbox) -> Postman:
    return Postman(ledger, ModelDirectory(model), inbox)


async def send(ledger: Ledger, frm: str, to: str, body: str = "hello", **kw: object) -> Message:
    return await ledger.send_mail(
        frm,
        to,
        kw.get("kind", MailKind.REPORT),
        kw.get("urgency", Urgency.NORMAL),  # type: ignore[arg-type]
        str(kw.get("subject", "news")),
        body,
    )


async def state_of(ledger: Ledger, message_id: int) -> MailState:
    for m in (
        await ledger.get_messages("w0", direction="both")
        + await ledger.get_messages("lead", direction="both")
        + await ledger.get_messages("root", direction="both")
    ):
        if m.id == message_id:
            return m.delivered
    raise AssertionError(f"no message {message_id}")


def set_status(model: LegionModel, node_id: str, **fields: object) -> None:
    model.upsert(replace(model.nodes[node_id].node, **fields))  # type: ignore[arg-type]


# ----- the five states on the real ledger ------------------------------------------------


@pytest.mark.parametrize("start", list(MailState))
@pytest.mark.parametrize("target", list(MailState))
async def test_every_move_is_legal_or_refused_on_the_ledger(
    ledger: Ledger, start: MailState, target: MailState
) -> None:
    letter = await send(ledger, "w0", "lead")
    path = {
        MailState.PENDING: [],
        MailState.ACCEPTED: [MailState.ACCEPTED],
        MailState.BOUNCED: [MailState.BOUNCED],
        MailState.DELIVERED: [MailState.ACCEPTED, MailState.DELIVERED],
        MailState.OBSOLETE: [MailState.OBSOLETE],
    }[start]
    for step in path:
        await ledger.move_mail(letter.id, step)
    events_before = len(await ledger.get_events("w0"))
    if target == start or target in MAIL_MOVES[start]:
        moved = await ledger.move_mail(letter.id, target)
        assert moved.delivered is target
    else:
        with pytest.raises(IllegalMailMove):
            await ledger.move_mail(letter.id, target)
        assert await state_of(ledger, letter.id) is start
        assert len(await ledger.get_events("w0")) == events_before  # nothing half-written


# ----- delivery -------------------------------------------------------------------------


async def test_pending_is_handed_over_then_accepted_and_not_confirmed_in_the_same_tick(
    ledger: Ledger,
    postman: Postman,
    inbox: Inbox,
    sessions: dict[str, SessionFile],
    model: LegionModel,
) -> None:
    letter = await send(ledger, "w0", "lead", "the contract is frozen")
    envelope = postman.envelope(letter)
    assert envelope.startswith(f"[legion mail #{letter.id}]\nFrom: root/lead/w0\n")
    # Even with the evidence already present, the letter must sit ACCEPTED for a tick.
    sessions["lead"].user(envelope)
    sessions["lead"].publish(model, "lead")

    report = await postman.tick("lead")
    assert report.accepted == [letter.id] and report.delivered == []
    assert inbox.to("lead") == [envelope]
    assert await state_of(ledger, letter.id) is MailState.ACCEPTED

    report = await postman.tick("lead")
    assert report.delivered == [letter.id]
    assert await state_of(ledger, letter.id) is MailState.DELIVERED
    assert inbox.to("lead") == [envelope]  # handed over exactly once
    delivered = await ledger.get_events("w0", types=[EventType.MAIL_DELIVERED])
    assert [e.data["message_id"] for e in delivered] == [letter.id]


async def test_delivered_only_on_the_exact_envelope(
    ledger: Ledger, postman: Postman, sessions: dict[str, SessionFile], model: LegionModel
) -> None:
    body = "please run the migration"
    letter = await send(ledger, "lead", "w0", body)
    twin = await send(ledger, "lead", "w0", body)  # a different letter, the same body
    await postman.tick("w0")
    envelope = postman.envelope(letter)

    session = sessions["w0"]
    session.user(body)  # the body alone
    session.user(f"you wrote:\n> {envelope}")  # quoting it
    session.user(envelope + "\n")  # almost: a trailing newline
    session.user(envelope.replace(f"#{letter.id}", f"#{twin.id}"))  # the twin's envelope…
    session.publish(model, "w0")
    report = await postman.tick("w0")
    # …is the twin's real envelope, which confirms the twin and only the twin
    assert report.delivered == [twin.id]
    assert await state_of(ledger, letter.id) is MailState.ACCEPTED

    session.user(envelope)
    session.publish(model, "w0")
    assert (await postman.tick("w0")).delivered == [letter.id]


async def test_evidence_older_than_the_last_20_user_turns_does_not_count(
    ledger: Ledger, postman: Postman, sessions: dict[str, SessionFile], model: LegionModel
) -> None:
    letter = await send(ledger, "lead", "w0")
    await postman.tick("w0")
    sessions["w0"].user(postman.envelope(letter))
    for i in range(20):
        sessions["w0"].user(f"later turn {i}")
    sessions["w0"].publish(model, "w0")
    assert (await postman.tick("w0")).delivered == []
    assert await state_of(ledger, letter.id) is MailState.ACCEPTED


async def test_mail_to_an_ended_recipient_bounces_and_a_paused_one_waits(
    ledger: Ledger, postman: Postman, inbox: Inbox, model: LegionModel
) -> None:
    set_status(model, "w1", status=NodeStatus.SETTLED)
    letter = await send(ledger, "w0", "w1")
    report = await postman.tick("w1")
    assert report.bounced == [letter.id] and inbox.to("w1") == []
    assert await state_of(ledger, letter.id) is MailState.BOUNCED
    bounced = await ledger.get_events("w0", types=[EventType.MAIL_BOUNCED])
    assert bounced[-1].data["reason"] == "recipient_ended"

    # retired by a session shutdown (interrupted): a pause, the letter waits for resume
    set_status(model, "w1", status=NodeStatus.RETIRED)
    model.mark_interrupted("w1")
    inbox.closed.add("w1")
    waiting = await send(ledger, "w0", "w1")
    assert (await postman.tick("w1")).bounced == []
    assert await state_of(ledger, waiting.id) is MailState.PENDING
    inbox.closed.discard("w1")
    set_status(model, "w1", status=NodeStatus.RUNNING)
    assert (await postman.tick("w1")).accepted == [waiting.id]

    # stopped on purpose: retired and not interrupted is ended
    set_status(model, "w1", status=NodeStatus.RETIRED)
    model.mark_interrupted("w1", False)
    late = await send(ledger, "w0", "w1")
    assert (await postman.tick("w1")).bounced == [late.id]


@pytest.mark.parametrize("kind", ["pi", "claude", "codex"])
async def test_mail_to_a_settled_real_agent_wakes_it_and_one_without_its_session_bounces(
    ledger: Ledger, postman: Postman, inbox: Inbox, model: LegionModel, kind: str
) -> None:
    """A settled agent of a real kind goes on when told (issue 31 item 4): its letter is
    handed over (its handle, or a wake on its session); with its session file gone there
    is nothing to go on from, and the letter bounces."""
    set_status(model, "w1", status=NodeStatus.SETTLED, kind=kind)
    letter = await send(ledger, "w0", "w1")
    assert (await postman.tick("w1")).accepted == [letter.id]
    assert inbox.to("w1") == [postman.envelope(letter)]
    os.unlink(model.nodes["w1"].node.session_file or "")
    late = await send(ledger, "w0", "w1")
    assert (await postman.tick("w1")).bounced == [late.id]


async def test_a_handed_over_letter_is_never_bounced(
    ledger: Ledger, postman: Postman, model: LegionModel
) -> None:
    letter = await send(ledger, "w0", "w1")
    await postman.tick("w1")
    set_status(model, "w1", status=NodeStatus.FAILED)
    report = await postman.tick("w1")
    assert report.bounced == []
    assert await state_of(ledger, letter.id) is MailState.ACCEPTED


async def test_a_broken_channel_keeps_the_letter_pending_and_retries(
    ledger: Ledger, postman: Postman, inbox: Inbox
) -> None:
    inbox.broken.add("w1")
    letter = await send(ledger, "w0", "w1")
    assert (await postman.tick("w1")).accepted == []
    assert await state_of(ledger, letter.id) is MailState.PENDING
    inbox.broken.clear()
    assert (await postman.tick("w1")).accepted == [letter.id]
    assert len(inbox.to("w1")) == 1


async def test_unknown_recipient_is_left_alone(ledger: Ledger, postman: Postman) -> None:
    letter = await send(ledger, "w0", "ghost")
    report = await postman.tick("ghost")
    assert report.accepted == report.bounced == []
    assert (await ledger.get_pending_mail("ghost", [MailState.PENDING]))[0].id == letter.id


# ----- the rotating cursor ---------------------------------------------------------------


async def test_twenty_undecidable_letters_cannot_block_the_21st(
    ledger: Ledger, postman: Postman, sessions: dict[str, SessionFile], model: LegionModel
) -> None:
    letters = [await send(ledger, "lead", "w0", f"letter {i}") for i in range(CONFIRM_BATCH + 1)]
    await postman.tick("w0")  # all 21 handed over → ACCEPTED
    last = letters[-1]
    sessions["w0"].user(postman.envelope(last))  # only the 21st was ever read
    sessions["w0"].publish(model, "w0")

    first = await postman.tick("w0")
    assert first.checked == [m.id for m in letters[:CONFIRM_BATCH]]
    assert first.delivered == []
    second = await postman.tick("w0")
    assert second.checked == [last.id]
    assert second.delivered == [last.id]
    third = await postman.tick("w0")  # wraps back to the start
    assert third.checked == [m.id for m in letters[:CONFIRM_BATCH]]


# ----- Phase timeout: notices ------------------------------------------------------------


async def timeout_notice(
    ledger: Ledger,
    phase: str = "implementing",
    since: float = PHASE_SINCE,
    kind: MailKind = MailKind.NOTICE,
    with_event: bool = True,
) -> Message:
    letter = await ledger.send_mail(
        "lead",
        "root",
        kind,
        Urgency.ACTION_NEEDED,
        f"Phase timeout: lead in {phase} for 01:00:00",
        "advisory",
    )
    if with_event:
        await ledger.append_event(
            "lead",
            EventType.PHASE_TIMEOUT,
            {"phase": phase, "phase_since": since, "message_id": letter.id},
        )
    return letter


async def test_stale_notice_becomes_obsolete_before_hand_over(
    ledger: Ledger, postman: Postman, inbox: Inbox, model: LegionModel
) -> None:
    letter = await timeout_notice(ledger)
    set_status(model, "lead", phase="reviewing", phase_since=PHASE_SINCE + 60)
    report = await postman.tick("root")
    assert report.obsolete == [letter.id] and inbox.to("root") == []
    assert await state_of(ledger, letter.id) is MailState.OBSOLETE
    bounced = await ledger.get_events("lead", types=[EventType.MAIL_BOUNCED])
    assert bounced[-1].data["reason"] == "obsolete_after_phase_change"


async def test_stale_notice_becomes_obsolete_after_hand_over(
    ledger: Ledger, postman: Postman, inbox: Inbox, model: LegionModel
) -> None:
    letter = await timeout_notice(ledger)
    assert (await postman.tick("root")).accepted == [letter.id]  # still current: delivered
    # the team re-enters the same phase: a new stint (phase_since moved)
    set_status(model, "lead", phase_since=PHASE_SINCE + 120)
    assert (await postman.tick("root")).obsolete == [letter.id]
    assert len(inbox.to("root")) == 1


async def test_notice_of_a_team_that_ended_in_that_phase_is_obsolete(
    ledger: Ledger, postman: Postman, model: LegionModel
) -> None:
    letter = await timeout_notice(ledger)
    set_status(model, "lead", status=NodeStatus.SETTLED)  # phase and phase_since unchanged
    assert (await postman.tick("root")).obsolete == [letter.id]


async def test_current_notice_and_other_kinds_are_never_made_obsolete(
    ledger: Ledger, postman: Postman, model: LegionModel
) -> None:
    current = await timeout_notice(ledger)
    guessed = await timeout_notice(ledger, with_event=False)  # no phase_timeout event
    question = await timeout_notice(ledger, kind=MailKind.QUESTION)
    report = await postman.tick("root")  # the stint is still current: all handed over
    assert sorted(report.accepted) == sorted([current.id, guessed.id, question.id])
    set_status(model, "lead", phase="reviewing", phase_since=PHASE_SINCE + 60)
    report = await postman.tick("root")
    assert report.obsolete == [current.id]  # no event → never guess; a question never expires
    assert await state_of(ledger, guessed.id) is MailState.ACCEPTED
    assert await state_of(ledger, question.id) is MailState.ACCEPTED


async def test_delivered_wins_over_obsolete(
    ledger: Ledger, postman: Postman, sessions: dict[str, SessionFile], model: LegionModel
) -> None:
    letter = await timeout_notice(ledger)
    await postman.tick("root")
    sessions["root"].user(postman.envelope(letter))
    sessions["root"].publish(model, "root")
    set_status(model, "lead", phase="reviewing", phase_since=PHASE_SINCE + 60)
    assert (await postman.tick("root")).delivered == [letter.id]


# ----- take_pending (wait/collect early return) ------------------------------------------


async def test_take_pending_returns_each_letter_exactly_once(
    ledger: Ledger, postman: Postman, inbox: Inbox
) -> None:
    letters = [await send(ledger, "w0", "lead", f"n{i}") for i in range(3)]
    async with postman.hold("lead"):
        assert (await postman.tick("lead")).accepted == []  # held: the wait takes it
        results = await asyncio.gather(
            postman.take_pending("lead"), postman.take_pending("lead"), postman.tick("lead")
        )
    first, second, _ = results
    taken = [m.id for m in first.messages] + [m.id for m in second.messages]
    assert sorted(taken) == [m.id for m in letters]
    assert inbox.to("lead") == []
    whole = first if first else second
    details = whole.details()
    assert details["state"] == "mail"
    assert details["text"].startswith(f"[legion mail #{letters[0].id}]")
    for m in letters:
        assert await state_of(ledger, m.id) is MailState.ACCEPTED
    assert not await postman.take_pending("lead")
    assert (await postman.tick("lead")).accepted == []  # nothing left to hand over


async def test_take_pending_drops_a_stale_notice_instead_of_returning_it(
    ledger: Ledger, postman: Postman, model: LegionModel
) -> None:
    stale = await timeout_notice(ledger)
    fresh = await send(ledger, "lead", "root", "real news")
    set_status(model, "lead", phase="reviewing", phase_since=PHASE_SINCE + 60)
    take = await postman.take_pending("root")
    assert [m.id for m in take.messages] == [fresh.id]
    assert await state_of(ledger, stale.id) is MailState.OBSOLETE


async def test_the_loop_keeps_ticking_past_a_failing_recipient(
    ledger: Ledger, postman: Postman, inbox: Inbox
) -> None:
    letter = await send(ledger, "w0", "w1")

    def recipients() -> list[str]:
        return ["nobody-raises", "w1"]

    async def broken_tick(recipient: str) -> object:
        if recipient == "nobody-raises":
            raise RuntimeError("boom")
        return await real_tick(recipient)

    real_tick = postman.tick
    postman.tick = broken_tick  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(postman.run(recipients, interval=0.01))
    try:
        # Until the tick has ended, not only handed the letter over: the ACCEPTED write
        # comes a step after the hand-over (a soak run under load cancelled in between).
        for _ in range(500):
            if await state_of(ledger, letter.id) is MailState.ACCEPTED:
                break
            await asyncio.sleep(0.01)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert await state_of(ledger, letter.id) is MailState.ACCEPTED
    assert len(inbox.to("w1")) == 1


class FlakyLedger:
    """The real ledger, but the next ACCEPTED write fails (a full disk, a closed writer)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.fail_next_accept = True

    def __getattr__(self, name: str) -> object:
        return getattr(self.ledger, name)

    async def move_mail(
        self, message_id: int, state: MailState, *, reason: str | None = None
    ) -> Message:
        if state is MailState.ACCEPTED and self.fail_next_accept:
            self.fail_next_accept = False
            raise OSError("disk full")
        return await self.ledger.move_mail(message_id, state, reason=reason)


@pytest.mark.parametrize("second_pass", ["tick", "take_pending"])
async def test_a_failed_accepted_write_never_hands_the_letter_over_twice(
    ledger: Ledger, model: LegionModel, inbox: Inbox, second_pass: str
) -> None:
    postman = Postman(FlakyLedger(ledger), ModelDirectory(model), inbox)  # type: ignore[arg-type]
    letter = await send(ledger, "w0", "w1")
    with pytest.raises(OSError):
        await postman.tick("w1")
    assert len(inbox.to("w1")) == 1
    assert await state_of(ledger, letter.id) is MailState.PENDING
    if second_pass == "tick":
        assert (await postman.tick("w1")).accepted == [letter.id]
    else:
        assert not await postman.take_pending("w1")  # it was handed over already
    assert len(inbox.to("w1")) == 1
    assert await state_of(ledger, letter.id) is MailState.ACCEPTED
