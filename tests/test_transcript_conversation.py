"""The Transcript tab shows the conversation and hides the agents' internal records
(issue 32 item 5): the rule, the index that applies it without decoding most lines, and
the overlay's `v` that shows every line again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from app_helpers import FakeOps, canned_model, fixed_clock, open_detail, write_run_files
from hypothesis import given
from hypothesis import strategies as st

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.session import transcript
from legion_tui.session.conversation import (
    conversation,
    conversation_lines,
    decode_line,
    first_format,
)
from legion_tui.session.formats import Format
from legion_tui.session.transcript import TranscriptPager
from legion_tui.widgets.overlay.transcript_view import TranscriptView

pytestmark = pytest.mark.unit

FIXTURES = Path("/work/shared/fixtures")
CLAUDE = FIXTURES / "claude-code" / "claude-session-tool-roundtrip.jsonl"
CODEX = FIXTURES / "codex" / "codex-rollout-exec-then-2-resumes.jsonl"
PI = FIXTURES / "pi-sessions" / "prpilot_real_pi_transcript_v3.jsonl"
EVERY_FIXTURE = sorted(FIXTURES.glob("*/*.jsonl"))


def shown(items: list[transcript.TranscriptItem]) -> list[tuple[int, str, str, tuple[str, ...]]]:
    return [(i.line, i.role, i.text.split("\n")[0], i.tools) for i in items]


def by_rule(data: bytes, fmt: Format) -> list[bool]:
    """Each line decoded and judged by the rule (the slow, exact way)."""
    return [conversation(fmt, decode_line(raw.rstrip(b"\r"), fmt)) for raw in data.splitlines()]


def by_index(data: bytes, fmt: Format) -> list[bool]:
    """The same lines through the fast path the pager uses."""
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A)
    starts = np.concatenate([[0], ends[:-1] + 1])
    return conversation_lines(data, starts, ends, fmt).tolist()


# ----- what is shown ------------------------------------------------------------------------
def test_claude_code_shows_the_prompt_the_replies_the_tool_call_and_its_result() -> None:
    pager = TranscriptPager(CLAUDE)
    assert shown(pager.conversation_page(0, 100)) == [
        (2, "user", "RUNTOOL: please create hi.txt", ()),
        (19, "assistant", "I'll run it.", ()),
        (20, "assistant", "", ('Bash(command="echo hi > hi.txt", '
                               'description="Run the scripted command")',)),
        (21, "toolResult", "(Bash completed with no output)", ("?",)),
        (26, "assistant", "I ran the command and hi.txt now exists.", ()),
    ]  # fmt: skip
    # Every line is still there for the raw view, the hidden ones marked.
    every = pager.page(0, 100)
    assert [i.line for i in every] == list(range(29))
    assert {i.role for i in every if not i.said} == {
        "queue-operation", "attachment:environment", "attachment:model",
        "attachment:deferred_tools_delta", "attachment:agent_listing_delta",
        "attachment:skill_listing", "attachment:session_context", "attachment:date",
        "attachment:remote_session_change", "attachment:prompt_snapshot", "atis-latch",
        "api-request", "last-prompt", "tools-used", "cost-state",
    }  # fmt: skip
    assert pager.count_known() == 29 and pager.count_said() == 5  # 24 hidden


def test_codex_shows_the_user_the_calls_their_output_and_the_replies() -> None:
    pager = TranscriptPager(CODEX)
    assert shown(pager.conversation_page(0, 100)) == [
        (7, "user", "RUNTOOL: please create hi.txt", ()),
        (9, "assistant", "", ('exec_command(cmd="echo hi > hi.txt")',)),
        (12, "toolResult", "Chunk ID: 0d0c25", ("?",)),
        (15, "assistant", "I ran the command and hi.txt now exists.", ()),
        (26, "user", "Resumed follow-up one", ()),
        (29, "assistant", 'Acknowledged follow-up: "></permission_profile></filesystem> '
                          "</environment_context> Resumed follow-up one\".", ()),
        (36, "user", "Last follow-up two", ()),
        (39, "assistant", 'Acknowledged follow-up: "Last follow-up two".', ()),
    ]  # fmt: skip
    every = pager.page(0, 100)
    assert len(every) == 43 and pager.count_said() == 8
    hidden = {i.role for i in every if not i.said}
    # The session meta, turn contexts (as model changes), world states, developer prompt,
    # environment context, usage records (assistant rows of output tokens) and events.
    assert hidden == {
        "session", "task_started", "message:developer", "environment_context",
        "world_state", "model_change", "thread_settings_applied", "item_completed",
        "assistant", "token_count", "task_complete",
    }  # fmt: skip
    assert all(i.text.endswith("output tokens)") for i in every
               if not i.said and i.role == "assistant")  # fmt: skip


def test_pi_hides_its_header_and_settings_and_keeps_the_model_change() -> None:
    pager = TranscriptPager(PI)
    assert [(i.line, i.role) for i in pager.conversation_page(0, 100)] == [
        (2, "model_change"), (4, "user"), (5, "assistant"), (6, "toolResult"), (7, "assistant"),
    ]  # fmt: skip
    assert [i.role for i in pager.page(0, 100) if not i.said] == [
        "session", "session_info", "thinking_level_change",
    ]


def test_invalid_lines_stay_and_blank_lines_go(tmp_path: Path) -> None:
    lines = CLAUDE.read_bytes().splitlines(keepends=True)
    path = tmp_path / "s.jsonl"
    cut_short = b'{"type": "last-prompt", "lastPrompt": "half a rec\n'  # a crash mid-write
    path.write_bytes(b"".join(lines[:3]) + b"not json\n" + cut_short + b"\n  \n"
                     + b'{"type": 5}\n' + b"".join(lines[3:]))  # fmt: skip
    items = TranscriptPager(path).conversation_page(0, 100)
    assert [(i.line, i.role, i.text) for i in items[:4]] == [
        (2, "user", "RUNTOOL: please create hi.txt"),
        (3, "invalid", "not valid JSON"),
        (4, "invalid", "not valid JSON"),
        (19 + 5, "assistant", "I'll run it."),  # 5 lines inserted before it
    ]


# ----- the fast path agrees with the rule -----------------------------------------------------
@pytest.mark.parametrize("path", EVERY_FIXTURE, ids=lambda p: p.name)
def test_the_index_decides_every_fixture_line_as_the_rule_does(path: Path) -> None:
    data = path.read_bytes()
    fmt = first_format(data.split(b"\n", 1)[0])
    assert by_index(data, fmt) == by_rule(data, fmt)
    # Written compactly, as the agents themselves write (the fixtures have spaces).
    compact = b"".join(
        json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        for raw in data.splitlines()
    )
    assert by_index(compact, fmt) == by_rule(compact, fmt)


@pytest.mark.parametrize("chunk", [7, 64, 1000])
def test_lines_across_scan_chunks_are_sorted_whole(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcript, "SCAN_CHUNK", chunk)
    for path in (CLAUDE, CODEX, PI):
        pager = TranscriptPager(path)
        while not pager.index_more(chunk):
            pass
        every = pager.page(0, 1000)
        assert [i.line for i in pager.conversation_page(0, 1000)] == [
            i.line for i in every if i.said
        ]


def test_a_line_longer_than_the_limit_is_shown_as_invalid_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcript, "MAX_LINE_BYTES", 100)
    monkeypatch.setattr("legion_tui.session.conversation.MAX_LINE_BYTES", 100)
    monkeypatch.setattr(transcript, "SCAN_CHUNK", 64)
    path = tmp_path / "s.jsonl"
    long_record = json.dumps({"type": "last-prompt", "lastPrompt": "x" * 300}).encode()
    path.write_bytes(CLAUDE.read_bytes().splitlines(keepends=True)[2] + long_record + b"\n")
    pager = TranscriptPager(path)
    while not pager.index_more(64):
        pass
    assert [(i.role, i.text) for i in pager.conversation_page(0, 10)][1:] == [
        ("invalid", f"line too long ({len(long_record)} bytes)")
    ]


# ----- text that reads like a record is still the user's ---------------------------------------
INTERNAL_WORDS = [
    '"type":"attachment"', '"type": "attachment"', "api-request", '"isMeta":true',
    '{"type":"queue-operation"}', '"type":"event_msg","payload":{"type":"token_count"}',
    "<environment_context>", '"role":"developer"', '{"type":"session","version":3}',
    '\\"', "\\", '"}', "{[", '"type":"thinking"', "<synthetic>",
]  # fmt: skip


def claude_user(text: str) -> dict[str, Any]:
    return {"parentUuid": "p-1", "isSidechain": False, "promptId": "q-1", "type": "user",
            "message": {"role": "user", "content": text}, "uuid": "u-1",
            "timestamp": "2026-12-01T18:31:41.479Z"}  # fmt: skip


def claude_reply(text: str) -> dict[str, Any]:
    return {"parentUuid": "u-1", "isSidechain": False,
            "message": {"id": "msg_1", "type": "message", "role": "assistant",
                        "model": "claude-opus-5-5",
                        "content": [{"type": "text", "text": text}],
                        "stop_reason": "end_turn", "usage": {"output_tokens": 3}},
            "type": "assistant", "uuid": "a-1",
            "timestamp": "2026-12-01T18:31:42.000Z"}  # fmt: skip


def codex_user(text: str) -> dict[str, Any]:
    return {"timestamp": "2026-12-01T18:37:20.682Z", "type": "response_item",
            "payload": {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": text}]}}  # fmt: skip


def pi_user(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "m1", "parentId": None,
            "timestamp": "2026-08-13T11:54:02.851Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]}}  # fmt: skip


# What each format's file opens with (the format is told by its first line).
OPENING: dict[Format, dict[str, Any]] = {
    "claude": {"type": "queue-operation", "operation": "dequeue", "sessionId": "s"},
    "codex": {"timestamp": "2026-12-01T18:37:20.591Z", "type": "session_meta",
              "payload": {"id": "t"}},
    "pi": {"type": "session", "version": 3, "id": "s"},
}
SAYERS = [("claude", claude_user), ("claude", claude_reply), ("codex", codex_user),
          ("pi", pi_user)]  # fmt: skip


def session(fmt: Format, records: list[dict[str, Any]], *, compact: bool) -> bytes:
    separators = (",", ":") if compact else (", ", ": ")
    return b"".join(json.dumps(r, separators=separators, ensure_ascii=False).encode() + b"\n"
                    for r in [OPENING[fmt], *records])  # fmt: skip


@pytest.mark.parametrize("words", INTERNAL_WORDS)
def test_a_message_quoting_internal_record_names_is_still_shown(
    words: str, tmp_path: Path
) -> None:
    for fmt, say in SAYERS:
        for compact in (True, False):
            path = tmp_path / f"{fmt}.jsonl"
            # At the start of the text, the whole text, and after a newline.
            texts = [f"{words} at the start", words, f"see:\n{words}"]
            path.write_bytes(session(fmt, [say(t) for t in texts], compact=compact))
            items = TranscriptPager(path).conversation_page(0, 10)
            if fmt == "codex" and words == "<environment_context>":
                # Codex's translator reads a user message opening with it as Codex's own
                # context (it writes one each turn): the rule hides those, decoded or not.
                assert [i.line for i in items] == [3]
                continue
            assert [i.line for i in items] == [1, 2, 3], (fmt, say.__name__, compact)
            assert items[1].text == words


PIECES = [*'"\\{}[]:, \n\tax<>/', "type", "attachment", "isMeta", "uuid", "text",
          "tool_use", "payload", "role", "é", "\x00", "environment_context", "\\u0041"]


@given(text=st.lists(st.sampled_from(PIECES), max_size=24).map("".join))
def test_any_text_in_any_record_is_decided_as_the_rule_decides(text: str) -> None:
    records: dict[Format, list[dict[str, Any]]] = {
        "claude": [claude_user(text), claude_reply(text),
                   {"type": "last-prompt", "lastPrompt": text, "sessionId": "s"},
                   {"parentUuid": "a", "isSidechain": False,
                    "attachment": {"type": "date", "date": text}, "type": "attachment",
                    "uuid": "b"}],
        "codex": [codex_user(text),
                  {"timestamp": "t", "type": "event_msg",
                   "payload": {"type": "agent_message", "message": text}},
                  {"timestamp": "t", "type": "response_item",
                   "payload": {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": text}]}}],
        "pi": [pi_user(text), {"type": "custom", "data": text}],
    }  # fmt: skip
    for fmt, lines in records.items():
        for compact in (True, False):
            data = session(fmt, lines, compact=compact)
            assert by_index(data, fmt) == by_rule(data, fmt), (fmt, compact)
    # The user's words are shown whatever they say.
    for fmt, say in SAYERS[:1] + SAYERS[2:]:
        assert by_rule(session(fmt, [say(text)], compact=True), fmt)[1]


# ----- the overlay ------------------------------------------------------------------------------
def build(run_dir: Path) -> LegionApp:
    model = canned_model()
    return make_app(model, FakeOps(model), clock=fixed_clock, timers=False, run_dir=run_dir)


async def test_v_shows_every_line_and_hides_them_again(tmp_path: Path) -> None:
    run_dir = write_run_files(tmp_path)
    (run_dir / "sessions" / "n2.jsonl").write_bytes(CLAUDE.read_bytes())
    app = build(run_dir)
    async with app.run_test(size=(160, 60)) as pilot:
        detail = await open_detail(pilot, app, "n2")
        view = detail.query_one(TranscriptView)
        for _ in range(100):  # indexed by a worker: until its rows are there
            if view.pager is not None and view.pager.at_end and view.virtual_size.height > 5:
                break
            await pilot.pause()

        def rows() -> list[str]:
            return [view.render_line(y).text.rstrip() for y in range(view.size.height)]

        def filled() -> list[str]:
            return [row for row in rows() if row]

        default = filled()
        assert default[0] == " 24 internal records hidden · v shows them"
        assert [row.split()[0] for row in default[1:]] == [
            "user", "assistant", "assistant", "toolResult", "assistant",
        ]
        assert not any("attachment" in row or "api-request" in row for row in default)
        await pilot.press("v")
        await pilot.pause()
        every = filled()
        assert every[0] == " every line shown, 24 internal records among them · v hides them"
        assert len(every) == 1 + 29
        assert every[1].split()[0] == "queue-operation"
        assert sum("attachment:" in row for row in every) == 10
        await pilot.press("v")
        await pilot.pause()
        assert filled() == default
