"""Claude Code's session files read as legion's entries (legion_tui.session.claude_code).

The figures below are computed BY HAND from the shared fixtures (real files Claude Code
2.1.328 wrote against the scripted server, notes/agent-clis.md §1.8); each says which
lines it comes from. A call's generation runs from its `api-request` line's timestamp to
the timestamp of the call's last `assistant` line; its output tokens are
`message.usage.output_tokens`, given once per `message.id`.
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

from legion_tui.session.claude_code import ClaudeLines
from legion_tui.session.entries import AssistantEntry, ToolResultEntry, UserEntry
from legion_tui.session.fold import SessionFold
from legion_tui.session.formats import detect
from legion_tui.session.progress import SessionProgress
from legion_tui.session.reader import SessionReader, read_session
from legion_tui.session.transcript import TranscriptPager

pytestmark = pytest.mark.unit

FIXTURES = Path("/work/shared/fixtures/claude-code")
ROUNDTRIP = FIXTURES / "claude-session-tool-roundtrip.jsonl"
STEERED = FIXTURES / "claude-session-streamjson-steer-interrupt.jsonl"

T0 = "2026-12-01T18:31:"  # the roundtrip's minute
MS_1796149860000 = 1_796_149_860_000  # 2026-12-01T18:31:00Z in epoch ms


def at(seconds: float) -> float:
    """Epoch seconds of 2026-12-01T18:31:<seconds>Z (the roundtrip's stamps)."""
    return (MS_1796149860000 + round(seconds * 1000)) / 1000


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def objs_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in lines_of(path)]


def fold_objs(objs: list[dict[str, Any]]) -> SessionProgress:
    fold, lines = SessionFold(), ClaudeLines()
    for obj in objs:
        for entry in lines.entries(obj):
            fold.feed(entry)
    return fold.finish()


def read_prefix(path: Path, n_lines: int, tmp_path: Path) -> SessionProgress:
    cut = tmp_path / f"cut-{n_lines}.jsonl"
    cut.write_bytes(b"".join(lines_of(path)[:n_lines]))
    return read_session(cut)


# ----- the format is told by the first line ----------------------------------------------
@pytest.mark.parametrize("path", [ROUNDTRIP, STEERED], ids=lambda p: p.name)
def test_detect_says_claude_on_the_first_line(path: Path) -> None:
    first = objs_of(path)[0]
    assert first["type"] == "queue-operation"  # Claude has no header line
    assert detect(first) == "claude"
    assert read_session(path).format == "claude"


# ----- the tool roundtrip ---------------------------------------------------------------
def test_roundtrip_calls_tokens_generation_rate_and_verdict() -> None:
    p = read_session(ROUNDTRIP)
    assert p.skipped_lines == 0 and p.unreadable is None
    assert p.model == "claude-opus-5-5"  # from message.model (no header)
    # Two model calls (msg_406f… on lines 20-21, msg_529b… on line 27), one turn each.
    assert p.turns == 2
    # output_tokens 42 (repeated on both lines of msg_406f…, counted once) and 17.
    assert [s.tokens for s in p.rate_series] == [42, 17]
    assert p.tokens.output == 42 + 17
    # input_tokens 12466 + 12553; cache_read_input_tokens 100 + 100.
    assert (p.tokens.input, p.tokens.cache_read, p.tokens.cache_write) == (25019, 200, 0)
    # Call 1: api-request e1b27d68 at 41.697 → its last line (tool_use) at 42.594 = 897 ms.
    # Call 2: api-request 4fa66cf5 at 42.755 → its line at 43.266 = 511 ms.
    first, second = p.rate_series
    assert (first.start, first.end) == (pytest.approx(at(41.697)), pytest.approx(at(42.594)))
    assert (second.start, second.end) == (pytest.approx(at(42.755)), pytest.approx(at(43.266)))
    assert p.generation_ms == pytest.approx(897 + 511)
    assert p.tok_s == pytest.approx(59 / 1.408)  # 41.9 tok/s
    assert round(42 / 0.897, 1) == 46.8  # the notes' per-call figure
    # The verdict is the last line of the final text (line 27).
    assert p.verdict is not None
    assert (p.verdict.ok, p.verdict.reason) == (True, "wrote hi.txt")
    assert p.last_stop_reason == "stop"  # end_turn
    assert p.in_flight == [] and not p.empty_generation
    assert list(p.recent_user_texts) == ["RUNTOOL: please create hi.txt"]
    # Claude writes no cost per call: priced from the table at claude-opus-5-5's list
    # rates ($4 in, $20 out, $0.20 cache read per million tokens):
    # 25019 × 4 + 59 × 20 + 200 × 0.2 = 101 296 µ$ — exactly the `total_cost_usd`
    # Claude itself printed for this turn (notes/agent-clis.md §1.3), and the total its
    # `cost-state` line says at the end: the cost is then Claude's own.
    assert p.tokens.cost == pytest.approx(0.101296)
    assert (p.estimated_calls, p.unpriced_calls) == (2, 0)
    assert p.reported_cost == pytest.approx(0.101296)
    assert (p.cost, p.cost_basis) == (pytest.approx(0.101296), "reported")
    assert p.last_entry_at == pytest.approx(at(43.266))


def test_roundtrip_in_flight_tool_mid_file(tmp_path: Path) -> None:
    # Cut after line 21 (the tool_use block of msg_406f…): Bash is running.
    p = read_prefix(ROUNDTRIP, 21, tmp_path)
    assert [(t.id, t.name) for t in p.in_flight] == [("toolu_0287e416ab4c45f0b32f", "Bash")]
    assert p.in_flight[0].started_at == pytest.approx(at(42.594))  # the tool_use line
    assert p.last_stop_reason == "toolUse"
    assert p.verdict is None and p.tokens.output == 42
    # Cut after line 22 (its tool_result): nothing in flight, no new call yet.
    p = read_prefix(ROUNDTRIP, 22, tmp_path)
    assert p.in_flight == [] and p.turns == 1 and p.last_stop_reason == "toolUse"


def test_roundtrip_path_is_linear_through_attachments() -> None:
    """Attachments sit in the uuid chain (line 20's parent is the attachment on line 13):
    every entry with an id must extend the leaf, never branch (no path rebuild)."""
    leaf: str | None = None
    translator = ClaudeLines()
    linked = 0
    for obj in objs_of(ROUNDTRIP):
        for entry in translator.entries(obj):
            if entry.id is None:
                continue
            assert entry.parent_id == leaf, (obj.get("type"), entry)
            leaf = entry.id
            linked += 1
    assert linked == 15  # 1 prompt + 10 attachments + 3 assistant lines + 1 tool result
    assert sum(1 for o in objs_of(ROUNDTRIP) if "uuid" in o) == linked


# ----- steer and interrupt ----------------------------------------------------------------
def test_steered_file_interrupted_call_stays_out_of_the_rate(tmp_path: Path) -> None:
    p = read_session(STEERED)
    # Six calls: msg_58f7 (42, req 26.101 → 27.008 = 907 ms), msg_946a (17, 27.199 → 27.735
    # = 536), msg_3fd1 (42, 27.805 → 28.769 = 964), msg_d2b5 (17, 48.881 → 49.389 = 508),
    # msg_5452 (interrupted: stop_reason null, the placeholder output 1: 0 tokens, no
    # time), msg_f63d (17, 33:12.088 → 33:12.616 = 528).
    assert p.turns == 6
    assert [s.tokens for s in p.rate_series] == [42, 17, 42, 17, 17]
    assert p.tokens.output == 135
    assert p.generation_ms == pytest.approx(907 + 536 + 964 + 508 + 528)
    assert p.tok_s == pytest.approx(135 / 3.443)  # 39.2 tok/s
    # Its input still counts: 12467+12554+12611+12799+12849+12902 were all sent.
    assert p.tokens.input == 76182
    assert p.verdict is not None and p.verdict.reason == "follow-up answered"
    assert p.last_stop_reason == "stop"
    # The steer reached the model as a queued_command attachment (line 35): a user text —
    # what mail delivery looks for.
    assert "STEER: while that runs, also mention bananas" in p.recent_user_texts


def test_steered_file_is_aborted_after_the_interrupt(tmp_path: Path) -> None:
    # Through line 42 (the interrupted call's partial text): the call says aborted.
    p = read_prefix(STEERED, 42, tmp_path)
    assert p.last_stop_reason == "aborted" and p.last_text.startswith("word0 word1")
    assert p.tokens.output == 118 and p.turns == 5  # 42+17+42+17; the interrupted adds 0
    # Through line 43 ("[Request interrupted by user]"): aborted, the node stays live.
    p = read_prefix(STEERED, 43, tmp_path)
    assert p.last_stop_reason == "aborted" and p.in_flight == []
    # Through line 46 (the next prompt): still aborted until a call answers it.
    assert read_prefix(STEERED, 46, tmp_path).last_stop_reason == "aborted"
    # The slow Bash (line 31) was in flight until its result (line 33).
    p = read_prefix(STEERED, 32, tmp_path)
    assert [t.name for t in p.in_flight] == ["Bash"]
    assert read_prefix(STEERED, 33, tmp_path).in_flight == []


def test_the_interrupt_line_is_an_aborted_user_entry() -> None:
    objs = objs_of(STEERED)
    (entry,) = ClaudeLines().entries(objs[42])
    assert isinstance(entry, UserEntry) and entry.aborted
    assert entry.text == "[Request interrupted by user]"
    (prompt,) = ClaudeLines().entries(objs[45])
    assert isinstance(prompt, UserEntry) and not prompt.aborted


# ----- shapes the fixtures do not have ---------------------------------------------------
def _line(kind: str, uuid: str, parent: str | None, second: int, **rest: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "timestamp": f"{T0}{second:02d}.000Z",
        "sessionId": "s",
        **rest,
    }


def _assistant(
    uuid: str,
    parent: str | None,
    second: int,
    msg_id: str,
    block: dict[str, Any],
    *,
    stop: str | None = "tool_use",
    output: int = 10,
    request: str | None = None,
    **rest: Any,
) -> dict[str, Any]:
    message = {
        "id": msg_id,
        "model": "claude-test",
        "role": "assistant",
        "content": [block],
        "stop_reason": stop,
        "usage": {"input_tokens": 100, "output_tokens": output, "cache_read_input_tokens": 5},
    }
    extra = {"requestRef": request} if request else {}
    return _line("assistant", uuid, parent, second, message=message, **extra, **rest)


def _tool_use(call_id: str, name: str = "Bash") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"command": "true"}}


def _results(*call_ids: str) -> dict[str, Any]:
    blocks = [
        {"type": "tool_result", "tool_use_id": c, "content": f"out {c}", "is_error": False}
        for c in call_ids
    ]
    return {"role": "user", "content": blocks}


def _request(request_id: str, second: int) -> dict[str, Any]:
    return {"type": "api-request", "id": request_id, "timestamp": f"{T0}{second:02d}.000Z"}


PARALLEL = [
    _line("user", "u0", None, 0, message={"role": "user", "content": "run two"}),
    _request("r1", 1),
    _assistant("a1", "u0", 2, "m1", _tool_use("c1"), request="r1"),
    _assistant("a2", "a1", 3, "m1", _tool_use("c2", "Read"), request="r1"),
]


def test_several_results_in_one_line_close_every_call_even_after_a_rebuild() -> None:
    results = _line("user", "t1", "a2", 4, message=_results("c1", "c2"))
    entries = ClaudeLines().entries(results)
    assert [(e.id, e.parent_id) for e in entries] == [("t1#0", "a2"), ("t1", "t1#0")]
    assert all(isinstance(e, ToolResultEntry) for e in entries)
    p = fold_objs([*PARALLEL, results])
    assert p.in_flight == [] and p.turns == 1 and p.tokens.output == 10
    assert p.generation_ms == pytest.approx(2000)  # request at :01 → last line at :03
    # Names come from the tool_use blocks seen: the results say only the id.
    named = ClaudeLines()
    for obj in PARALLEL:
        named.entries(obj)
    assert [e.tool_name for e in named.entries(results) if isinstance(e, ToolResultEntry)] == [
        "Bash",
        "Read",
    ]
    # A branch elsewhere, then back onto t1 (an attachment: a user entry would close every
    # tool anyway): the path is rebuilt from the ids — both results are on it, so nothing
    # is left in flight.
    side = _line("user", "x1", "u0", 5, message={"role": "user", "content": "aside"})
    back = _line("attachment", "b1", "t1", 6, attachment={"type": "date"})
    p = fold_objs([*PARALLEL, results, side])
    assert p.in_flight == [] and list(p.recent_user_texts) == ["run two", "aside"]
    p = fold_objs([*PARALLEL, results, side, back])
    assert p.in_flight == [] and list(p.recent_user_texts) == ["run two"]
    # Without the derived ids (the earlier result id-less), the rebuilt path would keep
    # c1 open: check the fold does need them.
    fold = SessionFold()
    for obj in PARALLEL:
        for entry in ClaudeLines().entries(obj):
            fold.feed(entry)
    fold.feed(ToolResultEntry(None, "a2", None, "c1", "Bash", "", False))
    fold.feed(ToolResultEntry("t1", "a2", None, "c2", "Read", "", False))
    for obj in (side, back):
        for entry in ClaudeLines().entries(obj):
            fold.feed(entry)
    assert [t.id for t in fold.finish().in_flight] == ["c1"]


def test_api_error_is_a_failed_call_and_the_resume_notice_no_call() -> None:
    error = _line(
        "assistant",
        "e1",
        "u0",
        2,
        isApiErrorMessage=True,
        message={
            "id": "x",
            "model": "<synthetic>",
            "role": "assistant",
            "stop_reason": "stop_sequence",
            "content": [{"type": "text", "text": "API Error: 400 scripted: bad"}],
            "usage": {"input_tokens": 0, "output_tokens": 0},
        },
    )
    p = fold_objs([PARALLEL[0], error])
    assert p.last_stop_reason == "error" and p.last_text == "API Error: 400 scripted: bad"
    assert not p.empty_generation  # the error says why; not a blank generation
    assert p.tokens.output == 0 and p.generation_ms == 0 and p.model is None
    notice = _line(
        "assistant",
        "n1",
        "e1",
        3,
        message={
            "id": "y",
            "model": "<synthetic>",
            "role": "assistant",
            "stop_reason": "stop_sequence",
            "content": [{"type": "text", "text": "No response requested."}],
            "usage": {"input_tokens": 0, "output_tokens": 0},
        },
    )
    follow = _line("user", "u1", "n1", 4, message={"role": "user", "content": "again"})
    p = fold_objs([PARALLEL[0], error, notice, follow])
    assert p.turns == 1  # the error; the notice is no call
    # The notice is a link of the chain: the follow-up extends the path (no rebuild that
    # would lose "run two").
    assert list(p.recent_user_texts) == ["run two", "again"]
    assert p.last_text == "API Error: 400 scripted: bad"


def test_max_tokens_and_unknown_stop_reasons() -> None:
    block = {"type": "text", "text": "cut short"}
    p = fold_objs([PARALLEL[0], _assistant("a1", "u0", 2, "m1", block, stop="max_tokens")])
    assert p.last_stop_reason == "length"
    p = fold_objs([PARALLEL[0], _assistant("a1", "u0", 2, "m1", block, stop="new_reason")])
    assert p.last_stop_reason == "new_reason"


def test_sidechain_usage_counts_but_stays_off_the_active_path() -> None:
    main = [
        PARALLEL[0],
        _request("r1", 1),
        _assistant("a1", "u0", 2, "m1", _tool_use("task1", "Task"), request="r1", output=20),
    ]
    side = [
        _line("user", "s0", None, 3, isSidechain=True, message={"role": "user", "content": "sub"}),
        _request("r2", 3),
        _assistant(
            "s1",
            "s0",
            5,
            "m2",
            _tool_use("sub1"),
            request="r2",
            output=30,
            isSidechain=True,
        ),
        _line("user", "s2", "s1", 6, isSidechain=True, message=_results("sub1")),
        _assistant(
            "s3",
            "s2",
            7,
            "m3",
            {"type": "text", "text": 'sub done {"ok": false, "reason": "sidechain"}'},
            stop="end_turn",
            output=5,
            isSidechain=True,
        ),
    ]
    p = fold_objs([*main, *side])
    # Paid for: 20 + 30 + 5 output, and the sidechain calls' own generation (r2 :03 → :05).
    assert p.tokens.output == 55 and p.turns == 3
    assert p.generation_ms == pytest.approx(1000 + 2000)
    # Off the path: the Task call is still the one in flight, no sidechain verdict.
    assert [t.id for t in p.in_flight] == ["task1"]
    assert p.verdict is None and p.last_stop_reason == "toolUse"
    assert list(p.recent_user_texts) == ["run two"]
    done = [
        _line("user", "t1", "a1", 8, message=_results("task1")),
        _assistant(
            "a2", "t1", 9, "m4", {"type": "text", "text": '{"ok": true, "reason": "main"}'},
            stop="end_turn",
        ),
    ]  # fmt: skip
    p = fold_objs([*main, *side, *done])
    assert p.in_flight == [] and p.verdict is not None and p.verdict.reason == "main"


def test_a_subagents_own_file_reads_as_an_ordinary_conversation() -> None:
    """2.1.328 writes a subagent to `<session>/subagents/agent-<id>.jsonl`, every line a
    sidechain (seen with the real binary): read alone, that file is the conversation."""
    sub = [
        _line("user", "s0", None, 0, isSidechain=True,
              message={"role": "user", "content": "Say hi from the subagent."}),
        _request("r1", 1),
        _assistant("s1", "s0", 2, "m1", _tool_use("c1"), request="r1", isSidechain=True),
    ]  # fmt: skip
    p = fold_objs(sub)
    assert [t.id for t in p.in_flight] == ["c1"] and p.last_stop_reason == "toolUse"
    assert list(p.recent_user_texts) == ["Say hi from the subagent."]
    final = {"type": "text", "text": '{"ok": true, "reason": "sub"}'}
    p = fold_objs([
        *sub,
        _line("user", "s2", "s1", 3, isSidechain=True, message=_results("c1")),
        _assistant("s3", "s2", 4, "m2", final, stop="end_turn", output=4, isSidechain=True),
    ])  # fmt: skip
    assert p.verdict is not None and p.verdict.reason == "sub" and p.in_flight == []
    assert p.tokens.output == 14 and p.turns == 2


@given(
    obj=st.dictionaries(
        st.sampled_from(
            ["type", "uuid", "parentUuid", "message", "timestamp", "isSidechain", "requestRef",
             "attachment", "id", "isApiErrorMessage", "logicalParentUuid", "content", "isMeta"]
        ),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
            | st.sampled_from(["assistant", "user", "attachment", "tool_use", "tool_result",
                               "text", "queued_command", "api-request", "<synthetic>"]),
            lambda inner: st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(
                ["type", "content", "id", "name", "input", "usage", "stop_reason", "model",
                 "tool_use_id", "output_tokens", "text", "prompt", "is_error"]), inner,
                max_size=4),
            max_leaves=12,
        ),
    )
)  # fmt: skip
def test_never_raises_on_any_object(obj: dict[str, Any]) -> None:
    translator = ClaudeLines()
    for _ in range(2):  # twice: the second sees the first's remembered state
        entries = translator.entries(obj)
        fold = SessionFold()
        for entry in entries:
            fold.feed(entry)
        fold.finish()


def test_memory_is_bounded() -> None:
    translator = ClaudeLines()
    for i in range(1000):
        translator.entries(_request(f"r{i}", i % 60))
        translator.entries(_assistant(f"a{i}", None, i % 60, f"m{i}", _tool_use(f"c{i}")))
    assert len(translator._request_started) <= 64
    assert len(translator._calls_counted) <= 256
    assert len(translator._tool_names) <= 1024


# ----- any chunking of the appends gives the whole file's progress ------------------------
def _whole(data: bytes) -> SessionProgress:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "whole.jsonl")
        path.write_bytes(data)
        return read_session(path)


_DATA = {p.name: p.read_bytes() for p in (ROUNDTRIP, STEERED)}
_WHOLE = {name: _whole(data) for name, data in _DATA.items()}


@settings(max_examples=60)
@given(
    name=st.sampled_from(sorted(_DATA)),
    cuts=st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=16),
    cap=st.sampled_from([7, 4096, 4 * 1024 * 1024]),
)
def test_any_chunking_of_the_appends_equals_the_whole_parse(
    name: str, cuts: list[float], cap: int
) -> None:
    data = _DATA[name]
    points = sorted({int(c * len(data)) for c in cuts} - {0, len(data)})
    bounds = [0, *points, len(data)]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "s.jsonl")
        path.write_bytes(b"")
        with SessionReader(path, max_bytes_per_poll=cap) as reader:
            for lo, hi in itertools.pairwise(bounds):
                with open(path, "ab") as f:
                    f.write(data[lo:hi])
                reader.poll()
                while reader.pending:
                    reader.poll()
            assert reader.progress == _WHOLE[name]


# ----- the transcript shows each line alone ------------------------------------------------
def test_transcript_renders_each_line_sensibly() -> None:
    pager = TranscriptPager(STEERED)
    items = pager.page(0, 100)
    assert pager.format == "claude"
    assert len(items) == len(lines_of(STEERED))
    assert not [i for i in items if i.role in ("invalid", "blank")]
    by_line = {i.line: i for i in items}
    assert (by_line[0].role, by_line[0].text) == (
        "queue-operation",
        "enqueue: RUNTOOL: please create hi.txt",
    )
    assert (by_line[2].role, by_line[2].text) == ("user", "RUNTOOL: please create hi.txt")
    assert by_line[3].role == "attachment:environment"
    assert by_line[13].role == "api-request" and by_line[13].text == ""
    assert (by_line[17].role, by_line[17].text) == ("assistant", "I'll run it.")
    assert by_line[18].role == "assistant"
    assert by_line[18].tools == (
        'Bash(command="echo hi > hi.txt", description="Run the scripted command")',
    )
    # A tool result alone does not know its call's name; its text is the output.
    assert (by_line[19].role, by_line[19].text) == ("toolResult", "(Bash completed with no output)")
    assert by_line[19].tools == ("?",) and not by_line[19].is_error
    assert (by_line[34].role, by_line[34].text) == (
        "user",
        "STEER: while that runs, also mention bananas",
    )
    assert (by_line[41].role, by_line[41].text) == ("assistant", "word0 word1 word2 word3 ")
    assert (by_line[42].role, by_line[42].text) == ("user", "[Request interrupted by user]")
    assert by_line[47].text.endswith('{"ok": true, "reason": "follow-up answered"}')
    assert by_line[49].role == "cost-state"
    assert all(i.at is not None for i in items if i.role in ("user", "assistant"))


def test_the_assistant_entries_of_one_call_share_it_and_carry_usage_once() -> None:
    objs = objs_of(ROUNDTRIP)
    translator = ClaudeLines()
    found = [e for o in objs for e in translator.entries(o) if isinstance(e, AssistantEntry)]
    assert [(e.call, e.output, e.stop_reason) for e in found] == [
        ("msg_406f7933068842639d78", 42, "toolUse"),
        ("msg_406f7933068842639d78", 0, "toolUse"),
        ("msg_529b19278394486e9ce5", 17, "stop"),
    ]
    assert [e.input for e in found] == [12466, 0, 12553]
    assert found[1].tool_calls[0].arguments == {
        "command": "echo hi > hi.txt",
        "description": "Run the scripted command",
    }


def test_claudes_own_cost_state_is_the_sessions_cost_and_a_guess_is_not_taken(
    tmp_path: Path,
) -> None:
    """The fixture's `cost-state` (Claude's own total, written at exit) is the session's
    cost, marked its own; one with `hasUnknownModelCost` is Claude's guess at a model it
    does not know and leaves the calls' own pricing in place."""
    own = read_session(ROUNDTRIP)
    assert own.cost == pytest.approx(0.101296) and own.cost_basis == "reported"
    guessed = tmp_path / "guess.jsonl"
    guessed.write_text("".join(
        line.replace('"hasUnknownModelCost": false', '"hasUnknownModelCost": true')
        for line in ROUNDTRIP.read_text().splitlines(keepends=True)
    ))  # fmt: skip
    assert '"hasUnknownModelCost": true' in guessed.read_text()
    guess = read_session(guessed)
    assert guess.reported_cost is None and guess.cost_basis != "reported"


def test_a_results_total_is_claudes_own_figure_unless_it_guessed() -> None:
    from legion_tui.supervisor.backends.claude.stream import reported_cost

    priced = {"total_cost_usd": 0.017757, "modelUsage": {"claude-sonnet-4-5": {"costUSD": 1}}}
    assert reported_cost(priced) == pytest.approx(0.017757)
    guessed = {"total_cost_usd": 0.01, "modelUsage": {"m": {"costBasis": "unknown"}}}
    assert reported_cost(guessed) is None
    for bad in (float("nan"), -1.0, 1e9, "0.5", None, 0):
        assert reported_cost({"total_cost_usd": bad}) is None
