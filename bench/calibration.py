"""Figures that compare across machines (issue 16 item 1): every bench runs inside
`calibrated()`, which prints, before any figure,

  * the machine: CPU model, cores (and how many this process may use), load average;
  * the calibration: a fixed pure-Python workload and a fixed numpy workload, each timed
    in this same process (median of many runs), in ms;

and then writes each time figure the bench prints (`name: VALUE ms|us|s ...`) also in
calibration units: `[x.xxx cal]` is the figure divided by the workload's median, so a
machine twice as slow prints twice the ms and the same cal. At the end it prints the
load average again and the workload timed once more: a calibration that drifted by more
than a few % says the machine's load changed under the bench.

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
from typing import Literal, TextIO

Unit = Literal["python", "numpy"]

RUNS = 101  # workload runs per calibration (≈ 0.5 s python, 1 s numpy); the median is the unit
FIGURE = re.compile(r"^(?P<head>[^:]*: )(?P<value>-?\d+(?:\.\d+)?) (?P<unit>ms|us|s)\b")
TO_MS = {"ms": 1.0, "us": 1e-3, "s": 1e3}


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


def time_ms(work: Callable[[], object], runs: int = RUNS) -> float:
    work()  # warm: imports, caches, allocator
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        work()
        samples.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(samples)


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
    python_ms: float
    numpy_ms: float
    unit: Unit

    @property
    def unit_ms(self) -> float:
        return self.python_ms if self.unit == "python" else self.numpy_ms

    def annotate(self, line: str) -> str:
        """`line` with its time figure also in calibration units (others unchanged)."""
        m = FIGURE.match(line)
        if m is None:
            return line
        ms = float(m["value"]) * TO_MS[m["unit"]]
        return f"{line} [{ms / self.unit_ms:.3f} cal]"


def measure(unit: Unit = "python") -> Calibration:
    return Calibration(time_ms(python_workload), time_ms(numpy_workload), unit)


class _Annotating(io.TextIOBase):
    """stdout, each whole line passed through `Calibration.annotate`."""

    def __init__(self, out: TextIO, calibration: Calibration) -> None:
        self.out = out
        self.calibration = calibration
        self.partial = ""

    def write(self, text: str) -> int:
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()
        for line in lines:
            self.out.write(self.calibration.annotate(line) + "\n")
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def close_line(self) -> None:
        if self.partial:
            self.out.write(self.calibration.annotate(self.partial))
            self.partial = ""
        self.out.flush()


@contextmanager
def calibrated(unit: Unit = "python") -> Iterator[Calibration]:
    """Print the machine and the calibration, then run the bench with every time figure
    also in calibration units; the calibration is timed again at the end."""
    print(machine_line())
    cal = measure(unit)
    print(f"calibration python workload: {cal.python_ms:.3f} ms (median of {RUNS})")
    print(f"calibration numpy workload: {cal.numpy_ms:.3f} ms (median of {RUNS})")
    print(f"calibration unit: 1 cal = the {unit} workload's {cal.unit_ms:.3f} ms", flush=True)
    real = sys.stdout
    annotating = _Annotating(real, cal)
    sys.stdout = annotating  # type: ignore[assignment]
    try:
        yield cal
    finally:
        annotating.close_line()
        sys.stdout = real
        again = measure(unit)
        drift = (again.unit_ms / cal.unit_ms - 1.0) * 100.0
        print(
            f"calibration at the end: {again.unit_ms:.3f} ms ({drift:+.1f} %) · "
            f"load {load_average()}",
            flush=True,
        )
