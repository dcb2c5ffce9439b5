"""Run the whole suite N times, optionally under CPU load, and count failures per test.

    python tools/soak.py [--runs N] [--load K] [--logs DIR] [-- PYTEST ARGS]

`--load K` starts K busy processes (one spinning core each) for the whole soak: on this
project's 2-core machine, 2 of them is the load under which races between the
supervisor's tasks show. A flake this finds is a race to fix — in the product, or in what
the test waits on — never a retry or a longer sleep. Exit 1 when any run failed.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import signal
import subprocess
import sys
import time

FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)
SPIN = "while True: pass"


def _stopped(signum: int, _frame: object) -> None:
    # Through `finally`: the busy processes end with the soak (a `kill` of the soak left
    # them spinning), and `subprocess.run` kills the pytest it was waiting for.
    raise SystemExit(128 + signum)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=int, default=0, help="busy processes beside it")
    parser.add_argument("--logs", default="", help="folder for each failed run's whole output")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stopped)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # a file is read as it grows
    busy = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.load)]
    failures: collections.Counter[str] = collections.Counter()
    failed_runs = 0
    env = {**os.environ, "TEXTUAL_ANIMATIONS": "none"}
    try:
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
                 *args.pytest_args],
                capture_output=True,
                text=True,
                env=env,
            )
            names = FAILED.findall(result.stdout)
            failures.update(names)
            failed_runs += result.returncode != 0
            tail = result.stdout.strip().splitlines()[-1:] or ["(no output)"]
            print(f"run {run}/{args.runs}: {tail[0]} ({time.monotonic() - started:.0f} s)")
            for name in names:
                print(f"  failed: {name}")
            if args.logs and result.returncode != 0:
                # The names alone do not say why; the tracebacks are in the run's output.
                os.makedirs(args.logs, exist_ok=True)
                path = os.path.join(args.logs, f"run-{run}.txt")
                with open(path, "w", encoding="utf-8") as log:
                    log.write(result.stdout + result.stderr)
                print(f"  output: {path}")
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    print(f"\n{failed_runs} of {args.runs} runs failed (load: {args.load} busy processes)")
    for name, count in failures.most_common():
        print(f"{count:3d}× {name}")
    return 1 if failed_runs else 0


if __name__ == "__main__":
    sys.exit(main())
