"""Shared helpers for the supervisor and CLI tests: a real Supervisor in a tmp project."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from legion_tui.model import EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import Budgets, ChildRequest

FAST = 200.0  # sim time scale: a worker's whole run takes well under a second
# A worker stuck in one bash call for the whole test (the sim divides by the speed).
STUCK = {"stall_seconds": 10_000_000.0}
LEGION = str(Path(sys.executable).with_name("legion"))
# How a hint names legion, runnable as printed: `legion` where that is the one on PATH,
# else the path of the script that printed it (the test venv's, not on PATH under make).
_ON_PATH = shutil.which("legion")
AS_PRINTED = "legion" if _ON_PATH and os.path.samefile(_ON_PATH, LEGION) else LEGION
# A git identity through the environment, never the user's global config.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Legion Test",
    "GIT_AUTHOR_EMAIL": "legion@example.invalid",
    "GIT_COMMITTER_NAME": "Legion Test",
    "GIT_COMMITTER_EMAIL": "legion@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


@asynccontextmanager
async def hosted(
    project: Path,
    session: str = "main",
    *,
    speed: float = FAST,
    budgets: Budgets | None = None,
    stop_grace: float = 1.0,
    default_kind: str | None = "sim",
) -> AsyncIterator[Supervisor]:
    """A started Supervisor on `project`. The bundled cards say `kind: auto`; these tests
    ask for the simulated agent explicitly (`default_kind`), never for whatever agent the
    machine has installed. Pass None to resolve as a user's host does."""
    sup = Supervisor(
        project,
        session=session,
        speed=speed,
        budgets=budgets,
        stop_grace=stop_grace,
        default_kind=default_kind,
    )
    await sup.start()
    try:
        yield sup
    finally:
        await sup.close()


async def until(predicate: Callable[[], bool], limit: float = 15.0, what: str = "") -> None:
    """Poll a condition with a deadline (never a blind sleep)."""
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await asyncio.sleep(0.01)


async def spawn_one(sup: Supervisor, role: str = "worker", **kw: Any) -> Node:
    caller = kw.pop("caller", ROOT_ID)
    (node,) = await sup.launcher.spawn(caller, [ChildRequest(role, kw.pop("task", "do it"), **kw)])
    return node


async def stuck_worker(sup: Supervisor, name: str = "stuck", caller: str = ROOT_ID) -> Node:
    """A live worker inside one endless bash call (its in-flight tool is visible).

    The endless call is the run's second step: the first (a read and a grep) is in flight
    too, and a steer queued then is taken at its end — a soak run's abort found the queue
    empty. So the wait is for the bash call itself."""
    node = await spawn_one(sup, name=name, sim=dict(STUCK), caller=caller)

    def in_the_endless_call() -> bool:
        return any(t.name == "bash" for t in sup.model.nodes[node.id].progress.in_flight)

    await until(in_the_endless_call, what=f"{name} in its endless bash call")
    return sup.names.node(node.id)


_STARTS_AND_ENDS = (
    EventType.NODE_LAUNCHED,
    EventType.NODE_SETTLED,
    EventType.NODE_FAILED,
    EventType.NODE_RETIRED,
)


async def settled(sup: Supervisor, node_id: str, limit: float = 20.0) -> Node:
    """The node ended, and its ending's event is in the model: the model shows an
    ending's status a step before its event (the event is written second), and a test
    that reads the events next must not catch that step (a soak run under load did)."""

    def ended() -> bool:
        if sup.names.node(node_id).live:
            return False
        marks = [e.type for e in sup.model.nodes[node_id].events if e.type in _STARTS_AND_ENDS]
        return bool(marks) and marks[-1] is not EventType.NODE_LAUNCHED

    await until(ended, limit, f"{node_id} to settle")
    return sup.names.node(node_id)


SIM_SETTINGS = '[agent]\ndefault = "sim"\n'


def ask_for_sim(project: Path) -> Path:
    """`[agent] default = "sim"` in the project's settings: a `legion run` / `legion tui`
    the test starts as a subprocess runs the bundled (`kind: auto`) cards simulated."""
    settings = project / ".legion" / "settings.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(SIM_SETTINGS, encoding="utf-8")
    return project


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def status_of(sup: Supervisor, node_id: str) -> NodeStatus:
    return sup.names.node(node_id).status


def event_types(sup: Supervisor, node_id: str) -> list[EventType]:
    return [e.type for e in sup.model.nodes[node_id].events]


def cli_env() -> dict[str, str]:
    """The env of a user's own shell: no legion identity inherited from anywhere."""
    env = dict(os.environ)
    for key in ("LEGION_SOCKET", "LEGION_NODE_ID", "LEGION_RUN_DIR", "LEGION_RUN_ID"):
        env.pop(key, None)
    return env


async def run_cli(*args: str, cwd: Path, limit: float = 60.0) -> tuple[int, str, str]:
    """`legion ARGS` as a real subprocess, while this loop keeps serving the socket."""
    proc = await asyncio.create_subprocess_exec(
        LEGION,
        *args,
        cwd=cwd,
        env=cli_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), limit)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def git(cwd: Path, *args: str) -> str:
    """`git ARGS` in `cwd` as the test identity; its stdout, stripped."""
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def use_git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test identity for every git the test starts indirectly too (the code under
    test, the agents it launches), which inherit the environment."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
