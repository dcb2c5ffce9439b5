"""SPEC §10: a broken role card is refused with file:line and field, and nothing is spawned.

End to end through `legion run` (a real process, a real ledger): the only node the run
ever records is its root.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from legion_tui.ledger import read_snapshot

pytestmark = pytest.mark.host

LEGION = str(Path(sys.executable).parent / "legion")

BROKEN = {
    "bad yaml": ("---\nname: worker\ndescription: [oops\nkind: sim\n---\n", ":4: bad YAML"),
    "unknown field": (
        "---\nname: worker\ndescription: d\nkind: sim\nmood: keen\n---\n",
        ":5: field 'mood': unknown field",
    ),
    "wrong type": (
        "---\nname: worker\ndescription: d\nkind: sim\ntimeoutMs: soon\n---\n",
        ":5: field 'timeoutMs': expected an integer, got 'soon'",
    ),
    "invalid phases": (
        "---\nname: worker\ndescription: d\nkind: sim\nrole: centurion\nphases:\n"
        "  - {id: a, require: [hope], next: [done]}\n---\n",
        ":7: field 'phases[0].require[0]': unknown condition 'hope'",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_card_spawns_nothing(tmp_path: Path, case: str) -> None:
    text, expected = BROKEN[case]
    (tmp_path / ".legion" / "agents").mkdir(parents=True)
    (tmp_path / ".legion" / "agents" / "worker.md").write_text(text)
    result = subprocess.run(
        [LEGION, "run", "worker", "--task", "say hello"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert f".legion/agents/worker.md{expected}" in output
    assert "nothing spawned" in output
    for ledger in (tmp_path / ".legion" / "runs").glob("*/legion.db"):
        nodes, _ = read_snapshot(ledger)
        assert [n.role for n in nodes] == ["root"]
    assert not list((tmp_path / ".legion" / "runs").glob("*/sessions/*.jsonl"))
