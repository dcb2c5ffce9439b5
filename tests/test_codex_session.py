"""Codex's rollout files read as session entries (`legion_tui.session.codex.CodexLines`).

On the shared fixtures: real, trimmed rollout files Codex 0.169.0 wrote (notes/agent-clis.md
§2.5). Every expected figure below is computed by hand from the file's own lines and the
comment beside it says from which: a call's output tokens are its `token_usage_record`'s
`usage.output_tokens`; its generation time runs from the previous input item (a user
message, a `function_call_output`, `task_started`) to that record's timestamp.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legion_tui.model_records import Verdict
from legion_tui.session.codex import CodexLines
from legion_tui.session.entries import AssistantEntry, UserEntry
from legion_tui.session.formats import detect
from legion_tui.session.progress import SessionProgress
from legion_tui.session.reader import SessionReader, read_session
from legion_tui.session.transcript import TranscriptPager

pytestmark = pytest.mark.unit

FIXTURES = Path("/work/shared/fixtures/codex")
# `codex exec` (a tool call that writes hi.txt, then a verdict), then two `exec resume`s.
EXEC = FIXTURES / "codex-rollout-exec-then-2-resumes.jsonl"
# `codex app-server`: the same round trip; a 20 s `sleep` that exec_command backgrounds,
# steered mid-turn; a slow text interrupted; one more prompt (the sleep ends during it).
APPSERVER = FIXTURES / "codex-rollout-appserver-steer-interrupt.jsonl"

EXEC_CALL_ID = "call_d06efc5d31374d66"  # line 9's exec_command `echo hi > hi.txt`
SLEEP_CALL_ID = "call_b31da3b482de4508"  # APPSERVER line 23's `sleep 20; …`


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def cut(path: Path, n: int, tmp_path: Path) -> SessionProgress:
    """What the reader makes of the file's first `n` lines (a file caught mid-write)."""
    part = tmp_path / f"{path.stem}-{n}.jsonl"
    part.write_bytes(b"".join(lines_of(path)[:n]))
    return read_session(part)


def per_call(p: SessionProgress) -> list[tuple[int, float]]:
    """(output tokens, generation ms) of each model call, from the rate series."""
    return [(s.tokens, round((s.end - s.start) * 1000, 3)) for s in p.rate_series]


# ----- format ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", [EXEC, APPSERVER], ids=["exec", "app-server"])
def test_detect_says_codex_on_the_first_line(path: Path) -> None:
    first = json.loads(lines_of(path)[0])
    assert first["type"] == "session_meta"
    assert detect(first) == "codex"
    assert read_session(path).format == "codex"


# ----- the exec round trip --------------------------------------------------------------
def test_exec_round_trip_calls_tokens_times_and_verdict(tmp_path: Path) -> None:
    # Lines 0–18: the first `codex exec` turn, up to its task_complete.
    p = cut(EXEC, 19, tmp_path)
    assert p.model == "mock-model"  # turn_context.model
    # Call 1: user message (line 7, 18:35:54.563) → record (line 10, 18:35:55.620):
    # 1057 ms, usage.output_tokens 42. Call 2: function_call_output (line 12,
    # 18:35:55.760) → record (line 16, 18:35:56.318): 558 ms, 17 tokens.
    assert per_call(p) == [(42, 1057.0), (17, 558.0)]
    assert p.turns == 2
    assert p.tokens.output == 42 + 17  # the token_count events (lines 13, 17) are not added
    assert p.tokens.input == 10070 + 10172  # usage.input_tokens of the two records
    assert p.tokens.cache_read == 100 + 100  # usage.cached_input_tokens
    assert p.generation_ms == 1057 + 558
    assert p.tok_s == pytest.approx(59 / 1.615)  # 36.53 tok/s
    # each call's own rate: 42/1.057 = 39.7 and 17/0.558 = 30.5 tok/s (notes §3)
    assert [round(t / (ms / 1000), 1) for t, ms in per_call(p)] == [39.7, 30.5]
    assert p.verdict == Verdict(True, "wrote hi.txt", {"ok": True, "reason": "wrote hi.txt"})
    assert p.last_stop_reason == "stop"
    assert p.in_flight == []
    assert not p.empty_generation
    # the task, not Codex's <environment_context>, is the user's text
    assert list(p.recent_user_texts) == ["RUNTOOL: please create hi.txt"]
    # Provider "mock", model "mock-model": no price table knows it. The cost is not $0,
    # it is unknown, and each call is counted as unpriced.
    assert (p.cost, p.cost_basis, p.unpriced_calls, p.estimated_calls) == (0, "unknown", 2, 0)


def test_a_model_the_table_knows_is_priced_as_an_estimate(tmp_path: Path) -> None:
    """The same two calls as if Codex had run gpt-5 at OpenAI: priced from the table at
    gpt-5's list rates ($1.25 in, $10 out, $0.125 cached in, per million tokens), with
    OpenAI's `input_tokens` counting the cached ones too."""
    objs = [json.loads(raw) for raw in lines_of(EXEC)[:19]]
    for obj in objs:
        if obj["type"] == "session_meta":
            obj["payload"]["model_provider"] = "openai"
        if obj["type"] == "turn_context":
            obj["payload"]["model"] = "gpt-5"
    path = tmp_path / "gpt-5.jsonl"
    path.write_text("".join(json.dumps(obj) + "\n" for obj in objs))
    p = read_session(path)
    # Call 1: (10070 − 100) × 1.25 + 100 × 0.125 + 42 × 10 = 12 895 µ$;
    # call 2: (10172 − 100) × 1.25 + 100 × 0.125 + 17 × 10 = 12 772.5 µ$.
    assert p.cost == pytest.approx(0.0256675)
    assert (p.cost_basis, p.estimated_calls, p.unpriced_calls) == ("estimated", 2, 0)


def test_whole_exec_file_never_takes_thread_totals_for_a_call() -> None:
    p = read_session(EXEC)
    # Resume 1: user (line 26, 18:36:47.235) → record (line 30, 18:36:47.810): 575 ms, 17.
    # Resume 2: user (line 36, 18:36:48.326) → record (line 40, 18:36:48.943): 617 ms, 17.
    # The records' thread_token_usage.output_tokens read 42, 59, 76, 93: a running total.
    assert per_call(p) == [(42, 1057.0), (17, 558.0), (17, 575.0), (17, 617.0)]
    assert p.tokens.output == 93
    assert p.turns == 4
    assert p.generation_ms == 1057 + 558 + 575 + 617
    assert p.tok_s == pytest.approx(93 / 2.807)
    assert p.verdict is not None and p.verdict.reason == "follow-up answered"
    assert p.skipped_lines == 0


# ----- in flight --------------------------------------------------------------------------
def test_a_call_is_in_flight_from_its_function_call_to_its_output(tmp_path: Path) -> None:
    after_call = cut(EXEC, 10, tmp_path)  # through line 9: the function_call
    assert [(t.id, t.name) for t in after_call.in_flight] == [(EXEC_CALL_ID, "exec_command")]
    assert after_call.in_flight[0].started_at == pytest.approx(1796150155.617)  # 18:35:55.617
    assert after_call.last_stop_reason == "toolUse"
    assert cut(EXEC, 11, tmp_path).in_flight != []  # line 10, its usage record: still running
    assert cut(EXEC, 13, tmp_path).in_flight == []  # through line 12: its output


def test_a_backgrounded_command_stays_in_flight_until_its_command_execution_ends(
    tmp_path: Path,
) -> None:
    def flying(n: int) -> list[tuple[str, float]]:
        return [(t.id, round(t.started_at, 3)) for t in cut(APPSERVER, n, tmp_path).in_flight]

    sleep = [(SLEEP_CALL_ID, 1796150243.764)]  # the function_call's time, 18:37:23.764
    assert flying(24) == sleep  # line 23: the function_call
    # line 25: "Process running with session ID 78762" — not a result, it runs on
    assert "Process running" in json.loads(lines_of(APPSERVER)[25])["payload"]["output"]
    assert flying(26) == sleep
    assert flying(28) == sleep  # line 27: the steer, a user message: the sleep still runs
    assert flying(34) == sleep  # line 33: task_complete of its turn
    assert flying(41) == sleep  # lines 36–40: the next turn, interrupted
    assert flying(44) == sleep  # line 43: yet another user message
    assert flying(45) == sleep
    assert flying(46) == []  # line 45: its CommandExecution item_completed (exit 0)
    # Re-opening it never counts as a model call: 3 calls by line 28, as by line 26.
    assert cut(APPSERVER, 28, tmp_path).turns == cut(APPSERVER, 26, tmp_path).turns == 3


# ----- interrupt ----------------------------------------------------------------------------
def test_turn_aborted_reads_aborted_and_adds_no_usage(tmp_path: Path) -> None:
    before = cut(APPSERVER, 39, tmp_path)  # through line 38: the slow text was streaming
    aborted = cut(APPSERVER, 41, tmp_path)  # lines 39 <turn_aborted>, 40 turn_aborted
    assert before.last_stop_reason != "aborted"
    assert aborted.last_stop_reason == "aborted"
    # The interrupted response wrote no record: no call, no tokens, no time.
    assert (aborted.turns, aborted.tokens.output, aborted.generation_ms) == (
        before.turns, before.tokens.output, before.generation_ms)
    assert cut(APPSERVER, 44, tmp_path).last_stop_reason == "aborted"  # a prompt, no answer yet
    whole = read_session(APPSERVER)
    # Calls: 42 (1164 ms: line 7 → 10), 17 (564: 12 → 16), 42 (1095: 21 → 24),
    # 17 (587: 27 → 31), 60 (30097: 43 → 48, the prompt after the interrupt).
    assert per_call(whole) == [(42, 1164.0), (17, 564.0), (42, 1095.0), (17, 587.0),
                               (60, 30097.0)]
    assert whole.last_stop_reason == "stop"


def test_a_turn_aborted_event_alone_is_one_aborted_marker() -> None:
    """Without the <turn_aborted> message (an older rollout) the event says it; with the
    message, the event adds no second marker."""
    event = {"timestamp": "2026-12-01T18:37:37.173Z", "type": "event_msg",
             "payload": {"type": "turn_aborted", "reason": "interrupted"}}
    message = {"timestamp": "2026-12-01T18:37:37.170Z", "type": "response_item",
               "payload": {"type": "message", "role": "user", "content": [
                   {"type": "input_text", "text": "<turn_aborted>\nThe user interrupted…"}]}}
    alone = [e for e in CodexLines().entries(event) if isinstance(e, UserEntry)]
    assert [(e.text, e.aborted) for e in alone] == [("", True)]
    lines = CodexLines()
    both = [e for obj in (message, event) for e in lines.entries(obj)
            if isinstance(e, UserEntry)]
    assert [e.aborted for e in both] == [True]


# ----- chunked appends ---------------------------------------------------------------------
_DATA = {path.name: path.read_bytes() for path in (EXEC, APPSERVER)}


@settings(max_examples=40)
@given(
    name=st.sampled_from(sorted(_DATA)),
    cuts=st.lists(st.integers(min_value=0, max_value=max(map(len, _DATA.values()))),
                  max_size=12),
    cap=st.sampled_from([7, 4096, 4 * 1024 * 1024]),
)
def test_any_split_into_appends_equals_whole_parse(name: str, cuts: list[int], cap: int) -> None:
    data = _DATA[name]
    points = sorted({c for c in cuts if 0 < c < len(data)})
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "rollout.jsonl")
        path.write_bytes(b"")
        with SessionReader(path, max_bytes_per_poll=cap) as reader:
            for lo, hi in itertools.pairwise([0, *points, len(data)]):
                with path.open("ab") as f:
                    f.write(data[lo:hi])
                reader.poll()
                while reader.pending:
                    reader.poll()
            whole = Path(d, "whole.jsonl")
            whole.write_bytes(data)
            assert reader.progress == read_session(whole)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=8,
)
_KINDS = ["session_meta", "turn_context", "response_item", "token_usage_record", "event_msg",
          "world_state", "other"]
_PAYLOAD_TYPES = ["message", "function_call", "function_call_output", "custom_tool_call",
                  "custom_tool_call_output", "reasoning", "task_started", "task_complete",
                  "turn_aborted", "item_completed", "token_count", "agent_message", "error"]
_FIELDS = ["role", "content", "call_id", "name", "arguments", "input", "output", "usage",
           "item", "error", "model", "message", "id"]


@settings(max_examples=300)
@given(
    objs=st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(_KINDS)},
            optional={
                "timestamp": st.sampled_from(["2026-12-01T18:37:37.173Z", "junk", ""]) | _JSON,
                "payload": st.fixed_dictionaries(
                    {"type": st.sampled_from(_PAYLOAD_TYPES) | _JSON},
                    optional={k: _JSON for k in _FIELDS},
                ) | _JSON,
            },
        ),
        max_size=8,
    )
)
def test_odd_shapes_never_raise(objs: list[dict[str, Any]]) -> None:
    lines = CodexLines()
    for obj in objs:
        for entry in lines.entries(obj):
            if isinstance(entry, AssistantEntry):
                assert entry.output >= 0 and entry.input >= 0


# ----- the transcript, a line at a time -------------------------------------------------------
def test_transcript_renders_each_rollout_line_alone() -> None:
    pager = TranscriptPager(APPSERVER)
    items = pager.page(0, 100)
    assert pager.format == "codex"
    assert len(items) == len(lines_of(APPSERVER))
    by_line = {item.line: item for item in items}
    assert "invalid" not in {item.role for item in items}
    assert by_line[0].role == "session"
    assert (by_line[5].role, by_line[5].text) == ("model_change", "mock-model")
    assert (by_line[7].role, by_line[7].text) == ("user", "RUNTOOL: please create hi.txt")
    assert by_line[3].role == "environment_context"  # Codex's context, not a user text
    assert by_line[9].role == "assistant"
    assert by_line[9].tools == ('exec_command(cmd="echo hi > hi.txt")',)
    assert (by_line[10].role, by_line[10].text) == ("assistant", "(42 output tokens)")
    assert by_line[12].role == "toolResult" and "Process exited with code 0" in by_line[12].text
    assert by_line[15].text.endswith('{"ok": true, "reason": "wrote hi.txt"}')
    assert by_line[25].role == "backgrounded" and "Process running" in by_line[25].text
    assert by_line[27].text == "STEER: while that runs, also mention bananas"
    assert by_line[39].role == "user" and by_line[39].text.startswith("<turn_aborted>")
    assert (by_line[40].role, by_line[40].text) == ("user", "(turn aborted)")
    assert by_line[45].text == "CommandExecution: sleep 20; echo slept > slept.txt (exit 0)"


@settings(max_examples=60, deadline=None)
@given(model=st.text(max_size=80), provider=st.one_of(st.none(), st.text(max_size=20)))
def test_any_model_name_is_priced_or_unpriced_never_an_error(
    model: str, provider: str | None
) -> None:
    """A model and a provider name are read from the file: whatever they are, the call is
    priced (estimated) or counted as unpriced — the price table never breaks the read."""
    lines = CodexLines()
    lines.entries({"type": "session_meta", "payload": {"model_provider": provider}})
    lines.entries({"type": "turn_context", "payload": {"model": model}})
    (entry,) = lines.entries({"type": "token_usage_record",
                              "payload": {"usage": {"input_tokens": 10, "output_tokens": 5}}})
    assert isinstance(entry, AssistantEntry)
    assert entry.priced in ("estimated", "unknown")
    assert entry.cost >= 0
    assert entry.priced == "estimated" or entry.cost == 0  # unknown is never a figure
