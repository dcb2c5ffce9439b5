"""Bad option values are usage errors before anything happens (issue 14 item 23): an
invalid `--session` printed a traceback, `--timeout nan` waited "after nans", `--name ''`
was silently auto-numbered, 100 000 nested `[` in `--phases` died of RecursionError."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from supervisor_helpers import cli_env

pytestmark = pytest.mark.host

CASES = [
    (["status", "--session", "../x"], "argument --session: invalid session name '../x'"),
    (["tui", "--session", "a/b"], "argument --session: invalid session name 'a/b'"),
    (["run", "worker", "--task", "t", "--session", ".x"], "invalid session name '.x'"),
    (["wait", "--timeout", "nan"], "argument --timeout: seconds must be finite and ≥ 0"),
    (["wait", "--timeout", "-5"], "seconds must be finite and ≥ 0, got '-5'"),
    (["spawn", "worker", "--task", "t", "--name", ""], "argument --name: a name cannot be empty"),
    (["run", "worker", "--task", "t", "--name", " "], "argument --name: a name cannot be empty"),
]


def _legion(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "legion_tui.cli", *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(("args", "said"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_bad_value_is_a_usage_error_and_touches_nothing(
    tmp_path: Path, args: list[str], said: str
) -> None:
    done = _legion(tmp_path, *args)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / ".legion").exists()  # nothing created


@pytest.mark.parametrize("suffix", [".json", ".yml"])
def test_phases_nested_absurdly_deep_is_a_clear_refusal(tmp_path: Path, suffix: str) -> None:
    deep = tmp_path / f"deep{suffix}"
    deep.write_text("[" * 100_000, encoding="utf-8")
    done = _legion(tmp_path, "run", "centurion", "--kind", "sim", "--task", "t",
                   "--phases", str(deep))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "invalid phase machine" in done.stderr
    assert "nested too deeply" in done.stderr or "maximum nesting depth" in done.stderr


@pytest.mark.parametrize(
    ("args", "said", "code"),
    [
        (["--name", "a/b"], "argument --name: invalid name 'a/b'", 2),
        (["--role-card", "nosuchcard"], "no role card named 'nosuchcard'", 1),
        (["--task-file", "/nonexistent/task.md"], "cannot read the task file", 1),
    ],
    ids=["bad name", "unknown card", "missing task file"],
)
def test_a_refused_run_leaves_nothing_behind(
    tmp_path: Path, args: list[str], said: str, code: int
) -> None:
    """A refused `legion run` created the session file, a run folder and a ledger anyway
    (issue 14 item 24): everything that can refuse is asked before the host exists."""
    role = args[1] if args[0] == "--role-card" else "worker"
    extra = [] if args[0] == "--role-card" else args
    task = [] if "--task-file" in extra else ["--task", "t"]
    done = _legion(tmp_path, "run", role, "--kind", "sim", *task, *extra)
    assert done.returncode == code, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / ".legion").exists()


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"fix it\x00now", "the task contains a NUL character"),
        (b"x" * (128 * 1024 + 1), "over 131072 (128 KiB)"),
    ],
    ids=["NUL", "over 128 KiB"],
)
def test_a_task_no_agent_can_take_is_refused_before_anything_exists(
    tmp_path: Path, content: bytes, said: str
) -> None:
    task = tmp_path / "task.md"
    task.write_bytes(content)
    project = tmp_path / "project"
    project.mkdir()
    done = _legion(project, "run", "worker", "--kind", "sim", "--task-file", str(task))
    assert done.returncode == 1, done.stderr
    assert said in done.stderr, done.stderr
    assert not (project / ".legion").exists()


def test_a_long_task_comes_from_a_file(tmp_path: Path) -> None:
    """`--task-file`: a task longer than a shell line runs, exactly as written."""
    task = "Refactor the parser.\n" + "Keep every behaviour the tests pin. " * 2000
    path = tmp_path / "task.md"
    path.write_text(task, encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    done = _legion(
        project, "run", "worker", "--kind", "sim", "--speed", "50", "--task-file", str(path),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    (top,) = [n for n in doc["nodes"] if n["role"] == "worker"]
    assert top["status"] == "settled"
    # The agent was given the task exactly: the first user message of its session.
    (session,) = (project / ".legion" / "runs").glob(f"*/sessions/{top['id']}.jsonl")
    first_user = next(
        entry["message"]["content"][0]["text"]
        for entry in map(json.loads, session.read_text(encoding="utf-8").splitlines())
        if entry.get("type") == "message" and entry["message"]["role"] == "user"
    )
    assert first_user == task


async def test_a_spawn_with_a_task_no_agent_can_take_leaves_no_row(tmp_path: Path) -> None:
    """The same check at the socket: an agent's own `legion spawn` (or any client)."""
    from supervisor_helpers import hosted

    from legion_tui.wire.names import ROOT_ID, OpError
    from legion_tui.wire.spawn_request import ChildRequest

    async with hosted(tmp_path) as sup:
        for task in ("a\x00b", "y" * (128 * 1024 + 1)):
            with pytest.raises(OpError) as refused:
                await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", task)])
            assert refused.value.code == "BAD_REQUEST"
        assert list(sup.model.nodes) == [ROOT_ID]
