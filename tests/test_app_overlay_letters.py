"""The overlay's Mail tab opens a letter (issue 13): the list is a cursor and the
highlighted letter shows whole below it — sender, addressee, state and the full body,
not only the subject a row has room for."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_helpers import NOW, FakeOps, canned_model, fixed_clock, open_detail, write_run_files
from textual.widgets import Static

from legion_tui.dashboard.app import make_app
from legion_tui.model import MailKind, MailState, Urgency
from legion_tui.model_records import MailboxStats, Message
from legion_tui.state import LegionModel
from legion_tui.widgets.overlay.detail import DetailScreen
from legion_tui.widgets.overlay.detail_text import letter_text

pytestmark = pytest.mark.unit

BRIEF = "Build the parser.\nThe contract is in contract.md; write tests first."


def letter(id_: int, subject: str, body: str, at: float) -> Message:
    return Message(id_, "n1", "n2", MailKind.HANDOFF, Urgency.NORMAL, subject, body,
                   MailState.DELIVERED, at + 5, at)


def model_with_two_letters() -> LegionModel:
    model = canned_model()
    model.set_mail("n2", MailboxStats(delivered=2), [
        letter(7, "contract", BRIEF, NOW - 520),
        letter(9, "review", "Ready for review once the tests pass.", NOW - 100),
    ])
    return model


def body(detail: DetailScreen) -> str:
    return str(detail.query_one("#letter-body", Static).render())


async def test_the_mail_tab_opens_the_newest_letter_and_the_cursor_opens_another(
    tmp_path: Path,
) -> None:
    model = model_with_two_letters()
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False,
                   run_dir=write_run_files(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        detail = await open_detail(pilot, app, "n2")
        await pilot.press("3")  # the Mail tab
        await pilot.pause()
        opened = body(detail)
        assert "#9 handoff [normal] · delivered" in opened
        assert "from lead-api to worker-0" in opened
        assert "Ready for review once the tests pass." in opened
        await pilot.press("k")  # the older letter: its whole body, both lines
        await pilot.pause()
        opened = body(detail)
        assert "subject: contract" in opened
        assert "Build the parser." in opened and "write tests first." in opened
        # A letter arriving keeps the open one open.
        model.set_mail("n2", MailboxStats(delivered=3), [
            *model.nodes["n2"].messages, letter(11, "late", "one more thing", NOW - 10)])
        detail.model_changed(frozenset({"n2"}))
        await pilot.pause()
        assert "Build the parser." in body(detail)


def test_an_opened_letter_names_both_ends_and_says_when_it_has_no_body() -> None:
    names = {"n1": "lead-api", "n2": "worker-0"}
    text = letter_text(letter(3, "ping", "", NOW), names.__getitem__)
    lines = text.splitlines()
    assert lines[0].startswith("#3 handoff [normal] · delivered ")
    assert lines[1].startswith("from lead-api to worker-0 · sent ")
    assert lines[2:] == ["subject: ping", "", "(no body)"]
