"""`legion diff | commit | land | discard | gc` and the end of `legion run` (issue 28 item
10), on real git repositories: the real `legion` as a subprocess (stdin not a terminal,
unless a pty is the point), against a run whose ledger the product's own code wrote.
Each scenario checks what happened to the user's files (hashes before/after), the receipt
and the exit code."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pty
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from land_helpers import agent_work, bare_remote, make_repo
from supervisor_helpers import (
    AS_PRINTED,
    LEGION,
    cli_env,
    git,
    hosted,
    spawn_one,
    until,
    use_git_identity,
)

from legion_tui.git import land as git_land
from legion_tui.git.process import run_tool
from legion_tui.git.worktree import Worktree, create_worktree
from legion_tui.ledger import open_ledger
from legion_tui.model import EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.runs.catalog import create_run
from legion_tui.runs.folder import RunInfo
from legion_tui.settings import LAND_MODES, parse_settings
from legion_tui.timeouts import within

pytestmark = pytest.mark.host

TASK = "Raise the page size\n\nTo 50, callers ask for more."
VERDICT = {"ok": True, "reason": "page size is 50"}
BOUND = 60.0


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


# ----- helpers ---------------------------------------------------------------------------
def legion(cwd: Path, *args: str, stdin: int | None = subprocess.DEVNULL) -> tuple[int, str, str]:
    """`legion ARGS` as a user's shell runs it (stdin not a terminal unless given)."""
    done = subprocess.run(
        [LEGION, *args], cwd=cwd, env=cli_env(), stdin=stdin, capture_output=True, text=True,
        timeout=BOUND,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


async def alegion(cwd: Path, *args: str) -> tuple[int, str, str]:
    """The same while this loop serves a live host's socket."""
    proc = await asyncio.create_subprocess_exec(
        LEGION, *args, cwd=cwd, env=cli_env(), stdin=subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), BOUND)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def hashes(folder: Path, *names: str) -> dict[str, str | None]:
    return {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
        if (folder / name).exists() else None
        for name in names
    }  # fmt: skip


def launched(tree: Worktree) -> dict[str, Any]:
    """What a host's `node_launched` records of a node's worktree (team_worktrees)."""
    return {"worktree": str(tree.path), "worktree_cwd": str(tree.cwd), "branch": tree.branch,
            "base_sha": tree.base_sha}  # fmt: skip


def node_id(path: str) -> str:
    return "root" if path == "root" else path.removeprefix("root/").replace("/", ".")


async def make_run(
    project: Path,
    agents: list[tuple[str, Worktree | None]],
    *,
    session: str = "main",
    status: NodeStatus = NodeStatus.SETTLED,
) -> RunInfo:
    """A run of `project` as its host leaves it: run.json, the session's pointer, and a
    ledger holding root, the agents (by path: `root/lead/worker-1`) and each one's
    `node_launched` (with its worktree, when it holds one)."""
    run = create_run(project, session, task="the test's run")
    nodes = [
        Node(id="root", run_id=run.run_id, parent_id=None, name="root", path="root",
             role="root", kind="sim", backend="inprocess", status=NodeStatus.RETIRED)
    ]  # fmt: skip
    for path, _tree in agents:
        parent, _, name = path.rpartition("/")
        role = "centurion" if any(p.startswith(path + "/") for p, _ in agents) else "worker"
        nodes.append(
            Node(id=node_id(path), run_id=run.run_id, parent_id=node_id(parent), name=name,
                 path=path, role=role, kind="exec", backend="process", status=status,
                 task=TASK, verdict=json.dumps(VERDICT))
        )  # fmt: skip
    async with await open_ledger(run.ledger_path, create=True) as ledger:
        await ledger.insert_nodes(nodes)
        for path, tree in agents:
            data: dict[str, Any] = {"path": path, "kind": "exec", "backend": "process"}
            await ledger.append_event(
                node_id(path), EventType.NODE_LAUNCHED, {**data, **(launched(tree) if tree else {})}
            )
    return run


async def worker_run(tmp_path: Path) -> tuple[Path, Worktree]:
    """A repository and one settled worker (`worker-1`) whose worktree holds a commit, an
    uncommitted edit and a new file (land_helpers.agent_work)."""
    repo = make_repo(tmp_path / "project")
    tree = await agent_work(repo)
    await make_run(repo, [("root/worker-1", tree)])
    return repo, tree


def state(repo: Path) -> tuple[str, str]:
    """The user's checkout as git sees it: HEAD and `status`."""
    return git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain", "--ignored")


# ----- diff ------------------------------------------------------------------------------
async def test_diff_shows_the_branch_commits_files_with_ignored_paths_and_the_diff(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "project")
    (repo / ".gitignore").write_text(".legion/\n.env\n")
    git(repo, "commit", "-qam", "ignore .env")
    tree = await agent_work(repo)
    (tree.path / ".env").write_text("TOKEN=agent\n")
    git(tree.path, "add", "-f", ".env")
    git(tree.path, "commit", "-qm", "add the env")
    await make_run(repo, [("root/worker-1", tree)])
    before = state(repo)

    code, out, err = legion(repo, "diff", "worker-1")
    assert code == 0, err
    lines = out.splitlines()
    head = git(tree.path, "rev-parse", "--short=7", "HEAD")
    assert lines[0] == f"legion/worker-1-abc123 @ {head} · cut from {tree.base_sha[:7]}"
    assert lines[1] == "2 commits · 3 files · uncommitted changes (shown, not landed)"
    assert any(line.endswith(" raise the page size") for line in lines)
    assert "  M app.py  +2 -2" in lines
    assert "  A .env  +1 -0  ⚠ ignored in your checkout" in lines
    assert "  ? notes.txt  new, not committed" in lines
    assert "+PAGE_SIZE = 50" in lines and "+    return [1]" in lines and "+todo: paginate" in lines
    # By its path too, and as JSON.
    code, out, err = legion(repo, "diff", "root/worker-1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["branch"] == tree.branch and len(doc["commits"]) == 2
    assert {f["path"]: f["ignored"] for f in doc["files"]} == {
        "app.py": False, ".env": True, "notes.txt": False
    }
    assert state(repo) == before  # reading changed nothing


# ----- commit, then land -------------------------------------------------------------------
async def test_commit_then_land_with_yes_keeps_every_file_of_the_user(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    (repo / ".gitignore").write_text(".legion/\n.env\n")
    git(repo, "commit", "-qam", "ignore .env")
    tree = await agent_work(repo)
    await make_run(repo, [("root/worker-1", tree)])
    # The user's own files: an ignored secret, an untracked scratch file, an edit in
    # progress to a file the agent does not touch.
    (repo / ".env").write_text("TOKEN=the user's\n")
    (repo / "scratch.txt").write_text("my notes\n")
    (repo / ".gitignore").write_text(".legion/\n.env\n*.log\n")
    mine = hashes(repo, ".env", "scratch.txt", ".gitignore")

    code, out, err = legion(repo, "commit", "worker-1", "--yes")
    assert code == 0, err
    sha = git(tree.path, "rev-parse", "--short", "HEAD")
    assert f"Committed 2 files on {tree.branch} at {sha}: Raise the page size" in out
    assert f"`{AS_PRINTED} land worker-1` lands it." in out
    message = git(tree.path, "log", "-1", "--format=%B")
    assert message == "Raise the page size\n\nAgent's verdict: ok — page size is 50"
    assert git(tree.path, "status", "--porcelain") == ""

    tip = git(repo, "rev-parse", tree.branch)
    code, out, err = legion(repo, "land", "worker-1", "--yes")
    assert code == 0, err
    assert f"Land {tree.branch} @ {tip[:7]} → main in {repo} (merge)" in out
    assert "it makes a merge commit on main; your 1 changed file stashed and put back" in out
    landed = (
        rf"Landed {tree.branch} @ {tip[:7]} → main at [0-9a-f]{{7}} \(merge: 2 commits, 2 "
        r"files\)\. Your changes were stashed and are back\."
    )
    assert re.search(landed, out), out
    assert f"`{AS_PRINTED} discard worker-1` removes its worktree and branch." in out
    assert git(repo, "rev-parse", "HEAD^2") == tip  # the sha shown is the sha landed
    assert (repo / "app.py").read_text() == "PAGE_SIZE = 50\n\ndef items():\n    return [1]\n"
    assert (repo / "notes.txt").read_text() == "todo: paginate\n"
    assert hashes(repo, ".env", "scratch.txt", ".gitignore") == mine


async def test_land_without_yes_and_without_a_terminal_only_says_what_it_would_do(
    tmp_path: Path,
) -> None:
    repo, tree = await worker_run(tmp_path)
    before, files = state(repo), hashes(repo, "app.py", ".gitignore")
    code, out, err = legion(repo, "land", "worker-1", "--mode", "squash")
    assert code == 0, err
    tip = git(repo, "rev-parse", "--short=7", tree.branch)
    assert f"Land {tree.branch} @ {tip} → main in {repo} (squash)" in out
    assert "    M app.py  +1 -1" in out
    assert "it makes one commit on main (squash of 1 commit)" in out
    assert ("worker-1's worktree holds uncommitted work: it stays behind, not landed "
            f"(`{AS_PRINTED} commit worker-1` first takes it)") in out  # fmt: skip
    assert out.rstrip().endswith(
        f"nothing done: pass --yes to land {tip} (or run this on a terminal to be asked)"
    )
    assert state(repo) == before and hashes(repo, "app.py", ".gitignore") == files
    # --json says the same, as data.
    code, out, err = legion(repo, "land", "worker-1", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["done"] is False and doc["plan"]["head"].startswith(tip)
    assert state(repo) == before


async def test_land_refuses_to_overwrite_an_ignored_env_of_the_user(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    (repo / ".gitignore").write_text(".legion/\n.env\n")
    git(repo, "commit", "-qam", "ignore .env")
    tree = await create_worktree(repo, "worker-1", nonce="abc123")
    (tree.path / ".env").write_text("TOKEN=the agent's\n")
    git(tree.path, "add", "-f", ".env")
    git(tree.path, "commit", "-qm", "add the env")
    await make_run(repo, [("root/worker-1", tree)])
    (repo / ".env").write_text("TOKEN=the user's secret\n")
    before, secret = state(repo), hashes(repo, ".env")

    code, _out, err = legion(repo, "land", "worker-1", "--yes")
    assert code == 1
    assert err.startswith("legion land: landing legion/worker-1-abc123 would overwrite files")
    assert ".env (ignored)" in err and "nothing was landed" in err
    assert hashes(repo, ".env") == secret and state(repo) == before


async def test_land_with_push_refuses_up_front_without_a_remote(tmp_path: Path) -> None:
    repo, _tree = await worker_run(tmp_path)
    before = state(repo)
    code, _out, err = legion(repo, "land", "worker-1", "--yes", "--push")
    assert code == 1 and "--push: " in err and "has no remote" in err
    assert state(repo) == before


def path_without_forges(monkeypatch: pytest.MonkeyPatch, *first: Path) -> None:
    """PATH with no gh nor glab of the machine's (the forge cannot be reached here)."""
    kept = [
        d for d in os.environ["PATH"].split(os.pathsep)
        if not any((Path(d) / tool).exists() for tool in ("gh", "glab"))
    ]  # fmt: skip
    monkeypatch.setenv("PATH", os.pathsep.join([*map(str, first), *kept]))


async def test_land_pushes_the_users_branch_and_the_agents_to_a_bare_remote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, tree = await worker_run(tmp_path)
    remote = bare_remote(repo, tmp_path / "origin.git")
    path_without_forges(monkeypatch)
    code, out, err = legion(repo, "land", "worker-1", "--yes", "--push", "--pr")
    assert code == 0, err
    assert "  then pushes main → origin/main" in out
    assert "Pushed main → origin/main." in out
    assert f"Pushed {tree.branch} → origin/{tree.branch}." in out
    assert "PR:" not in out and "http" not in out  # no forge tool: no URL, none invented
    assert git(remote, "rev-parse", "main") == git(repo, "rev-parse", "main")
    assert git(remote, "rev-parse", tree.branch) == git(repo, "rev-parse", tree.branch)


GH = """#!/bin/sh
# A gh stand-in: logged in; `pr create` records its arguments and prints a URL.
[ "$1" = auth ] && exit 0
printf '%s\\n' "$@" > "$(dirname "$0")/gh-args"
echo "https://github.example/team/project/pull/7"
"""


async def test_land_with_pr_opens_it_through_gh_and_shows_the_url_gh_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, tree = await worker_run(tmp_path)
    bare_remote(repo, tmp_path / "origin.git")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "gh").write_text(GH)
    (tools / "gh").chmod(0o755)
    path_without_forges(monkeypatch, tools)
    code, out, err = legion(repo, "land", "worker-1", "--yes", "--pr")
    assert code == 0, err
    assert out.splitlines()[-2:] == [
        "PR: https://github.example/team/project/pull/7",
        f"`{AS_PRINTED} discard worker-1` removes its worktree and branch.",
    ]
    assert (tools / "gh-args").read_text().splitlines() == [
        "pr", "create", "--head", tree.branch, "--base", "main",
        "--title", "Raise the page size", "--body", "Agent's verdict: ok — page size is 50",
    ]  # fmt: skip


# ----- discard ---------------------------------------------------------------------------
async def test_discard_refuses_unique_work_under_yes_unless_forced(tmp_path: Path) -> None:
    repo, tree = await worker_run(tmp_path)
    head = git(repo, "rev-parse", "--short", tree.branch)
    code, out, err = legion(repo, "discard", "worker-1", "--yes")
    assert code == 1
    assert f"It LOSES 1 commit in no other branch ({head} raise the page size) and 2 " \
        "uncommitted files (app.py, notes.txt):" in out  # fmt: skip
    assert "nothing was discarded" in err and "pass --force with --yes to lose it" in err
    assert tree.path.is_dir() and git(repo, "branch", "--list", tree.branch)

    code, out, err = legion(repo, "discard", "worker-1", "--yes", "--force")
    assert code == 0, err
    assert f"Discarded {tree.branch}: worktree {tree.path} removed" in out
    assert f"`git branch {tree.branch} {head}` restores it" in out
    assert "lost: 1 commit in no other branch" in out
    assert not tree.path.exists() and git(repo, "branch", "--list", tree.branch) == ""


async def test_discard_on_a_terminal_names_the_loss_and_y_accepts_it(tmp_path: Path) -> None:
    repo, tree = await worker_run(tmp_path)
    main, terminal = pty.openpty()
    try:
        os.write(main, b"y\n")
        code, out, err = legion(repo, "discard", "worker-1", stdin=terminal)
    finally:
        os.close(terminal)
        os.close(main)
    assert code == 0, err
    assert f"Discard {tree.branch} and LOSE 1 commit in no other branch (" in err
    assert "and 2 uncommitted files (app.py, notes.txt)? [y/N]" in err
    assert f"Discarded {tree.branch}" in out and not tree.path.exists()


# ----- gc --------------------------------------------------------------------------------
async def test_gc_lists_sizes_and_states_and_removes_only_the_landed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    landed = await create_worktree(repo, "landed", nonce="aaa111")
    (landed.path / "done.txt").write_text("done\n")
    git(landed.path, "add", "done.txt")
    git(landed.path, "commit", "-qm", "done")
    git(repo, "merge", "-q", "--no-ff", "-m", "land it", landed.branch)
    unlanded = await create_worktree(repo, "unlanded", nonce="bbb222")
    (unlanded.path / "wip.txt").write_text("wip\n")
    git(unlanded.path, "add", "wip.txt")
    git(unlanded.path, "commit", "-qm", "half done")
    dirty = await create_worktree(repo, "dirty", nonce="ccc333")
    (dirty.path / "loose.txt").write_text("not committed\n")
    before = state(repo)

    code, out, err = legion(repo, "gc")
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  legion/")}
    assert set(rows) == {landed.branch, unlanded.branch, dirty.branch}
    size = r"\d+(\.\d)? (B|KB|MB)"
    assert re.search(rf"landed\s+{size}\s+\.legion/worktrees/landed-aaa111$", rows[landed.branch])
    loses = r"— would lose 1 commit in no other branch \([0-9a-f]+ half done\)$"
    assert re.search(rf"unlanded\s+{size}\s+\.legion/worktrees/unlanded-bbb222  {loses}",
                     rows[unlanded.branch])  # fmt: skip
    assert re.search(rf"dirty\s+{size}\s+\.legion/worktrees/dirty-ccc333  — would lose 1 "
                     r"uncommitted file \(loose.txt\)$", rows[dirty.branch])  # fmt: skip
    assert "nothing done: pass --yes to remove the landed one" in out
    assert landed.path.is_dir() and state(repo) == before

    code, out, err = legion(repo, "gc", "--yes")
    assert code == 0, err
    assert f"Discarded {landed.branch}: worktree {landed.path} removed" in out
    assert not landed.path.exists() and git(repo, "branch", "--list", landed.branch) == ""
    assert unlanded.path.is_dir() and dirty.path.is_dir()
    assert git(repo, "branch", "--list", unlanded.branch)
    assert git(repo, "branch", "--list", dirty.branch)
    assert (dirty.path / "loose.txt").read_text() == "not committed\n"
    assert state(repo) == before
    code, out, err = legion(repo, "gc", "--json")
    doc = json.loads(out)
    assert code == 0 and {i["state"] for i in doc["leftovers"]} == {"unlanded", "dirty"}


# ----- finding the agent -------------------------------------------------------------------
async def test_a_name_several_agents_share_is_refused_listing_their_paths(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    lead_a = await create_worktree(repo, "a", nonce="aaa111")
    lead_b = await create_worktree(repo, "b", nonce="bbb222")
    await make_run(repo, [("root/a", lead_a), ("root/a/worker-1", None),
                          ("root/b", lead_b), ("root/b/worker-1", None)])  # fmt: skip
    code, _out, err = legion(repo, "diff", "worker-1")
    assert code == 1
    assert re.fullmatch(
        r"legion diff: 'worker-1' names 2 agents in run \S+ \(session main\): "
        r"root/a/worker-1, root/b/worker-1 — name one by its path\n",
        err,
    ), err
    # A member works in its lead's worktree: land the lead.
    code, _out, err = legion(repo, "land", "root/b/worker-1", "--yes")
    assert code == 1 and err == "legion land: worker-1 works in b's worktree: land b.\n"
    # Its diff is the lead's worktree.
    code, out, err = legion(repo, "diff", "root/a/worker-1")
    assert code == 0, err
    assert out.startswith(f"{lead_a.branch} @ ")
    code, _out, err = legion(repo, "discard", "nobody")
    assert code == 1 and "no agent named 'nobody' in run " in err


async def test_a_live_agent_is_refused_and_gc_leaves_its_branch_alone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    settings = repo / ".legion" / "settings.toml"
    settings.parent.mkdir()
    settings.write_text('[agent]\ndefault = "exec"\ncommand = ["bash", "-c", "sleep 600"]\n')
    async with hosted(repo, default_kind=None) as sup:
        node = await spawn_one(sup, name="busy")
        await until(lambda: sup.names.node(node.id).status is NodeStatus.RUNNING, what="running")
        tree = sup.teams.worktree_of(node.id)
        assert tree is not None  # a worker started from root works in a worktree of its own
        for verb in ("land", "commit", "discard"):
            code, _out, err = await alegion(repo, verb, "busy", "--yes")
            assert (code, err) == (
                1, f"legion {verb}: busy is still running: {verb} it once it has settled.\n"
            )
        code, out, err = await alegion(repo, "gc", "--yes")
        assert code == 0, err
        assert tree.branch not in out.replace(f"not listed: {tree.branch}", "")
        assert f"held by live agents not listed: {tree.branch}" in out
        assert tree.path.is_dir()
        # Reading is fine while it works.
        code, out, err = await alegion(repo, "diff", "busy")
        assert code == 0 and out.startswith(f"{tree.branch} @ "), err


# ----- settings --------------------------------------------------------------------------
def test_land_mode_setting_is_read_and_a_bad_one_is_reported_with_its_line() -> None:
    assert LAND_MODES == git_land.LAND_MODES  # one home (settings), the same names in git.land
    settings, problems = parse_settings('[land]\nmode = "squash"\n', "s.toml")
    assert settings.land_mode == "squash" and problems == []
    settings, problems = parse_settings('[land]\nmode = "octopus"\nfast = true\n', "s.toml")
    assert settings.land_mode == "merge"  # a setting with a problem keeps its default
    assert [str(p) for p in problems] == [
        "s.toml:2: setting 'land.mode': expected one of merge, squash, rebase, got 'octopus'",
        "s.toml:3: setting 'land.fast': unknown key",
    ]
    _settings, problems = parse_settings('[land]\nmode = 3\n', "s.toml")
    assert [str(p) for p in problems] == [
        "s.toml:2: setting 'land.mode': expected one of merge, squash, rebase, got 3"
    ]


async def test_land_takes_its_mode_from_the_settings_and_warns_of_a_bad_one(
    tmp_path: Path,
) -> None:
    repo, _tree = await worker_run(tmp_path)
    settings = repo / ".legion" / "settings.toml"
    settings.write_text('[land]\nmode = "rebase"\n')
    code, out, err = legion(repo, "land", "worker-1")
    assert code == 0 and f"→ main in {repo} (rebase)" in out, err
    settings.write_text('[land]\nmode = "octopus"\n')
    code, out, err = legion(repo, "land", "worker-1")
    assert code == 0 and f"→ main in {repo} (merge)" in out
    assert err == (
        "warning: .legion/settings.toml:2: setting 'land.mode': expected one of merge, "
        "squash, rebase, got 'octopus' (landing with merge)\n"
    )


# ----- legion run ------------------------------------------------------------------------
AGENT = (
    "echo hello > hello.txt && git add hello.txt && git commit -qm 'say hello' "
    "&& echo more > more.txt"
)


async def test_legion_run_ends_saying_where_the_work_is_and_how_to_land_it(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "project")
    settings = repo / ".legion" / "settings.toml"
    settings.parent.mkdir()
    command = json.dumps(["bash", "-c", AGENT])
    settings.write_text(f'[agent]\ndefault = "exec"\ncommand = {command}\n')
    before = state(repo)
    code, out, err = legion(repo, "run", "worker", "--task", "say hello", "--name", "w",
                            "--session", "t1")  # fmt: skip
    assert "root/w: settled" in out, err
    (path,) = (repo / ".legion" / "worktrees").glob("w-*")
    branch = f"legion/{path.name}"
    head = git(path, "rev-parse", "--short=7", "HEAD")
    tail = out.splitlines()[-5:]
    assert tail == [
        f"The work of w is in .legion/worktrees/{path.name}, not in your checkout:",
        f"  branch {branch} @ {head} · 1 commit · 1 uncommitted file (more.txt)",
        f"  review it:  {AS_PRINTED} diff w --session t1",
        f"  commit it:  {AS_PRINTED} commit w --session t1",
        f"  land it:    {AS_PRINTED} land w --session t1",
    ]
    assert state(repo) == before  # the work is in its worktree, and said so
    # Each command runs as printed (with --yes: this is a script).
    for line in tail[3:]:
        argv = shlex.split(line.split(":", 1)[1])
        assert argv[0] == AS_PRINTED
        code, out, err = legion(repo, *argv[1:], "--yes") if argv[1] != "diff" else legion(
            repo, *argv[1:]
        )
        assert code == 0, (line, err)
    assert (repo / "hello.txt").read_text() == "hello\n"
    assert (repo / "more.txt").read_text() == "more\n"


# ----- git in a host -----------------------------------------------------------------------
async def test_a_tool_run_inside_a_host_is_never_reaped_as_an_orphan(tmp_path: Path) -> None:
    """The host's orphan reaper reaps zombies outside its session that nobody registered;
    git runs in a session of its own, so unregistered it lost its exit status now and then
    (asyncio reported 255: a worktree not made, a land's receipt wrong)."""
    from legion_tui import own_children

    script = 'echo $$ > started; while [ ! -e go ]; do sleep 0.01; done; exit 3'
    running = asyncio.create_task(run_tool(["sh", "-c", script], tmp_path, 30.0))
    started = tmp_path / "started"
    try:
        await until(lambda: started.exists() and started.read_text().strip() != "", what="started")
        pid = int(started.read_text())
        # The child runs before asyncio hands its pid over (a loaded machine showed it):
        # until then the spawn holds the reaper's scans off; from then on it is registered.
        assert pid in own_children.registered() or own_children.spawns_under_way()
        await until(lambda: pid in own_children.registered(), what="registered")
    finally:
        # Ended inside the test, failed or not: a spawn left to the loop's teardown can
        # hang it for ever (CPython gh-125502, a cancel while asyncio connects its pipes).
        (tmp_path / "go").write_text("")
        ran = await within(running, 30.0)
    assert ran.code == 3
    assert pid not in own_children.registered()  # forgotten once asyncio reaped it
