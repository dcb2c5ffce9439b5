"""Settling and failing (SPEC §6): verdicts from the session file, provider-empty-generation,
non-zero exits, OS-process children stopped by the sweep, ledger and model in step."""

from __future__ import annotations

import textwrap
from pathlib import Path

import psutil
import pytest
from supervisor_helpers import hosted, settled, spawn_one, stuck_worker, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.hearing.status import render_status
from legion_tui.widgets.tree.rows import Activity, activity
from legion_tui.wire.names import ROOT_ID, OpError

pytestmark = pytest.mark.host


async def test_a_worker_settles_with_its_verdict_in_ledger_and_model(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        x = await spawn_one(sup, name="x")
        node = await settled(sup, x.id)
        assert node.status is NodeStatus.SETTLED and node.verdict
        await sup.ledger.flush()
        row = await sup.ledger.get_node(x.id)
        assert row is not None and row.status is NodeStatus.SETTLED and row.verdict == node.verdict
        types = [e.type for e in await sup.ledger.get_events(x.id)]
        assert types[:2] == [EventType.NODE_LAUNCHED, EventType.NODE_SETTLED]
        usage = await sup.ledger.get_usage(x.id)
        assert (
            usage is not None and usage.output == sup.model.nodes[x.id].progress.tokens.output > 0
        )


async def test_provider_empty_generation_fails_the_node_after_one_retry(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        bad = await spawn_one(sup, name="bad", sim={"fail": True})
        node = await settled(sup, bad.id)
        assert node.status is NodeStatus.FAILED
        assert node.error == (
            "provider-empty-generation (provider returned an empty generation; retried once)"
        )
        events = sup.model.nodes[bad.id].events
        retries = [e for e in events if e.data.get("retry") == "provider-empty-generation"]
        assert [e.data["outcome"] for e in retries] == ["accepted"]  # once, not twice
        assert EventType.NODE_FAILED in [e.type for e in events]
        # A failed agent has exited: steering it is refused with the way forward ...
        await until(
            lambda: sup.roster.handles()[bad.id].exited is not None, what="the agent's exit"
        )
        with pytest.raises(OpError) as err:
            await sup.control.steer(ROOT_ID, "bad", "try again")
        assert err.value.code == "NOT_RUNNING" and "legion resume bad" in err.value.message
        # ... and resume starts it again on the same session file.
        assert (await sup.control.resume(ROOT_ID, "bad")).startswith("Resumed bad")
        assert sup.names.node(bad.id).live and sup.names.node(bad.id).error is None


async def test_a_process_child_runs_settles_and_its_stop_leaves_no_process(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        quick = await spawn_one(sup, name="quick", isolate=True)
        assert quick.backend == "process"
        node = await settled(sup, quick.id, limit=60)
        assert node.status is NodeStatus.SETTLED and node.verdict and node.pid
        stuck = await spawn_one(sup, name="stuck", isolate=True, sim={"stall_seconds": 1e7})
        await until(lambda: bool(sup.model.nodes[stuck.id].progress.in_flight), 60, "in a tool")
        pid = sup.names.node(stuck.id).pid
        assert pid is not None and psutil.pid_exists(pid)
        assert await sup.stops.stop(ROOT_ID, "stuck", force=True) == "Stopped stuck."
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_an_exec_child_that_exits_non_zero_fails(tmp_path: Path) -> None:
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "runner.md").write_text(
        textwrap.dedent(
            """\
            ---
            name: runner
            description: Runs one command.
            kind: exec
            role: worker
            command: ["sh", "-c", "echo working on {name}; exit 3"]
            ---
            Run the command.
            """
        ),
        encoding="utf-8",
    )
    async with hosted(tmp_path) as sup:
        r = await spawn_one(sup, "runner", name="r")
        assert r.role == "worker"  # the card `runner` plays the worker role
        assert r.kind == "exec" and r.backend == "process"
        node = await settled(sup, r.id, limit=30)
        assert node.status is NodeStatus.FAILED
        assert node.error == "exited with status 3"
        log = sup.run.dir / "terminal" / f"{r.id}.log"
        await until(log.exists, what="terminal log")
        assert "working on r" in log.read_text(encoding="utf-8")


async def test_an_interactive_exec_child_shows_its_question_and_takes_the_answer(
    tmp_path: Path,
) -> None:
    """No session file and no red error: the row and `status` show the command's terminal
    line (its question), a steer answers it, and it settles with its last words shown."""
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "asker.md").write_text(
        "---\nname: asker\ndescription: Asks a question.\nkind: exec\nrole: worker\n"
        'command: ["bash", "-c", "read -r -p \'proceed with {name}? [y/N] \' a; '
        'echo answered $a"]\n---\nAsk.\n',
        encoding="utf-8",
    )
    async with hosted(tmp_path) as sup:
        a = await spawn_one(sup, "asker", name="q")
        view = sup.model.nodes[a.id]
        await until(lambda: view.terminal_line == "proceed with q? [y/N]", what="its question")
        assert activity(view, 0.0) == Activity("proceed with q? [y/N]", "text")
        (entry,) = sup.queries.status(ROOT_ID, "q")["nodes"]
        block = render_status({"run_id": "r", "session": "s", "nodes": [entry]}).splitlines()
        assert block[3:] == [
            "  running · terminal: proceed with q? [y/N]",
            "  0 tokens out · 0 tok/s now (10 s) · 0 tok/s decode avg",
        ]
        assert view.progress.read_error is None  # no session file is not an error
        outcome, _receipt = await sup.control.steer(ROOT_ID, "q", "y")
        assert outcome == "queued"  # typed into its terminal; the command reads it
        node = await settled(sup, a.id, limit=30)
        assert node.status is NodeStatus.SETTLED, node.error
        assert activity(sup.model.nodes[a.id], 0.0) == Activity("answered y", "dim")


async def test_model_subscribers_hear_status_changes(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        heard: list[frozenset[str]] = []
        sup.model.subscribe(heard.append)
        w = await stuck_worker(sup, "w")
        await until(lambda: any(w.id in d for d in heard), what="a change signal")
        # The host's own root node counts as live while it hosts.
        assert sup.model.counts() == {"live": 2, "settled": 0, "failed": 0, "retired": 0}
        await sup.stops.stop(ROOT_ID, "w")
        assert sup.model.counts() == {"live": 1, "settled": 0, "failed": 0, "retired": 1}


async def test_a_program_that_is_not_there_is_refused_and_leaves_no_row(tmp_path: Path) -> None:
    """Refused before anything exists (issue 14 item 24), not a node that lives only to
    fail its launch and then sits in the tree and the budget."""
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "ghost.md").write_text(
        "---\nname: ghost\ndescription: missing program\nkind: exec\nrole: worker\n"
        'command: ["no-such-program-xyz", "{task}"]\n---\nRun.\n',
        encoding="utf-8",
    )
    async with hosted(tmp_path) as sup:
        with pytest.raises(OpError) as refused:
            await spawn_one(sup, "ghost", name="g")
        assert refused.value.code == "NOT_FOUND"
        assert refused.value.message == (
            "'ghost' (kind exec, .legion/agents/ghost.md) runs 'no-such-program-xyz', which is "
            "not on PATH (nor a file from the project): nothing was spawned"
        )
        assert list(sup.model.nodes) == [ROOT_ID]
