"""A simulated worker in a worktree makes real, small, deterministic commits there — and
writes nothing anywhere without one."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from legion_tui.git.worktree import create_sandbox_repo
from legion_tui.sim.agent import SimAgent
from legion_tui.sim.clock import CatchUpClock, FakeClock
from legion_tui.sim.config import SimConfig
from legion_tui.sim.script import EDIT_NEW, EDIT_OLD, SANDBOX_FILES

pytestmark = pytest.mark.host


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def _config(tmp_path: Path, cwd: Path, behaviour: dict[str, object]) -> SimConfig:
    return SimConfig(
        node_id="w1",
        name="worker-0",
        role="worker",
        session_file=tmp_path / "sessions" / "w1.jsonl",
        run_dir=tmp_path,
        cwd=cwd,
        seed=5,
        behaviour=behaviour,
    )


async def _run(cfg: SimConfig) -> list[dict[str, object]]:
    agent = SimAgent(cfg, clock=FakeClock())
    agent.prompt("Fix the retry path.")
    await asyncio.wait_for(agent.wait_idle(), 20.0)
    await agent.close()
    lines = [json.loads(x) for x in cfg.session_file.read_text().splitlines()]
    return [
        e["message"]
        for e in lines
        if e["type"] == "message"
        and e["message"]["role"] == "toolResult"
        and e["message"]["toolName"] == "edit"
    ]


async def test_edits_in_a_worktree_are_commits_on_its_branch(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = await create_sandbox_repo(repo, SANDBOX_FILES, "seed")
    results = await _run(_config(tmp_path, repo, {"quick": True, "worktree": str(repo)}))
    assert results and not any(r["isError"] for r in results)
    commits = _git(repo, "log", "--format=%an|%s", f"{base}..HEAD").splitlines()
    assert len(commits) == len(results)
    assert all(c.startswith(f"worker-0|worker-0: {EDIT_NEW} in ") for c in commits)
    changed = _git(repo, "diff", "--name-only", base, "HEAD").split()
    assert changed
    for rel in changed:  # each edit set the timeout (or noted it was set already)
        text = (repo / rel).read_text()
        assert EDIT_NEW in text and (EDIT_OLD not in text or "# worker-0" in text)
    assert _git(repo, "status", "--porcelain") == ""  # every edit was committed
    # Deterministic: the same seed in a fresh sandbox makes the same change.
    again = tmp_path / "again"
    await create_sandbox_repo(again, SANDBOX_FILES, "seed")
    second = tmp_path / "second"
    second.mkdir()
    await _run(_config(second, again, {"quick": True, "worktree": str(again)}))
    assert _git(again, "diff", "HEAD~1", "HEAD") == _git(repo, "diff", "HEAD~1", "HEAD")


async def test_without_a_worktree_an_edit_writes_nothing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "keep.py").write_text("x = 1\n")
    results = await _run(_config(tmp_path, project, {"quick": True}))
    assert results  # it "edited", as a transcript says
    assert [p.name for p in project.iterdir()] == ["keep.py"]


async def test_catch_up_brings_a_replaying_clock_to_the_present() -> None:
    base = FakeClock()
    clock = CatchUpClock(base, 90.0)
    await clock.sleep(10.0)  # replayed at once
    assert clock.now() == base.now() - 80.0
    clock.catch_up()
    assert clock.now() == base.now()
