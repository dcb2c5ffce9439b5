"""Letters that move reach the live model at once: the events the ledger writes for them
(mail_sent, mail_delivered, mail_bounced) land in the sender's Events tab and both ends'
counts refresh — without reopening anything."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from ledger_helpers import ledger_fixture  # noqa: F401 (a fixture)
from mail_helpers import Handle, mail_record, make_node

from legion_tui.ledger.ledger import Ledger
from legion_tui.mail.service import MailService
from legion_tui.model import EventType, MailKind, MailState, NodeStatus, Urgency
from legion_tui.session.progress import SessionProgress
from legion_tui.state import LegionModel

pytestmark = pytest.mark.unit


@pytest.fixture
def model(tmp_path: Path) -> LegionModel:
    m = LegionModel("run-1", "main")
    m.upsert(make_node("root", None, "root", role="root"))
    m.upsert(make_node("a", "root", "root/lead-a", role="centurion"))
    m.upsert(make_node("a0", "a", "root/lead-a/w0", session_file=tmp_path / "a0.jsonl"))
    m.upsert(make_node("a1", "a", "root/lead-a/w1", session_file=tmp_path / "a1.jsonl"))
    return m


def _types(model: LegionModel, node_id: str) -> list[EventType]:
    return [e.type for e in model.nodes[node_id].events]


async def test_a_delivered_letter_shows_in_the_senders_events_and_both_counts(
    ledger: Ledger, model: LegionModel
) -> None:
    handles = {"a0": Handle(), "a1": Handle()}
    service = MailService(mail_record(ledger, model), model, handles.get, tick=0.01)
    await service.round()  # the first round is a full sweep; the next ones are not
    reply = await service.send("a", "w0", "Handoff: w0", "your part", kind="handoff")
    assert reply["state"] == "accepted"
    (sent,) = [e for e in model.nodes["a"].events if e.type is EventType.MAIL_SENT]
    assert sent.data["message_id"] == reply["message_id"]
    assert model.nodes["a0"].mail.accepted == 1
    # The recipient reads it as a user message (its session shows the exact envelope).
    (envelope,) = handles["a0"].inbox
    progress = SessionProgress()
    progress.recent_user_texts.append(envelope)
    model.set_progress("a0", progress)
    await service.round()  # not a full sweep: the open letter is looked at anyway
    assert model.nodes["a0"].mail.delivered == 1 and model.nodes["a0"].mail.accepted == 0
    assert [m.delivered for m in model.nodes["a0"].messages] == [MailState.DELIVERED]
    assert _types(model, "a") == [EventType.MAIL_SENT, EventType.MAIL_DELIVERED]
    # The ledger holds exactly the same events (the model shows them, it made none up).
    stored = await ledger.get_events("a")
    assert [(e.id, e.type) for e in stored] == [(e.id, e.type) for e in model.nodes["a"].events]


async def test_a_bounced_letter_shows_at_once(ledger: Ledger, model: LegionModel) -> None:
    model.upsert(replace(model.nodes["a1"].node, status=NodeStatus.SETTLED))
    service = MailService(mail_record(ledger, model), model, {"a0": Handle()}.get, tick=0.01)
    reply = await service.send("a0", "w1", "Question", "which file?", kind="question")
    assert reply["state"] == "bounced"
    assert _types(model, "a0") == [EventType.MAIL_SENT, EventType.MAIL_BOUNCED]
    assert model.nodes["a1"].mail.bounced == 1


async def test_a_repeated_move_echoes_nothing_twice(ledger: Ledger, model: LegionModel) -> None:
    echo = mail_record(ledger, model)
    message = await echo.send_mail("a", "a0", MailKind.HANDOFF, Urgency.NORMAL, "Hi", "body")
    await echo.move_mail(message.id, MailState.ACCEPTED)
    await echo.move_mail(message.id, MailState.DELIVERED)
    await echo.move_mail(message.id, MailState.DELIVERED)  # the same state: a no-op
    assert _types(model, "a") == [EventType.MAIL_SENT, EventType.MAIL_DELIVERED]
    event = await echo.append_event("a", EventType.PHASE_TIMEOUT, {"phase": "planning"})
    assert model.nodes["a"].events[-1] == event


async def test_a_node_row_written_through_the_echo_is_the_models(
    ledger: Ledger, model: LegionModel
) -> None:
    lead = replace(model.nodes["a"].node, phase="planning", phase_since=100.0)
    await ledger.insert_nodes([lead])
    echo = mail_record(ledger, model)
    written = await echo.update_node("a", phase_since=250.0)
    assert written.phase_since == 250.0
    assert model.nodes["a"].node == written == await ledger.get_node("a")
