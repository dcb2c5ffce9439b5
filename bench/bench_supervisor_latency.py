"""Append → model latency through the Supervisor's watcher path (SPEC §8: p95 ≤ 100 ms
with 200 files appending).

A real Supervisor hosts 200 nodes (rows in its ledger and model, no agents: the bench
is the writer), a writer task appends one pi assistant message at a time to the 200
session files, round-robin, ~400 lines/s in all; the latency of a line is the time from
its write to the model change signal that carries the node with that entry count.

Side by side, the obvious alternative: no inotify, a plain stat sweep of every file once
a second (what a polling dashboard does).

    .venv/bin/python bench/bench_supervisor_latency.py
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from calibration import calibrated

from legion_tui.model import NodeStatus
from legion_tui.model_records import Node
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID

FILES = 200
SECONDS = 8.0
RATE = 400.0  # lines per second over all files


def _header() -> str:
    return json.dumps(
        {"type": "session", "version": 3, "id": "bench", "timestamp": _iso(time.time()), "cwd": "/"}
    )


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _line(seq: int, parent: str | None) -> str:
    now = time.time()
    return json.dumps(
        {
            "type": "message",
            "id": f"{seq:08x}",
            "parentId": parent,
            "timestamp": _iso(now),
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": f"step {seq}"}],
                "usage": {"input": 10, "output": 40, "cacheRead": 0, "cacheWrite": 0,
                          "totalTokens": 50, "cost": {"total": 0.0}},
                "stopReason": "toolUse",
                "timestamp": int((now - 0.5) * 1000),
                "durationMs": 500,
            },
        }
    )  # fmt: skip


async def _measure(sup: Supervisor, files: dict[str, Path], mode: str) -> list[float]:
    """Append for SECONDS; return per-line latencies (seconds) to the model signal."""
    written: dict[tuple[str, int], float] = {}  # (node, entries after the write) → time
    seen: dict[str, int] = {}
    latencies: list[float] = []

    def listener(dirty: frozenset[str]) -> None:
        now = time.perf_counter()
        for node_id in dirty:
            if node_id not in files:
                continue
            entries = sup.model.nodes[node_id].progress.entries
            for n in range(seen.get(node_id, 0) + 1, entries + 1):
                t = written.pop((node_id, n), None)
                if t is not None:
                    latencies.append(now - t)
            seen[node_id] = max(seen.get(node_id, 0), entries)
        if done_writing and not written:
            drained.set()

    unsubscribe = sup.model.subscribe(listener)
    ids = list(files)
    counts = dict.fromkeys(ids, 0)
    handles = _open_all(files)
    done_writing = False
    drained = asyncio.Event()
    poller: asyncio.Task[None] | None = None
    if mode == "poll-1s":

        async def poll() -> None:
            while True:
                await asyncio.sleep(1.0)
                assert sup.progress_watch.watcher is not None
                sup.progress_watch.watcher.poll_all()

        poller = asyncio.create_task(poll())
    try:
        start = time.perf_counter()
        k = 0
        while time.perf_counter() - start < SECONDS:
            node_id = ids[k % len(ids)]
            k += 1
            counts[node_id] += 1
            fh = handles[node_id]
            fh.write(_line(counts[node_id], None) + "\n")
            fh.flush()
            # entries count: the header is not an entry; each message is one
            written[(node_id, counts[node_id])] = time.perf_counter()
            await asyncio.sleep(1.0 / RATE)
        done_writing = True
        if written:  # the last lines are still on their way: bounded wait for them
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(drained.wait(), 3.0)
    finally:
        for fh in handles.values():
            fh.close()
        unsubscribe()
        if poller is not None:
            poller.cancel()
    return latencies


def _open_all(files: dict[str, Path]) -> dict[str, TextIO]:
    return {i: open(p, "a", encoding="utf-8") for i, p in files.items()}


def _create(path: Path) -> Path:
    path.write_text(_header() + "\n", encoding="utf-8")
    return path


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def _run(mode: str) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="lt-bench-") as tmp:
        sup = Supervisor(Path(tmp), session="bench", serve=False, watch=mode == "watcher")
        await sup.start()
        if mode != "watcher":
            from legion_tui.session.watcher import SessionWatcher

            watch = sup.progress_watch
            watch.watcher = SessionWatcher(sup.run.sessions_dir, watch.on_progress, sup.clock)
        try:
            now = time.time()
            nodes = [
                Node(
                    id=f"n{i:03d}", run_id=sup.run.run_id, parent_id=ROOT_ID, name=f"n{i:03d}",
                    path=f"root/n{i:03d}", role="worker", kind="sim", backend="inprocess",
                    status=NodeStatus.RUNNING, created_at=now, updated_at=now,
                    session_file=str(sup.run.sessions_dir / f"n{i:03d}.jsonl"),
                )
                for i in range(FILES)
            ]  # fmt: skip
            await sup.ledger.insert_nodes(nodes)
            files: dict[str, Path] = {}
            for node in nodes:
                sup.model.upsert(node)
                files[node.id] = _create(Path(node.session_file or ""))
            if sup.progress_watch.watcher is not None and mode == "watcher":
                await asyncio.wait_for(sup.progress_watch.watcher.started.wait(), 10)
            else:
                assert sup.progress_watch.watcher is not None
                sup.progress_watch.watcher.poll_all()
            return await _measure(sup, files, mode)
        finally:
            await sup.close()


async def main() -> None:
    for mode, label in (("watcher", "supervisor watcher (awatch + 1 s sweep)"),
                        ("poll-1s", "alternative: 1 s stat sweep only")):  # fmt: skip
        lat = await _run(mode)
        if not lat:
            print(f"{label}: no samples", file=sys.stderr)
            continue
        key = "watcher" if mode == "watcher" else "poll_1s"
        print(f"append_to_model_{key}_samples: {len(lat)} lines")
        print(f"append_to_model_{key}_p50: {statistics.median(lat) * 1000:.1f} ms")
        print(f"append_to_model_{key}_p95: {_pct(lat, 0.95) * 1000:.1f} ms")
        print(f"# {label}, {FILES} files, ~{RATE:.0f} lines/s for {SECONDS:.0f} s")


if __name__ == "__main__":
    with calibrated():
        asyncio.run(main())
