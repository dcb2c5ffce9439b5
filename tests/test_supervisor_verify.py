"""Review round 4: a stop during a team's `legion-verify` run ends the run's commands and
the team stays `aborted` (the finished verification no longer writes a move)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import STUCK, hosted, spawn_one, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.supervisor.processes.sweep import marked_pids
from legion_tui.wire.names import ROOT_ID, OpError

pytestmark = pytest.mark.host

GATED = {
    "phases": [
        {"id": "verifying", "next": [{"to": "done", "require": ["verification_passed"]}]},
    ]
}


def _write_contract(sup: Supervisor, ready: Path) -> None:
    path = sup.run.dir / "contracts" / "lead.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    # Says it is running (a file), then waits far past the test.
    path.write_text(f"# Contract\n\n```legion-verify\ntouch {ready} && exec sleep 600\n```\n")


def _exists(path: Path) -> bool:
    return path.exists()


async def test_a_stop_during_verification_ends_it_and_keeps_the_team_aborted(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", phases=GATED, sim=dict(STUCK))
        await until(lambda: sup.names.node(lead.id).live, what="the lead to run")
        ready = tmp_path / "verify-started"
        _write_contract(sup, ready)
        move = asyncio.create_task(sup.teams.phase_op.phase(lead.id, "done"))
        await until(lambda: _exists(ready), 20, "the verify command to start")
        marker = f"{lead.id}.verify"
        assert marked_pids(sup.run.run_id, [marker])  # the command carries the marker
        assert await sup.stops.stop(ROOT_ID, "lead", force=True) == "Stopped lead."
        # The stop's sweep ended the command (it would sleep 600 s otherwise) ...
        with pytest.raises(OpError) as err:
            await asyncio.wait_for(move, 20)
        assert err.value.code == "ENDED"
        assert not marked_pids(sup.run.run_id, [marker])
        # ... and the team keeps the `aborted` the retirement wrote.
        node = sup.names.node(lead.id)
        assert node.status is NodeStatus.RETIRED and node.phase == "aborted"
        changes = [
            e.data["to"]
            for e in await sup.ledger.get_events(lead.id, types=[EventType.PHASE_CHANGE])
        ]
        assert changes == ["aborted"]


async def test_a_verification_that_passes_after_the_stop_writes_no_move(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from legion_tui.supervisor.teams import verify

    gate, entered = asyncio.Event(), asyncio.Event()
    real = verify.verify_contract

    async def held(contract: Path, **kw: Any) -> verify.VerificationResult:
        result = await real(contract, **kw)  # no contract: passes "by contract"
        entered.set()
        await gate.wait()  # the stop lands while the commands "run"
        return result

    monkeypatch.setattr(verify, "verify_contract", held)
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", phases=GATED, sim=dict(STUCK))
        await until(lambda: sup.names.node(lead.id).live, what="the lead to run")
        move = asyncio.create_task(sup.teams.phase_op.phase(lead.id, "done"))
        await asyncio.wait_for(entered.wait(), 20)
        assert await sup.stops.stop(ROOT_ID, "lead") == "Stopped lead."
        assert sup.names.node(lead.id).phase == "aborted"
        gate.set()
        with pytest.raises(OpError) as err:
            await asyncio.wait_for(move, 20)
        assert err.value.code == "ENDED"
        assert sup.names.node(lead.id).phase == "aborted"  # not overwritten to done
