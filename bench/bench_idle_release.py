"""Memory held by settled agents, before and after their idle release (issue 31 item 4).

Ten real `pi --mode rpc` agents (the project-local pi 1.6) are spawned by a real
`Supervisor` in this process against the tests' scripted model server; each answers one
short turn and settles. Their processes' resident memory (every process carrying the
node's marker: pi and whatever it started) is summed once all ten have settled, and again
once the host has released them (`[agent] idle_release_seconds`, set to RELEASE_S here);
the host's own RSS is printed beside both. The alternative a user would otherwise have is
the first figure: before idle release, a settled agent kept its process for the run.

    .venv/bin/python bench/bench_idle_release.py [--agents 10] [--release 15]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import psutil
import pytest  # its MonkeyPatch sets the env pi's children inherit, and undoes it
from model_server import ModelServer, Text
from pi_env import pi_env
from process_helpers import by_env
from real_pi_helpers import START_LIMIT, agent_host, use_env, verdict_line, write_card
from supervisor_helpers import GIT_ENV, until

from legion_tui.model import NodeStatus
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

PI_LINE = "1.6"


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


async def measure(project: Path, agents: int, release: float) -> None:
    async with agent_host(project) as sup:
        sup.ctx.options.idle_release = release
        sup.ctx.options.budgets = dataclasses.replace(
            sup.ctx.options.budgets, max_children=agents, max_active=agents + 1
        )
        requests = [ChildRequest("worker", "Say done.", name=f"w{i}") for i in range(agents)]
        nodes = await sup.launcher.spawn(ROOT_ID, requests)
        ids = [n.id for n in nodes]

        def all_settled() -> bool:
            return all(sup.names.node(i).status is NodeStatus.SETTLED for i in ids)

        await until(all_settled, START_LIMIT * 2, "every agent settled")
        pids = [p for i in ids for p in by_env("LEGION_NODE_ID", i)]
        host = psutil.Process().memory_info().rss / 2**20
        before = rss_mb(pids)
        print(f"idle release: {agents} settled pi {PI_LINE} agents hold {before:.0f} MB "
              f"in {len(pids)} processes ({before / agents:.0f} MB each); host {host:.0f} MB")
        await until(lambda: all(sup.model.nodes[i].released for i in ids), release + 30,
                    "every agent released")  # fmt: skip
        left = [p for i in ids for p in by_env("LEGION_NODE_ID", i)]
        host = psutil.Process().memory_info().rss / 2**20
        after = rss_mb(left)
        print(f"idle release: after release {after:.0f} MB in {len(left)} processes; "
              f"host {host:.0f} MB")
        print(f"idle release: freed {before - after:.0f} MB "
              f"({(before - after) / max(before, 1) * 100:.0f} %)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--release", type=float, default=15.0, help="idle seconds")
    args = parser.parse_args()
    patch = pytest.MonkeyPatch()
    answer = Text(f"Done.\n{verdict_line('done')}", tokens=4)
    with ModelServer(when_empty=answer) as server, tempfile.TemporaryDirectory(
        prefix="lt-bench-release-"
    ) as tmp:
        try:
            pi = pi_env(PI_LINE, server.base_url, Path(tmp) / "pi")
            use_env(pi.env, patch)
            project = Path(tmp) / "project"
            project.mkdir()
            subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True,
                           env={**os.environ, **GIT_ENV})  # fmt: skip
            write_card(project)
            asyncio.run(measure(project, args.agents, args.release))
        finally:
            patch.undo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
