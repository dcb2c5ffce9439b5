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

DRAW_HZ = 4.0


def step_of(now: float) -> float:
    """The start of the step `now` falls in (seconds, on the model's clock)."""
    return math.floor(now * DRAW_HZ) / DRAW_HZ
