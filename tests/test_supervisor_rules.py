"""SPEC §5: permissions, guards G1–G4, budgets and names — every refusal happens before
any node row, session file or agent exists."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import hosted, spawn_one, stuck_worker, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.client import LegionClient
from legion_tui.wire.names import ROOT_ID, OpError, RequestError
from legion_tui.wire.spawn_request import Budgets, ChildRequest

pytestmark = pytest.mark.host


async def _rows(sup: Supervisor) -> list[str]:
    return sorted(n.path for n in await sup.ledger.get_nodes(sup.run.run_id))


def _session_files(sup: Supervisor) -> list[Path]:
    return sorted(sup.run.sessions_dir.glob("*.jsonl"))


async def _refused(sup: Supervisor, caller: str, children: list[ChildRequest], code: str) -> str:
    """The spawn is refused with `code` and leaves no trace: no row, no file, no launch."""
    rows, files, launches = await _rows(sup), _session_files(sup), sup.launches
    shown = set(sup.model.nodes)
    with pytest.raises(OpError) as err:
        await sup.launcher.spawn(caller, children)
    assert err.value.code == code, err.value.message
    assert await _rows(sup) == rows
    assert _session_files(sup) == files
    assert sup.launches == launches
    assert set(sup.model.nodes) == shown
    return err.value.message


async def test_worker_may_not_stop_its_sibling(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        a = await stuck_worker(sup, "a")
        b = await stuck_worker(sup, "b")
        # Through the socket, as the sibling's own `legion stop` would call it.
        async with LegionClient(sup.socket_path, caller=a.id) as client:
            with pytest.raises(RequestError) as err:
                await client.request("stop", name="b", force=False)
        assert err.value.code == "NOT_FOUND"  # a sibling is not below `a`: not even found
        assert sup.names.node(b.id).status is NodeStatus.RUNNING
        # Not even by full path: the rule is about descendants, not about finding it.
        with pytest.raises(OpError) as by_path:
            await sup.stops.stop(a.id, "root/b")
        assert by_path.value.code == "FORBIDDEN"
        assert sup.names.node(b.id).status is NodeStatus.RUNNING


async def test_worker_may_not_spawn_a_centurion_g1(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        w = await stuck_worker(sup, "w")
        async with LegionClient(sup.socket_path, caller=w.id) as client:
            with pytest.raises(RequestError) as err:
                await client.request("spawn", children=[{"role": "centurion", "task": "x"}])
        assert err.value.code == "FORBIDDEN"
        assert "centurion" in err.value.message
        assert await _rows(sup) == ["root", "root/w"]


async def test_phases_only_from_root_and_only_for_a_centurion(tmp_path: Path) -> None:
    machine = {"phases": [{"id": "work", "require": ["always"], "next": ["done"]}]}
    async with hosted(tmp_path) as sup:
        w = await stuck_worker(sup, "w")
        # G2: a worker passing phases.
        msg = await _refused(sup, w.id, [ChildRequest("scout", "x", phases=machine)], "PHASES")
        assert "root" in msg
        # G3: root declaring phases for a worker.
        msg = await _refused(sup, ROOT_ID, [ChildRequest("worker", "x", phases=machine)], "PHASES")
        assert "centurion" in msg
        # G4: a machine that never reaches a terminal.
        loop = {"phases": [{"id": "a", "next": ["b"]}, {"id": "b", "next": ["a"]}]}
        await _refused(sup, ROOT_ID, [ChildRequest("centurion", "x", phases=loop)], "PHASES")


async def test_a_declared_machine_is_stored_with_its_start_phase(tmp_path: Path) -> None:
    machine = {"phases": [{"id": "work", "require": ["always"], "next": ["done"]}]}
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(
            sup, "centurion", name="lead", phases=machine, sim={"children": [{"role": "scout"}]}
        )
        row = await sup.ledger.get_node(lead.id)
        assert row is not None and row.phase == "work" and row.machine
        assert '"work"' in row.machine
        plain = await spawn_one(sup, "worker", name="plain")
        assert sup.names.node(plain.id).phase is None and sup.names.node(plain.id).machine is None


async def test_bad_and_duplicate_names_refuse_the_whole_batch(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        good = ChildRequest("worker", "x", name="fine")
        for bad in ("Upper", "-dash", "a b", "x" * 65, "", "dots/slash"):
            await _refused(sup, ROOT_ID, [good, ChildRequest("worker", "x", name=bad)], "BAD_NAME")
        dup = [good, ChildRequest("scout", "y", name="fine")]
        msg = await _refused(sup, ROOT_ID, dup, "BAD_NAME")
        assert "fine" in msg
        # A name already taken by a sibling: also refused whole, before anything starts.
        await spawn_one(sup, name="taken", sim={"stall_seconds": 1e7})
        clash = [ChildRequest("worker", "x", name="new"), ChildRequest("worker", "x", name="taken")]
        await _refused(sup, ROOT_ID, clash, "NAME_CONFLICT")
        assert "root/new" not in await _rows(sup)


async def test_names_are_auto_numbered_per_role(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        nodes = await sup.launcher.spawn(
            ROOT_ID,
            [ChildRequest("worker", "a"), ChildRequest("worker", "b"), ChildRequest("scout", "c")],
        )
        assert [n.name for n in nodes] == ["worker-0", "worker-1", "scout-0"]
        (more,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", "d")])
        assert more.name == "worker-2"
        assert all(n.path == f"root/{n.name}" for n in [*nodes, more])


@pytest.mark.parametrize(
    ("budgets", "batch", "which"),
    [
        (Budgets(max_children=2), 3, "maxChildrenPerNode"),
        (Budgets(max_active=1), 2, "maxActiveNodes"),
        (Budgets(max_depth=0), 1, "maxDepth"),
    ],
)
async def test_budget_refusals_leave_an_event_and_nothing_else(
    tmp_path: Path, budgets: Budgets, batch: int, which: str
) -> None:
    async with hosted(tmp_path, budgets=budgets) as sup:
        children = [ChildRequest("worker", "x") for _ in range(batch)]
        msg = await _refused(sup, ROOT_ID, children, "BUDGET")
        assert which in msg
        await sup.ledger.flush()
        events = await sup.ledger.get_events(ROOT_ID, types=[EventType.BUDGET_EXCEEDED])
        assert len(events) == 1 and events[0].data["budget"] == which


async def test_a_worker_card_spawns_nothing(tmp_path: Path) -> None:
    # The bundled worker card has maxSubagentDepth 0: a worker escalates, never delegates.
    async with hosted(tmp_path) as sup:
        w = await stuck_worker(sup, "w")
        msg = await _refused(sup, w.id, [ChildRequest("scout", "look")], "BUDGET")
        assert "maxSubagentDepth" in msg


async def test_unknown_role_is_refused_before_anything(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        msg = await _refused(sup, ROOT_ID, [ChildRequest("wizard", "x")], "CARD")
        assert "wizard" in msg


async def test_parent_slash_name_addressing(tmp_path: Path) -> None:
    team = [{"role": "worker", "name": "w", "task": "t", "sim": {"stall_seconds": 1e7}}]
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", sim={"children": team})
        await until(lambda: sup.model.by_path("root/lead/w") is not None, what="lead/w spawned")
        w = sup.names.resolve(ROOT_ID, "lead/w")
        assert w.path == "root/lead/w" and w.parent_id == lead.id
        assert sup.names.resolve(ROOT_ID, "root/lead/w").id == w.id
        assert sup.names.resolve(lead.id, "w").id == w.id  # relative to the caller
        # The lead controls its own child; the child controls nothing above it.
        await until(lambda: sup.names.node(w.id).live, what="w live")
        with pytest.raises(OpError) as err:
            await sup.stops.stop(w.id, "root/lead")
        assert err.value.code == "FORBIDDEN"
        assert await sup.stops.stop(lead.id, "w") == "Stopped w."
