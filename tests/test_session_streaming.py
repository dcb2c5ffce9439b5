"""The live tok/s while an agent streams: RPC deltas counted into an open segment, which
the tree's rate adds until the session file holds the message."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from legion_tui.session.live_rate import live_tok_s, open_message
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.session.streaming import PUBLISH_EVERY, StreamingMessage

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def delta(usage_output: int | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "message_update",
        "assistantMessageEvent": {"type": "text_delta", "delta": "tok"},
    }
    if usage_output is not None:
        event["usage"] = {"output": usage_output}  # pi 1.6's delta-only wire form
    return event


def test_deltas_count_into_an_open_segment_published_at_most_every_tenth_of_a_second() -> None:
    clock = Clock(100.0)
    seen: list[RateSegment | None] = []
    stream = StreamingMessage(seen.append, clock)
    stream.feed({"type": "message_start", "message": {"role": "user"}})
    assert seen == []  # only an assistant message is generated
    stream.feed({"type": "message_start", "message": {"role": "assistant"}})
    assert seen == [RateSegment(100.0, 100.0, 0)]
    for _ in range(40):  # 40 deltas in 2 s: 20 tok/s
        clock.t += 0.05
        stream.feed(delta())
    published = [s for s in seen if s is not None]
    assert 10 <= len(published) <= 21, "one publish per PUBLISH_EVERY, not one per delta"
    assert all(b.end - a.end >= PUBLISH_EVERY - 1e-9 for a, b in itertools.pairwise(published))
    last = published[-1]
    assert last.start == 100.0 and last.tokens >= 38
    stream.feed({"type": "message_end", "message": {"role": "assistant"}})
    assert seen[-1] is None  # the file's figures take over


def test_usage_reported_on_the_wire_wins_over_counting_deltas() -> None:
    clock = Clock(0.0)
    seen: list[RateSegment | None] = []
    stream = StreamingMessage(seen.append, clock)
    stream.feed({"type": "message_start", "message": {"role": "assistant"}})
    clock.t = 1.0
    stream.feed(delta(usage_output=57))
    assert seen[-1] == RateSegment(0.0, 1.0, 57)


def test_the_tree_rate_adds_the_open_message_until_the_file_holds_it() -> None:
    done = RateSegment(85.0, 95.0, 100)  # an earlier message, in the file
    progress = SessionProgress(rate_series=[done])
    open_now = RateSegment(95.0, 100.0, 50)  # streaming 10 tok/s, not in the file yet
    assert live_tok_s(progress, 100.0) == 50 / 10.0  # half of `done` in the window
    assert live_tok_s(progress, 100.0, streaming=open_now) == (50 + 50) / 10.0
    # The message landed in the file; its segment starts at the request, a little
    # before the first event, and ends after the open one began: it is the same one.
    landed = SessionProgress(rate_series=[done, RateSegment(94.5, 100.0, 55)])
    assert live_tok_s(landed, 100.0, streaming=open_now) == (50 + 55) / 10.0


def test_the_open_message_counts_until_the_file_holds_it() -> None:
    done = RateSegment(85.0, 95.0, 100)
    open_now = RateSegment(95.0, 100.0, 50)
    assert open_message(SessionProgress(rate_series=[done]), open_now) == open_now
    assert open_message(SessionProgress(rate_series=[done]), None) is None
    landed = SessionProgress(rate_series=[done, RateSegment(94.5, 100.0, 55)])
    assert open_message(landed, open_now) is None  # the tree's `out` would count it twice
