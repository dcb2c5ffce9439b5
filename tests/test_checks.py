"""The project's checks on an agent's work, and the loop back to it (issue 34 items 2
and 3), with the real pi: a worker in its own worktree settles, `[checks] command` runs
there and fails, the failure (the command and its output's end) goes back to the worker
as a follow-up on its session — the server's next request carries it — and the checks
run again at each settle until they pass; the row, the events and `legion status` say so.
Then: the rounds run out (told once), and a check that hangs is ended at its bound with
its process group."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from model_server import Text, ToolCall
from real_pi_helpers import (
    TURN_LIMIT,
    PiWorld,
    by_env,
    pi_host,
    settle,
    spawn_pi,
    verdict_line,
    world,
)
from supervisor_helpers import GIT_ENV, hosted, settled, spawn_one, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.hearing.status import render_status
from legion_tui.supervisor.teams.verify import verify_marker
from legion_tui.widgets.tree.rows import activity
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.real

__all__ = ["world"]  # the fixture, imported for its tests

CHECK = "cat result.txt; grep -q fixed result.txt"


def _commit_and_set_checks(project: Path, checks: str, *, init: bool = False) -> None:
    """A first commit (a worktree is cut from it) and the project's `[checks]`."""
    if init:
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True,
                       env=GIT_ENV)  # fmt: skip
    (project / "README.md").write_text("a project\n")
    subprocess.run(["git", "add", "README.md"], cwd=project, check=True, env=GIT_ENV)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=project, check=True, env=GIT_ENV)
    settings = project / ".legion" / "settings.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(checks)


def _checks(sup, node_id: str) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    return [dict(e.data) for e in sup.model.nodes[node_id].events if e.type is EventType.CHECKS]


@pytest.mark.parametrize("world", ["1.6"], indirect=True)
async def test_failing_checks_go_back_to_the_agent_until_they_pass(world: PiWorld) -> None:
    _commit_and_set_checks(world.project, f'[checks]\ncommand = "{CHECK}"\nretries = 2\n')
    world.server.script(
        ToolCall("bash", {"command": "printf broken > result.txt"}),
        Text(f"Wrote it.\n{verdict_line('wrote result.txt')}", tokens=4),
        ToolCall("bash", {"command": "printf still-broken > result.txt"}),
        Text(f"Tried again.\n{verdict_line('tried again')}", tokens=4),
        ToolCall("bash", {"command": "printf fixed > result.txt"}),
        Text(f"Fixed.\n{verdict_line('fixed it')}", tokens=4),
    )
    async with pi_host(world) as sup:
        node = await spawn_pi(sup, "maker", "Write result.txt.")
        tree = sup.teams.worktree_of(node.id)
        assert tree is not None and sup.teams.holder_of(node.id) == node.id

        def states() -> list[object]:
            return [c["state"] for c in _checks(sup, node.id)]

        await until(lambda: states()[-1:] == ["pass"], 3 * TURN_LIMIT, "the checks to pass")
        assert states() == ["running", "fail", "running", "fail", "running", "pass"]
        first, second = [c for c in _checks(sup, node.id) if c["state"] == "fail"]
        assert first["summary"] == f"`{CHECK}` exit 1" and first["round"] == 0
        assert second["round"] == 1 and not second["exhausted"]
        # Each failure reached the agent as a follow-up: the next request carries it.
        requests = [json.dumps(r.body) for r in world.server.requests()]
        assert len(requests) == 6
        assert "checks failed on your work" in requests[2] and "broken" in requests[2]
        assert "round 1 of 2" in requests[2] and "round 2 of 2" in requests[4]
        assert "still-broken" in requests[4]
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED
        assert (tree.path / "result.txt").read_text() == "fixed"
        assert not (world.project / "result.txt").exists()  # the worktree's, not yours
        assert activity(sup.model.nodes[node.id], time.time()).text == "✓ fixed it · ✓ checks"
        text = render_status(sup.queries.status(ROOT_ID))
        assert "✓ checks" in text, text


async def test_checks_that_keep_failing_are_told_once_and_a_hang_is_ended(
    tmp_path: Path,
) -> None:
    """With no retries the failure is the user's at once (its row, one announcement);
    a check past its `timeout` is stopped with every process it started."""
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "doer.md").write_text(
        "---\nname: doer\ndescription: Runs a script.\nkind: exec\nrole: worker\n"
        'command: ["sh", "-c", "echo done"]\n---\nDo.\n', encoding="utf-8",
    )  # fmt: skip
    _commit_and_set_checks(tmp_path, '[checks]\ncommand = "exit 3"\nretries = 0\n', init=True)
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, "doer", name="d")
        assert (await settled(sup, node.id, 30)).status is NodeStatus.SETTLED
        await until(lambda: any(c["state"] == "fail" for c in _checks(sup, node.id)), 30)
        fail = _checks(sup, node.id)[-1]
        assert fail["exhausted"] is True and fail["summary"] == "`exit 3` exit 3"
        row = activity(sup.model.nodes[node.id], time.time())
        assert (row.text, row.tone) == ("✗ checks: `exit 3` exit 3", "fail")
        told = [a for a in sup.model.announcements if "checks still fail" in a]
        assert len(told) == 1 and "(no retries set)" in told[0], told
        # A check that hangs: ended at its bound, its process group with it.
        settings = tmp_path / ".legion" / "settings.toml"
        settings.write_text('[checks]\ncommand = "sleep 300"\ntimeout = 1\nretries = 0\n')
        second = await spawn_one(sup, "doer", name="e")
        await until(lambda: any(c["state"] == "fail" for c in _checks(sup, second.id)), 30)
        hung = _checks(sup, second.id)[-1]
        assert hung["summary"] == "`sleep 300` timed out after 1s", hung
        assert by_env("LEGION_NODE_ID", verify_marker(second.id)) == []
