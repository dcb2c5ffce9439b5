"""Figures that compare across machines (issue 16 item 1): every bench runs inside
`calibrated()`, which prints, before any figure,

  * the machine: CPU model, cores (and how many this process may use), load average;
  * the calibration: a fixed pure-Python workload and a fixed numpy workload, each timed
    in this same process (median of many runs), in ms;

and then writes each time figure the bench prints (`name: VALUE ms|us|s ...`) also in
calibration units: `[x.xxx cal]` is the figure divided by the workload's median, so a
machine twice as slow prints twice the ms and the same cal. The workloads run at the
bench's start and again at its end, and the unit is the lower of the two medians: the
bench's lines are printed after the second (a start and an end far apart say the machine's
load changed under the bench), then the load average at the end.

A bench whose figures are numpy-bound (the galaxy, the chart) asks `unit="numpy"`.
"""

from __future__ import annotations

import io
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

Unit = Literal["python", "numpy"]

RUNS = 51  # workload runs at the start and again at the end (≈ 0.2 s python, 0.5 s numpy)
FIGURE = re.compile(r"^(?P<head>[^:]*: )(?P<value>-?\d+(?:\.\d+)?) (?P<unit>ms|us|s)\b")
TO_MS = {"ms": 1.0, "us": 1e-3, "s": 1e3}

# Instruction counts (valgrind's callgrind): the figures that do not move with the load.
# The same hash seed in every counted run: set and dict orders, so the work, repeat exactly.
CALLGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")
COUNTED_ENV = {"PYTHONHASHSEED": "0"}
_COLLECTED = re.compile(r"Collected : (\d+)")


def collected(stderr: str) -> int | None:
    """The instructions callgrind says it counted, from its stderr; None if it did not say."""
    found = _COLLECTED.search(stderr)
    return int(found.group(1)) if found is not None else None


def python_workload() -> int:
    """Fixed pure-Python work, the kind a frame does: objects, dicts, strings, sorting
    (≈ 5 ms on a 2020s laptop core)."""
    rows = [(f"node-{i % 97}", i * 7919 % 1000, str(i)) for i in range(6000)]
    by_name: dict[str, int] = {}
    for name, rank, text in rows:
        by_name[name] = by_name.get(name, 0) + rank + len(text)
    rows.sort(key=lambda r: (r[1], r[0]))
    return sum(by_name.values()) + len("".join(r[2] for r in rows[:2000]))


def numpy_workload() -> float:
    """Fixed numpy work, the kind the galaxy and the chart do: elementwise arithmetic,
    masks, reductions and a bit-pack on arrays of a few hundred KB; no BLAS (its threads
    would make the figure depend on the core count)."""
    import numpy as np

    rng = np.random.default_rng(16)
    a = rng.random((240, 400))
    total = 0.0
    for _ in range(8):
        b = np.sqrt(a * 3.0 + 1.0)
        mask = b > 1.5
        packed = np.packbits(mask, axis=1)
        total += float(b[mask].sum()) + float(packed.sum()) + float(np.cumsum(a, axis=0)[-1, 0])
    return total


def samples_ms(work: Callable[[], object], runs: int = RUNS) -> list[float]:
    work()  # warm: imports, caches, allocator
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        work()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def machine_line() -> str:
    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    return (
        f"machine: {cpu_model()} · {cores} cores ({usable} usable) · "
        f"load {load_average()} at start · Python {sys.version.split()[0]}"
    )


@dataclass
class Calibration:
    """The workloads' times: at the bench's start, then (appended) at its end."""

    python: list[float]
    numpy: list[float]
    unit: Unit

    @property
    def unit_ms(self) -> float:
        """The lower of the start's and the end's medians: the machine's speed when the
        other users of its cores disturbed it least (one burst of load at either end
        would otherwise move every figure's calibrated value)."""
        runs = self.python if self.unit == "python" else self.numpy
        return min(statistics.median(runs[:RUNS]), statistics.median(runs[RUNS:] or runs))

    def annotate(self, line: str) -> str:
        """`line` with its time figure also in calibration units (others unchanged)."""
        m = FIGURE.match(line)
        if m is None:
            return line
        ms = float(m["value"]) * TO_MS[m["unit"]]
        return f"{line} [{ms / self.unit_ms:.3g} cal]"


def measure(unit: Unit) -> Calibration:
    return Calibration(samples_ms(python_workload), samples_ms(numpy_workload), unit)


class _Held(io.TextIOBase):
    """stdout held until the end, when the calibration is known."""

    def __init__(self) -> None:
        self.text = io.StringIO()

    def write(self, text: str) -> int:
        return self.text.write(text)


@contextmanager
def calibrated(unit: Unit = "python") -> Iterator[Calibration]:
    """Run the bench between two calibrations; then print the machine, the calibration
    (start, end; the lower is the unit) and the bench's own lines, each time figure also in
    calibration units. The lines are held until then (a load that changes during the
    bench moves both halves of the calibration the figures are divided by)."""
    print(machine_line(), flush=True)
    cal = measure(unit)
    held = _Held()
    real = sys.stdout
    sys.stdout = held  # type: ignore[assignment]
    try:
        yield cal
    finally:
        sys.stdout = real
        end = measure(unit)
        for name, first, last in (("python", cal.python, end.python),
                                  ("numpy", cal.numpy, end.numpy)):  # fmt: skip
            print(
                f"calibration {name} workload: {statistics.median(first):.3f} ms at the "
                f"start, {statistics.median(last):.3f} ms at the end (medians of {RUNS})"
            )
        cal.python += end.python
        cal.numpy += end.numpy
        print(f"calibration unit: 1 cal = the {unit} workload's {cal.unit_ms:.3f} ms (the lower)")
        for line in held.text.getvalue().splitlines():
            print(cal.annotate(line))
        print(f"load at the end: {load_average()}", flush=True)
