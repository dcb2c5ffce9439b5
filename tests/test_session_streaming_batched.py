"""A batched stream (the RPC channels read a chunk of lines at a time): the deltas of one
read are published once, after it, with the read's last count."""

from __future__ import annotations

from typing import Any

import pytest

from legion_tui.session.progress import RateSegment
from legion_tui.session.streaming import FLUSH_GAP, StreamingMessage

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


DELTA: dict[str, Any] = {
    "type": "message_update",
    "assistantMessageEvent": {"type": "text_delta", "delta": "tok"},
}


def test_the_deltas_of_one_read_are_published_once_after_it() -> None:
    clock = Clock(10.0)
    seen: list[RateSegment | None] = []
    stream = StreamingMessage(seen.append, clock, batched=True)
    stream.feed({"type": "message_start", "message": {"role": "assistant"}})
    assert seen == [RateSegment(10.0, 10.0, 0)]
    clock.t = 10.5
    for _ in range(12):  # one read: twelve deltas, long after the last publish
        stream.feed(DELTA)
    assert len(seen) == 1, "a batched stream publishes at the read's end, not at a delta"
    stream.flush()
    assert seen[-1] == RateSegment(10.0, 10.5, 12)
    stream.flush()  # nothing moved since
    assert len(seen) == 2


def test_reads_faster_than_the_gap_are_published_at_most_once_per_gap() -> None:
    clock = Clock(0.0)
    seen: list[RateSegment | None] = []
    stream = StreamingMessage(seen.append, clock, batched=True)
    stream.feed({"type": "message_start", "message": {"role": "assistant"}})
    for _ in range(100):  # a burst: one delta a read, 1 ms apart
        clock.t += 0.001
        stream.feed(DELTA)
        stream.flush()
    published = [s for s in seen[1:] if s is not None]
    assert 1 <= len(published) <= 0.1 / FLUSH_GAP + 1
    stream.feed({"type": "message_end"})
    assert seen[-1] is None
