"""Where a dashboard frame's time goes: cProfile over bench_frame's frames (issue 16 item 2).

    .venv/bin/python bench/profile_frame.py [--size 200x60] [--nodes 200] [--incremental]
                                            [--frames 300] [--top 30] [--sort tottime]

The same scenario and the same frame as bench/bench_frame.py (the railway tree, the app's
gc tuning); only the timed frames run under the profiler. Not a bench (`make bench` runs
bench_*.py): profiles slow what they measure.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import time

from bench_frame import full_frame, incremental_frame, stream, streaming_app


async def profile(
    nodes: int, size: tuple[int, int], incremental: bool, frames: int, cpu: bool = False
) -> cProfile.Profile:
    app, clock, live = streaming_app(nodes)
    model = app.model
    render = incremental_frame if incremental else full_frame
    # On a loaded machine wall time mostly measures the wait for a core; the process's
    # CPU time is what the frame itself costs (dearer to read: a system call per event).
    profiler = cProfile.Profile(time.process_time) if cpu else cProfile.Profile()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        out = io.StringIO()
        for frame in range(10):
            stream(model, clock, live, frame)
            render(app, None, out)
        for frame in range(10, 10 + frames):
            stream(model, clock, live, frame)
            out.seek(0)
            out.truncate()
            profiler.enable()
            render(app, None, out)
            profiler.disable()
    return profiler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="200x60")
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--incremental", action="store_true")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--callers", metavar="REGEX", help="also who calls these functions")
    parser.add_argument("--cpu", action="store_true",
                        help="time by the process's CPU time, not the wall clock (a loaded "
                             "machine)")  # fmt: skip
    args = parser.parse_args()
    width, height = (int(x) for x in args.size.split("x"))
    profiler = asyncio.run(
        profile(args.nodes, (width, height), args.incremental, args.frames, args.cpu)
    )
    stats = pstats.Stats(profiler)
    total_ms = stats.total_tt * 1000.0 / args.frames  # type: ignore[attr-defined]
    kind = "incremental" if args.incremental else "forced"
    clock = "CPU" if args.cpu else "wall"
    print(f"profile {kind} frame {args.size} {args.nodes} nodes: {total_ms:.2f} ms ({clock}) "
          f"per frame under cProfile, {args.frames} frames")  # fmt: skip
    stats.sort_stats(args.sort).print_stats(args.top)
    if args.callers:
        stats.print_callers(args.callers)


if __name__ == "__main__":
    main()
