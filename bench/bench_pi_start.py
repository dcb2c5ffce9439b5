"""The real pi under legion (issue 9): how long until its first answer, and what the host
pays per streaming pi node.

Run: .venv/bin/python bench/bench_pi_start.py   (needs `make agents`: pi 0.73.1 and 1.6.0)

Both pinned pi lines, against the scripted model server (tests/model_server.py) run in a
child process, so that the host's CPU time is the supervisor's alone:

- start → first answer: from `Supervisor.spawn` to the node's first assistant message
  reaching legion (pi's `message_start` over RPC) and to the node settling on a one-line
  answer — 1 node, and 6 spawned in one batch. Side by side: the same pi started bare
  (`pi --mode rpc`, prompt written at once, first `message_start` / `agent_end` read
  from its stdout), i.e. what legion adds. Medians of ROUNDS.
- host CPU per streaming pi node: the host process's CPU time while pi streams
  STREAM_TOKENS tokens at STREAM_RATE tok/s (the server marks the window), with the
  live-rate path on (`make_handle(spec, on_stream=…)`: every message_update is counted
  and published) against the same host ignoring the deltas (`make_handle(spec)`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calibration import calibrated

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from agent_bins import PI_LINES  # noqa: E402
from pi_env import PiEnv, pi_env  # noqa: E402
from real_pi_helpers import PI_TOOLS, write_card  # noqa: E402

from legion_tui.supervisor import backend  # noqa: E402
from legion_tui.supervisor.backends import registry  # noqa: E402
from legion_tui.supervisor.core import Supervisor  # noqa: E402
from legion_tui.supervisor.life import launching  # noqa: E402
from legion_tui.wire.names import ROOT_ID  # noqa: E402
from legion_tui.wire.spawn_request import ChildRequest  # noqa: E402

ROUNDS_ONE = 5
ROUNDS_SIX = 3
SIX = 6
STREAM_TOKENS = 2000
STREAM_RATE = 200.0
LIMIT = 120.0
ANSWER = 'Done.\n{"ok": true, "reason": "bench"}'

# The scripted server in its own process: `tiny K` scripts K short answers, `stream K`
# K long paced ones; it prints its base URL, then `REQ i` / `END i` as requests arrive
# and finish, and exits when its stdin closes.
SERVER = r"""
import json, sys, threading, time
sys.path.insert(0, sys.argv[1])
from model_server import ModelServer, Text
mode, count = sys.argv[2], int(sys.argv[3])
tokens, rate = int(sys.argv[4]), float(sys.argv[5])
answer = json.loads(sys.argv[6])
if mode == "tiny":
    items = [Text(answer)] * count
else:
    body = "".join(f"w{i} " for i in range(tokens))
    items = [Text(body + "\n" + answer, tokens=tokens, tokens_per_second=rate)] * count
with ModelServer() as s:
    s.script(*items)
    print(s.base_url, flush=True)
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    said = set()
    while not done.wait(0.005):
        for r in s.requests():
            if ("REQ", r.index) not in said:
                said.add(("REQ", r.index)); print(f"REQ {r.index}", flush=True)
            if r.state != "open" and ("END", r.index) not in said:
                said.add(("END", r.index)); print(f"END {r.index}", flush=True)
"""


class Server:
    """The model server child: its URL and the REQ/END marks it prints."""

    def __init__(self, mode: str, count: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(TESTS), mode, str(count), str(STREAM_TOKENS),
             repr(STREAM_RATE), json.dumps(ANSWER)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        assert self.base_url.startswith("http://"), self.base_url

    async def mark(self, word: str) -> float:
        """Wait for the next `REQ` / `END` line; its arrival time (monotonic)."""
        assert self.proc.stdout is not None
        while True:
            line = await asyncio.to_thread(self.proc.stdout.readline)
            if not line:
                raise RuntimeError("the model server exited")
            if line.startswith(word):
                return time.monotonic()

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


def apply_env(pi: PiEnv) -> None:
    """The pi env for this process: the supervisor's children inherit os.environ."""
    for key in [k for k in os.environ if k.startswith(("LEGION_", "PI_")) or "PROXY" in k.upper()]:
        del os.environ[key]
    os.environ.update(pi.env)


def project_for(root: Path) -> tuple[Path, str]:
    """A project with the `kind: pi` worker card; the card body's marker."""
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    return project, write_card(project)


async def until(predicate: Callable[[], bool], what: str) -> float:
    deadline = time.monotonic() + LIMIT
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.002)
    return time.monotonic()


# ----- start → first answer ---------------------------------------------------------------
async def legion_start(project: Path, session: str, count: int) -> tuple[list[float], list[float]]:
    """(s to first answer, s to settled) of each of `count` nodes spawned in one batch."""
    sup = Supervisor(project, session=session, stop_grace=1.0)
    await sup.start()
    try:
        t0 = time.monotonic()
        spawn = asyncio.ensure_future(
            sup.launcher.spawn(
                ROOT_ID, [ChildRequest("worker", "Say done.", name=f"n{i}") for i in range(count)]
            )
        )
        await until(lambda: len(sup.model.nodes) > count, "rows")
        ids = [i for i in sup.model.nodes if i != ROOT_ID]
        first: dict[str, float] = {}
        settled: dict[str, float] = {}
        deadline = time.monotonic() + LIMIT
        while len(settled) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"settled {len(settled)} of {count}")
            now = time.monotonic()
            for i in ids:
                view = sup.model.nodes[i]
                if i not in first and (view.streaming is not None or view.progress.turns):
                    first[i] = now
                if i not in settled and view.node.status.value in ("settled", "failed"):
                    settled[i] = now
                    first.setdefault(i, now)
            await asyncio.sleep(0.002)
        await spawn
        bad = [sup.names.node(i).error for i in ids if sup.names.node(i).status.value != "settled"]
        if bad:
            raise RuntimeError(f"not settled: {bad}")
        return [first[i] - t0 for i in ids], [settled[i] - t0 for i in ids]
    finally:
        await sup.close()


async def bare_pi(pi: PiEnv, marker: str) -> tuple[float, float]:
    """(s to message_start of the answer, s to agent_end) of a bare `pi --mode rpc`."""
    t0 = time.monotonic()
    argv = pi.rpc_argv("--append-system-prompt", marker, "--tools", ",".join(PI_TOOLS))
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=pi.workdir, env=pi.env, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, limit=2**24,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"id":1,"type":"prompt","message":"Say done."}\n')
    first: float | None = None
    try:
        async with asyncio.timeout(LIMIT):
            while line := await proc.stdout.readline():
                event: dict[str, Any] = json.loads(line)
                kind = event.get("type")
                if kind == "message_start" and event["message"].get("role") == "assistant":
                    first = first or time.monotonic()
                if kind == "agent_end":
                    assert first is not None
                    return first - t0, time.monotonic() - t0
        raise RuntimeError("pi exited before it answered")
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def start_figures(line: str, root: Path) -> None:
    for count, rounds in ((1, ROUNDS_ONE), (SIX, ROUNDS_SIX)):
        server = Server("tiny", 2 * count * rounds + 1)
        try:
            pi = pi_env(line, server.base_url, root / f"pi-{count}")
            apply_env(pi)
            project, marker = project_for(root / f"p-{count}")
            if count == 1:
                await bare_pi(pi, marker)  # warm: disk caches, Node's compile cache
            l_first: list[float] = []
            l_settle: list[float] = []
            b_first: list[float] = []
            b_settle: list[float] = []
            for r in range(rounds):
                firsts, settles = await legion_start(project, f"b{count}-{r}", count)
                l_first += firsts
                l_settle += settles
                pairs = await asyncio.gather(*(bare_pi(pi, marker) for _ in range(count)))
                b_first += [p[0] for p in pairs]
                b_settle += [p[1] for p in pairs]
        finally:
            server.close()
        key = f"pi_{line.replace('.', '_')}_{count}_node{'s' if count > 1 else ''}"
        n = len(l_first)
        print(
            f"{key}_start_to_first_answer_legion: {statistics.median(l_first):.2f} s "
            f"(median of {n}; max {max(l_first):.2f} s)"
        )
        print(
            f"{key}_start_to_first_answer_bare_pi: {statistics.median(b_first):.2f} s "
            f"(median of {len(b_first)}; max {max(b_first):.2f} s)"
        )
        print(f"{key}_start_to_settled_legion: {statistics.median(l_settle):.2f} s")
        print(f"{key}_start_to_agent_end_bare_pi: {statistics.median(b_settle):.2f} s")


# ----- host CPU per streaming node ----------------------------------------------------------
async def stream_cpu(project: Path, session: str, server: Server, count: int) -> float:
    """Host CPU seconds per node per stream second while `count` nodes stream."""
    sup = Supervisor(project, session=session, stop_grace=1.0)
    await sup.start()
    try:
        spawn = asyncio.ensure_future(
            sup.launcher.spawn(
                ROOT_ID, [ChildRequest("worker", "Talk.", name=f"s{i}") for i in range(count)]
            )
        )
        for _ in range(count):
            await server.mark("REQ")
        cpu0, t0 = time.process_time(), time.monotonic()
        for _ in range(count):
            await server.mark("END")
        cpu1, t1 = time.process_time(), time.monotonic()
        await spawn
        await asyncio.wait_for(sup.queries.wait_idle_tree(), LIMIT)
        return (cpu1 - cpu0) / count / (t1 - t0)
    finally:
        await sup.close()


async def cpu_figures(line: str, root: Path) -> None:
    real = registry.make_handle

    def deaf(spec: backend.LaunchSpec, *, on_stream: Any = None) -> backend.AgentHandle:
        return real(spec)  # the alternative: no live rate, deltas parsed and dropped

    for count in (1, 3):
        results: dict[str, float] = {}
        for mode in ("live", "deaf"):
            server = Server("stream", count)
            try:
                pi = pi_env(line, server.base_url, root / f"cpu-{mode}-{count}")
                apply_env(pi)
                project, _ = project_for(root / f"cpu-{mode}-{count}")
                launching.make_handle = real if mode == "live" else deaf  # type: ignore[assignment]
                try:
                    results[mode] = await stream_cpu(project, f"c-{mode}-{count}", server, count)
                finally:
                    launching.make_handle = real  # type: ignore[assignment]
            finally:
                server.close()
        key = f"pi_{line.replace('.', '_')}_host_cpu_per_streaming_node_{count}_streaming"
        print(
            f"{key}_live_rate: {results['live'] * 100:.1f} % of a core "
            f"({STREAM_TOKENS} tokens at {STREAM_RATE:g} tok/s, one stream window)"
        )
        print(f"{key}_deltas_ignored: {results['deaf'] * 100:.1f} % of a core")


async def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-pi-"))
    try:
        for line in PI_LINES:
            await start_figures(line, root / f"start-{line}")
            await cpu_figures(line, root / f"cpu-{line}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"# {os.cpu_count()} cores; model server in its own process; "
        "bare pi = the same pi, flags and server, without legion"
    )


if __name__ == "__main__":
    with calibrated(), contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
