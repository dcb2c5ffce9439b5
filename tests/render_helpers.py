"""A canned legion for the galaxy and chart tests: fixed clock, deterministic series."""

from __future__ import annotations

import random
from collections.abc import Sequence

from rich.style import Style
from textual.app import App, ComposeResult
from textual.widget import Widget

from legion_tui.model import NodeStatus, Role
from legion_tui.model_records import Node
from legion_tui.render.inks import STYLES
from legion_tui.session.progress import RateSegment, SessionProgress
from legion_tui.state import LegionModel
from legion_tui.themes import palette, textual_themes

T0 = 1_700_000_000.0  # the run starts here; tests move a mutable clock from it


class Clock:
    """An injectable clock the test moves by hand."""

    def __init__(self, now: float = T0 + 120.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def node(nid: str, parent: str | None, role: Role, status: NodeStatus) -> Node:
    return Node(
        id=nid,
        run_id="run-1",
        parent_id=parent,
        name=nid,
        path=nid,
        role=role,
        kind="sim",
        backend="inprocess",
        status=status,
    )


def streaming(now: float, tok_s: float, seconds: float = 30.0) -> SessionProgress:
    """A session whose last `seconds` decoded at `tok_s`, in 3 s messages up to `now`."""
    segs = []
    t = now - seconds
    while t < now - 1e-9:
        segs.append(RateSegment(t, t + 3.0, round(tok_s * 3.0)))
        t += 3.0
    return SessionProgress(rate_series=segs)


def make_legion(
    clock: Clock,
    centurions: int = 3,
    workers: int = 4,
    *,
    seed: int = 7,
    settled_every: int = 3,
) -> LegionModel:
    """root → `centurions` → `workers` each; every `settled_every`-th worker settled."""
    rng = random.Random(seed)
    model = LegionModel("run-1", "sess", started_at=T0, clock=clock)
    model.upsert(node("root", None, "root", NodeStatus.RUNNING))
    model.set_progress("root", streaming(clock.now, 20.0))
    for c in range(centurions):
        cid = f"c{c}"
        model.upsert(node(cid, "root", "centurion", NodeStatus.RUNNING))
        model.set_progress(cid, streaming(clock.now, rng.uniform(5, 30)))
        for w in range(workers):
            wid = f"{cid}w{w}"
            ended = settled_every and (w % settled_every == settled_every - 1)
            status = NodeStatus.SETTLED if ended else NodeStatus.RUNNING
            model.upsert(node(wid, cid, "worker", status))
            model.set_progress(wid, streaming(clock.now, rng.uniform(20, 150)))
    return model


def dark_styles() -> Sequence[Style]:
    return STYLES.table(palette("legion-dark"))


class OneWidgetApp(App[None]):
    """Mounts one widget filling the screen, with a legion theme registered."""

    def __init__(self, widget: Widget, theme: str = "legion-dark") -> None:
        super().__init__()
        self._widget = widget
        for t in textual_themes():
            self.register_theme(t)
        self.theme = theme

    def compose(self) -> ComposeResult:
        yield self._widget
