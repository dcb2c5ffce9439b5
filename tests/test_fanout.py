"""Fan out (issue 34 item 1): one task to several attempts, siblings of one attempt group,
each in its own worktree cut from one commit, each named by its kind and number; and the
refusals that leave nothing behind (SPEC §10).

Exec agents here (a card that runs a shell line): what is under test is the host's
grouping, naming and worktrees, the same for every kind; the real agents fan out in
`test_real_fanout.py`."""

from __future__ import annotations

import asyncio
import json
import signal
from dataclasses import replace
from pathlib import Path

import pytest
from supervisor_helpers import (
    LEGION,
    cli_env,
    git,
    hosted,
    run_cli,
    settled,
    until,
    use_git_identity,
)

from legion_tui.git.worktree import WorktreeError
from legion_tui.model import NodeStatus
from legion_tui.supervisor.hearing.status import render_status
from legion_tui.wire.names import ROOT_ID, OpError
from legion_tui.wire.spawn_request import NEW_GROUP, ChildRequest

pytestmark = pytest.mark.host

def _exec_card(project: Path, name: str, about: str, *argv: str) -> None:
    """`.legion/agents/<name>.md`: a worker card of kind exec running `argv`."""
    command = ", ".join(json.dumps(word) for word in argv)
    (project / ".legion" / "agents" / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: {about}\nkind: exec\nrole: worker\n"
        f"command: [{command}]\n---\nDo.\n", encoding="utf-8",
    )  # fmt: skip


def _project(root: Path, *, repo: bool = True) -> Path:
    (root / ".legion" / "agents").mkdir(parents=True)
    # Each attempt writes where it runs: its worktree, never the project.
    _exec_card(root, "doer", "Writes its id.", "sh", "-c", "echo $LEGION_NODE_ID > out.txt")
    if repo:
        git(root, "init", "-q", "-b", "main")
        (root / "README.md").write_text("a project\n")
        git(root, "add", "README.md")
        git(root, "commit", "-qm", "init")
    return root


def _attempts(count: int, group: str = NEW_GROUP, kind: str | None = None) -> list[ChildRequest]:
    return [ChildRequest("doer", "write out.txt", group=group, kind=kind) for _ in range(count)]


async def test_a_fanout_starts_attempts_in_worktrees_cut_from_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_git_identity(monkeypatch)
    project = _project(tmp_path)
    head = git(project, "rev-parse", "HEAD")
    async with hosted(project, default_kind=None) as sup:
        nodes = await sup.launcher.spawn(ROOT_ID, _attempts(3))
        assert [n.name for n in nodes] == ["doer-0.exec-1", "doer-0.exec-2", "doer-0.exec-3"]
        assert {n.attempt_group for n in nodes} == {"doer-0"}
        trees = [sup.teams.worktree_of(n.id) for n in nodes]
        assert all(t is not None for t in trees)
        paths = {t.path for t in trees if t is not None}
        assert len(paths) == 3 and {t.base_sha for t in trees if t is not None} == {head}
        for node, tree in zip(nodes, trees, strict=True):
            assert (await settled(sup, node.id)).status is NodeStatus.SETTLED
            assert tree is not None and (tree.path / "out.txt").read_text().strip() == node.id
        assert not (project / "out.txt").exists()
        # The next fan-out is a new group; the ledger and `legion status` say whose.
        again = await sup.launcher.spawn(ROOT_ID, _attempts(2))
        assert {n.attempt_group for n in again} == {"doer-1"}
        text = render_status(sup.queries.status(ROOT_ID))
        assert "root/doer-0.exec-2 (worker, attempt of doer-0, " in text, text
        rows = await sup.ledger.get_nodes()
        assert sorted(n.attempt_group or "" for n in rows) == [""] + ["doer-0"] * 3 + ["doer-1"] * 2


async def test_a_group_name_taken_or_bad_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_git_identity(monkeypatch)
    project = _project(tmp_path)
    async with hosted(project, default_kind=None) as sup:
        await sup.launcher.spawn(ROOT_ID, _attempts(2, group="fix"))
        for group, code in (("fix", "NAME_CONFLICT"), ("doer-9", None), ("Bad Name", "BAD_NAME")):
            before = len(sup.model.nodes)
            if code is None:  # a sibling's own name is taken for a group too
                await sup.launcher.spawn(ROOT_ID, [ChildRequest("doer", "x", name=group)])
                group, code = "doer-9", "NAME_CONFLICT"
                before += 1
            with pytest.raises(OpError) as refused:
                await sup.launcher.spawn(ROOT_ID, _attempts(2, group=group))
            assert refused.value.code == code, refused.value
            assert "nothing was spawned" in refused.value.message
            assert len(sup.model.nodes) == before


async def test_a_fanout_outside_a_git_repository_is_refused_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """Attempts sharing one folder would overwrite each other's work: no repository to
    cut worktrees from, no fan-out — said before any row, worktree or process exists."""
    project = _project(tmp_path, repo=False)
    async with hosted(project, default_kind=None) as sup:
        with pytest.raises(OpError) as refused:
            await sup.launcher.spawn(ROOT_ID, _attempts(2))
        assert refused.value.code == "BAD_REQUEST"
        assert "its own worktree" in refused.value.message
        assert "not a git repository" in refused.value.message
        assert list(sup.model.nodes) == [ROOT_ID] and sup.launcher.launches == 0
        assert not (project / ".legion" / "worktrees").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--fanout", "1"], "a fan-out is 2 to 16 attempts, got 1"),
        (["--fanout", "x"], "not a number of attempts: 'x'"),
        (["--kinds", "pi,gpt"], "unknown kind(s) gpt"),
        (["--kinds", "pi:m1,gpt:m2"], "unknown kind(s) gpt:m2"),
        (["--kinds", "pi"], "a fan-out is 2 attempts or more"),
        (["--kinds", "pi,codex", "--kind", "pi"], "with --kinds, not --kind"),
    ],
)
async def test_a_bad_fanout_is_refused_by_the_cli_naming_it(
    tmp_path: Path, args: list[str], said: str
) -> None:
    code, out, err = await run_cli("spawn", "doer", "--task", "t", *args, cwd=tmp_path)
    assert code != 0 and out == "", (code, out, err)
    assert said in err, err


# Three attempts at one task that differ by their number: the first breaks the check,
# the second passes with a bigger change than the third.
ATTEMPT_SH = """case $LEGION_NODE_ID in
  *-1-*) echo bad > out.txt ;;
  *-2-*) printf 'good\\nand more\\nand more\\n' > out.txt ;;
  *) echo good > out.txt ;;
esac
echo '{"ok": true, "reason": "wrote out.txt"}'
"""


def _fixer(project: Path, checks: str) -> None:
    script = project / ".legion" / "attempt.sh"
    script.write_text(ATTEMPT_SH)
    _exec_card(project, "fixer", "Writes out.txt.", "sh", str(script))
    (project / ".legion" / "settings.toml").write_text(checks)


async def test_run_fanout_pick_best_lands_the_smallest_passing_change_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`legion run … --fanout 3 --pick best`: the group is waited for (the checks of all
    three final), the table printed, and the passing attempt with the smallest change
    landed in the user's checkout — whose own files, tracked, ignored or untracked,
    stay as they were."""
    use_git_identity(monkeypatch)
    project = _project(tmp_path)
    _fixer(project, '[checks]\ncommand = "grep -qx good out.txt"\nretries = 0\n')
    (project / ".gitignore").write_text(".env\n.legion/\n")
    git(project, "add", ".gitignore")
    git(project, "commit", "-qm", "ignore")
    (project / ".env").write_text("SECRET=1\n")  # the user's ignored file
    (project / "notes.txt").write_text("mine\n")  # the user's untracked file
    code, out, err = await run_cli(
        "run", "fixer", "--task", "Write out.txt.", "--fanout", "3", "--pick", "best",
        "--name", "fix", cwd=project, limit=120,
    )  # fmt: skip
    assert code == 0, (out, err)
    table = out[out.index("attempt group fix"):]
    assert "exec-1" in table and "exec-3 ★" in table, table
    assert "✗ checks: `grep -qx good out.txt` exit 1" in table, table
    assert table.count("✓ checks") == 2, table
    assert "+1 -0 · 1 file" in table and "+3 -0 · 1 file" in table, table
    assert "Committed 1 file on legion/fix.exec-3-" in out, out
    assert (project / "out.txt").read_text() == "good\n"
    assert (project / ".env").read_text() == "SECRET=1\n"
    assert (project / "notes.txt").read_text() == "mine\n"
    # The merge lands the attempt's commit (its second parent); HEAD before is the first.
    assert git(project, "log", "-1", "--format=%s").startswith("Land legion/fix.exec-3-")
    assert git(project, "log", "-1", "--format=%s", "HEAD^2") == "Write out.txt."
    assert git(project, "log", "-1", "--format=%s", "HEAD^1") == "ignore"


async def test_run_fanout_pick_best_with_no_passing_attempt_lands_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_git_identity(monkeypatch)
    project = _project(tmp_path)
    _fixer(project, '[checks]\ncommand = "exit 4"\nretries = 0\n')
    head = git(project, "rev-parse", "HEAD")
    code, out, err = await run_cli("run", "fixer", "--task", "Write out.txt.", "--fanout", "2",
                                   "--pick", "best", cwd=project, limit=120)  # fmt: skip
    assert code == 1, (out, err)
    assert "no attempt of fixer-0 passed its checks with a change to land; nothing was " \
        "landed" in err, err
    assert out.count("✗ checks: `exit 4` exit 4") == 2 and "★" not in out, out
    assert git(project, "rev-parse", "HEAD") == head and not (project / "out.txt").exists()


async def test_a_fanout_run_interrupted_pauses_its_attempts_and_lands_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while the attempts work: they are paused (resumable), the run says so and
    exits 1, and nothing is compared or landed."""
    use_git_identity(monkeypatch)
    project = _project(tmp_path)
    _exec_card(project, "sleeper", "Works a long time.", "sh", "-c",
               "touch started; exec sleep 300")  # fmt: skip
    head = git(project, "rev-parse", "HEAD")
    proc = await asyncio.create_subprocess_exec(
        LEGION, "run", "sleeper", "--task", "Work.", "--fanout", "2", "--pick", "best",
        "--session", "s", cwd=project, env=cli_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    trees = project / ".legion" / "worktrees"
    await until(lambda: len(list(trees.glob("*/started"))) == 2, 60, "both attempts at work")
    proc.send_signal(signal.SIGTERM)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1, (out, err)
    assert b"interrupted \xe2\x80\x94 live agents paused" in err, err
    assert b"attempt group" not in out and b"Landing" not in out, out
    assert git(project, "rev-parse", "HEAD") == head


async def test_legion_spawn_fanout_starts_the_attempts_and_names_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_git_identity(monkeypatch)
    project = _project(tmp_path)
    async with hosted(project, default_kind=None) as sup:
        code, out, err = await run_cli("spawn", "doer", "--task", "Write it.", "--fanout", "2",
                                       "--name", "try", cwd=project)  # fmt: skip
        assert code == 0, (out, err)
        lines = out.splitlines()
        assert [line.split(" (")[0] for line in lines] == [
            "Spawned root/try.exec-1", "Spawned root/try.exec-2"], out
        nodes = [v.node for v in sup.model.nodes.values() if v.node.attempt_group == "try"]
        assert len(nodes) == 2 and all(sup.teams.worktree_of(n.id) for n in nodes)


async def test_an_attempt_whose_repository_went_fails_rather_than_work_in_the_project(
    tmp_path: Path,
) -> None:
    """Admission read HEAD, then the repository went before the attempt's worktree was
    made: the attempt must not fall back to the project folder (attempts there would
    overwrite each other's work) — its worktree step refuses, and the launch fails it."""
    project = _project(tmp_path, repo=False)
    async with hosted(project, default_kind=None) as sup:
        (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("doer", "t", name="solo")])
        attempt = replace(node, id="solo-attempt", attempt_group="fix")
        with pytest.raises(WorktreeError, match="no git repository now"):
            await sup.teams.worktree_for_launch(attempt, None, resume=False)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--pick", "best"], "--pick chooses among the attempts of a fan-out"),
        (["--fanout", "2", "--json"], "--json reports one agent's run"),
        (["--fanout", "1"], "a fan-out is 2 to 16 attempts, got 1"),
    ],
)
async def test_a_bad_fanout_run_is_refused_before_any_host_exists(
    tmp_path: Path, args: list[str], said: str
) -> None:
    project = _project(tmp_path, repo=False)
    code, out, err = await run_cli("run", "doer", "--task", "t", *args, cwd=project)
    assert code != 0 and said in err, (code, out, err)
    assert not (project / ".legion" / "runs").exists()  # no run, no ledger, no session
