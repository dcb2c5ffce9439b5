"""An in-process agent that dies of an OSError is a failed node with its error (issue 14
item 16): before, it read `settled · no verdict` — a crash passed off as a quiet end."""

from __future__ import annotations

import os
from pathlib import Path

from supervisor_helpers import FAST, hosted, settled, spawn_one, until

from legion_tui.model import NodeStatus


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
