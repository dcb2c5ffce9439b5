"""The per-agent work of a host streaming many agents, out of the host (issue 35).

Standalone: `.venv/bin/python bench/bench_live_frames.py [--agents 1000] [--cpu]`.

Three measurements that `bench_live_agents.py` (a real host, a noisy machine) cannot tell
apart from its noise, each on the shape of that bench (one pi assistant line, 100 output
tokens, a second per agent):
- watcher: µs per appended line through `SessionWatcher.poll_paths` (stat, read, parse,
  fold, report), 500 files, one line appended to each per round, 30 rounds;
- chart: ms per `RateBuckets.compute` frame at N live workers with 180 s of one-second
  segments (60 s in the window), a quarter of them appending a segment before each
  quarter-second frame, 200 frames (median), with the buckets' checksum and a digest of
  every frame's buckets (both the same to the bit from one version to the next);
- header: µs per live node for the Σ tok/s of a rates instant (`instant_rate`, one walk
  per node an instant) at N live agents with the chart's series, each appending a
  segment a second, 60 instants (median), with the sums' checksum (to the bit).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from render_helpers import T0, node

from legion_tui.model import NodeStatus
from legion_tui.render.chart import RateBuckets
from legion_tui.render.feed import ChangeFeed
from legion_tui.render.rates import RATES_EVERY_S, instant_rate, rates_instant
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.session.watcher import SessionWatcher
from legion_tui.state import LegionModel

LINE = (
    '{"type":"message","id":"%08x","parentId":%s,"timestamp":"2026-12-06T06:%02d:%02d.%03dZ",'
    '"message":{"role":"assistant","content":[{"type":"text","text":"line %d"}],'
    '"api":"anthropic-messages","provider":"bench","model":"streamer",'
    '"usage":{"input":0,"output":100,"cacheRead":0,"cacheWrite":0,"totalTokens":100,'
    '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},'
    '"stopReason":"stop","timestamp":%d}}\n'
)
Clock = Callable[[], float]
HEADER = ('{"type":"session","version":3,"id":"x","timestamp":"2026-12-06T06:00:00.000Z",'
          '"cwd":"/"}\n')  # fmt: skip


def watcher_us_per_line(
    files: int = 500, rounds: int = 30, clock: Clock = time.perf_counter
) -> float:
    with tempfile.TemporaryDirectory() as folder:
        paths = [os.path.join(folder, f"s-{i}.jsonl") for i in range(files)]
        for path in paths:
            Path(path).write_text(HEADER)
        watcher = SessionWatcher(folder, lambda _nid, _progress: None)
        watcher.poll_all()
        spent = 0.0
        for i in range(1, rounds + 1):
            parent = "null" if i == 1 else f'"{i - 1:08x}"'
            line = LINE % (i, parent, i // 60 % 60, i % 60, i % 1000, i, 1_796_000_000_000 + i)
            for path in paths:
                with open(path, "a") as fh:
                    fh.write(line)
            start = clock()
            watcher.poll_paths(paths)
            spent += clock() - start
        watcher.close()
    return spent / (files * rounds) * 1e6


def chart_ms_per_frame(
    agents: int, history: int = 180, frames: int = 200, clock: Clock = time.perf_counter
) -> tuple[float, float, str]:
    now = T0 + 1000.0
    model = LegionModel("run", "s", started_at=T0, clock=lambda: now)
    model.upsert(node("root", None, "root", NodeStatus.RUNNING))
    ids = [f"w{i}" for i in range(agents)]
    for i, nid in enumerate(ids):
        model.upsert(node(nid, "root", "worker", NodeStatus.RUNNING))
        offset = (i % 4) * 0.25 + 0.01 * (i % 25)  # the appends spread over the second
        series = [RateSegment(now - history + k + offset - 1, now - history + k + offset, 100)
                  for k in range(history)]  # fmt: skip
        model.set_progress(nid, SessionProgress(rate_series=series))
    feed = ChangeFeed(model)
    buckets = RateBuckets()
    values = buckets.compute(model, now - 60, now, 194, changed=feed.take())
    digest = hashlib.sha256(values.tobytes())
    times = []
    for frame in range(frames):
        now += 0.25
        for nid in ids[frame % 4 :: 4]:
            progress = model.nodes[nid].progress
            last = progress.rate_series[-1]
            progress.rate_series.append(RateSegment(last.end, last.end + 1.0, 100))
            model.set_progress(nid, progress)
        changed = feed.take()
        start = clock()
        values = buckets.compute(model, now - 60, now, 194, changed=changed)
        times.append(clock() - start)
        digest.update(values.tobytes())
    return statistics.median(times) * 1e3, float(values.sum()), digest.hexdigest()[:16]


def header_us_per_node(
    agents: int, history: int = 180, instants: int = 60, clock: Clock = time.perf_counter
) -> tuple[float, str]:
    now = T0 + 1000.0
    model = LegionModel("run", "s", started_at=T0, clock=lambda: now)
    views = []
    for i in range(agents):
        view = model.upsert(node(f"w{i}", None, "worker", NodeStatus.RUNNING))
        offset = (i % 4) * 0.25 + 0.01 * (i % 25)
        series = [RateSegment(now - history + k + offset - 1, now - history + k + offset, 100)
                  for k in range(history)]  # fmt: skip
        model.set_progress(view.node.id, SessionProgress(rate_series=series))
        views.append(view)
    times, sums = [], []
    for _ in range(instants):
        now += RATES_EVERY_S
        for view in views:
            last = view.progress.rate_series[-1]
            view.progress.rate_series.append(RateSegment(last.end, last.end + 1.0, 100))
            model.set_progress(view.node.id, view.progress)
        at = rates_instant(now)
        start = clock()
        total = 0.0
        for view in views:
            total += instant_rate(view, at)
        times.append(clock() - start)
        sums.append(total)
    digest = hashlib.sha256(repr(sums).encode()).hexdigest()[:16]
    return statistics.median(times) / agents * 1e6, digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time the thread's CPU, not the wall clock (on a shared machine the waits "
        "for a CPU are the neighbours', not the code's)",
    )
    args = parser.parse_args()
    clock = time.thread_time if args.cpu else time.perf_counter
    print(f"watcher: {watcher_us_per_line(clock=clock):.1f} µs per appended line")
    ms, checksum, digest = chart_ms_per_frame(args.agents, clock=clock)
    print(f"chart: {ms:.2f} ms per frame at {args.agents} live agents "
          f"(checksum {checksum:.6f}, every frame's buckets sha256 {digest})")  # fmt: skip
    us, sums = header_us_per_node(args.agents, clock=clock)
    print(f"header: {us:.2f} µs per live node at each rates instant (Σ tok/s sha256 {sums})")


if __name__ == "__main__":
    main()
