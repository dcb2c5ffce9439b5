"""The real pi (both pinned lines) on a real local Ray cluster (issue 15): a pi worker
lands on a cluster node, works in its clone of the team's branch there against the
scripted model server, its session file comes back to the host's run folder as a local
pi's (pi's own file in `sessions/<id>/`, the run's `<id>.jsonl` a link to it), abort and
stop go through the actor, and a resume on the other node continues the mirrored session
— the same file, the task once, pi's resume prompt after it.

The node's pi is what that node's own shell would start: the cards name a launcher that
sets pi's environment (its bin dir on PATH, HOME, the `scripted` provider's agent dir)
and execs the installed pi — the Ray workers' environment is the cluster's, started
before the test's pi world existed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import psutil
import pytest
import ray
from model_server import Hang, Text, ToolCall
from pi_env import MODEL, PROVIDER
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from ray_helpers import NODE_CPUS, handle_of, project_on, sha
from ray_helpers import cluster as cluster  # the module's fixture
from real_pi_helpers import (
    START_LIMIT,
    TURN_LIMIT,
    PiWorld,
    by_env,
    entries,
    pi_host,
    settle,
    spawn_pi,
    until,
    verdict_line,
    write_card,
)
from real_pi_helpers import server as server  # the scripted model server fixture
from real_pi_helpers import world as world  # one per pi line
from supervisor_helpers import GIT_ENV

from legion_tui import receipts
from legion_tui.git.worktree import create_sandbox_repo
from legion_tui.model import NodeStatus
from legion_tui.sim.script import SANDBOX_FILES
from legion_tui.supervisor.backends.common import RESUME_PROMPT
from legion_tui.wire.names import ROOT_ID

pytestmark = [pytest.mark.ray, pytest.mark.timeout(180)]

_LAUNCHER = """#!{python}
# The node's pi as its own shell would start it: pi's environment, legion's markers kept.
import os, sys
env = {{k: v for k, v in os.environ.items() if k.startswith("LEGION_")}}
env.update({env!r})
os.execve({pi!r}, [{pi!r}, *sys.argv[1:]], env)
"""


def _launcher(world: PiWorld) -> Path:
    path = world.project.parent / "node-pi"
    env = {**world.pi.env, **GIT_ENV}
    path.write_text(_LAUNCHER.format(python=sys.executable, env=env, pi=str(world.pi.pi)))
    path.chmod(0o755)
    return path


@ray.remote(num_cpus=NODE_CPUS)
class _Hog:
    """Every CPU of one node: the next agent has to land on another."""

    def ready(self) -> bool:
        return True


async def _fill(node_id: str) -> object:
    hog = _Hog.options(  # type: ignore[attr-defined]
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
    ).remote()
    assert await asyncio.wait_for(hog.ready.remote(), 30.0)
    return hog


def _node_processes(node_id: str) -> list[int]:
    return by_env("LEGION_NODE_ID", node_id)


async def test_a_pi_on_a_cluster_node_mirrors_its_session_and_resumes_it_on_the_other(
    world: PiWorld, cluster: Cluster
) -> None:
    project_on(world.project, cluster)
    write_card(world.project, command=(str(_launcher(world)), "--provider", PROVIDER,
                                       "--model", MODEL))  # fmt: skip
    sandbox = world.project / ".legion" / "sandbox"
    await create_sandbox_repo(sandbox, SANDBOX_FILES, "seed")
    task = "TASK-8c2e: write one.txt, then wait for more."
    world.server.script(
        ToolCall("bash", {"command": "printf one > one.txt && pwd"}),
        Hang(before=Text("Waiting", tokens=2)),
        Text(f"Done.\n{verdict_line('resumed on the other node')}", tokens=9),
    )
    async with pi_host(world) as sup:
        sup.sandbox = sandbox  # a worktree per worker: its branch goes out as a bundle
        node = await spawn_pi(sup, "remote", task)
        first = handle_of(sup, node.id).placement
        assert first is not None and first.backend == "pi-rpc"
        assert first.node_id in {n.node_id for n in cluster.worker_nodes}
        await asyncio.to_thread(world.server.wait_for_hang, timeout=START_LIMIT)
        # The message pi is streaming (its file says nothing of it until it ends): its
        # live tok/s reaches the tree from the node as a local pi's does.
        view = sup.model.nodes[node.id]
        await until(lambda: view.streaming is not None, 10.0,
                    "the open message's segment from the node")

        # pi's own file, mirrored as a local pi's: sessions/<id>/<pi's name>, linked.
        link = sup.run.sessions_dir / f"{node.id}.jsonl"
        mirror = sup.run.sessions_dir / node.id / Path(first.session_file).name
        assert link.readlink() == mirror
        remote = Path(first.session_file)  # the node's own, outside the host's run folder
        assert not remote.is_relative_to(sup.run.dir) and remote.name == mirror.name
        await until(lambda: mirror.is_file() and mirror.stat().st_size == remote.stat().st_size,
                    10.0, "the mirror to catch up")  # fmt: skip
        assert sha(remote) == sha(mirror)  # every byte, in order
        # The bash tool ran in the node's clone, not in the host's worktree.
        (call,) = [e for e in entries(mirror) if e.get("message", {}).get("role") == "toolResult"]
        ran_in = json.dumps(call["message"]["content"])
        tree = sup.teams.worktree_of(node.id)
        assert tree is not None and str(tree.path) not in ran_in
        assert not (tree.path / "one.txt").exists()

        # abort and stop through the actor; no process is left on the node.
        outcome, receipt = await sup.control.abort(ROOT_ID, "remote")
        assert outcome == "interrupted", receipt
        assert first.pid in _node_processes(node.id)
        assert await sup.stops.stop(ROOT_ID, "remote") == "Stopped remote."
        assert _node_processes(node.id) == []
        assert not psutil.pid_exists(first.pid) or psutil.Process(first.pid).status() == "zombie"
        before = mirror.read_bytes()
        assert before.count(b"TASK-8c2e") == 1

        # The resume cannot land where it ran: that node is full.
        hog = await _fill(first.node_id)
        try:
            receipt = await sup.control.resume(ROOT_ID, "remote")
            assert receipt.startswith("Resumed remote on its session file"), receipt
            second = handle_of(sup, node.id).placement
            assert second is not None and second.node_id != first.node_id
            assert Path(second.session_file).name == mirror.name  # pi reopened the shipped file
            requests = await asyncio.to_thread(world.server.wait_for_requests, 3,
                                               timeout=START_LIMIT)  # fmt: skip
            assert requests[2].last_user_text() == RESUME_PROMPT
            assert json.dumps(requests[2].messages).count("TASK-8c2e") == 1  # its history
            done = await settle(sup, node.id, TURN_LIMIT)
            assert done.status is NodeStatus.SETTLED, (done.status, done.error)
            assert done.verdict is not None and "resumed on the other node" in done.verdict
            assert sup.model.nodes[node.id].progress.turns >= 2  # its reply, in the model
            after = mirror.read_bytes()
            assert after.startswith(before) and len(after) > len(before)
            assert sum(1 for e in entries(mirror) if e.get("type") == "session") == 1
            assert sorted(p.name for p in (sup.run.sessions_dir / node.id).iterdir()) == [
                mirror.name]  # fmt: skip
            assert sha(second.session_file) == sha(mirror)
        finally:
            ray.kill(hog)
        assert link.readlink() == mirror  # the run's file: still pi's one file


async def test_an_idle_pi_on_a_cluster_lets_its_slot_go_and_a_follow_up_starts_it_again(
    world: PiWorld, cluster: Cluster
) -> None:
    """Issue 35 item 4: a settled pi kept its actor, and with it its slot, until it was
    stopped — a lead whose members settle one after another could fill a small cluster
    with idle members and queue the next for ever. Released as a local one is (after
    `idle_release` without a turn), its slot goes back; a follow-up places it on the
    cluster again, and it answers on its own session."""
    project_on(world.project, cluster)
    write_card(world.project, command=(str(_launcher(world)), "--provider", PROVIDER,
                                       "--model", MODEL))  # fmt: skip
    world.server.script(
        Text(f"First.\n{verdict_line('first')}", tokens=4),
        Text(f"Again.\n{verdict_line('followed up')}", tokens=4),
    )
    async with pi_host(world) as sup:
        sup.ctx.options.idle_release = 0.5
        node = await spawn_pi(sup, "idler", "Say first.")
        assert handle_of(sup, node.id).placement is not None  # on a cluster node
        await settle(sup, node.id)
        view = sup.model.nodes[node.id]
        await until(lambda: view.released, 30, "its release")
        assert view.node.status is NodeStatus.SETTLED and by_env("LEGION_NODE_ID", node.id) == []
        # Its actor is gone: the whole of both nodes' CPUs is free again.
        await until(lambda: ray.available_resources().get("CPU", 0.0) >= 2 * NODE_CPUS, 30,
                    "its slot back")  # fmt: skip
        sup.ctx.options.idle_release = 0.0  # woken, it stays: where it runs is looked at
        link = view.node.session_file
        asked = len(world.server.requests())
        _outcome, receipt = await sup.control.steer(ROOT_ID, "idler", "FOLLOW-UP-35: and now?")
        assert receipt.startswith(receipts.woken("idler")), receipt
        await until(lambda: len(world.server.requests()) > asked, TURN_LIMIT, "its request")
        done = await settle(sup, node.id)
        assert done.verdict is not None and "followed up" in done.verdict, done.verdict
        assert "FOLLOW-UP-35" in json.dumps(world.server.requests()[-1].body)
        assert handle_of(sup, node.id).placement is not None  # on a cluster node again
        assert sup.names.node(node.id).session_file == link  # its own session, grown
