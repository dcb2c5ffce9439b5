"""The derivation: active path over branches, generation time, empty generation, live tok/s."""

from __future__ import annotations

import random
from typing import Any

import pytest
from session_helpers import assistant, header, tool_result, user

from legion_tui.session.entries import AssistantEntry, UserEntry, interpret
from legion_tui.session.fold import SessionFold
from legion_tui.session.live_rate import _share, live_tok_s, open_message
from legion_tui.session.progress import RateSegment, SessionProgress

pytestmark = pytest.mark.unit


def fold(*objs: dict[str, Any]) -> SessionProgress:
    f = SessionFold()
    for obj in objs:
        f.feed(interpret(obj))
    return f.finish()


def test_branch_switch_recomputes_the_active_path_and_back() -> None:
    base = [
        header(),
        user("u0", None, "first", 1_000),
        assistant(
            "a0",
            "u0",
            start_ms=1_001,
            end_ms=2_000,
            output=30,
            tools=[("c0", "bash")],
            stop="toolUse",
        ),
        tool_result("r0", "a0", "c0", 3_000),
        assistant(
            "f0",
            "r0",
            start_ms=3_001,
            end_ms=4_001,
            output=10,
            text='done\n{"ok": true, "reason": "main"}',
        ),
    ]
    p = fold(*base)
    assert p.in_flight == [] and p.verdict is not None and p.verdict.reason == "main"
    # The user rewinds to u0 and asks again: a sibling branch of a0.
    side = [
        user("u1", "u0", "second try", 5_000),
        assistant(
            "b0",
            "u1",
            start_ms=5_001,
            end_ms=6_001,
            output=5,
            tools=[("c9", "edit"), ("c8", "read")],
            stop="toolUse",
        ),
    ]
    p = fold(*base, *side)
    assert [t.id for t in p.in_flight] == ["c9", "c8"]  # c0 is on the other branch
    assert p.in_flight[-1].name == "read"  # top = last
    assert p.in_flight[0].started_at == pytest.approx(6.001)
    assert list(p.recent_user_texts) == ["first", "second try"]
    # Still the path's last text with content: f0 is not on this path any more.
    assert p.last_text == "" and p.verdict is None
    assert p.last_stop_reason == "toolUse"
    # Tokens count every message that was paid for, on any branch.
    assert p.tokens.output == 30 + 10 + 5 and p.turns == 3
    # Back onto the first branch: a follow-up after f0.
    p = fold(*base, *side, user("u2", "f0", "and then?", 7_000))
    assert p.in_flight == []
    assert list(p.recent_user_texts) == ["first", "and then?"]
    assert p.verdict is not None and p.verdict.reason == "main"


def test_entry_whose_parent_is_unknown_starts_a_new_path() -> None:
    p = fold(
        header(),
        assistant("a0", None, start_ms=0, end_ms=10, tools=[("c0", "bash")], stop="toolUse"),
        user("u9", "not-in-this-file", "forked", 20),
    )
    assert p.in_flight == [] and list(p.recent_user_texts) == ["forked"]


def test_parent_cycle_does_not_hang() -> None:
    p = fold(
        header(),
        user("x", "y", "one", 1),
        user("y", "x", "two", 2),
    )
    assert p.entries == 2


def test_duration_ms_wins_over_timestamps() -> None:
    p = fold(
        header(),
        # timestamps say 10 s, durationMs says 2 s: the measured duration counts.
        assistant("a", None, start_ms=100_000, end_ms=110_000, output=50, duration_ms=2_000),
        assistant("b", "a", start_ms=120_000, end_ms=121_000, output=10),
    )
    assert p.generation_ms == 2_000 + 1_000
    assert p.tok_s == pytest.approx(60 / 3.0)
    assert p.rate_series == [RateSegment(100.0, 102.0, 50), RateSegment(120.0, 121.0, 10)]


def test_negative_span_counts_as_zero() -> None:
    p = fold(header(), assistant("a", None, start_ms=5_000, end_ms=4_000, output=9))
    assert p.generation_ms == 0 and p.tok_s == 0.0 and p.rate_series == []


def test_version_absent_means_v1() -> None:
    assert fold(header(version=None)).version == 1
    assert fold(header(version=3)).version == 3


def test_empty_generation_shape() -> None:
    empty = assistant("a", "u", start_ms=1, end_ms=2, output=2, stop="error")
    p = fold(header(), user("u", None, "go", 0), empty)
    assert p.empty_generation is True and p.last_stop_reason == "error"
    # Not the shape: the error message carried text, or it called a tool.
    with_text = assistant("a", "u", start_ms=1, end_ms=2, text="partial", stop="error")
    assert fold(header(), user("u", None, "go", 0), with_text).empty_generation is False
    with_tool = assistant("a", "u", start_ms=1, end_ms=2, tools=[("c", "bash")], stop="error")
    assert fold(header(), user("u", None, "go", 0), with_tool).empty_generation is False
    # A new turn started after it: the last turn has no assistant record yet.
    p = fold(header(), user("u", None, "go", 0), empty, user("u2", "a", "continue", 5))
    assert p.empty_generation is False


def test_a_tool_call_killed_by_a_stop_ends_at_the_next_user_message() -> None:
    # pi writes no toolResult for a call whose process a stop killed; on resume the next
    # user message is what ends it (pi sends the model "No result provided").
    calling = assistant("a", "u", start_ms=1, end_ms=2, tools=[("c1", "bash")], stop="toolUse")
    p = fold(header(), user("u", None, "go", 0), calling)
    assert [t.name for t in p.in_flight] == ["bash"]
    p = fold(header(), user("u", None, "go", 0), calling, user("u2", "a", "continue", 5))
    assert p.in_flight == []


def test_recent_user_texts_keep_the_last_20() -> None:
    objs: list[dict[str, Any]] = [header()]
    parent = None
    for i in range(25):
        objs.append(user(f"u{i}", parent, f"msg {i}", i))
        parent = f"u{i}"
    p = fold(*objs)
    assert list(p.recent_user_texts) == [f"msg {i}" for i in range(5, 25)]


def test_odd_field_types_never_break_the_fold() -> None:
    weird = {
        "type": "message",
        "id": 5,
        "parentId": ["x"],
        "timestamp": "yesterday",
        "message": {
            "role": "assistant",
            "content": "plain string content",
            "usage": {"input": "3", "output": True, "cost": "free"},
            "timestamp": "soon",
            "stopReason": 7,
        },
    }
    p = fold(header(), weird, {"type": 42}, {"message": None}, {"type": "model_change"})
    assert p.entries == 4 and p.turns == 1 and p.tokens.output == 0
    assert p.last_text == "plain string content"


def test_live_tok_s_prorates_segments_in_the_window() -> None:
    p = SessionProgress(
        rate_series=[
            RateSegment(0.0, 10.0, 1000),  # ended before the window
            RateSegment(85.0, 95.0, 100),  # half inside [90, 100]: 50 tokens
            RateSegment(96.0, 98.0, 40),  # fully inside: 40 tokens
        ]
    )
    assert live_tok_s(p, now=100.0, window=10.0) == pytest.approx((50 + 40) / 10.0)
    assert live_tok_s(p, now=200.0) == 0.0
    assert live_tok_s(SessionProgress(), now=1.0) == 0.0


def test_live_tok_s_is_each_segments_share_summed_newest_first_to_the_bit() -> None:
    """Issue 35: a segment wholly inside the window adds its tokens without the division
    (its share is exactly its tokens). Over seeded series — overlaps, instants, clocks
    stepped back, segments on the window's edges and past `now`, an open message — the
    rate is, bit for bit, the `_share` of each segment summed newest first, stopping at
    the first that ended before the window."""
    rng = random.Random(35)
    for _ in range(300):
        now, window = 1_700_000_100.0 + rng.choice([0.0, 0.25, 0.1]), rng.choice([10.0, 3.5])
        lo, at, series = now - window, now - 20.0, []
        while at < now + 3.0:
            start = at + rng.choice([0.0, -0.75, 0.5, rng.uniform(-2.0, 1.0)])
            span = rng.choice([0.0, 0.25, 1.0, -0.5, rng.uniform(0.0, 3.0)])
            series.append(RateSegment(start, start + span, rng.randint(1, 5000)))
            at += rng.choice([0.25, 0.5, 1.0, rng.uniform(0.0, 1.5)])
        progress = SessionProgress(rate_series=series)
        open_now = RateSegment(series[-1].end + 0.5, now + 1.0, 70)
        streaming = rng.choice([None, open_now])
        want = 0.0
        for seg in reversed(series):
            if seg.end <= lo:
                break
            want += _share(seg, lo, now)
        pending = open_message(progress, streaming)
        if pending is not None:
            want += _share(pending, lo, now)
        assert live_tok_s(progress, now, window, streaming) == want / window


def _piece(call: str | None, at_ms: float, *, output: int = 0, start_ms: float | None = None,
           text: str = "") -> AssistantEntry:
    return AssistantEntry(
        id=None, parent_id=None, at_ms=at_ms, model="m", text=text, tool_calls=(),
        stop_reason="stop", input=0, output=output, cache_read=0, cache_write=0, cost=0.0,
        started_ms=start_ms, duration_ms=None, call=call,
    )


def test_pieces_of_one_model_call_are_one_turn_with_one_growing_segment() -> None:
    """Claude Code writes a line per content block (usage on the first), Codex its items
    then the usage record: one call, one turn, its tokens once, its span first → last."""
    f = SessionFold()
    f.feed(_piece("m1", 2_000.0, output=40, start_ms=1_000.0, text="I'll run it."))
    f.feed(_piece("m1", 3_000.0, start_ms=1_000.0))  # the tool_use block, no usage again
    p = f.finish()
    assert (p.turns, p.tokens.output, p.generation_ms) == (1, 40, 2_000.0)
    assert p.rate_series == [RateSegment(1.0, 3.0, 40)]
    f.feed(_piece("m2", 5_000.0))  # Codex: the item first, with no span
    f.feed(_piece("m2", 6_000.0, output=10, start_ms=4_000.0))  # then its usage record
    f.feed(_piece(None, 8_000.0, output=5, start_ms=7_000.0))  # pi: every record a call
    f.feed(_piece(None, 9_500.0, output=5, start_ms=9_000.0))
    p = f.finish()
    assert (p.turns, p.tokens.output, p.generation_ms) == (4, 60, 2_000.0 + 2_000 + 1_000 + 500)
    assert p.rate_series == [
        RateSegment(1.0, 3.0, 40),
        RateSegment(4.0, 6.0, 10),
        RateSegment(7.0, 8.0, 5),
        RateSegment(9.0, 9.5, 5),
    ]


def test_the_agents_own_interrupt_record_ends_the_turn_aborted() -> None:
    f = SessionFold()
    f.feed(_piece(None, 2_000.0, output=3, start_ms=1_000.0))
    f.feed(UserEntry(None, None, 2_500.0, "[Request interrupted by user]", aborted=True))
    p = f.finish()
    assert p.last_stop_reason == "aborted"
    assert list(p.recent_user_texts) == ["[Request interrupted by user]"]
    f.feed(UserEntry(None, None, 3_000.0, "", aborted=True))  # Codex's: no text of its own
    f.feed(UserEntry(None, None, 3_500.0, "next prompt"))
    p = f.finish()
    assert p.last_stop_reason == "aborted"  # a prompt alone does not end anything
    assert list(p.recent_user_texts) == ["[Request interrupted by user]", "next prompt"]


def _path_figures(p: SessionProgress) -> tuple[object, ...]:
    return (p.in_flight, p.last_text, p.verdict, p.last_stop_reason, p.empty_generation,
            list(p.recent_user_texts))  # fmt: skip


def test_a_path_rebuilt_from_the_kept_records_is_the_path_folded_afresh() -> None:
    """Issue 35: an assistant line is kept for path rebuilds as a slim record (its model,
    usage and timings dropped). Over a seeded session that jumps between branches — calls
    in flight, results, errors, blank and verdict texts — the path figures after every
    line are those of a fold fed only the active path, root to leaf, which reads no
    record."""
    rng = random.Random(35)
    objs: dict[str, dict[str, Any]] = {}
    parent_of: dict[str, str | None] = {}
    incremental = SessionFold()
    incremental.feed(interpret(header()))
    for i in range(400):
        eid, t = f"e{i}", 1_000 * i
        # Mostly on from the last entry; sometimes a rewind to an older one (a branch).
        parent = f"e{i - 1}" if i and rng.random() < 0.7 else None
        if i and parent is None:
            parent = rng.choice(list(objs))
        kind = rng.choice(["user", "assistant", "assistant", "result"])
        if kind == "user":
            obj = user(eid, parent, rng.choice(["", "go on", f"task {i}"]), t)
        elif kind == "result":
            obj = tool_result(eid, parent, f"c{rng.randrange(i + 1)}x0", t)
        else:
            calls = [(f"c{i}x{k}", rng.choice(["bash", "edit"])) for k in range(rng.randint(0, 2))]
            ok = rng.choice(["true", "false"])
            text = rng.choice(["", "  ", f"step {i}", f'ok\n{{"ok": {ok}, "reason": "r{i}"}}'])
            stop = rng.choice(["stop", "toolUse", "error", "aborted"])
            obj = assistant(
                eid, parent, start_ms=t - 500, end_ms=t, text=text, tools=calls, stop=stop
            )
        objs[eid], parent_of[eid] = obj, parent
        incremental.feed(interpret(obj))
        path: list[str] = []
        at: str | None = eid
        while at is not None:
            path.append(at)
            at = parent_of[at]
        afresh = SessionFold()
        for step in reversed(path):
            afresh.feed(interpret(objs[step]))
        assert _path_figures(incremental.finish()) == _path_figures(afresh.finish()), i
