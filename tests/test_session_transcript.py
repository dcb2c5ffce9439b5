"""Lazy transcript pages: a 50 MB session opens at once; pages render conversation items."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_helpers import V1_FIXTURE, assistant, conversation, header, line, user

from legion_tui.session.transcript import TranscriptPager

pytestmark = pytest.mark.unit


def test_pages_of_a_small_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(conversation(2) + b"garbage\n")
    pager = TranscriptPager(path)
    first = pager.page(0, 3)
    assert [i.role for i in first] == ["session", "user", "assistant"]
    assert first[1].text == "task 0 — ünïcödé ✓"
    assert first[2].tools == ("bash(a=1)",)
    second = pager.page(1, 3)
    assert [i.role for i in second] == ["toolResult", "assistant", "user"]
    assert second[0].tools == ("bash",) and second[0].text == "ok"
    assert [i.line for i in second] == [3, 4, 5]
    last = pager.page(3, 3)
    assert [i.role for i in last] == ["invalid"]
    assert pager.page(4, 3) == [] and pager.at_end
    assert pager.count_known() == 10


def test_v1_fixture_renders_tool_calls_and_the_aborted_reply() -> None:
    items = TranscriptPager(V1_FIXTURE).page(0, 10)
    assert len(items) == 7
    assert items[2].role == "assistant" and items[2].text == "Request was aborted"
    assert items[3].role == "model_change" and items[3].text == "claude-sonnet-4-5"
    assert [t.split("(")[0] for t in items[5].tools] == ["read", "read", "bash"]
    assert items[5].tools[2] == (
        'bash(command="find packages/coding-agent/src -name \\"*selector.ts\\" -type f")'
    )
    assert items[6].role == "toolResult" and items[6].text.startswith("# Pi Coding Agent Themes")


def test_fifty_megabyte_session_first_page_reads_only_its_start(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    filler = "x" * 10_000
    one = line(user("u", None, filler, 1)) + line(
        assistant("a", "u", start_ms=1, end_ms=2, text=filler)
    )
    with open(path, "wb") as f:
        f.write(line(header()))
        while f.tell() < 50 * 1024 * 1024:
            f.write(one * 100)
    assert path.stat().st_size >= 50 * 1024 * 1024
    pager = TranscriptPager(path)
    items = pager.page(0, 50)
    assert len(items) == 50
    # Only the start of the file was indexed, not its 5000+ lines.
    assert pager.count_known() < 500
    assert len(items[1].text) <= 2000  # a summary, not the 10 kB text


def test_growing_file_and_partial_last_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    whole = conversation(1)
    path.write_bytes(whole[:-10])  # the last line is still being written
    pager = TranscriptPager(path)
    assert len(pager.page(0, 100)) == 4  # the partial fifth line is not an item yet
    with open(path, "ab") as f:
        f.write(whole[-10:])
    assert len(pager.page(0, 100)) == 5
    # Replaced by a shorter file: the index starts again.
    path.write_bytes(line(header()))
    assert [i.role for i in pager.page(0, 100)] == ["session"]


def test_index_more_walks_to_the_end_in_bounded_steps_and_stale_sees_growth(
    tmp_path: Path,
) -> None:
    from legion_tui.session.transcript import SCAN_CHUNK

    path = tmp_path / "s.jsonl"
    one = conversation(1)
    path.write_bytes(one * (3 * SCAN_CHUNK // len(one) + 1))  # a bit over 3 chunks
    pager = TranscriptPager(path)
    assert pager.stale()
    steps = 1
    while not pager.index_more(SCAN_CHUNK):
        steps += 1
        assert pager.count_known() < path.read_bytes().count(b"\n")
    assert steps == 4 and not pager.stale()
    lines = path.read_bytes().count(b"\n")
    assert pager.count_known() == lines
    with open(path, "ab") as f:
        f.write(line(user("late", None, "late", 5)))
    assert pager.stale()
    assert pager.index_more(SCAN_CHUNK) and pager.count_known() == lines + 1
    assert pager.page(lines // 10, 10)[-1].text == "late"
    # Replaced: the index restarts and says so.
    assert pager.generation == 0
    path.write_bytes(line(header()))
    assert pager.stale() and pager.index_more(SCAN_CHUNK)
    assert pager.generation == 1 and pager.count_known() == 1
