"""The tree back after a crash, per real agent (issue 31 item 7): a host with a real
agent in the middle of a turn is killed with SIGKILL; reopened, the node is
`interrupted` with its own session (pi's file, Claude's session id, Codex's thread id,
all behind the node's session link), and `resume --all` starts the agent again on that
session: the model is asked again with the first turn's history, and the node settles.

The host runs in a child process (a SIGKILL must not take the test with it); the model
server, the project and the reopening host are the test's.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_bins import PI_LINES
from claude_env import MODEL as CLAUDE_MODEL
from claude_env import claude_env, claude_world, drop_claude_settings
from codex_env import MODEL as CODEX_MODEL
from codex_env import codex_env
from model_server import Hang, ModelServer, Text
from real_pi_helpers import (
    TURN_LIMIT,
    agent_host,
    make_world,
    settle,
    use_env,
    verdict_line,
    write_card,
)
from supervisor_helpers import GIT_ENV, until

from legion_tui.model import NodeStatus
from legion_tui.supervisor.backends.common import RESUME_PROMPT
from legion_tui.supervisor.state.progress_watch import has_file
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.real

KINDS = (*(f"pi-{line}" for line in PI_LINES), "claude", "codex")

# The doomed host: one worker answers its task and settles; a steer starts a second
# turn, which the server holds open; then it says `ready` and waits to be killed.
_HOST = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from legion_tui.model import NodeStatus
    from legion_tui.supervisor.core import Supervisor
    from legion_tui.wire.names import ROOT_ID
    from legion_tui.wire.spawn_request import ChildRequest

    async def main(project):
        sup = Supervisor(project, default_kind=None)
        await sup.start()
        (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", "Say FIRST-31c.",
                                                                  name="w")])
        while sup.names.node(node.id).status is not NodeStatus.SETTLED:
            await asyncio.sleep(0.05)
        await sup.control.steer(ROOT_ID, "w", "SECOND-31c: go on.")
        while sup.names.node(node.id).status is not NodeStatus.RUNNING:
            await asyncio.sleep(0.05)
        print("ready", node.id, flush=True)
        await asyncio.Event().wait()

    asyncio.run(main(Path(sys.argv[1])))
    """
)


def _project(kind: str, server: ModelServer, tmp_path: Path, mp: pytest.MonkeyPatch) -> Path:
    """The kind's environment applied to this process (the host child inherits it) and a
    git project whose worker card runs that kind."""
    if kind.startswith("pi-"):
        return make_world(kind.removeprefix("pi-"), server, tmp_path, mp).project
    if kind == "claude":
        world = claude_world(tmp_path)
        drop_claude_settings(mp)
        env = claude_env(world, server.origin)
        command: tuple[str, ...] | None = ("claude", "--model", CLAUDE_MODEL)
        tools: tuple[str, ...] = ("bash",)
    else:
        env = codex_env(server.base_url, tmp_path / "codex").env
        command, tools = None, ("read", "bash", "edit", "write")
    use_env(env, mp)
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True,
                   env={**env, **GIT_ENV})  # fmt: skip
    write_card(project, kind=kind, command=command, tools=tools)  # (pi's: make_world's)
    return project


async def _killed_host(project: Path, server: ModelServer) -> str:
    """Run the doomed host until its second turn is at the server; SIGKILL it. The node
    id."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOST, str(project), stdout=asyncio.subprocess.PIPE, env=env
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 2 * TURN_LIMIT)
        assert line.startswith(b"ready "), line
        await asyncio.to_thread(server.wait_for_requests, 2, TURN_LIMIT)
    finally:
        proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 10)
    return line.split()[1].decode()


def _real(link: str | None) -> Path:
    return Path(os.path.realpath(link or ""))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_killed_host_reopens_interrupted_and_resume_all_goes_on_the_same_session(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ModelServer(model_ids=(CODEX_MODEL,)) as server:
        server.script(
            Text(f"FIRST-31c here.\n{verdict_line('first')}", tokens=4),
            Hang(),  # the second turn: held open until the host is killed
            Text(f"Went on.\n{verdict_line('resumed')}", tokens=4),
        )
        project = _project(kind, server, tmp_path, monkeypatch)
        node_id = await _killed_host(project, server)
        async with agent_host(project) as sup:
            view = sup.model.nodes[node_id]
            assert view.interrupted and view.node.status is NodeStatus.RETIRED, view.node
            link = view.node.session_file
            assert has_file(link), link  # its own session, behind the node's link
            session = _real(link)
            said = await sup.control.resume_all(ROOT_ID, parallel=2)
            assert said.startswith("Resumed w"), said
            await until(lambda: len(server.requests()) >= 3, TURN_LIMIT, "the resumed turn")
            done = await settle(sup, node_id)
            assert done.status is NodeStatus.SETTLED, (done.status, done.error)
            assert done.verdict is not None and "resumed" in done.verdict, done.verdict
            history = json.dumps(server.requests()[-1].body)
            assert "FIRST-31c" in history and RESUME_PROMPT[:40] in history
            assert _real(sup.names.node(node_id).session_file) == session
