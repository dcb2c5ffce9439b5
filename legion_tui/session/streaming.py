"""The message an agent is generating right now, from its RPC stream (pi's message_update).

pi writes a message to its session file only when it ends, so while it streams the file
says nothing and the tree would read 0 tok/s. The RPC events say more: each
`message_update` carries one delta (a text, thinking or tool-call piece — about one token
on the providers pi speaks to; 1.6 also sends the usage so far, which wins when it counts
output). `StreamingMessage` counts them into an open `RateSegment`; the tree adds it to
the file's rate series until `message_end`, when the file's exact figures take over.

An owner that reads its events in batches (the RPC channels: one read of the pipe, ten
lines or so of a stream) makes it `batched`: deltas only count, and `flush` after each
batch publishes what they moved — once, with the batch's last count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from legion_tui.session.progress import RateSegment

__all__ = ["FLUSH_GAP", "PUBLISH_EVERY", "StreamSink", "StreamingMessage"]

# A delta can come every few ms; the dashboard repaints at most ~30 times a second, so
# the open segment is published at most every 0.1 s (and at each message's start/end).
PUBLISH_EVERY = 0.1
# A batched owner's reads come at its own pace (the channels': 0.1 s while a stream
# trickles); this only bounds the publishes of reads that come faster (a burst).
FLUSH_GAP = PUBLISH_EVERY / 2
_DELTAS = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})

StreamSink = Callable[[RateSegment | None], None]


class StreamingMessage:
    """Feeds on RPC events; tells `sink` the open segment (None once the message ended)."""

    def __init__(
        self, sink: StreamSink, clock: Callable[[], float], *, batched: bool = False
    ) -> None:
        self._sink = sink
        self._clock = clock
        self._batched = batched  # deltas wait for `flush`
        self._start: float | None = None
        self._deltas = 0
        self._usage_output = 0
        self._last = 0.0  # when the segment was last published
        self._published = 0  # the tokens it said then

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                self._start = self._clock()
                self._deltas = self._usage_output = 0
                self._publish()
        elif kind == "message_update" and self._start is not None:
            update = event.get("assistantMessageEvent")
            if isinstance(update, dict) and update.get("type") in _DELTAS:
                self._deltas += 1
            usage = event.get("usage")
            output = usage.get("output") if isinstance(usage, dict) else None
            if isinstance(output, int) and not isinstance(output, bool):
                self._usage_output = output
            if not self._batched and self._clock() - self._last >= PUBLISH_EVERY:
                self._publish()
        elif kind in ("message_end", "agent_end") and self._start is not None:
            self._start = None
            self._sink(None)  # the file's segment replaces it

    def flush(self) -> None:
        """A batch of events ended: publish the open segment if they moved it."""
        if (
            self._start is not None
            and self.tokens != self._published
            and self._clock() - self._last >= FLUSH_GAP
        ):
            self._publish()

    @property
    def tokens(self) -> int:
        return max(self._deltas, self._usage_output)

    def _publish(self) -> None:
        if self._start is None:
            return
        now = self._clock()
        self._last = now
        self._published = self.tokens
        self._sink(RateSegment(self._start, max(now, self._start), self._published))
