"""SPEC §10 'spawn … refused before anything starts': a card whose program is not on PATH
is refused by `legion run` before the host exists (issue 30, item 11). Before: the refusal
came from the host's admission, after it had made a run folder, a session pointer and a
ledger (12 paths under .legion/, the session pointer and its lock among them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import run_cli

pytestmark = pytest.mark.host

CARD = "---\nname: ghost\ndescription: d\nkind: exec\ncommand: [no-such-agent, '{task}']\n---\n"


async def test_a_missing_program_leaves_nothing_on_disk(tmp_path: Path) -> None:
    card = tmp_path / ".legion" / "agents" / "ghost.md"
    card.parent.mkdir(parents=True)
    card.write_text(CARD)
    code, _out, err = await run_cli("run", "ghost", "--task", "x", cwd=tmp_path)
    assert code == 1
    assert err == (
        "legion run: 'ghost' (kind exec, .legion/agents/ghost.md) runs 'no-such-agent', which "
        "is not on PATH (nor a file from the project): nothing was spawned\n"
    )
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / ".legion").rglob("*")) == [
        ".legion/agents",
        ".legion/agents/ghost.md",
    ]
