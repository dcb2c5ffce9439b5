"""The tree back after the host ended (issue 31 item 7): every agent that was live is
`interrupted` on reopening; `legion resume --all [--parallel N]` (and `R`) resumes them a
few at a time — never more than N starting at once — leads before their members."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import hosted, run_cli, spawn_one, until

from legion_tui.model import EventType, NodeStatus

pytestmark = pytest.mark.host

COMMAND = 'command: ["sh", "-c", "echo started; exec sleep 600"]\n'


def _cards(project: Path) -> None:
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "looper.md").write_text(
        "---\nname: looper\ndescription: Runs until stopped.\nkind: exec\nrole: worker\n"
        f"{COMMAND}---\nLoop.\n", encoding="utf-8",
    )  # fmt: skip
    (agents / "exec-lead.md").write_text(
        "---\nname: exec-lead\ndescription: A lead that is a script.\nkind: exec\n"
        f"role: centurion\nmaxSubagentDepth: 1\n{COMMAND}---\nLead.\n", encoding="utf-8",
    )  # fmt: skip


async def test_resume_all_starts_two_at_a_time_leads_first(tmp_path: Path) -> None:
    _cards(tmp_path)
    async with hosted(tmp_path, "s") as first:
        lead = await spawn_one(first, "exec-lead", name="lead")
        members = [await spawn_one(first, "looper", name=f"m{i}", caller=lead.id) for i in (1, 2)]
        workers = [await spawn_one(first, "looper", name=f"w{i}") for i in range(4)]
        ids = [lead.id, *(m.id for m in members), *(w.id for w in workers)]
        await until(lambda: all(first.names.node(i).status is NodeStatus.RUNNING for i in ids))
    async with hosted(tmp_path, "s") as again:
        assert {v.node.id for v in again.model.interrupted()} == set(ids)
        starting: list[int] = []

        def count(_dirty: frozenset[str]) -> None:
            starting.append(sum(again.names.node(i).status is NodeStatus.STARTING for i in ids))

        unsubscribe = again.model.subscribe(count)
        try:
            code, out, err = await run_cli("resume", "--all", "--parallel", "2", cwd=tmp_path)
        finally:
            unsubscribe()
        assert code == 0, err
        assert out.count("Restarted") == len(ids), out  # (exec: no session, its task again)
        assert all(again.names.node(i).live for i in ids)
        assert 1 <= max(starting) <= 2, starting  # two at a time: never a storm
        order = sorted(
            ids, key=lambda i: max(e.id for e in again.model.nodes[i].events
                                   if e.type is EventType.NODE_LAUNCHED),
        )  # fmt: skip
        assert order.index(lead.id) < min(order.index(m.id) for m in members)
        # Nothing is left to resume: said so.
        code, out, _err = await run_cli("resume", "--all", cwd=tmp_path)
        assert (code, out.strip()) == (0, "Nothing to resume: no agent is interrupted.")


async def test_resume_takes_a_name_or_all_never_both(tmp_path: Path) -> None:
    async with hosted(tmp_path):
        code, _out, err = await run_cli("resume", "--all", "x", cwd=tmp_path)
        assert code == 1 and "give a NAME or --all (one of them)" in err
        code, _out, err = await run_cli("resume", "x", "--parallel", "3", cwd=tmp_path)
        assert code == 1 and "--parallel goes with --all" in err
        code, _out, err = await run_cli("resume", "--all", "--parallel", "0", cwd=tmp_path)
        assert code == 1 and "--parallel must be at least 1, got 0" in err


async def test_a_settled_agents_pid_is_not_trusted_after_its_host_ended(tmp_path: Path) -> None:
    """The old host's idle processes ended with it: reopened, a settled node holds no
    pid (the ledger's is stale): `x` does not offer to end a process that is gone."""
    async with hosted(tmp_path, "s") as first:
        node = await spawn_one(first, name="w", sim={"quick": True})
        await until(lambda: first.names.node(node.id).status is NodeStatus.SETTLED)
        await first.record.update_node(node.id, pid=2**22 + 7)  # as a held process leaves it
    async with hosted(tmp_path, "s") as again:
        view = again.model.nodes[node.id]
        assert view.node.status is NodeStatus.SETTLED and view.node.pid is None
        stored = {n.id: n for n in await again.record.ledger.get_nodes(again.run.run_id)}
        assert stored[node.id].pid is None
