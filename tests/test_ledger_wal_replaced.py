"""A WAL deleted or replaced under the host is noticed, said loudly, and never written into
again (issue 14 item 18): before, nothing noticed, and after a later `kill -9` 3 of 8 nodes
and their events were gone — they had been committed into a deleted file."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from ledger_helpers import make_node

from legion_tui.ledger import LedgerError, open_ledger
from legion_tui.model import EventType

pytestmark = pytest.mark.unit


def _counts(path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(path)
    try:
        nodes = conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        conn.close()
    return nodes, events


def _replace_with_junk(path: Path) -> None:
    path.unlink()
    path.write_bytes(b"\0" * 64)  # someone else's file at the path


async def test_a_deleted_wal_is_saved_and_writing_goes_on_in_a_new_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "legion.db"
    ledger = await open_ledger(path, create=True)
    try:
        for i in range(8):
            await ledger.insert_nodes([make_node(f"n{i}")])
            await ledger.append_event(f"n{i}", EventType.NODE_LAUNCHED, {"i": i})
        for suffix in ("-wal", "-shm"):
            os.unlink(f"{path}{suffix}")  # an agent, a cleanup script, a user's rm
        with caplog.at_level(logging.CRITICAL):
            await ledger.insert_nodes([make_node("late")])
        assert "WAL files were deleted while this host was writing" in caplog.text
        # What a `kill -9` now would leave on disk: the ledger and its (new) WAL.
        crash = tmp_path / "crash"
        crash.mkdir()
        for suffix in ("", "-wal"):
            shutil.copy(f"{path}{suffix}", crash / f"legion.db{suffix}")
        assert _counts(crash / "legion.db") == (9, 8)  # nothing lost, before or after
    finally:
        await ledger.close()
    assert _counts(path) == (9, 8)


async def test_a_replaced_wal_stops_writes_and_is_never_applied(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "legion.db"
    ledger = await open_ledger(path, create=True)
    try:
        await ledger.insert_nodes([make_node("n0")])
        for suffix in ("-wal", "-shm"):
            _replace_with_junk(Path(f"{path}{suffix}"))
        with caplog.at_level(logging.CRITICAL), pytest.raises(LedgerError) as refused:
            await ledger.insert_nodes([make_node("late")])
        assert "was deleted or replaced while this host was writing" in str(refused.value)
        assert "writes stop here" in caplog.text  # loud, not only to the one caller
        with pytest.raises(LedgerError):
            await ledger.append_event("n0", EventType.NODE_SETTLED, {})  # still refused
    finally:
        await ledger.close()


async def test_a_ledger_removed_with_its_folder_is_never_made_again_empty(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The run folder removed under the host, then made again (git, working in the demo's
    sandbox repository inside it, makes its folders again): before, the writer opened a
    new empty ledger at the path and every write failed with "no such table: nodes"."""
    folder = tmp_path / "run"
    folder.mkdir()
    path = folder / "legion.db"
    ledger = await open_ledger(path, create=True)
    try:
        await ledger.insert_nodes([make_node("n0")])
        shutil.rmtree(folder)
        folder.mkdir()
        with caplog.at_level(logging.CRITICAL), pytest.raises(LedgerError) as refused:
            await ledger.insert_nodes([make_node("late")])
        assert "the ledger was deleted or replaced while this host was writing" in str(
            refused.value
        )
        assert "writes stop here" in caplog.text
    finally:
        await ledger.close()
    assert list(folder.iterdir()) == []  # no empty ledger made in its place
