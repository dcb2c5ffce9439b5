"""SPEC §10 'text from an agent … with control sequences': made inert before any screen
(legion_tui.inert) — in the session's folded text, the transcript, notes and toasts, and
the bytes the dashboard writes to the terminal (issue 30, items 4 and 5; the mail half is
in test_mail_service)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_helpers import ansi_output, canned_app, capture, open_detail

from legion_tui.inert import inert, inert_counted
from legion_tui.session.reader import read_session
from legion_tui.session.transcript import render_line

pytestmark = pytest.mark.unit

OSC_TITLE = "\x1b]0;pwned\x07"
OSC_CLIPBOARD = "\x1b]52;c;SEVJTA==\x07"
CLEAR = "\x1b[2J"
HOSTILE = OSC_TITLE + OSC_CLIPBOARD + CLEAR + "\x9b31m"  # the last: C1 CSI


def test_every_control_character_but_newline_and_tab_is_made_visible() -> None:
    assert inert("plain\n\ttext — ✓") == "plain\n\ttext — ✓"
    assert inert(HOSTILE) == "␛]0;pwned␇␛]52;c;SEVJTA==␇␛[2J\ufffd31m"
    assert inert("\x00\x7f\r") == "␀␡␍"
    assert inert_counted(HOSTILE * 2) == (inert(HOSTILE) * 2, 12)


def _assistant_line(text: str, tool: str) -> str:
    return json.dumps({
        "type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T00:00:00Z",
        "message": {
            "role": "assistant", "timestamp": 1, "stopReason": "toolUse",
            "content": [{"type": "text", "text": text},
                        {"type": "toolCall", "id": "t1", "name": tool, "arguments": {}}],
        },
    })  # fmt: skip


def test_a_session_s_text_and_tool_names_are_inert_once_read(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00Z",
              "cwd": "/"}  # fmt: skip
    line = _assistant_line(f"hello {HOSTILE}", f"bash{OSC_TITLE}")
    session.write_text(json.dumps(header) + "\n" + line + "\n")
    progress = read_session(session)
    assert progress.last_text == "hello " + inert(HOSTILE)
    assert [t.name for t in progress.in_flight] == ["bash␛]0;pwned␇"]
    item = render_line(2, line.encode())
    assert "\x1b" not in item.text and not any("\x1b" in t for t in item.tools)


async def test_the_bytes_written_to_the_terminal_carry_no_agent_escape() -> None:
    app = canned_app()
    capture(app)
    model = app.model
    root = next(v.node.id for v in model.nodes.values() if v.node.parent_id is None)
    other = next(nid for nid in model.nodes if nid != root)
    async with app.run_test(headless=False, size=(160, 50), notifications=True) as pilot:
        model.announce(root, f"Finished: lead-0 {HOSTILE}")  # a notice's subject
        model.set_note(other, f"note {HOSTILE}")
        model.flush()
        app.say(f"toast {HOSTILE}", title=f"title {OSC_TITLE}")
        await pilot.pause()
        await open_detail(pilot, app, other)
        await pilot.pause()
        out = ansi_output(app)
    assert "pwned" in out  # the text was drawn…
    for raw in (OSC_TITLE, "\x1b]52;", CLEAR, "\x9b"):
        assert raw not in out  # …and nothing of it reached the terminal as a sequence
