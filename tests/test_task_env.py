"""An agent reads its task safely: `$LEGION_TASK`, and the 0600 file `{task_file}` and
`$LEGION_TASK_FILE` name, hold it byte for byte — shell metacharacters and all — and
nothing in it runs (issue 30, item 6)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from supervisor_helpers import hosted, settled

from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host

TASK = 'fix it"; touch pwned; echo "$(touch pwned2)` touch pwned3 `\'; touch pwned4 #'
CARD = (
    "---\nname: shell\ndescription: d\nkind: exec\n"
    "command: [sh, -c, 'printf %s \"$LEGION_TASK\" > env.txt; cat \"$1\" > file.txt', _, "
    '"{task_file}"]\n---\n'
)


async def test_the_task_reaches_a_shell_card_literally(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".legion" / "agents").mkdir(parents=True)
    (project / ".legion" / "agents" / "shell.md").write_text(CARD)
    async with hosted(project) as sup:
        (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("shell", TASK, kind="exec")])
        await settled(sup, node.id)
        task_file = sup.run.dir / "tasks" / f"{node.id}.txt"
        assert stat.S_IMODE(task_file.stat().st_mode) == 0o600
    assert (project / "env.txt").read_text() == TASK
    assert (project / "file.txt").read_text() == TASK
    assert sorted(p.name for p in project.iterdir() if p.name.startswith("pwned")) == []
