"""Shared helpers of the process/sim/backend tests: /proc scans and bounded polls."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from legion_tui.sim.clock import FakeClock

# An agent that leaves every kind of process the sweep must catch (SPEC §10):
# (a) a plain child, (b) a start_new_session child, (c) a double-forked setsid daemon,
# (d) a child ignoring SIGTERM. It writes "ready" once all four exist, then waits.
TREE_AGENT = r"""
import os, subprocess, sys, time
out = sys.argv[1]
sleeper = [sys.executable, "-c", "import time\nwhile True: time.sleep(1)"]
a = subprocess.Popen(sleeper)
b = subprocess.Popen(sleeper, start_new_session=True)
# The daemon and the stubborn child each say "ready" on a pipe once they are what the
# sweep must catch (exec'd; SIGTERM ignored): a readiness signal, not a guessed sleep.
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.set_inheritable(w, True)
        daemon = ("import os, sys, time\nos.write(int(sys.argv[1]), b'r')\n"
                  "while True: time.sleep(1)")
        os.execv(sys.executable, [sys.executable, "-c", daemon, str(w)])
    os._exit(0)
os.close(w)
# SIGTERM does not end it; it notes each one in `<out>.term` (which signal came first).
stubborn = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: open(sys.argv[1], 'a').write('TERM\\n'))\n"
    "print('ready', flush=True)\nwhile True: time.sleep(1)"
)
d = subprocess.Popen([sys.executable, "-c", stubborn, out + ".term"], stdout=subprocess.PIPE)
assert os.read(r, 1) == b"r"
assert d.stdout.readline() == b"ready\n"
with open(out, "w") as fh:
    fh.write("ready")
while True:
    time.sleep(1)
"""


def marked(run_id: str) -> list[int]:
    """Every live (non-zombie) process carrying LEGION_RUN_ID=<run_id>."""
    return by_env("LEGION_RUN_ID", run_id)


def by_env(key: str, value: str | None = None, prefix: str | None = None) -> list[int]:
    """Live (non-zombie) processes whose environment has KEY=value (or KEY=prefix…)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue
        for item in env:
            k, _, v = item.decode(errors="replace").partition("=")
            if k != key:
                continue
            wanted = v == value if value is not None else v.startswith(prefix or "\0")
            if wanted and not is_zombie(int(entry)):
                found.append(int(entry))
            break
    return found


def proc_state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def is_zombie(pid: int) -> bool:
    return proc_state(pid) == "Z"


def our_zombies() -> list[int]:
    """Zombie processes whose parent is this test process."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z" and int(fields[1]) == me:
            found.append(int(entry))
    return found


def process_on_pid(pid: int, argv: list[str]) -> subprocess.Popen[bytes]:
    """A new session leader on `pid`, a pid freed by a reaped process: what the kernel
    does by itself once its pids wrap (32 768 of them here: minutes of a busy test run),
    asked for at once by setting the last pid it handed out (root only). A process that
    starts meanwhile elsewhere may take the pid first: placed again, a bounded number of
    times."""
    last_pid = Path("/proc/sys/kernel/ns_last_pid")
    if not os.access(last_pid, os.W_OK):
        if os.environ.get("CI") == "true":
            raise AssertionError(f"{last_pid} is not writable: CI runs as root")
        pytest.skip(f"placing a process on a pid needs root ({last_pid})")
    reached = int(last_pid.read_text())
    try:
        for _ in range(100):
            last_pid.write_text(str(pid - 1))
            proc = subprocess.Popen(argv, start_new_session=True)
            if proc.pid == pid:
                return proc
            proc.kill()
            proc.wait()
        raise AssertionError(f"no process could be placed on pid {pid}")
    finally:
        # The pids go on from where they were: the other tests running meanwhile are not
        # handed the pids freed just before this one (a reuse they did not ask for).
        last_pid.write_text(str(max(reached, int(last_pid.read_text()))))


def gone(pid: int) -> bool:
    state = proc_state(pid)
    return state is None or state == "Z"


async def until(cond: Callable[[], bool], bound: float = 5.0, step: float = 0.02) -> bool:
    """Poll `cond` until true or `bound` seconds passed (a deadline, never a blind sleep)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if cond():
            return True
        await asyncio.sleep(step)
    return cond()


def holds_a_line(path: Path) -> bool:
    """`path` exists and ends with a whole line. What to wait on before reading a file
    another process writes: `pwd > f` creates `f` empty and writes it a step later, and a
    terminal log gets each pty read as it comes (a soak run read half a line)."""
    try:
        return path.read_bytes().endswith(b"\n")
    except FileNotFoundError:
        return False


FAKE_PI = Path(__file__).resolve().parent / "fake_pi.py"


def unique_run_id(label: str) -> str:
    """A run id no other test session on this machine uses: sweeps kill by run marker."""
    return f"run-{os.getpid()}-{time.monotonic_ns()}-{label}"


def put_fake_pi_on_path(bin_dir: Path) -> str:
    """Write a `pi` wrapper running tests/fake_pi.py; returns the new PATH value."""
    import sys

    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "pi"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_PI}" "$@"\n')
    wrapper.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def launch_spec(tmp_path: Path, **overrides: object) -> object:
    """A LaunchSpec inside tmp_path (typed loosely: tests override any field)."""
    from legion_tui.supervisor.backend import LaunchSpec

    node_id = str(overrides.pop("node_id", "n1"))
    run_dir = tmp_path / "run"
    fields: dict[str, object] = {
        "node_id": node_id,
        "run_id": unique_run_id(tmp_path.name),
        "name": "worker-0",
        "role": "worker",
        "kind": "sim",
        "task": "Fix the retry path.",
        "session_file": run_dir / "sessions" / f"{node_id}.jsonl",
        "run_dir": run_dir,
        "cwd": tmp_path,
        "socket_path": run_dir / "supervisor.sock",
    }
    fields.update(overrides)
    return LaunchSpec(**fields)  # type: ignore[arg-type]


class HangingClock(FakeClock):
    """Fake time, except that a sleep of `hang_over` seconds or more never ends.

    Lets a test catch the sim inside its long (stall) tool call, then abort it.
    """

    def __init__(self, hang_over: float = 1000.0) -> None:
        super().__init__()
        self.hang_over = hang_over
        self.hanging = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        if seconds >= self.hang_over:
            self.hanging.set()
            await asyncio.Event().wait()
        await super().sleep(seconds)
