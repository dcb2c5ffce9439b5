"""The page floor through the real terminal driver: the dashboard runs in a pty (Textual's
LinuxDriver, the bytes a terminal receives), pyte plays them, and the gutter cells beside
the detail overlay must carry the page colour in dark and light."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

import pyte
import pytest

from legion_tui.themes import palette

pytestmark = pytest.mark.host

W, H = 120, 40
HELPERS = Path(__file__).with_name("app_helpers.py")


def read_until(fd: int, stream: pyte.ByteStream, done, timeout: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    """Feed the pty's output to pyte until `done()` holds (bounded, no blind sleep)."""
    deadline = time.monotonic() + timeout
    closed = False  # the pty's other end is gone: nothing more to read, only to wait for
    while time.monotonic() < deadline:
        ready, _, _ = ([], [], []) if closed else select.select([fd], [], [], 0.05)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: every holder of the terminal closed it
                data = b""
            if data:
                stream.feed(data)
                continue
            closed = True
        if done():
            return True
        if closed:
            # The terminal closes a moment before its process has exited (and can be
            # reaped): `done()` asked at the close alone raced that exit.
            time.sleep(0.02)
    return done()


@pytest.mark.parametrize(
    ("theme", "floor"),
    [
        ("legion-dark", True),
        ("legion-light", True),
        pytest.param("legion-dark", False, marks=pytest.mark.xfail(
            strict=True, raises=AssertionError, reason="no floor: the black band is back")),
    ],
)
def test_gutters_beside_the_overlay_on_a_real_terminal(theme: str, floor: bool) -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: size its terminal first, then become the dashboard
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", H, W, 0, 0))
        # An explicit environment: the test runner exports COLUMNS/LINES=80×24 behind
        # os.environ's back (putenv), and they would win over the pty's size.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env.update(TERM="xterm-256color", COLORTERM="truecolor")
        args = [sys.executable, str(HELPERS), theme] + ([] if floor else ["--no-floor"])
        os.execve(sys.executable, args, env)
    try:
        screen = pyte.Screen(W, H)
        stream = pyte.ByteStream(screen)
        assert read_until(fd, stream, lambda: "LEGION" in screen.display[0]), screen.display
        os.write(fd, b"o")

        def box() -> tuple[int, int, int, int] | None:
            """The overlay's box (top, bottom, left, right) once its last row is in:
            Textual writes a frame's rows top to bottom, so its gutters are in too."""
            rows = screen.display
            tops = [y for y, line in enumerate(rows) if "╭" in line and "╮" in line]
            bottoms = [y for y, line in enumerate(rows) if "╰" in line and "╯" in line]
            if not tops or not bottoms:
                return None
            top = tops[0]
            return top, bottoms[-1], rows[top].index("╭"), rows[top].index("╮")

        assert read_until(fd, stream, lambda: box() is not None), screen.display
        found = box()
        assert found is not None
        top, bottom, left, right = found
        assert right - left + 1 == W * 3 // 4
        page = palette(theme).page.lstrip("#").lower()
        gutters = {
            screen.buffer[y][x].bg
            for y in range(top, bottom + 1)
            for x in [*range(0, left), *range(right + 1, W)]
        }
        assert page and gutters == {page}
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
