"""`legion demo --headless --nodes 1000 --duration 30`: peak RSS and events handled per
second (SPEC §8: peak RSS ≤ 400 MB).

Runs the real CLI as a subprocess; the host reports its own `ru_maxrss` and event counts
in the JSON summary, and this script samples the RSS of the host plus every descendant
(the demo's OS-process child included) with psutil. Side by side: the default 20-node
demo for 10 s, to show what the extra 980 agents cost.

    .venv/bin/python bench/bench_supervisor_demo.py
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

LEGION = str(Path(sys.executable).with_name("legion"))


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # a child may exit between the two calls
            total += p.memory_info().rss
    return total


def run_demo(nodes: int, duration: float) -> tuple[dict[str, object], float, float]:
    with tempfile.TemporaryDirectory(prefix="lt-bench-") as tmp:
        t0 = time.perf_counter()
        child = subprocess.Popen(
            [LEGION, "demo", "--headless", "--json", "--nodes", str(nodes),
             "--duration", str(duration)],
            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        proc = psutil.Process(child.pid)
        peak = 0
        while child.poll() is None:
            with contextlib.suppress(psutil.Error):
                peak = max(peak, _tree_rss(proc))
            time.sleep(0.25)
        out, err = child.communicate(timeout=60)
        wall = time.perf_counter() - t0
        if child.returncode != 0:
            raise SystemExit(f"demo failed ({child.returncode}): {err.decode()[-2000:]}")
        return json.loads(out), peak / 2**20, wall


def main() -> None:
    for nodes, duration in ((1000, 30.0), (20, 10.0)):
        report, tree_peak_mb, wall = run_demo(nodes, duration)
        tag = f"demo_{nodes}"
        print(f"{tag}_nodes_shown: {report['nodes']} nodes")
        print(f"{tag}_peak_rss_host: {report['peak_rss_mb']} MB")
        print(f"{tag}_peak_rss_host_and_children: {tree_peak_mb:.1f} MB")
        print(f"{tag}_events_per_s: {report['events_per_s']} events/s")
        print(f"{tag}_ledger_events: {report['events_written']} events")
        print(f"{tag}_session_updates: {report['progress_updates']} updates")
        print(f"{tag}_wall_incl_startup_and_pause: {wall:.1f} s")


if __name__ == "__main__":
    main()
