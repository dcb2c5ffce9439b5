"""The host reaps every orphan it adopts (issue 14 item 9): an agent's double-forked,
short-lived helpers re-parent to the host (a subreaper) and, unreaped, stayed zombies of
it for the run's life — 200 of 200 in this test before the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from supervisor_helpers import hosted, spawn_one, until

from legion_tui.supervisor.processes import orphans

pytestmark = pytest.mark.host

HELPERS = 200

# 200 double forks: each subshell starts `sh -c true` in the background and exits at
# once, so the helper re-parents to the host and ends there. Then it stays alive.
FORKER = (
    f"i=0; while [ $i -lt {HELPERS} ]; do ( sh -c true & ); i=$((i+1)); done; "
    "echo forked; sleep 60"
)


def _zombies_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                data = stat.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if fields[0] == b"Z" and int(fields[1]) == pid:
            found.append(int(entry))
    return found


async def test_an_agents_double_forked_helpers_leave_no_zombie(tmp_path: Path) -> None:
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "forker.md").write_text(
        "---\nname: forker\ndescription: Double-forks helpers.\nkind: exec\nrole: worker\n"
        f'command: ["sh", "-c", "{FORKER}"]\n---\nFork.\n',
        encoding="utf-8",
    )
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, "forker", name="f")
        view = sup.model.nodes[node.id]
        await until(lambda: view.terminal_line == "forked", 60, "the helpers")
        # Every helper ended; each is reaped within a bound, none is left a zombie.
        await until(lambda: _zombies_of(os.getpid()) == [], 15, "no zombie of the host")
        await until(lambda: sup.orphans.reaped >= HELPERS, 15, "the reaper's count")
        assert sup.names.node(node.id).live  # the agent itself was never touched
    assert _zombies_of(os.getpid()) == []


async def test_asyncios_own_children_keep_their_exit_status(tmp_path: Path) -> None:
    """The reaper never takes a status asyncio waits for: its helper commands (in the
    host's session) and spawn_child's children (registered) report their real codes."""
    import asyncio

    async with hosted(tmp_path):
        procs = [
            await asyncio.create_subprocess_exec("sh", "-c", f"exit {code}")
            for code in (3, 4, 5)
        ]
        assert [await asyncio.wait_for(p.wait(), 10) for p in procs] == [3, 4, 5]
        assert orphans.reap_orphans() == []
