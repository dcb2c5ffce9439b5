"""`legion spawn` sends its task as written and the supervisor refuses one no agent can
take (SPEC §10): the verb does not import the admission rules to check it first (they
cost more than a verb's whole time budget, SPEC §8), so the refusal must still be the
rules' own words, exit 1, and leave no node behind."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from supervisor_helpers import LEGION, cli_env, hosted

from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"fix it\x00now", "the task contains a NUL character; nothing was spawned"),
        (b"x" * (128 * 1024 + 1), "is 131073 bytes, over 131072 (128 KiB)"),
    ],
    ids=["NUL", "over 128 KiB"],
)
async def test_a_spawned_task_no_agent_can_take_is_refused_in_the_rules_words(
    tmp_path: Path, content: bytes, said: str
) -> None:
    task = tmp_path / "task.md"
    task.write_bytes(content)
    project = tmp_path / "project"
    project.mkdir()
    async with hosted(project) as sup:
        env = cli_env() | {"LEGION_SOCKET": str(sup.socket_path), "LEGION_NODE_ID": ROOT_ID}
        proc = await asyncio.create_subprocess_exec(
            LEGION, "spawn", "worker", "--task-file", str(task), cwd=project, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 1, err
        assert err.decode().startswith("legion spawn: ") and said in err.decode(), err
        assert err.decode().count("\n") == 1 and out == b""
        assert list(sup.model.nodes) == [ROOT_ID]
