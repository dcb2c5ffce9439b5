"""Host CPU per streaming real agent (SPEC §8, issue 16 item 5: ≤ 1 % of a core each).

Real `pi --mode rpc` (the project-local pi 1.6, `.venv/agents/pi-1.6`) launched by a real
`Supervisor` in this process — the host — from a `kind: pi` project card, against the
tests' scripted model server, which streams every reply as deltas at RATE tok/s for
longer than a measurement lasts. The server runs in a process of its own and each pi
is the host's child, so the CPU measured here — this process's, every thread of it
(`time.process_time`, i.e. getrusage RUSAGE_SELF: children not included) — is the
host's alone: the RPC reader hearing each delta, the model's streaming segment, the
session watcher, the ledger's thread.

For N = 1 and N = 4 agents: spawn N, wait until every one is streaming, then measure
WINDOW_S of wall time (ROUNDS windows, the median), check every agent streamed through
the whole window, stop them. The same windows with no agent running give the idle host
(its own timers): measured once the host has settled (a first window is thrown away:
the host's start is still finishing then) and again after the last agent stopped, the
median of both; each agent's share is (host with N − idle host) ÷ N. The load average
is printed beside each configuration: a figure from a loaded machine reads high.

    .venv/bin/python bench/bench_real_agent_cpu.py [--rounds 3] [--window 5] [--rate 100]
                                                   [--profile TOP]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import pytest  # its MonkeyPatch sets the env pi's children inherit, and undoes it
from calibration import calibrated
from pi_env import pi_env
from real_pi_helpers import START_LIMIT, agent_host, use_env, write_card
from supervisor_helpers import GIT_ENV, until

from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

TESTS = Path(sys.path[0])  # the tests' helpers: the model server's process imports them too
PI_LINE = "1.6"
BUDGET_PCT = 1.0  # % of one core per streaming agent
COUNTS = (1, 4)

# The model server, in a process of its own: its threads streaming to N agents must not
# count as the host's CPU. Every request gets one long streamed text (when_empty), so
# however many agents ask, each streams until it is stopped.
SERVER = """
import sys
sys.path.insert(0, sys.argv[1])
from model_server import ModelServer, Text
tokens, rate = int(sys.argv[2]), float(sys.argv[3])
body = " ".join(f"w{i}" for i in range(tokens))
with ModelServer(when_empty=Text(body, tokens=tokens, tokens_per_second=rate)) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()  # until the bench closes our stdin
"""


def start_server(tokens: int, rate: float) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(TESTS), str(tokens), str(rate)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdout is not None
    base_url = server.stdout.readline().strip()
    if not base_url.startswith("http://"):
        server.kill()
        raise SystemExit(f"the model server did not start (said {base_url!r})")
    return server, base_url


def streamed(sup: Supervisor, ids: Sequence[str]) -> list[int]:
    """Tokens each agent's live message holds now (0: not streaming)."""
    views = (sup.model.nodes[nid] for nid in ids)
    return [v.streaming.tokens if v.streaming is not None else 0 for v in views]


async def host_cpu(window: float, profiler: cProfile.Profile | None = None) -> float:
    """% of one core this process used over `window` s of wall time (under `profiler`,
    the event loop's thread profiled: the figure is then not the host's real one)."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    await asyncio.sleep(window)  # the measurement itself: the host runs meanwhile
    if profiler is not None:
        profiler.disable()
    return 100.0 * (time.process_time() - cpu0) / (time.perf_counter() - wall0)


async def streaming_windows(
    sup: Supervisor, count: int, rounds: int, window: float, tag: str,
    profiler: cProfile.Profile | None = None,
) -> list[float]:
    """Host CPU % over `rounds` windows while `count` agents stream."""
    requests = [
        ChildRequest("worker", "Talk for a long while.", name=f"{tag}-{i}") for i in range(count)
    ]
    nodes = await sup.launcher.spawn(ROOT_ID, requests)
    ids = [n.id for n in nodes]
    failed = [n.error for n in nodes if n.error]
    if failed:
        raise SystemExit(f"pi did not start: {failed}")
    await until(lambda: min(streamed(sup, ids)) > 0, START_LIMIT, f"{count} agents streaming")
    samples: list[float] = []
    for _ in range(rounds):
        before = streamed(sup, ids)
        samples.append(await host_cpu(window, profiler))
        after = streamed(sup, ids)
        stalled = [nid for nid, b, a in zip(ids, before, after, strict=True) if a <= b]
        if stalled:
            raise SystemExit(f"agents stopped streaming inside a window: {stalled}")
    for nid in ids:
        await sup.stops.stop(ROOT_ID, nid, force=True)
    return samples


def load_1min() -> float:
    return os.getloadavg()[0]


async def measure(
    project: Path, rounds: int, window: float, profiler: cProfile.Profile | None,
    profiled: int = COUNTS[-1],
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """The windows of each configuration, and the 1-minute load average as each began."""
    results: dict[str, list[float]] = {}
    loads: dict[str, float] = {}
    async with agent_host(project) as sup:
        await until(lambda: sup.model.nodes.get(ROOT_ID) is not None, 10, "the host's root")
        await host_cpu(window)  # the host's start settles (its first sweeps, the ledger)
        loads["idle"] = load_1min()
        results["idle"] = [await host_cpu(window) for _ in range(rounds)]
        for count in COUNTS:
            watch = profiler if count == profiled else None  # --profile: one count's windows
            loads[str(count)] = load_1min()
            results[str(count)] = await streaming_windows(
                sup, count, rounds, window, f"talker{count}", watch
            )
        await host_cpu(window)  # the stopped agents' endings are recorded
        results["idle"] += [await host_cpu(window) for _ in range(rounds)]
    return results, loads


def report(results: dict[str, list[float]], loads: dict[str, float], rate: float) -> None:
    idle = statistics.median(results["idle"])
    print(f"real agent cpu: pi {PI_LINE}, deltas at {rate:g} tok/s per agent")
    print(f"real agent cpu idle host: {idle:.2f} % of a core (load {loads['idle']:.2f})")
    for count in COUNTS:
        host = statistics.median(results[str(count)])
        each = (host - idle) / count
        verdict = "within" if each <= BUDGET_PCT else "OVER"
        load = loads[str(count)]
        print(f"real agent cpu {count} streaming: host {host:.2f} % of a core (load {load:.2f})")
        print(f"real agent cpu {count} streaming: per agent {each:.2f} % of a core "
              f"({verdict} the {BUDGET_PCT:g} % budget)")  # fmt: skip
    print(f"real agent cpu windows: {json.dumps(results)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="windows per configuration")
    parser.add_argument("--window", type=float, default=5.0, help="seconds per window")
    parser.add_argument("--rate", type=float, default=100.0, help="tok/s each agent streams")
    parser.add_argument("--profile", type=int, metavar="TOP", default=0,
                        help="cProfile the host's loop while agents stream; print "
                             "the TOP functions (the CPU figures are then not the host's)")
    parser.add_argument("--sort", default="tottime", help="the profile's order (pstats)")
    parser.add_argument("--profile-agents", type=int, choices=COUNTS, default=COUNTS[-1],
                        help="whose windows --profile profiles (default: the most agents)")
    args = parser.parse_args()
    profiler = cProfile.Profile() if args.profile else None
    # Long enough that no stream ends before its agent's windows do (+ the start).
    seconds = args.rounds * args.window + START_LIMIT
    server, base_url = start_server(int(seconds * args.rate), args.rate)
    patch = pytest.MonkeyPatch()
    try:
        with tempfile.TemporaryDirectory(prefix="lt-bench-cpu-") as tmp:
            pi = pi_env(PI_LINE, base_url, Path(tmp) / "pi")
            use_env(pi.env, patch)  # the host's children (pi) inherit this environment
            project = Path(tmp) / "project"
            project.mkdir()
            subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True,
                           env={**os.environ, **GIT_ENV})  # fmt: skip
            write_card(project)
            results, loads = asyncio.run(
                measure(project, args.rounds, args.window, profiler, args.profile_agents)
            )
    finally:
        patch.undo()
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)
    report(results, loads, args.rate)
    if profiler is not None:
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.profile)
    return 0


if __name__ == "__main__":
    with calibrated():
        sys.exit(main())
