"""The galaxy: placement, determinism, clock motion, stars' size/ink, the selection mark."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from render_helpers import Clock, dark_styles, make_legion, node, streaming

from legion_tui.model import NodeStatus
from legion_tui.render.feed import ChangeFeed
from legion_tui.render.galaxy import STENCIL_COUNT, GalaxyRenderer
from legion_tui.render.inks import ROLE_BRIGHT_INK, ROLE_INK, Ink
from legion_tui.render.steps import DRAW_HZ, step_of
from legion_tui.state import LegionModel

pytestmark = pytest.mark.host


def frame_text(galaxy: GalaxyRenderer, model: LegionModel, now: float, **kw: object) -> list[str]:
    rows = galaxy.render(model, now, 80, 24, dark_styles(), **kw)  # type: ignore[arg-type]
    return ["".join(seg.text for seg in row) for row in rows]


def star_cell(galaxy: GalaxyRenderer, node_id: str) -> tuple[int, int]:
    k = galaxy.star_ids.index(node_id)
    return int(galaxy.star_x[k]) >> 1, int(galaxy.star_y[k]) >> 2


def test_same_state_and_clock_draw_the_same_frame_in_a_fresh_renderer() -> None:
    clock = Clock()
    model = make_legion(clock)
    a = frame_text(GalaxyRenderer(), model, clock.now, selected="c0")
    b = frame_text(GalaxyRenderer(), model, clock.now, selected="c0")
    assert a == b
    assert any(ch != " " for row in a for ch in row)


def test_orbit_angles_do_not_depend_on_the_process_hash_seed() -> None:
    # str hash() is salted per process; the layout must use a stable hash instead.
    script = (
        "import sys; sys.path.insert(0, 'tests')\n"
        "from render_helpers import Clock, make_legion, dark_styles\n"
        "from legion_tui.render.galaxy import STENCIL_COUNT, GalaxyRenderer\n"
        "c = Clock(); m = make_legion(c); g = GalaxyRenderer()\n"
        "g.render(m, c.now, 60, 20, dark_styles())\n"
        "print([int(x) for x in g.star_x[:len(g.star_ids)]])\n"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed},
            cwd=Path(__file__).resolve().parent.parent,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outs) == 1


def test_orbits_advance_with_the_clock() -> None:
    clock = Clock()
    model = make_legion(clock)
    galaxy = GalaxyRenderer()
    before = frame_text(galaxy, model, clock.now)
    x0 = galaxy.star_x[: len(galaxy.star_ids)].copy()
    after = frame_text(galaxy, model, clock.now + 5.0)
    assert before != after
    assert not np.array_equal(x0, galaxy.star_x[: len(galaxy.star_ids)])
    # The centre does not move; every orbiting star does.
    assert galaxy.star_ids[0] == "root"
    assert x0[0] == galaxy.star_x[0]


def test_one_frame_per_step_and_what_came_later_is_drawn_by_the_next_step() -> None:
    clock = Clock()
    model = make_legion(clock)
    feed = ChangeFeed(model)
    feed.take()
    galaxy = GalaxyRenderer()
    step = step_of(clock.now)
    first = galaxy.render(model, step, 80, 24, dark_styles(), changed=frozenset())
    x0 = galaxy.star_x[: len(galaxy.star_ids)].copy()
    # Later in the step a worker ends: the step's frame stands, the change is owed.
    model.upsert(node("c0w0", "c0", "worker", NodeStatus.SETTLED))
    model.flush()
    later = step + 0.9 / DRAW_HZ
    assert galaxy.render(model, later, 80, 24, dark_styles(), changed=feed.take()) is first
    assert galaxy.frames == 1 and galaxy.steps.owes()
    # The next step draws it, as a renderer that drew every frame would (the orbits
    # where that step puts them).
    next_step = step + 1.0 / DRAW_HZ
    got = galaxy.render(model, next_step, 80, 24, dark_styles(), changed=feed.take())
    want = GalaxyRenderer().render(model, next_step, 80, 24, dark_styles())
    assert [[s.text for s in row] for row in got] == [[s.text for s in row] for row in want]
    assert galaxy.frames == 2 and not galaxy.steps.owes()
    k = galaxy.star_ids.index("c0w0")
    assert galaxy.canvas.inks[star_cell(galaxy, "c0w0")[::-1]] == Ink.DIM
    assert int(galaxy._level[k]) == 0
    moved = galaxy.render(model, step + 5.0, 80, 24, dark_styles(), changed=feed.take())
    assert moved is not got and not np.array_equal(x0, galaxy.star_x[: len(galaxy.star_ids)])


def test_root_centre_centurions_orbit_root_workers_orbit_their_centurion() -> None:
    clock = Clock()
    model = make_legion(clock, centurions=4, workers=3)
    galaxy = GalaxyRenderer()
    galaxy.render(model, clock.now, 100, 40, dark_styles())
    pos = {
        nid: (float(galaxy._fx[k]), float(galaxy._fy[k])) for k, nid in enumerate(galaxy.star_ids)
    }
    assert pos["root"] == (100.0, 80.0)  # the centre of the 200 × 160 px canvas
    stretch = galaxy._stretch

    def dist(a: str, b: str) -> float:
        (ax, ay), (bx, by) = pos[a], pos[b]
        return math.hypot((ax - bx) / stretch, ay - by)

    ring = {round(dist(f"c{c}", "root"), 6) for c in range(4)}
    assert len(ring) == 1 and next(iter(ring)) > 20
    for c in range(4):
        moons = {round(dist(f"c{c}w{w}", f"c{c}"), 6) for w in range(3)}
        assert len(moons) == 1
        assert 0 < next(iter(moons)) < next(iter(ring))


def _inks_around(galaxy: GalaxyRenderer, cell: tuple[int, int], radius: int) -> set[int]:
    x, y = cell
    inks = galaxy.canvas.inks
    y0, x0 = max(y - radius, 0), max(x - radius, 0)
    return set(inks[y0 : y + radius + 1, x0 : x + radius + 1].ravel().tolist())


def test_selected_star_wears_the_accent_ring_and_only_it() -> None:
    clock = Clock()
    model = make_legion(clock)
    galaxy = GalaxyRenderer()
    galaxy.render(model, clock.now, 100, 40, dark_styles())
    assert Ink.ACCENT not in galaxy.canvas.inks
    galaxy.render(model, clock.now, 100, 40, dark_styles(), selected="c1")
    accent_cells = np.argwhere(galaxy.canvas.inks == Ink.ACCENT)
    assert len(accent_cells) >= 4
    cx, cy = star_cell(galaxy, "c1")
    # Every accent cell is within the ring's reach (4 px = 2 columns, 1 row) of c1.
    assert all(abs(int(x) - cx) <= 3 and abs(int(y) - cy) <= 2 for y, x in accent_cells)
    # An unknown id marks nothing and does not fail.
    galaxy.render(model, clock.now, 100, 40, dark_styles(), selected="nobody")
    assert Ink.ACCENT not in galaxy.canvas.inks


def test_star_size_and_ink_follow_live_tok_s_and_ended_stars_are_dim() -> None:
    clock = Clock()
    model = LegionModel("run-1", "s", started_at=clock.now - 100, clock=clock)
    model.upsert(node("root", None, "root", NodeStatus.RUNNING))
    for nid, status in (("fast", NodeStatus.RUNNING), ("idle", NodeStatus.RUNNING)):
        model.upsert(node(nid, "root", "centurion", status))
    model.upsert(node("done", "root", "centurion", NodeStatus.SETTLED))
    model.set_progress("fast", streaming(clock.now, 200.0))
    model.set_progress("done", streaming(clock.now, 200.0))
    galaxy = GalaxyRenderer()
    galaxy.render(model, clock.now, 120, 40, dark_styles())
    lit = {nid: int(STENCIL_COUNT[galaxy._level[k]]) for k, nid in enumerate(galaxy.star_ids)}
    assert lit["fast"] > lit["idle"] > lit["done"] == 1
    assert Ink.CENTURION_BRIGHT in _inks_around(galaxy, star_cell(galaxy, "fast"), 0)
    assert ROLE_INK["centurion"] in _inks_around(galaxy, star_cell(galaxy, "idle"), 0)
    assert _inks_around(galaxy, star_cell(galaxy, "done"), 0) == {Ink.DIM}
    assert ROLE_BRIGHT_INK["centurion"] == Ink.CENTURION_BRIGHT


def test_a_cell_takes_the_ink_of_its_brightest_star() -> None:
    # Two stars forced into one cell: a 1×1 canvas holds everything.
    clock = Clock()
    model = LegionModel("run-1", "s", started_at=clock.now - 100, clock=clock)
    model.upsert(node("root", None, "root", NodeStatus.SETTLED))
    model.upsert(node("w", "root", "worker", NodeStatus.RUNNING))
    model.set_progress("w", streaming(clock.now, 90.0))
    galaxy = GalaxyRenderer()
    galaxy.render(model, clock.now, 1, 1, dark_styles())
    assert galaxy.canvas.inks[0, 0] == Ink.WORKER_BRIGHT
    model.upsert(node("w", "root", "worker", NodeStatus.SETTLED))
    galaxy.render(model, clock.now + 1.0 / DRAW_HZ, 1, 1, dark_styles())  # the next step
    assert galaxy.canvas.inks[0, 0] == Ink.DIM


def test_star_at_finds_the_nearest_star() -> None:
    clock = Clock()
    model = make_legion(clock)
    galaxy = GalaxyRenderer()
    assert galaxy.star_at(0, 0) is None  # nothing drawn yet
    galaxy.render(model, clock.now, 100, 40, dark_styles())
    for nid in ("root", "c2", "c0w1"):
        col, row = star_cell(galaxy, nid)
        assert galaxy.star_at(col, row) == nid


def test_new_nodes_join_the_galaxy_on_the_next_frame() -> None:
    clock = Clock()
    model = make_legion(clock, centurions=1, workers=1)
    galaxy = GalaxyRenderer()
    galaxy.render(model, clock.now, 60, 20, dark_styles())
    assert len(galaxy.star_ids) == 3
    for i in range(40):  # past the star buffers' first capacity
        model.upsert(node(f"x{i}", "c0", "scout", NodeStatus.RUNNING))
    galaxy.render(model, clock.now, 60, 20, dark_styles(), selected="x39")
    assert len(galaxy.star_ids) == 43 and "x39" in galaxy.star_ids
    assert Ink.ACCENT in galaxy.canvas.inks


def test_empty_legion_draws_blank_rows() -> None:
    model = LegionModel("run-1", "s", started_at=0.0, clock=lambda: 0.0)
    rows = GalaxyRenderer().render(model, 0.0, 30, 5, dark_styles())
    assert ["".join(s.text for s in r) for r in rows] == [" " * 30] * 5


def test_a_live_star_dims_to_idle_as_its_last_message_ages() -> None:
    # Only the clock moves (no model change): the live tok/s of the last seconds falls
    # to zero, and the star shrinks from a bright disc to the idle plus.
    clock = Clock()
    model = LegionModel("run-1", "s", started_at=clock.now - 100, clock=clock)
    model.upsert(node("root", None, "root", NodeStatus.SETTLED))
    model.upsert(node("w", "root", "worker", NodeStatus.RUNNING))
    model.set_progress("w", streaming(clock.now, 150.0))
    galaxy = GalaxyRenderer()
    galaxy.render(model, clock.now, 60, 20, dark_styles())
    k = galaxy.star_ids.index("w")
    assert int(galaxy._level[k]) == 3
    galaxy.render(model, clock.now + 60.0, 60, 20, dark_styles())
    assert int(galaxy._level[k]) == 1
    assert Ink.WORKER in galaxy.canvas.inks and Ink.WORKER_BRIGHT not in galaxy.canvas.inks
