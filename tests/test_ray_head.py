"""Issue 35 item 4, exactly as a new user tried it: `ray start --head --num-cpus=2` (one
node, two CPUs), then `legion run centurion --cluster ADDRESS`, whose lead dispatches two
members. With a whole CPU asked per agent, the lead and one member took the two CPUs and
the second member waited, then failed, and the team with it.

The cluster is a real `ray start` subprocess, not `ray.cluster_utils.Cluster`: the same
processes, but started the way the user starts them — detached from every legion
process, its workers inheriting the shell's environment, joined by a `legion run` that
only knows its address. This test process never connects to it. Its files live in a
private temp dir, and every port Ray would otherwise take at a fixed default (the client
server's 10001, the dashboard's 8265, the agent's 52365, …) is a free one, so another
cluster on this machine is never touched; it is stopped by killing its own session's
processes (`ray stop` would stop every Ray process on the machine).

The team is what a user could write: role cards in `.legion/agents/` naming exec
commands committed in the repository. The lead dispatches two members with `legion
spawn` and waits for them with `legion wait`; each member commits a file of its own and
then waits (bounded) until the lead and both members are running at the same moment —
so the team settles only if all three held a place on the cluster at once, none queued
behind another (with a whole CPU each, the second member cannot start while the first
waits for it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from process_helpers import marked
from supervisor_helpers import LEGION, cli_env, git, run_cli, until

from legion_tui.timeouts import within

pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]

RAY = str(Path(sys.executable).with_name("ray"))
START_S = 120.0  # `ray start` returns once its daemons are up (~4 s here, idle)
RUN_S = 180.0  # the team's run (~3 s here, idle)
# The cluster's processes, after SIGTERM: the raylet takes ~12 s to go here and the GCS
# and the autoscaler's monitor do not go at all (`ray stop` SIGKILLs after its grace
# period too); whatever is left then is SIGKILLed and waited for, at most STOP_S.
TERM_GRACE_S = 5.0
STOP_S = 30.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
        return port


def _env() -> dict[str, str]:
    """A user's shell with the venv active (`legion` and `ray` on PATH) and a git of
    its own (no global or system config: the repository's says who commits)."""
    env = cli_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', os.defpath)}"
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env


def _session_of(leader: int, private: str) -> list[psutil.Process]:
    """The cluster's processes: in the session `ray start` began, or naming its dir."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if os.getsid(proc.pid) == leader or any(private in a for a in proc.cmdline()):
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def _stop_cluster(leader: int, private: str) -> None:
    """SIGTERM to each of the cluster's processes, by pid; SIGKILL to any still there
    after TERM_GRACE_S; waited for, bounded."""
    alive = _session_of(leader, private)
    for end, bound in ((psutil.Process.terminate, TERM_GRACE_S), (psutil.Process.kill, STOP_S)):
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                end(proc)
        _, alive = psutil.wait_procs(alive, timeout=bound)
    assert alive == [], f"the cluster's processes outlived SIGKILL: {alive}"


@pytest.fixture(scope="module")
def head() -> Iterator[str]:
    """`ray start --head --num-cpus=2`: its address, as `ray start` printed it."""
    # Short, under /tmp: Ray's Unix sockets live below it (a path holds at most 107 bytes).
    private = tempfile.mkdtemp(prefix="legion-head-", dir="/tmp")
    argv = [
        RAY, "start", "--head", "--num-cpus=2", "--include-dashboard=false",
        f"--temp-dir={private}", "--disable-usage-stats",
        f"--port={_free_port()}",
        f"--ray-client-server-port={_free_port()}",
        f"--dashboard-port={_free_port()}",
        f"--dashboard-agent-listen-port={_free_port()}",
        f"--dashboard-agent-grpc-port={_free_port()}",
        f"--runtime-env-agent-port={_free_port()}",
        f"--metrics-export-port={_free_port()}",
    ]  # fmt: skip
    # Its own session: every daemon it leaves behind is in it, and only those are.
    starter = subprocess.Popen(argv, env=_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)  # fmt: skip
    try:
        out, _ = starter.communicate(timeout=START_S)
        assert starter.returncode == 0, out
        said = re.search(r"ray start --address='([^']+)'", out)
        assert said is not None, out
        yield said.group(1)
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait(timeout=STOP_S)
        _stop_cluster(starter.pid, private)
        shutil.rmtree(private, ignore_errors=True)


LEAD = """#!/bin/sh
# The lead: two members, then wait for both (legion and its socket come with the agent).
set -e
touch "{meet}/lead"
legion spawn worker --name worker-a --task "Write your file."
legion spawn worker --name worker-b --task "Write your file."
legion wait
echo '{{"ok": true, "reason": "both members settled"}}'
"""

MEMBER = """#!/bin/sh
# A member: its own file, committed; then (at most 60 s) until the lead and both members
# are running at once.
set -e
echo "$LEGION_TASK" > "$1.txt"
git add "$1.txt"
git commit -q -m "$1: its file"
touch "{meet}/$1"
timeout 60 sh -c 'until [ "$(ls "$0" | wc -l)" -ge 3 ]; do sleep 0.05; done' "{meet}"
echo '{{"ok": true, "reason": "committed, and met the team"}}'
"""

CARDS = {
    "centurion": (
        "---\nname: centurion\ndescription: Dispatches two members and waits for them.\n"
        "kind: exec\nrole: centurion\nworktree: true\nmaxSubagentDepth: 1\n"
        'command: ["sh", "bin/lead.sh"]\n---\nLead the team.\n'
    ),
    "worker": (
        "---\nname: worker\ndescription: Commits one file.\nkind: exec\nrole: worker\n"
        'command: ["sh", "bin/member.sh", "{name}"]\n---\nWork.\n'
    ),
}


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A git repository with the team's scripts committed and its cards; and the folder
    where the team meets."""
    project, meet = tmp_path / "project", tmp_path / "meet"
    (project / "bin").mkdir(parents=True)
    meet.mkdir()
    (project / "bin" / "lead.sh").write_text(LEAD.format(meet=meet))
    (project / "bin" / "member.sh").write_text(MEMBER.format(meet=meet))
    git(project, "init", "--quiet", "--initial-branch", "main")
    git(project, "config", "user.name", "A User")
    git(project, "config", "user.email", "user@example.invalid")
    git(project, "add", ".")
    git(project, "commit", "--quiet", "-m", "the team's scripts")
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True)
    for name, card in CARDS.items():
        (agents / f"{name}.md").write_text(card)
    return project, meet


def test_a_lead_and_two_members_settle_on_a_two_cpu_head(tmp_path: Path, head: str) -> None:
    project, meet = _project(tmp_path)
    run = subprocess.Popen(
        [LEGION, "run", "centurion", "--task", "Have two members each commit a file.",
         "--cluster", head, "--session", "team", "--json"],
        cwd=project, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, err = run.communicate(timeout=RUN_S)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGTERM)  # the host pauses its agents and ends
        out, err = run.communicate(timeout=STOP_S)
        raise AssertionError(f"the team did not settle within {RUN_S:g} s:\n{out}\n{err}") from None
    assert run.returncode == 0, f"{out}\n{err}"
    doc = json.loads(out)
    assert [(n["path"], n["kind"], n["status"], (n["verdict"] or {}).get("ok"))
            for n in doc["nodes"][1:]] == [  # after root
        ("root/centurion-0", "exec", "settled", True),
        ("root/centurion-0/worker-a", "exec", "settled", True),
        ("root/centurion-0/worker-b", "exec", "settled", True),
    ]  # fmt: skip
    # All three were there at once: each member saw the other two.
    assert sorted(p.name for p in meet.iterdir()) == ["lead", "worker-a", "worker-b"]
    # Both members' commits, made in their own clones on the node, are on the team's branch.
    (branch,) = git(project, "branch", "--list", "legion/*", "--format=%(refname:short)").split()
    assert sorted(git(project, "log", "--format=%s", f"main..{branch}").splitlines()) == [
        "worker-a: its file", "worker-b: its file"
    ]
    # Nothing of the run is left on the node (the actors end with the run's driver).
    _, left = psutil.wait_procs([psutil.Process(p) for p in marked(doc["run_id"])],
                                timeout=STOP_S)  # fmt: skip
    assert left == []


BLOCKER = (
    "---\nname: blocker\ndescription: Says it is up, then blocks.\nkind: exec\nrole: worker\n"
    'command: ["sh", "-c", "touch \\"$0\\"; exec tail -f /dev/null", "{up}"]\n---\nBlock.\n'
)


async def test_sigterm_to_a_run_on_the_cluster_pauses_its_agents(
    tmp_path: Path, head: str
) -> None:
    """SIGTERM to `legion run` pauses its agents and says so, as on this machine alone.
    ray.init had taken SIGTERM for itself: the run died with Ray's stack trace on stderr
    and "the retirements could not be recorded", its agent left orphaned in the ledger
    (found stopping a run tried by hand on a 2-CPU head)."""
    project, meet = _project(tmp_path)
    up = meet / "up"
    (project / ".legion" / "agents" / "blocker.md").write_text(BLOCKER.format(up=up))
    run = await asyncio.create_subprocess_exec(
        LEGION, "run", "blocker", "--task", "Block.", "--cluster", head, "--session", "sig",
        cwd=project, env=_env(), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        await until(lambda: up.exists() or run.returncode is not None, RUN_S, "the agent up")
        assert run.returncode is None, "legion run ended before its agent was up"
        run.send_signal(signal.SIGTERM)
        out, err = (b.decode() for b in await within(run.communicate(), STOP_S))
    finally:
        if run.returncode is None:
            os.killpg(run.pid, signal.SIGKILL)
            await within(run.wait(), STOP_S)
    assert run.returncode == 1, f"{out}\n{err}"
    assert "legion run: interrupted — live agents paused" in err
    assert "SIGTERM received" not in err and "could not be recorded" not in err, err
    code, status, _ = await run_cli("status", "--session", "sig", "--json", cwd=project)
    assert code == 0, status
    (agent,) = [n for n in json.loads(status)["nodes"] if n["name"] == "blocker-0"]
    assert (agent["status"], agent["interrupted"]) == ("retired", True)
