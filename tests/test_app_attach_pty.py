"""Attach (issue 12 item 2) through a real terminal: the dashboard runs in a pty over a
real host with a real pi worker (scripted model server); `A` on the settled worker asks
to stop its agent, `y` stops it and suspends the dashboard, the REAL `pi --session FILE`
takes the terminal on the worker's own session (its earlier answer on screen), a message
typed there is answered and written to that session, and when pi exits the dashboard
comes back and says what the session gained."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import sys
import termios
from pathlib import Path

import pyte
import pytest
from agent_bins import PI_LINES
from model_server import ModelServer, Text
from real_pi_helpers import make_world, verdict_line
from test_app_page_floor_pty import read_until

pytestmark = pytest.mark.real

W, H = 120, 40
HOST = Path(__file__).with_name("attach_host.py")


def shown(screen: pyte.Screen) -> str:
    return "\n".join(screen.display)


@pytest.mark.parametrize("line", PI_LINES)
def test_attach_opens_the_real_pi_on_the_session_and_comes_back(
    line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ModelServer() as server:
        world = make_world(line, server, tmp_path, monkeypatch)
        server.script(
            Text(f"FIRST-ANSWER about pagination.\n{verdict_line('done')}", tokens=8),
            Text("SECOND-ANSWER: the v2 api it is.", tokens=8),
        )
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env.update(TERM="xterm-256color", PYTHONPATH=str(HOST.parent))
        pid, fd = pty.fork()
        if pid == 0:  # the child: size its terminal, then become the host
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", H, W, 0, 0))
            os.chdir(world.project)
            args = [sys.executable, str(HOST), str(world.project), "Say FIRST-ANSWER."]
            os.execve(sys.executable, args, env)
        screen = pyte.Screen(W, H)
        stream = pyte.ByteStream(screen)
        try:
            assert read_until(fd, stream, lambda: "LEGION" in screen.display[0], 90), shown(screen)
            assert read_until(fd, stream, lambda: "○ worker" in shown(screen), 30), shown(screen)
            os.write(fd, b"A")
            asked = "Stop worker's agent and open its session in pi? y confirms"
            assert read_until(fd, stream, lambda: asked in shown(screen), 20), shown(screen)
            os.write(fd, b"y")
            # pi's own UI, on the worker's session: its earlier answer is there.
            assert read_until(fd, stream, lambda: "FIRST-ANSWER" in shown(screen)
                              and "LEGION" not in screen.display[0], 60), shown(screen)
            read_until(fd, stream, lambda: False, 2.0)  # let pi's editor take the keys
            os.write(fd, b"use the v2 api")
            os.write(fd, b"\r")
            assert read_until(fd, stream, lambda: "SECOND-ANSWER" in shown(screen), 60), (
                shown(screen))
            os.write(fd, b"\x04")  # Ctrl+D on pi's empty editor: pi exits
            back = "Back from pi: worker's session gained +"
            assert read_until(fd, stream, lambda: back in shown(screen), 30), shown(screen)
            gained = shown(screen).split(back, 1)[1].split(" ", 1)[0]
            assert int(gained) >= 2  # the message and pi's answer, at least
            assert server.pending() == 0  # both answers were asked for
            # Only the host's root is live now (the attach ended the worker's agent): `q`
            # quits without asking (issue 33).
            os.write(fd, b"q")
            ended: list[int] = []

            def exited() -> bool:  # read on meanwhile: a full pty would stall its writer
                if not ended:
                    done, status = os.waitpid(pid, os.WNOHANG)
                    ended.extend([status] if done else [])
                return bool(ended)

            assert read_until(fd, stream, exited, 30), shown(screen)
            pid = 0
            assert os.WIFEXITED(ended[0]) and os.WEXITSTATUS(ended[0]) == 0, ended
        finally:
            if pid:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            os.close(fd)
