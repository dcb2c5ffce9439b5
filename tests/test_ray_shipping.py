"""A team's commits coming back from its members' Ray nodes (issue 35 item 4): each member
works on a clone of the team's branch cut when it started, so two members that both
commit diverge. Tried by hand on a 2-CPU head, the second member's commit never reached
the branch ("Not possible to fast-forward"), the run still said ok and the commit was
left dangling. Here the nodes are plain clones and the actor a stand-in: what is tested
is the host's side, `TeamBranch`, with real git.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from process_helpers import launch_spec

from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.ray.actor import Shipment
from legion_tui.supervisor.backends.ray.shipping import TeamBranch

pytestmark = pytest.mark.host

BRANCH = "legion/lead-1a2b3c"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _host(tmp_path: Path) -> Path:
    """The host's worktree of the team: its branch checked out, one commit."""
    host = tmp_path / "host"
    host.mkdir()
    _git(host, "init", "--quiet", "--initial-branch", BRANCH)
    _git(host, "config", "user.name", "host")
    _git(host, "config", "user.email", "host@example.com")
    (host / "shared.txt").write_text("one\n")
    _git(host, "add", ".")
    _git(host, "commit", "--quiet", "-m", "base")
    return host


@dataclass
class _Remote:
    """`actor.commits.remote`, as a node answers it."""

    node: _Node

    async def remote(self, since: str) -> tuple[str, bytes] | None:
        head = _git(self.node.work, "rev-parse", "HEAD")
        if head == since:
            return None
        out = self.node.work.parent / "out.bundle"
        _git(self.node.work, "bundle", "create", "--quiet", str(out), BRANCH)
        return head, out.read_bytes()


class _Node:
    """A member's node: the team's branch cloned from the bundle the host shipped."""

    def __init__(self, folder: Path, shipment: Shipment, name: str) -> None:
        assert shipment.bundle is not None and shipment.branch == BRANCH
        folder.mkdir()
        (folder / "in.bundle").write_bytes(shipment.bundle)
        self.work = folder / "work"
        _git(folder, "clone", "--quiet", "--branch", BRANCH, "in.bundle", "work")
        _git(self.work, "config", "user.name", name)
        _git(self.work, "config", "user.email", f"{name}@example.com")
        self.commits = _Remote(self)

    def commit(self, path: str, text: str, subject: str) -> None:
        (self.work / path).write_text(text)
        _git(self.work, "add", path)
        _git(self.work, "commit", "--quiet", "-m", subject)


async def _member(tmp_path: Path, host: Path, name: str) -> tuple[TeamBranch, _Node]:
    spec = launch_spec(tmp_path, node_id=f"{name}-9f8e7d", name=name, cwd=host)
    assert isinstance(spec, LaunchSpec)
    branch = TeamBranch(spec)
    return branch, _Node(tmp_path / name, await branch.shipment(), name)


def _log(host: Path) -> list[str]:
    return _git(host, "log", "--format=%an %s", BRANCH).splitlines()


async def test_two_members_that_both_committed_both_land_on_the_branch(tmp_path: Path) -> None:
    host = _host(tmp_path)
    (a, node_a), (b, node_b) = [await _member(tmp_path, host, n) for n in ("a", "b")]
    node_a.commit("a.txt", "a\n", "a: a.txt")
    node_b.commit("b.txt", "b\n", "b: b.txt")
    await a.bring_back(node_a)
    await b.bring_back(node_b)  # its clone never saw a's commit
    assert _log(host) == ["b b: b.txt", "a a: a.txt", "host base"]
    assert _git(host, "status", "--porcelain") == ""
    # A later turn of b's brings back only what is new since.
    node_b.commit("b2.txt", "b2\n", "b: b2.txt")
    await b.bring_back(node_b)
    await b.bring_back(node_b)  # nothing new: nothing taken twice
    assert _log(host) == ["b b: b2.txt", "b b: b.txt", "a a: a.txt", "host base"]


async def test_members_coming_back_at_once_both_land(tmp_path: Path) -> None:
    host = _host(tmp_path)
    members = [await _member(tmp_path, host, f"m{n}") for n in range(4)]
    for name, (_branch, node) in zip(("m0", "m1", "m2", "m3"), members, strict=True):
        node.commit(f"{name}.txt", f"{name}\n", f"{name}: {name}.txt")
    await asyncio.gather(*(branch.bring_back(node) for branch, node in members))
    assert sorted(_log(host)[:-1]) == [f"m{n} m{n}: m{n}.txt" for n in range(4)]
    assert _git(host, "status", "--porcelain") == ""


async def test_commits_that_cannot_be_replayed_are_kept_on_a_branch_and_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host = _host(tmp_path)
    (a, node_a), (b, node_b) = [await _member(tmp_path, host, n) for n in ("a", "b")]
    node_a.commit("shared.txt", "a's\n", "a: shared.txt")
    node_b.commit("shared.txt", "b's\n", "b: shared.txt")
    await a.bring_back(node_a)
    with caplog.at_level(logging.WARNING):
        await b.bring_back(node_b)
    assert _log(host) == ["a a: shared.txt", "host base"]  # the branch as a left it
    assert _git(host, "status", "--porcelain") == ""  # no half-done replay
    kept = f"{BRANCH}-b-9f8e7d"
    assert _git(host, "log", "-1", "--format=%an %s", kept) == "b b: shared.txt"
    assert f"b: its commits do not go onto {BRANCH}" in caplog.text
    assert f"kept on branch {kept}" in caplog.text
