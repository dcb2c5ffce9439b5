"""The dashboard frame in instructions, not milliseconds (issue 16 items 1–3): figures
that read the same on a busy machine and a quiet one, and on any machine with the same
CPython and libraries.

bench_frame.py times frames; on a shared machine its medians move by 10–50 % between two
runs a minute apart, and a node ratio (1000 ÷ 200 nodes) as much. Here each configuration
runs once in its own interpreter under valgrind's callgrind, and only the timed frames
are counted: the interpreter starts with instrumentation off (setup and 10 warm frames
run uninstrumented, several times faster), is switched on by `callgrind_control -i on`
when it says it is ready, and each frame is called through `operator.call` — the one C
function callgrind collects in (`--toggle-collect`); nothing else in the frame's path
calls it. Two runs of ten 200-node frames counted 253 335 475 and 253 335 567.

The frames are bench_frame.py's own (the railway tree, 50 of the nodes streaming, the
app's gc tuning): "forced" re-renders every widget; "incremental" paints what the dirty
set touched; Textual's floor is an empty screen of the same size composited the same way.
"Textual's compositing" is the forced frame's screen composited and turned into ANSI with
every widget's cache fresh (the rendering done, uncounted, just before): the part of the
forced frame that is Textual's on this screen; the rest is ours. A truer split than frame
− empty screen: the empty screen's one full-screen widget takes Textual's styles path,
which our panels skip (widgets/lines.py), so it costs more than compositing our screen.

    .venv/bin/python bench/bench_frame_instructions.py [--size WxH ...] [--frames N] [--jobs N]

≈ 5 min on 2 cores (the configurations run side by side, a core each: counts do not
depend on load). Needs valgrind (Debian's package) and an interpreter with its symbols
(pyenv's builds have them; with a stripped one nothing is collected, and it says so).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import operator
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from calibration import CALLGRIND, COUNTED_ENV, calibrated, collected

WARM_FRAMES = 10  # uncounted: caches, styles, numpy buffers (as bench_frame.py)
FRAMES = 20  # counted per configuration (the stream gives each live node a new segment
# every 60 frames, staggered: 20 frames hold a third of that cycle's work)
NODE_COUNTS = (200, 1000, 10_000)
SIZES = ("120x40", "200x60")
TOGGLE = "_operator_call"  # CPython's C function behind operator.call
READY = "ready"


class Config(NamedTuple):
    size: str
    nodes: int  # 0: Textual's floor
    mode: str  # "forced", "incremental", "composite" or "floor"


async def child(config: Config, frames: int) -> None:
    """In the interpreter valgrind runs: set up, warm, say ready, wait, count the frames."""
    from bench_frame import (
        composite,
        floor_frame,
        full_frame,
        incremental_frame,
        stream,
        streaming_app,
    )
    from textual.app import App

    width, height = (int(n) for n in config.size.split("x"))
    out = io.StringIO()
    if config.mode == "floor":
        empty: App[None] = App()
        async with empty.run_test(size=(width, height)) as pilot:
            await pilot.pause()
            for _ in range(WARM_FRAMES):
                floor_frame(empty, out)
            wait_for_counting()
            for _ in range(frames):
                out.seek(0)
                out.truncate()
                operator.call(floor_frame, empty, out)
        return
    app, clock, live = streaming_app(config.nodes)
    render = incremental_frame if config.mode == "incremental" else full_frame
    async with app.run_test(size=(width, height)) as pilot:
        await pilot.pause()
        for frame in range(WARM_FRAMES):
            stream(app.model, clock, live, frame)
            render(app, None, out)
        wait_for_counting()
        for frame in range(WARM_FRAMES, WARM_FRAMES + frames):
            stream(app.model, clock, live, frame)  # the tailer's part: not counted
            out.seek(0)
            out.truncate()
            if config.mode == "composite":
                # Every widget rendered (uncounted), then only Textual's compositing.
                full_frame(app, None, out)
                operator.call(composite, app, out)
            else:
                operator.call(render, app, None, out)


def wait_for_counting() -> None:
    print(READY, flush=True)
    sys.stdin.readline()  # the driver has switched instrumentation on


def count(config: Config, frames: int) -> int:
    """Instructions of `frames` frames of `config` (callgrind, in a fresh interpreter)."""
    argv = [
        *CALLGRIND, "--instr-atstart=no", "--collect-atstart=no", f"--toggle-collect={TOGGLE}",
        sys.executable, __file__, "--child", config.size, str(config.nodes), config.mode,
        "--frames", str(frames),
    ]  # fmt: skip
    env = os.environ | COUNTED_ENV
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline().strip()
        if line != READY:
            proc.kill()
            raise SystemExit(f"{config}: the frame interpreter failed:\n{proc.stderr.read()}")
        # Blocks until callgrind has taken the command (through valgrind's gdbserver).
        subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True,
                       capture_output=True, timeout=600)  # fmt: skip
        _out, err = proc.communicate("go\n", timeout=3600)
    total = collected(err)
    if proc.returncode != 0 or total is None:
        raise SystemExit(f"{config}: callgrind exited {proc.returncode}:\n{err}")
    if total == 0:
        raise SystemExit(f"no instructions collected: {sys.executable} has no symbol "
                         f"{TOGGLE} (a stripped interpreter?)")  # fmt: skip
    return total


def configurations(sizes: list[str]) -> list[Config]:
    configs: list[Config] = []
    for size in sizes:
        configs.append(Config(size, 0, "floor"))
        configs.append(Config(size, 200, "incremental"))
        configs += [Config(size, nodes, mode) for nodes in NODE_COUNTS
                    for mode in ("forced", "composite")]  # fmt: skip
    # The biggest first: the 10 000-node setups take longest, the small ones fill in.
    return sorted(configs, key=lambda c: -c.nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", action="append", metavar="WxH",
                        help="only this size (repeatable; default: 120x40 and 200x60)")  # fmt: skip
    parser.add_argument("--frames", type=int, default=FRAMES)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="configurations counted at once (default: one per core)")  # fmt: skip
    parser.add_argument("--child", nargs=3, metavar=("WxH", "NODES", "MODE"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.child:
        size, nodes, mode = args.child
        asyncio.run(child(Config(size, int(nodes), mode), args.frames))
        return
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"needs {' and '.join(missing)} (Debian: apt-get install valgrind)")
    configs = configurations(args.size or list(SIZES))
    with calibrated(), ThreadPoolExecutor(max_workers=args.jobs) as pool:
        totals = dict(zip(configs, pool.map(lambda c: count(c, args.frames), configs), strict=True))
        report({c: total / args.frames / 1e6 for c, total in totals.items()}, args.frames)


def report(per_frame: dict[Config, float], frames: int) -> None:
    """Mega-instructions per frame, ours beside Textual's part, and the node ratios."""
    print(f"frame instructions: {frames} frames per configuration, counted by callgrind")
    for size in dict.fromkeys(c.size for c in per_frame):
        floor = per_frame[Config(size, 0, "floor")]
        print(f"frame instructions {size} Textual's floor (empty screen): {floor:.2f} M")
        ours: dict[int, float] = {}
        for nodes in NODE_COUNTS:
            forced = per_frame[Config(size, nodes, "forced")]
            textual = per_frame[Config(size, nodes, "composite")]
            ours[nodes] = forced - textual
            print(f"frame instructions {size} {nodes} nodes railway: {forced:.2f} M (ours "
                  f"{ours[nodes]:.2f} M + Textual's compositing {textual:.2f} M)")  # fmt: skip
        incremental = per_frame[Config(size, 200, "incremental")]
        print(f"frame instructions {size} 200 nodes railway incremental: {incremental:.2f} M")
        small = per_frame[Config(size, 200, "forced")]
        for nodes in NODE_COUNTS[1:]:
            big = per_frame[Config(size, nodes, "forced")]
            print(f"frame instructions {size} railway {nodes}/200 node ratio: {big / small:.3f} x "
                  f"(ours alone {ours[nodes] / ours[200]:.3f} x)")  # fmt: skip


if __name__ == "__main__":
    main()
