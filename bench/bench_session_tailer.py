"""Session tailer benchmark (SPEC §8 rows "unchanged session file per tick" and the tailer).

Standalone: `.venv/bin/python bench/bench_session_tailer.py`.

200 session files (≈ 60 kB each, realistic pi v3 lines); each tick 50 of them get one
new assistant line, then every file is brought up to date:
- stat-gated incremental: one `SessionReader` per file, `poll()` each (the project's way);
- naive full re-parse: open + read + parse every file from byte 0 each tick (what a
  first implementation does — and what upstream did before #348).
Then, on the incremental side, syscalls per unchanged file per tick, counted by wrapping
`os.stat` / `os.open` / `os.pread` as the reader module sees them.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calibration import calibrated

from legion_tui.session import reader as reader_module
from legion_tui.session.reader import SessionReader, read_session

FILES = 200
LIVE = 50
TURNS = 40
INCREMENTAL_TICKS = 200
NAIVE_TICKS = 15


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def _assistant(i: int, parent: str | None, t_ms: int) -> dict[str, Any]:
    text = "Reading the module and checking the call sites before the edit. " * 6
    return {
        "type": "message",
        "id": f"a{i:07x}",
        "parentId": parent,
        "timestamp": "2026-11-29T14:00:00.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": text},
                {
                    "type": "toolCall",
                    "id": f"call-{i}",
                    "name": "read",
                    "arguments": {"path": f"src/module_{i}.py"},
                },
            ],
            "model": "claude-sonnet-4-5",
            "usage": {
                "input": 900,
                "output": 120,
                "cacheRead": 8000,
                "cacheWrite": 300,
                "cost": {"total": 0.0042},
            },
            "stopReason": "toolUse",
            "timestamp": t_ms,
        },
    }


def _result(i: int, parent: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"r{i:07x}",
        "parentId": parent,
        "timestamp": "2026-11-29T14:00:01.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": f"call-{i}",
            "toolName": "read",
            "content": [{"type": "text", "text": "def f():\n    return 1\n" * 40}],
            "isError": False,
            "timestamp": 0,
        },
    }


def seed(folder: Path) -> list[Path]:
    paths = []
    for n in range(FILES):
        path = folder / f"node-{n}.jsonl"
        lines = [
            _line(
                {
                    "type": "session",
                    "version": 3,
                    "id": f"s{n}",
                    "timestamp": "2026-11-29T14:00:00.000Z",
                    "cwd": "/x",
                }
            )
        ]
        parent = None
        for i in range(TURNS):
            lines.append(_line(_assistant(i, parent, 1_796_000_000_000 + i)))
            lines.append(_line(_result(i, f"a{i:07x}")))
            parent = f"r{i:07x}"
        path.write_bytes(b"".join(lines))
        paths.append(path)
    return paths


class Appender:
    """Appends one assistant line to each of the first LIVE files per tick."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths[:LIVE]
        self.seq = 10_000

    def tick(self) -> None:
        self.seq += 1
        data = _line(_assistant(self.seq, None, 1_796_000_000_000))
        for path in self.paths:
            with open(path, "ab") as f:
                f.write(data)


def timed_ticks(ticks: int, appender: Appender, work: Callable[[], None]) -> list[float]:
    costs = []
    for _ in range(ticks):
        appender.tick()  # the agents write (not timed)
        started = time.perf_counter()
        work()
        costs.append((time.perf_counter() - started) * 1000)
    return costs


def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        paths = seed(Path(d))
        size_kb = statistics.mean(p.stat().st_size for p in paths) / 1024
        print(f"files: {FILES} files")
        print(f"live files appending one line per tick: {LIVE} files")
        print(f"mean file size: {size_kb:.1f} KB")
        appender = Appender(paths)

        readers = [SessionReader(p) for p in paths]
        for r in readers:  # the one seed parse per file per process
            r.poll()

        def incremental() -> None:
            for r in readers:
                r.poll()

        inc = timed_ticks(INCREMENTAL_TICKS, appender, incremental)

        def naive() -> None:
            for p in paths:
                read_session(p)

        full = timed_ticks(NAIVE_TICKS, appender, naive)
        # Sanity: both see the same figures (catch the readers up with the naive ticks first).
        incremental()
        assert all(r.progress == read_session(r.path) for r in readers[:5] + readers[-5:])

        print(f"incremental tick (200 files, 50 appended) median: {statistics.median(inc):.3f} ms")
        print(f"incremental tick p95: {pct(inc, 0.95):.3f} ms")
        print(f"naive re-parse tick median: {statistics.median(full):.3f} ms")
        print(f"naive re-parse tick p95: {pct(full, 0.95):.3f} ms")
        print(f"speed-up (median): {statistics.median(full) / statistics.median(inc):.1f} x")

        # Syscalls per unchanged file per tick, counted at the os module the reader uses.
        counts = {"stat": 0, "open": 0, "pread": 0}
        real = {name: getattr(os, name) for name in counts}

        def counting(name: str) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                counts[name] += 1
                return real[name](*args, **kwargs)

            return wrapper

        for name in counts:
            setattr(reader_module.os, name, counting(name))
        try:
            ticks = 50
            unchanged = readers[LIVE:]
            for _ in range(ticks):
                appender.tick()
                for r in unchanged:
                    r.poll()
        finally:
            for name, fn in real.items():
                setattr(reader_module.os, name, fn)
        per = ticks * len(unchanged)
        print(f"stats per unchanged file per tick: {counts['stat'] / per:g} stat")
        print(f"opens per unchanged file per tick: {counts['open'] / per:g} open")
        print(f"preads per unchanged file per tick: {counts['pread'] / per:g} pread")
        print(f"opens over the whole run, all readers: {sum(r.opens for r in readers)} opens")
        for r in readers:
            r.close()
    return 0


if __name__ == "__main__":
    with calibrated():
        sys.exit(main())
