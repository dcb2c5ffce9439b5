"""`legion demo --headless` tells the whole team story, as a real subprocess:

- a declared team goes planning → implementing → reviewing → verifying → done with a
  `legion-verify` command that really ran, and delivers a branch with commits;
- another fails its (stricter) verification honestly and says so;
- letters reach DELIVERED on the evidence of the members' sessions;
- all of it in a sandbox repository the demo owns: the user's repository is untouched;
- without git on PATH the demo still runs (no worktrees).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import LEGION, cli_env, git

from legion_tui.runs.catalog import find_session_run

pytestmark = pytest.mark.host


async def _demo(cwd: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        LEGION, "demo", "--headless", "--json", *args,
        cwd=cwd, env=env or cli_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    report: dict[str, Any] = json.loads(out)
    return report


def _user_repo(path: Path) -> dict[str, str]:
    """A user's repository with one commit, an untracked file and `.legion/` ignored."""
    git(path, "init", "-q")
    (path / ".gitignore").write_text(".legion/\n")
    (path / "app.py").write_text("print('mine')\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "mine")
    (path / "notes.txt").write_text("untracked, and staying so\n")
    return _repo_state(path)


def _repo_state(path: Path) -> dict[str, str]:
    return {
        "branches": git(path, "branch", "--all", "--verbose", "--no-abbrev"),
        "worktrees": git(path, "worktree", "list", "--porcelain"),
        "status": git(path, "status", "--porcelain", "--ignored=no"),
        "head": git(path, "rev-parse", "HEAD"),
        "refs": git(path, "for-each-ref"),
    }


def _run_dir(project: Path, report: dict[str, Any]) -> Path:
    info = find_session_run(project, report["session"])
    assert info is not None
    return info.dir


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


async def test_teams_reach_done_and_fail_honestly_in_a_sandbox_the_demo_owns(
    tmp_path: Path,
) -> None:
    before = _user_repo(tmp_path)
    report = await _demo(tmp_path, "--duration", "12", "--speed", "20")
    assert _repo_state(tmp_path) == before  # the user's repository: not one byte of git

    teams = {t["name"]: t for t in report["teams"]}
    done, failed = teams["lead-1"], teams["lead-2"]
    assert done["phase"] == "done" and done["verdict"]["ok"] is True
    assert failed["phase"] == "failed" and failed["verdict"]["ok"] is False
    assert "verification" in failed["verdict"]["reason"]
    assert teams["lead-0"]["phase"] == "implementing"  # held by its stuck member
    assert report["mail"]["delivered"] >= 1

    run_dir = _run_dir(tmp_path, report)
    sandbox = run_dir / "demo-repo"
    delivery = done["delivery"]
    assert delivery["branch"].startswith("legion/lead-1-") and delivery["commits"] >= 1
    assert git(sandbox, "rev-parse", delivery["branch"]) == delivery["head_sha"]
    authors = git(sandbox, "log", "--format=%an", delivery["branch"]).splitlines()
    assert authors[-1] == "legion demo"  # the seed commit; the members made the rest
    assert all(a.startswith("worker-") for a in authors[:-1])
    assert len(authors) == delivery["commits"] + 1
    refs = "--format=%(refname:short)"
    branches = git(sandbox, "for-each-ref", refs, "refs/heads/legion/").split()
    assert {b.rsplit("-", 1)[0] for b in branches} == {
        "legion/lead-0",
        "legion/lead-1",
        "legion/lead-2",
    }

    db = run_dir / "legion.db"
    phases = [
        json.loads(data)["to"]
        for (data,) in _rows(
            db,
            "SELECT e.data FROM events e JOIN nodes n ON n.id = e.node_id "
            "WHERE n.name = 'lead-1' AND e.type = 'phase_change' ORDER BY e.id",
        )
    ]
    assert phases == ["implementing", "reviewing", "verifying", "done"]
    ((verified,),) = _rows(
        db,
        "SELECT e.data FROM events e JOIN nodes n ON n.id = e.node_id "
        "WHERE n.name = 'lead-1' AND e.type = 'verification_result'",
    )
    commands = json.loads(verified)["commands"]
    assert [(c["command"], c["exit_code"]) for c in commands] == [("git log --oneline -1", 0)]
    ((settled,),) = _rows(
        db,
        "SELECT e.data FROM events e JOIN nodes n ON n.id = e.node_id "
        "WHERE n.name = 'lead-1' AND e.type = 'node_settled'",
    )
    assert json.loads(settled)["delivery"]["head_sha"] == delivery["head_sha"]
    # The failed team's parent heard it (the host's root reads its mail on the dashboard).
    assert _rows(db, "SELECT subject FROM messages WHERE to_node = 'root'") == [
        ("Team failed: lead-2",)
    ]


async def test_a_half_minute_demo_at_the_default_speed_delivers_mail(tmp_path: Path) -> None:
    report = await _demo(tmp_path, "--duration", "30")
    db = _run_dir(tmp_path, report) / "legion.db"
    delivered = _rows(
        db,
        "SELECT m.kind, a.name, b.name FROM messages m JOIN nodes a ON a.id = m.from_node "
        "JOIN nodes b ON b.id = m.to_node WHERE m.delivered = 3",
    )
    assert delivered, "no letter was DELIVERED"
    assert report["mail"]["delivered"] == len(delivered)
    kinds = {kind for kind, _, _ in _rows(db, "SELECT kind, 1, 1 FROM messages")}
    assert {"handoff", "report"} <= kinds  # leads hand over, members report back
    # Issue 33: two handoffs went to scouts that had already ended, and bounced.
    bounced = _rows(db, "SELECT m.kind, b.path FROM messages m JOIN nodes b "
                        "ON b.id = m.to_node WHERE m.delivered = 2")  # fmt: skip
    assert bounced == []


async def test_without_git_the_demo_runs_without_worktrees(tmp_path: Path) -> None:
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    env = cli_env() | {"PATH": str(empty_path)}
    report = await _demo(project, "--duration", "10", "--speed", "20", env=env)
    assert report["nodes"] == 20
    teams = {t["name"]: t for t in report["teams"]}
    assert teams["lead-1"]["phase"] == "done"  # its contract's default check ran
    assert all("delivery" not in t for t in teams.values())
    run_dir = _run_dir(project, report)
    assert not (run_dir / "demo-repo").exists()
    assert not [p for p in project.rglob(".git")]
    assert os.listdir(project) == [".legion"]
