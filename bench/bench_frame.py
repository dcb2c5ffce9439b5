"""Full dashboard frame: every widget re-rendered + composited + ANSI (SPEC §8).

Scenario: 200 and 1000 nodes (the rest settled, 50 live and streaming), dark theme, at
120×40 and 200×60. Run: `.venv/bin/python bench/bench_frame.py` (≈ 3 min);
`--quick [--size 120x40] [--rounds N]`: the budget rows alone, for a before/after.

How one frame is timed (inside the running app's event loop, headless):
  1. outside the timing: advance the clock 1/30 s and give each of the 50 live nodes a
     new rate segment (`set_progress`), then `model.flush()` — what the tailer does;
  2. timed: the app applies the pending dirty set (`_apply_pending`: tree, header,
     galaxy, chart), then EVERY widget is forced dirty (tree strip cache cleared, header
     key dropped, galaxy/chart frames invalidated, every widget's Textual styles cache
     cleared), the screen's compositor renders a full update and it is turned into the
     ANSI string the driver would write, written into a StringIO.
  So the figure is an upper bound of a real frame (real frames repaint only dirty rows).
  The galaxy and the chart draw once per 1/4 s step (`render/steps.py`; the chart's
  steps half a step after the galaxy's): forced later in a step, their renderers hand
  the step's frame back. At 30 frames a second one frame in 7.5 draws the galaxy, one
  other the chart — those are in the p95.
  Beside the wall time each frame's CPU time (this thread's) is taken too: on a machine
  other work keeps busy the wall time also counts the waits for a core, the CPU time only
  the frame's own work.
  The panels hand Textual their own strips (widgets/lines.py), so for them the cleared
  styles cache is not in the path; their own caches above are what is forced.
"incremental" (an extra line, not a replacement): the same streaming step, but nothing
is forced — the widgets the dirty set touched ask for their regions, the compositor
renders a partial update of just those, and that is turned into ANSI. This is what the
dashboard does ≤ 30 times a second while a legion streams (the galaxy and the chart
ask only when their step moved: a change within a step waits for the next).
Allocation: the same frame under tracemalloc (numpy reports its buffers to tracemalloc);
the figure is peak − start within the frame, i.e. the transient memory one frame needs.

GC: the dashboard calls `legion_tui.dashboard.app.tune_gc()` at start (freeze + thresholds); the
railway rows are reported both with CPython's default collector and with that tuning.

Side by side: the same screen with Textual's own `Tree` widget in place of the railway
tree (labels updated for the live nodes each frame) — the widget a user would reach for.

Every configuration is measured in each of ROUNDS rounds (TIMED_FRAMES frames a round,
the medians over all of them): a burst of load from the machine's other users then moves
a third of a configuration's frames, not all of them.

Textual's floor: an empty screen of the same size rendered the same way (styles cache
cleared, a full update composited and turned into ANSI): what a Textual app whose screen
goes Textual's styles path pays per frame at that size. Our panels skip that path
(widgets/lines.py), so compositing our screen costs less than the empty one (120×40: 5.8
against 7.7 million instructions, bench_frame_instructions.py). So each forced railway
frame is split by Textual's compositing of that very screen instead: right after the
frame, with every widget's cache fresh, the screen is composited and turned into ANSI
again (timed apart); the median is printed as "ours + Textual's compositing".
10 000 nodes (railway only: Textual's Tree takes minutes to mount that many) shows the
frame stays flat in the node count: the model, the tree's virtualised rows, the header's
counts and the chart's window cut never walk every node per frame.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import io
import statistics
import sys
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from app_helpers import FakeOps, big_model
from calibration import calibrated
from textual.app import App
from textual.widget import Widget
from textual.widgets import Tree

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.session.progress import RateSegment
from legion_tui.state import LegionModel
from legion_tui.widgets.tree.rows import GLYPHS, flatten

ROUNDS = 3  # every configuration measured in each round, the rounds one after another
TIMED_FRAMES = 100  # per configuration and round: 300 in all
DEFAULT_GC = gc.get_threshold()
ALLOC_FRAMES = 15
FPS = 30.0


class Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def stream(model: LegionModel, clock: Clock, live: list[str], frame: int) -> None:
    """One frame of a streaming legion: every live node's token count moves (each is
    dirty every frame), and each finishes an assistant message — a new rate segment —
    every 2 s, staggered (the session file gets whole messages, never partial ones)."""
    clock.now += 1.0 / FPS
    period = int(2 * FPS)
    for i, nid in enumerate(live):
        progress = model.nodes[nid].progress
        tokens = replace(progress.tokens, output=progress.tokens.output + 3)
        series = progress.rate_series
        if (frame + i) % period == 0:
            series = [*series[-60:], RateSegment(clock.now - 2.0, clock.now, 180)]
        model.set_progress(nid, replace(progress, rate_series=series, tokens=tokens,
                                        generation_ms=progress.generation_ms + 33))
    model.flush()


def streaming_app(nodes: int, gc_tuned: bool = True) -> tuple[LegionApp, Clock, list[str]]:
    """The scenario: `nodes` nodes, 50 of them live, on a clock only the frames move;
    the app (not yet running), its clock and the live nodes `stream` moves."""
    model = big_model(nodes, live=50)
    clock = Clock(model.clock())
    model.clock = clock
    app = make_app(model, FakeOps(model), clock=clock, timers=False, gc_tuning=gc_tuned)
    return app, clock, [nid for nid, v in model.nodes.items() if v.node.live]


def force_dirty(app: LegionApp, alt_tree: Tree[str] | None) -> None:
    if alt_tree is None:
        app.railway._cache.clear()
    else:
        alt_tree._line_cache.clear()
    app.header._key = None
    for panel in (app.galaxy, app.chart):
        invalidate = getattr(panel, "invalidate", None)
        if invalidate is not None:
            invalidate()
    for widget in app.screen.walk_children(Widget):
        widget._styles_cache.clear()


def full_frame(app: LegionApp, alt_tree: Tree[str] | None, out: io.StringIO) -> None:
    app._apply_pending()
    if alt_tree is not None:
        relabel(app, alt_tree)
    force_dirty(app, alt_tree)
    composite(app, out)


def composite(app: App[Any], out: io.StringIO) -> None:
    """Textual's part of a full frame: the screen's full update composited from what its
    widgets' caches hold, turned into the ANSI the driver would write."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    assert update is not None
    out.write(update.render_segments(app.console))


def incremental_frame(app: LegionApp, alt_tree: Tree[str] | None, out: io.StringIO) -> None:
    """What a real frame costs: the dirty set applied, then only the regions it dirtied."""
    app._apply_pending()
    if alt_tree is not None:
        relabel(app, alt_tree)
    screen = app.screen
    # What the screen's update timer would collect from the widgets' Update messages.
    dirty = {w for w in screen.walk_children(Widget) if w._repaint_regions}
    compositor = screen._compositor
    compositor.update_widgets(dirty)
    update = compositor.render_update(full=False, screen_stack=app._background_screens)
    if update is not None:
        out.write(update.render_segments(app.console))


def label(app: LegionApp, nid: str) -> str:
    view = app.model.nodes[nid]
    tok_s = view.progress.tok_s
    return f"{GLYPHS[view.node.status]} {view.node.name}  {view.node.role}  {tok_s:.0f} tok/s"


def relabel(app: LegionApp, tree: Tree[str]) -> None:
    nodes: dict[str, Any] = tree._legion_nodes  # type: ignore[attr-defined]
    for nid, view in app.model.nodes.items():
        if view.node.live:
            nodes[nid].set_label(label(app, nid))


async def swap_in_textual_tree(app: LegionApp) -> Tree[str]:
    """Replace the railway tree with Textual's Tree holding the same nodes."""
    tree: Tree[str] = Tree("legion", id="alt-tree")
    tree.show_root = False
    made: dict[str, Any] = {}
    for row in flatten(app.model, set()):
        view = app.model.nodes[row.node_id]
        parent = made.get(view.node.parent_id or "", tree.root)
        made[row.node_id] = parent.add(label(app, row.node_id), data=row.node_id,
                                       expand=True)
    tree._legion_nodes = made  # type: ignore[attr-defined]
    pane = app.main_screen.query_one("#tree-pane")  # same place, same layout rules
    await pane.mount(tree, after=app.tree_header)
    await app.railway.remove()
    return tree


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(
    nodes: int, size: tuple[int, int], textual_tree: bool, gc_tuned: bool,
    incremental: bool = False,
) -> dict[str, list[float]]:
    app, clock, live = streaming_app(nodes, gc_tuned)
    model = app.model
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        alt = await swap_in_textual_tree(app) if textual_tree else None
        await pilot.pause()
        out = io.StringIO()
        render = incremental_frame if incremental else full_frame
        frame = 0
        for frame in range(10):  # warm caches, styles, numpy buffers
            stream(model, clock, live, frame)
            render(app, alt, out)
        times: list[float] = []
        cpu: list[float] = []
        textual: list[float] = []  # the same screen composited again, every cache fresh
        textual_cpu: list[float] = []
        for _ in range(TIMED_FRAMES):
            frame += 1
            stream(model, clock, live, frame)
            out.seek(0)
            out.truncate()
            t0, c0 = time.perf_counter(), time.thread_time()
            render(app, alt, out)
            cpu.append((time.thread_time() - c0) * 1000.0)
            times.append((time.perf_counter() - t0) * 1000.0)
            if not (incremental or textual_tree) and gc_tuned:  # the frames it is printed for
                t0, c0 = time.perf_counter(), time.thread_time()
                composite(app, out)
                textual_cpu.append((time.thread_time() - c0) * 1000.0)
                textual.append((time.perf_counter() - t0) * 1000.0)
        allocs: list[float] = []
        tracemalloc.start()
        for _ in range(ALLOC_FRAMES):
            frame += 1
            stream(model, clock, live, frame)
            out.seek(0)
            out.truncate()
            tracemalloc.reset_peak()
            start, _peak = tracemalloc.get_traced_memory()
            render(app, alt, out)
            _now, peak = tracemalloc.get_traced_memory()
            allocs.append((peak - start) / 1024.0)
        tracemalloc.stop()
        ansi_bytes = len(out.getvalue().encode())
    gc.unfreeze()  # back to CPython's defaults for the next configuration
    gc.set_threshold(*DEFAULT_GC)
    return {"times": times, "cpu": cpu, "allocs": allocs, "ansi": [ansi_bytes / 1024.0],
            "textual": textual, "textual_cpu": textual_cpu}  # fmt: skip


def floor_frame(app: App[None], out: io.StringIO) -> None:
    """A full frame of an app with nothing but its screen: styles cache cleared, a full
    update composited and turned into ANSI."""
    app.screen._styles_cache.clear()
    composite(app, out)


async def textual_floor(size: tuple[int, int]) -> dict[str, list[float]]:
    """ms of full frames of an empty Textual screen of `size`."""
    app: App[None] = App()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        out = io.StringIO()
        times: list[float] = []
        cpu: list[float] = []
        for frame in range(10 + TIMED_FRAMES):
            out.seek(0)
            out.truncate()
            t0, c0 = time.perf_counter(), time.thread_time()
            floor_frame(app, out)
            if frame >= 10:
                cpu.append((time.thread_time() - c0) * 1000.0)
                times.append((time.perf_counter() - t0) * 1000.0)
    return {"times": times, "cpu": cpu}


def summary(samples: dict[str, list[float]]) -> dict[str, float]:
    return {
        "median": statistics.median(samples["times"]),
        "p95": percentile(samples["times"], 0.95),
        "cpu": statistics.median(samples["cpu"]),
        "alloc": statistics.median(samples.get("allocs", [0.0])),
        "ansi": statistics.median(samples.get("ansi", [0.0])),
        "textual": statistics.median(samples.get("textual") or [0.0]),
        "textual_cpu": statistics.median(samples.get("textual_cpu") or [0.0]),
    }


def report(name: str, r: dict[str, float]) -> None:
    print(f"{name} median: {r['median']:.2f} ms")
    print(f"{name} p95: {r['p95']:.2f} ms")
    print(f"{name} CPU median: {r['cpu']:.2f} ms")
    print(f"{name} alloc per frame: {r['alloc']:.0f} KB")
    print(f"{name} ansi per frame: {r['ansi']:.0f} KB")


# (size, nodes, tree, gc tuned, incremental); tree "floor" is Textual's empty screen
Config = tuple[tuple[int, int], int, str, bool, bool]


SIZES = ((120, 40), (200, 60))
NODE_COUNTS = (200, 1000, 10_000)


def configurations(sizes: Sequence[tuple[int, int]], quick: bool) -> list[Config]:
    """Every configuration; `quick`: the railway with the app's gc tuning only (what the
    budgets are about), for a before/after while cutting."""
    configs: list[Config] = []
    for size in sizes:
        configs.append((size, 0, "floor", True, False))
        for nodes in NODE_COUNTS:
            trees = ("railway", "textual-Tree") if nodes <= 1000 and not quick else ("railway",)
            if nodes <= 1000 and not quick:
                configs.append((size, nodes, "railway", False, False))
            configs += [(size, nodes, tree, True, False) for tree in trees]
            configs += [(size, nodes, tree, True, True) for tree in trees]
    return configs


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--size", action="append", metavar="WxH",
                        help="only this size (repeatable; default: 120x40 and 200x60)")
    parser.add_argument("--quick", action="store_true",
                        help="the railway with the app's gc tuning only (no Textual Tree, "
                             "no default-gc rows)")  # fmt: skip
    return parser.parse_args()


async def main() -> None:
    args = options()
    sizes = tuple(
        (int(w), int(h)) for w, h in (s.split("x") for s in args.size)
    ) if args.size else SIZES
    rounds = args.rounds
    # Round-robin: a burst of load from the machine's other users lands in one round of
    # each configuration it meets, not in all the frames of one.
    samples: dict[Config, dict[str, list[float]]] = {}
    for _round in range(rounds):
        for config in configurations(sizes, args.quick):
            size, nodes, tree, gc_tuned, incremental = config
            if tree == "floor":
                got = await textual_floor(size)
            else:
                got = await measure(nodes, size, tree != "railway", gc_tuned, incremental)
            for key, values in got.items():
                samples.setdefault(config, {}).setdefault(key, []).extend(values)
    results = {config: summary(s) for config, s in samples.items()}
    print(f"frame rounds: {rounds} rounds of {TIMED_FRAMES} frames per configuration")
    for config, r in results.items():
        size, nodes, tree, gc_tuned, incremental = config
        size_name = f"{size[0]}x{size[1]}"
        if tree == "floor":
            print(f"frame {size_name} Textual's floor (empty screen) median: "
                  f"{r['median']:.2f} ms")  # fmt: skip
            print(f"frame {size_name} Textual's floor (empty screen) CPU median: "
                  f"{r['cpu']:.2f} ms")  # fmt: skip
            continue
        how = ("incremental " if incremental else "") + (
            "(app gc tuning)" if gc_tuned else "(CPython default gc)"
        )
        report(f"frame {size_name} {nodes} nodes {tree} {how}", r)
        if tree == "railway" and gc_tuned and not incremental:
            textual, textual_cpu = r["textual"], r["textual_cpu"]
            print(f"frame {size_name} {nodes} nodes railway (app gc tuning) ours: "
                  f"{r['median'] - textual:.2f} ms + Textual's compositing "
                  f"{textual:.2f} ms")  # fmt: skip
            print(f"frame {size_name} {nodes} nodes railway (app gc tuning) ours CPU: "
                  f"{r['cpu'] - textual_cpu:.2f} ms + Textual's compositing "
                  f"{textual_cpu:.2f} ms")  # fmt: skip
    for size in sizes:
        size_name = f"{size[0]}x{size[1]}"
        small = results[(size, 200, "railway", True, False)]
        for nodes in (1000, 10_000):
            big = results[(size, nodes, "railway", True, False)]
            print(f"frame {size_name} railway {nodes}/200 node ratio: "
                  f"{big['median'] / small['median']:.2f} x "
                  f"(CPU {big['cpu'] / small['cpu']:.2f} x)")  # fmt: skip
        if args.quick:
            continue
        alt = results[(size, 1000, "textual-Tree", True, False)]["median"]
        big = results[(size, 1000, "railway", True, False)]["median"]
        print(f"frame {size_name} 1000 nodes textual-Tree/railway: {alt / big:.2f} x")


if __name__ == "__main__":
    with calibrated():
        asyncio.run(main())
