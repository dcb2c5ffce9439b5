"""After the dashboard quits, `legion status` and the reopened dashboard use one word for
the agents the exit paused (issue 13): interrupted and resumable — `status` said a bare
`retired` (interrupted false) where the dashboard said `interrupted · r resumes`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_helpers import NOW
from supervisor_helpers import hosted, run_cli, settled, spawn_one, stuck_worker

from legion_tui.model import NodeStatus
from legion_tui.widgets.tree.rows import activity

pytestmark = pytest.mark.host


async def test_status_read_from_the_ledger_says_interrupted_as_the_dashboard_does(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        w = await stuck_worker(sup, "w")
        done = await spawn_one(sup, name="done")
        await settled(sup, done.id)
    # The host is gone: `legion status` reads the ledger.
    code, out, err = await run_cli("status", "--json", cwd=tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["live"] is False
    by_name = {n["name"]: n for n in doc["nodes"]}
    assert by_name["w"]["status"] == "retired" and by_name["w"]["interrupted"] is True
    assert by_name["done"]["interrupted"] is False  # it had settled: nothing to resume
    assert by_name["root"]["interrupted"] is False
    code, out, _ = await run_cli("status", "w", cwd=tmp_path)
    assert code == 0 and "retired · interrupted by the last exit (legion resume w)" in out
    # The same session reopened: the dashboard's row says the same thing.
    async with hosted(tmp_path) as sup:
        view = sup.model.nodes[w.id]
        assert view.node.status is NodeStatus.RETIRED and view.interrupted
        assert activity(view, NOW).text == "interrupted · r resumes"
