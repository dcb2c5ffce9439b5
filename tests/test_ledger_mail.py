"""Mail in the ledger: the five-state move matrix and the MAIL_INVALID_TEXT refusals."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_helpers import ledger_fixture  # noqa: F401 (a fixture)

from legion_tui.ledger import (
    BODY_MAX_BYTES,
    SUBJECT_MAX_CHARS,
    Ledger,
    MailInvalidText,
    NotFound,
    open_ledger,
)
from legion_tui.model import MAIL_MOVES, EventType, IllegalMailMove, MailKind, MailState, Urgency
from legion_tui.model_records import Message

pytestmark = pytest.mark.unit

# The legal path from PENDING to each state (model.MAIL_MOVES is the authority).
PATH_TO: dict[MailState, tuple[MailState, ...]] = {
    MailState.PENDING: (),
    MailState.ACCEPTED: (MailState.ACCEPTED,),
    MailState.BOUNCED: (MailState.BOUNCED,),
    MailState.DELIVERED: (MailState.ACCEPTED, MailState.DELIVERED),
    MailState.OBSOLETE: (MailState.OBSOLETE,),
}
EXPECTED_EVENT: dict[MailState, tuple[EventType, str | None] | None] = {
    MailState.ACCEPTED: None,  # the mail_sent row already says "sent"
    MailState.DELIVERED: (EventType.MAIL_DELIVERED, None),
    MailState.BOUNCED: (EventType.MAIL_BOUNCED, None),
    MailState.OBSOLETE: (EventType.MAIL_BOUNCED, "obsolete_after_phase_change"),
}


async def _letter_in(ledger: Ledger, state: MailState) -> Message:
    message = await ledger.send_mail("a", "b", MailKind.NOTICE, Urgency.NORMAL, "s", "b")
    for step in PATH_TO[state]:
        message = await ledger.move_mail(message.id, step)
    assert message.delivered is state
    return message


async def _delivery_events(ledger: Ledger, message_id: int) -> list[tuple[EventType, object]]:
    events = await ledger.get_events(
        types=[EventType.MAIL_DELIVERED, EventType.MAIL_BOUNCED], limit=10_000
    )
    return [(e.type, e.data.get("reason")) for e in events if e.data["message_id"] == message_id]


@pytest.mark.parametrize(
    ("current", "target"), list(itertools.product(MailState, MailState)), ids=str
)
async def test_every_delivery_move(ledger: Ledger, current: MailState, target: MailState) -> None:
    letter = await _letter_in(ledger, current)
    events_before = await _delivery_events(ledger, letter.id)
    if target == current:
        assert await ledger.move_mail(letter.id, target) == letter  # no-op, nothing written
        assert await _delivery_events(ledger, letter.id) == events_before
    elif target in MAIL_MOVES[current]:
        moved = await ledger.move_mail(letter.id, target)
        assert moved.delivered is target
        assert moved.delivered_at is not None and moved.delivered_at > letter.created_at
        expected = EXPECTED_EVENT[target]
        after = await _delivery_events(ledger, letter.id)
        assert after == events_before + ([expected] if expected else [])
    else:
        with pytest.raises(IllegalMailMove):
            await ledger.move_mail(letter.id, target)
        assert await _delivery_events(ledger, letter.id) == events_before
    stored = await ledger.get_messages("b", direction="in")
    assert stored[-1].delivered is (target if target in MAIL_MOVES[current] else current)


async def test_the_matrix_matches_the_spec() -> None:
    legal = {(a.value, b.value) for a in MailState for b in MAIL_MOVES[a]}
    assert legal == {(0, 1), (0, 2), (0, 4), (1, 3), (1, 4)}


async def test_delivery_events_name_the_sender_and_carry_a_given_reason(ledger: Ledger) -> None:
    letter = await ledger.send_mail("a", "b", MailKind.QUESTION, Urgency.NORMAL, "s", "b")
    await ledger.move_mail(letter.id, MailState.BOUNCED, reason="intercepted_by_input_handler")
    (event,) = await ledger.get_events(types=[EventType.MAIL_BOUNCED])
    assert event.node_id == "a"
    assert event.data == {
        "message_id": letter.id,
        "from": "a",
        "to": "b",
        "state": "bounced",
        "reason": "intercepted_by_input_handler",
    }


async def test_move_of_an_unknown_letter(ledger: Ledger) -> None:
    with pytest.raises(NotFound, match="no message 41"):
        await ledger.move_mail(41, MailState.ACCEPTED)


async def _nothing_stored(ledger: Ledger) -> None:
    assert await ledger.get_messages("a") == []
    assert await ledger.get_messages("b") == []
    assert await ledger.get_events() == []


@pytest.mark.parametrize(
    ("subject", "body", "field", "offset"),
    [
        ("bad\x00subject", "fine", "subject", 3),
        ("\x00", "fine", "subject", 0),
        ("fine", "hello world\x00tail", "body", 11),
        ("fine", "é" * 12 + "\x00", "body", 12),  # a character offset, not a byte offset
    ],
)
async def test_nul_is_refused_with_field_and_offset(
    ledger: Ledger, subject: str, body: str, field: str, offset: int
) -> None:
    before = ledger.stats.transactions
    with pytest.raises(MailInvalidText) as caught:
        await ledger.send_mail("a", "b", MailKind.REPORT, Urgency.NORMAL, subject, body)
    err = caught.value
    assert (err.code, err.field, err.offset) == ("MAIL_INVALID_TEXT", field, offset)
    assert str(err) == f"MAIL_INVALID_TEXT: {field} contains U+0000 at offset {offset} " + (
        "(NUL is not supported)"
    )
    assert isinstance(err, ValueError)
    assert ledger.stats.transactions == before  # refused before anything was queued
    await _nothing_stored(ledger)


async def test_unpaired_surrogate_is_refused(ledger: Ledger) -> None:
    with pytest.raises(MailInvalidText) as caught:
        await ledger.send_mail("a", "b", MailKind.REPORT, Urgency.NORMAL, "s", "ab\ud800")
    assert (caught.value.field, caught.value.offset) == ("body", 2)
    await _nothing_stored(ledger)


async def test_over_long_text_is_refused_at_the_limit(ledger: Ledger) -> None:
    too_long = [
        ("x" * (SUBJECT_MAX_CHARS + 1), "b", "subject", SUBJECT_MAX_CHARS),
        ("s", "x" * (BODY_MAX_BYTES + 1), "body", BODY_MAX_BYTES),
        # 32 769 characters, but 65 538 bytes of UTF-8: the body limit counts bytes
        ("s", "é" * (BODY_MAX_BYTES // 2 + 1), "body", BODY_MAX_BYTES),
    ]
    for subject, body, field, offset in too_long:
        with pytest.raises(MailInvalidText) as caught:
            await ledger.send_mail("a", "b", MailKind.REPORT, Urgency.NORMAL, subject, body)
        assert (caught.value.field, caught.value.offset) == (field, offset)
        assert str(caught.value).startswith(f"MAIL_INVALID_TEXT: {field} is ")
    await _nothing_stored(ledger)
    # Exactly at the limits is fine, and stored whole.
    subject, body = "s" * SUBJECT_MAX_CHARS, "é" * (BODY_MAX_BYTES // 2)
    sent = await ledger.send_mail("a", "b", MailKind.REPORT, Urgency.NORMAL, subject, body)
    (stored,) = await ledger.get_messages("b")
    assert stored == sent and stored.body == body and stored.subject == subject


async def test_unknown_kind_or_urgency_is_refused_before_queueing(ledger: Ledger) -> None:
    with pytest.raises(ValueError):
        await ledger.send_mail("a", "b", "gossip", Urgency.NORMAL, "s", "b")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        await ledger.send_mail("a", "b", MailKind.NOTICE, "urgent", "s", "b")  # type: ignore[arg-type]
    await _nothing_stored(ledger)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)


@settings(max_examples=40)
@given(subject=_TEXT, body=_TEXT)
def test_any_text_is_stored_whole_or_refused_at_its_first_nul(
    tmp_path_factory: pytest.TempPathFactory, subject: str, body: str
) -> None:
    path = tmp_path_factory.mktemp("mail") / "legion.db"

    async def send() -> tuple[Message | MailInvalidText, list[Message]]:
        async with await open_ledger(path, create=True) as ledger:
            try:
                result: Message | MailInvalidText = await ledger.send_mail(
                    "a", "b", MailKind.REPORT, Urgency.NORMAL, subject, body
                )
            except MailInvalidText as err:
                result = err
            return result, await ledger.get_messages("b")

    result, stored = asyncio.run(send())
    bad = [(f, t.find("\x00")) for f, t in (("subject", subject), ("body", body)) if "\x00" in t]
    if not bad and len(subject) <= SUBJECT_MAX_CHARS:
        assert isinstance(result, Message)
        assert [(m.subject, m.body) for m in stored] == [(subject, body)]
    else:
        assert isinstance(result, MailInvalidText) and stored == []
        if bad:
            assert (result.field, result.offset) == bad[0]
