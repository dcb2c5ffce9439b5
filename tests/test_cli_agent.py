"""The CLI front door as a user runs it: real `legion` subprocesses against a real
supervisor (or none), exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from process_helpers import put_fake_pi_on_path
from supervisor_helpers import hosted, run_cli, settled, spawn_one, stuck_worker

from legion_tui.model import NodeStatus
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import Budgets

pytestmark = pytest.mark.host


async def test_status_json_with_a_live_supervisor(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        w = await stuck_worker(sup, "w")
        code, out, err = await run_cli("status", "--json", cwd=tmp_path)
        assert code == 0, err
        doc = json.loads(out)
        assert doc["run_id"] == sup.run.run_id and doc["session"] == "main" and doc["live"]
        entry = next(n for n in doc["nodes"] if n["id"] == w.id)
        expected_keys = {
            "id", "name", "path", "role", "kind", "backend", "status", "phase", "pid",
            "tokens_out", "tok_s", "activity", "verdict",
        }  # fmt: skip
        assert expected_keys <= set(entry)
        assert entry["status"] == "running" and entry["path"] == "root/w"
        assert entry["activity"]["tool"] == "bash" and entry["activity"]["stalled"] is False
        code, out, _ = await run_cli("status", cwd=tmp_path)
        assert code == 0 and "working · bash 00:00:" in out


async def test_status_json_without_a_live_supervisor(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        x = await spawn_one(sup, name="x")
        await settled(sup, x.id)
        run_id = sup.run.run_id
    code, out, err = await run_cli("status", "--json", cwd=tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["run_id"] == run_id and doc["live"] is False
    entry = next(n for n in doc["nodes"] if n["name"] == "x")
    assert entry["status"] == "settled" and entry["verdict"]["ok"] is True
    assert entry["kind"] == "sim" and entry["simulated"] is True  # read from the ledger
    assert entry["tokens_out"] > 0 and entry["activity"] is None
    code, out, _ = await run_cli("status", "x", cwd=tmp_path)
    assert code == 0 and "no live supervisor" in out and "verdict ✓" in out
    code, out, _ = await run_cli("tree", cwd=tmp_path)
    assert code == 0 and "○ x (worker, sim)" in out


async def test_status_with_no_run_at_all(tmp_path: Path) -> None:
    code, _out, err = await run_cli("status", cwd=tmp_path)
    assert code == 1 and "no legion run" in err


async def test_verbs_act_as_root_on_the_live_run(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        code, out, err = await run_cli(
            "spawn", "worker", "--task", "go", "--name", "cli", cwd=tmp_path
        )
        assert code == 0, err
        assert out.startswith("Spawned root/cli")
        node = sup.names.resolve("root", "cli")
        code, out, err = await run_cli("wait", "cli", "--timeout", "30", cwd=tmp_path)
        assert code == 0, err
        assert "root/cli: settled verdict ✓" in out
        code, out, _ = await run_cli("collect", "cli", "--json", cwd=tmp_path)
        assert code == 0 and json.loads(out)["verdict"]["ok"] is True
        code, out, _ = await run_cli("stop", "cli", cwd=tmp_path)
        assert code == 0
        assert out.strip() == "Retired 1 already-settled child: cli (execution: success)"
        assert sup.names.node(node.id).status is NodeStatus.RETIRED


async def test_refusals_exit_1_and_usage_errors_exit_2(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        await stuck_worker(sup, "w")
        code, _out, err = await run_cli(
            "spawn", "worker", "--task", "x", "--name", "Bad!", cwd=tmp_path
        )
        assert code == 2 and "invalid name" in err  # a usage error, before any request
        code, out, _ = await run_cli("abort", "nobody", "--json", cwd=tmp_path)
        assert code == 1 and json.loads(out)["error"]["code"] == "NOT_FOUND"
        code, _out, _err = await run_cli("wait", "w", "--timeout", "0.2", cwd=tmp_path)
        assert code == 1 and sup.names.resolve("root", "w").status is NodeStatus.RUNNING
        code, _out, err = await run_cli("stop", cwd=tmp_path)  # NAME missing
        assert code == 2 and "usage" in err
        code, _out, _err = await run_cli("steer", "w", "look at the logs", cwd=tmp_path)
        assert code == 0
    code, _out, err = await run_cli("stop", "w", cwd=tmp_path)
    assert code == 1 and "no live legion supervisor" in err


async def test_identity_comes_from_the_environment(tmp_path: Path) -> None:
    import asyncio
    import os

    from supervisor_helpers import LEGION, cli_env

    async with hosted(tmp_path) as sup:
        a = await stuck_worker(sup, "a")
        await stuck_worker(sup, "b")
        env = cli_env() | {"LEGION_SOCKET": str(sup.socket_path), "LEGION_NODE_ID": a.id}
        proc = await asyncio.create_subprocess_exec(
            LEGION, "stop", "root/b", cwd=os.getcwd(), env=env, stderr=asyncio.subprocess.PIPE
        )
        _out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 1 and b"only its own descendants" in err
        assert sup.names.resolve("root", "b").status is NodeStatus.RUNNING


async def test_spawn_reports_an_agent_that_failed_to_start_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The host's pi refuses every prompt (like pi without an API key): `legion spawn`
    # must not print "Spawned" and exit 0 for a child that never ran.
    monkeypatch.setenv("PATH", put_fake_pi_on_path(tmp_path / "bin"))
    monkeypatch.setenv("FAKE_PI_MODE", "refuse")
    async with hosted(tmp_path) as sup:
        code, out, err = await run_cli(
            "spawn", "worker", "--kind", "pi", "--task", "go", "--name", "p", cwd=tmp_path
        )
        assert code == 1, (out, err)
        assert out.startswith("Failed to start root/p (") and "No API key found" in out
        assert sup.names.node(sup.names.resolve("root", "p").id).status is NodeStatus.FAILED


async def test_spawn_as_exec_of_a_card_without_a_command_is_refused_and_leaves_no_row(
    tmp_path: Path,
) -> None:
    """`--kind exec` on the bundled worker (no command) answered an internal ValueError and
    left the node `starting` for ever, holding a budget slot (issue 14 item 14)."""
    async with hosted(tmp_path, budgets=Budgets(max_active=1)) as sup:
        code, out, err = await run_cli(
            "spawn", "worker", "--kind", "exec", "--task", "go", "--name", "e", cwd=tmp_path
        )
        assert code == 1, (out, err)
        assert "'worker' has no command, and kind exec runs one" in err, err
        assert "ValueError" not in err and "Traceback" not in err
        assert list(sup.model.nodes) == [ROOT_ID]
        # The slot it would have held is free: the one allowed spawn still goes through.
        code, out, err = await run_cli("spawn", "worker", "--task", "go", cwd=tmp_path)
        assert code == 0, (out, err)
