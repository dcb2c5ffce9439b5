"""A stored verdict that is not JSON (a damaged or hand-edited ledger row) reads as no
verdict: `wait`, `collect` and `status` answer instead of crashing the supervisor."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from supervisor_helpers import hosted, settled, spawn_one, until

from legion_tui.model import NodeStatus
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host

DAMAGED = '{"ok": tru'  # cut off mid-write


async def test_a_corrupt_stored_verdict_reads_as_none_and_nothing_crashes(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path, "s") as first:
        x = await spawn_one(first, name="x")
        await settled(first, x.id)
        original = first.names.node(x.id).verdict_data
        assert original is not None and original["ok"] is True
        ledger_path = first.run.ledger_path
    # The host is gone; the row is damaged on disk, in the real SQLite file.
    with sqlite3.connect(ledger_path) as conn:
        conn.execute("UPDATE nodes SET verdict = ? WHERE id = ?", (DAMAGED, x.id))
    conn.close()

    async with hosted(tmp_path, "s") as again:
        node = again.names.node(x.id)
        assert node.verdict == DAMAGED and node.status is NodeStatus.SETTLED
        waited = await again.queries.wait(ROOT_ID, ["x"], 1.0)
        assert waited["state"] == "settled"
        assert waited["nodes"][0]["verdict"] is None
        # collect falls back to the verdict in the node's own session file.
        progress = again.progress_watch.progress
        await until(lambda: progress(x.id).verdict is not None, what="x's session read")
        collected = await again.queries.collect(ROOT_ID, "x")
        assert collected["verdict"] == original
        (entry,) = again.queries.status(ROOT_ID, "x")["nodes"]
        assert entry["verdict"] is None
        # …and the supervisor is still serving: a new child runs and settles.
        y = await spawn_one(again, name="y")
        assert (await settled(again, y.id)).status is NodeStatus.SETTLED
