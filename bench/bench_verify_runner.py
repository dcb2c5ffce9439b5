"""What running a `legion-verify` command through the process layer costs.

Run: .venv/bin/python bench/bench_verify_runner.py

`run_verification(["true"])` — own session, parent-death signal, output appended to a
file, exit from a pidfd, a time limit — against the obvious alternative, a bare
`asyncio.create_subprocess_shell("true")` + `wait()` (no log, no bound, no sweep: a hung
command would hang the team and leave its children behind). Then the price of a timeout:
a command that forks a child and hangs, stopped at 0.2 s and swept.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from calibration import calibrated

from legion_tui.supervisor.teams.verify import run_verification

RUNS = 30


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def ours(folder: Path) -> list[float]:
    times: list[float] = []
    for i in range(RUNS):
        start = time.perf_counter()
        result = await run_verification(
            ["true"],
            cwd=folder,
            output_file=folder / f"v{i}.log",
            run_id="bench-verify",
            node_id="lead",
        )
        times.append((time.perf_counter() - start) * 1000)
        assert result.outcome == "pass"
    return times


async def bare(folder: Path) -> list[float]:
    times: list[float] = []
    for _ in range(RUNS):
        start = time.perf_counter()
        proc = await asyncio.create_subprocess_shell("true", cwd=folder)
        await proc.wait()
        times.append((time.perf_counter() - start) * 1000)
    return times


async def timeout_cost(folder: Path) -> list[float]:
    times: list[float] = []
    for i in range(5):
        start = time.perf_counter()
        result = await run_verification(
            ["sleep 30 & sleep 30"],
            cwd=folder,
            output_file=folder / f"t{i}.log",
            run_id="bench-verify",
            node_id="lead",
            command_timeout=0.2,
        )
        times.append((time.perf_counter() - start) * 1000)
        assert result.commands[0].timed_out and not result.commands[0].survivors
    return times


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for label, fn in (("process_layer", ours), ("bare_subprocess_shell", bare)):
            times = await fn(folder)
            print(f"verify_true_{label}_median: {statistics.median(times):.2f} ms")
            print(f"verify_true_{label}_p95: {pct(times, 0.95):.2f} ms")
        swept = await timeout_cost(folder)
        print(f"verify_timeout_0.2s_with_sweep_median: {statistics.median(swept):.1f} ms")


if __name__ == "__main__":
    with calibrated():
        asyncio.run(main())
