"""Agents on a real local Ray cluster (issue 15 item 2): two worker nodes on this machine
(tests/ray_helpers.py), the host configured through `.legion/settings.toml` exactly as a
user's would be."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil
import pytest
import ray
from ray.cluster_utils import Cluster
from ray_helpers import BOX, NODE_CPUS, handle_of, project_on, sha
from ray_helpers import cluster as cluster  # the module's fixture
from supervisor_helpers import STUCK, hosted, spawn_one, until

from legion_tui.git.worktree import create_sandbox_repo
from legion_tui.model import EventType, NodeStatus
from legion_tui.phases import DEFAULT_MACHINE
from legion_tui.sim.script import SANDBOX_FILES
from legion_tui.supervisor.backends.ray.handle import RayHandle
from legion_tui.supervisor.life.retire_reasons import NODE_LOST_REASON
from legion_tui.wire.names import ROOT_ID

pytestmark = [pytest.mark.ray, pytest.mark.timeout(180)]


def _project(tmp_path: Path, cluster: Cluster) -> Path:
    return project_on(tmp_path, cluster)


def _marked(run_id: str) -> list[int]:
    """Processes on this machine (both nodes) that carry this run's marker."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("LEGION_RUN_ID") == run_id:
                found.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


def test_the_tests_cluster_is_not_the_one_auto_finds(cluster: Cluster) -> None:
    """Ray's `address = "auto"` reads /tmp/ray/ray_current_cluster: a `legion run`
    elsewhere on this machine must not find the test's cluster there and fill its nodes."""
    own = Path(os.environ["RAY_TMPDIR"]) / "ray" / "ray_current_cluster"
    assert own.read_text().strip() == cluster.address
    shared = Path("/tmp/ray/ray_current_cluster")
    assert not shared.exists() or shared.read_text().strip() != cluster.address


async def test_agents_land_on_both_nodes_and_the_host_mirrors_their_sessions_whole(
    tmp_path: Path, cluster: Cluster
) -> None:
    async with hosted(_project(tmp_path, cluster)) as sup:
        a = await spawn_one(sup, name="a", sim={"quick": True})
        b = await spawn_one(sup, name="b", sim={"quick": True})
        handles = {n.id: handle_of(sup, n.id) for n in (a, b)}
        places = {h.placement.node_id for h in handles.values() if h.placement is not None}
        assert len(places) == 2  # spread: one agent on each worker node
        for node in (a, b):
            await until(lambda n=node: sup.names.node(n.id).status is NodeStatus.SETTLED, 60.0,
                        f"{node.name} settled")
            remote = handles[node.id].placement
            assert remote is not None
            host_file = sup.run.sessions_dir / f"{node.id}.jsonl"
            assert not host_file.is_symlink() and host_file.resolve() != Path(remote.session_file)
            # Every byte, in order: the node's file and the host's mirror are one file.
            assert sha(remote.session_file) == sha(host_file)
            progress = sup.model.nodes[node.id].progress
            assert progress.turns >= 1 and sup.names.node(node.id).verdict is not None
        assert sup.names.node(a.id).backend == "process"


async def test_stop_leaves_no_process_on_either_node(tmp_path: Path, cluster: Cluster) -> None:
    async with hosted(_project(tmp_path, cluster)) as sup:
        nodes = [await spawn_one(sup, name=f"s{i}", sim=dict(STUCK)) for i in range(2)]
        handles = [handle_of(sup, n.id) for n in nodes]
        assert len({h.placement.node_id for h in handles if h.placement}) == 2
        pids = [h.placement.pid for h in handles if h.placement is not None]
        assert all(psutil.pid_exists(p) for p in pids)
        assert set(pids) <= set(_marked(sup.run.run_id))
        for node in nodes:  # its endless bash call, in flight, read from the mirror
            await until(lambda n=node: bool(sup.model.nodes[n.id].progress.in_flight), 30.0,
                        f"{node.name}'s tool call in flight")  # fmt: skip
        for node in nodes:
            await sup.stops.stop(ROOT_ID, node.name)
        for pid in pids:
            assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
        assert _marked(sup.run.run_id) == []
        assert all(sup.names.node(n.id).status is NodeStatus.RETIRED for n in nodes)


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


async def test_a_workers_branch_comes_back_into_the_host_repository(
    tmp_path: Path, cluster: Cluster
) -> None:
    sandbox = tmp_path / ".legion" / "sandbox"
    project = _project(tmp_path, cluster)
    base = await create_sandbox_repo(sandbox, SANDBOX_FILES, "seed")
    async with hosted(project) as sup:
        sup.sandbox = sandbox
        worker = await spawn_one(sup, name="worker-0", sim={"quick": True})
        tree = sup.teams.worktree_of(worker.id)
        assert tree is not None and tree.path.is_relative_to(sandbox)
        await until(lambda: sup.names.node(worker.id).status is NodeStatus.SETTLED, 60.0, "settled")
        remote = handle_of(sup, worker.id).placement
        assert remote is not None and not Path(remote.session_file).is_relative_to(sandbox)
        # The node's commits, made in its own clone, are on the branch in the sandbox.
        commits = _git(sandbox, "log", "--format=%an|%s", f"{base}..{tree.branch}").splitlines()
        assert commits and all(c.startswith("worker-0|worker-0: ") for c in commits)
        assert _git(tree.path, "rev-parse", "HEAD") == _git(sandbox, "rev-parse", tree.branch)
        assert _git(tree.path, "status", "--porcelain") == ""


async def test_an_exec_agents_terminal_log_comes_back_and_its_exit_settles_it(
    tmp_path: Path, cluster: Cluster
) -> None:
    project = _project(tmp_path, cluster)
    settings = project / ".legion" / "settings.toml"
    settings.write_text(
        settings.read_text()
        + '\n[agent]\ndefault = "exec"\ncommand = ["sh", "-c", "echo hello from {name}; exit 0"]\n'
    )
    async with hosted(project, default_kind=None) as sup:
        node = await spawn_one(sup, name="echo")
        assert handle_of(sup, node.id).placement is not None
        await until(lambda: sup.names.node(node.id).status is NodeStatus.SETTLED, 60.0, "settled")
        log = sup.run.dir / "terminal" / f"{node.id}.log"
        assert "hello from echo" in log.read_text()
        # Its row's activity: the line the node's terminal showed, as a local exec's.
        assert sup.model.nodes[node.id].terminal_line == "hello from echo"


QUICK_TEAM = [
    {"role": "worker", "name": "worker-0", "task": "Fix it.", "sim": {"quick": True}},
    {"role": "scout", "name": "scout-0", "task": "Look.", "sim": {"quick": True}},
]


async def test_a_team_runs_end_to_end_over_both_nodes_and_delivers_its_branch(
    tmp_path: Path, cluster: Cluster
) -> None:
    sandbox = tmp_path / ".legion" / "sandbox"
    project = _project(tmp_path, cluster)
    base = await create_sandbox_repo(sandbox, SANDBOX_FILES, "seed")
    async with hosted(project) as sup:
        sup.sandbox = sandbox
        lead = await spawn_one(
            sup, "centurion", name="lead", sim={"children": QUICK_TEAM},
            phases=DEFAULT_MACHINE.to_dict(),
        )  # fmt: skip
        # The lead's spawn, phases, waits and collects reach the host's socket from its
        # node (this machine): its pid is known there.
        await until(lambda: len(sup.model.children(lead.id)) == 2, 60.0, "the team")
        team = [lead.id, *sup.model.children(lead.id)]
        placed: dict[str, str] = {}

        def all_placed() -> bool:
            for node_id in team:
                handle = sup.roster.handle(node_id)
                if isinstance(handle, RayHandle) and handle.placement is not None:
                    placed[node_id] = handle.placement.node_id
            return len(placed) == len(team)

        await until(all_placed, 60.0, "the team placed")
        assert len(set(placed.values())) == 2
        await until(lambda: sup.names.node(lead.id).status is NodeStatus.SETTLED, 90.0, "settled")
        assert sup.names.node(lead.id).phase == "done"  # contract, verification, every phase
        await until(lambda: any(e.type is EventType.NODE_SETTLED
                                for e in sup.model.nodes[lead.id].events), 10.0, "its event")
        (event,) = [e for e in sup.model.nodes[lead.id].events if e.type is EventType.NODE_SETTLED]
        delivery = event.data["delivery"]
        assert delivery["commits"] >= 1
        assert _git(sandbox, "rev-parse", delivery["branch"]) == delivery["head_sha"]
        authors = set(_git(sandbox, "log", "--format=%an", f"{base}..{delivery['branch']}").split())
        assert authors == {"worker-0"}  # made on the worker's node, back in the sandbox


# Asks half a CPU and half the box: both agents fit only on the node that has the box,
# where SPREAD alone would put the second on the other node.
BOXED_CARD = (
    "---\nname: boxed\ndescription: Works by the box.\nkind: sim\nrole: worker\n"
    f"resources: {{num_cpus: 0.5, {BOX}: 0.5}}\n---\nWork by the box.\n"
)


async def test_a_cards_resources_are_what_its_actor_holds_on_the_node_that_has_them(
    tmp_path: Path, cluster: Cluster
) -> None:
    (box_node,) = [n["NodeID"] for n in ray.nodes() if n["Alive"] and BOX in n["Resources"]]
    # Both agents can only go to the box's node: the earlier tests' actors must have let go
    # of its CPUs first (a kill frees them when the worker exits), or each spawn would wait
    # out its start bound there.
    await until(lambda: ray.available_resources().get("CPU", 0.0)
                >= ray.cluster_resources().get("CPU", 0.0), 60.0,
                "the earlier tests' actors to free the cluster's CPUs")
    project = _project(tmp_path, cluster)  # the settings ask one CPU: the card's ask wins
    (project / ".legion" / "agents").mkdir(parents=True)
    (project / ".legion" / "agents" / "boxed.md").write_text(BOXED_CARD)
    async with hosted(project) as sup:
        nodes = [await spawn_one(sup, "boxed", name=f"box{n}", sim=dict(STUCK)) for n in range(2)]
        places = [handle_of(sup, n.id).placement for n in nodes]
        assert [p.node_id if p is not None else None for p in places] == [box_node] * 2
        assert [p.resources for p in places if p is not None] == [{"CPU": 0.5, BOX: 0.5}] * 2
        for node in nodes:
            await sup.stops.stop(ROOT_ID, node.name)


# Last: it adds a node to the shared cluster and kills it; what follows a node's death on
# a loaded machine (its actors' resources, the scheduler's view) is not the next test's.
async def test_a_lost_node_interrupts_its_agents_and_resume_finishes_them_on_another(
    tmp_path: Path, cluster: Cluster
) -> None:
    doomed = cluster.add_node(num_cpus=NODE_CPUS)
    cluster.wait_for_nodes()
    async with hosted(_project(tmp_path, cluster)) as sup:
        nodes = [await spawn_one(sup, name=f"w{i}", sim=dict(STUCK)) for i in range(3)]
        on_doomed = [n for n in nodes if handle_of(sup, n.id).placement.node_id == doomed.node_id]
        assert on_doomed, "spread over three nodes, one agent lands on the doomed one"
        others = [n for n in nodes if n not in on_doomed]
        for node in on_doomed:  # inside its endless bash call, its start mirrored
            await until(lambda n=node: sup.model.nodes[n.id].progress.entries > 1, 30.0,
                        f"{node.name}'s first entries")
        before = {n.id: (sup.run.sessions_dir / f"{n.id}.jsonl").read_bytes() for n in on_doomed}
        cluster.remove_node(doomed)
        for node in on_doomed:
            # The loss's last step is its note (after the retire's writes: ledger, model,
            # then the event): waiting on the status alone read the reason before its
            # event had landed, under load (`make soak`).
            await until(lambda n=node: "r resumes it" in (sup.model.nodes[n.id].note or ""),
                        30.0, f"{node.name} retired, and said so")
            assert sup.names.node(node.id).status is NodeStatus.RETIRED
            view = sup.model.nodes[node.id]
            assert view.interrupted  # interrupted, not failed
            assert sup.record.retired_reason(node.id) == NODE_LOST_REASON
            assert "r resumes it" in (view.note or "")
        assert all(sup.names.node(n.id).status is NodeStatus.RUNNING for n in others)
        for node in on_doomed:
            await sup.control.resume(ROOT_ID, node.name)
            handle = handle_of(sup, node.id)
            assert handle.placement is not None and handle.placement.node_id != doomed.node_id
        for node in on_doomed:
            await until(lambda n=node: sup.names.node(n.id).status is NodeStatus.SETTLED, 60.0,
                        f"{node.name} settled after its resume")
            mirror = (sup.run.sessions_dir / f"{node.id}.jsonl").read_bytes()
            assert mirror.startswith(before[node.id]) and len(mirror) > len(before[node.id])
            remote = handle_of(sup, node.id).placement
            assert remote is not None and sha(remote.session_file) == sha(
                sup.run.sessions_dir / f"{node.id}.jsonl")
