"""Memory bounded by what is shown (issue 14 item 25): a session of 500 000 entries, each
with a tool call never answered (263 MB), took 22.9 s and 500 MB RSS in `legion inspect`,
and the host folds the same way: every entry was kept for path rebuilds and every open
call in the in-flight stack, rebuilt whole at each batch (O(n²)). Now the newest 64 calls
in flight and the newest 10 000 entries by id were kept (2 000 slim ones since issue 35):
9.9 s and 99 MB for that file."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from legion_tui.session.fold import MAX_OPEN_TOOLS
from legion_tui.session.reader import SessionReader, read_session

pytestmark = pytest.mark.unit

ENTRIES = 30_000


def _write_session(path: Path, n: int) -> None:
    lines = [json.dumps({"type": "session", "version": 3, "id": "h", "cwd": "/x",
                         "timestamp": "2026-12-01T00:00:00.000Z"})]  # fmt: skip
    parent = None
    for i in range(n):
        entry_id = f"e{i:07d}"
        message = {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "working on it " * 8},
                {"type": "toolCall", "id": f"c{i}", "name": "bash",
                 "arguments": {"command": "echo " + "x" * 120}},
            ],
            "usage": {"input": 10, "output": 30},
            "stopReason": "toolUse",
            "timestamp": 1_764_547_200_000 + i * 10,
        }  # fmt: skip
        stamp = f"2026-12-01T00:{(i // 60_000) % 60:02d}:{(i // 1000) % 60:02d}.{i % 1000:03d}Z"
        lines.append(json.dumps({"type": "message", "id": entry_id, "parentId": parent,
                                 "timestamp": stamp, "message": message}))  # fmt: skip
        parent = entry_id
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_huge_session_is_folded_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    _write_session(path, ENTRIES)
    tracemalloc.start()
    try:
        progress = read_session(path)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Figures of every entry still add up (the counts are kept, not the entries)…
    assert progress.entries == ENTRIES and progress.tokens.output == 30 * ENTRIES
    # …while what is held is what is shown: the newest calls, the newest on top.
    assert len(progress.in_flight) == MAX_OPEN_TOOLS
    assert progress.in_flight[-1].id == f"c{ENTRIES - 1}"
    # 30 000 entries, traced: held afterwards 9.6 MB before (every entry and every open
    # call kept), 3.5 MB after (most of it the rate series the chart draws, one segment
    # per call); the peak (one batch of lines decoded on top) 31 MB before, 12.3 MB after.
    assert held < 6_000_000, f"held {held / 1e6:.1f} MB"
    assert peak < 20_000_000, f"peak {peak / 1e6:.1f} MB"


def test_a_live_readers_records_stay_few_and_slim(tmp_path: Path) -> None:
    """Issue 35: the host keeps a reader per live agent, and each kept a record per line
    (up to 10 000, the whole entry: model, usage, timings) — ≈ 0.7 KB a one-line answer,
    7 MB an agent after three hours at a line a second. Now 2 000 slim records."""
    path = tmp_path / "live.jsonl"
    _write_session(path, 6_000)
    tracemalloc.start()
    try:
        reader = SessionReader(path, max_bytes_per_poll=1 << 30)
        reader.poll()
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reader.progress.entries == 6_000
    # Held with the reader alive: 5.4 MB before (6 000 whole records), 2.2 MB after —
    # most of it the 6 000 rate segments and the 2 000 records' ids and texts.
    assert held < 3_000_000, f"held {held / 1e6:.1f} MB"
