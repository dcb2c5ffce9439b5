"""An in-process agent that dies of an OSError is a failed node with its error (issue 14
item 16): before, it read `settled · no verdict` — a crash passed off as a quiet end."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from supervisor_helpers import FAST, hosted, settled, spawn_one, until

from legion_tui.ledger import LedgerError
from legion_tui.model import NodeStatus

pytestmark = pytest.mark.host


async def test_a_sim_whose_session_file_becomes_unwritable_fails_with_the_error(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        # One long early tool call (0.5 s at speed 1): time to take its file away.
        node = await spawn_one(sup, name="w", sim={"stall_seconds": 0.5 * FAST})
        view = sup.model.nodes[node.id]
        await until(lambda: bool(view.progress.in_flight), 30, "the long tool call")
        session = node.session_file or ""
        os.unlink(session)
        os.mkdir(session)  # its next append: IsADirectoryError, whoever runs it (root too)
        done = await settled(sup, node.id, limit=30)
        assert done.status is NodeStatus.FAILED, (done.status, done.error)
        assert done.error is not None
        assert done.error.startswith("exited with status 1: IsADirectoryError"), done.error


async def test_an_end_the_ledger_cannot_record_is_shown_and_said_loudly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The second half of item 16: the settle's ledger write fails too (a full disk —
    simulated: the ledger's node update raises as SQLite's SQLITE_FULL would surface). The
    node read `running · working …` for ever; now it reads failed, with why it is not
    recorded, and the log says so at CRITICAL."""
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, name="w", sim={"stall_seconds": 0.5 * FAST})
        view = sup.model.nodes[node.id]
        await until(lambda: bool(view.progress.in_flight), 30, "the long tool call")

        async def full_disk(node_id: str, **fields: object) -> None:
            raise LedgerError("legion.db: write failed (database or disk is full)")

        monkeypatch.setattr(sup.ledger, "update_node", full_disk)
        with caplog.at_level(logging.CRITICAL):
            await until(lambda: not sup.model.nodes[node.id].node.live, 30, "the end shown")
        shown = sup.model.nodes[node.id].node
        assert shown.status is NodeStatus.FAILED
        assert shown.error is not None and "not recorded in the ledger" in shown.error
        assert "database or disk is full" in shown.error
        assert "the ledger refused to record it" in caplog.text
        monkeypatch.undo()  # the host's own pause must be able to write again
