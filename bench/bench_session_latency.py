"""Append → on_change latency through SessionWatcher (SPEC §8: p95 ≤ 100 ms, 200 files).

Standalone: `.venv/bin/python bench/bench_session_latency.py`.

A writer *process* appends one pi line at a time to 200 session files round-robin (each
file twice a second, 400 appends/s in all) and logs `time.monotonic()` just before each
write; this process runs the watcher and logs when `on_change` reports the entry count
that includes that line. CLOCK_MONOTONIC is system-wide on Linux, so the two logs compare.

Side by side, same load:
- SessionWatcher as shipped: one recursive awatch, debounce 50 ms / step 10 ms + 1 s sweep;
- the same with watchfiles' default debounce 1600 ms / step 50 ms;
- no inotify, the 1 s stat sweep alone (a plain polling tailer).
"""

from __future__ import annotations

import asyncio
import bisect
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

from calibration import calibrated

from legion_tui.session.progress import SessionProgress
from legion_tui.session.watcher import SessionWatcher

FILES = 200
PER_FILE_HZ = 2.0
WRITE_SECONDS = 5.0
SETTLE_SECONDS = 1.5  # after the last write, time for the slowest variant to catch up


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def _user(k: int) -> bytes:
    return _line(
        {
            "type": "message",
            "id": f"u{k:07x}",
            "parentId": f"u{k - 1:07x}" if k else None,
            "timestamp": "2026-11-29T14:00:00.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": f"step {k}"}],
                "timestamp": 0,
            },
        }
    )


def seed(folder: Path) -> list[Path]:
    folder.mkdir()
    paths = []
    for n in range(FILES):
        path = folder / f"node-{n}.jsonl"
        path.write_bytes(
            _line(
                {
                    "type": "session",
                    "version": 3,
                    "id": f"s{n}",
                    "timestamp": "2026-11-29T14:00:00.000Z",
                    "cwd": "/x",
                }
            )
            + _user(0)
        )
        paths.append(path)
    return paths


def writer(paths: list[str], go: MpEvent, out: Any) -> None:
    go.wait()
    log: list[tuple[int, int, float]] = []
    gap = 1.0 / (PER_FILE_HZ * len(paths))
    k = 0
    end = time.monotonic() + WRITE_SECONDS
    next_at = time.monotonic()
    while time.monotonic() < end:
        k += 1
        for n, path in enumerate(paths):
            data = _user(k)
            before = time.monotonic()
            with open(path, "ab") as f:
                f.write(data)
            log.append((n, 1 + k, before))  # entries once this line is read
            next_at += gap
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
    out.put(log)


async def measure(label: str, **watcher_kwargs: Any) -> None:
    with tempfile.TemporaryDirectory() as d:
        paths = seed(Path(d, "sessions"))
        seen: dict[int, tuple[list[int], list[float]]] = {n: ([], []) for n in range(FILES)}

        def on_change(node_id: str, progress: SessionProgress) -> None:
            entries, times = seen[int(node_id.rsplit("-", 1)[1])]
            entries.append(progress.entries)
            times.append(time.monotonic())

        watcher = SessionWatcher(Path(d, "sessions"), on_change, **watcher_kwargs)
        task = asyncio.create_task(watcher.run())
        await watcher.started.wait()
        ctx = multiprocessing.get_context("spawn")
        go, out = ctx.Event(), ctx.Queue()
        proc = ctx.Process(target=writer, args=([str(p) for p in paths], go, out))
        proc.start()
        go.set()
        log: list[tuple[int, int, float]] = await asyncio.to_thread(out.get)
        await asyncio.sleep(SETTLE_SECONDS)
        watcher.stop()
        await task
        await asyncio.to_thread(proc.join)

        latencies, missed = [], 0
        for n, entries_needed, written_at in log:
            entries, times = seen[n]
            i = bisect.bisect_left(entries, entries_needed)
            if i == len(entries):
                missed += 1
            else:
                latencies.append((times[i] - written_at) * 1000)
        print(f"{label} appends: {len(log)} appends")
        print(f"{label} p50: {statistics.median(latencies):.1f} ms")
        print(f"{label} p95: {pct(latencies, 0.95):.1f} ms")
        print(f"{label} max: {max(latencies):.1f} ms")
        print(f"{label} not seen: {missed} appends")


async def main() -> int:
    print(f"files appending: {FILES} files at {PER_FILE_HZ:g} lines/s each")
    await measure("watcher (awatch debounce 50 step 10 + 1 s sweep)")
    await measure("awatch defaults (debounce 1600 step 50)", debounce_ms=1600, step_ms=50)
    await measure("1 s stat sweep only", use_inotify=False)
    return 0


if __name__ == "__main__":
    with calibrated():
        sys.exit(asyncio.run(main()))
