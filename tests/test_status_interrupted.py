"""After the dashboard quits, `legion status` and the reopened dashboard use one word for
the agents the exit paused (issue 13): interrupted and resumable — `status` said a bare
`retired` (interrupted false) where the dashboard said `interrupted · r resumes`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_helpers import NOW
from supervisor_helpers import AS_PRINTED as AS_RUN
from supervisor_helpers import STUCK, hosted, run_cli, settled, spawn_one, stuck_worker

from legion_tui.model import NodeStatus
from legion_tui.widgets.tree.rows import activity
from legion_tui.wire.names import ROOT_ID

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
    # No host: the hint says how to start one first (issue 33: it printed a bare
    # `legion resume w`, refused with "no live legion supervisor").
    assert code == 0 and (
        "retired · interrupted by the last exit (resume: "
        f"`{AS_RUN} tui --session main`, then `{AS_RUN} resume w`)" in out
    ), out
    # The same session reopened: the dashboard's row says the same thing.
    async with hosted(tmp_path) as sup:
        view = sup.model.nodes[w.id]
        assert view.node.status is NodeStatus.RETIRED and view.interrupted
        assert activity(view, NOW).text == "interrupted · r resumes"


async def test_the_resume_hint_names_a_node_others_share_a_name_with_by_its_path(
    tmp_path: Path,
) -> None:
    """Issue 33: `(legion resume worker-0)` where several nodes are named worker-0 was
    refused as ambiguous. The hint prints the path below root, and runs as printed."""
    async with hosted(tmp_path) as sup:
        leads = [await spawn_one(sup, "centurion", name=n, sim=dict(STUCK)) for n in "ab"]
        for lead in leads:
            await stuck_worker(sup, "w", caller=lead.id)
        doc = sup.queries.status(ROOT_ID)
        by_path = {n["path"]: n for n in doc["nodes"]}
        assert "resume" not in by_path["root/a/w"]  # live: nothing to resume
    code, out, err = await run_cli("status", "--json", cwd=tmp_path)
    assert code == 0, err
    hints = {n["path"]: n.get("resume") for n in json.loads(out)["nodes"]}
    # Its lead first, in one command (a member's resume is refused while its lead has ended).
    assert hints["root/a/w"] == (
        f"`{AS_RUN} tui --session main`, then `{AS_RUN} resume a/w --with-parents`"
    )
    assert hints["root/b"] == f"`{AS_RUN} tui --session main`, then `{AS_RUN} resume b`"
    async with hosted(tmp_path):  # the host the hint says to start
        code, _out, err = await run_cli("resume", "w", cwd=tmp_path)
        assert code == 1 and "names several nodes" in err  # what the hint printed before
        code, _out, err = await run_cli("resume", "a/w", cwd=tmp_path)
        # The host's hint, as this shell runs legion (the host cannot know how it does).
        assert code == 1 and "resume a first" in err, err
        assert f"`{AS_RUN} resume a/w --with-parents` resumes both" in err, err
        code, out, err = await run_cli("resume", "a/w", "--with-parents", cwd=tmp_path)
        assert code == 0, err
        assert [line.split(" on ")[0] for line in out.splitlines()] == ["Resumed a", "Resumed w"]
        code, out, err = await run_cli("resume", "b", cwd=tmp_path)
        assert code == 0 and "Resumed b" in out, err
        code, _out, err = await run_cli("resume", "--all", "--with-parents", cwd=tmp_path)
        assert code == 1 and "--with-parents goes with a NAME" in err, err
