"""The 1/4 s steps the ambient panels move in: the galaxy's orbits, the chart's frames.

Both show motion on the scale of seconds: a star drifts 1–2 braille dots a second, a
chart column is a second of the last minute. With fifty agents streaming the dashboard
repaints up to 30 times a second, and drawing those panels that often moves nothing a
reader can see: each draws once per step, and a repaint later in the step gets the
step's picture back. The app ticks at this rate, so what changed after a step's
picture is drawn by the next step.
"""

from __future__ import annotations

import math

from rich.segment import Segment

DRAW_HZ = 4.0


def step_of(now: float, phase: float = 0.0) -> float:
    """The start of the step `now` falls in (seconds, on the model's clock), for steps
    that start `phase` of a step late: the chart's start half a step after the galaxy's,
    so that a streaming legion's repaints draw one of the two at a time, not both in
    one long repaint every step."""
    return (math.floor(now * DRAW_HZ - phase) + phase) / DRAW_HZ


class StepFrames:
    """A panel's frame per step (its steps `phase` of a step late): the last frame drawn,
    what it was drawn from, and the changes (node ids) that came after it, owed to the
    next step's frame."""

    def __init__(self, phase: float = 0.0) -> None:
        self.phase = phase
        self._key: tuple[object, ...] | None = None
        self._sources: tuple[object, ...] = ()
        self._rows: list[list[Segment]] = []
        self._owed: frozenset[str] | None = frozenset()  # None: unknown, re-read all
        self._behind = False  # a change not handed in as ids (they wait in a ChangeFeed)

    def step(self, now: float) -> float:
        """The start of this panel's step that `now` falls in."""
        return step_of(now, self.phase)

    def holds(self, now: float) -> bool:
        """The last frame was drawn in the step `now` falls in: a change can wait."""
        return self._key is not None and self._key[0] == self.step(now)

    def owe(self) -> None:
        """A change came that the next step's frame must draw; its ids are left where
        the frame reads them (the panel's ChangeFeed)."""
        self._behind = True

    def kept(
        self, key: tuple[object, ...], sources: tuple[object, ...], changed: frozenset[str] | None
    ) -> list[list[Segment]] | None:
        """The last frame, if it was drawn for `key` (its step first) from `sources`
        (compared by identity); `changed` is then owed to the next frame."""
        if key != self._key:  # (a key equal to the kept one comes with as many sources)
            return None
        if any(a is not b for a, b in zip(sources, self._sources, strict=True)):
            return None
        if self._owed is not None:
            self._owed = None if changed is None else self._owed | changed
        return self._rows

    def changes(self, changed: frozenset[str] | None) -> frozenset[str] | None:
        """What the frame being drawn must re-read: `changed` and what is owed (None if
        either is unknown). Nothing is owed after it."""
        owed, self._owed, self._behind = self._owed, frozenset(), False
        if owed is None or changed is None:
            return None
        return owed | changed if owed else changed

    def keep(
        self, key: tuple[object, ...], sources: tuple[object, ...], rows: list[list[Segment]]
    ) -> list[list[Segment]]:
        """Remember the frame just drawn; returns its rows."""
        self._key, self._sources, self._rows = key, sources, rows
        return rows

    def owes(self) -> bool:
        """Changes came after the last frame was drawn (the next step draws them)."""
        return self._behind or self._owed is None or bool(self._owed)
