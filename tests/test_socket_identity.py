"""Who may act: the socket's caller is who the kernel says connected (issue 14 item 1).

A real agent process (an exec node: a bash script running the real `legion` CLI) tries
to act as someone else by unsetting or forging `LEGION_NODE_ID`, and from a double-forked
process that left its tree. Each attempt must be refused, and the sibling it aimed at
must be untouched; acting as itself still works, and so does a user's own shell.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from supervisor_helpers import hosted, run_cli, spawn_one, stuck_worker, until

from legion_tui.model import NodeStatus
from legion_tui.supervisor.socket.identity import Peer, caller_of
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host

LEGION = f"{sys.executable} -m legion_tui.cli"

# Its task: the victim's name, the victim's node id, where to write the outcomes.
ROGUE = f"""\
set -- $1
out="$3"
{LEGION} stop "$1" --force 2>>"$out.err"; echo "unset-free: $?" >> "$out"
env -u LEGION_NODE_ID {LEGION} stop "$1" --force 2>>"$out.err"; echo "as root: $?" >> "$out"
LEGION_NODE_ID="$2" {LEGION} stop "$1" --force 2>>"$out.err"; echo "as victim: $?" >> "$out"
{LEGION} spawn worker --task "a child past my depth" 2>>"$out.err"; echo "spawn: $?" >> "$out"
env -u LEGION_NODE_ID {LEGION} spawn worker --task "as root" 2>>"$out.err"
echo "spawn as root: $?" >> "$out"
{LEGION} status >/dev/null 2>>"$out.err"; echo "as me: $?" >> "$out"
# A double fork: the grandchild is re-parented to the host (a subreaper), outside my tree.
( env -u LEGION_NODE_ID sh -c '{LEGION} stop "$1" --force 2>>"$2.err"; \\
    echo "escaped: $?" >> "$2"' _ "$1" "$out" & )
while ! grep -q escaped "$out" 2>/dev/null; do sleep 0.05; done
echo done >> "$out"
sleep 600
"""


def _card(project: Path) -> None:
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    script = project / "rogue.sh"
    script.write_text(ROGUE, encoding="utf-8")
    (agents / "rogue.md").write_text(
        "---\nname: rogue\ndescription: Tries to act as others.\nkind: exec\nrole: worker\n"
        "maxSubagentDepth: 0\n"
        f'command: ["bash", "{script}", "{{task}}"]\n---\nMisbehave.\n',
        encoding="utf-8",
    )


async def test_an_agent_cannot_act_as_root_its_sibling_or_from_outside_its_tree(
    tmp_path: Path,
) -> None:
    _card(tmp_path)
    out = tmp_path / "outcomes.txt"
    async with hosted(tmp_path) as sup:
        victim = await stuck_worker(sup, "victim")
        # The task is the script's arguments: the victim's name and id, the outcome file.
        rogue = await spawn_one(sup, "rogue", name="rogue", task=f"victim {victim.id} {out}")
        await until(lambda: out.exists() and "done" in out.read_text(), 60, "the rogue's tries")
        outcomes = dict(line.split(": ") for line in out.read_text().splitlines()[:-1])
        errors = (tmp_path / "outcomes.txt.err").read_text()
        assert outcomes == {
            "unset-free": "1",  # as itself: a worker may not stop its sibling
            "as root": "1",
            "as victim": "1",
            "spawn": "1",  # maxSubagentDepth: 0 holds whatever it claims to be
            "spawn as root": "1",
            "as me": "0",
            "escaped": "1",
        }, errors
        assert errors.count("acts as rogue only") == 3, errors  # the three forged claims
        assert "runs under none of its live agents" in errors, errors
        node = sup.names.node(victim.id)
        assert node.status is NodeStatus.RUNNING and node.live, node
        assert [n.name for n in sup.model.children(rogue.id)] == []
        # The user's own shell is outside the legion: root, as always.
        code, said, err = await run_cli("stop", "victim", "--force", cwd=tmp_path)
        assert code == 0, err
        assert said.strip() == "Stopped victim."
        await until(lambda: sup.names.node(victim.id).status is NodeStatus.RETIRED)
        assert sup.names.node(ROOT_ID).live


def test_the_kernel_decides_and_a_claim_only_narrows() -> None:
    agents = {100: "n-a", 200: "n-b"}
    names = {"n-a": "a", "n-b": "b", ROOT_ID: "root"}.__getitem__
    inside_a = Peer(pid=150, ancestors=(100, 1), marked=True)
    assert caller_of(inside_a, "n-a", agents, names) == "n-a"
    nested = Peer(pid=250, ancestors=(200, 100, 1), marked=True)  # b runs under a
    assert caller_of(nested, "n-b", agents, names) == "n-b"  # the nearest agent
    outsider = Peer(pid=300, ancestors=(1,), marked=False)
    assert caller_of(outsider, ROOT_ID, agents, names) == ROOT_ID
    assert caller_of(outsider, "n-b", agents, names) == "n-b"  # root may act as a node
    for peer, claimed in ((inside_a, ROOT_ID), (nested, "n-a"), (inside_a, "n-b")):
        try:
            caller_of(peer, claimed, agents, names)
        except Exception as err:
            assert getattr(err, "code", None) == "FORBIDDEN", err
        else:
            raise AssertionError(f"{peer} acted as {claimed}")
    escaped = Peer(pid=400, ancestors=(1,), marked=True)
    unknown = Peer(pid=None, ancestors=(), marked=True)
    for peer in (escaped, unknown):
        try:
            caller_of(peer, ROOT_ID, agents, names)
        except Exception as err:
            assert getattr(err, "code", None) == "FORBIDDEN", err
        else:
            raise AssertionError(f"{peer} acted as root")
