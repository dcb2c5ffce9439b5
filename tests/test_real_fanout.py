"""A fan-out of three kinds on a real repository (issue 34, its closing test): `legion run
worker --fanout 3 --kinds pi,claude,codex --pick best` on a small package with its own
test suite, the real pi 1.6, Claude Code and Codex each against a scripted model server
of its own, each scripted to make a different change in its worktree:

- pi adds `sub` with a docstring (passes, the biggest change);
- Claude Code adds just `sub` (passes, the smallest);
- Codex first adds a wrong `sub`: the project's checks fail, the failure goes back to it
  as a follow-up (its server's next request holds the test output), it fixes it and
  passes on the retry.

The three worktrees are cut from one commit; the comparison is printed; the pick lands
Claude's change and leaves the user's own files (tracked, ignored, untracked) as they
were. `pytest -s` prints what the closing note shows: the table, the retry's prompt and
`git log` after the pick.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_bins import claude_code_install, codex_install
from claude_env import claude_vars, claude_world, drop_claude_settings
from codex_env import KEY_VAR, codex_env
from model_server import ModelServer, Text, ToolCall
from pi_env import MODEL, PROVIDER, pi_env
from real_pi_helpers import agent_host, settle, use_env, verdict_line, write_card
from supervisor_helpers import git, run_cli

from legion_tui.model import NodeStatus
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import NEW_GROUP, ChildRequest

pytestmark = pytest.mark.real

BASE = "def add(a, b):\n    return a + b\n"
TESTS = """import unittest

from calc import add, sub


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(sub(5, 3), 2)
"""
TASK = "Add sub(a, b) to calc.py so that the tests in test_calc.py pass."
CHECK = "python3 -m unittest -q test_calc"

PI = BASE + '\n\ndef sub(a, b):\n    """a minus b"""\n    return a - b\n'
CLAUDE = BASE + "\n\ndef sub(a, b):\n    return a - b\n"
CODEX_WRONG = BASE + "\n\ndef sub(a, b):\n    # the difference\n    return a + b\n"
CODEX = BASE + "\n\ndef sub(a, b):\n    # the difference\n    return a - b\n"


def _write(text: str) -> str:
    """A shell line that writes calc.py as `text`: JSON's quoting is sh's double quotes,
    and `%b` turns its `\\n` back into newlines."""
    return f"printf %b {json.dumps(text)} > calc.py"


@pytest.fixture
def servers() -> Iterator[dict[str, ModelServer]]:
    with ModelServer() as pi, ModelServer() as claude, ModelServer() as codex:
        yield {"pi": pi, "claude": claude, "codex": codex}
        for server in (pi, claude, codex):
            assert server.errors() == []


def _world(tmp_path: Path, servers: dict[str, ModelServer],
           monkeypatch: pytest.MonkeyPatch) -> Path:  # fmt: skip
    """One environment for the three CLIs, each pointed at its own server, and a git
    project: the package, its tests, the settings that say how each kind runs and what
    the project's checks are."""
    pi = pi_env("1.6", servers["pi"].base_url, tmp_path / "pi")
    claude = claude_world(tmp_path)
    codex = codex_env(servers["codex"].base_url, tmp_path / "codex")
    bins = [pi.install.bin_dir, claude_code_install().bin_dir, codex_install().bin_dir]
    env = {
        **pi.env,
        **claude_vars(claude, servers["claude"].origin),
        "CODEX_HOME": str(codex.codex_home),
        KEY_VAR: codex.env[KEY_VAR],
        "PATH": ":".join([*map(str, bins), "/usr/local/bin:/usr/bin:/bin"]),
    }
    drop_claude_settings(monkeypatch)
    use_env(env, monkeypatch)
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "calc.py").write_text(BASE)
    (project / "test_calc.py").write_text(TESTS)
    (project / ".gitignore").write_text(".legion/\n.env\n__pycache__/\n")
    git(project, "add", ".")
    git(project, "commit", "-qm", "calc: add")
    write_card(project, kind="auto", command=None)
    (project / ".legion" / "settings.toml").write_text(
        f'[agent.pi]\nprovider = "{PROVIDER}"\nmodel = "{MODEL}"\n'
        f'[agent.claude]\nmodel = "{MODEL}"\n'
        f'[checks]\ncommand = "{CHECK}"\nretries = 2\ntimeout = 60\n'
    )
    return project


async def test_three_kinds_fan_out_the_failing_one_is_sent_back_and_the_best_is_landed(
    servers: dict[str, ModelServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _world(tmp_path, servers, monkeypatch)
    servers["pi"].script(ToolCall("bash", {"command": _write(PI)}),
                         Text(f"Added it.\n{verdict_line('added sub')}", tokens=6))  # fmt: skip
    servers["claude"].script(
        ToolCall("Bash", {"command": _write(CLAUDE), "description": "write calc.py"}),
        Text(f"Done.\n{verdict_line('added sub')}", tokens=4),
    )
    servers["codex"].script(
        ToolCall("exec_command", {"cmd": _write(CODEX_WRONG)}, tokens=6),
        Text(f"Added sub.\n{verdict_line('added sub')}", tokens=5),
        ToolCall("exec_command", {"cmd": _write(CODEX)}, tokens=6),
        Text(f"Fixed the sign.\n{verdict_line('fixed sub')}", tokens=5),
    )
    (project / ".env").write_text("TOKEN=mine\n")  # the user's ignored file
    (project / "notes.txt").write_text("my notes\n")  # the user's untracked file
    head = git(project, "rev-parse", "HEAD")
    code, out, err = await run_cli(
        "run", "worker", "--task", TASK, "--fanout", "3", "--kinds", "pi,claude,codex",
        "--pick", "best", "--session", "fan", cwd=project, limit=400,
    )  # fmt: skip
    print(f"\n$ legion run worker --task {TASK!r} --fanout 3 --kinds pi,claude,codex "
          f"--pick best\n{out}{err}")  # fmt: skip
    assert code == 0, (out, err)
    table = out[out.index("attempt group worker-0"):]
    assert "claude-2 ★" in table and "pi-1 " in table and "codex-3" in table, table
    assert table.count("✓ checks") == 3, table  # Codex's too, after its retry
    assert "+4 -0 · 1 file" in table and "+5 -0 · 1 file" in table, table
    # Codex's failure went back to it: its server's third request carries the output.
    codex_requests = [json.dumps(r.body) for r in servers["codex"].requests()]
    assert len(codex_requests) == 4, len(codex_requests)
    retry = codex_requests[2]
    assert "checks failed on your work" in retry and "round 1 of 2" in retry, retry[:2000]
    assert "AssertionError: 8 != 2" in retry, retry[:4000]
    print("codex's retry prompt (its server's 3rd request), the follow-up's text:\n"
          + next(t for t in _user_texts(servers["codex"].requests()[2].body)
                 if "checks failed" in t))  # fmt: skip
    # Each attempt worked in its own worktree, all cut from the user's HEAD.
    trees = sorted(p for p in (project / ".legion" / "worktrees").iterdir() if p.is_dir())
    assert [t.name.rsplit("-", 1)[0] for t in trees] == [
        "worker-0.claude-2", "worker-0.codex-3", "worker-0.pi-1"]
    for tree in trees:
        assert git(tree, "merge-base", "HEAD", head) == head
    assert (trees[1] / "calc.py").read_text() == CODEX
    assert (trees[2] / "calc.py").read_text() == PI
    # The pick landed Claude's change, and nothing of the user's moved.
    assert (project / "calc.py").read_text() == CLAUDE
    assert (project / ".env").read_text() == "TOKEN=mine\n"
    assert (project / "notes.txt").read_text() == "my notes\n"
    print("$ git log --oneline --graph -4\n" + git(project, "log", "--oneline", "--graph", "-4"))
    # The merge lands the attempt's commit (its second parent) on the user's HEAD.
    assert git(project, "log", "-1", "--format=%s").startswith("Land legion/worker-0.claude-2-")
    assert git(project, "log", "-1", "--format=%s", "HEAD^2") == TASK
    assert git(project, "rev-parse", "HEAD^1") == head
    tests = await asyncio.create_subprocess_exec(*CHECK.split(), cwd=project,
                                                 stderr=asyncio.subprocess.PIPE)  # fmt: skip
    _out, said = await tests.communicate()
    assert tests.returncode == 0, said
    # `legion status` of the ended run says which group each attempt is of, and its checks.
    code, status, err = await run_cli("status", "--session", "fan", cwd=project)
    assert code == 0, err
    assert status.count("attempt of worker-0") == 3 and status.count("✓ checks") == 3, status


def _user_texts(body: object) -> list[str]:
    """The user-side texts of a Responses request's `input` (Codex's follow-up is one)."""
    items = body.get("input") if isinstance(body, dict) else None
    out = []
    for item in items if isinstance(items, list) else []:
        content = item.get("content") if isinstance(item, dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
    return out


async def test_one_kind_with_two_models_fans_out_each_attempt_on_its_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--kinds pi:model-a,pi:model-b`: one kind, several models — each attempt's pi is
    started on its own model (the card's `--model` replaced), as its requests show."""
    models = ("model-a", "model-b")
    with ModelServer(model_ids=models) as server:
        pi = pi_env("1.6", server.base_url, tmp_path / "pi", models=models)
        use_env(pi.env, monkeypatch)
        project = tmp_path / "project"
        project.mkdir()
        git(project, "init", "-q", "-b", "main")
        (project / "README.md").write_text("a project\n")
        git(project, "add", ".")
        git(project, "commit", "-qm", "init")
        write_card(project)  # pi, `--provider scripted --model scripted-model`
        server.script(*[Text(f"Hello.\n{verdict_line('said hello')}", tokens=3)] * 2)
        async with agent_host(project) as sup:
            nodes = await sup.launcher.spawn(ROOT_ID, [
                ChildRequest("worker", "Say hello.", kind="pi", model=m, group=NEW_GROUP)
                for m in models
            ])  # fmt: skip
            assert [n.name for n in nodes] == ["worker-0.pi-1", "worker-0.pi-2"]
            for node in nodes:
                assert (await settle(sup, node.id)).status is NodeStatus.SETTLED
            launched = {sup.ctx.cards.launched_with[n.id][-1] for n in nodes}
            assert launched == set(models), launched
        asked = sorted(r.body.get("model") for r in server.requests())
        assert asked == list(models), asked
        assert server.errors() == []
