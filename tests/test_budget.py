"""Dollar budgets (issue 12 item 6): a subtree that spends past its budget is stopped, with
an honest receipt (which budget, the spent figure, the limit, what the stop did).

Real simulated agents on a real host: a worker stuck in one bash call spends ≈ $0.02 in
its first two turns and never ends on its own, so only the budget can stop it. The
budgets come from the request (`--budget-usd` / `budgetUsd`), the card's `budgetUsd`,
and `[budget] usd` for the whole run; `legion spawn --budget-usd` over the real socket,
and the refusals of a bad amount.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from supervisor_helpers import STUCK, hosted, run_cli, settled, spawn_one, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID, OpError
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host


def _exceeded(sup: Supervisor, node_id: str) -> list[dict[str, object]]:
    return [e.data for e in sup.model.nodes[node_id].events
            if e.type is EventType.BUDGET_EXCEEDED]  # fmt: skip


def _spent(sup: Supervisor, node_id: str) -> float:
    return sup.model.nodes[node_id].progress.cost


async def test_a_worker_past_its_budget_is_stopped_and_the_receipt_says_why(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, name="spender", sim=STUCK, budget_usd=0.01)
        await until(lambda: bool(_exceeded(sup, node.id)), 20, "the budget event")
        assert sup.names.node(node.id).status is NodeStatus.RETIRED
        (data,) = _exceeded(sup, node.id)
        assert data["budget"] == "--budget-usd" and data["limit_usd"] == 0.01
        spent = float(data["spent_usd"])  # type: ignore[arg-type]
        assert 0.01 < spent <= _spent(sup, node.id)
        receipt = str(data["receipt"])
        assert "spender" in receipt and "not stopped" not in receipt
        told = [t for t in sup.model.announcements if t.startswith("Budget exceeded")]
        assert told[-1].startswith(
            f"Budget exceeded: spender and its subtree spent ${spent:.3f} of $0.010 "
            "(--budget-usd) — "
        ), told
        # Once: more spending cannot trip it again.
        assert len(told) == 1


async def test_a_budget_that_is_not_reached_changes_nothing(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, name="thrifty", budget_usd=10.0)
        done = await settled(sup, node.id)
        assert done.status is NodeStatus.SETTLED and _exceeded(sup, node.id) == []


async def test_a_cards_budget_and_the_runs_budget_in_the_settings(tmp_path: Path) -> None:
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "capped.md").write_text(
        "---\nname: capped\ndescription: A worker with a budget.\nkind: sim\nrole: worker\n"
        "budgetUsd: 0.01\n---\nWork.\n",
        encoding="utf-8",
    )
    (tmp_path / ".legion" / "settings.toml").write_text("[budget]\nusd = 0.05\n")
    async with hosted(tmp_path) as sup:
        capped = await spawn_one(sup, "capped", name="capped", sim=STUCK)
        await until(lambda: bool(_exceeded(sup, capped.id)), 20, "the card's budget event")
        (data,) = _exceeded(sup, capped.id)
        assert data["budget"] == "budgetUsd of card capped"
        # The run's budget: stuck workers (no budget of their own) until the sum passes it.
        stuck = await sup.launcher.spawn(
            ROOT_ID, [ChildRequest("worker", "t", name=f"s{i}", sim=STUCK) for i in range(3)]
        )  # one batch: all run
        for node in stuck:
            assert (await settled(sup, node.id)).status is NodeStatus.RETIRED
        await until(lambda: bool(_exceeded(sup, ROOT_ID)), 20, "the run's budget event")
        (run,) = _exceeded(sup, ROOT_ID)
        assert run["budget"] == "[budget] usd in .legion/settings.toml"
        assert float(run["spent_usd"]) > 0.05  # type: ignore[arg-type]


async def test_spawn_budget_usd_over_the_socket_and_bad_amounts_refused(tmp_path: Path) -> None:
    with pytest.raises(OpError, match=r"child\.budgetUsd must be an amount of dollars > 0"):
        ChildRequest.from_wire({"role": "worker", "task": "t", "budgetUsd": 0})
    with pytest.raises(OpError, match="got True"):
        ChildRequest.from_wire({"role": "worker", "task": "t", "budgetUsd": True})
    code, _out, err = await run_cli("run", "worker", "--kind", "sim", "--task", "t",
                                    "--budget-usd", "-1", cwd=tmp_path)  # fmt: skip
    assert code == 1 and "--budget-usd must be an amount of dollars > 0, got -1.0" in err
    assert not (tmp_path / ".legion" / "runs").exists()
    async with hosted(tmp_path) as sup:
        code, _out, err = await run_cli("spawn", "worker", "--name", "cli", "--task", "t",
                                        "--budget-usd", "0.01", cwd=tmp_path)  # fmt: skip
        assert code == 0, err
        node_id = sup.names.resolve(ROOT_ID, "cli").id
        await until(lambda: bool(_exceeded(sup, node_id)), 20, "the budget event")
        assert _exceeded(sup, node_id)[0]["budget"] == "--budget-usd"
        code, _out, err = await run_cli("spawn", "worker", "--task", "t", "--budget-usd", "nan",
                                        cwd=tmp_path)  # fmt: skip
        assert code == 1 and "child.budgetUsd must be an amount of dollars > 0" in err


async def test_a_node_whose_calls_have_no_price_is_said_to_be_beyond_the_budget(
    tmp_path: Path,
) -> None:
    """A Claude Code or Codex agent on a model no price table knows spends an unknown
    amount (`$?`): its budget cannot hold, and the user is told so once — never a budget
    that silently counts it as $0."""
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, name="unpriced", sim=STUCK, budget_usd=5.0)
        view = sup.model.nodes[node.id]
        progress = dataclasses.replace(view.progress, model="scripted-model", unpriced_calls=1)
        def told() -> list[str]:
            return [t for t in sup.model.announcements if t.startswith("Budget cannot hold")]

        for _ in range(2):  # as the session watcher reports it, more than once
            sup.model.set_progress(node.id, progress)
            sup.model.flush()  # the listeners told now, not at the loop's next turn
        assert told() == [
            "Budget cannot hold for unpriced: its model (scripted-model) has no price, so "
            "its spend is unknown and not counted against $5.00 (--budget-usd)"
        ]
        assert sup.names.node(node.id).live  # said, not stopped: its spend is not known


async def test_no_spawn_is_admitted_past_a_budget_until_its_limit_is_raised(
    tmp_path: Path,
) -> None:
    """Issue 32 item 2: after the run's budget stopped its worker, a new worker was
    admitted and spent past it. Now the spawn is refused while the run is over, naming the
    figures; the limit raised in the settings admits spawns again."""
    settings = tmp_path / ".legion" / "settings.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text("[budget]\nusd = 0.01\n")
    async with hosted(tmp_path) as sup:
        assert sup.model.budget_usd == 0.01  # the header shows it from the start
        first = await spawn_one(sup, name="first", sim=STUCK)
        await until(lambda: bool(_exceeded(sup, ROOT_ID)), 20, "the run's budget event")
        assert (await settled(sup, first.id)).status is NodeStatus.RETIRED
        (breach,) = _exceeded(sup, ROOT_ID)
        print(f"budget timeline: limit $0.010 · spent at the breach ${breach['spent_usd']} · "
              f"when the subtree had stopped ${_spent(sup, first.id):.6f}")
        with pytest.raises(OpError) as refused:
            await spawn_one(sup, name="second")
        assert refused.value.code == "BUDGET"
        # (The figure: what the sessions say at the refusal; the stopped worker's last
        # line may still be read after it retired.)
        assert re.fullmatch(
            r"over budget: the run spent \$0\.0[1-9]\d of \$0\.010 \(\[budget\] usd in "
            r"\.legion/settings\.toml\); nothing was spawned — raise the limit to spawn again",
            refused.value.message,
        ), refused.value.message
        assert sup.model.by_path("root/second") is None  # nothing was written
        settings.write_text("[budget]\nusd = 10\n")
        second = await spawn_one(sup, name="second")
        assert sup.model.budget_usd == 10
        assert (await settled(sup, second.id)).status is NodeStatus.SETTLED


async def test_reopening_a_run_over_its_budget_stops_nothing_that_ended(tmp_path: Path) -> None:
    """Issue 32 item 2: a run reopened over its budget tripped it again, and its stop
    retired every settled agent. Nothing under it runs: nothing is stopped, the settled
    stay settled, and a spawn is refused as over budget."""
    async with hosted(tmp_path, "s") as sup:
        done = await spawn_one(sup, name="done", sim={"quick": True})
        assert (await settled(sup, done.id)).status is NodeStatus.SETTLED
        spent = _spent(sup, done.id)
    assert spent > 0.0001
    settings = tmp_path / ".legion" / "settings.toml"
    settings.write_text("[budget]\nusd = 0.0001\n")
    async with hosted(tmp_path, "s") as again:
        assert again.reopened
        # Its session read again: the run is over its budget from here on.
        await until(lambda: _spent(again, done.id) == spent, 20, "the session read again")
        again.model.flush()  # the budget has looked at it
        await again.stops.idle()  # any stop it started is over
        assert again.names.node(done.id).status is NodeStatus.SETTLED
        assert _exceeded(again, ROOT_ID) == []  # nothing to stop: no stop, no event
        with pytest.raises(OpError, match="over budget: the run spent"):
            await spawn_one(again, name="more")
        assert again.names.node(done.id).status is NodeStatus.SETTLED
