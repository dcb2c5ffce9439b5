"""The RPC read loop survives any output (review finding 4): long lines are bounded and
split in linear time, and a line that cannot be decoded or handled fails alone."""

from __future__ import annotations

import asyncio
import itertools
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from process_helpers import until

from legion_tui.supervisor.backends.pi.rpc import RpcClient
from legion_tui.wire.lines import LineSplitter, split_lines

pytestmark = pytest.mark.unit


class Sink:
    def write(self, data: bytes) -> None:
        return None

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    async def wait_closed(self) -> None:
        return None


@given(
    data=st.lists(st.sampled_from([b"a", b"\n", b"\r", b"{}", b"\xe2\x80\xa8"]), max_size=60),
    cuts=st.lists(st.integers(0, 200), max_size=10),
)
def test_the_splitter_over_any_chunking_equals_one_split(
    data: list[bytes], cuts: list[int]
) -> None:
    whole = b"".join(data)
    bounds = sorted({0, len(whole), *(c for c in cuts if c < len(whole))})
    splitter = LineSplitter()
    got: list[bytes] = []
    for lo, hi in itertools.pairwise(bounds):
        got += splitter.feed(whole[lo:hi])
    assert got == split_lines(whole)[0]


def test_an_over_long_line_is_dropped_as_it_streams_and_counted() -> None:
    splitter = LineSplitter(max_line_bytes=100)
    assert splitter.feed(b"x" * 60) == []
    assert splitter.feed(b"x" * 60) == []  # over the limit: dropped, not buffered
    assert splitter._size == 0 and splitter.too_long == 1
    assert splitter.feed(b"y" * 500 + b'tail\n{"ok":1}\n') == [b'{"ok":1}']
    assert splitter.too_long == 1
    assert splitter.feed(b"z" * 100 + b"\n") == [b"z" * 100]  # exactly the limit is kept


def test_a_long_line_in_small_chunks_is_split_in_linear_time() -> None:
    # 8 MiB in 4 KiB chunks: re-splitting buffer + chunk each time copies ~16 GiB. Linear
    # without a clock: what an unfinished line holds is the chunks as they came (no copy
    # of what came before), joined once when its newline comes.
    splitter = LineSplitter()
    pieces = [bytes([65 + n % 26]) * 4096 for n in range(2048)]
    for piece in pieces:
        assert splitter.feed(piece) == []
    assert len(splitter._pieces) == len(pieces)
    assert all(kept is piece for kept, piece in zip(splitter._pieces, pieces, strict=True))
    (line,) = splitter.feed(b"\n")
    assert line == b"".join(pieces) and len(line) == 8 * 1024 * 1024


async def test_the_loop_outlives_bad_lines_and_a_failing_hook() -> None:
    reader = asyncio.StreamReader()
    seen: list[str] = []

    def hook(event: dict[str, object]) -> None:
        if event.get("type") == "boom":
            raise KeyError("a supervisor bug")
        seen.append(str(event.get("type")))

    depth = 2 * sys.getrecursionlimit()  # deep enough for json's RecursionError
    rpc = RpcClient(Sink(), reader, on_event=hook, max_line_bytes=2 * depth + 10)
    reader.feed_data(b'{"type":"agent_start"}\n')
    assert await until(lambda: rpc.streaming)
    reader.feed_data(b"[" * depth + b"]" * depth + b"\n")  # RecursionError in json
    reader.feed_data(b'{"x":"' + b"y" * 3 * depth + b'"}\n')  # over the line limit
    reader.feed_data(b'{"x":"\xc3\x28"}\n')  # not UTF-8
    reader.feed_data(b'{"type":"boom"}\n')
    reader.feed_data(b'{"type":"turn_start"}\n')
    assert await until(lambda: rpc.turns == 1)
    assert rpc.skipped_lines == 3
    assert seen == ["agent_start", "turn_start"]
    assert rpc.streaming and not rpc.closed.is_set()  # still running: not settled
    reader.feed_eof()
    await asyncio.wait_for(rpc.closed.wait(), 2.0)
