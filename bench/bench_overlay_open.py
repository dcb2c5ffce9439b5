"""Enter (the detail overlay) and `/` (the filter line) → first frame, in-process.

The dashboard over `tests.app_helpers.big_model(N)` on a headless 200×60 screen, the
selected agent a process child with a session file and a terminal log (the Terminal
tab, as in bench_live_agents.py). A key is timed from its press to the first frame the
app composes that shows what the key opened (the compositor's update, before the ANSI
it would be written as: a headless app writes none); then Esc, and the next sample once
the app is idle. Each key three times: the wall time, the process's CPU time over it
(which a busy shared machine moves less), and the CPU until the app is idle again (the
work queued behind the first frame, which a live host's other work waits on). Medians
of many samples, one figure per line; it has no alternative to stand beside, so to A/B
a change run it on a worktree of each commit, alternated:

    PYTHONPATH=. .venv/bin/python bench/bench_overlay_open.py --agents 1000 --samples 40
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from app_helpers import SESSION_LINES, TERMINAL_LOG, FakeOps, big_model, fixed_clock
from calibration import calibrated
from textual.screen import Screen
from textual.widgets import Tabs

from legion_tui.widgets.overlay.detail import DetailScreen

SIZE = (200, 60)
TIMEOUT_S = 30.0


def _run_dir(root: Path, node_id: str) -> Path:
    (root / "sessions").mkdir(parents=True)
    (root / "terminal").mkdir(parents=True)
    lines = [json.dumps(entry) for entry in SESSION_LINES]
    (root / "sessions" / f"{node_id}.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    (root / "terminal" / f"{node_id}.log").write_bytes(TERMINAL_LOG)
    return root


async def _measure(agents: int, samples: int, keys: list[str]) -> dict[str, list[float]]:
    from legion_tui.dashboard.app import make_app

    model = big_model(agents)
    node_id = "b20"  # a live worker
    view = model.nodes[node_id]
    model.upsert(replace(view.node, backend="process", session_file=f"sessions/{node_id}.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _run_dir(Path(tmp), node_id)
        app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False,
                       run_dir=run_dir)  # fmt: skip
        shown: dict[str, tuple[float, float]] = {}
        display = app._display

        def timed_display(screen: Screen[Any], renderable: Any) -> None:
            # The first frame of each kind after its key: the overlay's with its tab
            # bar laid out, the main screen's with the filter line open.
            now = (time.perf_counter(), time.process_time())
            if renderable is not None:
                if isinstance(screen, DetailScreen) and any(
                    isinstance(w, Tabs) for w in screen._compositor.visible_widgets
                ):
                    shown.setdefault("enter", now)
                elif screen is app.main_screen and app.main_screen.filter_line.display:
                    shown.setdefault("/", now)
            display(screen, renderable)

        app._display = timed_display  # type: ignore[method-assign]
        took: dict[str, list[float]] = {
            k: [] for key in keys for k in (key, f"{key} CPU", f"{key} CPU until idle")
        }
        async with app.run_test(size=SIZE) as pilot:
            app.railway.select(node_id)
            await pilot.pause()
            for _ in range(samples):
                for key in keys:
                    await pilot.pause()
                    shown.clear()
                    t0, c0 = time.perf_counter(), time.process_time()
                    await pilot.press(key)
                    while key not in shown:
                        if time.perf_counter() - t0 > TIMEOUT_S:
                            raise TimeoutError(f"{key}: no frame showed it in {TIMEOUT_S} s")
                        await asyncio.sleep(0.001)
                    took[key].append((shown[key][0] - t0) * 1000)
                    took[f"{key} CPU"].append((shown[key][1] - c0) * 1000)
                    # What the opening costs the one event loop in all, the work queued
                    # behind its first frame included: a live host's other work waits.
                    await pilot.pause()
                    took[f"{key} CPU until idle"].append((time.process_time() - c0) * 1000)
                    await pilot.press("escape")
                    await pilot.pause()
                    await asyncio.sleep(0.05)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--keys", nargs="+", choices=["enter", "/"], default=["enter", "/"])
    args = parser.parse_args()
    with calibrated():
        for agents in args.agents:
            took = asyncio.run(_measure(agents, args.samples, args.keys))
            for key, values in took.items():
                values.sort()
                what = "idle" if key.endswith("until idle") else "first frame"
                key = key.removesuffix(" until idle")
                print(f"N={agents} {key} → {what} p50: {statistics.median(values):.1f} ms")
                print(f"N={agents} {key} → {what} p95: "
                      f"{values[max(0, int(len(values) * 0.95) - 1)]:.1f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
